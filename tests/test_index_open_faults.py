"""An index.db SQLite cannot open, or cannot write, is one line naming the file to fix —
never exit 70 — and the index, being a cache, can always be removed and rebuilt."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import run_process

# As root, permission bits do not stop a write: drop the capabilities that skip them.
AS_USER = ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner"] if os.geteuid() == 0 else []


def _run(*args: str, user: bool = False) -> subprocess.CompletedProcess[str]:
    """``open-memex ARGS`` as a process (as a user without permission overrides: ``user``)."""
    prefix = AS_USER if user else []
    return subprocess.run([*prefix, sys.executable, "-m", "openmemex", *args], capture_output=True, text=True,
                          timeout=60)  # fmt: skip


def test_an_index_that_cannot_be_opened_is_one_line_and_the_fix_works(data_root: Path) -> None:
    assert run_process("add", "qcant1z a memory", "--scope", "personal").rc == 0
    db = data_root / "index.db"
    cases = {"a folder": lambda: db.mkdir(), "a FIFO": lambda: os.mkfifo(db),
             "a dangling link": lambda: db.symlink_to(data_root / "nowhere" / "x.db")}  # fmt: skip
    for name, make in cases.items():
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
        make()
        for command in (("search", "qcant1z"), ("list",), ("reindex",)):
            result = _run(*command)
            assert result.returncode == 1, (name, command, result.stderr)
            assert str(db) in result.stderr and "rebuilt from the memory files" in result.stderr, (name, result.stderr)
            assert result.stderr.count("\n") == 1 and "internal error" not in result.stderr
        if db.is_dir() and not db.is_symlink():
            shutil.rmtree(db)
        else:
            db.unlink()
        assert "qcant1z" in run_process("search", "qcant1z").out  # removed: rebuilt from the files
    db.chmod(0)
    try:
        result = _run("list", user=True)
        assert result.returncode == 1 and "cannot open the index" in result.stderr, result.stderr
        assert "make it readable and writable, or remove it" in result.stderr
    finally:
        db.chmod(0o644)


def test_a_read_only_shm_left_behind_is_named(data_root: Path) -> None:
    """SQLite makes index.db-shm with index.db's mode: after the index was read-only once,
    restoring index.db's mode did not help, and the message never named the -shm file."""
    assert run_process("add", "qshmz a memory", "--scope", "personal").rc == 0
    db = data_root / "index.db"
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    db.chmod(0o444)
    _run("list", user=True)
    db.chmod(0o644)
    shm = Path(f"{db}-shm")
    assert shm.exists() and not shm.stat().st_mode & 0o222
    result = _run("add", "qshmz another memory", "--scope", "personal", user=True)
    # the file is saved (the command says so and succeeds); the warning names the -shm file
    assert result.returncode == 0 and f"make these writable: {shm}" in result.stderr, result.stderr
    assert "the change is saved, but the index could not be updated" in result.stderr


def test_an_unreadable_scope_folder_is_one_warning_and_forgets_nothing(data_root: Path) -> None:
    """A teammate's folder (or anything at mode 000) in memories/: `--scope all`, `reindex`
    and `doctor` crashed with exit 70. Now one warning; the rows indexed before stay (a
    permission problem is no reason to forget memories), and doctor names the folder."""
    assert run_process("add", "qmine1z my own memory", "--scope", "personal").rc == 0
    other = data_root / "memories" / "project__other__0123456789ab"
    other.mkdir(parents=True)
    theirs = run_process("add", "qtheirs1z a memory of the other project", "--scope", "personal")
    assert theirs.rc == 0
    moved = next((data_root / "memories" / "personal").glob("*.md"))
    for path in (data_root / "memories" / "personal").glob("*.md"):
        if "qtheirs1z" in path.read_text():
            moved = path
    text = moved.read_text().replace("scope: personal", "scope: project").replace(
        "scope_key: personal", "scope_key: project__other__0123456789ab").replace("visibility: private", "visibility: internal")
    (other / moved.name).write_text(text)
    moved.unlink()
    assert "qtheirs1z" in run_process("search", "qtheirs1z", "--scope", "all").out
    other.chmod(0)
    try:
        for command in (("search", "qtheirs1z", "--scope", "all"), ("list", "--scope", "all"), ("reindex",), ("doctor",)):
            result = _run(*command, user=True)
            assert "internal error" not in result.stderr and "Traceback" not in result.stderr, (command, result.stderr)
            assert result.stderr.count("cannot read") == 1 and str(other) in result.stderr, (command, result.stderr)
            if command[0] == "search":
                assert result.returncode == 0 and "qtheirs1z" in result.stdout  # still as last indexed
            if command[0] == "doctor":
                assert "the folder cannot be read" in result.stdout
    finally:
        other.chmod(0o755)


def test_doctor_finds_a_row_changed_behind_the_index(data_root: Path) -> None:
    """The fingerprint trusts rows whose files did not change: a row edited by a sqlite3
    shell (a column no trigger guards, such as status) kept a memory hidden, and doctor said
    all was well. Doctor compares every row with its file and names `reindex`, which heals it."""
    import json
    import sqlite3

    added = run_process("add", "qfsz the staging db is read-only on weekends", "--scope", "personal", "--json")
    memory_id = json.loads(added.out)["id"]
    supersede = run_process("supersede", memory_id, "qfsz the staging db is read-only on Sundays", "--json")
    assert supersede.rc == 0, supersede.err

    def rows_check() -> dict[str, object]:
        checks = json.loads(run_process("doctor", "--json").out)["checks"]
        return next(c for c in checks if c["name"] == "index rows")  # type: ignore[no-any-return]

    assert rows_check()["ok"], rows_check()
    with sqlite3.connect(data_root / "index.db") as foreign:
        foreign.execute("UPDATE memory_rows SET status = 'retracted' WHERE body LIKE '%Sundays%'")
    assert "qfsz" not in run_process("search", "qfsz").out  # hidden by the edit
    found = rows_check()
    assert not found["ok"] and "(status)" in str(found["detail"]) and "open-memex reindex" in str(found["detail"])
    assert run_process("reindex").rc == 0
    assert rows_check()["ok"] and "Sundays" in run_process("search", "qfsz").out
