"""Lifecycle rules (design §3.3, D64): supersede chains, status changes, forgetting."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from . import index, store
from .context import Context
from .errors import LifecycleError, UsageError
from .ids import now_rfc3339
from .index import Folder
from .lookup import locate
from .memfile import MemoryFileError, read_memory
from .model import STATUSES, Memory


def heal_chains(ctx: Context, folders: list[Folder]) -> int:
    """Make one-sided supersede pointers two-sided (design §3.3). Files in our own data
    root are fixed on disk; in-repo files are fixed in the index only and reported, so a
    read never dirties the user's work tree. Returns how many pointers were healed."""
    conn = ctx.conn
    dirs = [str(f.path) for f in folders]
    marks = ",".join("?" for _ in dirs)
    forward = conn.execute(
        f"SELECT old.id AS old_id, new.file_path AS path, new.location AS location "
        f"FROM memories old JOIN memories new ON new.id = old.superseded_by "
        f"WHERE old.dir IN ({marks}) AND new.dir IN ({marks}) AND new.supersedes IS NULL",
        [*dirs, *dirs],
    ).fetchall()
    backward = conn.execute(
        f"SELECT new.id AS new_id, old.file_path AS path, old.location AS location, old.status AS status "
        f"FROM memories new JOIN memories old ON old.id = new.supersedes "
        f"WHERE new.dir IN ({marks}) AND old.dir IN ({marks}) AND old.superseded_by IS NULL",
        [*dirs, *dirs],
    ).fetchall()
    healed = 0
    for row in forward:
        healed += _heal(ctx, row["path"], row["location"], folders, supersedes=row["old_id"])
    for row in backward:
        healed += _heal(ctx, row["path"], row["location"], folders, superseded_by=row["new_id"])
    return healed


def _heal(
    ctx: Context, path_text: str, location: str, folders: list[Folder],
    supersedes: str | None = None, superseded_by: str | None = None,
) -> int:  # fmt: skip
    path = Path(path_text)
    folder = next(f for f in folders if str(f.path) == str(path.parent))
    what = f"supersedes {supersedes}" if supersedes else f"superseded_by {superseded_by}"
    if location == "repo":
        column, value = ("supersedes", supersedes) if supersedes else ("superseded_by", superseded_by)
        with index.transaction(ctx.conn):
            ctx.conn.execute(f"UPDATE memories SET {column} = ? WHERE file_path = ?", (value, path_text))
            if superseded_by:
                ctx.conn.execute(
                    "UPDATE memories SET status = 'superseded' WHERE file_path = ? AND status = 'active'", (path_text,)
                )
        ctx.warn(f"{path.name}: one-sided supersede chain (missing {what}); fix the file in the repo")
        return 1
    try:
        memory = read_memory(path, folder.scope_key)
    except (MemoryFileError, OSError):
        return 0
    if supersedes:
        memory.supersedes = supersedes
    if superseded_by:
        memory.superseded_by = superseded_by
        if memory.status == "active":
            memory.status = "superseded"
    store.save(memory, folder.path)
    index.upsert(ctx.conn, memory, folder)
    ctx.warn(f"{path.name}: repaired one-sided supersede chain ({what})")
    return 1


@dataclass
class StatusChange:
    memory: Memory
    old: str
    new: str
    in_repo: bool


def set_status(ctx: Context, memory_id: str, status: str) -> StatusChange:
    if status not in STATUSES:
        raise UsageError(f"unknown status {status!r} — use one of: active, deprecated, retracted, archived")
    if status == "superseded":
        raise LifecycleError("status 'superseded' is chain-managed — use `open-memex supersede ID TEXT`")
    memory, folder = locate(ctx, memory_id)
    old = memory.status
    if old == "superseded":
        raise LifecycleError(
            f"{memory.id} is superseded by {memory.superseded_by} (chain-managed); supersede the newest version instead"
        )
    if old == "retracted" and status != "retracted":
        raise LifecycleError(
            f"{memory.id} is retracted, and retraction is one-way (D64): it cannot return to {status}; "
            "save the fact again with `open-memex add` if it is true after all"
        )
    if old != status:
        memory.status = status
        memory.updated_at = now_rfc3339()
        store.save(memory, folder.path)
        index.upsert(ctx.conn, memory, folder)
    return StatusChange(memory, old, status, folder.location == "repo")


@dataclass
class Forgotten:
    id: str
    path: Path
    soft: bool
    in_repo: bool
    already: bool = False


def forget(ctx: Context, memory_id: str, soft: bool = False) -> Forgotten:
    """Hard delete (file first, then the row), or ``soft``: a one-way retraction (D68)."""
    memory, folder = locate(ctx, memory_id)
    assert memory.path is not None
    in_repo = folder.location == "repo"
    if soft:
        already = memory.status == "retracted"
        if not already:
            memory.status = "retracted"
            memory.updated_at = now_rfc3339()
            store.save(memory, folder.path)
            index.upsert(ctx.conn, memory, folder)
        return Forgotten(memory.id, memory.path, True, in_repo, already)
    store.delete(memory.path)
    index.remove_path(ctx.conn, memory.path)
    return Forgotten(memory.id, memory.path, False, in_repo)


def newest_in_chain(conn: sqlite3.Connection, rows_by_id: dict[str, sqlite3.Row], start: sqlite3.Row,
                    dirs: list[str]) -> sqlite3.Row:  # fmt: skip
    """Follow ``superseded_by`` to the newest link (cycle-safe); a dangling pointer stops
    at the last memory that exists, so a broken chain never hides knowledge."""
    current = start
    seen = {start["id"]}
    marks = ",".join("?" for _ in dirs)
    while current["status"] == "superseded" and current["superseded_by"]:
        nxt_id = current["superseded_by"]
        if nxt_id in seen:
            break
        seen.add(nxt_id)
        nxt = rows_by_id.get(nxt_id)
        if nxt is None:
            nxt = conn.execute(
                f"SELECT * FROM memories WHERE id = ? AND dir IN ({marks}) ORDER BY location = 'repo' DESC LIMIT 1",
                [nxt_id, *dirs],
            ).fetchone()
            if nxt is None:
                break
            rows_by_id[nxt_id] = nxt
        current = nxt
    return current
