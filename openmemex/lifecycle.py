"""Lifecycle rules (design §3.3, D64): supersede chains, status changes, forgetting.

Chain rules, the same for every command (docs/protocol.md, Consistency):
- pointers are two-way; a one-sided pointer is healed on read, under the scope's write
  lock and only after re-reading both files, so a supersede in flight is never "repaired";
- a member whose successor no file anywhere holds (deleted by hand) is the head of what
  is left: ``list`` and ``search`` show it, ``supersede`` and ``status`` act on it,
  ``doctor`` reports the dangling pointer; a successor that only lives outside the
  folders in view keeps it superseded (``stranded_sql``);
- forgetting a member — hard or ``--soft`` — takes it out of the chain: forgetting the
  head makes the previous member the head again, a middle member is unlinked and the
  chain closed around it, the oldest member simply goes; a failed write puts back every
  file already changed;
- a memory naming itself, or a loop (A supersedes B, B supersedes A), is a broken file:
  no read acts on it (``freshness.loop_refusal``), ``doctor`` and ``audit`` report it, and
  ``supersede`` and ``forget`` refuse a member of a loop (closing a chain around it
  rewrote, then retracted, the other members); a self pointer is no neighbour, so
  ``forget`` of that memory acts on it alone.
"""

from __future__ import annotations

import copy
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from . import freshness, store
from .context import Context
from .errors import LifecycleError, MemexError, UsageError
from .ids import now_rfc3339
from .index import Folder, placeholders
from .lookup import locked, quarantined, rows_for
from .memfile import MemoryFileError, MemoryFileGone, read_memory
from .model import STATUSES, Memory


def key_folders(ctx: Context, key: str) -> list[Folder]:
    """Every folder whose files belong to ``key`` (a project's outbox and repo dir)."""
    if key == ctx.project.key:
        return ctx.folders("project")
    return [ctx.folder_for_key(key)]


def stranded_sql(alias: str) -> str:
    """SQL true for a superseded row whose successor no file anywhere holds — not in any
    folder the index has seen, not even as an unreadable (quarantined) file. Only then is
    it the head of what is left. A successor that merely lives outside the folders being
    searched (the repo dir, seen from outside the repo) keeps it superseded: acting on it
    there would fork the chain (docs/protocol.md, Consistency)."""
    return (
        f"({alias}.status = 'superseded' AND ({alias}.superseded_by IS NULL OR ("
        f"NOT EXISTS (SELECT 1 FROM memories s WHERE s.id = {alias}.superseded_by) AND "
        f"NOT EXISTS (SELECT 1 FROM quarantine q WHERE q.file_path LIKE '%' || {alias}.superseded_by || '.md'))))"
    )


def successor_missing(conn: sqlite3.Connection, memory: Memory) -> bool:
    """``stranded_sql`` for one memory read from its file (the one rule every command uses)."""
    return memory.status == "superseded" and replacement_missing(conn, memory.superseded_by)


def replacement_missing(conn: sqlite3.Connection, superseded_by: str | None) -> bool:
    row = conn.execute(
        f"SELECT {stranded_sql('m')} FROM (SELECT 'superseded' AS status, ? AS superseded_by) m", (superseded_by,)
    ).fetchone()
    return bool(row[0])


@dataclass
class StatusChange:
    memory: Memory
    old: str
    new: str
    in_repo: bool

    def to_json(self) -> dict[str, object]:
        return {"id": self.memory.id, "old": self.old, "new": self.new, "changed": self.old != self.new,
                "in_repo": self.in_repo, "path": str(self.memory.path)}  # fmt: skip


def refuse_broken_chain(ctx: Context, memory: Memory, doing: str, self_pointer_ok: bool = False) -> None:
    """Refuse a chain change (``doing``: "superseded", "forgotten") on a member of a loop:
    which member is newest is not known, and relinking around it rewrote the others into
    self pointers the next read took for an interrupted forget. A memory naming itself is
    refused too unless the caller drops that pointer anyway (``self_pointer_ok``)."""
    for pointer in ("supersedes", "superseded_by"):
        if getattr(memory, pointer) == memory.id and not self_pointer_ok:
            raise LifecycleError(f"{memory.id} names itself in {pointer} (a broken file) — nothing was {doing}; "
                                 f"{freshness.refusal_fix(pointer, memory.id, str(memory.path))}, then retry")  # fmt: skip
    dirs = [str(f.path) for f in key_folders(ctx, memory.scope_key)]
    loop = freshness.chain_loop(ctx.conn, dirs, memory.id)
    if loop is not None:
        raise LifecycleError(
            f"{memory.id} is in a supersede loop ({' → '.join([*loop, memory.id])}), so which member is newest is not "
            f"known — nothing was {doing}; break the loop in the files first (`open-memex audit` names them), then retry"
        )


def set_status(ctx: Context, memory_id: str, status: str) -> StatusChange:
    if status not in STATUSES:
        raise UsageError(f"unknown status {status!r} — use one of: active, deprecated, retracted, archived")
    if status == "superseded":
        raise LifecycleError("status 'superseded' is chain-managed — use `open-memex supersede ID TEXT`")
    with locked(ctx, memory_id) as (memory, folder):
        old = memory.status
        if old == "superseded" and not successor_missing(ctx.conn, memory):
            raise LifecycleError(
                f"{memory.id} is superseded by {memory.superseded_by} (chain-managed); supersede the newest version instead"
            )
        if old == "retracted" and status != "retracted":
            raise LifecycleError(
                f"{memory.id} is retracted, and retraction is one-way (D64): it cannot return to {status}; "
                "save the fact again with `open-memex add` if it is true after all"
            )
        if old != status:
            if old == "superseded":
                memory.superseded_by = None  # its successor is gone: this is the head now
            memory.status = status
            memory.updated_at = now_rfc3339()
            store.save(memory, folder.path)
            freshness.record(ctx, [(memory, folder)])
    return StatusChange(memory, old, status, folder.location == "repo")


@dataclass
class Forgotten:
    id: str
    path: Path
    soft: bool
    in_repo: bool
    already: bool = False
    relinked: list[str] = field(default_factory=list)  # neighbours whose chain pointers changed
    copies: list[Path] = field(default_factory=list)  # the same id's other files, deleted with it

    def to_json(self) -> dict[str, object]:
        return {"id": self.id, "path": str(self.path), "soft": self.soft, "already": self.already,
                "in_repo": self.in_repo, "relinked": self.relinked, "copies": [str(p) for p in self.copies]}  # fmt: skip


def forget(ctx: Context, memory_id: str, soft: bool = False) -> Forgotten:
    """Hard delete (file first, then the row), or ``soft``: a one-way retraction (D68).
    Either way the memory leaves its supersede chain (module docstring). Several files
    change; if one of them cannot be written, the ones already changed are put back."""
    with locked(ctx, memory_id, every_copy=True) as (memory, folder):
        assert memory.path is not None
        in_repo = folder.location == "repo" and _tracked(memory.path)  # git has it: the change is to commit
        refuse_broken_chain(ctx, memory, "forgotten", self_pointer_ok=True)
        prev, nxt = _neighbours(ctx, memory)
        if soft and memory.status == "retracted" and not (memory.supersedes or memory.superseded_by):
            return Forgotten(memory.id, memory.path, True, in_repo, already=True)
        journal: list[tuple[Memory, Folder]] = []  # originals of every file changed so far
        try:
            if soft:
                relinked = _close_chain(ctx, prev, nxt, journal)
                copies = _other_copies(ctx, memory, folder)
                stamp = now_rfc3339()
                for each, where in [(memory, folder), *copies]:  # every copy: retraction is one-way for the memory
                    original = copy.deepcopy(each)
                    each.status, each.supersedes, each.superseded_by, each.updated_at = "retracted", None, None, stamp
                    store.save(each, where.path)
                    journal.append((original, where))
                freshness.record(ctx, [(memory, folder), *copies])
                changed = [other.path for other, _ in copies if other.path is not None]
                return Forgotten(memory.id, memory.path, True, in_repo, relinked=relinked, copies=changed)
            # Neighbours first, then the member: killed in between, the next read either
            # undoes the relink (head, tail: the member still points at them) or finishes
            # the forget (middle: its neighbours already point past it) — never a dangling
            # pointer or a second head.
            relinked = _close_chain(ctx, prev, nxt, journal)
            copies = _other_copies(ctx, memory, folder)
            _delete(ctx, memory, folder, journal)
            for other, where in copies:
                _delete(ctx, other, where, journal)
        except MemexError:
            _roll_back(ctx, journal)
            raise
        gone = [other.path for other, _ in copies if other.path is not None]
        return Forgotten(memory.id, memory.path, False, in_repo, relinked=relinked, copies=gone)


SUBMIT_PAIR = ("outbox", "repo")  # the two folders one submit moves a project memory between


def _other_copies(ctx: Context, memory: Memory, folder: Folder) -> list[tuple[Memory, Folder]]:
    """The same id in the scope's other folders: the outbox draft beside the repository copy
    a submit wrote (killed before its commit, or after it and before removing the draft). A
    hard forget deletes them too — left behind, the next submit would commit the draft again."""
    found: list[tuple[Memory, Folder]] = []
    if folder.location not in SUBMIT_PAIR or not folder.scope_key:
        return found  # a copy in another scope is another memory's file (doctor reports it)
    for where in key_folders(ctx, folder.scope_key):
        if where.path == folder.path or where.location not in SUBMIT_PAIR:
            continue
        for row in rows_for(ctx.conn, memory.id, [where]):
            path = Path(row["file_path"])
            try:
                found.append((read_memory(path, where.scope_key), where))
            except MemoryFileGone:
                continue
            except (MemoryFileError, OSError) as exc:
                raise _unreadable_copy(memory.id, path, str(exc)) from None
        broken = quarantined(ctx.conn, memory.id, [where])
        if broken is not None:
            raise _unreadable_copy(memory.id, Path(broken[0]), broken[1])
    return found + _copies_out_of_view(ctx, memory, folder)


def _copies_out_of_view(ctx: Context, memory: Memory, folder: Folder) -> list[tuple[Memory, Folder]]:
    """The project's repository copies this command cannot see (run outside the repository,
    from a linked worktree, or through an MCP server started elsewhere) that the index knows
    of. One git does not track is an interrupted submit's, and goes with the memory — left
    behind, the next submit in that checkout would commit it. A tracked one is that
    checkout's history: it is named, not deleted from here."""
    in_view = {str(f.path) for f in key_folders(ctx, folder.scope_key or "")}
    rows = ctx.conn.execute(
        "SELECT file_path, dir FROM memories WHERE id = ? AND scope_key = ? AND location = 'repo' ORDER BY file_path",
        (memory.id, folder.scope_key),
    ).fetchall()
    found: list[tuple[Memory, Folder]] = []
    for row in rows:
        path = Path(row["file_path"])
        if row["dir"] in in_view or path == memory.path or not path.is_file():
            continue
        if _tracked(path):
            ctx.warn(f"{memory.id} is also committed at {path} — run `open-memex forget {memory.id}` in that "
                     "checkout to take it out of the repository there")  # fmt: skip
            continue
        try:
            found.append((read_memory(path, folder.scope_key), Folder(Path(row["dir"]), "repo", folder.scope_key)))
        except MemoryFileGone:
            continue
        except (MemoryFileError, OSError) as exc:
            raise _unreadable_copy(memory.id, path, str(exc)) from None
    return found


def _tracked(path: Path) -> bool:
    """Whether the git repository around ``path`` tracks it (in HEAD or its index)."""
    import pygit2

    try:
        found = pygit2.discover_repository(str(path.parent))
        if found is None:
            return False
        repo = pygit2.Repository(found)
        if repo.workdir is None:
            return False
        rel = path.resolve().relative_to(Path(repo.workdir).resolve()).as_posix()
        if rel in repo.index:
            return True
        return not repo.head_is_unborn and rel in repo.head.peel(pygit2.Commit).tree
    except (pygit2.GitError, KeyError, ValueError, OSError):
        return True  # cannot tell: never delete it from here


def _unreadable_copy(memory_id: str, path: Path, why: str) -> MemexError:
    return MemexError(f"{memory_id} also has a copy at {path} that cannot be read ({why}) — nothing was deleted; "
                      "fix or remove that file, then retry")  # fmt: skip


def _delete(ctx: Context, memory: Memory, folder: Folder, journal: list[tuple[Memory, Folder]]) -> None:
    assert memory.path is not None
    store.delete(memory.path)
    journal.append((copy.deepcopy(memory), folder))
    freshness.record(ctx, [], [memory.path])


def _roll_back(ctx: Context, journal: list[tuple[Memory, Folder]]) -> None:
    """Write back every file a failed multi-file change had already changed or deleted."""
    restored: list[tuple[Memory, Folder]] = []
    for original, folder in reversed(journal):
        try:
            store.save(original, folder.path)
            restored.append((original, folder))
        except MemexError as exc:
            ctx.warn(f"could not restore {original.id} ({exc}); `open-memex doctor` shows what is left")
    if restored:
        freshness.record(ctx, restored)


Neighbour = tuple[Memory, Folder]


def _neighbours(ctx: Context, memory: Memory) -> tuple[Neighbour | None, Neighbour | None]:
    """The members right before and after ``memory``, when they point back at it (a
    pointer to itself names no neighbour)."""
    folders = key_folders(ctx, memory.scope_key)

    def load(memory_id: str | None) -> Neighbour | None:
        if not memory_id or memory_id == memory.id:
            return None
        for row in rows_for(ctx.conn, memory_id, folders):
            folder = next(f for f in folders if str(f.path) == row["dir"])
            try:
                return read_memory(Path(row["file_path"]), folder.scope_key), folder
            except (MemoryFileError, OSError):
                continue
        return None

    prev = load(memory.supersedes)
    nxt = load(memory.superseded_by)
    if prev is not None and prev[0].superseded_by != memory.id:
        prev = None
    if nxt is not None and nxt[0].supersedes != memory.id:
        nxt = None
    return prev, nxt


def _close_chain(ctx: Context, prev: Neighbour | None, nxt: Neighbour | None,
                 journal: list[tuple[Memory, Folder]]) -> list[str]:  # fmt: skip
    """Point ``prev`` and ``nxt`` at each other (or make ``prev`` the head again); the
    originals of the files it rewrites go to ``journal``, one by one, as they land."""
    stamp = now_rfc3339()
    changed: list[tuple[Memory, Folder]] = []
    if prev is not None:
        before, folder = prev
        original = copy.deepcopy(before)
        before.superseded_by = nxt[0].id if nxt is not None else None
        if nxt is None and before.status == "superseded":
            before.status = "active"
        before.updated_at = stamp
        changed.append((before, folder))
        store.save(before, folder.path)
        journal.append((original, folder))
    if nxt is not None:
        after, folder = nxt
        original = copy.deepcopy(after)
        after.supersedes = prev[0].id if prev is not None else None
        after.updated_at = stamp
        changed.append((after, folder))
        store.save(after, folder.path)
        journal.append((original, folder))
    if changed:
        freshness.record(ctx, changed)
    return [m.id for m, _ in changed]


R = TypeVar("R", bound="RowLike")


class RowLike(Protocol):
    """A memory row read by name: the ``memories`` view's sqlite3.Row, or search's lean dict."""

    def __getitem__(self, key: str, /) -> Any: ...


def newest_in_chain(conn: sqlite3.Connection, rows_by_id: dict[str, R | sqlite3.Row], start: R,
                    dirs: list[str]) -> R | sqlite3.Row:  # fmt: skip
    """Follow ``superseded_by`` to the newest link (cycle-safe); a dangling pointer stops
    at the last memory that exists, so a broken chain never hides knowledge."""
    current: R | sqlite3.Row = start
    seen = {start["id"]}
    marks = placeholders(dirs)
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
