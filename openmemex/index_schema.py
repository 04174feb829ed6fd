"""The index's tables (issue 11: a smaller index, same answers).

The ``memories`` view gives every column readers use (search, listing, lookup … read
``m.*``); the rows are stored in ``memory_rows``, and what the FTS5 table needs and readers
do not is not stored twice:

- ``dir`` is a number (``folders`` holds each path once) and ``file_path`` is made from the
  folder and the id (a file whose id differs from its name is never indexed).
- the text (``body``) is deflated (``pack``; the view inflates it with ``memex_text``):
  about 0.6 of the bytes of prose. Search reads ranked rows without it (``LEAN_COLUMNS``),
  listings choose their rows before reading them whole.
- ``cjk`` is 1 when the memory has Chinese/Japanese/Korean text, 0 otherwise; its unigrams
  and bigrams (a third of the corpus's size where a fifth of it is Chinese) are indexed but
  not stored. Search reads rows only for the few dozen ranked hits and makes the grams for
  the shown ones (``fts_values``), so a query no longer pays for them.
- ``expansions`` holds each D80 concept token's number in 5 bytes (``expansions.compact``):
  a third of the bytes of the spelled tokens that are indexed and queried.

``memories_fts`` is contentless: its values come from Python, the row's text is stored once,
in ``memories``. An FTS5 delete must be sent the very values its row was inserted with, so
every one is a pure function of the stored columns (``fts_values``; SQL ``memex_grams`` and
``memex_spell`` for the trigger), and an index made under other gram rules is rebuilt
(``text_rules``); a write transaction that finds the index rebuilt under it writes nothing
(``index.transaction``).

Rows are inserted and deleted only by ``index.write_rows`` / ``index.delete_rows``, which
keep ``memories_fts`` in step in batches (an FTS5 insert inside a trigger flushes its
pending terms on every row: three times slower). An UPDATE of a searchable column
(``expansions.attach`` re-deriving the D80 column, a hand edit through a connection of
ours) goes through a trigger, which calls the functions ``register_functions`` adds to every
connection ``index.connect`` opens; a DELETE calls one too, so a foreign connection (a
plain sqlite3 shell, an older open-memex still running) that changes those columns or
deletes a row fails loudly ("no such function") instead of leaving the FTS index out of
step, and CHECKs refuse an older layout's values in ``cjk`` and ``expansions``.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import sqlite3
import threading
import zlib
from collections.abc import Callable, Iterator
from typing import Any

from . import codestamp, expansions
from .lazyre import LazyPattern
from .text import CJK_RUN, CJK_STANDIN, HASH_CHARS, cjk_index_text, starts_word

SCHEMA_VERSION = 18  # 18: location, visibility, role, importance and source coded (CODED); the small keyed tables WITHOUT ROWID (no second page for their key's index); 17: folder inserts guarded too (INSERT OR REPLACE deletes without the delete triggers); 16: texts deflated with zlib's checksum, folders guarded; 15: folders numbered, texts deflated, rows in memory_rows behind the memories view; 14: rows deleted only by connections with our functions, an older layout's rows refused; 13: tokens stored in 5 bytes each; 12: cjk grams and FTS text not stored, compact tokens and hash; 11: cjk stored again; 10: derived file_path, FTS kept from Python (issue 11); 9: fingerprint formula; 8: D80/D81
# Caches that outlive a rebuild: keyed by content, not by row (embedding vectors).
KEPT_TABLES = ("vectors",)
FTS_COLUMNS = ("content", "tags", "aliases", "expansions", "type", "cjk", "cjk_expansions")
TOKENIZE = "porter unicode61 remove_diacritics 2"  # search's snippet scratch table must tokenize alike
_FTS = ", ".join(FTS_COLUMNS)


def _text_of(row: str) -> str:
    """A row's text in SQL: a text body as it is (SQLite reads it, and a damaged one is
    reported as such), a deflated one through ``memex_text``."""
    return f"CASE WHEN typeof({row}.body) = 'text' THEN {row}.body ELSE memex_text({row}.body) END"


def _fts_of(row: str) -> str:
    """The FTS values of ``old`` or ``new`` in the trigger, as ``fts_values`` makes them."""
    return (
        f"memex_plain({_text_of(row)}), {row}.tags, {row}.aliases, memex_spell({row}.expansions), {row}.type, "
        f"memex_grams({_text_of(row)}, {row}.tags, {row}.aliases), {row}.cjk_expansions"
    )


# Columns of a few known values each, stored as the value's number here (SQLite keeps 0 and 1
# in a record's header, other small numbers in one byte) and spelled out again by the view:
# about 30 bytes a row. A value not listed (a hand edit's, a newer release's) is stored as it
# is. The lists are part of ``text_rules``: an index coded under other lists is rebuilt.
CODED: dict[str, tuple[str, ...]] = {
    "location": ("personal", "outbox", "repo"),
    "visibility": ("private", "internal", "shared"),
    "role": ("knowledge", "instruction"),
    "importance": ("normal", "high", "low"),
    "source": ("user", "tool", "keyword", "inference", "import", "cli"),
}
CODE_OF = {column: {value: i for i, value in enumerate(values)} for column, values in CODED.items()}


def spelled(row: str, column: str) -> str:
    """A ``CODED`` column of ``memory_rows`` ``row`` in SQL, as its text."""
    cases = " ".join(f"WHEN {i} THEN '{value}'" for i, value in enumerate(CODED[column]))
    return f"CASE {row}.{column} {cases} ELSE {row}.{column} END"


_SCHEMA = f"""
CREATE TABLE folders(
  id INTEGER PRIMARY KEY,
  dir TEXT NOT NULL UNIQUE
);
CREATE TABLE memory_rows(
  rowid INTEGER PRIMARY KEY,
  id TEXT NOT NULL,
  folder INTEGER NOT NULL,
  location NOT NULL,
  mtime_ns INTEGER NOT NULL,
  size INTEGER NOT NULL,
  ctime_ns INTEGER NOT NULL,
  ino INTEGER NOT NULL,
  scope TEXT NOT NULL,
  scope_key TEXT NOT NULL,
  visibility NOT NULL,
  project_name TEXT NOT NULL,
  type TEXT NOT NULL,
  role NOT NULL,
  importance NOT NULL,
  status TEXT NOT NULL,
  review_state TEXT NOT NULL,
  source NOT NULL,
  tags TEXT NOT NULL,
  aliases TEXT NOT NULL,
  expansions BLOB NOT NULL DEFAULT x'' CHECK (typeof(expansions) = 'blob'),
  cjk_expansions TEXT NOT NULL DEFAULT '',
  alias TEXT NOT NULL DEFAULT '',
  target TEXT NOT NULL DEFAULT '',
  body NOT NULL CHECK (typeof(body) IN ('text', 'blob')),
  cjk INTEGER NOT NULL CHECK (cjk IN (0, 1)),
  content_hash TEXT NOT NULL,
  supersedes TEXT,
  superseded_by TEXT,
  created_at REAL NOT NULL,
  updated_at REAL NOT NULL
);
CREATE UNIQUE INDEX memories_id ON memory_rows(id, folder);
CREATE VIEW memories AS SELECT
  r.rowid AS rowid, r.id AS id, f.dir AS dir, {spelled('r', 'location')} AS location,
  f.dir || '{os.sep}' || r.id || '.md' AS file_path,
  r.mtime_ns AS mtime_ns, r.size AS size, r.ctime_ns AS ctime_ns, r.ino AS ino, r.scope AS scope,
  r.scope_key AS scope_key, {spelled('r', 'visibility')} AS visibility, r.project_name AS project_name, r.type AS type,
  {spelled('r', 'role')} AS role, {spelled('r', 'importance')} AS importance, r.status AS status, r.review_state AS review_state,
  {spelled('r', 'source')} AS source, r.tags AS tags, r.aliases AS aliases, r.expansions AS expansions,
  r.cjk_expansions AS cjk_expansions, r.alias AS alias, r.target AS target, {_text_of('r')} AS content,
  r.cjk AS cjk, r.content_hash AS content_hash, r.supersedes AS supersedes,
  r.superseded_by AS superseded_by, r.created_at AS created_at, r.updated_at AS updated_at
FROM memory_rows r JOIN folders f ON f.id = r.folder;
CREATE VIRTUAL TABLE memories_fts USING fts5(
  content, tags, aliases, expansions, type, cjk, cjk_expansions,
  content='',
  tokenize='{TOKENIZE}'
);
CREATE TRIGGER memories_bd BEFORE DELETE ON memory_rows BEGIN
  SELECT memex_spell(x'');
END;
CREATE TRIGGER memories_au AFTER UPDATE ON memory_rows BEGIN
  UPDATE index_info SET value = value + 1 WHERE key = 'rows';
END;
CREATE TRIGGER memories_au_fts AFTER UPDATE OF body, tags, aliases, expansions, type, cjk_expansions ON memory_rows BEGIN
  INSERT INTO memories_fts(memories_fts, rowid, {_FTS}) VALUES ('delete', old.rowid, {_fts_of("old")});
  INSERT INTO memories_fts(rowid, {_FTS}) VALUES (new.rowid, {_fts_of("new")});
  UPDATE memory_rows SET cjk = (memex_grams({_text_of("new")}, new.tags, new.aliases) <> '') WHERE rowid = new.rowid;
END;
CREATE TRIGGER folders_bi BEFORE INSERT ON folders BEGIN
  SELECT memex_spell(x'');
END;
CREATE TRIGGER folders_bd BEFORE DELETE ON folders BEGIN
  SELECT memex_spell(x'');
END;
CREATE TRIGGER folders_bu BEFORE UPDATE ON folders BEGIN
  SELECT memex_spell(x'');
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
) WITHOUT ROWID;
CREATE TABLE index_info(
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE folder_state(
  dir TEXT PRIMARY KEY,
  checksum INTEGER NOT NULL,
  count INTEGER NOT NULL,
  formula INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE sync_log(
  dir TEXT PRIMARY KEY,
  at REAL NOT NULL,
  kind TEXT NOT NULL,
  added INTEGER NOT NULL,
  updated INTEGER NOT NULL,
  removed INTEGER NOT NULL,
  scanned INTEGER NOT NULL
) WITHOUT ROWID;
"""


# What ranking, chains and tiers read of a ranked row: search reads ranked rows with these
# alone (a text is stored deflated; most rows are never shown), and the rest only for the
# few that are shown (``search._complete``); the embeddings lane keeps them with its vectors.
LEAN_COLUMNS = ("rowid", "id", "dir", "location", "scope", "type", "importance", "status", "review_state",
                "superseded_by", "cjk")  # fmt: skip


# The secondary indexes: made after a rebuild has inserted every row (``create_indexes``):
# built from sorted keys their pages are full, and the build is faster than keeping them up
# row by row. ``memories_id`` is made with the table: writes look their keys up in it.
_INDEXES = """
CREATE INDEX IF NOT EXISTS memories_dir_updated ON memory_rows(folder, updated_at);
CREATE INDEX IF NOT EXISTS memories_dir_status ON memory_rows(folder, status);
CREATE INDEX IF NOT EXISTS memories_hash ON memory_rows(content_hash);
CREATE INDEX IF NOT EXISTS memories_supersedes ON memory_rows(supersedes) WHERE supersedes IS NOT NULL;
CREATE INDEX IF NOT EXISTS memories_superseded_by ON memory_rows(superseded_by) WHERE superseded_by IS NOT NULL;
CREATE INDEX IF NOT EXISTS memories_alias_target ON memory_rows(folder) WHERE alias <> '' AND target <> '';
"""


# The row of (id, dir) in ``memory_rows``, for an UPDATE (the ``memories`` view is read-only).
ROW_KEY = "id = ? AND folder = (SELECT id FROM folders WHERE dir = ?)"


def path_sql(folder: str, row: str) -> str:
    """``file_path`` as the view makes it, for a query on ``memory_rows`` ``row`` joined to
    ``folders`` ``folder`` (one that must name the index SQLite walks)."""
    return f"{folder}.dir || '{os.sep}' || {row}.id || '.md'"


def grams(content: str, tags: str, aliases: str) -> str:
    """The FTS ``cjk`` column from the stored ones: the grams of the body, tags, aliases and
    the D81 pair (the ``aliases`` column holds both; the separators are not CJK, so the runs
    are those of the memory's own words)."""
    return cjk_index_text(f"{content} {tags} {aliases}")


# CJK_STANDIN (text.py) stands in for each CJK letter in the FTS ``content`` column: a
# private-use character — a letter to unicode61 (category Co) as the CJK one was, so the text
# is cut into the same words at the same places, bm25's row lengths and phrases stay as they
# were; folded by nothing and never asked for by a query (``text.build_query``); and a run of
# n letters is one of a few hundred terms (n stand-ins) for the whole store, not a term of
# its own. (The characters unicode61 takes for word characters: ``text.TOKEN_CATEGORIES``.)
# The CJK word characters: the CJK blocks (text.CJK_BLOCKS) less what unicode61 takes for
# separators in them — the combining sound marks and ゛゜ (U+3099–309C), ゠ (U+30A0) and ・
# (U+30FB). Written out, not worked out at start-up (4 ms); tests/test_index_storage.py checks
# it against text.TOKEN_CATEGORIES and SQLite's tokenizer, character by character.
CJK_WORD_RANGES = (
    (0x3040, 0x3098), (0x309D, 0x309F), (0x30A1, 0x30FA), (0x30FC, 0x30FF),
    (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0xAC00, 0xD7AF),
)  # fmt: skip
_CJK_WORD = "".join(f"{chr(first)}-{chr(last)}" for first, last in CJK_WORD_RANGES)
# This and _BESIDE_CJK compile on first use (lazyre), not at every import (5 ms).
_CJK_WORDS = LazyPattern(f"[{_CJK_WORD}]+")
_APART = "\u2063"  # INVISIBLE SEPARATOR: a separator to unicode61, nothing on the screen
# where a separator stands between CJK and another character (a match mark may stand beside
# one): ``words_together`` takes out those words_apart put in
_BESIDE_CJK = LazyPattern(f"(?<=[{_CJK_WORD}]){_APART}(?=([^{_CJK_WORD}]))|(?<=([^{_CJK_WORD}])){_APART}(?=[{_CJK_WORD}])")


def _recut(text: str, apart: str, stand_in: bool) -> str:
    """Each run of CJK word characters set apart by ``apart`` from a letter or digit of
    another script written against it (``text.starts_word``: ``用redis做``, ``与Müller``,
    ``在Москве``), and made of ``CJK_STANDIN`` letters if ``stand_in``."""

    def run(found: re.Match[str]) -> str:
        at, end = found.span()
        before = apart if at and starts_word(text[at - 1]) else ""
        after = apart if end < len(text) and starts_word(text[end]) else ""
        return f"{before}{CJK_STANDIN * (end - at) if stand_in else found.group()}{after}"

    return _CJK_WORDS.sub(run, text)


def plain(content: str) -> str:
    """The FTS ``content`` column of a text: each CJK letter is ``CJK_STANDIN``, and a word of
    another script written against CJK (``用redis做缓存``, ``在Москве开会``) is set apart from
    it. CJK is indexed as grams in ``cjk``, where every query looks for it
    (``text.build_query``); as itself here each run was a term no query reached, stored once —
    a tenth of the FTS index where a fifth of the store is Chinese — and the word was part of
    it, so no search found it (only ASCII words were set apart once, so ``Москве`` written
    after Chinese was not). Search's snippet table gets the text with the same words set apart
    (``words_apart``)."""
    return _recut(content, " ", True) if CJK_RUN.search(content) else content


def words_apart(text: str) -> str:
    """``text`` with each word written against CJK set apart by an invisible separator (``plain``):
    the snippet table then cuts the words ``plain`` gives the index, at the same places, and
    shows the text as it is once ``words_together`` has taken the separators out again."""
    return _recut(text, _APART, False) if CJK_RUN.search(text) else text


def words_together(snippet: str) -> str:
    """A snippet of a ``words_apart`` text (its match marks still in) without the separators
    that put in — only those: one the memory's own text holds elsewhere stays."""
    if _APART not in snippet:
        return snippet

    def put_in(found: re.Match[str]) -> str:
        after, before = found.group(1), found.group(2)  # the other side: a word character or a match mark
        beside = after if after is not None else before
        return "" if beside == ("\x02" if after is not None else "\x03") or starts_word(beside) else found.group()

    return _BESIDE_CJK.sub(put_in, snippet)


def fts_values(content: str, tags: str, aliases: str, codes: bytes, type: str, cjk_expansions: str) -> tuple[str, ...]:
    """A row's ``FTS_COLUMNS`` from its stored columns: what it was indexed with, so what
    its FTS delete sends."""
    return (plain(content), tags, aliases, expansions.spell(codes), type, grams(content, tags, aliases), cjk_expansions)


_PACKED_MIN = 128  # bytes: a shorter text is stored as it is (deflate would save a few bytes at best)


def pack(content: str) -> str | bytes:
    """A memory's text as ``memory_rows.body`` stores it: deflated in zlib's format (a third
    to half of the bytes of prose; its checksum tells a damaged blob from a text), or the
    text itself where that saves too little to pay for inflating it on every read. ``unpack``
    reads either; the ``memories`` view calls it for blobs (``memex_text``)."""
    raw = content.encode("utf-8")
    if len(raw) < _PACKED_MIN:
        return content
    packed = zlib.compress(raw, 6)
    return packed if len(packed) + 16 < len(raw) else content


class DamagedText(ValueError):
    """A stored blob that does not inflate to UTF-8 (its checksum fails): damage. Raised
    inside SQLite, it reaches the caller as "user-defined function raised exception", and
    ``index.is_corrupt`` takes it for damage (``raised_in_functions`` says it was this), as it
    does SQLite's own "could not decode" for a text: the index is moved aside and rebuilt
    from the files, never read as another text, and never sent to FTS5 as a delete of values
    the row was not indexed with."""


# What one of our SQL functions raised, per thread: Python's sqlite3 turns every exception in
# a function into the same "user-defined function raised exception" and drops the exception
# itself — a Ctrl-C landing inside one too. Damage and an interrupt must not be told apart by
# that message alone (an interrupt taken for damage moved a healthy index aside).
_raised = threading.local()


def _recording(fn: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: object) -> Any:
        # A Ctrl-C taken while SQLite itself worked lands on the first Python line of the
        # next call, before anything can record it: the record is cleared here, so "nothing
        # recorded" after that error means this call never ran its first line — an interrupt.
        try:
            _raised.kind = None
            return fn(*args)
        except KeyboardInterrupt:
            _raised.kind = "interrupt"
            raise
        except DamagedText:
            _raised.kind = "damage"
            raise
        except BaseException:
            _raised.kind = "other"
            raise

    return call


def raised_in_functions() -> str:
    """What made the last call of our SQL functions in this thread fail, for a caller holding
    the "user-defined function raised exception" error: "damage" (a stored text that does not
    inflate), "other" (any other exception in them), or "interrupt" — a KeyboardInterrupt
    inside one, or one that struck before its first line (nothing recorded)."""
    kind: str | None = getattr(_raised, "kind", None)
    return kind if kind in ("damage", "other") else "interrupt"


def unpack(body: str | bytes) -> str:
    """``pack`` undone."""
    if isinstance(body, str):
        return body
    try:
        return zlib.decompress(body).decode("utf-8")
    except (zlib.error, UnicodeDecodeError, TypeError) as exc:
        raise DamagedText(f"a stored text does not inflate ({exc})") from None


def register_functions(conn: sqlite3.Connection) -> None:
    """What the ``memories`` view and the FTS trigger call; ``index.connect`` adds them to
    every connection (a foreign one reading ``content`` or changing a row fails loudly)."""
    conn.create_function("memex_grams", 3, _recording(grams), deterministic=True)
    conn.create_function("memex_plain", 1, _recording(plain), deterministic=True)
    conn.create_function("memex_spell", 1, _recording(expansions.spell), deterministic=True)
    conn.create_function("memex_text", 1, _recording(unpack), deterministic=True)


def create_indexes(conn: sqlite3.Connection) -> None:
    """The secondary indexes (``_INDEXES``), if missing: after a rebuild's rows, or by
    ``create_schema`` for an index that is written row by row from the start."""
    for statement in split_sql(_INDEXES):
        conn.execute(statement)


# Every CJK range's first and last character and its neighbours outside, runs of one to
# three characters, punctuation and Latin between them: a change to the ranges or to how
# grams are made changes what this gives.
_PROBE = " ".join([
    "\u303f\u3040\u30ff\u3100", "\u33ff\u3400\u4dbf\u4dc0", "\u4dff\u4e00\u9fff\ua000",
    "\uf8ff\uf900\ufaff\ufb00", "\uabff\uac00\ud7af\ud7b0", "中", "中文", "中文字", "a中b文c", "中，文。字",
    "かなカナ", "한국어", "mixed中文text", "〇々〆", "ｱｲ", "end", "Müller中文Москве", "与São", "用ＡＰＩ做", "時々x",
])  # fmt: skip


# What SQLite's tokenizer may read differently in another release (its Unicode tables, case
# folding, diacritics, porter's stems), beside the derivation's own probe.
_TOKENIZER_PROBE = (
    "Crème brûlée DÉJÀ-vu naïve façade Straße ǅemal ﬁle Ⅻ ½ ① ＡＢＣ 𝔘𝔫𝔦 İstanbul ıi "
    "running runner ran relational conditional generalization hopefully the_snake_case x86-64 "
    "don't e-mail 3.14 ＃tag 😀👍🏽 zero\u200bwidth ᏣᎳᎩ ꓐ ǉ Ωμέγα Привет עברית العربية हिन्दी ไทย"
)


def _tokenized(values: tuple[str, ...]) -> list[tuple[str, int, int]]:
    """(term, column, offset) of every token SQLite's FTS5 makes of ``values`` with our
    tokenizer: what a delete of those values would remove."""
    conn = sqlite3.connect(":memory:")
    try:
        columns = ", ".join(f"c{i}" for i in range(len(values)))
        conn.execute(f"CREATE VIRTUAL TABLE probe USING fts5({columns}, tokenize='{TOKENIZE}')")
        conn.execute("CREATE VIRTUAL TABLE probe_terms USING fts5vocab(probe, 'instance')")
        conn.execute(f"INSERT INTO probe({columns}) VALUES ({', '.join('?' * len(values))})", values)
        return conn.execute("SELECT term, col, offset FROM probe_terms ORDER BY col, offset, term").fetchall()
    finally:
        conn.close()


@functools.cache
def text_rules() -> str:
    """How the FTS values are derived and tokenised, as a digest of what this process makes
    of ``_PROBE``: the grams and tokens an FTS row was inserted with are the ones its delete
    must send later, and SQLite must cut them into the same terms then, so an index made
    under other rules (another release of ours, or of SQLite: a Python or OS upgrade brings
    new Unicode tables) is rebuilt rather than fed deletes that do not match (behaviour, not
    code: another Python running the same release and the same SQLite agrees)."""
    made = fts_values(_PROBE, "标签, tag", "别名, alias", expansions.compact(f"{expansions.TOKEN}123 {expansions.TOKEN}1099511627775"), "fact", "")
    cut = _tokenized((*made, _TOKENIZER_PROBE))
    return hashlib.sha256(f"{CJK_RUN.pattern}\0{made}\0{cut}\0{CODED}".encode()).hexdigest()[:16]


def is_current(conn: sqlite3.Connection) -> bool:
    return bool(conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION)


def rules_match(conn: sqlite3.Connection, record: bool = False) -> bool:
    """The index's FTS values were derived as this process derives them (``text_rules``);
    read once per connection, where ``index.connect`` reads ``index_info`` anyway. Working
    the rules out costs a process about 5 ms, so an index whose rules were worked out in this
    very environment (``text_environment``: the same SQLite build, Python and modules) is
    taken at its word. ``record`` (inside a write transaction): an index found to match in
    another environment (an upgrade that left the rules as they were) records this one."""
    found = dict(conn.execute("SELECT key, value FROM index_info WHERE key IN ('text', 'text_env')").fetchall())
    text = found.get("text")
    if text is None:
        return False
    if found.get("text_env") == text_environment(conn, str(text)):
        return True
    if text != text_rules():
        return False
    if record:
        conn.execute("INSERT OR REPLACE INTO index_info(key, value) VALUES ('text_env', ?)",
                     (text_environment(conn, str(text)),))  # fmt: skip
    return True


def text_environment(conn: sqlite3.Connection, rules: str) -> str:
    """The environment ``rules`` were worked out in, bound to them (a ``text`` written alone,
    by an older release or another tool, matches no recorded environment): SQLite's exact
    build (its source id) and this process's code and runtime (``codestamp``)."""
    source = str(conn.execute("SELECT sqlite_source_id()").fetchone()[0])
    return hashlib.sha256(f"{source}\0{codestamp.STAMP}\0{rules}".encode()).hexdigest()[:16]


def create_schema(conn: sqlite3.Connection, force: bool = False, indexes: bool = True) -> None:
    """Drop every table (but ``KEPT_TABLES``) and create the current schema, empty;
    ``indexes=False`` leaves the secondary ones to ``create_indexes`` (a rebuild, in the
    same transaction)."""
    from .index import transaction

    with transaction(conn, check=False):
        if not force and is_current(conn) and rules_match(conn):
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
        for view in conn.execute("SELECT name FROM sqlite_master WHERE type='view'").fetchall():
            conn.execute(f'DROP VIEW IF EXISTS "{view[0]}"')
        if "memories_fts" in names:
            conn.execute("DROP TABLE memories_fts")
        if "vectors" in names:
            _rekey_vectors(conn)
        for name in names:
            if name not in ("memories_fts", *KEPT_TABLES):
                conn.execute(f'DROP TABLE IF EXISTS "{name}"')
        for statement in split_sql(_SCHEMA):
            conn.execute(statement)
        if indexes:
            create_indexes(conn)
        conn.execute("INSERT INTO index_info(key, value) VALUES ('epoch', lower(hex(randomblob(8))))")
        conn.execute("INSERT INTO index_info(key, value) VALUES ('rows', 0)")  # bumped by every row change
        conn.execute("INSERT INTO index_info(key, value) VALUES ('text', ?)", (text_rules(),))
        conn.execute("INSERT INTO index_info(key, value) VALUES ('text_env', ?)", (text_environment(conn, text_rules()),))
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


def _rekey_vectors(conn: sqlite3.Connection) -> None:
    """The vectors cache outlives a rebuild, keyed by ``content_hash``; before schema 12 it
    was spelled with 64 hex digits, now with the first ``HASH_CHARS`` of them. Old keys
    are shortened (the vectors stay valid: same text, same hash) and anything else keyed
    otherwise is dropped, so no row is left that no memory can ever match again."""
    conn.execute(f"UPDATE OR IGNORE vectors SET content_hash = substr(content_hash, 1, {HASH_CHARS}) "
                 "WHERE length(content_hash) = 64")  # fmt: skip
    conn.execute(f"DELETE FROM vectors WHERE length(content_hash) <> {HASH_CHARS}")
