"""Text handling shared by dedup, indexing and query construction.

Pure functions with no I/O. CJK text has no spaces, so it is indexed as unigrams plus
overlapping bigrams in its own column and queried with bigrams (design §7). Every other
script is cut into words where the index's tokenizer (SQLite's unicode61) cuts it, so a
query word is the word the index holds (``word_terms``, ``starts_word``).
"""

from __future__ import annotations

import functools
import hashlib
import operator
import re
import unicodedata
from collections.abc import Iterable

from .lazyre import LazyPattern

CJK_BLOCKS = (
    (0x3040, 0x30FF),  # kana
    (0x3400, 0x4DBF),  # CJK ext A
    (0x4E00, 0x9FFF),  # CJK unified
    (0xF900, 0xFAFF),  # compatibility ideographs
    (0xAC00, 0xD7AF),  # hangul
)
_CJK_RANGES = "".join(f"{chr(first)}-{chr(last)}" for first, last in CJK_BLOCKS)
CJK_RUN = LazyPattern(f"[{_CJK_RANGES}]+")  # compiled on first use (lazyre), not at every import (1 ms)
# What the index's FTS ``content`` column has for each CJK letter (``index_schema.plain``): a
# private-use letter, which no query may ask for (``build_query``).
CJK_STANDIN = "\ue000"
# The first letter of every D80 concept token (``expansions.TOKEN``): a query word starting
# with it is kept from the ``expansions`` column (``build_query``), so no typed word or prefix
# reaches a concept token.
CONCEPT_LETTER = "ω"

# How SQLite's unicode61 tokenizer (``index_schema.TOKENIZE``) cuts text into words: a word
# starts at a character of these Unicode categories (its default "L* N* Co", and an unassigned
# code point too) and goes on through them and ``DIACRITICS``; everything else is a separator
# (``_`` too). tests/test_text.py checks both against SQLite, character by character.
TOKEN_CATEGORIES = frozenset({"Lu", "Ll", "Lt", "Lm", "Lo", "Nd", "Nl", "No", "Co", "Cn"})
# The combining marks unicode61 reads as part of the word before them (sqlite3Fts5UnicodeIsdiacritic;
# remove_diacritics folds them away): ``Mu\u0308ller`` is one word, as ``Müller`` is.
DIACRITICS = frozenset(
    chr(c) for c in (*range(0x300, 0x305), *range(0x306, 0x30D), 0x30F, 0x311, 0x31B, *range(0x323, 0x329), 0x32D, 0x32E, 0x330, 0x331)
)
# Han, kana, hangul and what is written with them (radicals, bopomofo, jamo, CJK symbols such
# as 々〆〇, enclosed and compatibility forms, halfwidth kana, the ideographic planes): CJK text is
# found by its grams (``CJK_RUN``) and the rest of it stays as it was in the index and in a
# query, never a word of its own.
_CJK_SCRIPT = LazyPattern(  # compiled on first use (lazyre), not at every import (2 ms)
    "[\u1100-\u11ff\u2e80-\u2fdf\u2ff0-\u31ff\u3200-\u33ff\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f"
    "\uac00-\ud7ff\uf900-\ufaff\ufe30-\ufe4f\uff65-\uffdc\U0001aff0-\U0001b16f\U00020000-\U0003ffff]"
)
# The ASCII rules of the query words are those before other scripts were words: a letter, digit
# or ``_`` starts one, ``.`` and ``-`` join (``x86-64``, ``redis.conf`` become phrases of the
# index's words); ``_`` and the joiners are separators to the index, so such a word is a phrase.
_LATIN_TOKEN = re.compile(r"[a-z0-9_][a-z0-9_.\-]*")
_SIM_TOKEN = re.compile(r"[a-z0-9_-]+")
_ASCII_WORD = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
# The same words over a text's ``_shape``: "w" a word character, "m" a diacritic, "." and "-"
# themselves, a space for the rest.
_SHAPED_TOKEN = re.compile(r"w[wm.\-]*")
_SHAPED_SIM_TOKEN = re.compile(r"[wm\-]+")
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


# What shows nothing on its own: controls (C0, DEL, C1), format characters (zero-width
# space and joiners, bidi marks, embeddings and isolates, the BOM, tag characters), line and
# paragraph separators, combining marks with no letter to sit on, and the letters and
# symbols that are drawn as blanks (Hangul fillers, the blank braille pattern).
_SHOWS_NOTHING = frozenset({"Cc", "Cf", "Zs", "Zl", "Zp", "Mn", "Me"})
_BLANK_GLYPHS = frozenset("\u115f\u1160\u3164\uffa0\u2800")


def has_visible(text: str) -> bool:
    """Whether ``text`` holds at least one character a reader can see. A memory of zero-width
    spaces, terminal controls or bidi marks alone is as empty as one of spaces, and is
    refused as such: stored, it would be found by nothing and show as a blank line."""
    return any(
        not char.isspace() and char not in _BLANK_GLYPHS and unicodedata.category(char) not in _SHOWS_NOTHING
        for char in text
    )


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


@functools.lru_cache(maxsize=8192)
def _kind(char: str) -> str:
    """What ``char`` is to a word of the query (``_shape``)."""
    if char.isascii():
        return "w" if char in _ASCII_WORD or char == "_" else char if char in ".-" else " "
    if char in DIACRITICS:
        return "m"
    return "w" if starts_word(char) else " "


def starts_word(char: str) -> bool:
    """``char`` is a word character of a script written with spaces (the letters and digits
    of every script but the CJK ones): unicode61 makes it part of a word, and a query asks
    for that word. ``index_schema.plain`` sets such a word apart from CJK written against it."""
    if char.isascii():
        return char in _ASCII_WORD
    return (
        char != CJK_STANDIN
        and unicodedata.category(char) in TOKEN_CATEGORIES
        and _CJK_SCRIPT.match(char) is None
    )


def _shape(lowered: str) -> str:
    """``lowered`` with each character replaced by its ``_kind``, one for one: the words'
    places are found by a regex over it (each distinct character is looked up once)."""
    return lowered.translate({ord(c): _kind(c) for c in set(lowered)})


def _words(lowered: str, ascii_token: re.Pattern[str], shaped_token: re.Pattern[str]) -> list[str]:
    if lowered.isascii():  # the common case, and the rules ASCII had before
        return ascii_token.findall(lowered)
    return [lowered[m.start() : m.end()] for m in shaped_token.finditer(_shape(lowered))]


def _folded(word: str) -> str:
    """``word`` with the diacritics the index removes taken off (``remove_diacritics 2``
    folds a Latin letter with them to the bare letter: ``São`` is ``sao`` to it, ``й`` stays)."""
    if word.isascii():
        return word
    out = []
    for char in word:
        parts = unicodedata.normalize("NFD", char)
        bare = len(parts) > 1 and parts[0].isascii() and all(p in DIACRITICS for p in parts[1:])
        out.append(parts[0] if bare else "" if char in DIACRITICS else char)
    return "".join(out)


def similarity_tokens(text: str) -> frozenset[str]:
    """The words (of every script, diacritics folded as the index folds them) and CJK grams
    of ``text``: what the near-duplicate check compares."""
    lowered = text.lower()
    words = _words(lowered, _SIM_TOKEN, _SHAPED_SIM_TOKEN)
    tokens = set(words) if lowered.isascii() else {_folded(w) for w in words}
    tokens.discard("")  # a word of diacritics alone
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


def word_terms(text: str) -> list[str]:
    """The query's words outside CJK, cut where the index's tokenizer cuts them: the
    letters and digits of every script (``starts_word``), with the diacritics it keeps in a
    word; English function words and one-letter words dropped unless nothing else is left."""
    tokens = [t.strip(".-") for t in _words(CJK_RUN.sub(" ", text.lower()), _LATIN_TOKEN, _SHAPED_TOKEN)]
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


def _prefix_term(word: str) -> str:
    """A word as a prefix term; one starting with ``CONCEPT_LETTER`` (Greek ``ω…``, or a
    pasted concept token) asks every column but ``expansions``, where it would reach the
    concept tokens (``ω*`` all of them)."""
    term = _quote(word) + "*"
    return f"(- expansions : {term})" if word.startswith(CONCEPT_LETTER) else term


def _query_terms(text: str) -> tuple[list[str], list[str]]:
    """The words' prefix terms and the CJK bigrams' quoted terms of ``build_query``."""
    return [_prefix_term(t) for t in word_terms(text)], [_quote(t) for t in cjk_query_terms(text)]


def query_phrases(text: str) -> list[str]:
    """Each phrase ``build_query`` asks, as an expression of its own (a CJK bigram with its
    column filter): what FTS5's bm25 counts a phrase's rows by."""
    words, cjk = _query_terms(text.replace("\x00", " "))
    return words + [f"{CJK_COLUMNS}:{term}" for term in cjk]


def build_query(text: str) -> str:
    """Free text → an FTS5 MATCH expression; user syntax (quotes, AND/OR/NOT, ``*``, ``-``)
    is always text (punctuation alone gives a phrase that matches nothing). Words of every
    script but CJK (``word_terms``) are prefix-matched and OR-ed so extra words only lower
    the rank; CJK bigrams are matched in the ``cjk`` and ``cjk_expansions`` columns. Empty only for empty input."""
    text = text.replace("\x00", " ")  # FTS5 reads a NUL as the end of its string: "unterminated string"
    words, cjk = _query_terms(text)
    words_expr = " OR ".join(words)
    cjk_expr = " OR ".join(cjk)
    if words_expr and cjk_expr:
        return f"({words_expr}) OR {CJK_COLUMNS}:({cjk_expr})"
    if cjk_expr:
        return f"{CJK_COLUMNS}:({cjk_expr})"
    if words_expr or not text.strip():
        return words_expr
    # no words and no CJK (punctuation, symbols): the text as one phrase, a valid one that
    # matches nothing if it is only punctuation; never the index's CJK stand-in letter
    return _quote(text.replace(CJK_STANDIN, " ").strip())
