"""Query construction, CJK handling and dedup similarity (reference scenarios 15, 16, 32–37)."""

from __future__ import annotations

import json
import random
import sqlite3
import unicodedata
from typing import Any

import pytest

from openmemex.index_schema import TOKENIZE
from openmemex.text import (
    DIACRITICS,
    TOKEN_CATEGORIES,
    build_query,
    cjk_index_text,
    cjk_query_terms,
    content_hash,
    similarity,
    starts_word,
    word_terms,
)


def test_content_hash_normalizes_whitespace() -> None:
    assert content_hash("hello   world\n") == content_hash("hello world")
    assert content_hash("hello world") != content_hash("hello  worlds")


def test_similarity() -> None:
    assert similarity("same text here", "same text here") == 1.0
    assert similarity("中文记忆", "中文记忆") == 1.0
    assert similarity("alpha beta gamma", "delta epsilon zeta") < 0.2
    assert similarity("", "anything") == 0.0
    assert similarity("the meeting notes live in the team wiki", "meeting notes live in the team wiki") >= 0.8


def test_question_words_dropped() -> None:
    assert build_query("how do we configure the SSO login") == '"configure"* OR "sso"* OR "login"*'


def test_chinese_question_bigrams_dropped() -> None:
    terms = cjk_query_terms("中文记忆怎么检索")
    assert "检索" in terms and "怎么" not in terms


@pytest.mark.parametrize("text", ["what is it", "怎么", "a", "的"])
def test_never_empty(text: str) -> None:
    assert build_query(text)


def test_dedupe_and_mixed() -> None:
    assert build_query("deploy deploy deploy") == '"deploy"*'
    assert build_query("deploy 数据库") == '("deploy"*) OR {cjk cjk_expansions}:("数据" OR "据库")'


def test_term_cap() -> None:
    words = " ".join(f"word{i}" for i in range(100))
    assert build_query(words).count(" OR ") == 23


def test_cjk_index_text() -> None:
    assert cjk_index_text("中文记忆") == "中 文 记 忆 中文 文记 记忆"
    assert cjk_index_text("猫") == "猫"
    assert cjk_index_text("latin only") == ""
    assert cjk_query_terms("中文记忆") == ["中文", "文记", "记忆"]
    assert cjk_query_terms("猫") == ["猫"]


@pytest.mark.parametrize(
    "hostile",
    ['"unbalanced', 'a AND b', 'NOT x', 'x OR', '*', '-x', 'col:term', '{cjk}:(中)', 'NEAR(a b)', "'", '""""', "a^b", "(", "AND OR NOT"],
)
def test_user_syntax_is_text(hostile: str) -> None:
    """Whatever the user types becomes a valid FTS5 expression (sqlite-utils habit)."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE VIRTUAL TABLE t USING fts5(content, cjk, cjk_expansions)")
        conn.execute("INSERT INTO t VALUES ('a and b not x or', '中', '')")
        expression = build_query(hostile)
        assert expression
        conn.execute("SELECT * FROM t WHERE t MATCH ?", (expression,)).fetchall()
    finally:
        conn.close()


# -- words of every script: cut where the index's tokenizer cuts them -----------------------


def _tokens(texts: list[str]) -> list[list[str]]:
    """The terms SQLite's FTS5, with the index's tokenizer, makes of each text, in order."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(a, tokenize='{TOKENIZE}')")
        conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
        conn.executemany("INSERT INTO t(rowid, a) VALUES (?, ?)", list(enumerate(texts, 1)))
        out: list[list[str]] = [[] for _ in texts]
        for doc, term in conn.execute("SELECT doc, term FROM v ORDER BY doc, offset"):
            out[doc - 1].append(term)
        return out
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("query", "expression"),
    [
        ("Müller", '"müller"*'),
        ("Jürgen Köln", '"jürgen"* OR "köln"*'),
        ("São", '"são"*'),
        ("Встреча Москве", '"встреча"* OR "москве"*'),
        ("deploy Москве", '"deploy"* OR "москве"*'),
        ("Москве 部署", '("москве"*) OR {cjk cjk_expansions}:("部署")'),
        ("Ωμέγα", '(- expansions : "ωμέγα"*)'),  # never a concept token's prefix
    ],
)
def test_words_of_every_script_are_prefix_terms(query: str, expression: str) -> None:
    """Each word of an alphabetic script is its own OR-ed prefix term, as an English word is:
    ``Müller`` was ``"ller"*``, ``São`` ``"s"* OR "o"*``, a Cyrillic query one exact phrase, and
    beside an English word the Cyrillic one was dropped."""
    assert build_query(query) == expression


def test_the_word_rules_are_sqlites() -> None:
    """A word starts at a character of ``TOKEN_CATEGORIES`` and goes on through those and
    ``DIACRITICS``, as unicode61 reads them: checked for every character SQLite's tables and
    ours agree on (assigned in Unicode 3.2, same category since), outside CJK."""
    chars = [chr(c) for c in range(0x80, 0x10000)
             if not 0xD800 <= c <= 0xDFFF and not 0xE000 <= c <= 0xF8FF
             and unicodedata.ucd_3_2_0.category(chr(c)) == unicodedata.category(chr(c)) != "Cn"
             and not cjk_query_terms(chr(c))]  # fmt: skip
    alone, inside = _tokens(chars), _tokens([f"x{c}x" for c in chars])
    for char, a, i in zip(chars, alone, inside, strict=True):
        word = unicodedata.category(char) in TOKEN_CATEGORIES
        assert bool(a) == word, hex(ord(char))  # starts a word
        assert (len(i) == 1) == (word or char in DIACRITICS), hex(ord(char))  # goes on through one
    assert {c for c in map(chr, range(0x300, 0x370)) if len(_tokens([f"x{c}x"])[0]) == 1} == DIACRITICS


def test_query_words_are_the_indexs_words() -> None:
    """Random text of many scripts (accents precomposed and combining, Greek, Cyrillic,
    Hebrew, Arabic with its vowel marks, Devanagari, Thai, full-width Latin): each query word is
    one index term, and every term of two letters or more the index makes of the text is one
    of the query's words."""
    alphabet = ("abcdefxyz019 ,;:!?()'\"/ äöüßéèçñãõïâœøÅÆ\u0301\u0308\u0327 αβγδεζάώΣΩ ЖЁёйабвгдМос "
                "שלוםאב مرحباكَتَبَ हिन्दीनमस ไทยภาษา ＡＢＣ１２ —–…«»„“ 😀")
    rng = random.Random(20240607)
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 30))) for _ in range(400)]
    words = [word_terms(t) for t in texts]
    each = iter(_tokens([w for ws in words for w in ws]))
    for text, ws, terms in zip(texts, words, _tokens(texts), strict=True):
        of_words = [next(each) for _ in ws]
        assert all(len(t) == 1 for t in of_words), (text, ws, of_words)
        if len(terms) <= 24:
            assert {t for t in terms if len(t) > 1} <= {t[0] for t in of_words}, text


def test_starts_word_leaves_cjk_to_its_grams() -> None:
    assert all(starts_word(c) for c in "aZ9éжωأक")
    assert not any(starts_word(c) for c in "中かカ한々〇ｱ_-. \ue000\u0301😀")


def _hits(cli: Any, query: str) -> list[str]:
    result = cli("search", "--json", "--limit", "10", "--", query)
    assert result.rc == 0, result.err
    return [h["snippet"] for h in json.loads(result.out)["hits"]]


def _add(cli: Any, *texts: str) -> None:
    for text in texts:
        assert cli("add", text).rc == 0


_UNRELATED = "Some other note: the navy velvet meeting banner for the old service"


def _finds(cli: Any, memories: list[str], cases: dict[str, str]) -> None:
    """Each query of ``cases`` finds the memory holding its text and not an unrelated one that
    holds words starting with pieces of it (``São`` was ``"s"* OR "o"*``), and its snippet has
    no separator left that ``words_apart`` put in."""
    _add(cli, *memories, _UNRELATED)
    for query, found in cases.items():
        hits = [h.replace("[", "").replace("]", "") for h in _hits(cli, query)]
        assert any(found in h for h in hits) and _UNRELATED not in hits, (query, hits)
        assert not any("\u2063" in h for h in hits), hits


def test_german_umlauts(cli: Any) -> None:
    """``Müller`` was ``"ller"*``, ``Köln`` ``"ln"*``: no match although the memory says them."""
    _finds(cli, ["Ask Jürgen Müller about the Köln office"],
           {"Müller": "Müller", "Jürgen": "Jürgen", "Köln": "Köln", "Muller": "Müller",  # folded as the index folds
            "Mu\u0308ller": "Müller"})  # a combining umlaut (NFD) is part of the word  # fmt: skip


def test_portuguese_and_french_accents(cli: Any) -> None:
    """``naïve`` was ``"na"* OR "ve"*``, ``Crème brûlée`` ``"cr"* OR "me"* OR "br"*``: any word
    starting with those letters."""
    _finds(cli, ["São Paulo owns the billing service", "Meet at the café, not the naïve retry loop",
                 "Dessert is crème brûlée on Fridays"],
           {"São": "São", "São Paulo": "São", "Sao": "São", "café": "café", "cafe": "café", "naïve": "naïve",
            "Crème brûlée": "crème", "creme brulee": "crème"})  # fmt: skip


def test_cyrillic_words_each_count(cli: Any) -> None:
    """A Cyrillic query was one exact phrase: ``Встреча Москве`` missed "Встреча с Иваном в Москве"."""
    _finds(cli, ["Встреча с Иваном в Москве"], {"Встреча Москве": "Москве", "Москве встреча": "Москве", "Иваном": "Москве"})


def test_greek_words_each_count(cli: Any) -> None:
    """Greek too, and a word starting with ω still finds the text that says it (it is kept
    from the concept tokens only)."""
    _finds(cli, ["Η συνάντηση είναι στην Αθήνα", "Το ωραίο γραφείο στο κέντρο"],
           {"Αθήνα συνάντηση": "Αθήνα", "ωραίο κέντρο": "ωραίο"})  # fmt: skip


def test_arabic_words_each_count(cli: Any) -> None:
    _finds(cli, ["اجتماع الفريق في دبي"], {"دبي اجتماع": "دبي", "الفريق": "دبي"})


def test_english_and_cyrillic_in_one_query(cli: Any) -> None:
    """Beside an English word the Cyrillic one was dropped: only the planning note was found."""
    _finds(cli, ["Quarterly planning notes", "Встреча с Иваном в Москве"], {"planning Москве": "Москве"})


def test_a_word_written_against_chinese(cli: Any) -> None:
    """The index set only ASCII words apart from the Chinese written against them: ``Москве``
    in ``下周在Москве开会`` was part of the CJK run's term, so no query reached it."""
    _finds(cli, ["下周在Москве开会", "与Müller讨论预算"], {"Москве": "下周在Москве开会", "Müller": "与Müller讨论预算"})


def test_an_accented_word_matches_only_itself(cli: Any) -> None:
    """``São`` asked ``"s"* OR "o"*``: every memory with a word starting with s or o."""
    _add(cli, "São Paulo owns the billing service", _UNRELATED)
    assert [h.startswith("[São]") for h in _hits(cli, "São")] == [True]


def test_near_duplicates_see_accented_words() -> None:
    """The same note typed with and without accents is the same to the index, so a near
    duplicate; two people whose names differ only in an accented letter are not."""
    assert similarity("Weekly sync with the São Paulo team at the café near the office",
                      "Weekly sync with the Sao Paulo team at the cafe near the office") == 1.0  # fmt: skip
    assert similarity("Réunion de l'équipe à Orléans chaque été", "Reunion de l'equipe a Orleans chaque ete") == 1.0
    assert similarity("Ask Müller to sign the Berlin contract", "Ask Möller to sign the Berlin contract") < 0.8


def test_add_reports_a_near_duplicate_in_cyrillic(cli: Any) -> None:
    """Both halves of the check: the earlier memory is a candidate (its words are query
    terms) and its words are counted (they were no tokens at all)."""
    first = json.loads(cli("add", "Отчёт по продажам нужно отправить Ивану до пятницы", "--json").out)["id"]
    again = json.loads(cli("add", "Отчёт по продажам нужно отправить Ивану до пятницы, пожалуйста", "--json").out)
    assert [s["id"] for s in again["similar"]] == [first]
