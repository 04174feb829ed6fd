"""Four real processes adding memories into one data root at the same time lose nothing:
every file lands on disk, every file has exactly one index row, FTS finds them all, and
no writer fails (WAL + BEGIN IMMEDIATE + busy_timeout, atomic file writes)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from openmemex import freshness, paths
from openmemex.context import Context
from openmemex.memfile import read_memory

WORKERS = 4
PER_WORKER = 100
COMMON_WORD = "zebracorn"

# One process per worker: import once, wait at a barrier so all four start together,
# then call the CLI's run() in-process PER_WORKER times with distinct texts.
WORKER = """
import os, sys, time
from pathlib import Path
from openmemex.cli.app import run

worker, count, go = int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
words = ["amber", "basalt", "cobalt", "dune", "ember", "fjord", "garnet", "harbor"]
deadline = time.monotonic() + 60
while not go.exists():
    if time.monotonic() > deadline:
        sys.exit(3)
    time.sleep(0.005)
failures = 0
for i in range(count):
    text = (
        f"{COMMON} writer{worker} entry{i:03d} {words[i % 8]} {words[(i // 8) % 8]} "
        f"unique marker w{worker}n{i}q{(i * 7919 + worker) % 1000}"
    )
    rc = run(["add", text, "--scope", "personal"])
    if rc != 0:
        failures += 1
        print(f"worker {worker} item {i} exit {rc}", file=sys.stderr)
sys.exit(1 if failures else 0)
""".replace("{COMMON}", COMMON_WORD)


def test_parallel_adds_lose_nothing(tmp_path: Path, data_root: Path) -> None:
    script = tmp_path / "worker.py"
    script.write_text(WORKER, encoding="utf-8")
    go = tmp_path / "go"
    env = dict(os.environ)
    started = time.monotonic()
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), str(w), str(PER_WORKER), str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for w in range(WORKERS)
    ]
    go.touch()
    results = []
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=120)
            results.append((proc.returncode, out, err))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    elapsed = time.monotonic() - started

    for w, (rc, _out, err) in enumerate(results):
        assert rc == 0, f"worker {w} exited {rc}: {err[-2000:]}"
        assert "Traceback" not in err
        assert "error" not in err.lower(), err[-2000:]
        assert "warning" not in err.lower(), err[-2000:]

    with Context.load() as ctx:
        folder = ctx.personal_dir
        db = paths.index_path(ctx.root)
    files = sorted(paths.memories_root(data_root).rglob("*.md"))
    assert len(files) == WORKERS * PER_WORKER
    assert all(f.parent == folder for f in files)
    leftovers = [p.name for p in folder.iterdir() if p.name.startswith(".")]
    assert leftovers == [], "temporary files left behind"
    bodies = {read_memory(f).body for f in files}
    assert len(bodies) == WORKERS * PER_WORKER
    file_ids = {f.stem for f in files}

    # The index as the writers left it, before any further reconcile.
    raw = sqlite3.connect(db)
    try:
        raw_rows = raw.execute("SELECT COUNT(*) FROM memory_rows").fetchone()[0]
        raw_ids = {r[0] for r in raw.execute("SELECT id FROM memory_rows")}
    finally:
        raw.close()
    assert raw_ids == file_ids, (
        f"index rows after the writers: {raw_rows}; missing {sorted(file_ids - raw_ids)[:5]}, "
        f"extra {sorted(raw_ids - file_ids)[:5]}"
    )
    assert raw_rows == WORKERS * PER_WORKER

    with Context.load() as ctx:
        stats = freshness.sync(ctx, "personal")
        assert stats.changed is False, stats.summary()
        conn = ctx.conn
        assert conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0] == WORKERS * PER_WORKER
        assert (
            conn.execute("SELECT COUNT(DISTINCT file_path) FROM memories").fetchone()[0]
            == WORKERS * PER_WORKER
        )
        fts = conn.execute(
            "SELECT COUNT(*) FROM memories_fts WHERE memories_fts MATCH ?", (COMMON_WORD,)
        ).fetchone()[0]
        assert fts == WORKERS * PER_WORKER
        joined = conn.execute(
            "SELECT COUNT(*) FROM memories_fts JOIN memories m ON m.rowid = memories_fts.rowid "
            "WHERE memories_fts MATCH ?",
            (COMMON_WORD,),
        ).fetchone()[0]
        assert joined == WORKERS * PER_WORKER
        assert conn.execute("SELECT COUNT(*) FROM quarantine").fetchone()[0] == 0
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        fts_check = conn.execute(
            "INSERT INTO memories_fts(memories_fts) VALUES ('integrity-check')"
        )
        assert fts_check is not None
        per_worker = [
            conn.execute(
                "SELECT COUNT(*) FROM memories_fts WHERE memories_fts MATCH ?", (f"writer{w}",)
            ).fetchone()[0]
            for w in range(WORKERS)
        ]  # fmt: skip
        assert per_worker == [PER_WORKER] * WORKERS
    assert elapsed < 90, f"4×{PER_WORKER} parallel adds took {elapsed:.1f}s"


def test_reconcile_keeps_rows_of_files_written_during_its_scan(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Interleaving of two processes, made deterministic: reader A stat-scans the folder,
    then writer B saves a file and indexes it, then A compares its scan with the index.
    A must not delete B's fresh row (B's file simply was not there when A looked)."""
    from openmemex.write import add_memory

    with Context.load() as ctx:
        add_memory(ctx, "zebracorn baseline memory", scope="personal")

    real_scan = freshness._scan
    written: list[str] = []

    def scan_then_concurrent_write(folder: Path):  # type: ignore[no-untyped-def]
        result = real_scan(folder)
        if not written:
            written.append("busy")
            with Context.load() as writer:
                written[0] = add_memory(
                    writer, "zebracorn written by another process", scope="personal"
                ).id
        return result

    with Context.load() as ctx:  # as if another process changed the folder: no warm path
        ctx.conn.execute("DELETE FROM folder_state")
    monkeypatch.setattr(freshness, "_scan", scan_then_concurrent_write)
    with Context.load() as reader:
        freshness.sync(reader, "personal")
    monkeypatch.setattr(freshness, "_scan", real_scan)
    new_id = written[0]

    with Context.load() as ctx:
        ids = {r[0] for r in ctx.conn.execute("SELECT id FROM memories")}
        path = ctx.personal_dir / f"{new_id}.md"
    assert path.exists()
    assert new_id in ids, "a reconcile deleted the index row of a file written after its scan"
