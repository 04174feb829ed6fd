"""Issue 11, a smaller index: each folder's path is stored once, texts are stored deflated and
read back whole through the ``memories`` view, the secondary indexes exist after any build,
and a stored text damaged on disk is damage: the index is rebuilt from the files."""

from __future__ import annotations

import json
import sqlite3
import zlib
from pathlib import Path
from typing import Any

import pytest

from openmemex import paths
from openmemex.context import Context
from openmemex.search import search
from tests.conftest import run_process

LONG = ("Staging deploys wait for the smoke suite; 部署前先跑冒烟测试 🚦. The runbook lives in ops/deploy.md and the "
        "rollback is `make rollback ENV=staging`. ") * 3  # fmt: skip
SHORT = "tiny note about kiwis"


def _add(cli: Any, text: str) -> str:
    result = cli("add", text, "--scope", "personal", "--json")
    assert result.rc == 0, result.err
    return str(json.loads(result.out)["id"])


def _raw(data_root: Path) -> sqlite3.Connection:
    return sqlite3.connect(paths.index_path(data_root), isolation_level=None)


def test_texts_are_stored_deflated_and_read_back_whole(cli: Any, data_root: Path) -> None:
    long_id, short_id = _add(cli, LONG), _add(cli, SHORT)
    raw = _raw(data_root)
    try:
        kinds = dict(raw.execute("SELECT id, typeof(body) FROM memory_rows").fetchall())
        stored = dict(raw.execute("SELECT id, length(CAST(body AS BLOB)) FROM memory_rows").fetchall())
        folders = raw.execute("SELECT count(*), count(DISTINCT dir) FROM folders").fetchone()
        numbers = {r[0] for r in raw.execute("SELECT typeof(folder) FROM memory_rows")}
    finally:
        raw.close()
    assert kinds == {long_id: "blob", short_id: "text"}
    assert stored[long_id] < len(LONG.encode()) * 0.8
    assert folders[0] == folders[1] >= 1 and numbers == {"integer"}
    with Context.load() as ctx:
        rows = {r["id"]: r for r in ctx.conn.execute("SELECT id, content, file_path FROM memories")}
        assert rows[long_id]["content"] == LONG.strip() and rows[short_id]["content"] == SHORT
        assert Path(rows[long_id]["file_path"]).read_text("utf-8").rstrip().endswith(LONG.strip()[-40:])
        hit = search(ctx, "smoke suite rollback", scope="personal").hits[0]
        assert hit.id == long_id and "[smoke]" in hit.snippet
    shown = cli("show", long_id)
    assert shown.rc == 0 and "冒烟测试 🚦" in shown.out


def test_the_secondary_indexes_exist_after_a_reindex(cli: Any, data_root: Path) -> None:
    _add(cli, LONG)
    assert cli("reindex").rc == 0
    raw = _raw(data_root)
    try:
        names = {r[0] for r in raw.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        assert raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        raw.close()
    assert {"memories_id", "memories_dir_updated", "memories_dir_status", "memories_hash", "memories_supersedes",
            "memories_superseded_by", "memories_alias_target"} <= names  # fmt: skip


def test_a_bracket_in_the_text_is_not_a_match_mark(cli: Any) -> None:
    """A memory found by its Chinese grams only shows its text, not FTS5's unmarked window
    because the text itself holds a "[" (a checklist item)."""
    text = "- [x] 回滚演练 rehearsed on Friday, with the pager on and the change frozen"
    memory_id = _add(cli, text)
    with Context.load() as ctx:
        hit = search(ctx, "回滚演练", scope="personal").hits[0]
    assert hit.id == memory_id
    assert hit.matched_via == "cjk" and hit.snippet == text


def _flip_in_file(data_root: Path, needle: bytes) -> None:
    """Damage the index file itself where ``needle`` is stored (a bad sector, a bad copy):
    the byte in its middle is flipped, nothing else is touched."""
    db = paths.index_path(data_root)
    raw = _raw(data_root)
    try:
        raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        raw.close()
    data = bytearray(db.read_bytes())
    at = data.find(needle)
    assert at >= 0, "the stored bytes were not found in index.db"
    data[at + len(needle) // 2] ^= 0xFF
    db.write_bytes(bytes(data))


def test_a_damaged_stored_text_rebuilds_the_index(cli: Any, data_root: Path) -> None:
    """Deflated or as it is, a text damaged on disk is damage (the checksum, or UTF-8, fails):
    the command answers from a rebuilt index with one warning, never exit 70 on every command,
    never another text."""
    from openmemex.index_schema import pack

    long_id, short_id = _add(cli, LONG), _add(cli, "qqzz the marker note for damage")
    packed = pack(LONG.strip())
    assert isinstance(packed, bytes)
    _flip_in_file(data_root, packed[8:40])
    _flip_in_file(data_root, b"qqzz the marker note")
    for query, wanted in (("smoke suite", long_id), ("qqzz marker", short_id)):
        result = run_process("search", query, "--json")
        assert result.rc == 0 and "Traceback" not in result.err and "internal error" not in result.err, result.err
        assert [h["id"] for h in json.loads(result.out)["hits"]][:1] == [wanted]
    assert list(data_root.glob("index.db.corrupt-*"))
    assert run_process("doctor").rc == 0


def test_a_missing_secondary_index_rebuilds_the_index(cli: Any, data_root: Path) -> None:
    memory_id = _add(cli, LONG)
    raw = _raw(data_root)
    try:
        raw.execute("DROP INDEX memories_supersedes")  # a query names it (INDEXED BY)
    finally:
        raw.close()
    result = run_process("search", "smoke suite", "--json")
    assert result.rc == 0 and "internal error" not in result.err, result.err
    assert [h["id"] for h in json.loads(result.out)["hits"]] == [memory_id]


def test_a_foreign_connection_cannot_renumber_or_drop_folders(cli: Any, data_root: Path) -> None:
    _add(cli, LONG)
    raw = _raw(data_root)
    try:
        for statement in ("DELETE FROM folders", "UPDATE folders SET dir = '/elsewhere'"):
            with pytest.raises(sqlite3.OperationalError, match="memex_"):
                raw.execute(statement)
    finally:
        raw.close()
    assert "smoke" in run_process("search", "smoke suite").out


def test_the_marks_own_characters_in_a_text_are_not_marks(cli: Any) -> None:
    text = "a \x02marker\x03 sits beside the zeppelin hangar notes"
    memory_id = _add(cli, text)
    with Context.load() as ctx:
        hit = search(ctx, "zeppelin", scope="personal").hits[0]
    assert hit.id == memory_id
    assert "[zeppelin]" in hit.snippet and "[marker]" not in hit.snippet


def test_an_interrupt_inside_sqlite_is_an_interrupt_not_damage(cli: Any, data_root: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """sqlite3 turns a Ctrl-C that lands inside one of our SQL functions (inflating a text)
    into the same error as damage: the command stops as interrupted (130) and the healthy
    index stays where it is — it was once moved aside and rebuilt, the command run again."""
    _add(cli, LONG)

    def interrupted(*_args: object, **_kwargs: object) -> bytes:
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(zlib, "decompress", interrupted)
        for args in (("list", "--scope", "personal"), ("search", "smoke suite")):
            result = cli(*args)
            assert result.rc == 130, (args, result)
    assert not list(data_root.glob("index.db.corrupt-*"))
    assert "smoke" in cli("search", "smoke suite").out


def test_an_interrupt_before_our_function_runs_is_an_interrupt(cli: Any, data_root: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """A Ctrl-C taken while SQLite itself works lands on the first line of our next SQL
    function, before it can record anything: still an interrupt (130), not a crash (70)."""
    from openmemex import index_schema

    _add(cli, LONG)
    real = index_schema._recording

    def struck(fn: Any) -> Any:
        if fn is not index_schema.unpack:
            return real(fn)

        def call(*_args: object) -> Any:
            raise KeyboardInterrupt  # as the signal does, before the wrapper's first line

        return call

    with monkeypatch.context() as patch:
        patch.setattr(index_schema, "_recording", struck)
        result = cli("list", "--scope", "personal")
    assert result.rc == 130, result
    assert not list(data_root.glob("index.db.corrupt-*"))
    assert "smoke" in cli("search", "smoke suite").out


def test_cjk_runs_are_searched_as_grams_only(cli: Any, data_root: Path) -> None:
    """The FTS content column holds a stand-in letter for each CJK letter (CJK is searched as
    grams in ``cjk``): no content term is CJK, Chinese still finds the memory, and an ASCII
    word written against Chinese is a word of its own — found, and marked in the snippet."""
    from openmemex.text import CJK_STANDIN

    glued = _add(cli, "部署前先跑冒烟测试。pgbouncer连接池 needs a restart after 用redis做缓存 配置变更")
    raw = _raw(data_root)
    try:
        raw.execute("CREATE VIRTUAL TABLE temp.terms USING fts5vocab(main, memories_fts, 'col')")
        content = [r[0] for r in raw.execute("SELECT term FROM temp.terms WHERE col = 'content'")]
        grams = [r[0] for r in raw.execute("SELECT term FROM temp.terms WHERE col = 'cjk'")]
    finally:
        raw.close()
    assert content and not [t for t in content if any("\u4e00" <= c <= "\u9fff" for c in t)]
    assert {"pgbouncer", "redi", CJK_STANDIN * 9, CJK_STANDIN * 3} <= set(content)
    assert {"冒烟", "连接", "变更"} <= set(grams)
    with Context.load() as ctx:
        for query in ("冒烟测试", "连接池", "pgbouncer", "配置变更 restart", "redis"):
            assert [h.id for h in search(ctx, query, scope="personal").hits] == [glued], query
        hit = search(ctx, "冒烟测试", scope="personal").hits[0]
        assert "部署前先跑冒烟测试" in hit.snippet  # the snippet is made from the whole text
        for word, shown in (("pgbouncer", "[pgbouncer]连接池"), ("redis", "用[redis]做缓存")):
            hit = search(ctx, word, scope="personal").hits[0]
            assert hit.matched_via == "body" and shown in hit.snippet, hit.snippet


def test_the_stand_ins_cut_the_text_where_unicode61_cuts_it() -> None:
    """Every character of the CJK blocks is a word character to SQLite's tokenizer exactly
    when ``plain`` makes it a stand-in letter (CJK punctuation and marks — ・ ゛ — stay
    separators, so ``pool・mode`` is still the phrase ``pool mode``), and the index's text and
    the snippet table's are cut into as many words, at the same places (a word of another
    script written against CJK set apart in both)."""
    import unicodedata

    from openmemex.index_schema import CJK_WORD_RANGES, TOKENIZE, plain, words_apart
    from openmemex.text import CJK_BLOCKS, CJK_STANDIN, TOKEN_CATEGORIES

    words = {c for first, last in CJK_WORD_RANGES for c in range(first, last + 1)}
    assert words == {c for first, last in CJK_BLOCKS for c in range(first, last + 1)
                     if unicodedata.category(chr(c)) in TOKEN_CATEGORIES}  # fmt: skip
    chars = [chr(c) for first, last in CJK_BLOCKS for c in range(first, last + 1)] + list("々〆〇・ー")
    texts = [*chars, "pool・mode", "データ・ベース", "時々redis", "用redis做缓存", "第3章", "x\u3099y", "a中b文c",
             "在Москве开会", "与Müller讨论", "用ＡＰＩ做"]  # fmt: skip
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(raw, plain, apart, tokenize='{TOKENIZE}')")
        conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
        conn.executemany("INSERT INTO t(rowid, raw, plain, apart) VALUES (?, ?, ?, ?)",
                         [(i + 1, t, plain(t), words_apart(t)) for i, t in enumerate(texts)])  # fmt: skip
        cuts: dict[tuple[int, str], list[int]] = {}
        for doc, col, offset in conn.execute("SELECT doc, col, offset FROM v ORDER BY doc, col, offset"):
            cuts.setdefault((doc, col), []).append(offset)
    finally:
        conn.close()
    for i, text in enumerate(texts[: len(chars)], 1):
        assert cuts.get((i, "raw")) == cuts.get((i, "plain")), (hex(ord(text)), plain(text))
        assert plain(text) in (text, CJK_STANDIN)
    glued = {t: len(texts[: len(chars)]) + k + 1 for k, t in enumerate(texts[len(chars) :])}
    assert cuts[(glued["pool・mode"], "plain")] == cuts[(glued["pool・mode"], "raw")] == [0, 1]
    assert len(cuts[(glued["データ・ベース"], "plain")]) == 2 and len(cuts[(glued["時々redis"], "plain")]) == 1
    for text, doc in glued.items():
        assert cuts[(doc, "plain")] == cuts[(doc, "apart")], text
    assert len(cuts[(glued["用redis做缓存"], "plain")]) == 3
    assert len(cuts[(glued["在Москве开会"], "plain")]) == 3  # a word of any script is set apart, not ASCII only


def test_words_apart_in_the_text_stay_apart_in_the_index(cli: Any) -> None:
    """A CJK run between two Latin words keeps its place: a phrase of the two (``redis.conf``,
    ``pool_mode``) does not match a text where Chinese stands between them."""
    _add(cli, "在 redis 里把内存上限调大了以后一定要重启服务，conf 文件反而不用动")
    _add(cli, "pool 的大小和 mode 的选择要看业务：事务多就用小一点")
    exact = _add(cli, "The real file is redis.conf under /etc/redis; pool_mode = transaction")
    with Context.load() as ctx:
        for query in ("redis.conf", "pool_mode"):
            assert [h.id for h in search(ctx, query, scope="personal").hits] == [exact], query
    dotted = _add(cli, "pool・mode は transaction にする")  # ・ is a separator, not a CJK word
    with Context.load() as ctx:
        assert dotted in [h.id for h in search(ctx, "pool_mode", scope="personal").hits]


def test_a_concept_tokens_spelling_in_a_text_is_not_the_concept(cli: Any) -> None:
    """A memory may hold a concept token's spelling (a pasted ``--explain`` line): a query
    of that concept asks the expansions column only, so it does not find the memory."""
    from openmemex import expansions

    token = expansions.token(expansions.GROUPS[0])
    pasted = _add(cli, f"tagged {token} by a pasted explain line — bread recipe")
    shipped = _add(cli, "We ship on Fridays after the smoke suite")
    with Context.load() as ctx:
        assert [h.id for h in search(ctx, "release", scope="personal").hits] == [shipped]
        assert pasted in [h.id for h in search(ctx, "bread recipe", scope="personal").hits]


def test_few_valued_columns_are_stored_as_numbers_and_read_as_text(cli: Any, data_root: Path) -> None:
    from openmemex.index_schema import CODED

    memory_id = _add(cli, LONG)
    raw = _raw(data_root)
    try:
        kinds = raw.execute(f"SELECT {', '.join(f'typeof({c})' for c in CODED)} FROM memory_rows").fetchall()
        # a value no list has (a newer release's) is kept as it is, and read back as it is
        raw.execute("UPDATE memory_rows SET source = 'telepathy' WHERE id = ?", (memory_id,))
        autoindexes = [r[0] for r in raw.execute("SELECT name FROM sqlite_schema WHERE name LIKE 'sqlite_autoindex%'")]
    finally:
        raw.close()
    assert kinds == [("integer",) * len(CODED)]
    assert autoindexes == ["sqlite_autoindex_folders_1"]  # the small keyed tables are WITHOUT ROWID
    with Context.load() as ctx:
        row = ctx.conn.execute(f"SELECT {', '.join(CODED)} FROM memories WHERE id = ?", (memory_id,)).fetchone()
        assert tuple(row) == ("personal", "private", "knowledge", "normal", "telepathy")


def test_other_coding_lists_rebuild_the_index(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CODED lists are part of the derivation rules: an index coded under other lists is
    rebuilt, never read with the wrong names."""
    from openmemex import index_schema

    before = index_schema.text_rules()
    index_schema.text_rules.cache_clear()
    monkeypatch.setitem(index_schema.CODED, "role", ("instruction", "knowledge"))
    try:
        assert index_schema.text_rules() != before
    finally:
        index_schema.text_rules.cache_clear()


def test_no_query_reaches_the_cjk_stand_ins(cli: Any) -> None:
    """A query of the stand-in letter alone (a pasted private-use icon glyph) falls back to a
    phrase of its text, never of the stand-in: it finds no CJK memory."""
    from openmemex.text import CJK_STANDIN

    _add(cli, "部署前先跑冒烟测试")
    _add(cli, "用redis做缓存 配置变更")
    with Context.load() as ctx:
        for query in (CJK_STANDIN, CJK_STANDIN * 9, f" {CJK_STANDIN * 3} ", f"{CJK_STANDIN}!"):
            assert search(ctx, query, scope="personal").hits == [], ascii(query)


def test_a_snippet_keeps_the_memorys_own_invisible_separators(cli: Any) -> None:
    """Only the separators put in to set a word apart from CJK leave the marked snippet."""
    memory_id = _add(cli, "math: f\u2063x plus g\u2063y, see baz and 用redis做缓存")
    with Context.load() as ctx:
        hit = search(ctx, "baz", scope="personal").hits[0]
        assert hit.id == memory_id and "f\u2063x plus g\u2063y" in hit.snippet and "[baz]" in hit.snippet
        assert "用redis做缓存" in hit.snippet, ascii(hit.snippet)
        hit = search(ctx, "redis", scope="personal").hits[0]
        assert "用[redis]做缓存" in hit.snippet and "f\u2063x" in hit.snippet, ascii(hit.snippet)
