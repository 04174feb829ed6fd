"""Check-then-write races between real processes (issue 6, items 1 and 10): every
read-decide-write runs under the scope's lock, so concurrent identical adds make one file
and concurrent supersedes of one id make one replacement; the losers get the winner's
answer. Chain repair never touches a chain another process is in the middle of writing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from openmemex import freshness
from openmemex.context import Context
from openmemex.fingerprint import Sig
from openmemex.locks import lock_path
from openmemex.memfile import read_memory
from openmemex.store import memory_files
from tests.helpers import personal_text

# A file-based barrier per round, so all workers hit the same memory at the same moment.
WORKER = textwrap.dedent(
    """
    import io, json, os, sys, time
    from contextlib import redirect_stderr, redirect_stdout
    from pathlib import Path
    from openmemex.cli.app import run

    me, workers, op, sync = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], Path(sys.argv[4])
    targets = json.loads((sync / "targets.json").read_text())
    results = []
    for rnd, target in enumerate(targets):
        (sync / f"ready-{rnd}-{me}").touch()
        deadline = time.monotonic() + 60
        while sum(1 for w in range(workers) if (sync / f"ready-{rnd}-{w}").exists()) < workers:
            if time.monotonic() > deadline:
                sys.exit(3)
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            if op == "add":
                rc = run(["add", target, "--scope", "personal", "--json"])
            else:
                rc = run(["supersede", target, f"replacement by worker {me}", "--json"])
        results.append({"rc": rc, "out": out.getvalue(), "err": err.getvalue()})
    (sync / f"result-{me}.json").write_text(json.dumps(results))
    """
)


def _race(tmp_path: Path, op: str, workers: int, targets: list[str]) -> list[list[dict[str, object]]]:
    sync = tmp_path / f"sync-{op}"
    sync.mkdir()
    (sync / "targets.json").write_text(json.dumps(targets))
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    procs = [
        subprocess.Popen([sys.executable, str(script), str(w), str(workers), op, str(sync)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for w in range(workers)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err
    return [json.loads((sync / f"result-{w}.json").read_text()) for w in range(workers)]


def test_identical_adds_at_once_make_one_file(tmp_path: Path, data_root: Path) -> None:
    rounds, workers = 6, 8
    texts = [f"identical note number {i} about the deploy freeze window" for i in range(rounds)]
    results = _race(tmp_path, "add", workers, texts)
    for rnd in range(rounds):
        answers = [json.loads(str(results[w][rnd]["out"])) for w in range(workers)]
        assert all(results[w][rnd]["rc"] == 0 for w in range(workers))
        assert sorted(a["status"] for a in answers) == ["exists"] * (workers - 1) + ["saved"]
        assert len({a["id"] for a in answers}) == 1  # the losers name the winner's id
    files = memory_files(data_root / "memories" / "personal")
    bodies = [read_memory(p).body for p in files]
    assert sorted(bodies) == sorted(texts)


def test_concurrent_supersedes_of_one_id_make_one_replacement(tmp_path: Path, data_root: Path) -> None:
    rounds, workers = 5, 4
    folder = data_root / "memories" / "personal"
    folder.mkdir(parents=True)
    ids = [f"01K6AB3XZQ7WVD9J1M2N4P5Q{i:02d}" for i in range(rounds)]
    for memory_id in ids:
        (folder / f"{memory_id}.md").write_text(personal_text(memory_id, f"original fact {memory_id}"))
    results = _race(tmp_path, "supersede", workers, ids)
    for rnd, memory_id in enumerate(ids):
        codes = sorted(int(results[w][rnd]["rc"]) for w in range(workers))  # type: ignore[call-overload]
        assert codes == [0] + [1] * (workers - 1)
        losers = [str(results[w][rnd]["err"]) for w in range(workers) if results[w][rnd]["rc"] == 1]
        winner = next(json.loads(str(results[w][rnd]["out"])) for w in range(workers) if results[w][rnd]["rc"] == 0)
        for err in losers:
            assert f"{memory_id} is already superseded by {winner['id']}" in err
            assert "Traceback" not in err
        old = read_memory(folder / f"{memory_id}.md")
        assert old.status == "superseded" and old.superseded_by == winner["id"]
        replacements = [m for m in (read_memory(p) for p in memory_files(folder)) if m.supersedes == memory_id]
        assert [m.id for m in replacements] == [winner["id"]]


def test_repair_waits_for_a_supersede_in_flight(data_root: Path) -> None:
    """A one-sided chain on disk while another process holds the scope lock is a supersede
    in progress: a read must neither rewrite it nor warn; once the lock is free and the
    chain is still one-sided (the writer died), the next read repairs it."""
    folder = data_root / "memories" / "personal"
    folder.mkdir(parents=True)
    old_id, new_id = "01K6AB3XZQ7WVD9J1M2N4P5Q6R", "01K6AB3XZQ7WVD9J1M2N4P5Q7S"
    (folder / f"{old_id}.md").write_text(personal_text(old_id, "the old fact"))
    (folder / f"{new_id}.md").write_text(personal_text(new_id, "the new fact", supersedes=old_id))
    lock_path(data_root, "personal").parent.mkdir(parents=True)
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import fcntl, os, sys, time
            fd = os.open({str(lock_path(data_root, 'personal'))!r}, os.O_RDWR | os.O_CREAT, 0o644)
            fcntl.flock(fd, fcntl.LOCK_EX)
            print("locked", flush=True)
            sys.stdin.read()
        """)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        warnings: list[str] = []
        with Context.load(warn=warnings.append) as ctx:
            freshness.sync(ctx, "personal")
        assert warnings == []
        assert read_memory(folder / f"{old_id}.md").superseded_by is None  # untouched
    finally:
        assert holder.stdin is not None and holder.stdout is not None
        holder.stdin.close()
        holder.wait(timeout=10)
        holder.stdout.close()
    warnings = []
    with Context.load(warn=warnings.append) as ctx:
        freshness.sync(ctx, "personal")  # no file changed since the last read: the repair still runs
    assert warnings == [f"{old_id}.md: repaired one-sided supersede chain (superseded_by {new_id})"]
    old = read_memory(folder / f"{old_id}.md")
    assert (old.status, old.superseded_by) == ("superseded", new_id)


def test_file_forgotten_mid_scan_is_dropped_silently(data_root: Path, monkeypatch: object) -> None:
    import pytest

    from openmemex import index

    assert isinstance(monkeypatch, pytest.MonkeyPatch)
    folder = data_root / "memories" / "personal"
    folder.mkdir(parents=True)
    keep = "01K6AB3XZQ7WVD9J1M2N4P5Q6R"
    gone = "01K6AB3XZQ7WVD9J1M2N4P5Q7S"
    (folder / f"{keep}.md").write_text(personal_text(keep, "kept"))
    (folder / f"{gone}.md").write_text(personal_text(gone, "about to be forgotten"))
    real_scan = freshness._scan

    def scan_then_delete(path: Path) -> tuple[dict[str, Sig], dict[str, str]]:
        found = real_scan(path)
        (folder / f"{gone}.md").unlink(missing_ok=True)  # another process forgets it now
        return found

    monkeypatch.setattr(freshness, "_scan", scan_then_delete)
    warnings: list[str] = []
    with Context.load(warn=warnings.append) as ctx:
        freshness.sync(ctx, "personal")
        assert warnings == []
        assert index.quarantined(ctx.conn) == []
        ids = [r[0] for r in ctx.conn.execute("SELECT id FROM memories")]
    assert ids == [keep]
    assert os.listdir(folder) == [f"{keep}.md"]


def test_reindex_never_shows_an_empty_index(data_root: Path, monkeypatch: object) -> None:
    """While `reindex` rebuilds, other connections keep the old, complete index: a search
    still answers and an identical add is still recognised (it used to save a duplicate)."""
    import threading
    import time

    import pytest

    from openmemex.search import search
    from openmemex.write import add_memory

    assert isinstance(monkeypatch, pytest.MonkeyPatch)
    with Context.load() as ctx:
        for i in range(60):
            add_memory(ctx, f"fact {i} about the lighthouse keeper schedule", scope="personal")
        known = add_memory(ctx, "the harbour gate closes at dusk", scope="personal").id
    real_read = freshness.read_memory

    reread_here: list[Path] = []
    main = threading.get_ident()

    def slow_read(path: Path, key: str | None = None, keep_raw: bool = True) -> object:
        if threading.get_ident() == main:
            reread_here.append(path)  # this connection saw an emptied index and rebuilt it too
        time.sleep(0.01)
        return real_read(path, key, keep_raw)

    monkeypatch.setattr(freshness, "read_memory", slow_read)
    done = threading.Event()

    def rebuild() -> None:
        with Context.load() as ctx:
            freshness.rebuild(ctx.conn, ctx.folders("all"), warn=ctx.warn)
        done.set()

    worker = threading.Thread(target=rebuild)
    worker.start()
    seen, answers = 0, []
    with Context.load() as ctx:
        while not done.is_set():
            hits = search(ctx, "harbour gate", scope="personal").hits
            assert [h.id for h in hits] == [known]
            answers.append(add_memory(ctx, "the harbour gate closes at dusk", scope="personal").status)
            seen += 1
    worker.join()
    assert seen > 3 and set(answers) == {"exists"}
    assert reread_here == []
    assert len(memory_files(data_root / "memories" / "personal")) == 61


def test_many_processes_creating_the_index_at_once_never_get_busy(tmp_path: Path) -> None:
    """Switching a new index to WAL and creating its schema raced: SQLite answers
    "database is locked" at once (no busy wait). Creation is serialised by a lock file."""
    script = tmp_path / "open.py"
    script.write_text(textwrap.dedent("""
        import sys, time
        from pathlib import Path
        from openmemex.context import Context
        go = Path(sys.argv[1])
        while not go.exists():
            time.sleep(0.0005)
        with Context.load() as ctx:
            ctx.conn.execute("SELECT COUNT(*) FROM memories").fetchone()
    """))
    for round_ in range(6):
        root = tmp_path / f"data{round_}"
        go = tmp_path / f"go{round_}"
        env = {**os.environ, "OPEN_MEMEX_HOME": str(root)}
        procs = [subprocess.Popen([sys.executable, str(script), str(go)], env=env, stderr=subprocess.PIPE, text=True)
                 for _ in range(5)]  # fmt: skip
        time.sleep(0.3)
        go.touch()
        for proc in procs:
            _, err = proc.communicate(timeout=60)
            assert proc.returncode == 0, err


def test_a_memory_moved_to_another_scope_before_the_lock_is_looked_up_again(data_root: Path, git_repo: Path,
                                                                           monkeypatch: object) -> None:
    """The lock is chosen from a first lookup; if a migrate moves the memory before the lock
    is held, acting under the old scope's lock would race writers of the new one."""

    import pytest

    from openmemex.lifecycle import set_status
    from openmemex.write import add_memory

    assert isinstance(monkeypatch, pytest.MonkeyPatch)
    with Context.load() as ctx:
        memory_id = add_memory(ctx, "moved between scopes mid-command", scope="personal").id
        outbox = ctx.outbox_dir
    taken: list[tuple[str, ...]] = []
    real_lock = Context.lock

    def lock_after_a_migrate(self: Context, *keys: str) -> object:
        taken.append(keys)
        if len(taken) == 1:  # another process migrates it right now
            outbox.mkdir(parents=True, exist_ok=True)
            source = data_root / "memories" / "personal" / f"{memory_id}.md"
            text = source.read_text().replace("scope: personal", "scope: project")
            text = text.replace("scope_key: personal", f"scope_key: {outbox.name}")
            (outbox / source.name).write_text(text)
            source.unlink()
        return real_lock(self, *keys)

    monkeypatch.setattr(Context, "lock", lock_after_a_migrate)
    with Context.load() as ctx:
        change = set_status(ctx, memory_id, "deprecated")
    assert taken == [("personal",), (outbox.name,)]
    assert change.memory.path == outbox / f"{memory_id}.md"
    assert read_memory(outbox / f"{memory_id}.md").status == "deprecated"
