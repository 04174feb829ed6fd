"""The index's tables (issue 11: a smaller index, same answers).

``memories`` keeps every column readers use (search, listing, lookup … read ``m.*``), but
the file's path is not stored: ``file_path`` is generated from the folder and the id (a
file whose id differs from its name is never indexed). The text is stored once, there;
``memories_fts`` is external-content and reads it.

``cjk`` (the unigrams and bigrams of Chinese/Japanese/Korean text) stays stored: derived
on read it would save about a third of the corpus's size where a fifth of it is Chinese,
but every search reads ``m.*`` of its candidates, and building the grams of a Chinese
memory costs ~30 µs — about a millisecond a query.

Rows are inserted and deleted only by ``index.write_rows`` / ``index.delete_rows``, which
keep ``memories_fts`` in step in batches (an FTS5 insert inside a trigger flushes its
pending terms on every row: three times slower). An UPDATE of a searchable column
(``expansions.attach`` re-deriving the D80 column) goes through a trigger.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator

from . import expansions

SCHEMA_VERSION = 11  # 11: cjk stored again; 10: derived file_path, FTS kept from Python (issue 11); 9: fingerprint formula; 8: D80/D81
# Caches that outlive a rebuild: keyed by content, not by row (embedding vectors).
KEPT_TABLES = ("vectors",)
FTS_COLUMNS = ("content", "tags", "aliases", "expansions", "type", "cjk", "cjk_expansions")
TOKENIZE = "porter unicode61 remove_diacritics 2"  # search's snippet scratch table must tokenize alike
_FTS = ", ".join(FTS_COLUMNS)
_OLD = ", ".join(f"old.{c}" for c in FTS_COLUMNS)
_NEW = ", ".join(f"new.{c}" for c in FTS_COLUMNS)

_SCHEMA = f"""
CREATE TABLE memories(
  rowid INTEGER PRIMARY KEY,
  id TEXT NOT NULL,
  dir TEXT NOT NULL,
  location TEXT NOT NULL,
  file_path TEXT GENERATED ALWAYS AS (dir || '{os.sep}' || id || '.md') VIRTUAL,
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
CREATE UNIQUE INDEX memories_id ON memories(id, dir);
CREATE INDEX memories_dir_updated ON memories(dir, updated_at);
CREATE INDEX memories_dir_status ON memories(dir, status);
CREATE INDEX memories_hash ON memories(content_hash);
CREATE INDEX memories_supersedes ON memories(supersedes) WHERE supersedes IS NOT NULL;
CREATE INDEX memories_superseded_by ON memories(superseded_by) WHERE superseded_by IS NOT NULL;
CREATE INDEX memories_alias_target ON memories(dir) WHERE alias <> '' AND target <> '';
CREATE VIRTUAL TABLE memories_fts USING fts5(
  content, tags, aliases, expansions, type, cjk, cjk_expansions,
  content='memories', content_rowid='rowid',
  tokenize='{TOKENIZE}'
);
CREATE TRIGGER memories_au AFTER UPDATE ON memories BEGIN
  UPDATE index_info SET value = value + 1 WHERE key = 'rows';
END;
CREATE TRIGGER memories_au_fts AFTER UPDATE OF content, tags, aliases, expansions, type, cjk_expansions ON memories BEGIN
  INSERT INTO memories_fts(memories_fts, rowid, {_FTS}) VALUES ('delete', old.rowid, {_OLD});
  INSERT INTO memories_fts(rowid, {_FTS}) VALUES (new.rowid, {_NEW});
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


def is_current(conn: sqlite3.Connection) -> bool:
    return bool(conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION)


def create_schema(conn: sqlite3.Connection, force: bool = False) -> None:
    """Drop every table (but ``KEPT_TABLES``) and create the current schema, empty."""
    from .index import transaction

    with transaction(conn):
        if not force and is_current(conn):
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
        for statement in split_sql(_SCHEMA):
            conn.execute(statement)
        conn.execute("INSERT INTO index_info(key, value) VALUES ('epoch', lower(hex(randomblob(8))))")
        conn.execute("INSERT INTO index_info(key, value) VALUES ('rows', 0)")  # bumped by every row change
        # no rows yet: they will be written with the map in force now
        conn.execute("INSERT INTO index_info(key, value) VALUES ('expansions', ?)", (expansions.current().digest,))
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def split_sql(script: str) -> Iterator[str]:
    buf: list[str] = []
    for line in script.strip().splitlines():
        buf.append(line)
        joined = "\n".join(buf)
        if line.rstrip().endswith(";") and sqlite3.complete_statement(joined):
            yield joined
            buf = []
