"""Making the index fresh before a read (D1, D57): reconcile the folders of a scope with
their files, then heal one-sided supersede chains. Every read path calls ``sync`` first;
``Context`` stays a value that says where things live (STYLE: freshness is not hidden in it).
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import stat
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from . import index, store
from .context import Context
from .errors import IndexDamaged, MemexError, StoreBusyError
from .fingerprint import MASK, SIG_COLUMNS, Sig, entry_hash, folder_checksum, stat_sig
from .index import Folder, SyncStats, Warn, placeholders, warn_stderr
from .index_schema import ROW_KEY, path_sql, spelled
from .locks import scope_lock
from .memfile import MemoryFileError, read_memory
from .model import PERSONAL_KEY, Memory
from .text import undecodable_at

PROGRESS_THRESHOLD = 500  # files to (re)read before a progress bar is worth showing
NAMED_ROWS = 500  # up to this many changed files, only their rows are read
CHUNK_ROWS = 2000  # rows committed at a time by a large reconcile


def sync(ctx: Context, scope: str = "both", kind: str = "request") -> SyncStats:
    """Reconcile the index with the files of ``scope`` and heal supersede chains. A
    damaged index is rebuilt here, once, and the read goes on (the index is a cache)."""
    return sync_folders(ctx, ctx.folders(scope), kind)


def sync_folders(ctx: Context, folders: list[Folder], kind: str = "request") -> SyncStats:
    """``sync`` for explicit folders (after a command moved files between scopes)."""
    for attempt in (0, 1):
        try:
            if ctx.watch is not None and kind == "request":
                stats = ctx.watch.reconcile(ctx, folders)
            else:
                stats = reconcile(ctx.conn, folders, kind=kind, warn=ctx.warn, progress=ctx.progress)
            heal_chains(ctx, folders)
            return stats
        except sqlite3.DatabaseError as exc:
            if attempt or not index.is_corrupt(exc):
                raise
            ctx.recover_index()
    raise AssertionError("unreachable")


def _scan(folder: Path, only: set[str] | None = None) -> tuple[dict[str, Sig], dict[str, str], tuple[int, int]]:
    """Regular ``*.md`` files by stat; symlinks and other oddities go to ``odd``. With
    ``only`` (file paths a watcher reported), just those are looked at. Also the folder's
    checksum (``fingerprint.folder_checksum``) from the same stats, for a folder scanned
    in full: a first build needs no separate pass to take it."""
    found: dict[str, Sig] = {}
    odd: dict[str, str] = {}
    if only is not None:
        for path_text in only:
            _classify(path_text, os.path.basename(path_text), None, found, odd)
        return found, odd, (0, 0)
    try:
        entries = os.scandir(folder)
    except (FileNotFoundError, NotADirectoryError):
        return found, odd, (0, 0)
    total = count = 0
    with entries:
        for entry in entries:
            st = _classify(entry.path, entry.name, entry, found, odd)
            if st is not None:
                total += entry_hash(entry.name, stat_sig(st), st.st_mode)
                count += 1
    return found, odd, (total & MASK, count)


def _classify(path_text: str, name: str, entry: os.DirEntry[str] | None,
              found: dict[str, Sig], odd: dict[str, str]) -> os.stat_result | None:  # fmt: skip
    """Sorts one entry; returns its lstat when it is one the folder's checksum counts."""
    if not name.endswith(".md") or name.startswith("."):
        return None
    try:
        st = entry.stat(follow_symlinks=False) if entry is not None else os.lstat(path_text)
    except OSError:
        st = None
    if undecodable_at(name) is not None:  # git allows any bytes in a name; SQLite text does not
        shown = path_text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        odd[shown] = "the file name is not valid UTF-8 — rename it (memory files are named <id>.md)"
        return st
    if st is None:
        return None
    if stat.S_ISLNK(st.st_mode):
        odd[path_text] = "symlink not followed (memory files must be regular files)"
    elif not stat.S_ISREG(st.st_mode):
        odd[path_text] = "not a regular file"
    else:
        found[path_text] = stat_sig(st)
    return st


def reconcile(
    conn: sqlite3.Connection,
    folders: Iterable[Folder],
    kind: str = "request",
    warn: Warn = warn_stderr,
    progress: Callable[[int, int], None] | None = None,
) -> SyncStats:
    """Bring the index in line with the files of ``folders``; cheap when nothing changed."""
    total = SyncStats()
    for folder in folders:
        total.merge(_reconcile_folder(conn, folder, kind, warn, progress))
    return total


def reconcile_names(conn: sqlite3.Connection, folder: Folder, only: set[str], warn: Warn = warn_stderr,
                    progress: Callable[[int, int], None] | None = None) -> SyncStats:  # fmt: skip
    """Re-check just the files ``only`` names (paths in ``folder``) — what a watcher saw
    change; the rest of the folder is known to be as indexed. The folder's stored
    fingerprint is left as it was: a process without a watcher sees it differ and compares
    rows, as after any change."""
    return _reconcile_folder(conn, folder, "request", warn, progress, only)


_told_unreadable: set[str] = set()  # folders already reported by this process (a server: once, not per call)


def _unreadable(folder: Folder, exc: OSError, warn: Warn, stats: SyncStats) -> SyncStats:
    """A folder this process may not list (another user's, a chmod): its rows stay as last
    indexed — a permission problem is no reason to forget memories — and it is said once."""
    if str(folder.path) not in _told_unreadable:
        _told_unreadable.add(str(folder.path))
        warn(f"cannot read {folder.path} ({exc.strerror}) — its memories stay as last indexed; "
             "make the folder readable (chmod u+rx) to bring them up to date")  # fmt: skip
    return stats


def _reconcile_folder(
    conn: sqlite3.Connection, folder: Folder, kind: str, warn: Warn, progress: Callable[[int, int], None] | None,
    only: set[str] | None = None,
) -> SyncStats:  # fmt: skip
    stats = SyncStats()
    key = str(folder.path)
    seen = (0, 0)
    first = False  # no fingerprint yet (a new index, a rebuild): the scan's stats make it
    if only is None:
        stored = index.stored_fingerprint(conn, key)
        first = stored is None
        if not first:
            try:
                seen = folder_checksum(folder.path)
            except PermissionError as exc:
                return _unreadable(folder, exc, warn, stats)
            if stored == seen:
                stats.scanned = seen[1]
                if kind != "request":
                    _log_sync(conn, key, kind, stats)
                return stats
    # Rows first, then the scan: a file another process writes and indexes in between is
    # then "new" (re-read, harmless), never "gone" (its row deleted).
    plain = conn.cursor()
    plain.row_factory = None  # plain tuples: this runs on every read
    pick, held_pick, named, ids = "", "", [], []
    if only is not None and len(only) <= NAMED_ROWS:  # a watcher's few files: just their rows
        named = sorted(only)
        ids = [index.path_key(p)[0] for p in named]
        pick = f" AND id IN ({placeholders(ids)})"
        held_pick = f" AND file_path IN ({placeholders(named)})"
    known = {r[0]: r[1:] for r in plain.execute(f"SELECT file_path, {SIG_COLUMNS} FROM memories WHERE dir = ?{pick}", (key, *ids))}
    held = {r[0]: r[1:] for r in plain.execute(f"SELECT file_path, {SIG_COLUMNS} FROM quarantine WHERE dir = ?{held_pick}", (key, *named))}
    plain.close()
    if only is not None:
        known = {p: sig for p, sig in known.items() if p in only}
        held = {p: sig for p, sig in held.items() if p in only}
    try:
        on_disk, odd, scanned = _scan(folder.path) if only is None else _scan(folder.path, only)
    except PermissionError as exc:
        return _unreadable(folder, exc, warn, stats)
    if first:
        seen = scanned
    stats.scanned = len(on_disk)
    # in name order: rowids (which break bm25 ties) then follow the ids, on any file system
    changed = sorted(p for p, sig in on_disk.items() if known.get(p) != sig and held.get(p) != sig)
    removed = [p for p in known if p not in on_disk]
    new_odd = {p: reason for p, reason in odd.items() if p not in held}
    released = [p for p in held if p not in on_disk and p not in odd]
    if not (changed or removed or new_odd or released):
        if only is not None:
            return stats
        with index.transaction(conn):
            index.store_fingerprint(conn, key, seen)
            if kind != "request":  # explicit syncs (cli, submit, pull) are recorded even when idle (D31)
                index.write_sync_row(conn, key, kind, stats, time.time())
        return stats
    rows: list[tuple[object, ...]] = []
    bad: list[tuple[str, Sig, str]] = []
    show = progress if progress is not None and len(changed) >= PROGRESS_THRESHOLD else None
    for i, path_text in enumerate(changed):
        if show is not None:
            show(i + 1, len(changed))
        sig = on_disk[path_text]
        try:
            memory = read_memory(path_text, folder.scope_key, keep_raw=False)
        except FileNotFoundError:
            # deleted since the scan (a concurrent forget or submit): not a broken file;
            # its row goes now, and the stored fingerprint differs so the next read re-scans
            stats.scanned -= 1
            if path_text in known:
                removed.append(path_text)
            continue
        except MemoryFileError as exc:
            bad.append((path_text, sig, str(exc)))
            continue
        except OSError as exc:
            bad.append((path_text, sig, f"cannot read: {exc.strerror}"))
            continue
        except Exception as exc:  # never let one file take the whole store down
            bad.append((path_text, sig, f"unreadable ({type(exc).__name__}: {exc})"))
            continue
        if path_text in known:
            stats.updated += 1
        else:
            stats.added += 1
        rows.append(index.row_values(memory, folder, sig))
        if len(rows) >= CHUNK_ROWS:
            # committed as it goes: a first read of a large store that gets killed (a hook's
            # timeout) keeps its progress, and the next run re-reads only the rest
            _store_rows(conn, rows)
            rows = []
    for path_text, reason in new_odd.items():
        bad.append((path_text, (0, 0, 0, 0), reason))
    stats.removed = len(removed)
    now = time.time()
    with index.transaction(conn):
        _store_rows(conn, rows)
        index.delete_rows(conn, [index.path_key(p) for p in removed])
        conn.executemany("DELETE FROM quarantine WHERE file_path = ?", [(p,) for p in released])
        index.delete_rows(conn, [index.path_key(p) for p, _, _ in bad])
        for path_text, sig, reason in bad:
            conn.execute(
                "INSERT INTO quarantine(file_path, dir, mtime_ns, size, ctime_ns, ino, reason, seen_at) "
                "VALUES (?,?,?,?,?,?,?,?) "
                "ON CONFLICT(file_path) DO UPDATE SET mtime_ns=excluded.mtime_ns, size=excluded.size, "
                "ctime_ns=excluded.ctime_ns, ino=excluded.ino, reason=excluded.reason, seen_at=excluded.seen_at",
                (path_text, key, *sig, reason, now),
            )
        if stats.changed or bad or kind != "request":
            index.write_sync_row(conn, key, kind, stats, now)
        if only is None:
            index.store_fingerprint(conn, key, seen)
    if stats.added + stats.updated + len(removed) > 1000 and not conn.in_transaction:
        _checkpoint(conn)
    for path_text, _, reason in bad:
        stats.quarantined.append((Path(path_text), reason))
        warn(f"skipped {path_text}: {reason}")
    return stats


def _store_rows(conn: sqlite3.Connection, rows: list[tuple[object, ...]]) -> None:
    """Upsert read files' rows; a file that reads again is no longer quarantined."""
    with index.transaction(conn):
        index.write_rows(conn, rows)
        if conn.execute("SELECT 1 FROM quarantine LIMIT 1").fetchone():  # a rebuild's is empty: no 10k deletes
            conn.executemany("DELETE FROM quarantine WHERE file_path = ?", [(index.row_path(r),) for r in rows])


def _log_sync(conn: sqlite3.Connection, key: str, kind: str, stats: SyncStats) -> None:
    with index.transaction(conn):
        index.write_sync_row(conn, key, kind, stats, time.time())


def rebuild(
    conn: sqlite3.Connection, folders: Iterable[Folder], warn: Warn = warn_stderr,
    progress: Callable[[int, int], None] | None = None,
) -> SyncStats:  # fmt: skip
    """Drop every row and re-read every file (``reindex``), in ONE transaction: until it
    commits, other processes keep reading the old, complete index — never an empty one
    that would make a search miss, or a writer's duplicate check save the same text twice
    (issue 6). Writers wait for it (busy timeout) and are told to retry if it runs long."""
    folder_list = list(folders)
    with index.transaction(conn):
        # drop and recreate (far faster than per-row FTS deletes); the secondary indexes are
        # made from the finished rows: sorted once, their pages full
        index.create_schema(conn, force=True, indexes=False)
        index.fts_automerge(conn, 0)  # merged once the build is done, by its last flush
        stats = reconcile(conn, folder_list, kind="cli", warn=warn, progress=progress)
        index.fts_automerge(conn, index.FTS_AUTOMERGE)  # in the same transaction: never left off
        index.create_indexes(conn)
    _checkpoint(conn)
    return stats


def _checkpoint(conn: sqlite3.Connection) -> None:
    with contextlib.suppress(sqlite3.OperationalError):  # busy: another writer; trimmed later
        index.trim(conn)
    with contextlib.suppress(sqlite3.OperationalError):  # a reader holds the WAL: trimmed later
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def record(ctx: Context, written: list[tuple[Memory, Folder]], removed: list[Path] | None = None) -> None:
    """Tell the index about files just written or deleted. The files are the truth and have
    already landed, so this never fails the command: a damaged index is rebuilt from them
    (never re-raised — a surface's retry must not repeat a write), and a busy one is left
    for the next read, whose fingerprint check sees the folder changed."""
    ctx.wrote = True
    try:
        index.apply_changes(ctx.conn, written, removed or [])
    except StoreBusyError:
        ctx.warn("saved, but the index is busy (a long reindex?); the next read indexes the change")
    except IndexDamaged:
        raise  # the Context reports the saved change and never repeats it
    except MemexError as exc:  # a full disk, a read-only index.db: the change is made all the same
        ctx.warn(f"the change is saved, but the index could not be updated: {exc}; the next read indexes it")
    except sqlite3.DatabaseError as exc:
        if isinstance(exc, sqlite3.OperationalError) and not index.is_corrupt(exc):
            ctx.warn(f"the change is saved, but the index could not be updated ({exc}); the next read indexes it")
            return
        if not index.is_corrupt(exc):
            raise
        ctx.recover_index()
        dirs = {str(f.path): f for _, f in written}
        gone = {str(p.parent) for p in removed or []}
        dirs.update({str(f.path): f for f in ctx.folders("all") if str(f.path) in gone})
        sync_folders(ctx, list(dirs.values()))


def heal_chains(ctx: Context, folders: list[Folder]) -> int:
    """Make one-sided supersede pointers two-sided (design §3.3). Files in our own data
    root are fixed on disk; in-repo files are fixed in the index only and reported, so a
    read never dirties the user's work tree. A pointer ``chain_refusal`` forbids (across
    scopes, or one that would mark a repository memory replaced from outside the
    repository) is never completed: it is reported once and its target stays as it is.
    Neither is one naming its own holder or lying on a loop (``loop_refusal``): which
    member is newer is not known, and completing it would hide a memory. A member an
    interrupted forget left half in its chain is taken out — only when its three files
    are three memories on no loop (a self pointer or a cycle mimics the pattern: finishing
    it retracted a memory nobody forgot). Runs on every
    read — three queries over the partial indexes of chain members only, so its cost
    follows the number of superseded memories, not the store, and one key of
    ``index_info`` — and a repair that failed once is tried again. Returns how many
    pointers were healed."""
    conn = ctx.conn
    dirs = [str(f.path) for f in folders]
    marks = placeholders(dirs)
    forward = _one_sided(conn, dirs, "superseded_by", "supersedes")  # old → new, new lacks the way back
    backward = _one_sided(conn, dirs, "supersedes", "superseded_by")  # new → old, old lacks the way on
    bypassed = conn.execute(  # on the rows themselves: a view cannot be told which index to walk
        f"SELECT x.id AS id, p.id AS p_id, n.id AS n_id, {path_sql('fx', 'x')} AS path, "
        f"{spelled('x', 'location')} AS location, {path_sql('fp', 'p')} AS p_path, {path_sql('fn', 'n')} AS n_path "
        f"FROM memory_rows x INDEXED BY memories_supersedes CROSS JOIN folders fx ON fx.id = x.folder "
        f"CROSS JOIN memory_rows p ON p.id = x.supersedes CROSS JOIN folders fp ON fp.id = p.folder "
        f"CROSS JOIN memory_rows n ON n.id = x.superseded_by CROSS JOIN folders fn ON fn.id = n.folder "
        f"WHERE x.supersedes IS NOT NULL AND fx.dir IN ({marks}) AND p.superseded_by = n.id",
        dirs,
    ).fetchall()
    by_dir = {str(f.path): f for f in folders}
    refused: list[tuple[list[object], str]] = []
    healed = 0
    for pointer, rows in (("superseded_by", forward), ("supersedes", backward)):
        for row in rows:
            holder, target = by_dir[row["holder_dir"]], by_dir[row["dir"]]
            why = chain_refusal(holder, target, pointer, row["id"])
            why = why or loop_refusal(conn, dirs, row["holder_id"], row["id"])
            if why is not None:
                refused.append(_refusal(row, pointer, why))
            elif pointer == "superseded_by":
                healed += _heal(ctx, row["path"], row["location"], folders, row["holder_path"], supersedes=row["holder_id"])
            else:
                healed += _heal(ctx, row["path"], row["location"], folders, row["holder_path"], superseded_by=row["holder_id"])
    for row in bypassed:
        members = (row["id"], row["p_id"], row["n_id"])
        if len(set(members)) < 3 or any(chain_loop(conn, dirs, m) for m in members):
            continue  # a broken file, not an interrupted forget: `doctor` and `audit` report it
        healed += _finish_forget(ctx, row["path"], row["location"], folders, row["p_path"], row["n_path"])
    _warn_refused(ctx, dirs, refused)
    return healed


def chain_refusal(holder: Folder, target: Folder, pointer: str, target_id: str) -> str | None:
    """Why the ``pointer`` (``supersedes`` or ``superseded_by``) of a memory in ``holder``
    naming ``target_id`` in ``target`` must never be completed, or None. A chain never
    crosses scopes (personal, each project: ``supersede`` keeps the scope), and a memory in
    the repository is marked replaced only by a file in the repository. Ids are public in
    the repo and a bundle or a hand-written file can name any of them: completing such a
    pointer marked the named memory superseded and showed the pointer's text in its place."""
    if (holder.scope_key or str(holder.path)) != (target.scope_key or str(target.path)):
        return (f"{target_id} is {_scope_words(target)} and this one is {_scope_words(holder)}: "
                "a supersede chain never crosses scopes")  # fmt: skip
    if pointer == "supersedes" and target.location == "repo" and holder.location != "repo":
        return f"{target_id} is in the repository, and only a file in the repository can replace it"
    return None


def loop_refusal(conn: sqlite3.Connection, dirs: list[str], holder_id: str, target_id: str) -> str | None:
    """Why a one-sided pointer between ``holder_id`` and ``target_id`` must not be completed
    because the chain is broken, or None: a memory naming itself, or either end lying on a
    loop (A supersedes B and B supersedes A). Which member is newer is then not known, and
    completing it marked a memory superseded by itself (hidden from every read) or closed
    the loop, which hid all of it; the file is to be fixed by hand (``audit`` names it)."""
    if holder_id == target_id:
        return "it names itself"
    for start in (holder_id, target_id):
        loop = chain_loop(conn, dirs, start)
        if loop is not None:
            return f"the supersede chain loops ({' → '.join([*loop, loop[0]])}), so which one is newer is not known"
    return None


def chain_loop(conn: sqlite3.Connection, dirs: list[str], start: str) -> list[str] | None:
    """The members of a supersede loop through ``start`` (two or more, ``start`` first) in
    the folders ``dirs``, or None. A member's successors are the memory its
    ``superseded_by`` names and those whose ``supersedes`` names it, so a loop that only
    one side of each pair states is found as well; a self pointer is not a loop here (its
    callers check that apart). Walks from ``start`` along the pointers' partial indexes
    only, so its cost follows the chain, not the store."""
    marks = placeholders(dirs)
    sql = (
        f"SELECT r.superseded_by FROM memory_rows r CROSS JOIN folders f ON f.id = r.folder "
        f"WHERE r.id = ? AND r.superseded_by IS NOT NULL AND f.dir IN ({marks}) "
        f"UNION SELECT r.id FROM memory_rows r INDEXED BY memories_supersedes CROSS JOIN folders f ON f.id = r.folder "
        f"WHERE r.supersedes = ? AND f.dir IN ({marks})"
    )
    came_from: dict[str, str] = {}
    todo = [start]
    while todo:
        current = todo.pop()
        for (nxt,) in conn.execute(sql, [current, *dirs, current, *dirs]):
            if nxt == current:
                continue
            if nxt == start:
                loop = [current]
                while loop[-1] != start:
                    loop.append(came_from[loop[-1]])
                return loop[::-1]
            if nxt not in came_from:
                came_from[nxt] = current
                todo.append(nxt)
    return None


def _scope_words(folder: Folder) -> str:
    if folder.scope_key == PERSONAL_KEY:
        return "a personal memory"
    where = " in the repository" if folder.location == "repo" else ""
    return f"a memory of project {folder.scope_key}{where}"


def refusal_fix(pointer: str, target_id: str, holder_path: str) -> str:
    """The next step for a refused pointer (``chain_refusal``): only its holder's file says it."""
    fix = f"remove `{pointer}: {target_id}` from {holder_path}"
    return fix + " and set `status: active`" if pointer == "superseded_by" else fix


_REFUSED = "refused chains"  # the index_info key of the refused pointers already reported


def _refusal(row: sqlite3.Row, pointer: str, why: str) -> tuple[list[object], str]:
    """A refused pointer as it is remembered (the holder's file by path and stat, so an edit
    of that file is reported again, as a quarantined file is) and its one-line warning."""
    fix = refusal_fix(pointer, row["id"], row["holder_path"])
    name = Path(row["holder_path"]).name
    told: list[object] = [row["holder_path"], row["holder_dir"], pointer, row["id"], row["dir"],
                          row["mtime_ns"], row["size"], row["ctime_ns"], row["ino"]]  # fmt: skip
    return told, f"{name}: {pointer} {row['id']} not followed — {why}; {fix}"


def _warn_refused(ctx: Context, dirs: list[str], refused: list[tuple[list[object], str]]) -> None:
    """Warn about each refused pointer once, like a skipped file: what was reported is kept
    in the index (``index_info``), so every read does not say it again; a reindex forgets
    it, and the next read says it once more. A pointer no longer refused where both of its
    folders were just looked at is forgotten (a read of one scope keeps the others')."""
    conn = ctx.conn
    stored = conn.execute("SELECT value FROM index_info WHERE key = ?", (_REFUSED,)).fetchone()
    if stored is None and not refused:
        return
    told: list[list[object]] = json.loads(stored[0]) if stored is not None else []
    now = [entry for entry, _ in refused]
    for entry, message in refused:
        if entry not in told:
            ctx.warn(message)
    kept = [e for e in told if e in now or not (e[1] in dirs and e[4] in dirs)]
    kept += [e for e in now if e not in kept]
    if kept == told:
        return
    with contextlib.suppress(StoreBusyError), index.transaction(conn):  # busy: said again by a later read
        conn.execute("INSERT INTO index_info(key, value) VALUES (?, ?) "
                     "ON CONFLICT(key) DO UPDATE SET value = excluded.value", (_REFUSED, json.dumps(kept)))  # fmt: skip


def _repair(ctx: Context, path_text: str, folders: list[Folder], failure: str,
            fix: Callable[[Memory, Folder], str | None]) -> int:  # fmt: skip
    """Run one chain repair on the memory at ``path_text``: only if its scope's lock is free
    right now (never wait: a writer holding it is mid-supersede or mid-forget and finishes
    the chain itself; if it died, the kernel freed the lock and a later read repairs; waiting
    could also invert lock order between two scopes), on the file as it is now. ``fix``
    checks what it needs, writes, and returns the warning to print, or None when there is
    nothing (left) to do."""
    path = Path(path_text)
    folder = _folder_of(path, folders)
    if folder is None:
        return 0
    try:
        with scope_lock(ctx.root, [folder.scope_key or ""], wait_s=0):
            message = fix(read_memory(path, folder.scope_key), folder)
    except StoreBusyError:
        return 0
    except (MemoryFileError, OSError):
        return 0  # unreadable or gone: reconcile reports it
    except MemexError as exc:
        ctx.warn(f"{path.name}: {failure}: {exc}")
        return 0
    if message is None:
        return 0
    ctx.warn(f"{path.name}: {message}")
    return 1


def _folder_of(path: Path, folders: list[Folder]) -> Folder | None:
    return next((f for f in folders if str(f.path) == str(path.parent)), None)


def _heal(
    ctx: Context, path_text: str, location: str, folders: list[Folder], partner_path: str,
    supersedes: str | None = None, superseded_by: str | None = None,
) -> int:  # fmt: skip
    """Add the missing half of a one-sided pointer, once both files still say so."""
    what = f"supersedes {supersedes}" if supersedes else f"superseded_by {superseded_by}"

    def fix(memory: Memory, folder: Folder) -> str | None:
        partner = read_memory(Path(partner_path))
        if partner.id == memory.id:
            return None  # a memory naming itself is a broken file, not half a supersede
        if supersedes:
            if memory.supersedes is not None or partner.superseded_by != memory.id:
                return None  # changed since the index saw it: the next reconcile re-reads it
        elif memory.superseded_by is not None or partner.supersedes != memory.id:
            return None
        if location == "repo":  # a read never dirties the work tree: the index only
            column, value = ("supersedes", supersedes) if supersedes else ("superseded_by", superseded_by)
            where = index.path_key(path_text)
            with index.transaction(ctx.conn):
                ctx.conn.execute(f"UPDATE memory_rows SET {column} = ? WHERE {ROW_KEY}", (value, *where))
                if superseded_by:
                    ctx.conn.execute(f"UPDATE memory_rows SET status = 'superseded' WHERE {ROW_KEY} AND status = 'active'",
                                     where)  # fmt: skip
            return f"one-sided supersede chain (missing {what}); fix the file in the repo"
        if supersedes:
            memory.supersedes = supersedes
        if superseded_by:
            memory.superseded_by = superseded_by
            if memory.status == "active":
                memory.status = "superseded"
        store.save(memory, folder.path)
        record(ctx, [(memory, folder)])
        return f"repaired one-sided supersede chain ({what})"

    return _repair(ctx, path_text, folders, f"one-sided supersede chain (missing {what}) could not be repaired", fix)


def _one_sided(conn: sqlite3.Connection, dirs: list[str], pointer: str, back: str) -> list[sqlite3.Row]:
    """Memories (``holder``) whose ``pointer`` names a partner whose ``back`` pointer is
    empty; walked from the partial index of ``pointer``, so only chain members are read.
    Each row also says where both live and the holder's stat (``_refusal``)."""
    marks = placeholders(dirs)
    return conn.execute(
        f"SELECT h.id AS holder_id, {path_sql('fh', 'h')} AS holder_path, fh.dir AS holder_dir, "
        f"h.mtime_ns AS mtime_ns, h.size AS size, h.ctime_ns AS ctime_ns, h.ino AS ino, "
        f"x.id AS id, {path_sql('fx', 'x')} AS path, fx.dir AS dir, {spelled('x', 'location')} AS location "
        f"FROM memory_rows h INDEXED BY memories_{pointer} CROSS JOIN folders fh ON fh.id = h.folder "
        f"CROSS JOIN memory_rows x ON x.id = h.{pointer} CROSS JOIN folders fx ON fx.id = x.folder "
        f"WHERE h.{pointer} IS NOT NULL AND fh.dir IN ({marks}) AND fx.dir IN ({marks}) AND x.{back} IS NULL",
        [*dirs, *dirs],
    ).fetchall()


def _finish_forget(ctx: Context, path_text: str, location: str, folders: list[Folder], prev_path: str,
                   next_path: str) -> int:  # fmt: skip
    """X still says P → X → N, but P already points past it to N: a forget of X was killed
    after it started closing the chain. Finish it the safe way — N points back at P, and X
    leaves the chain as ``retracted``, its file kept (``open-memex forget X`` deletes it)."""

    def fix(memory: Memory, folder: Folder) -> str | None:
        prev, nxt = read_memory(Path(prev_path)), read_memory(Path(next_path))
        if len({memory.id, prev.id, nxt.id}) < 3:
            return None  # a self pointer or a loop mimics the pattern: a broken file, not a forget
        if not (memory.supersedes == prev.id and memory.superseded_by == nxt.id
                and prev.superseded_by == nxt.id and nxt.supersedes in (prev.id, memory.id)):  # fmt: skip
            return None
        if location == "repo":
            with index.transaction(ctx.conn):
                ctx.conn.execute(
                    f"UPDATE memory_rows SET status = 'retracted', supersedes = NULL, superseded_by = NULL "
                    f"WHERE {ROW_KEY}", index.path_key(path_text),
                )  # fmt: skip
            return f"left out of its chain by an interrupted forget; fix the file in the repo (`open-memex forget {memory.id}`)"
        changed = []
        if nxt.supersedes == memory.id:
            next_folder = _folder_of(Path(next_path), folders)
            if next_folder is None:
                return None
            nxt.supersedes = prev.id
            store.save(nxt, next_folder.path)
            changed.append((nxt, next_folder))
        memory.status = "retracted"
        memory.supersedes = None
        memory.superseded_by = None
        store.save(memory, folder.path)
        record(ctx, [*changed, (memory, folder)])
        return f"finished an interrupted forget (kept as retracted; `open-memex forget {memory.id}` deletes it)"

    return _repair(ctx, path_text, folders, "an interrupted forget could not be finished", fix)
