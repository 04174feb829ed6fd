"""Query construction, CJK handling and dedup similarity (reference scenarios 15, 16, 32–37)."""

from __future__ import annotations

import sqlite3

import pytest

from openmemex.text import build_query, cjk_index_text, cjk_query_terms, content_hash, similarity


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
