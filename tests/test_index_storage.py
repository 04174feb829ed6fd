"""Issue 11, a smaller index: each folder's path is stored once, texts are stored deflated and
read back whole through the ``memories`` view, the secondary indexes exist after any build,
and a stored text that no longer inflates is found by ``doctor`` instead of failing reads."""

from __future__ import annotations

import json
import sqlite3
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


def test_a_text_that_no_longer_inflates_is_found_by_doctor_not_a_crash(cli: Any, data_root: Path) -> None:
    long_id = _add(cli, LONG)
    raw = _raw(data_root)
    try:  # a foreign connection cannot change a text: the FTS trigger needs our functions
        with pytest.raises(sqlite3.OperationalError, match="memex_"):
            raw.execute("UPDATE memory_rows SET body = x'ffffffffffffffff' WHERE id = ?", (long_id,))
    finally:
        raw.close()
    with Context.load() as ctx:  # bytes that are no deflate stream; the FTS entry follows the (unreadable) text
        ctx.conn.execute("UPDATE memory_rows SET body = x'ffffffffffffffff' WHERE id = ?", (long_id,))
    for args in (("search", "smoke"), ("list", "--scope", "personal"), ("show", long_id), ("export", "--scope", "personal")):
        result = run_process(*args)
        assert result.rc in (0, 1) and "Traceback" not in result.err and "internal error" not in result.err, (args, result.err)
    checks = json.loads(run_process("doctor", "--json").out)["checks"]
    rows = next(c for c in checks if c["name"] == "index rows")
    assert not rows["ok"] and "open-memex reindex" in str(rows["detail"])
    assert cli("reindex").rc == 0
    assert "smoke" in run_process("search", "smoke").out


def test_a_bracket_in_the_text_is_not_a_match_mark(cli: Any) -> None:
    """A memory found by its Chinese grams only shows its text, not FTS5's unmarked window
    because the text itself holds a "[" (a checklist item)."""
    text = "- [x] 回滚演练 rehearsed on Friday, with the pager on and the change frozen"
    memory_id = _add(cli, text)
    with Context.load() as ctx:
        hit = search(ctx, "回滚演练", scope="personal").hits[0]
    assert hit.id == memory_id
    assert hit.matched_via == "cjk" and hit.snippet == text
