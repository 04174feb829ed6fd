"""The SQLite FTS5 index: a cache of the memory files, rebuilt whenever in doubt (D1).

This module is the database: schema, connection, transactions, rows, the quarantine of
unusable files, and what happens when the file is damaged. Bringing it in line with the
files before a read is ``freshness``; the per-folder checksum that makes that cheap is
``fingerprint``.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from . import expansions
from .errors import MemexError, StoreBusyError
from .fingerprint import FILE_MODE, FORMULA, MASK, SIG_COLUMNS, Sig, entry_hash, stat_sig
from .ids import parse_time
from .model import Memory
from .text import cjk_index_text, content_hash

SCHEMA_VERSION = 9  # 9: folder_state.formula (issue 11); 8: D80 expansions (D83), their CJK grams apart, D81 alias/target, row counter; 6: epoch
BUSY_TIMEOUT_MS = 5000

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
  expansions TEXT NOT NULL DEFAULT '',
  cjk_expansions TEXT NOT NULL DEFAULT '',
  alias TEXT NOT NULL DEFAULT '',
  target TEXT NOT NULL DEFAULT '',
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
CREATE INDEX memories_dir_status ON memories(dir, status);
CREATE INDEX memories_hash ON memories(content_hash);
CREATE INDEX memories_supersedes ON memories(supersedes) WHERE supersedes IS NOT NULL;
CREATE INDEX memories_superseded_by ON memories(superseded_by) WHERE superseded_by IS NOT NULL;
CREATE INDEX memories_alias_target ON memories(dir) WHERE alias <> '' AND target <> '';
CREATE VIRTUAL TABLE memories_fts USING fts5(
  content, tags, aliases, expansions, type, cjk, cjk_expansions,
  content='memories', content_rowid='rowid',
  tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
  UPDATE index_info SET value = value + 1 WHERE key = 'rows';
  INSERT INTO memories_fts(rowid, content, tags, aliases, expansions, type, cjk, cjk_expansions)
  VALUES (new.rowid, new.content, new.tags, new.aliases, new.expansions, new.type, new.cjk, new.cjk_expansions);
END;
CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
  UPDATE index_info SET value = value + 1 WHERE key = 'rows';
  INSERT INTO memories_fts(memories_fts, rowid, content, tags, aliases, expansions, type, cjk, cjk_expansions)
  VALUES ('delete', old.rowid, old.content, old.tags, old.aliases, old.expansions, old.type, old.cjk, old.cjk_expansions);
END;
CREATE TRIGGER memories_au AFTER UPDATE ON memories BEGIN
  UPDATE index_info SET value = value + 1 WHERE key = 'rows';
  INSERT INTO memories_fts(memories_fts, rowid, content, tags, aliases, expansions, type, cjk, cjk_expansions)
  VALUES ('delete', old.rowid, old.content, old.tags, old.aliases, old.expansions, old.type, old.cjk, old.cjk_expansions);
  INSERT INTO memories_fts(rowid, content, tags, aliases, expansions, type, cjk, cjk_expansions)
  VALUES (new.rowid, new.content, new.tags, new.aliases, new.expansions, new.type, new.cjk, new.cjk_expansions);
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
CREATE TABLE index_info(
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
CREATE TABLE folder_state(
  dir TEXT PRIMARY KEY,
  checksum INTEGER NOT NULL,
  count INTEGER NOT NULL,
  formula INTEGER NOT NULL
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

# Caches that outlive a rebuild: keyed by content, not by row (embedding vectors).
KEPT_TABLES = ("vectors",)

UPSERT_COLUMNS = (
    "id", "dir", "location", "file_path", "mtime_ns", "size", "ctime_ns", "ino", "scope", "scope_key",
    "visibility", "project_name", "type", "role", "importance", "status", "review_state",
    "source", "tags", "aliases", "expansions", "cjk_expansions", "alias", "target", "content", "cjk", "content_hash", "supersedes",
    "superseded_by", "created_at", "updated_at",
)  # fmt: skip
UPSERT_SQL = (
    f"INSERT INTO memories({', '.join(UPSERT_COLUMNS)}) "
    f"VALUES ({', '.join('?' for _ in UPSERT_COLUMNS)}) "
    "ON CONFLICT(file_path) DO UPDATE SET "
    + ", ".join(f"{c}=excluded.{c}" for c in UPSERT_COLUMNS if c != "file_path")
)

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
    # "could not decode to UTF-8 column": a damaged text cell, found only when read
    return "not a database" in text or "malformed" in text or "corrupt" in text or "could not decode" in text


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


def _connect(db_path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(db_path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False)
    try:
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA journal_size_limit = 67108864")  # keep the WAL from staying index-sized
        if conn.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
            create_schema(conn)
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


def create_schema(conn: sqlite3.Connection, force: bool = False) -> None:
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
            if name not in ("memories_fts", *KEPT_TABLES):
                conn.execute(f'DROP TABLE IF EXISTS "{name}"')
        for statement in _split_sql(_SCHEMA):
            conn.execute(statement)
        conn.execute("INSERT INTO index_info(key, value) VALUES ('epoch', lower(hex(randomblob(8))))")
        conn.execute("INSERT INTO index_info(key, value) VALUES ('rows', 0)")  # bumped by every row change
        # no rows yet: they will be written with the map in force now
        conn.execute("INSERT INTO index_info(key, value) VALUES ('expansions', ?)", (expansions.current().digest,))
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def rows_version(conn: sqlite3.Connection) -> int:
    """Changes with every memory row written or removed (a trigger counts them), by any
    process: a cache of row-derived data (the embeddings lane's vectors) holds while it does."""
    row = conn.execute("SELECT value FROM index_info WHERE key = 'rows'").fetchone()
    return int(row[0]) if row else -1


def epoch(conn: sqlite3.Connection) -> str:
    """Changes whenever every row was dropped and rebuilt (a new index, ``reindex``): a
    long-running reader's knowledge of which rows are current ends with it."""
    row = conn.execute("SELECT value FROM index_info WHERE key = 'epoch'").fetchone()
    return str(row[0]) if row else ""


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


def row_values(memory: Memory, folder: Folder, path: Path, sig: Sig) -> tuple[object, ...]:
    searchable = memory.body
    pair = [x for x in (memory.alias, memory.target) if x]  # D81: the pair is searchable like aliases
    cjk_source = " ".join([memory.body, *memory.tags, *memory.aliases, *pair])
    variants = expansions.current().variants(" ".join([memory.body, *memory.tags]), [*memory.aliases, *pair])
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
        "aliases": ", ".join([*memory.aliases, *pair]),
        "expansions": expansions.index_text(variants),
        "cjk_expansions": expansions.index_text(variants, cjk=True),
        "alias": (memory.alias or "").strip() if memory.target else "",
        "target": (memory.target or "").strip() if memory.alias else "",
        "content": searchable,
        "cjk": cjk_index_text(cjk_source),
        "content_hash": content_hash(memory.body),
        "supersedes": memory.supersedes,
        "superseded_by": memory.superseded_by,
        "created_at": parse_time(memory.created_at) or 0.0,
        "updated_at": parse_time(memory.updated_at) or 0.0,
    }
    return tuple(values[c] for c in UPSERT_COLUMNS)


def placeholders(items: list[str]) -> str:
    """``?,?,?`` for an ``IN (…)`` of ``items`` (always bound, never spliced)."""
    return ",".join("?" for _ in items)


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
        sig = stat_sig(st)
        rows.append(row_values(memory, folder, memory.path, sig))
        key = str(memory.path.parent)
        delta = deltas.setdefault(key, [0, 0])
        delta[0] += entry_hash(memory.path.name, sig, st.st_mode)
        old = conn.execute(f"SELECT {SIG_COLUMNS} FROM memories WHERE file_path = ?", (str(memory.path),)).fetchone()
        if old is not None:  # rewritten in place by tmp+rename: same mode as before
            delta[0] -= entry_hash(memory.path.name, tuple(old), st.st_mode)
        elif conn.execute("SELECT 1 FROM quarantine WHERE file_path = ?", (str(memory.path),)).fetchone():
            unknown.add(key)
        else:
            delta[1] += 1
    for path in removed:
        key = str(path.parent)
        old = conn.execute(f"SELECT {SIG_COLUMNS} FROM memories WHERE file_path = ?", (str(path),)).fetchone()
        if old is None:
            unknown.add(key)
            continue
        delta = deltas.setdefault(key, [0, 0])
        delta[0] -= entry_hash(path.name, tuple(old), FILE_MODE)
        delta[1] -= 1
    with transaction(conn):
        conn.executemany(UPSERT_SQL, rows)
        conn.executemany("DELETE FROM quarantine WHERE file_path = ?", [(str(m.path),) for m, _ in written])
        conn.executemany("DELETE FROM memories WHERE file_path = ?", [(str(p),) for p in removed])
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
