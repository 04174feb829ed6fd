"""The contentless FTS5 index (schema 12+) can only delete a row with the values it was
inserted with, so only a process deriving them our way may write: a connection without
our SQL functions (a plain sqlite3 shell, an older open-memex) cannot delete rows nor
insert an older layout's values, and a process whose index was rebuilt under it (another
version, other text rules) writes nothing and runs the command again."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from openmemex import freshness, paths
from openmemex.context import Context
from openmemex.errors import IndexReplaced, MemexError
from openmemex.index_schema import SCHEMA_VERSION, register_functions
from openmemex.search import search
from openmemex.write import add_memory


def _foreign(data_root: Path) -> sqlite3.Connection:
    return sqlite3.connect(paths.index_path(data_root), isolation_level=None)


def test_a_connection_without_our_functions_cannot_delete_rows_or_write_an_older_layout(cli: object, data_root: Path) -> None:
    assert cli("add", "second note about wombat burrows").rc == 0  # type: ignore[operator]
    foreign = _foreign(data_root)
    try:
        with pytest.raises(sqlite3.OperationalError, match="memex_spell"):
            foreign.execute("DELETE FROM memory_rows WHERE body LIKE '%wombat%'")
        with pytest.raises(sqlite3.OperationalError, match="memex_spell"):  # REPLACE deletes without the delete trigger
            foreign.execute("INSERT OR REPLACE INTO folders(id, dir) SELECT id, '/elsewhere' FROM folders")
        assert foreign.execute("SELECT count(*) FROM memory_rows").fetchone()[0] == 1  # reads of the rows work
    finally:
        foreign.close()
    ours = _foreign(data_root)
    register_functions(ours)  # even a connection of ours cannot store an older layout's row values
    try:
        for cjk, tokens in (("'中 文 中文'", "x''"), ("0", "'omxg1 omxg2'")):
            with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
                ours.execute(
                    "INSERT INTO memory_rows(id, folder, location, mtime_ns, size, ctime_ns, ino, scope, scope_key, "
                    "visibility, project_name, type, role, importance, status, review_state, source, tags, aliases, "
                    "expansions, body, cjk, content_hash, created_at, updated_at) VALUES ('X', 1, 'personal', "
                    "0, 0, 0, 0, 'personal', 'personal', 'private', '', 'fact', 'user', 'normal', 'active', 'draft', "
                    f"'cli', '', '', {tokens}, '中文 lemurs', {cjk}, 'h', 0, 0)"
                )
    finally:
        ours.close()
    assert cli("add", "brand new note about lemurs").rc == 0  # type: ignore[operator]
    found = cli("search", "wombat", "--json")  # type: ignore[operator]
    assert "lemurs" not in found.out and "wombat" in found.out


@pytest.mark.parametrize("change", ["version", "rules"])
def test_an_index_rebuilt_under_a_connection_is_not_written_to(data_root: Path, change: str) -> None:
    with Context.load() as ctx:
        add_memory(ctx, "first note about quokka habitats")
        foreign = _foreign(data_root)
        try:  # another open-memex rebuilds the index its way while this connection is open
            if change == "version":
                foreign.execute(f"PRAGMA user_version = {SCHEMA_VERSION - 1}")
            else:
                foreign.execute("UPDATE index_info SET value = 'other rules' WHERE key = 'text'")
        finally:
            foreign.close()
        ctx.personal_dir.mkdir(parents=True, exist_ok=True)
        (ctx.personal_dir / "hand.md").write_text("not even a memory")  # a change a reconcile would look at
        with pytest.raises(IndexReplaced):
            freshness.sync(ctx, "both")
    # a fresh connection takes the index as it finds it (here: rebuilds it our way) and answers
    with Context.load() as ctx:
        assert [h.snippet for h in search(ctx, "quokka").hits] == ["first note about [quokka] habitats"]


def test_a_change_already_saved_is_reported_not_repeated(data_root: Path) -> None:
    with pytest.raises(MemexError, match="change was saved"), Context.load() as ctx:
        add_memory(ctx, "first note about quokka habitats")
        foreign = _foreign(data_root)
        try:
            foreign.execute(f"PRAGMA user_version = {SCHEMA_VERSION - 1}")
        finally:
            foreign.close()
        add_memory(ctx, "a second note about wombat burrows")  # its file is written before the index
    with Context.load() as ctx:
        assert len(search(ctx, "note").hits) == 2  # saved once, indexed from the file


def test_a_hash_collision_never_answers_a_new_memory_with_another_ones_id(data_root: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """The 80-bit content hash finds exact duplicates; the text decides. Were two texts to
    share a hash (it can be forced with ~2^40 work), the second is still saved as new."""
    from openmemex import write

    with Context.load() as ctx:
        first = add_memory(ctx, "first note about quokka habitats")
        stored = ctx.conn.execute("SELECT content_hash FROM memories WHERE id = ?", (first.id,)).fetchone()[0]
        monkeypatch.setattr(write, "content_hash", lambda _body: stored)  # every text collides with it
        other = add_memory(ctx, "a different note about wombat burrows")
        assert other.status == "saved" and other.id != first.id
        again = add_memory(ctx, "first  note about quokka habitats")  # the same text (whitespace aside)
        assert again.status == "exists" and again.id == first.id
