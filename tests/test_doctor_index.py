"""doctor when the index is held by another process's write, and on a data root it makes:
the real CLI, a real SQLite write transaction in another process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import run_process

HOLD = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
conn.execute("CREATE TABLE IF NOT EXISTS held_by_test(x)")
print("held", flush=True)
sys.stdin.read()  # until the test closes our stdin
conn.execute("ROLLBACK")
"""


def test_doctor_runs_its_checks_while_another_process_writes_the_index(data_root: Path) -> None:
    """A memory file changed since the last sync made doctor's own sync wait for the lock and
    fail: "the memory store is busy", exit 1, and no check at all."""
    assert run_process("add", "personal pref for the busy doctor", "--scope", "personal").rc == 0
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(data_root / "index.db")], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        memory = next((data_root / "memories" / "personal").glob("*.md"))
        memory.write_text(memory.read_text() + "\n")  # a hand edit since the last sync
        result = run_process("doctor", "--json")
    finally:
        assert holder.stdin is not None and holder.stdout is not None
        holder.stdin.close()
        holder.wait(timeout=30)
        holder.stdout.close()
    assert result.rc == 1, result.err
    checks = {c["name"]: c for c in json.loads(result.out)["checks"]}
    busy = checks["index busy"]
    assert not busy["ok"] and "index.db" in busy["detail"]
    assert f"pid {holder.pid} " in busy["detail"] or "another open-memex process is writing" in busy["detail"]
    for name in ("python", "storage", "locking", "memory files", "duplicate ids", "supersede chains", "git",
                 "mcp handshake"):  # fmt: skip
        assert name in checks, name
    assert "index rows" not in checks  # rows not brought up to date would differ for no fault
    assert all(c["ok"] for n, c in checks.items() if n in ("python", "storage", "memory files", "supersede chains"))


def test_doctor_says_when_it_made_the_data_root(data_root: Path) -> None:
    """A mistyped OPEN_MEMEX_HOME was made and reported as "storage ok" like any other."""
    assert not data_root.exists()
    fresh = run_process("doctor", "--json")
    storage = next(c for c in json.loads(fresh.out)["checks"] if c["name"] == "storage")
    assert storage["ok"] and "created just now" in storage["detail"], storage
    again = run_process("doctor", "--json")
    storage = next(c for c in json.loads(again.out)["checks"] if c["name"] == "storage")
    assert storage["ok"] and "created" not in storage["detail"], storage
