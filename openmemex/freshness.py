"""Making the index fresh before a read (D1, D57): reconcile the folders of a scope with
their files, then heal one-sided supersede chains. Every read path calls ``sync`` first;
``Context`` stays a value that says where things live (STYLE: freshness is not hidden in it).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from . import index, store
from .context import Context
from .errors import MemexError, StoreBusyError
from .index import Folder, SyncStats
from .locks import scope_lock
from .memfile import MemoryFileError, read_memory


def sync(ctx: Context, scope: str = "both", kind: str = "request") -> SyncStats:
    """Reconcile the index with the files of ``scope`` and heal supersede chains. A
    damaged index is rebuilt here, once, and the read goes on (the index is a cache)."""
    return sync_folders(ctx, ctx.folders(scope), kind)


def sync_folders(ctx: Context, folders: list[Folder], kind: str = "request") -> SyncStats:
    """``sync`` for explicit folders (after a command moved files between scopes)."""
    for attempt in (0, 1):
        try:
            stats = index.reconcile(ctx.conn, folders, kind=kind, warn=ctx.warn, progress=ctx.progress)
            heal_chains(ctx, folders)
            return stats
        except sqlite3.DatabaseError as exc:
            if attempt or not index.is_corrupt(exc):
                raise
            ctx.recover_index()
    raise AssertionError("unreachable")


def _marks(items: list[str]) -> str:
    return ",".join("?" for _ in items)


def heal_chains(ctx: Context, folders: list[Folder]) -> int:
    """Make one-sided supersede pointers two-sided (design §3.3). Files in our own data
    root are fixed on disk; in-repo files are fixed in the index only and reported, so a
    read never dirties the user's work tree. Runs on every read — two queries over the
    partial indexes of chain members only, so its cost follows the number of superseded
    memories, not the store — and a repair that failed once is tried again. Returns how
    many pointers were healed."""
    conn = ctx.conn
    dirs = [str(f.path) for f in folders]
    marks = _marks(dirs)
    forward = conn.execute(
        f"SELECT old.id AS old_id, old.file_path AS old_path, new.file_path AS path, new.location AS location "
        f"FROM memories old INDEXED BY memories_superseded_by CROSS JOIN memories new ON new.id = old.superseded_by "
        f"WHERE old.superseded_by IS NOT NULL AND old.dir IN ({marks}) AND new.dir IN ({marks}) "
        f"AND new.supersedes IS NULL",
        [*dirs, *dirs],
    ).fetchall()
    backward = conn.execute(
        f"SELECT new.id AS new_id, new.file_path AS new_path, old.file_path AS path, old.location AS location "
        f"FROM memories new INDEXED BY memories_supersedes CROSS JOIN memories old ON old.id = new.supersedes "
        f"WHERE new.supersedes IS NOT NULL AND new.dir IN ({marks}) AND old.dir IN ({marks}) "
        f"AND old.superseded_by IS NULL",
        [*dirs, *dirs],
    ).fetchall()
    healed = 0
    for row in forward:
        healed += _heal(ctx, row["path"], row["location"], folders, row["old_path"], supersedes=row["old_id"])
    for row in backward:
        healed += _heal(ctx, row["path"], row["location"], folders, row["new_path"], superseded_by=row["new_id"])
    return healed


def _heal(
    ctx: Context, path_text: str, location: str, folders: list[Folder], partner_path: str,
    supersedes: str | None = None, superseded_by: str | None = None,
) -> int:  # fmt: skip
    path = Path(path_text)
    folder = next((f for f in folders if str(f.path) == str(path.parent)), None)
    if folder is None:
        return 0
    what = f"supersedes {supersedes}" if supersedes else f"superseded_by {superseded_by}"
    try:
        # Never wait: a writer holding this lock is mid-supersede (or mid-forget) and
        # finishes the chain itself; if it died, the kernel freed the lock and the next
        # read heals. Waiting here could also invert lock order between two scopes.
        with scope_lock(ctx.root, [folder.scope_key or ""], wait_s=0):
            memory = read_memory(path, folder.scope_key)
            partner = read_memory(Path(partner_path))
            if supersedes:
                if memory.supersedes is not None or partner.superseded_by != memory.id:
                    return 0  # changed since the index saw it: the next reconcile re-reads it
            elif memory.superseded_by is not None or partner.supersedes != memory.id:
                return 0
            if location == "repo":
                return _heal_repo_row(ctx, path, supersedes, superseded_by, what)
            if supersedes:
                memory.supersedes = supersedes
            if superseded_by:
                memory.superseded_by = superseded_by
                if memory.status == "active":
                    memory.status = "superseded"
            store.save(memory, folder.path)
            ctx.record([(memory, folder)])
    except StoreBusyError:
        return 0
    except (MemoryFileError, OSError):
        return 0  # unreadable or gone: reconcile reports it
    except MemexError as exc:
        ctx.warn(f"{path.name}: one-sided supersede chain (missing {what}) could not be repaired: {exc}")
        return 0
    ctx.warn(f"{path.name}: repaired one-sided supersede chain ({what})")
    return 1


def _heal_repo_row(ctx: Context, path: Path, supersedes: str | None, superseded_by: str | None, what: str) -> int:
    from .index import transaction

    column, value = ("supersedes", supersedes) if supersedes else ("superseded_by", superseded_by)
    with transaction(ctx.conn):
        ctx.conn.execute(f"UPDATE memories SET {column} = ? WHERE file_path = ?", (value, str(path)))
        if superseded_by:
            ctx.conn.execute(
                "UPDATE memories SET status = 'superseded' WHERE file_path = ? AND status = 'active'", (str(path),)
            )
    ctx.warn(f"{path.name}: one-sided supersede chain (missing {what}); fix the file in the repo")
    return 1
