"""Issue 11: search ranks first (FTS5's bm25 in SQLite's top-k sorter, no join) and only
then looks up and filters the ranked rows, widening when the filter leaves too few; the
snippets and highlights are marked for the shown hits only, in a scratch table. These
tests hold it to the single ranked join it replaced, used here as the oracle."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from openmemex import memfile, paths, search, store
from openmemex.context import Context
from openmemex.ids import new_ulid, now_rfc3339
from openmemex.index import placeholders
from openmemex.model import Memory
from openmemex.scope import resolve_project


def _write(folder: Path, body: str, *, scope: str, key: str, type: str = "fact", status: str = "active") -> str:
    stamp = now_rfc3339()
    memory = Memory(id=new_ulid(), scope=scope, scope_key=key, body=body, type=type, status=status,
                    created_at=stamp, updated_at=stamp)  # fmt: skip
    folder.mkdir(parents=True, exist_ok=True)
    store.write_atomic(folder / f"{memory.id}.md", memfile.serialize(memory))
    return memory.id


def _oracle(conn: sqlite3.Connection, expression: str, dirs: list[str], type: str | None, n: int) -> list[int]:
    """The pre-issue-11 query: FTS5's ORDER BY rank joined to the rows and filtered inline."""
    weights = ", ".join(str(w) for w in search.WEIGHTS)
    type_clause = " AND m.type = ?" if type else ""
    rows = conn.execute(
        f"SELECT m.rowid FROM memories_fts JOIN memories m ON m.rowid = memories_fts.rowid "
        f"WHERE memories_fts MATCH ? AND memories_fts.rank MATCH 'bm25({weights})' "
        f"AND m.dir IN ({placeholders(dirs)}){type_clause} AND m.status NOT IN ('retracted', 'archived') "
        f"ORDER BY memories_fts.rank, m.rowid LIMIT ?",
        [expression, *dirs, *([type] if type else []), n],
    ).fetchall()
    return [int(r[0]) for r in rows]


@pytest.fixture
def crowded(data_root: Path, git_repo: Path) -> Context:
    """A project with a few weak matches for "zeppelin", drowned by 240 strong personal
    ones (a few of them decisions, some retracted)."""
    project = resolve_project(git_repo)
    outbox = paths.scope_dir(data_root, project.key)
    personal = paths.scope_dir(data_root, "personal")
    for i in range(240):
        status = "retracted" if i % 7 == 0 else "active"
        kind = "decision" if i % 40 == 0 else "fact"
        _write(personal, f"zeppelin zeppelin zeppelin hangar note {i}", scope="personal", key="personal",
               type=kind, status=status)  # fmt: skip
    for i in range(12):
        kind = "decision" if i % 4 == 0 else "fact"
        _write(outbox, f"The build farm in hall {i} is named after a zeppelin, among many other things we "
                       f"name after airships and trains and old ships of the line {i}", scope="project",
               key=project.key, type=kind)  # fmt: skip
    ctx = Context.load(git_repo)
    search.search(ctx, "warm the index", scope="both")
    return ctx


@pytest.mark.parametrize("scope", ["project", "personal", "both"])
@pytest.mark.parametrize("type", [None, "decision"])
def test_ranked_then_filtered_equals_the_filtered_ranking(crowded: Context, scope: str, type: str | None) -> None:
    dirs = [str(f.path) for f in crowded.folders(scope)]
    expression = search._expression("zeppelin hangar")
    got = [int(row["rowid"]) for row, _ in search._fetch(crowded, expression, dirs, type, 34)]
    assert got == _oracle(crowded.conn, expression, dirs, type, 34)
    assert got  # every case finds something


@pytest.mark.parametrize("lengths", [(1, 3), (3, 3), (4, 100), (100, 100), (5000, 5000)])
def test_any_ranked_length_gives_the_exact_answer(crowded: Context, monkeypatch: pytest.MonkeyPatch,
                                                  lengths: tuple[int, int]) -> None:  # fmt: skip
    """The ranked list's length, and how many of its rows are looked up first, are only
    estimates from folder counts: far too short (the scope's rows all ranked below other
    folders'), about right, or past the point where the ranked join is used instead, the
    answer is the exact top."""
    monkeypatch.setattr(search, "_ranked_length", lambda *_args: lengths)
    for scope, type in (("project", None), ("personal", "decision"), ("both", None)):
        dirs = [str(f.path) for f in crowded.folders(scope)]
        expression = search._expression("zeppelin")
        got = [int(row["rowid"]) for row, _ in search._fetch(crowded, expression, dirs, type, 10)]
        assert got == _oracle(crowded.conn, expression, dirs, type, 10)
        assert got


def test_rows_are_looked_up_in_the_snapshot_they_were_ranked_in(crowded: Context,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """Another connection rewrites a ranked memory between the ranking and the lookup: the
    search still shows the version it ranked (one read transaction around both)."""
    first = search.search(crowded, "zeppelin hangar", scope="personal", limit=1).hits[0]
    other = Context.load(crowded.cwd)  # its own connection, as another process would have
    real_visible = search._visible

    def rewrite_then_look_up(*args: object, **kwargs: object) -> object:
        other.conn.execute("UPDATE memory_rows SET body = 'banana bread recipe' WHERE id = ?", (first.id,))
        return real_visible(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(search, "_visible", rewrite_then_look_up)
    try:
        again = search.search(crowded, "zeppelin hangar", scope="personal", limit=1).hits[0]
    finally:
        other.close()
    assert again.id == first.id and "banana" not in again.snippet and "zeppelin" in again.snippet


def test_marks_on_a_connection_that_may_not_write(crowded: Context) -> None:
    expected = [(h.id, h.snippet, h.matched_via) for h in search.search(crowded, "zeppelin", scope="both").hits]
    crowded.conn.execute("PRAGMA query_only = 1")
    try:
        got = [(h.id, h.snippet, h.matched_via) for h in search.search(crowded, "zeppelin", scope="both").hits]
    finally:
        crowded.conn.execute("PRAGMA query_only = 0")
    assert got == expected and all("[zeppelin]" in snippet for _, snippet, _ in got)


def test_only_in_scope_hits_and_their_snippets_are_marked(crowded: Context) -> None:
    result = search.search(crowded, "zeppelin", scope="project", limit=5)
    assert len(result.hits) == 5 and all(h.scope == "project" for h in result.hits)
    assert all("[zeppelin]" in h.snippet for h in result.hits)
    # the scratch table the marks are made in keeps nothing between searches, and the
    # index's connection made none
    assert search._scratch().execute("SELECT count(*) FROM marks").fetchone()[0] == 0
    assert crowded.conn.execute("SELECT count(*) FROM temp.sqlite_schema").fetchone()[0] == 0


def test_marks_inside_an_open_transaction_leave_it_alone(crowded: Context) -> None:
    conn = crowded.conn
    conn.execute("BEGIN")
    conn.execute("INSERT INTO index_info(key, value) VALUES ('test-marker', 'kept')")
    result = search.search(crowded, "zeppelin hangar", scope="both", limit=3)
    assert result.hits and conn.in_transaction
    assert conn.execute("SELECT value FROM index_info WHERE key = 'test-marker'").fetchone()[0] == "kept"
    conn.execute("ROLLBACK")
    assert conn.execute("SELECT count(*) FROM index_info WHERE key = 'test-marker'").fetchone()[0] == 0


def test_an_id_in_the_outbox_and_the_repository_is_answered_with_the_repository_copy(
        cli: object, data_root: Path, git_repo: Path) -> None:  # fmt: skip
    """An interrupted submit leaves both copies; review then moves the repository's on. list
    and show read that one, and so must search — even when the query matched the old text."""
    import json

    added = cli("add", "tokens expire after one hour", "--json")  # type: ignore[operator]
    memory_id = json.loads(added.out)["id"]
    outbox_file = next((data_root / "memories").rglob(f"{memory_id}.md"))
    repo_file = git_repo / ".ai" / "open-memex" / f"{memory_id}.md"
    repo_file.parent.mkdir(parents=True)
    repo_file.write_text(outbox_file.read_text().replace("review_state: draft", "review_state: approved")
                         .replace("after one hour", "after one hour, refresh tokens after 30 days"))  # fmt: skip
    result = cli("search", "tokens expire", "--json")  # type: ignore[operator]
    hits = json.loads(result.out)["hits"]
    assert [h["id"] for h in hits] == [memory_id]
    assert hits[0]["review_state"] == "approved" and "30 days" in hits[0]["snippet"]
    shown = json.loads(cli("show", memory_id, "--json").out)  # type: ignore[operator]
    assert shown["review_state"] == "approved"
    repo_file.write_text(repo_file.read_text().replace("status: active", "status: archived"))
    assert json.loads(cli("search", "tokens expire", "--json").out)["hits"] == []  # type: ignore[operator]
