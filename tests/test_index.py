"""The SQLite FTS5 index is a cache of the files, reconciled by a stat scan before reads.

Covers: hand edits (add/edit/delete) showing up, SyncStats counts, the warm no-change
path doing no write, transparent rebuilds (deleted db, old user_version, ``reindex``),
connection settings, supersede-chain self-healing, dangling and cyclic chains, and
faithful rewrites of hand-edited files.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from openmemex import freshness, index, paths
from openmemex.context import Context
from openmemex.fingerprint import folder_checksum
from openmemex.ids import new_ulid
from tests import helpers
from tests.bundles import project_text
from tests.helpers import write_example

WARN_PREFIX = "open-memex: warning: "

HAND_NOTE = "x_hand_note: keep me # a field and a comment we do not own\n"


def personal_text(memory_id: str, body: str, **kw: str | None) -> str:
    return helpers.personal_text(memory_id, body, extra=HAND_NOTE, **kw)  # type: ignore[arg-type]


def write_personal(
    folder: Path, body: str, memory_id: str | None = None, **kw: str | None
) -> tuple[str, Path]:
    memory_id = memory_id or new_ulid()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{memory_id}.md"
    path.write_text(personal_text(memory_id, body, **kw), encoding="utf-8")  # type: ignore[arg-type]
    return memory_id, path


def personal_dir() -> Path:
    with Context.load() as ctx:
        return ctx.personal_dir


def db_path() -> Path:
    with Context.load() as ctx:
        return paths.index_path(ctx.root)


def row_ids() -> set[str]:
    with Context.load() as ctx:
        freshness.sync(ctx, "all")
        return {r[0] for r in ctx.conn.execute("SELECT id FROM memories")}


def search_ids(cli, query: str, *extra: str) -> tuple[str, str]:  # type: ignore[no-untyped-def]
    result = cli("search", query, "--scope", "personal", *extra)
    assert result.rc == 0, result.err
    assert "Traceback" not in result.out + result.err
    return result.out, result.err


# ---- reconcile -----------------------------------------------------------------------


def test_hand_written_file_is_found_edited_and_removed(cli) -> None:  # type: ignore[no-untyped-def]
    folder = personal_dir()
    mid, path = write_personal(folder, "the staging cluster runs on giraffe nodes")

    out, err = search_ids(cli, "giraffe")
    assert mid in out
    assert err == ""

    path.write_text(
        personal_text(mid, "the staging cluster now runs on penguin hardware"), encoding="utf-8"
    )
    out, _ = search_ids(cli, "giraffe")
    assert mid not in out
    assert "(no matches)" in out
    out, _ = search_ids(cli, "penguin")
    assert mid in out

    path.unlink()
    out, _ = search_ids(cli, "penguin")
    assert mid not in out
    listed = cli("list", "--scope", "personal")
    assert listed.rc == 0
    assert mid not in listed.out
    assert mid not in row_ids()


def test_sync_stats_counts(tmp_path: Path) -> None:
    folder = personal_dir()
    a, path_a = write_personal(folder, "alpha fact about caching")
    b, path_b = write_personal(folder, "bravo fact about queues")
    write_personal(folder, "charlie fact about logging")

    with Context.load() as ctx:
        stats = freshness.sync(ctx, "personal")
        assert (stats.added, stats.updated, stats.removed, stats.scanned) == (3, 0, 0, 3)
        assert stats.changed is True
        assert stats.summary() == "+3 ~0 -0 (scanned 3)"
        assert stats.quarantined == []

    path_a.write_text(
        personal_text(a, "alpha fact about caching, now with a longer body"), encoding="utf-8"
    )
    path_b.unlink()
    write_personal(folder, "delta fact about tracing")
    write_personal(folder, "echo fact about metrics")
    bad = folder / f"{new_ulid()}.md"
    bad.write_text("", encoding="utf-8")

    warnings: list[str] = []
    with Context.load(warn=warnings.append) as ctx:
        stats = freshness.sync(ctx, "personal")
        assert (stats.added, stats.updated, stats.removed) == (2, 1, 1)
        assert stats.scanned == 5  # four good files and the empty one
        assert stats.summary() == "+2 ~1 -1 (scanned 5)"
        assert [p for p, _ in stats.quarantined] == [bad]
        assert len(warnings) == 1 and str(bad) in warnings[0]
        log = ctx.conn.execute(
            "SELECT added, updated, removed, scanned FROM sync_log WHERE dir = ?", (str(folder),)
        ).fetchone()
        assert tuple(log) == (2, 1, 1, 5)
        ids = {r[0] for r in ctx.conn.execute("SELECT id FROM memories")}
        assert a in ids and b not in ids and len(ids) == 4

    with Context.load(warn=warnings.append) as ctx:
        stats = freshness.sync(ctx, "personal")
        assert (stats.added, stats.updated, stats.removed, stats.scanned) == (0, 0, 0, 5)
        assert stats.changed is False
        assert stats.quarantined == []
    assert len(warnings) == 1


def test_warm_reconcile_performs_no_write(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    folder = personal_dir()
    for word in ("kiwi", "mango", "papaya"):
        write_personal(folder, f"kubernetes note about {word}")
    (folder / f"{new_ulid()}.md").write_text("---\n- not a mapping\n---\nbody\n", encoding="utf-8")
    outside = tmp_path / "outside.md"
    outside.write_text("x", encoding="utf-8")
    (folder / f"{new_ulid()}.md").symlink_to(outside)

    first = cli("search", "kubernetes")
    assert first.rc == 0
    assert first.err.count(WARN_PREFIX) == 2

    watcher = sqlite3.connect(db_path())
    try:
        before_version = watcher.execute("PRAGMA data_version").fetchone()[0]
        before_log = watcher.execute("SELECT * FROM sync_log ORDER BY dir").fetchall()
        before_q = watcher.execute("SELECT * FROM quarantine ORDER BY file_path").fetchall()

        statements: list[str] = []
        warnings: list[str] = []
        with Context.load(warn=warnings.append) as ctx:
            ctx.conn.set_trace_callback(statements.append)
            changes = ctx.conn.total_changes
            for scope in ("personal", "both", "all"):
                stats = freshness.sync(ctx, scope)
                assert stats.changed is False
                assert (stats.added, stats.updated, stats.removed) == (0, 0, 0)
            assert ctx.conn.total_changes == changes
            ctx.conn.set_trace_callback(None)
        assert warnings == []
        assert any(s.lstrip().upper().startswith("SELECT") for s in statements), (
            "tracing saw nothing"
        )
        writes = [
            s
            for s in statements
            if s.lstrip().upper().startswith(("BEGIN", "INSERT", "UPDATE", "DELETE"))
        ]
        assert writes == [], writes

        again = cli("search", "kubernetes")
        assert again.rc == 0 and again.err == ""
        assert cli("list", "--scope", "both").err == ""

        assert watcher.execute("PRAGMA data_version").fetchone()[0] == before_version
        assert watcher.execute("SELECT * FROM sync_log ORDER BY dir").fetchall() == before_log
        assert watcher.execute("SELECT * FROM quarantine ORDER BY file_path").fetchall() == before_q
    finally:
        watcher.close()


# ---- rebuilds ------------------------------------------------------------------------


def _add_three(cli) -> list[str]:  # type: ignore[no-untyped-def]
    ids = []
    for text in (
        "rebuild note one about redis",
        "rebuild note two about postgres",
        "rebuild note three about nginx",
    ):
        result = cli("add", text, "--scope", "personal")
        assert result.rc == 0, result.err
        ids.append(result.out.split()[1])
    return ids


def _drop_db() -> None:
    db = db_path()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)


def test_deleted_index_is_rebuilt_transparently(cli) -> None:  # type: ignore[no-untyped-def]
    ids = _add_three(cli)
    _drop_db()
    assert not db_path().exists()

    listed = cli("list", "--scope", "personal")
    assert listed.rc == 0, listed.err
    assert listed.err == ""
    for mid in ids:
        assert mid in listed.out
    assert db_path().exists()
    out, _ = search_ids(cli, "postgres")
    assert ids[1] in out
    assert row_ids() == set(ids)


def _old_version(db: Path) -> None:
    conn = sqlite3.connect(db)
    try:
        conn.execute("PRAGMA user_version = 1")
    finally:
        conn.close()


def _old_schema(db: Path) -> None:
    _drop_db()
    conn = sqlite3.connect(db)
    try:
        conn.executescript(
            "CREATE TABLE memories(id TEXT PRIMARY KEY, body TEXT, priority INTEGER);"
            "CREATE VIRTUAL TABLE search_fts USING fts5(body);"
            "CREATE TABLE meta(k TEXT, v TEXT);"
            "INSERT INTO memories VALUES ('stale', 'a stale row from an old version', 5);"
            "PRAGMA user_version = 1;"
        )
    finally:
        conn.close()


@pytest.mark.parametrize(
    "damage", [_old_version, _old_schema], ids=["old-user-version", "old-schema"]
)
def test_old_user_version_triggers_rebuild(cli, damage) -> None:  # type: ignore[no-untyped-def]
    ids = _add_three(cli)
    db = db_path()
    damage(db)

    listed = cli("list", "--scope", "personal")
    assert listed.rc == 0, listed.err
    assert "Traceback" not in listed.err
    for mid in ids:
        assert mid in listed.out
    out, _ = search_ids(cli, "nginx")
    assert ids[2] in out

    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == index.SCHEMA_VERSION
        assert {r[0] for r in conn.execute("SELECT id FROM memory_rows")} == set(ids)
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert "meta" not in tables and "search_fts" not in tables
    finally:
        conn.close()


def test_corrupt_index_file_is_rebuilt(cli) -> None:  # type: ignore[no-untyped-def]
    """The index is a cache "rebuilt whenever in doubt": garbage in index.db must not
    take the store down."""
    ids = _add_three(cli)
    _drop_db()
    db_path().write_bytes(b"this is not an sqlite database at all\n" * 200)

    listed = cli("list", "--scope", "personal")
    assert listed.rc == 0, listed.err
    for mid in ids:
        assert mid in listed.out


def test_reindex_cli_rebuilds_and_reports_count(cli) -> None:  # type: ignore[no-untyped-def]
    ids = _add_three(cli)
    with Context.load() as ctx:  # the cache went wrong behind the stat scan's back
        ctx.conn.execute("UPDATE memory_rows SET body = 'garbage'")
    out, _ = search_ids(cli, "redis")
    assert ids[0] not in out
    result = cli("reindex")
    assert result.rc == 0, result.err
    assert "reindexed: 3 memories" in result.out
    assert row_ids() == set(ids)

    bad = personal_dir() / f"{new_ulid()}.md"
    bad.write_bytes(b"\x00\x01")
    result = cli("reindex")
    assert result.rc == 0, result.err
    assert "reindexed: 3 memories from 4 files, 1 skipped" in result.out
    assert len([line for line in result.err.splitlines() if line.startswith(WARN_PREFIX)]) == 1
    with Context.load() as ctx:
        assert [p for p, _ in index.quarantined(ctx.conn)] == [str(bad)]
    out, _ = search_ids(cli, "redis")
    assert ids[0] in out


def test_wal_and_busy_timeout(cli) -> None:  # type: ignore[no-untyped-def]
    assert cli("add", "settings check memory", "--scope", "personal").rc == 0
    with Context.load() as ctx:
        assert ctx.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert ctx.conn.execute("PRAGMA busy_timeout").fetchone()[0] == 5000
    conn = index.connect(db_path())
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 5000
    finally:
        conn.close()
    raw = sqlite3.connect(db_path())
    try:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"  # persistent in the file
    finally:
        raw.close()


# ---- supersede chains ------------------------------------------------------------------


def _diff_keys(before: str, after: str) -> set[str]:
    a, b = before.splitlines(), after.splitlines()
    assert len(a) == len(b), (before, after)
    return {x.split(":", 1)[0] for x, y in zip(a, b, strict=True) if x != y}


def test_one_sided_supersedes_is_healed(cli) -> None:  # type: ignore[no-untyped-def]
    folder = personal_dir()
    old_id, old_path = write_personal(folder, "kubernetes deploys use helm version two")
    new_id, _ = write_personal(
        folder, "kubernetes deploys use helm version three", supersedes=old_id
    )
    before = old_path.read_text(encoding="utf-8")

    out, err = search_ids(cli, "kubernetes")
    assert new_id in out
    assert old_id not in out
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith(WARN_PREFIX) and old_id in lines[0]

    after = old_path.read_text(encoding="utf-8")
    assert f"superseded_by: {new_id}\n" in after
    assert "\nstatus: superseded\n" in after
    assert _diff_keys(before, after) <= {"status", "superseded_by", "updated_at"}
    assert {"status", "superseded_by"} <= _diff_keys(before, after)
    assert "x_hand_note: keep me # a field and a comment we do not own\n" in after

    out, err = search_ids(cli, "kubernetes")
    assert new_id in out and old_id not in out
    assert err == ""
    listed = cli("list", "--scope", "personal")
    assert new_id in listed.out and old_id not in listed.out


def test_one_sided_superseded_by_is_healed(cli) -> None:  # type: ignore[no-untyped-def]
    folder = personal_dir()
    new_id = new_ulid()
    old_id, _ = write_personal(
        folder, "kubernetes ingress uses traefik", status="superseded", superseded_by=new_id
    )
    new_id, new_path = write_personal(
        folder, "kubernetes ingress uses envoy gateway", memory_id=new_id
    )
    before = new_path.read_text(encoding="utf-8")

    out, err = search_ids(cli, "kubernetes")
    assert new_id in out and old_id not in out
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith(WARN_PREFIX) and new_id in lines[0]
    after = new_path.read_text(encoding="utf-8")
    assert f"supersedes: {old_id}\n" in after
    assert "\nstatus: active\n" in after
    assert _diff_keys(before, after) <= {"supersedes", "updated_at"}


def test_dangling_superseded_by_does_not_hide_memory(cli) -> None:  # type: ignore[no-untyped-def]
    folder = personal_dir()
    missing = new_ulid()
    mid, _ = write_personal(
        folder, "kubernetes quota notes survive", status="superseded", superseded_by=missing
    )
    other, _ = write_personal(
        folder, "kubernetes replacement of a missing note", supersedes=new_ulid()
    )

    out, _ = search_ids(cli, "kubernetes")
    assert mid in out
    assert other in out
    out, _ = search_ids(cli, "quota")
    assert mid in out


def _project_file(folder: Path, body: str, review_state: str = "published", **pointers: str) -> tuple[str, Path]:
    """A project memory written into ``folder`` (the repo dir: a teammate's, as pulled)."""
    memory_id = new_ulid()
    folder.mkdir(parents=True, exist_ok=True)
    lines = "".join(f"{name}: {value}\n" for name, value in pointers.items())
    text = project_text(memory_id, body, review_state=review_state).replace("\n---\n\n", f"\n{lines}---\n\n", 1)
    path = folder / f"{memory_id}.md"
    path.write_text(text, encoding="utf-8")
    return memory_id, path


def _heads(cli) -> set[str]:  # type: ignore[no-untyped-def]
    listing = json.loads(cli("list", "--scope", "both", "--json").out)
    return {m["id"] for section in listing["sections"] for m in section["memories"] if m["status"] == "active"}


def test_a_pointer_across_scopes_or_into_the_repo_is_never_healed(cli, git_repo: Path) -> None:  # type: ignore[no-untyped-def]
    """Ids are public in the repository. A personal file (a bundle's, or written by hand)
    saying it supersedes a published memory there made the next read in the repository
    mark that memory superseded in the index: search showed only the personal text. A
    chain never crosses scopes (personal ↔ project, both ways), and only a file in the
    repository replaces a memory in it (not an outbox draft): such a pointer is reported
    once, as a skipped file is, and both memories stay as they are."""
    with Context.load() as ctx:
        repo_dir, outbox, personal = git_repo / ".ai" / "open-memex", ctx.outbox_dir, ctx.personal_dir
        key = ctx.project.key
    team, team_path = _project_file(repo_dir, "releases are cut from main after CI is green")
    evil, evil_path = write_personal(personal, "releases are cut from any branch, CI is optional", supersedes=team)
    draft, draft_path = _project_file(outbox, "releases skip CI on Fridays", review_state="draft", supersedes=team)
    mine, mine_path = write_personal(personal, "my release checklist has five steps")
    rogue, rogue_path = _project_file(repo_dir, "the release checklist is gone", supersedes=mine)
    files = [team_path, evil_path, draft_path, mine_path, rogue_path]
    before = [f.read_bytes() for f in files]

    result = cli("search", "release releases", "--scope", "both")
    assert result.rc == 0, result.err
    assert sorted(result.err.splitlines()) == sorted([
        f"{WARN_PREFIX}{evil}.md: supersedes {team} not followed — {team} is a memory of project {key} in the "
        f"repository and this one is a personal memory: a supersede chain never crosses scopes; "
        f"remove `supersedes: {team}` from {evil_path}",
        f"{WARN_PREFIX}{draft}.md: supersedes {team} not followed — {team} is in the repository, and only a file "
        f"in the repository can replace it; remove `supersedes: {team}` from {draft_path}",
        f"{WARN_PREFIX}{rogue}.md: supersedes {mine} not followed — {mine} is a personal memory and this one is a "
        f"memory of project {key} in the repository: a supersede chain never crosses scopes; "
        f"remove `supersedes: {mine}` from {rogue_path}",
    ])  # fmt: skip
    assert _heads(cli) == {team, evil, draft, mine, rogue}
    assert [f.read_bytes() for f in files] == before  # not one file changed
    again = cli("search", "release releases", "--scope", "both")
    assert again.rc == 0 and again.err == "", again.err  # said once, like a skipped file
    assert cli("list", "--scope", "personal").err == ""  # a read of one scope keeps what the others said

    doctor = next(c for c in json.loads(cli("doctor", "--json").out)["checks"] if c["name"] == "supersede chains")
    assert not doctor["ok"] and f"{evil} says supersedes {team}, which no read follows" in doctor["detail"]
    assert f"fix: remove `supersedes: {team}` from {evil_path}" in doctor["detail"]
    evil_path.write_text(evil_path.read_text(encoding="utf-8").replace("optional", "optional!"), encoding="utf-8")
    edited = cli("list", "--scope", "both")
    assert edited.err.count(WARN_PREFIX) == 1 and f"{evil}.md: supersedes {team} not followed" in edited.err
    # a chain within the repository is still completed there, in the index only
    newer, _ = _project_file(repo_dir, "releases are cut from main after CI and a tag", supersedes=team)
    healed = cli("list", "--scope", "both")
    assert f"{team}.md: one-sided supersede chain (missing superseded_by {newer}); fix the file in the repo" in healed.err
    assert team not in _heads(cli) and newer in _heads(cli)


@pytest.mark.parametrize("two_sided", [True, False], ids=["two-sided", "one-sided"])
def test_supersede_cycle_does_not_hang(cli, two_sided: bool) -> None:  # type: ignore[no-untyped-def]
    folder = personal_dir()
    a, b = new_ulid(), new_ulid()
    write_personal(folder, "kubernetes cycle note alpha", memory_id=a, status="superseded",
                   superseded_by=b, supersedes=b if two_sided else None)  # fmt: skip
    write_personal(folder, "kubernetes cycle note bravo", memory_id=b, status="superseded",
                   superseded_by=a, supersedes=a if two_sided else None)  # fmt: skip

    code = "from openmemex.cli.app import main; main()"
    for args in (["search", "kubernetes"], ["list", "--scope", "personal", "--include", "all"],
                 ["search", "cycle", "--explain"], ["show", a]):  # fmt: skip
        proc = subprocess.run(
            [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=30
        )  # fmt: skip
        assert proc.returncode == 0, (args, proc.stderr)
        assert "Traceback" not in proc.stderr
    out, _ = search_ids(cli, "kubernetes")
    assert a in out or b in out


# ---- faithful rewrites -----------------------------------------------------------------


def test_status_change_keeps_unknown_fields_and_comments(cli) -> None:  # type: ignore[no-untyped-def]
    with Context.load() as ctx:
        folder = paths.scope_dir(ctx.root, "project__my-repo__9f2c1a4b8e3d")
    path = write_example(folder)
    mid = path.stem
    before = path.read_text(encoding="utf-8")

    result = cli("status", mid, "deprecated")
    assert result.rc == 0, result.err
    assert "deprecated" in result.out
    after = path.read_text(encoding="utf-8")

    a, b = before.splitlines(), after.splitlines()
    assert len(a) == len(b)
    differing = [(x, y) for x, y in zip(a, b, strict=True) if x != y]
    assert [x.split(":", 1)[0] for x, _ in differing] == ["status", "updated_at"], differing
    status_line = next(y for x, y in differing if x.startswith("status:"))
    assert status_line.split("#", 1)[0].strip() == "status: deprecated"
    updated_line = next(y for x, y in differing if x.startswith("updated_at:"))
    assert updated_line.startswith('updated_at: "') and updated_line.rstrip().endswith('Z"')
    assert "x_team_owner: platform   # a field from a newer writer" in after
    assert "scope: project # personal | project | org (ownership: WHO owns it)" in after

    again = cli("status", mid, "deprecated")
    assert again.rc == 0
    assert path.read_text(encoding="utf-8") == after  # unchanged status: no rewrite


def test_own_writes_keep_the_folder_fingerprint_current(cli: Any, data_root: Path) -> None:
    """After add/forget the next read takes the warm path; a hand edit is still seen."""
    from openmemex.context import Context

    first = cli("add", "fingerprint one", "--scope", "personal")
    cli("add", "fingerprint two", "--scope", "personal")
    with Context.load() as ctx:
        folder = ctx.folders("personal")[0]
        stored = ctx.conn.execute("SELECT checksum, count FROM folder_state WHERE dir = ?", (str(folder.path),)).fetchone()
        assert (stored[0], stored[1]) == folder_checksum(folder.path)
    memory_id = first.out.split()[1]
    assert cli("forget", memory_id).rc == 0
    with Context.load() as ctx:
        stored = ctx.conn.execute("SELECT checksum, count FROM folder_state WHERE dir = ?", (str(folder.path),)).fetchone()
        assert (stored[0], stored[1]) == folder_checksum(folder.path)
    path = next(folder.path.glob("*.md"))
    path.write_text(path.read_text().replace("fingerprint two", "fingerprint edited by hand"))
    assert "edited by hand" in cli("search", "fingerprint").out


def test_one_memory_named_twice_in_one_write_is_not_damage(cli, git_repo: Path, data_root: Path) -> None:  # type: ignore[no-untyped-def]
    """`submit X X` writes one file twice in one batch: one row, no "damaged index"
    warning, no index moved aside (the batch insert once took the duplicate for damage)."""
    added = cli("add", "submit twice memory about pears", "--json")
    memory = json.loads(added.out)["id"]
    result = cli("submit", memory, memory)
    assert result.rc == 0, result.err
    assert "damaged" not in result.err
    assert not list(data_root.glob("index.db.corrupt*"))
    assert cli("search", "pears").out.count(memory) == 1
    db = sqlite3.connect(paths.index_path(data_root))
    try:
        assert db.execute("SELECT count(*) FROM memory_rows WHERE id = ?", (memory,)).fetchone()[0] == 1
        db.execute("INSERT INTO memories_fts(memories_fts) VALUES ('integrity-check')")  # raises when FTS disagrees
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        db.close()


@pytest.mark.parametrize("table", ["index_info", "memories_fts", "folder_state", "memory_rows", "folders", "VIEW memories"])
def test_an_index_missing_a_table_is_rebuilt(cli, data_root: Path, table: str) -> None:  # type: ignore[no-untyped-def]
    """A current-version index with a table dropped (by hand, by a foreign tool) is damage:
    the next command moves it aside and rebuilds it, and reindex works — before, every
    command, reindex included, ended in an internal error until index.db was deleted."""
    assert cli("add", "figs ripen in late summer").rc == 0
    db = sqlite3.connect(paths.index_path(data_root))
    db.execute(f"DROP {table}" if table.startswith("VIEW") else f"DROP TABLE {table}")
    db.commit()
    db.close()
    found = cli("search", "figs")
    assert found.rc == 0 and "figs" in found.out, found.err
    assert "Traceback" not in found.err and "internal error" not in found.err
    assert cli("reindex").rc == 0
    assert "figs" in cli("search", "figs").out
