"""Text handling shared by dedup, indexing and query construction.

Pure functions with no I/O. CJK text has no spaces, so it is indexed as unigrams plus
overlapping bigrams in its own column and queried with bigrams (design §7).
"""

from __future__ import annotations

import hashlib
import operator
import re
from collections.abc import Iterable

CJK_BLOCKS = (
    (0x3040, 0x30FF),  # kana
    (0x3400, 0x4DBF),  # CJK ext A
    (0x4E00, 0x9FFF),  # CJK unified
    (0xF900, 0xFAFF),  # compatibility ideographs
    (0xAC00, 0xD7AF),  # hangul
)
_CJK_RANGES = "".join(f"{chr(first)}-{chr(last)}" for first, last in CJK_BLOCKS)
CJK_RUN = re.compile(f"[{_CJK_RANGES}]+")
# What the index's FTS ``content`` column has for each CJK letter (``index_schema.plain``): a
# private-use letter, which no query may ask for (``build_query``).
CJK_STANDIN = "\ue000"
_LATIN_TOKEN = re.compile(r"[a-z0-9_][a-z0-9_.\-]*")
_SIM_TOKEN = re.compile(r"[a-z0-9_-]+")
MAX_TERMS = 24
# CJK query bigrams look in the grams of the text and of its D80 expansions (the
# cjk_expansions column carries each Chinese variant's grams beside it).
CJK_COLUMNS = "{cjk cjk_expansions}"

EN_STOPWORDS = frozenset(
    ["a", "an", "the", "and", "or", "but", "if", "then", "else", "of", "to", "in", "on", "at", "by", "for", "with", "from", "into", "onto", "about", "as", "is", "am", "are", "was", "were", "be", "been", "being", "do", "does", "did", "doing", "done", "have", "has", "had", "having", "i", "me", "my", "mine", "we", "us", "our", "ours", "you", "your", "yours", "he", "him", "his", "she", "her", "it", "its", "they", "them", "their", "this", "that", "these", "those", "there", "here", "what", "which", "who", "whom", "whose", "when", "where", "why", "how", "can", "could", "should", "would", "will", "shall", "may", "might", "must", "please", "tell", "show", "find", "give", "get", "let", "know", "any", "some", "all", "each", "every", "no", "not", "so", "than", "too", "very", "just", "also", "only", "over", "under", "up", "down", "out", "off", "again", "s", "t", "don't", "didn't", "doesn't", "isn't", "aren't", "what's", "how's"]
)
ZH_QUESTION_BIGRAMS = frozenset(["什么", "怎么", "如何", "为何", "为什", "哪些", "哪个", "请问"])


def undecodable_at(text: str) -> int | None:
    """Index of the first character UTF-8 cannot encode — a lone surrogate, which is how
    Python hands over undecodable bytes (argv, file names) — or None. Every surface refuses
    such text with one line instead of crashing where it is stored."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None


def check_text(value: str, what: str) -> None:
    """``undecodable_at`` as the usage error every core entry point raises."""
    at = undecodable_at(value)
    if at is not None:
        from .errors import UsageError

        raise UsageError(f"{what} is not valid UTF-8 (character {at + 1}) — pass plain UTF-8 text")


def normalize_ws(text: str) -> str:
    return " ".join(text.split())


HASH_CHARS = 20  # 80 bits: no two of a billion different texts share a key (birthday bound ~1e-6)


def content_hash(body: str) -> str:
    """sha256 of the whitespace-normalised body, its first ``HASH_CHARS`` hex digits: the
    exact-duplicate key (design §3.4), stored and indexed in every row (issue 11: the full
    64 digits were ~1.5 MB of a 10k store's 27 MB index, for no safety that matters)."""
    return hashlib.sha256(normalize_ws(body).encode("utf-8")).hexdigest()[:HASH_CHARS]


def has_cjk(text: str) -> bool:
    return CJK_RUN.search(text) is not None


def cjk_grams(text: str) -> list[str]:
    """Unigrams then bigrams of every CJK run, in order, duplicates kept."""
    unigrams: list[str] = []
    bigrams: list[str] = []
    for run in CJK_RUN.findall(text):
        unigrams.extend(run)
        bigrams.extend(map(operator.add, run, run[1:]))  # each character and the next
    return unigrams + bigrams


def cjk_index_text(text: str) -> str:
    """``中文记忆`` → ``中 文 记 忆 中文 文记 记忆``; empty when there is no CJK."""
    return " ".join(cjk_grams(text))


def similarity_tokens(text: str) -> frozenset[str]:
    lowered = text.lower()
    tokens = set(_SIM_TOKEN.findall(lowered))
    tokens.update(cjk_grams(lowered))
    return frozenset(tokens)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def similarity(a: str, b: str) -> float:
    return jaccard(similarity_tokens(a), similarity_tokens(b))


def _dedupe(items: Iterable[str]) -> list[str]:
    seen: dict[str, None] = {}
    for item in items:
        seen.setdefault(item, None)
    return list(seen)


def _quote(term: str) -> str:
    """An FTS5 string literal: everything inside double quotes is text, never syntax."""
    return '"' + term.replace('"', '""') + '"'


def latin_terms(text: str) -> list[str]:
    tokens = [t.strip(".-") for t in _LATIN_TOKEN.findall(CJK_RUN.sub(" ", text.lower()))]
    tokens = [t for t in tokens if t]
    kept = [t for t in tokens if len(t) > 1 and t not in EN_STOPWORDS]
    if not kept:  # never empty: fall back to the unfiltered words (D56)
        kept = tokens
    return _dedupe(kept)[:MAX_TERMS]


def cjk_query_terms(text: str) -> list[str]:
    grams: list[str] = []
    for run in CJK_RUN.findall(text):
        if len(run) == 1:
            grams.append(run)
        else:
            grams.extend(run[i : i + 2] for i in range(len(run) - 1))
    grams = _dedupe(grams)
    filtered = [g for g in grams if g not in ZH_QUESTION_BIGRAMS]
    return (filtered or grams)[:MAX_TERMS]


_IDENT_PUNCT = re.compile(r"[_./:@=+#\-]")


def identifiers(text: str) -> list[str]:
    """Words written as code (``VITE_``, ``deploy/prod/values.yaml``, ``--dart-define``):
    a memory holding one verbatim is the strongest evidence a search can get."""
    out = []
    for word in text.split():
        word = word.strip("\"'`,;()[]{}<>!?")
        if len(word) >= 3 and _IDENT_PUNCT.search(word.strip(".")) and re.search(r"[A-Za-z0-9]", word):
            out.append(word.lower())
    return _dedupe(out)


def build_query(text: str) -> str:
    """Free text → an FTS5 MATCH expression; user syntax (quotes, AND/OR/NOT, ``*``, ``-``)
    is always text (punctuation alone gives a phrase that matches nothing). Latin terms are prefix-matched and OR-ed so extra words only lower
    the rank; CJK bigrams are matched in the ``cjk`` and ``cjk_expansions`` columns. Empty only for empty input."""
    text = text.replace("\x00", " ")  # FTS5 reads a NUL as the end of its string: "unterminated string"
    latin = latin_terms(text)
    cjk = cjk_query_terms(text)
    latin_expr = " OR ".join(_quote(t) + "*" for t in latin)
    cjk_expr = " OR ".join(_quote(t) for t in cjk)
    if latin_expr and cjk_expr:
        return f"({latin_expr}) OR {CJK_COLUMNS}:({cjk_expr})"
    if cjk_expr:
        return f"{CJK_COLUMNS}:({cjk_expr})"
    if latin_expr or not text.strip():
        return latin_expr
    # no Latin or CJK words (punctuation, another script): the text as one phrase, a valid one
    # that matches nothing if it is only punctuation; never the index's CJK stand-in letter
    return _quote(text.replace(CJK_STANDIN, " ").strip())
