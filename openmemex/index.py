"""The SQLite FTS5 index: a cache of the memory files, rebuilt whenever in doubt (D1).

This module is the database: schema, connection, transactions, rows, the quarantine of
unusable files, and what happens when the file is damaged. Bringing it in line with the
files before a read is ``freshness``; the per-folder checksum that makes that cheap is
``fingerprint``.
"""

from __future__ import annotations

import contextlib
import operator
import os
import sqlite3
import stat
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import expansions, index_schema
from .errors import IndexReplaced, MemexError, StoreBusyError
from .fingerprint import FILE_MODE, FORMULA, MASK, SIG_COLUMNS, Sig, entry_hash, stat_sig
from .ids import parse_time
from .model import Memory
from .text import content_hash

BUSY_TIMEOUT_MS = 5000
PAGE_SIZE = 8192
SCHEMA_VERSION = index_schema.SCHEMA_VERSION

# A row as ``row_values`` builds it and ``write_rows`` stores it: every stored column but the
# rowid (``file_path`` is generated, see ``index_schema``; a CODED column holds its value's
# number), then the three FTS values that are not stored (the spelled concept tokens, the CJK
# grams, the text without its CJK runs), made once, not re-derived.
ROW_COLUMNS = (
    "id", "dir", "location", "mtime_ns", "size", "ctime_ns", "ino", "scope", "scope_key",
    "visibility", "project_name", "type", "role", "importance", "status", "review_state",
    "source", "tags", "aliases", "expansions", "cjk_expansions", "alias", "target", "content", "cjk",
    "content_hash", "supersedes", "superseded_by", "created_at", "updated_at",
)  # fmt: skip
_AT = {c: i for i, c in enumerate(ROW_COLUMNS)}
_ID, _DIR, _CONTENT, _STORED = _AT["id"], _AT["dir"], _AT["content"], len(ROW_COLUMNS)
# where each FTS column's value is in a row_values row (the last three are not stored)
_FTS_AT = tuple({"expansions": _STORED, "cjk": _STORED + 1, "content": _STORED + 2}.get(c, _AT[c]) for c in index_schema.FTS_COLUMNS)
_FTS_PICK = operator.itemgetter(0, *(1 + at for at in _FTS_AT))  # (rowid, *FTS values) of a (rowid, *row)
# stored in ``memory_rows``: the folder by its number, the text packed (``index_schema.pack``)
_STORE_AS = {"dir": "folder", "content": "body"}
_INSERT = (f"INSERT INTO memory_rows(rowid, {', '.join(_STORE_AS.get(c, c) for c in ROW_COLUMNS)}) "
           f"VALUES (?{', ?' * len(ROW_COLUMNS)})")  # fmt: skip
_FTS = ", ".join(index_schema.FTS_COLUMNS)
_FTS_MARKS = ", ?" * len(index_schema.FTS_COLUMNS)
_FTS_INSERT = f"INSERT INTO memories_fts(rowid, {_FTS}) VALUES (?{_FTS_MARKS})"
_FTS_DELETE = f"INSERT INTO memories_fts(memories_fts, rowid, {_FTS}) VALUES ('delete', ?{_FTS_MARKS})"
# the stored columns fts_values derives a row's FTS values from
_FTS_SOURCES = "content, tags, aliases, expansions, type, cjk_expansions"

Warn = Callable[[str], None]


def warn_stderr(message: str) -> None:
    from .terminal import safe  # file names and memory text may hold terminal escapes

    print(f"open-memex: warning: {safe(message)}", file=sys.stderr)


@dataclass(frozen=True)
class Folder:
    """One folder of memory files the index mirrors, and how its files are classified."""

    path: Path
    location: str  # personal | outbox | repo
    scope_key: str | None  # the key its files belong to, when the folder implies one


@dataclass
class SyncStats:
    added: int = 0
    updated: int = 0
    removed: int = 0
    scanned: int = 0
    quarantined: list[tuple[Path, str]] = field(default_factory=list)

    def merge(self, other: SyncStats) -> None:
        self.added += other.added
        self.updated += other.updated
        self.removed += other.removed
        self.scanned += other.scanned
        self.quarantined.extend(other.quarantined)

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.removed)

    def summary(self) -> str:
        return f"+{self.added} ~{self.updated} -{self.removed} (scanned {self.scanned})"


INDEX_LOCK = ".index"  # serialises creating the index and moving a damaged one aside


def connect(db_path: Path, warn: Warn = warn_stderr) -> sqlite3.Connection:
    """Open (creating or rebuilding on a schema change) with WAL and a 5 s busy timeout.
    A file that is not a database is moved aside and rebuilt: the index is only a cache."""
    from .locks import scope_lock

    try:
        db_path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise MemexError(
            f"cannot use {db_path.parent} as the data root ({exc.strerror}) — point OPEN_MEMEX_HOME at a writable folder"
        ) from None
    # Serialised across processes: switching a new file to WAL and creating the schema
    # need SQLite's exclusive lock, and that race answers "database is locked" at once,
    # without waiting for the busy timeout (seen with four writers starting together).
    with scope_lock(db_path.parent, [INDEX_LOCK]):
        try:
            return _connect(db_path)
        except sqlite3.DatabaseError as exc:
            if not is_corrupt(exc):
                raise
        move_aside(db_path, warn)
        return _connect(db_path)


_CORRUPT_CODES = (11, 26)  # SQLITE_CORRUPT, SQLITE_NOTADB (and their extended codes)


def is_corrupt(exc: BaseException) -> bool:
    """A damaged index file (any page, found at any point), as opposed to a busy or
    read-only database: the only kind of database error we repair by rebuilding."""
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int) and (code & 0xFF) in _CORRUPT_CODES:
        return True
    text = str(exc).lower()
    if FUNCTION_RAISED in text:
        return _damage_in_functions()
    # "could not decode to UTF-8 column": a damaged text cell, found only when read;
    # "no such table": an index whose version is current but a table of it is gone (dropped
    # by hand or a foreign tool) — nothing but a rebuild answers from it again
    # "no such index": one a query names (INDEXED BY) is gone, by the same hands
    return any(s in text for s in ("not a database", "malformed", "corrupt", "could not decode", "no such table",
                                   "no such index"))  # fmt: skip


FUNCTION_RAISED = "user-defined function raised exception"  # how sqlite3 reports any exception in ours


def _damage_in_functions() -> bool:
    """One of our SQL functions raised: damage if it was a stored text that does not inflate;
    a Ctrl-C that landed inside one is the interrupt again (sqlite3 swallowed it), never
    damage — the index is healthy and the command stops as interrupted."""
    kind = index_schema.raised_in_functions()
    if kind == "interrupt":
        raise KeyboardInterrupt from None
    return kind == "damage"


KEEP_DAMAGED = 2  # moved-aside copies kept for a bug report; older ones are removed


def move_aside(db_path: Path, warn: Warn = warn_stderr) -> None:
    """Rename a damaged index (and its WAL) out of the way; the next connect rebuilds."""
    aside = db_path.with_name(f"{db_path.name}.corrupt-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}")
    try:
        os.replace(db_path, aside)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise MemexError(
            f"the index {db_path} is damaged and cannot be moved aside ({exc.strerror}) — delete it; "
            "it is rebuilt from the memory files"
        ) from None
    for suffix in ("-wal", "-shm"):
        Path(f"{db_path}{suffix}").unlink(missing_ok=True)
    old = sorted(db_path.parent.glob(f"{db_path.name}.corrupt-*"), key=lambda p: p.stat().st_mtime)
    for stale in old[:-KEEP_DAMAGED]:
        stale.unlink(missing_ok=True)
    warn(f"the index {db_path} was damaged ({aside.name} kept); rebuilding it from the memory files")


def recover(db_path: Path, opened_ino: int | None, warn: Warn = warn_stderr) -> None:
    """Move the damaged index aside — unless another process already did (the file is no
    longer the one that failed), so two processes finding the damage at once rebuild once."""
    from .locks import scope_lock

    with scope_lock(db_path.parent, [INDEX_LOCK]):
        try:
            current: int | None = os.stat(db_path).st_ino
        except OSError:
            current = None
        if current is not None and current == opened_ino:
            move_aside(db_path, warn)


def _refuse_odd_file(db_path: Path) -> None:
    """``index.db`` is a regular file (or a link to one) or absent: a folder, a FIFO, a
    dangling link or a file we may not open there is one line naming the fix (SQLite would
    say "unable to open" or "disk I/O error", or block on a FIFO)."""
    import stat

    try:
        mode = os.stat(db_path).st_mode
    except FileNotFoundError:
        if os.path.islink(db_path):
            raise MemexError(f"the index {db_path} is a link to a file that does not exist — remove the link; "
                             "the index is rebuilt from the memory files") from None  # fmt: skip
        return
    except OSError as exc:
        raise MemexError(f"cannot open the index {db_path} ({exc.strerror}) — make it readable and writable, or "
                         "remove it; the index is rebuilt from the memory files") from None  # fmt: skip
    if not stat.S_ISREG(mode):
        raise MemexError(f"the index {db_path} is not a file — remove it (or move it away); the index is rebuilt "
                         "from the memory files")  # fmt: skip


def _connect(db_path: Path) -> sqlite3.Connection:
    _refuse_odd_file(db_path)
    try:
        conn = sqlite3.connect(db_path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False)
    except sqlite3.OperationalError as exc:
        raise MemexError(f"cannot open the index {db_path} ({exc}) — make it readable and writable, or remove it; "
                         "the index is rebuilt from the memory files") from None  # fmt: skip
    try:
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")  # a new file only: rows of ~1.5 KB waste less
            # a new file only: pages a rebuild or FTS5's merges free can be given back (trim)
            conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
            conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA journal_size_limit = 67108864")  # keep the WAL from staying index-sized
        index_schema.register_functions(conn)
        # rules_match reads the schema: damage there (page 1 past the header) is found here,
        # where the file is moved aside and rebuilt, not by the first query of some caller
        if not index_schema.is_current(conn) or not index_schema.rules_match(conn):
            create_schema(conn)
    except sqlite3.OperationalError as exc:
        conn.close()
        raise busy_error(exc, db_path) from None
    except BaseException:
        conn.close()
        raise
    return conn


def _not_writable(db_path: Path) -> str:
    """Which of the index's files (and its folder) this process may not write, as git would
    name them: a -wal or -shm left read-only is otherwise never named."""
    def problem(path: Path, folder: bool) -> str | None:
        try:
            mode = os.stat(path).st_mode
        except OSError:
            return None  # missing: SQLite makes it (a missing folder is named by the caller's error)
        if folder != stat.S_ISDIR(mode) or (not folder and not stat.S_ISREG(mode)):
            return f"{path} (a folder or special file where a file belongs: move it away)" if not folder else None
        if not os.access(path, os.W_OK) or not mode & 0o222:  # mode bits: for root too
            return str(path)
        return None

    parts = [(db_path.parent, True), (db_path, False), (Path(f"{db_path}-wal"), False), (Path(f"{db_path}-shm"), False)]
    return ", ".join(found for path, folder in parts if (found := problem(path, folder)) is not None)


def _path_of(conn: sqlite3.Connection) -> Path | None:
    with contextlib.suppress(sqlite3.Error):
        row = conn.execute("PRAGMA database_list").fetchone()
        if row is not None and row[2]:
            return Path(row[2])
    return None


def busy_error(exc: sqlite3.OperationalError, db_path: Path | None = None) -> Exception:
    if "disk is full" in str(exc) or "disk I/O" in str(exc):
        return MemexError(f"cannot write the index ({exc}) — free disk space in the data root (`open-memex where`)")
    if "locked" in str(exc) or "busy" in str(exc):
        return StoreBusyError("the memory store is busy (another open-memex is writing); nothing was lost — retry")
    if "unable to open" in str(exc) or "readonly" in str(exc):
        culprits = _not_writable(db_path) if db_path is not None else ""
        if culprits:
            return MemexError(f"cannot write the index ({exc}) — make these writable: {culprits}")
        return MemexError(
            f"cannot write the index ({exc}) — check that the data root and its index.db, index.db-wal and "
            "index.db-shm are writable (`open-memex where`)"
        )
    return exc


FTS_AUTOMERGE = 4  # FTS5's default 'automerge' (sqlite.org/fts5.html, 6.1)


def fts_automerge(conn: sqlite3.Connection, segments: int) -> None:
    """FTS5's documented 'automerge' option (stored in the table, transactional). Off while a
    rebuild inserts every row: FTS5 then merges its segments only when a level holds 16
    ('crisismerge'), not a little after every flush — 20 % of the FTS inserts' time at 100k
    memories, and a bare MATCH over the result measured the same (57.5 ms at 100k)."""
    conn.execute("INSERT INTO memories_fts(memories_fts, rank) VALUES ('automerge', ?)", (segments,))


def trim(conn: sqlite3.Connection) -> None:
    """Give the file's free pages back to the file system (a rebuild drops every table, and
    FTS5's merges free pages: ~0.8 MB of a 10k store's 20 MB). Only for a file made with
    ``auto_vacuum = INCREMENTAL`` (from schema 12 on); a no-op for others, and inside a
    transaction (executescript would commit it)."""
    if conn.in_transaction:
        return
    # executescript steps the pragma to the end; execute() stops after one step: one page
    conn.executescript("PRAGMA incremental_vacuum;")


def create_schema(conn: sqlite3.Connection, force: bool = False, indexes: bool = True) -> None:
    """Create the current schema, empty (``index_schema``); ``force``: even if current;
    ``indexes=False``: the secondary indexes are left to ``create_indexes``."""
    index_schema.create_schema(conn, force, indexes)


def create_indexes(conn: sqlite3.Connection) -> None:
    index_schema.create_indexes(conn)


def generation(conn: sqlite3.Connection, root: object, snapshot: bool = False) -> tuple[str, str, int] | None:
    """(data root, epoch, rows version): a cache of row-derived data (the alias registry, the
    embeddings lane's vectors) keyed by it is current for every process and connection. None
    inside the caller's own transaction (its uncommitted rows are never cached: after a
    rollback the count would come round again for other rows) — unless ``snapshot`` says the
    transaction is a read-only one the reader began itself — or when either is missing or
    not a number."""
    if conn.in_transaction and not snapshot:
        return None
    info = dict(conn.execute("SELECT key, value FROM index_info WHERE key IN ('epoch', 'rows')").fetchall())
    try:
        return (str(root), str(info["epoch"]), int(info["rows"]))
    except (KeyError, TypeError, ValueError):
        return None  # a damaged index: nothing says when a kept answer goes stale


def epoch(conn: sqlite3.Connection) -> str:
    """Changes whenever every row was dropped and rebuilt (a new index, ``reindex``): a
    long-running reader's knowledge of which rows are current ends with it."""
    row = conn.execute("SELECT value FROM index_info WHERE key = 'epoch'").fetchone()
    return str(row[0]) if row else ""


@contextmanager
def read_snapshot(conn: sqlite3.Connection) -> Iterator[None]:
    """One read transaction around several statements (WAL: one snapshot, no lock taken),
    so what they read is one state of the index; inside the caller's own transaction, that."""
    if conn.in_transaction:
        yield
        return
    conn.execute("BEGIN")
    try:
        yield
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")  # reads only: nothing to keep or lose


@contextmanager
def transaction(conn: sqlite3.Connection, check: bool = True) -> Iterator[None]:
    """BEGIN IMMEDIATE: take the write lock up front so busy_timeout applies (a deferred
    transaction that upgrades later fails at once with SQLITE_BUSY). Inside an open
    transaction (``rebuild``) it adds nothing: the outer one commits or rolls back.

    Once the lock is held, the index must still be the layout this process writes: another
    open-memex (another version, or other text rules) may have rebuilt it since this
    connection opened, and a contentless FTS5 row can only be deleted with the values it
    was inserted with. Then nothing is written and the command runs again on a fresh
    connection (``IndexReplaced``), which takes the index as it finds it."""
    if conn.in_transaction:
        yield
        return
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        raise busy_error(exc, _path_of(conn)) from None
    if check and not (index_schema.is_current(conn) and index_schema.rules_match(conn, record=True)):
        _rollback(conn)
        raise IndexReplaced("the index was rebuilt by another open-memex while this command ran; nothing was "
                           "written — run it again")  # fmt: skip
    try:
        yield
    except sqlite3.OperationalError as exc:
        _rollback(conn)
        mapped = busy_error(exc, _path_of(conn))  # a read-only index, a full disk: one line, not a traceback
        if mapped is exc:
            raise
        raise mapped from None
    except BaseException:
        _rollback(conn)
        raise
    else:
        try:
            conn.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            _rollback(conn)
            raise busy_error(exc, _path_of(conn)) from None


def _rollback(conn: sqlite3.Connection) -> None:
    """SQLite may already have rolled back (a full disk, a damaged page): never let the
    ROLLBACK's own error hide the one that matters."""
    with contextlib.suppress(sqlite3.Error):
        conn.execute("ROLLBACK")


def row_values(memory: Memory, folder: Folder, sig: Sig) -> tuple[object, ...]:
    """The index row of ``memory``, read from ``<id>.md`` in ``folder`` (``ROW_COLUMNS``;
    ``memfile.read_memory`` refuses other names, so the path is not stored)."""
    pair = [x for x in (memory.alias, memory.target) if x]  # D81: the pair is searchable like aliases
    tags, aliases = ", ".join(memory.tags), ", ".join([*memory.aliases, *pair])
    grams = index_schema.grams(memory.body, tags, aliases)  # none: the same text has no CJK to look for
    codes, spelled = expansions.current().stored(" ".join([memory.body, *memory.tags, *memory.aliases, *pair]), bool(grams))
    created = parse_time(memory.created_at) or 0.0  # most files were never updated: parsed once
    code = index_schema.CODE_OF
    return (
        memory.id, str(folder.path), code["location"].get(folder.location, folder.location), sig[0], sig[1], sig[2],
        sig[3], memory.scope, memory.scope_key, code["visibility"].get(memory.visibility, memory.visibility),
        memory.project_name, memory.type, code["role"].get(memory.role, memory.role),
        code["importance"].get(memory.importance, memory.importance), memory.status, memory.review_state,
        code["source"].get(memory.source, memory.source), tags, aliases, codes, "",
        (memory.alias or "").strip() if memory.target else "",
        (memory.target or "").strip() if memory.alias else "",
        memory.body, int(bool(grams)), content_hash(memory.body), memory.supersedes, memory.superseded_by,
        created, created if memory.updated_at == memory.created_at else parse_time(memory.updated_at) or 0.0,
        spelled, grams, index_schema.plain(memory.body) if grams else memory.body,
    )  # fmt: skip


def row_path(row: Sequence[object]) -> str:
    """The file a ``row_values`` row was read from (what ``file_path`` reads back)."""
    return f"{row[_DIR]}{os.sep}{row[_ID]}.md"


def path_key(path_text: str) -> tuple[str, str]:
    """(id, dir) of the row a memory file's path would have: its unique key."""
    folder, _, name = path_text.rpartition(os.sep)
    return name.removesuffix(".md"), folder


def placeholders(items: list[str]) -> str:
    """``?,?,?`` for an ``IN (…)`` of ``items`` (always bound, never spliced)."""
    return ",".join("?" for _ in items)


def split_tags(text: str) -> list[str]:
    """Tags and aliases are stored comma-joined in the index (one FTS column each)."""
    return [t.strip() for t in text.split(",") if t.strip()]


_LOOKUP_BATCH = 500


def _existing(conn: sqlite3.Connection, keys: Iterable[tuple[str, str]]) -> dict[tuple[str, str], tuple[object, ...]]:
    """(id, dir) → (rowid, the FTS values it was indexed with) of the rows these keys name."""
    by_dir: dict[str, list[str]] = {}
    for memory_id, folder in keys:
        by_dir.setdefault(folder, []).append(memory_id)
    found: dict[tuple[str, str], tuple[object, ...]] = {}
    plain = conn.cursor()
    plain.row_factory = None
    for folder, ids in by_dir.items():
        for at in range(0, len(ids), _LOOKUP_BATCH):
            part = ids[at : at + _LOOKUP_BATCH]
            for row in plain.execute(
                f"SELECT id, rowid, {_FTS_SOURCES} FROM memories WHERE dir = ? AND id IN ({placeholders(part)})",
                (folder, *part),
            ):
                found[(row[0], folder)] = (row[1], *index_schema.fts_values(*row[2:]))
    plain.close()
    return found


def _drop(conn: sqlite3.Connection, old: Iterable[tuple[object, ...]]) -> int:
    """Delete rows (rowid, FTS values) and their FTS entries — the very values they were
    indexed with, or the FTS index would keep terms of a row that is gone."""
    gone = list(old)
    if gone:
        conn.executemany(_FTS_DELETE, gone)
        conn.executemany("DELETE FROM memory_rows WHERE rowid = ?", [(g[0],) for g in gone])
    return len(gone)


def _count(conn: sqlite3.Connection, changes: int) -> None:
    if changes:
        conn.execute("UPDATE index_info SET value = value + ? WHERE key = 'rows'", (changes,))


def write_rows(conn: sqlite3.Connection, rows: Sequence[tuple[object, ...]]) -> None:
    """Store ``row_values`` rows, replacing the rows of the same (id, dir), with their FTS
    entries, in the caller's transaction. New rows are numbered in the order given (rowids
    break bm25 ties, so a fresh index orders them the same on every machine); a replaced
    row keeps its rowid."""
    if not rows:
        return
    # One row per (id, dir), the last given winning: a caller may name one memory twice
    # (`submit X X`, a supersede cycle whose neighbours are the same file) — that is not
    # damage, and the insert below would take it for it.
    rows = list({(str(r[_ID]), str(r[_DIR])): r for r in rows}.values())
    old = _existing(conn, ((str(r[_ID]), str(r[_DIR])) for r in rows))
    next_rowid = int(conn.execute("SELECT COALESCE(MAX(rowid), 0) FROM memory_rows").fetchone()[0]) + 1
    _drop(conn, old.values())  # (after the count: a kept rowid may be the highest)
    full: list[tuple[object, ...]] = []
    for row in rows:
        kept = old.get((str(row[_ID]), str(row[_DIR])))
        if kept is not None:
            rowid = kept[0]
        else:
            rowid, next_rowid = next_rowid, next_rowid + 1
        full.append((rowid, *row))
    numbers = folder_numbers(conn, {str(r[_DIR]) for r in rows})
    bodies = _packing([str(r[_CONTENT + 1]) for r in full])  # deflates while FTS5 indexes them
    # Every FTS value is what fts_values derives from the stored row, so what a delete sends
    # later is what was indexed now (tests/test_index_derived.py holds it to that).
    conn.executemany(_FTS_INSERT, map(_FTS_PICK, full))
    stored = [
        (*r[: _DIR + 1], numbers[str(r[_DIR + 1])], *r[_DIR + 2 : _CONTENT + 1], body, *r[_CONTENT + 2 : _STORED + 1])
        for r, body in zip(full, bodies(), strict=True)
    ]  # fmt: skip
    try:
        conn.executemany(_INSERT, stored)
    except sqlite3.IntegrityError as exc:
        # rowids are past the highest and keys were looked up under the write lock: only a
        # damaged index answers either wrongly, and a damaged index is rebuilt (is_corrupt)
        raise sqlite3.DatabaseError(f"database disk image is malformed ({exc})") from None
    _count(conn, len(rows) + len(old))
    _note_map(conn)


def _note_map(conn: sqlite3.Connection) -> None:
    """The rows just written carry the D80 tokens of the map this process holds. If another
    process re-derived the index with another map since this one attached (a config change
    between its start and this write), the index no longer follows one map: it is marked so,
    and the next ``expansions.attach`` re-derives every row with its own (one small read per
    write, in the writer's transaction)."""
    row = conn.execute("SELECT value FROM index_info WHERE key = 'expansions'").fetchone()
    if row is not None and row[0] != expansions.current().digest:
        conn.execute("UPDATE index_info SET value = 'mixed' WHERE key = 'expansions'")


_PACK_IN_THREAD = 64  # rows: below it (an add, a small sync) deflating inline costs less than a handoff
_packers: dict[int, Any] = {}  # pid -> executor: a forked child makes its own (the parent's thread is not there)


def _packing(texts: list[str]) -> Callable[[], list[str | bytes]]:
    """``index_schema.pack`` of every text, done on a worker thread for a large batch (zlib
    lets go of the GIL while it deflates, SQLite while FTS5 indexes the batch meanwhile):
    a rebuild's deflating then costs it almost nothing. Returns the function that waits."""
    if len(texts) < _PACK_IN_THREAD:
        done = [index_schema.pack(t) for t in texts]
        return lambda: done
    pid = os.getpid()
    if pid not in _packers:
        from concurrent.futures import ThreadPoolExecutor

        _packers.clear()
        _packers[pid] = ThreadPoolExecutor(max_workers=1, thread_name_prefix="open-memex-pack")
    try:
        result: Callable[[], list[str | bytes]] = _packers[pid].submit(lambda: [index_schema.pack(t) for t in texts]).result
    except RuntimeError:  # the interpreter is shutting down
        done = [index_schema.pack(t) for t in texts]
        return lambda: done
    return result


def folder_numbers(conn: sqlite3.Connection, dirs: Iterable[str]) -> dict[str, int]:
    """The number ``memory_rows.folder`` stores for each of ``dirs``, numbering new ones (a
    path is stored once, in ``folders``, not in every row and every index entry)."""
    wanted = list(dirs)
    conn.executemany("INSERT OR IGNORE INTO folders(dir) VALUES (?)", [(d,) for d in wanted])
    found = conn.execute(f"SELECT dir, id FROM folders WHERE dir IN ({placeholders(wanted)})", wanted)
    return {str(d): int(n) for d, n in found}


def delete_rows(conn: sqlite3.Connection, keys: Iterable[tuple[str, str]]) -> int:
    """Delete the rows of these (id, dir) keys and their FTS entries; returns how many."""
    removed = _drop(conn, _existing(conn, keys).values())
    _count(conn, removed)
    return removed


def row_sig(conn: sqlite3.Connection, path_text: str) -> Sig | None:
    """What the index recorded about the file at ``path_text`` (None: no row)."""
    memory_id, folder = path_key(path_text)
    row = conn.execute(f"SELECT {SIG_COLUMNS} FROM memories WHERE id = ? AND dir = ?", (memory_id, folder)).fetchone()
    return None if row is None else (int(row[0]), int(row[1]), int(row[2]), int(row[3]))


def upsert(conn: sqlite3.Connection, memory: Memory, folder: Folder) -> None:
    """Index one memory right after its file was written (the write path's second step)."""
    apply_changes(conn, [(memory, folder)], [])


def apply_changes(conn: sqlite3.Connection, written: list[tuple[Memory, Folder]], removed: list[Path]) -> None:
    """Index files just written and forget files just deleted, in one transaction, and
    carry the folders' fingerprints along by exactly these changes: if anything else
    changed meanwhile, the next fingerprint differs and that read re-scans (safe side)."""
    rows = []
    deltas: dict[str, list[int]] = {}  # dir -> [checksum delta, count delta]
    unknown: set[str] = set()
    written = list({str(m.path): (m, f) for m, f in written}.values())  # a file named twice counts once
    for memory, folder in written:
        assert memory.path is not None
        st = os.lstat(memory.path)
        sig = stat_sig(st)
        rows.append(row_values(memory, folder, sig))
        key = str(memory.path.parent)
        delta = deltas.setdefault(key, [0, 0])
        delta[0] += entry_hash(memory.path.name, sig, st.st_mode)
        old = row_sig(conn, str(memory.path))
        if old is not None:  # rewritten in place by tmp+rename: same mode as before
            delta[0] -= entry_hash(memory.path.name, old, st.st_mode)
        elif conn.execute("SELECT 1 FROM quarantine WHERE file_path = ?", (str(memory.path),)).fetchone():
            unknown.add(key)
        else:
            delta[1] += 1
    for path in removed:
        key = str(path.parent)
        old = row_sig(conn, str(path))
        if old is None:
            unknown.add(key)
            continue
        delta = deltas.setdefault(key, [0, 0])
        delta[0] -= entry_hash(path.name, old, FILE_MODE)
        delta[1] -= 1
    with transaction(conn):
        write_rows(conn, rows)
        conn.executemany("DELETE FROM quarantine WHERE file_path = ?", [(str(m.path),) for m, _ in written])
        delete_rows(conn, (path_key(str(p)) for p in removed))
        for key, (checksum, count) in deltas.items():
            if key in unknown:
                conn.execute("DELETE FROM folder_state WHERE dir = ?", (key,))
                continue
            state = stored_fingerprint(conn, key)
            if state is not None:
                store_fingerprint(conn, key, ((state[0] + checksum) & MASK, state[1] + count))


def remove_path(conn: sqlite3.Connection, path: Path) -> None:
    apply_changes(conn, [], [path])


def write_sync_row(conn: sqlite3.Connection, key: str, kind: str, stats: SyncStats, now: float) -> None:
    conn.execute(
        "INSERT INTO sync_log(dir, at, kind, added, updated, removed, scanned) VALUES (?,?,?,?,?,?,?) "
        "ON CONFLICT(dir) DO UPDATE SET at=excluded.at, kind=excluded.kind, added=excluded.added, "
        "updated=excluded.updated, removed=excluded.removed, scanned=excluded.scanned",
        (key, now, kind, stats.added, stats.updated, stats.removed, stats.scanned),
    )


def store_fingerprint(conn: sqlite3.Connection, key: str, seen: tuple[int, int]) -> None:
    """Taken before the scan: if anything changed since, the next read re-scans (safe side)."""
    conn.execute(
        "INSERT INTO folder_state(dir, checksum, count, formula) VALUES (?,?,?,?) "
        "ON CONFLICT(dir) DO UPDATE SET checksum=excluded.checksum, count=excluded.count, formula=excluded.formula",
        (key, seen[0], seen[1], FORMULA),
    )


def stored_fingerprint(conn: sqlite3.Connection, key: str) -> tuple[int, int] | None:
    """The folder's checksum and count as last seen, or None — also when another formula
    made it (``fingerprint.FORMULA``): that one is never compared, so it means one full check."""
    row = conn.execute("SELECT checksum, count, formula FROM folder_state WHERE dir = ?", (key,)).fetchone()
    if row is None or row[2] != FORMULA:
        return None
    return int(row[0]), int(row[1])


def quarantined(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    return [(r[0], r[1]) for r in conn.execute("SELECT file_path, reason FROM quarantine ORDER BY file_path")]


def last_sync(conn: sqlite3.Connection, dirs: Iterable[Path]) -> sqlite3.Row | None:
    keys = [str(d) for d in dirs]
    if not keys:
        return None
    marks = placeholders(keys)
    row: sqlite3.Row | None = conn.execute(
        f"SELECT * FROM sync_log WHERE dir IN ({marks}) ORDER BY at DESC LIMIT 1", keys
    ).fetchone()
    return row
