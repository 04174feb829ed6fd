"""The SQLite FTS5 index: a cache of the memory files, rebuilt whenever in doubt (D1).

Every read first reconciles the index with the folders it will answer from by a stat scan
(new, changed and deleted files). Unusable files are quarantined: recorded here, reported
once on stderr, skipped by every command, listed by ``doctor``/``audit``.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import sys
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from .errors import MemexError, StoreBusyError
from .ids import parse_time
from .memfile import MemoryFileError, read_memory
from .model import Memory
from .store import sweep_temp_files
from .text import cjk_index_text, content_hash

SCHEMA_VERSION = 5
BUSY_TIMEOUT_MS = 5000
PROGRESS_THRESHOLD = 500  # files to (re)read before a progress bar is worth showing

_SCHEMA = """
CREATE TABLE memories(
  rowid INTEGER PRIMARY KEY,
  id TEXT NOT NULL,
  dir TEXT NOT NULL,
  location TEXT NOT NULL,
  file_path TEXT NOT NULL UNIQUE,
  mtime_ns INTEGER NOT NULL,
  size INTEGER NOT NULL,
  ctime_ns INTEGER NOT NULL,
  ino INTEGER NOT NULL,
  scope TEXT NOT NULL,
  scope_key TEXT NOT NULL,
  visibility TEXT NOT NULL,
  project_name TEXT NOT NULL,
  type TEXT NOT NULL,
  role TEXT NOT NULL,
  importance TEXT NOT NULL,
  status TEXT NOT NULL,
  review_state TEXT NOT NULL,
  source TEXT NOT NULL,
  tags TEXT NOT NULL,
  aliases TEXT NOT NULL,
  content TEXT NOT NULL,
  cjk TEXT NOT NULL,
  content_hash TEXT NOT NULL,
  supersedes TEXT,
  superseded_by TEXT,
  created_at REAL NOT NULL,
  updated_at REAL NOT NULL
);
CREATE INDEX memories_id ON memories(id);
CREATE INDEX memories_dir_updated ON memories(dir, updated_at DESC);
CREATE INDEX memories_hash ON memories(content_hash);
CREATE INDEX memories_supersedes ON memories(supersedes) WHERE supersedes IS NOT NULL;
CREATE INDEX memories_superseded_by ON memories(superseded_by) WHERE superseded_by IS NOT NULL;
CREATE VIRTUAL TABLE memories_fts USING fts5(
  content, tags, aliases, type, cjk,
  content='memories', content_rowid='rowid',
  tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
  INSERT INTO memories_fts(rowid, content, tags, aliases, type, cjk)
  VALUES (new.rowid, new.content, new.tags, new.aliases, new.type, new.cjk);
END;
CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
  INSERT INTO memories_fts(memories_fts, rowid, content, tags, aliases, type, cjk)
  VALUES ('delete', old.rowid, old.content, old.tags, old.aliases, old.type, old.cjk);
END;
CREATE TRIGGER memories_au AFTER UPDATE ON memories BEGIN
  INSERT INTO memories_fts(memories_fts, rowid, content, tags, aliases, type, cjk)
  VALUES ('delete', old.rowid, old.content, old.tags, old.aliases, old.type, old.cjk);
  INSERT INTO memories_fts(rowid, content, tags, aliases, type, cjk)
  VALUES (new.rowid, new.content, new.tags, new.aliases, new.type, new.cjk);
END;
CREATE TABLE quarantine(
  file_path TEXT PRIMARY KEY,
  dir TEXT NOT NULL,
  mtime_ns INTEGER NOT NULL,
  size INTEGER NOT NULL,
  ctime_ns INTEGER NOT NULL,
  ino INTEGER NOT NULL,
  reason TEXT NOT NULL,
  seen_at REAL NOT NULL
);
CREATE TABLE folder_state(
  dir TEXT PRIMARY KEY,
  checksum INTEGER NOT NULL,
  count INTEGER NOT NULL
);
CREATE TABLE sync_log(
  dir TEXT PRIMARY KEY,
  at REAL NOT NULL,
  kind TEXT NOT NULL,
  added INTEGER NOT NULL,
  updated INTEGER NOT NULL,
  removed INTEGER NOT NULL,
  scanned INTEGER NOT NULL
);
"""

_UPSERT_COLUMNS = (
    "id", "dir", "location", "file_path", "mtime_ns", "size", "ctime_ns", "ino", "scope", "scope_key",
    "visibility", "project_name", "type", "role", "importance", "status", "review_state",
    "source", "tags", "aliases", "content", "cjk", "content_hash", "supersedes",
    "superseded_by", "created_at", "updated_at",
)  # fmt: skip
_UPSERT_SQL = (
    f"INSERT INTO memories({', '.join(_UPSERT_COLUMNS)}) "
    f"VALUES ({', '.join('?' for _ in _UPSERT_COLUMNS)}) "
    "ON CONFLICT(file_path) DO UPDATE SET "
    + ", ".join(f"{c}=excluded.{c}" for c in _UPSERT_COLUMNS if c != "file_path")
)

Warn = Callable[[str], None]
Sig = tuple[int, int, int, int]  # mtime_ns, size, ctime_ns, inode: what a reread is decided on
_SIG_COLUMNS = "mtime_ns, size, ctime_ns, ino"


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


def connect(db_path: Path, warn: Warn = warn_stderr) -> sqlite3.Connection:
    """Open (creating or rebuilding on a schema change) with WAL and a 5 s busy timeout.
    A file that is not a database is moved aside and rebuilt: the index is only a cache."""
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
    return "not a database" in text or "malformed" in text or "corrupt" in text


KEEP_DAMAGED = 2  # moved-aside copies kept for a bug report; older ones are removed


def move_aside(db_path: Path, warn: Warn = warn_stderr) -> None:
    """Rename a damaged index (and its WAL) out of the way; the next connect rebuilds."""
    aside = db_path.with_name(f"{db_path.name}.corrupt-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}")
    try:
        os.replace(db_path, aside)
    except FileNotFoundError:
        return
    for suffix in ("-wal", "-shm"):
        Path(f"{db_path}{suffix}").unlink(missing_ok=True)
    old = sorted(db_path.parent.glob(f"{db_path.name}.corrupt-*"), key=lambda p: p.stat().st_mtime)
    for stale in old[:-KEEP_DAMAGED]:
        stale.unlink(missing_ok=True)
    warn(f"the index {db_path} was damaged ({aside.name} kept); rebuilding it from the memory files")


def _connect(db_path: Path) -> sqlite3.Connection:
    try:
        db_path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise MemexError(
            f"cannot use {db_path.parent} as the data root ({exc.strerror}) — point OPEN_MEMEX_HOME at a writable folder"
        ) from None
    conn = sqlite3.connect(db_path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False)
    try:
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA journal_size_limit = 67108864")  # keep the WAL from staying index-sized
        if conn.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
            _create_schema(conn)
    except sqlite3.OperationalError as exc:
        conn.close()
        raise busy_error(exc) from None
    except BaseException:
        conn.close()
        raise
    return conn


def busy_error(exc: sqlite3.OperationalError) -> Exception:
    if "disk is full" in str(exc) or "disk I/O" in str(exc):
        return MemexError(f"cannot write the index ({exc}) — free disk space in the data root (`open-memex where`)")
    if "locked" in str(exc) or "busy" in str(exc):
        return StoreBusyError("the memory store is busy (another open-memex is writing); nothing was lost — retry")
    if "unable to open" in str(exc) or "readonly" in str(exc):
        return MemexError(
            f"cannot write the index ({exc}) — check that the data root and its index.db are writable "
            "(`open-memex where`)"
        )
    return exc


def _create_schema(conn: sqlite3.Connection, force: bool = False) -> None:
    with transaction(conn):
        if not force and conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION:
            return  # another process won the race
        names = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' "
                "AND name NOT LIKE 'memories_fts_%'"
            )
        ]
        for trigger in conn.execute("SELECT name FROM sqlite_master WHERE type='trigger'").fetchall():
            conn.execute(f'DROP TRIGGER IF EXISTS "{trigger[0]}"')
        if "memories_fts" in names:
            conn.execute("DROP TABLE memories_fts")
        for name in names:
            if name != "memories_fts":
                conn.execute(f'DROP TABLE IF EXISTS "{name}"')
        for statement in _split_sql(_SCHEMA):
            conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def _split_sql(script: str) -> Iterator[str]:
    buf: list[str] = []
    for line in script.strip().splitlines():
        buf.append(line)
        joined = "\n".join(buf)
        if line.rstrip().endswith(";") and sqlite3.complete_statement(joined):
            yield joined
            buf = []


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """BEGIN IMMEDIATE: take the write lock up front so busy_timeout applies (a deferred
    transaction that upgrades later fails at once with SQLITE_BUSY). Inside an open
    transaction (``rebuild``) it adds nothing: the outer one commits or rolls back."""
    if conn.in_transaction:
        yield
        return
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        raise busy_error(exc) from None
    try:
        yield
    except sqlite3.OperationalError as exc:
        _rollback(conn)
        mapped = busy_error(exc)  # a read-only index, a full disk: one line, not a traceback
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
            raise busy_error(exc) from None


def _rollback(conn: sqlite3.Connection) -> None:
    """SQLite may already have rolled back (a full disk, a damaged page): never let the
    ROLLBACK's own error hide the one that matters."""
    with contextlib.suppress(sqlite3.Error):
        conn.execute("ROLLBACK")


def _row_values(memory: Memory, folder: Folder, path: Path, sig: Sig) -> tuple[object, ...]:
    searchable = memory.body
    cjk_source = " ".join([memory.body, *memory.tags, *memory.aliases])
    values = {
        "id": memory.id,
        "dir": str(folder.path),
        "location": folder.location,
        "file_path": str(path),
        "mtime_ns": sig[0],
        "size": sig[1],
        "ctime_ns": sig[2],
        "ino": sig[3],
        "scope": memory.scope,
        "scope_key": memory.scope_key,
        "visibility": memory.visibility,
        "project_name": memory.project_name,
        "type": memory.type,
        "role": memory.role,
        "importance": memory.importance,
        "status": memory.status,
        "review_state": memory.review_state,
        "source": memory.source,
        "tags": ", ".join(memory.tags),
        "aliases": ", ".join(memory.aliases),
        "content": searchable,
        "cjk": cjk_index_text(cjk_source),
        "content_hash": content_hash(memory.body),
        "supersedes": memory.supersedes,
        "superseded_by": memory.superseded_by,
        "created_at": parse_time(memory.created_at) or 0.0,
        "updated_at": parse_time(memory.updated_at) or 0.0,
    }
    return tuple(values[c] for c in _UPSERT_COLUMNS)


def split_tags(text: str) -> list[str]:
    """Tags and aliases are stored comma-joined in the index (one FTS column each)."""
    return [t.strip() for t in text.split(",") if t.strip()]


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
    for memory, folder in written:
        assert memory.path is not None
        st = os.lstat(memory.path)
        sig = _sig(st)
        rows.append(_row_values(memory, folder, memory.path, sig))
        key = str(memory.path.parent)
        delta = deltas.setdefault(key, [0, 0])
        delta[0] += _entry_crc(memory.path.name, sig, st.st_mode)
        old = conn.execute(f"SELECT {_SIG_COLUMNS} FROM memories WHERE file_path = ?", (str(memory.path),)).fetchone()
        if old is not None:  # rewritten in place by tmp+rename: same mode as before
            delta[0] -= _entry_crc(memory.path.name, tuple(old), st.st_mode)
        elif conn.execute("SELECT 1 FROM quarantine WHERE file_path = ?", (str(memory.path),)).fetchone():
            unknown.add(key)
        else:
            delta[1] += 1
    for path in removed:
        key = str(path.parent)
        old = conn.execute(f"SELECT {_SIG_COLUMNS} FROM memories WHERE file_path = ?", (str(path),)).fetchone()
        if old is None:
            unknown.add(key)
            continue
        delta = deltas.setdefault(key, [0, 0])
        delta[0] -= _entry_crc(path.name, tuple(old), _FILE_MODE)
        delta[1] -= 1
    with transaction(conn):
        conn.executemany(_UPSERT_SQL, rows)
        conn.executemany("DELETE FROM quarantine WHERE file_path = ?", [(str(m.path),) for m, _ in written])
        conn.executemany("DELETE FROM memories WHERE file_path = ?", [(str(p),) for p in removed])
        for key, (checksum, count) in deltas.items():
            if key in unknown:
                conn.execute("DELETE FROM folder_state WHERE dir = ?", (key,))
                continue
            state = conn.execute("SELECT checksum, count FROM folder_state WHERE dir = ?", (key,)).fetchone()
            if state is not None:
                _store_fingerprint(conn, key, ((state[0] + checksum) & 0x7FFFFFFFFFFFFFFF, state[1] + count))


def remove_path(conn: sqlite3.Connection, path: Path) -> None:
    apply_changes(conn, [], [path])


def _scan(folder: Path) -> tuple[dict[str, Sig], dict[str, str]]:
    """Regular ``*.md`` files by stat; symlinks and other oddities go to ``odd``."""
    found: dict[str, Sig] = {}
    odd: dict[str, str] = {}
    try:
        entries = os.scandir(folder)
    except (FileNotFoundError, NotADirectoryError):
        return found, odd
    with entries:
        for entry in entries:
            name = entry.name
            if not name.endswith(".md") or name.startswith("."):
                continue
            try:
                if entry.is_symlink():
                    odd[entry.path] = "symlink not followed (memory files must be regular files)"
                    continue
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if not entry.is_file(follow_symlinks=False):
                odd[entry.path] = "not a regular file"
                continue
            found[entry.path] = _sig(st)
    return found, odd


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


_FILE_MODE = 0o100644  # a removed file's mode is not recorded; a wrong guess only costs a re-scan


def _sig(st: os.stat_result) -> Sig:
    return (st.st_mtime_ns, st.st_size, st.st_ctime_ns, st.st_ino)


def _entry_crc(name: str, sig: tuple[int, ...], mode: int) -> int:
    mtime_ns, size, ctime_ns, ino = sig
    return zlib.crc32(
        b"%s\0%d\0%d\0%d\0%d\0%d" % (name.encode("utf-8", "surrogateescape"), mtime_ns, size, ctime_ns, ino, mode)
    )


def fingerprint(folder: Path) -> tuple[int, int]:
    """An order-independent checksum of every ``*.md`` entry's name, mtime, size, ctime,
    inode and mode: equal to the stored one means nothing in the folder changed, so the
    index rows need not be read (the warm path of every read). ctime and inode are what an
    in-place rewrite cannot hide: ``touch -r`` restores mtime, but any write or chmod moves
    ctime, and a rename-over brings a new inode (docs/protocol.md, Consistency)."""
    try:
        names = os.listdir(folder)
    except (FileNotFoundError, NotADirectoryError):
        return 0, 0
    base = f"{folder}{os.sep}"
    total = 0
    count = 0
    lstat = os.lstat
    temps = []
    for name in names:
        if not name.endswith(".md") or name.startswith("."):
            if name.endswith(".tmp") and name.startswith("."):
                temps.append(name)
            continue
        try:
            st = lstat(base + name)
        except OSError:
            continue
        total += _entry_crc(name, (st.st_mtime_ns, st.st_size, st.st_ctime_ns, st.st_ino), st.st_mode)
        count += 1
    if temps:
        sweep_temp_files(folder, temps)
    return total & 0x7FFFFFFFFFFFFFFF, count


def _reconcile_folder(
    conn: sqlite3.Connection, folder: Folder, kind: str, warn: Warn, progress: Callable[[int, int], None] | None
) -> SyncStats:
    stats = SyncStats()
    key = str(folder.path)
    seen = fingerprint(folder.path)
    stored = conn.execute("SELECT checksum, count FROM folder_state WHERE dir = ?", (key,)).fetchone()
    if stored is not None and (stored[0], stored[1]) == seen:
        stats.scanned = seen[1]
        if kind != "request":
            _log_sync(conn, key, kind, stats)
        return stats
    # Rows first, then the scan: a file another process writes and indexes in between is
    # then "new" (re-read, harmless), never "gone" (its row deleted).
    plain = conn.cursor()
    plain.row_factory = None  # plain tuples: this runs on every read
    known = {r[0]: r[1:] for r in plain.execute(f"SELECT file_path, {_SIG_COLUMNS} FROM memories WHERE dir = ?", (key,))}
    held = {r[0]: r[1:] for r in plain.execute(f"SELECT file_path, {_SIG_COLUMNS} FROM quarantine WHERE dir = ?", (key,))}
    plain.close()
    on_disk, odd = _scan(folder.path)
    stats.scanned = len(on_disk)
    changed = [p for p, sig in on_disk.items() if known.get(p) != sig and held.get(p) != sig]
    removed = [p for p in known if p not in on_disk]
    new_odd = {p: reason for p, reason in odd.items() if p not in held}
    released = [p for p in held if p not in on_disk and p not in odd]
    if not (changed or removed or new_odd or released):
        with transaction(conn):
            _store_fingerprint(conn, key, seen)
            if kind != "request":  # explicit syncs (cli, submit, pull) are recorded even when idle (D31)
                _write_sync_row(conn, key, kind, stats, time.time())
        return stats
    rows: list[tuple[object, ...]] = []
    bad: list[tuple[str, Sig, str]] = []
    show = progress if progress is not None and len(changed) >= PROGRESS_THRESHOLD else None
    for i, path_text in enumerate(changed):
        if show is not None:
            show(i + 1, len(changed))
        path = Path(path_text)
        sig = on_disk[path_text]
        try:
            memory = read_memory(path, folder.scope_key)
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
        rows.append(_row_values(memory, folder, path, sig))
    for path_text, reason in new_odd.items():
        bad.append((path_text, (0, 0, 0, 0), reason))
    stats.removed = len(removed)
    now = time.time()
    with transaction(conn):
        conn.executemany(_UPSERT_SQL, rows)
        conn.executemany("DELETE FROM memories WHERE file_path = ?", [(p,) for p in removed])
        conn.executemany("DELETE FROM quarantine WHERE file_path = ?", [(p,) for p in released])
        for path_text, sig, reason in bad:
            conn.execute("DELETE FROM memories WHERE file_path = ?", (path_text,))
            conn.execute(
                "INSERT INTO quarantine(file_path, dir, mtime_ns, size, ctime_ns, ino, reason, seen_at) "
                "VALUES (?,?,?,?,?,?,?,?) "
                "ON CONFLICT(file_path) DO UPDATE SET mtime_ns=excluded.mtime_ns, size=excluded.size, "
                "ctime_ns=excluded.ctime_ns, ino=excluded.ino, reason=excluded.reason, seen_at=excluded.seen_at",
                (path_text, key, *sig, reason, now),
            )
        good_paths = [(r[3],) for r in rows]
        conn.executemany("DELETE FROM quarantine WHERE file_path = ?", good_paths)
        if stats.changed or bad or kind != "request":
            _write_sync_row(conn, key, kind, stats, now)
        _store_fingerprint(conn, key, seen)
    if len(rows) + len(removed) > 1000 and not conn.in_transaction:
        _checkpoint(conn)
    for path_text, _, reason in bad:
        stats.quarantined.append((Path(path_text), reason))
        warn(f"skipped {path_text}: {reason}")
    return stats


def _write_sync_row(conn: sqlite3.Connection, key: str, kind: str, stats: SyncStats, now: float) -> None:
    conn.execute(
        "INSERT INTO sync_log(dir, at, kind, added, updated, removed, scanned) VALUES (?,?,?,?,?,?,?) "
        "ON CONFLICT(dir) DO UPDATE SET at=excluded.at, kind=excluded.kind, added=excluded.added, "
        "updated=excluded.updated, removed=excluded.removed, scanned=excluded.scanned",
        (key, now, kind, stats.added, stats.updated, stats.removed, stats.scanned),
    )


def _store_fingerprint(conn: sqlite3.Connection, key: str, seen: tuple[int, int]) -> None:
    """Taken before the scan: if anything changed since, the next read re-scans (safe side)."""
    conn.execute(
        "INSERT INTO folder_state(dir, checksum, count) VALUES (?,?,?) "
        "ON CONFLICT(dir) DO UPDATE SET checksum=excluded.checksum, count=excluded.count",
        (key, seen[0], seen[1]),
    )


def _log_sync(conn: sqlite3.Connection, key: str, kind: str, stats: SyncStats) -> None:
    with transaction(conn):
        _write_sync_row(conn, key, kind, stats, time.time())


def rebuild(
    conn: sqlite3.Connection, folders: Iterable[Folder], warn: Warn = warn_stderr,
    progress: Callable[[int, int], None] | None = None,
) -> SyncStats:  # fmt: skip
    """Drop every row and re-read every file (``reindex``), in ONE transaction: until it
    commits, other processes keep reading the old, complete index — never an empty one
    that would make a search miss, or a writer's duplicate check save the same text twice
    (issue 6). Writers wait for it (busy timeout) and are told to retry if it runs long."""
    folder_list = list(folders)
    with transaction(conn):
        _create_schema(conn, force=True)  # drop and recreate: far faster than per-row FTS trigger deletes
        stats = reconcile(conn, folder_list, kind="cli", warn=warn, progress=progress)
    _checkpoint(conn)
    return stats


def _checkpoint(conn: sqlite3.Connection) -> None:
    with contextlib.suppress(sqlite3.OperationalError):  # a reader holds the WAL: trimmed later
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def quarantined(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    return [(r[0], r[1]) for r in conn.execute("SELECT file_path, reason FROM quarantine ORDER BY file_path")]


def last_sync(conn: sqlite3.Connection, dirs: Iterable[Path]) -> sqlite3.Row | None:
    keys = [str(d) for d in dirs]
    if not keys:
        return None
    marks = ",".join("?" for _ in keys)
    row: sqlite3.Row | None = conn.execute(
        f"SELECT * FROM sync_log WHERE dir IN ({marks}) ORDER BY at DESC LIMIT 1", keys
    ).fetchone()
    return row
