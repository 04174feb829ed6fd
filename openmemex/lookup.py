"""Finding memories by id in the index (after a reconcile), preferring the in-repo copy."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from . import freshness
from .context import Context
from .errors import NotFoundError, StoreBusyError, UsageError
from .index import Folder, placeholders
from .locks import holder_note, submit_lane
from .memfile import MemoryFileError, MemoryFileGone, read_memory
from .model import PERSONAL_KEY, Memory

LOCATION_RANK = {"repo": 0, "outbox": 1, "personal": 2}  # the copy every command picks first


def rows_for(conn: sqlite3.Connection, memory_id: str, folders: list[Folder]) -> list[sqlite3.Row]:
    dirs = [str(f.path) for f in folders]
    marks = placeholders(dirs)
    needle = memory_id.upper()
    if len(needle) == 26:
        rows = conn.execute(f"SELECT * FROM memories WHERE id = ? AND dir IN ({marks})", [needle, *dirs]).fetchall()
    else:
        rows = conn.execute(
            f"SELECT * FROM memories WHERE id >= ? AND id < ? AND dir IN ({marks})",
            [needle, needle + "\x7f", *dirs],
        ).fetchall()
        if len({r["id"] for r in rows}) > 1:
            raise UsageError(f"id prefix {memory_id!r} matches several memories — give more characters")
    return sorted(rows, key=lambda r: LOCATION_RANK.get(r["location"], 9))


def locate(ctx: Context, memory_id: str, every_copy: bool = False) -> tuple[Memory, Folder]:
    """The memory with this id (or unique prefix of at least 6 chars) in any known scope.
    ``every_copy``: the caller acts on all of them (a forget), so no copy is singled out."""
    text = memory_id.strip()
    if len(text) < 6:
        raise UsageError(f"id {memory_id!r} is too short — give the full id (see `open-memex list`)")
    for scope in ("both", "both", "all"):  # "both" again when a file vanished under us
        folders = ctx.folders(scope)
        freshness.sync(ctx, scope)
        rows = rows_for(ctx.conn, text, folders)
        if rows:
            row = rows[0]
            folder = next(f for f in folders if str(f.path) == row["dir"])
            try:
                memory = read_memory(Path(row["file_path"]), folder.scope_key)
            except MemoryFileGone:
                continue  # forgotten or submitted by another process since the index saw it
            except (MemoryFileError, OSError) as exc:
                raise NotFoundError(f"memory {row['id']} is unreadable ({exc}); see `open-memex doctor`") from None
            others = [r for r in rows[1:] if not (every_copy and _same_memory(row, r))]
            if others:
                _warn_copies(ctx, row, others)
            if (folder.scope_key or "") not in (ctx.project.key, PERSONAL_KEY):
                _warn_other_project(ctx, memory, folder)
            return memory, folder
        broken = quarantined(ctx.conn, text, folders)
        if broken is not None:
            raise NotFoundError(
                f"memory {Path(broken[0]).stem} cannot be read: {broken[1]} ({broken[0]}) — fix the file by hand; "
                "`open-memex doctor` lists every such file"
            )
    raise NotFoundError(f"no memory with id {memory_id!r} — find ids with `open-memex search` or `open-memex list`")


def _same_memory(used: sqlite3.Row, other: sqlite3.Row) -> bool:
    """Two copies one submit moves between (the project's outbox and repository folder),
    which a command acting on ``every_copy`` changes together."""
    pair = ("outbox", "repo")
    return used["location"] in pair and other["location"] in pair and used["scope_key"] == other["scope_key"]


def _warn_copies(ctx: Context, used: sqlite3.Row, others: list[sqlite3.Row]) -> None:
    """The same id in several folders (a copied file, an interrupted submit): say which
    copy this command acts on, every time (issue 6, item 8)."""
    rest = ", ".join(r["file_path"] for r in others)
    said = f"copies:{used['id']}:{used['file_path']}"
    if said in ctx.told:  # a command that looks the id up twice (before and under its lock) says it once
        return
    if _submitting(ctx, str(used["scope_key"] or ""), str(used["id"])) is not None:
        return  # a live submit's copies, not a duplicate: a change is refused with that reason
    ctx.told.add(said)
    ctx.warn(
        f"id {used['id']} exists in {len(others) + 1} places; acting on {used['file_path']} ({used['location']}); "
        f"other copies: {rest} — see `open-memex doctor`"
    )


def _warn_other_project(ctx: Context, memory: Memory, folder: Folder) -> None:
    """An id is found in every project's outbox (``show ID`` and ``forget ID`` take any id
    ``inventory --scope all`` lists), so a command run in one project may read or change
    another's draft: say so, every time, on every surface (a supersede or forget there is
    not seen in this project's lists)."""
    said = f"other-project:{memory.id}:{folder.path}"
    if said in ctx.told:  # looked up twice (before and under the lock): said once
        return
    ctx.told.add(said)
    name = " ".join((memory.project_name or folder.scope_key or "").split())
    ctx.warn(
        f"{memory.id} belongs to another project, {name} ({folder.scope_key}) — not to {ctx.project.name}, "
        f"where this runs; acting on that project's outbox draft {memory.path}"
    )


def quarantined(conn: sqlite3.Connection, memory_id: str, folders: list[Folder]) -> tuple[str, str] | None:
    """A file named for this id that the index could not read, and why."""
    dirs = [str(f.path) for f in folders]
    needle = memory_id.upper()
    for path, reason in conn.execute(
        f"SELECT file_path, reason FROM quarantine WHERE dir IN ({placeholders(dirs)}) ORDER BY file_path",
        dirs,
    ):
        if Path(path).stem.upper().startswith(needle):
            return str(path), str(reason)
    return None


@contextmanager
def locked(ctx: Context, memory_id: str, every_copy: bool = False) -> Iterator[tuple[Memory, Folder]]:
    """The memory, found again under its scope's write lock, so the caller decides on what
    is on disk now (docs/protocol.md, Consistency). If it moved to another scope in between
    (a concurrent ``migrate``), the lookup starts over under that scope's lock."""
    for _ in range(3):
        _, first = locate(ctx, memory_id, every_copy)
        key = first.scope_key or ""
        with ctx.lock(key):
            memory, folder = locate(ctx, memory_id, every_copy)
            if (folder.scope_key or "") == key:
                _refuse_in_flight(ctx, memory, folder)
                yield memory, folder
                return
    raise StoreBusyError(f"memory {memory_id} keeps moving between scopes (a migrate is running?) — retry")


def _refuse_in_flight(ctx: Context, memory: Memory, folder: Folder) -> None:
    """A submit runs the repository's commit hooks without the project's write lock; the
    copies it wrote for the commit (and their outbox drafts) are not to be changed until it
    is done — a forget would answer "deleted" while the draft stays, a promote would edit a
    file the hooks already checked. The submit names them in its lane's lock; one that died
    holds no lock, and its leftovers are anyone's (the next submit commits them)."""
    if folder.location == "personal" or not folder.scope_key:
        return
    said = _submitting(ctx, folder.scope_key, memory.id)
    if said is not None:
        raise StoreBusyError(
            f"{memory.id} is being submitted by another open-memex (pid {said.get('pid')}) while the repository's "
            "commit hooks run — nothing was changed; retry once the submit is done"
        )


def _submitting(ctx: Context, key: str, memory_id: str) -> dict[str, object] | None:
    """What a live submit of project ``key`` announced, when ``memory_id`` is in flight in it."""
    if not key or key == PERSONAL_KEY:
        return None
    said = holder_note(ctx.root, submit_lane(key))
    in_flight = said.get("ids") if said else None
    return said if isinstance(in_flight, list) and memory_id in in_flight else None
