"""Issue 11, schema 12: what FTS5 indexes but ``memories`` does not store (the CJK grams,
the spelled concept tokens) is derived from the stored columns, and an FTS5 delete must
send the very values its row was inserted with. These tests hold the derivation to that:
every row deleted with its derived values leaves the FTS index empty, after writes, edits,
supersedes, forgets and hand UPDATEs. Also: the compact content hash still dedupes, and the
vectors cache keyed by the old 64-digit hash is re-keyed, not left to grow."""

from __future__ import annotations

import hashlib
import json
import os
import random
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from openmemex import expansions, freshness, index_schema, paths
from openmemex.context import Context
from openmemex.text import HASH_CHARS, cjk_index_text, content_hash, normalize_ws

CHINESE = "部署脚本在发布前运行，数据库备份每天一次"


def _fts_terms(conn: sqlite3.Connection) -> int:
    """How many distinct terms the FTS index holds (fts5vocab reads its segments)."""
    conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.derived_vocab USING fts5vocab(main, memories_fts, 'row')")
    return int(conn.execute("SELECT count(*) FROM temp.derived_vocab").fetchone()[0])


def _deletes_leave_nothing(conn: sqlite3.Connection) -> None:
    """Delete every row's FTS entry with the values derived from its stored columns: had
    any value differed from what was inserted, its terms would stay behind."""
    assert _fts_terms(conn) > 0
    conn.execute("BEGIN")
    try:
        rows = conn.execute(
            "SELECT rowid, content, tags, aliases, expansions, type, cjk_expansions FROM memories"
        ).fetchall()
        for row in rows:
            conn.execute(
                f"INSERT INTO memories_fts(memories_fts, rowid, {', '.join(index_schema.FTS_COLUMNS)}) "
                f"VALUES ('delete', ?{', ?' * len(index_schema.FTS_COLUMNS)})",
                (row[0], *index_schema.fts_values(*row[1:])),
            )
        conn.execute("INSERT INTO memories_fts(memories_fts) VALUES ('integrity-check')")
        assert _fts_terms(conn) == 0
    finally:
        conn.execute("ROLLBACK")


def _add(cli: Any, *args: str) -> str:
    result = cli("add", *args, "--json")
    assert result.rc == 0, result.err
    return str(json.loads(result.out)["id"])


def test_derived_values_delete_cleanly_after_every_kind_of_write(cli: Any, data_root: Path) -> None:
    first = _add(cli, f"{CHINESE} deploy before the release", "--tags", "部署, deploy", "--scope", "personal")
    _add(cli, "Payments retries need idempotency keys", "--tags", "payments", "--scope", "personal")
    latin = _add(cli, "the cache is warmed at midnight", "--scope", "personal")
    assert cli("supersede", latin, "the cache is warmed at 2am, 缓存预热").rc == 0
    assert cli("forget", first).rc == 0
    _add(cli, "日志保留三十天 logs are kept thirty days", "--scope", "personal")
    with Context.load() as ctx:
        freshness.sync(ctx, "all")
        flags = dict(ctx.conn.execute("SELECT content, cjk FROM memories"))
        assert flags["Payments retries need idempotency keys"] == 0
        assert flags["日志保留三十天 logs are kept thirty days"] == 1
        _deletes_leave_nothing(ctx.conn)


def test_a_hand_update_through_our_connection_keeps_fts_in_step(cli: Any) -> None:
    """The trigger derives old and new values alike (``memex_grams``, ``memex_spell``) and
    fixes the ``cjk`` flag."""
    _add(cli, "a plain latin note about deploys", "--scope", "personal")
    with Context.load() as ctx:
        freshness.sync(ctx, "all")
        ctx.conn.execute("UPDATE memory_rows SET body = '回滚 rollback by hand', tags = '标签'")
        assert ctx.conn.execute("SELECT cjk FROM memory_rows").fetchone()[0] == 1
        assert ctx.conn.execute("SELECT count(*) FROM memories_fts WHERE memories_fts MATCH '回滚'").fetchone()[0] == 1
        assert ctx.conn.execute("SELECT count(*) FROM memories_fts WHERE memories_fts MATCH 'deploys'").fetchone()[0] == 0
        _deletes_leave_nothing(ctx.conn)


def test_a_foreign_connection_cannot_change_searchable_text_silently(cli: Any, data_root: Path) -> None:
    """Without our functions the trigger cannot derive the FTS values: the UPDATE fails
    instead of leaving the FTS index out of step; other columns update as before."""
    _add(cli, "a note for a foreign tool", "--scope", "personal")
    db = sqlite3.connect(paths.index_path(data_root))
    try:
        db.execute("UPDATE memory_rows SET importance = 'high'")
        with pytest.raises(sqlite3.OperationalError, match="memex_"):
            db.execute("UPDATE memory_rows SET body = 'changed behind our back'")
        with pytest.raises(sqlite3.OperationalError, match="memex_text"):  # the view inflates texts
            db.execute("SELECT id FROM memories")
    finally:
        db.close()


def test_the_grams_are_those_of_the_memory_as_written() -> None:
    """``grams`` reads the stored tags and aliases (comma-joined); the grams are the ones
    the memory's own words give, as schema 11 stored them."""
    rng = random.Random(11)
    pieces = ["中文", "记忆", "部署", "a", "b c", "，", "。", "カナ", "한국", "x-y", " ", "", "标签"]
    for _ in range(2000):
        body = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        tags = [rng.choice(pieces) for _ in range(rng.randint(0, 3))]
        aliases = [rng.choice(pieces) for _ in range(rng.randint(0, 3))]
        expected = cjk_index_text(" ".join([body, *tags, *aliases]))
        assert index_schema.grams(body, ", ".join(tags), ", ".join(aliases)) == expected


def test_compact_tokens_spell_back_exactly() -> None:
    every = " ".join(expansions.token(g) for g in expansions.GROUPS)
    codes = expansions.compact(every)
    assert expansions.spell(codes) == every
    assert len(codes) == expansions.CODE_BYTES * len(expansions.GROUPS) < len(every) / 3
    for n in (0, 1, 35, 36, 255, 256, 2**40 - 1, 516778669907):
        assert expansions.spell(expansions.compact(f"{expansions.TOKEN}{n}")) == f"{expansions.TOKEN}{n}"
    assert expansions.spell(b"") == "" and expansions.compact("") == b""
    with pytest.raises(ValueError, match="not a concept token code"):
        expansions.spell(b"\x00\x01")


def another_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rules change only with the code, SQLite or Python that derives them: this process is
    now another environment, so the index's recorded rules are not taken at their word."""
    from openmemex import codestamp

    monkeypatch.setattr(codestamp, "STAMP", "another-environment")


def test_rules_worked_out_here_are_taken_at_their_word(cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Working the derivation rules out costs every process about 5 ms: an index whose rules
    were worked out in this environment is not asked again; one from another environment
    (an upgrade that left the rules as they were) is checked, kept, and records this one at
    the next write."""
    memory = _add(cli, "the release train leaves on thursday", "--scope", "personal")

    def never() -> str:
        raise AssertionError("text_rules worked out again in the same environment")

    with monkeypatch.context() as patched:
        patched.setattr(index_schema, "text_rules", never)
        assert memory in cli("search", "release train", "--scope", "personal").out
    with Context.load() as ctx:
        ctx.conn.execute("UPDATE index_info SET value = 'an-older-environment' WHERE key = 'text_env'")
    assert memory in cli("search", "release train", "--scope", "personal").out  # checked, same rules: kept
    with Context.load() as ctx:
        assert ctx.conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 1
    cli("add", "the staging database is reset every sunday", "--scope", "personal")  # a write records it
    with Context.load() as ctx:
        env = ctx.conn.execute("SELECT value FROM index_info WHERE key = 'text_env'").fetchone()[0]
        assert env == index_schema.text_environment(ctx.conn, index_schema.text_rules())


def test_other_derivation_rules_rebuild_the_index(cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """An index made by other rules (index_info 'text') is rebuilt rather than sent deletes
    that do not match what it holds; the files are the truth."""
    memory = _add(cli, CHINESE, "--scope", "personal")
    monkeypatch.setattr(index_schema, "text_rules", lambda: "other-rules")
    another_environment(monkeypatch)
    with Context.load() as ctx:
        assert ctx.conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 0  # dropped on connect
        assert ctx.conn.execute("SELECT value FROM index_info WHERE key = 'text'").fetchone()[0] == "other-rules"
    assert memory in cli("search", "部署", "--scope", "personal").out


def test_the_compact_hash_still_dedupes(cli: Any) -> None:
    first = _add(cli, "the staging database is reset every sunday", "--scope", "personal")
    again = cli("add", "the  staging database is reset\nevery sunday", "--scope", "personal")
    assert again.rc == 0, again.err
    assert f"already exists: id={first}" in again.out
    with Context.load() as ctx:
        stored = ctx.conn.execute("SELECT content_hash FROM memories WHERE id = ?", (first,)).fetchone()[0]
    assert len(stored) == HASH_CHARS == len(content_hash("x"))
    full = hashlib.sha256(normalize_ws("the staging database is reset every sunday").encode()).hexdigest()
    assert stored == full[:HASH_CHARS]


def test_vectors_keyed_by_the_old_hash_are_rekeyed_and_strays_dropped(cli: Any, data_root: Path) -> None:
    """The vectors cache outlives rebuilds: its 64-digit keys of before schema 12 become the
    20-digit keys that match the memories again, and keys of no known form go."""
    body = "vectors survive the schema change"
    _add(cli, body, "--scope", "personal")
    full = hashlib.sha256(normalize_ws(body).encode()).hexdigest()
    db = sqlite3.connect(paths.index_path(data_root))
    try:
        db.execute(
            "CREATE TABLE IF NOT EXISTS vectors(model TEXT NOT NULL, content_hash TEXT NOT NULL, vec BLOB NOT NULL, "
            "PRIMARY KEY (model, content_hash)) WITHOUT ROWID"
        )
        db.executemany(
            "INSERT INTO vectors VALUES ('m', ?, x'00')", [(full,), ("stray-key",), ("f" * 64,)]
        )
        db.execute("PRAGMA user_version = 11")
        db.commit()
    finally:
        db.close()
    with Context.load() as ctx:
        freshness.sync(ctx, "all")
        keys = sorted(r[0] for r in ctx.conn.execute("SELECT content_hash FROM vectors"))
        assert keys == sorted([full[:HASH_CHARS], "f" * HASH_CHARS])
        joined = ctx.conn.execute(
            "SELECT count(*) FROM memories m JOIN vectors v ON v.content_hash = m.content_hash"
        ).fetchone()[0]
        assert joined == 1


def test_the_reach_set_is_exactly_the_words_that_reach_a_member() -> None:
    """``matched_groups`` looks only at words in ``_reach``: every inflection of every
    member and phrase head, and any other word, is in it exactly when ``_lookup`` finds
    something for it."""
    ex = expansions.Expander((*expansions.GROUPS, ("pto", "vacation", "day off"), ("ci", "cis")))
    heads = {w for g in ex.groups for m in g for w in expansions._words(m)}
    words = {w + s for w in heads for s in ("", "s", "es", "ed", "d", "ing", "ies", "e")}
    words |= {w + w[-1:] + s for w in heads for s in ("ed", "ing")} | {w[:-1] + "ies" for w in heads}
    words |= {w[:-1] + "ing" for w in heads} | {"shipped", "caching", "rolled", "fizz", "ring", "sing"}
    for word in sorted(words):
        _, groups, phrases = ex._lookup(word)
        assert (word in ex._reach) == bool(groups or phrases), word


def test_words_split_in_c_are_the_patterns_words() -> None:
    """``expansions._words`` splits by a byte table instead of the regex: the same words,
    for ASCII, Chinese, "+"/"#" runs, case folds that leave ASCII and lone surrogates."""
    rng = random.Random(80)
    alphabet = "aZ09+#- .,_/\n\té中İK\u212a\ud800"
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 16)))
        assert expansions._words(text) == expansions._WORD.findall(text.lower()), repr(text)


def test_indexing_tells_the_lookup_whether_there_is_cjk_and_it_agrees() -> None:
    """row_values passes ``bool(grams)`` so the lookup does not search the text for CJK a
    second time: the answer is the one it would find itself."""
    rng = random.Random(83)
    pieces = ["部署", "发布", "deploy", "the cache", "缓存", "rate limit", "回滚", "logs", " ", "，"]
    ex = expansions.BUILTIN
    for _ in range(3000):
        body = " ".join(rng.choice(pieces) for _ in range(rng.randint(0, 8)))
        tags = [rng.choice(pieces) for _ in range(rng.randint(0, 2))]
        grams = index_schema.grams(body, ", ".join(tags), "")
        text = " ".join([body, *tags])
        assert ex.stored(text, bool(grams)) == ex.stored(text), text


def test_a_rebuild_gives_its_free_pages_back(cli: Any, data_root: Path) -> None:
    """A new index file trims (auto_vacuum = INCREMENTAL): what a reindex dropped does not
    stay in the file as free pages."""
    ids = [_add(cli, f"memory number {i} about the trimmed index {'padding ' * 60}", "--scope", "personal")
           for i in range(40)]  # fmt: skip
    for memory_id in ids[5:]:  # gone by hand: the rebuilt index is an eighth of the old one
        (data_root / "memories" / "personal" / f"{memory_id}.md").unlink()
    assert cli("reindex").rc == 0
    db = sqlite3.connect(paths.index_path(data_root))
    try:
        assert db.execute("PRAGMA auto_vacuum").fetchone()[0] == 2
        assert db.execute("PRAGMA freelist_count").fetchone()[0] == 0
    finally:
        db.close()


def test_a_rebuild_leaves_fts_merging_as_it_found_it(cli: Any, data_root: Path) -> None:
    """A rebuild turns FTS5's automerge off while it inserts, and back on in the same
    transaction: later writes merge as usual, and the index checks out."""
    for i in range(12):
        _add(cli, f"automerge note {i} with words to index", "--scope", "personal")
    assert cli("reindex").rc == 0
    with Context.load() as ctx:
        setting = ctx.conn.execute("SELECT v FROM memories_fts_config WHERE k = 'automerge'").fetchone()
        assert setting is not None and int(setting[0]) == 4
        ctx.conn.execute("INSERT INTO memories_fts(memories_fts) VALUES ('integrity-check')")
        assert ctx.conn.execute("SELECT count(*) FROM memories_fts WHERE memories_fts MATCH 'automerge'").fetchone()[0] == 12


def test_a_first_build_stores_the_fingerprint_the_next_read_computes(cli: Any, data_root: Path) -> None:
    """A folder without a stored fingerprint takes it from the scan's own stats (no second
    pass): it must be the checksum ``folder_checksum`` gives, odd entries included, or
    every next read would compare rows again."""
    from openmemex import fingerprint, index

    for i in range(5):
        _add(cli, f"fingerprint note {i}", "--scope", "personal")
    folder = data_root / "memories" / "personal"
    (folder / "linked.md").symlink_to(next(folder.glob("*.md")))
    (folder / "a-folder.md").mkdir()
    (folder / "notes.txt").write_text("not a memory")
    paths.index_path(data_root).unlink()
    for suffix in ("-wal", "-shm"):
        Path(f"{paths.index_path(data_root)}{suffix}").unlink(missing_ok=True)
    with Context.load() as ctx:
        freshness.sync(ctx, "personal")
        stored = index.stored_fingerprint(ctx.conn, str(folder))
    assert stored == fingerprint.folder_checksum(folder)
    assert stored is not None and stored[1] == 7


def test_the_rules_digest_covers_sqlites_tokenizer(cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """An FTS delete is tokenised again by the SQLite running it: an index written by an
    SQLite that cut the probe into other terms (other Unicode tables after a Python or OS
    upgrade) is rebuilt from the files, not fed deletes that miss what it holds."""
    terms = index_schema._tokenized((index_schema._TOKENIZER_PROBE,))
    assert ("creme", "c0", 0) in terms and ("run", "c0", 16) in terms  # remove_diacritics 2, porter
    memory = _add(cli, "the release train leaves on thursday", "--scope", "personal")
    index_schema.text_rules.cache_clear()
    ours = index_schema.text_rules()
    real = index_schema._tokenized
    monkeypatch.setattr(index_schema, "_tokenized", lambda values: [*real(values), ("straße", "c7", 6)])
    another_environment(monkeypatch)  # an SQLite that cuts words otherwise is another build
    index_schema.text_rules.cache_clear()
    try:
        other = index_schema.text_rules()
        assert other != ours
        with Context.load() as ctx:
            assert ctx.conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 0  # dropped on connect
            assert ctx.conn.execute("SELECT value FROM index_info WHERE key = 'text'").fetchone()[0] == other
        assert memory in cli("search", "release train", "--scope", "personal").out
    finally:
        index_schema.text_rules.cache_clear()


def test_the_code_stamp_covers_the_runtime_and_every_module(monkeypatch: pytest.MonkeyPatch) -> None:
    """Another Python (other Unicode tables: ``\\w`` and the tokenizer's letters) or any module
    of the package or its scanner moved is another environment, for the index's rules and the
    scanner's clean verdicts alike."""
    import sys
    import unicodedata

    from openmemex import codestamp

    first = codestamp._read()
    assert first == codestamp._read()
    monkeypatch.setattr(sys, "version", sys.version + " (another build)")
    assert codestamp._read() != first
    monkeypatch.undo()
    monkeypatch.setattr(unicodedata, "unidata_version", "99.0.0")
    assert codestamp._read() != first


def test_a_process_left_running_through_an_upgrade_records_the_code_it_runs(tmp_path: Path) -> None:
    """A process (an MCP server) loaded the package, then its files were upgraded under it,
    then it made the index: what it records is bound to the code it ran, so a process of the
    new code works the rules out, finds them other, and rebuilds."""
    import shutil
    import subprocess
    import sys

    package = tmp_path / "pkg"
    shutil.copytree(Path(index_schema.__file__).parent, package / "openmemex",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(package), "OPEN_MEMEX_HOME": str(tmp_path / "root"),
           "PYTHONDONTWRITEBYTECODE": "1"}  # fmt: skip
    ready, go = tmp_path / "ready", tmp_path / "go"
    old = subprocess.Popen([sys.executable, "-c", (
        "import pathlib, time; from openmemex import index_schema; from openmemex.context import Context\n"
        f"pathlib.Path({str(ready)!r}).touch()\n"
        f"while not pathlib.Path({str(go)!r}).exists(): time.sleep(0.05)\n"
        "with Context.load() as ctx: ctx.conn.execute('SELECT 1')")], cwd=tmp_path, env=env)  # fmt: skip
    try:
        for _ in range(1200):
            if ready.exists():
                break
            time.sleep(0.05)
        text = package / "openmemex" / "text.py"
        source = text.read_text()
        assert 'CJK_STANDIN = "\\ue000"' in source
        text.write_text(source.replace('CJK_STANDIN = "\\ue000"', 'CJK_STANDIN = "\\ue001"'))  # other rules
        go.touch()
        assert old.wait(timeout=120) == 0
    finally:
        if old.poll() is None:
            old.kill()
    probe = ("from openmemex import index_schema; from openmemex.context import Context\n"
             "ctx = Context.load()\n"
             "print(ctx.conn.execute(\"SELECT value FROM index_info WHERE key = 'text'\").fetchone()[0] == "
             "index_schema.text_rules())")  # fmt: skip
    new = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=120)  # fmt: skip
    assert new.stdout.strip() == "True", new.stdout + new.stderr
