"""What is remembered, as one data layer (D68, D70): ``list``, the MCP ``memory_list`` and
``inventory`` all read it, so the surfaces cannot drift apart.

The rules every surface inherits from here: one numbering across the sections of a
listing (so "forget #3" names one memory); every section states its true total and a cut
is always disclosed; hidden history (superseded versions, retracted, archived) is counted
— and loaded only when a report folds it open — never silently dropped; provenance is
available in plain words ("saved 3 days ago, from a keyword capture") beside the raw enums.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass, field

from . import freshness
from .context import Context
from .errors import UsageError
from .ids import format_time
from .index import Folder, placeholders, split_tags
from .lifecycle import stranded_sql
from .model import PERSONAL_KEY, TYPES
from .search import check_limit
from .text import normalize_ws

DEFAULT_LIMIT = 20
MAX_LIMIT = 100
BODY_CHARS = 240
PERSONAL_HEADING = "## About you (personal — stays on this machine, applies everywhere)"
# a superseded memory whose successor is gone is the head of what is left (lifecycle)
CURRENT_SQL = f"(status IN ('active', 'deprecated') OR {stranded_sql('memories')})"

# Provenance in the user's words (D68); the structured line keeps the raw ``source=``.
SOURCE_WORDS = {
    "user": "in your own words",
    "cli": "from the command line",
    "tool": "by your agent",
    "keyword": "from a keyword capture",
    "inference": "inferred by your agent — not your words, check it",
    "import": "imported from another machine",
}
REVIEW_WORDS = {
    "draft": "a draft, not reviewed yet",
    "proposed": "waiting for review",
    "approved": "approved, not yet published",
    "published": "reviewed and published",
    "rejected": "rejected in review",
}


@dataclass
class Entry:
    id: str
    scope: str
    scope_key: str
    type: str
    status: str
    review_state: str
    source: str
    created_at: float
    updated_at: float
    body: str
    location: str
    tags: list[str]
    project_name: str = ""
    superseded_by: str | None = None

    def to_json(self, now: float | None = None) -> dict[str, object]:
        """No file path: the document is meant to be handed to an agent (D70)."""
        return {
            "id": self.id,
            "scope": self.scope,
            "scope_key": self.scope_key,
            "project": self.project_name,
            "type": self.type,
            "status": self.status,
            "review_state": self.review_state,
            "source": self.source,
            "provenance": provenance(self, now),
            "location": self.location,
            "created_at": format_time(self.created_at),
            "updated_at": format_time(self.updated_at),
            "tags": self.tags,
            "content": self.body,
        }


@dataclass
class History:
    """Memories a listing does not show as current: counted always, listed only for the
    HTML report's folded section (``entries``)."""

    superseded: int = 0
    retracted: int = 0
    archived: int = 0
    entries: list[Entry] = field(default_factory=list)

    @property
    def total(self) -> int:
        return self.superseded + self.retracted + self.archived

    def add(self, other: History) -> None:
        self.superseded += other.superseded
        self.retracted += other.retracted
        self.archived += other.archived
        self.entries.extend(other.entries)

    def to_json(self) -> dict[str, int]:
        return {"superseded": self.superseded, "retracted": self.retracted, "archived": self.archived}

    def line(self, how: str) -> str:
        return (f"Not shown: {self.superseded} superseded version(s), {self.retracted} retracted, "
                f"{self.archived} archived — {how}")  # fmt: skip


@dataclass
class Section:
    heading: str
    scope_key: str
    entries: list[Entry]
    total: int
    kind: str = "project"  # personal | project (its repo folder) | outbox
    title: str = ""  # the heading in plain words, for reports
    history: History = field(default_factory=History)

    @property
    def not_shown(self) -> int:
        """Current memories cut by the limit (always disclosed)."""
        return self.total - len(self.entries)

    @property
    def hidden(self) -> int:
        """The older name of ``not_shown`` (the MCP ``memory_list`` reads it)."""
        return self.not_shown


@dataclass
class Listing:
    sections: list[Section] = field(default_factory=list)
    limit: int | None = DEFAULT_LIMIT
    generated_at: float = field(default_factory=time.time)

    @property
    def history(self) -> History:
        total = History()
        for section in self.sections:
            total.add(section.history)
        return total

    def numbered(self) -> list[tuple[int, Section, Entry]]:
        """Every shown entry with its number: one numbering across sections (D70)."""
        out: list[tuple[int, Section, Entry]] = []
        for section in self.sections:
            for entry in section.entries:
                out.append((len(out) + 1, section, entry))
        return out

    def to_json(self) -> dict[str, object]:
        return {
            "sections": [
                {
                    "heading": s.heading.lstrip("# "),
                    "scope_key": s.scope_key,
                    "total": s.total,
                    "shown": len(s.entries),
                    "hidden": s.history.to_json(),
                    "memories": [e.to_json(self.generated_at) for e in s.entries],
                }
                for s in self.sections
            ]
        }


@dataclass(frozen=True)
class Group:
    """What one section reads: these folders, minus ids that ``shadowed_by`` holds (an id
    in both the outbox and the repo is shown once, as the repo copy)."""

    heading: str
    scope_key: str
    folders: list[Folder]
    kind: str = "project"
    title: str = ""
    shadowed_by: list[Folder] = field(default_factory=list)


def _check(type: str | None, include: str) -> None:
    if type is not None and type not in TYPES:
        raise UsageError(f"unknown type {type!r} — use one of: {', '.join(TYPES)}")
    if include not in ("active", "all"):
        raise UsageError(f"unknown --include {include!r} — use active or all")


def list_memories(
    ctx: Context, scope: str = "project", type: str | None = None, limit: int = DEFAULT_LIMIT, include: str = "active"
) -> Listing:
    """``list`` and ``memory_list``: newest first, ``limit`` per section."""
    _check(type, include)
    limit = check_limit(limit, MAX_LIMIT)
    freshness.sync(ctx, scope)
    groups: list[Group] = []
    if scope in ("personal", "both", "all"):
        groups.append(Group(PERSONAL_HEADING, PERSONAL_KEY, ctx.folders("personal"), "personal"))
    if scope in ("project", "both"):
        groups.append(Group(f"## This project ({ctx.project.name})", ctx.project.key, ctx.folders("project")))
    if scope == "all":  # this project always (its memories may live in the repository alone), then the rest
        groups.append(Group(f"## Project {ctx.project.key}", ctx.project.key, ctx.folders("project")))
        for key in ctx.scope_keys_on_disk():
            if key not in (PERSONAL_KEY, ctx.project.key):
                groups.append(Group(f"## Project {key}", key, [ctx.folder_for_key(key)]))
    return collect(ctx.conn, groups, type=type, limit=limit, include=include)


def inventory(ctx: Context, scope: str = "both", type: str | None = None, history_entries: bool = False) -> Listing:
    """``inventory``: everything current, in sections a person reads — about you, this
    project's repo folder, and what is not in the repo yet (the outbox) — no limit."""
    _check(type, "active")
    if scope not in ("project", "personal", "both", "all"):
        raise UsageError(f"unknown scope {scope!r} — use one of: project, personal, both, all")
    freshness.sync(ctx, scope)
    repo = [f for f in ctx.folders("project") if f.location == "repo"]
    outbox = [f for f in ctx.folders("project") if f.location == "outbox"]
    name = ctx.project.name
    groups: list[Group] = []
    if scope in ("personal", "both", "all"):
        title = "About you — personal (never leaves this machine)"
        groups.append(Group(f"## {title}", PERSONAL_KEY, ctx.folders("personal"), "personal", title))
    if scope in ("project", "both", "all"):
        title = f"Project: {name}"
        groups.append(Group(f"## {title}", ctx.project.key, repo, "project", title))
        title = "Not in the repo yet — outbox drafts"
        groups.append(Group(f"## {title}", ctx.project.key, outbox, "outbox", title, shadowed_by=repo))
    if scope == "all":
        for key in ctx.scope_keys_on_disk():
            if key in (PERSONAL_KEY, ctx.project.key):
                continue
            title = f"Not in a repo yet — outbox of {project_name_of(key)}"
            groups.append(Group(f"## {title}", key, [ctx.folder_for_key(key)], "outbox", title))
    return collect(ctx.conn, groups, type=type, limit=None, include="active", history_entries=history_entries)


def project_name_of(key: str) -> str:
    """``widgets`` from ``project__widgets__1a2b3c4d5e6f``."""
    parts = key.split("__")
    return parts[1] if len(parts) == 3 else key


def collect(conn: sqlite3.Connection, groups: list[Group], *, type: str | None, limit: int | None,
            include: str, history_entries: bool = False) -> Listing:  # fmt: skip
    listing = Listing(limit=limit)
    for group in groups:
        entries, total, history = _query(conn, group, type, limit, include, history_entries)
        listing.sections.append(Section(group.heading, group.scope_key, entries, total, group.kind,
                                        group.title or group.heading.lstrip("# "), history))  # fmt: skip
    return listing


def _query(
    conn: sqlite3.Connection, group: Group, type: str | None, limit: int | None, include: str, history_entries: bool
) -> tuple[list[Entry], int, History]:
    if not group.folders:
        return [], 0, History()
    dirs = [str(f.path) for f in group.folders]
    where = f"dir IN ({placeholders(dirs)})"
    params: list[object] = list(dirs)
    if type is not None:
        where += " AND type = ?"
        params.append(type)
    if group.shadowed_by:
        shadow = [str(f.path) for f in group.shadowed_by]
        where += f" AND id NOT IN (SELECT id FROM memories WHERE dir IN ({placeholders(shadow)}))"
        params.extend(shadow)
    history = History()
    shown = where
    if include == "active":
        shown = f"{where} AND {CURRENT_SQL}"
        history = _history(conn, where, params, history_entries)
    total = conn.execute(f"SELECT COUNT(DISTINCT id) FROM memories WHERE {shown}", params).fetchone()[0]
    cap, bound = (" LIMIT ?", [limit * 2]) if limit is not None else ("", [])
    order = "ORDER BY updated_at DESC, id DESC"
    if cap:  # the newest rows chosen first, then read whole: a row's text is inflated only if listed
        query = f"SELECT * FROM memories WHERE rowid IN (SELECT rowid FROM memories WHERE {shown} {order}{cap}) {order}"
    else:
        query = f"SELECT * FROM memories WHERE {shown} {order}"
    rows = conn.execute(query, [*params, *bound]).fetchall()
    entries = _dedupe(rows)
    return (entries[:limit] if limit is not None else entries), total, history


def _history(conn: sqlite3.Connection, where: str, params: list[object], with_entries: bool) -> History:
    hidden = f"{where} AND NOT {CURRENT_SQL}"
    counts = dict(conn.execute(
        f"SELECT status, COUNT(DISTINCT id) FROM memories WHERE {hidden} GROUP BY status", params
    ).fetchall())  # fmt: skip
    history = History(counts.get("superseded", 0), counts.get("retracted", 0), counts.get("archived", 0))
    if with_entries:
        rows = conn.execute(f"SELECT * FROM memories WHERE {hidden} ORDER BY updated_at DESC, id DESC", params)
        history.entries = _dedupe(rows.fetchall())
    return history


def _dedupe(rows: list[sqlite3.Row]) -> list[Entry]:
    """One entry per id, the repo copy first, newest first."""
    entries: list[Entry] = []
    seen: set[str] = set()
    for row in sorted(rows, key=lambda r: r["location"] != "repo"):
        if row["id"] in seen:
            continue
        seen.add(row["id"])
        entries.append(_entry(row))
    entries.sort(key=lambda e: (-e.updated_at, e.id))
    return entries


def _entry(row: sqlite3.Row) -> Entry:
    return Entry(
        id=row["id"],
        scope=row["scope"],
        scope_key=row["scope_key"],
        type=row["type"],
        status=row["status"],
        review_state=row["review_state"],
        source=row["source"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        body=row["content"],
        location=row["location"],
        tags=split_tags(row["tags"]),
        project_name=row["project_name"],
        superseded_by=row["superseded_by"],
    )


def age_token(then: float, now: float | None = None) -> str:
    """``now``, ``5m``, ``3h``, ``12d``, then a plain date once older than 30 days."""
    delta = (time.time() if now is None else now) - then
    if delta < 60:
        return "now"
    if delta < 3600:
        return f"{int(delta // 60)}m"
    if delta < 86400:
        return f"{int(delta // 3600)}h"
    if delta < 30 * 86400:
        return f"{int(delta // 86400)}d"
    return format_time(then)[:10]


def relative_time(then: float, now: float | None = None) -> str:
    """``just now``, ``5 minutes ago``, ``3 days ago``, then ``on 2026-01-31``."""
    delta = (time.time() if now is None else now) - then
    for size, unit in ((30 * 86400, None), (86400, "day"), (3600, "hour"), (60, "minute")):
        if delta >= size:
            if unit is None:
                return f"on {format_time(then)[:10]}"
            count = int(delta // size)
            return f"{count} {unit}{'' if count == 1 else 's'} ago"
    return "just now"


def provenance(entry: Entry, now: float | None = None) -> str:
    """Where a memory came from and when, in plain words: ``saved 3 days ago, from a
    keyword capture``; a later change is named when it came more than a day after."""
    how = SOURCE_WORDS.get(entry.source, f"source {entry.source}")
    text = f"saved {relative_time(entry.created_at, now)}, {how}"
    if entry.updated_at - entry.created_at > 86400:
        text += f"; changed {relative_time(entry.updated_at, now)}"
    return text


def review_words(entry: Entry) -> str:
    """The review state in plain words; personal memories have none worth saying."""
    if entry.scope == "personal":
        return ""
    return REVIEW_WORDS.get(entry.review_state, entry.review_state)


def entry_line(number: int, entry: Entry, now: float | None = None) -> str:
    parts = [f"{number}. [{entry.type}] id={entry.id} created={age_token(entry.created_at, now)} source={entry.source}"]
    if entry.updated_at - entry.created_at > 86400:
        parts.append(f"updated={age_token(entry.updated_at, now)}")
    if entry.scope != "personal":
        parts.append(f"[{entry.review_state}]")
    if entry.status != "active":
        parts.append(f"[{entry.status}]")
    body = normalize_ws(entry.body)
    if len(body) > BODY_CHARS:
        body = body[: BODY_CHARS - 3] + "..."
    return " ".join(parts) + f" — {body}"


def render(listing: Listing, now: float | None = None) -> str:
    lines: list[str] = []
    number = 0
    many = len(listing.sections) > 1
    for section in listing.sections:
        if many or section.scope_key != PERSONAL_KEY:
            lines.append(section.heading)
        if not section.entries:
            lines.append("(nothing remembered in this scope yet)" if many else f"(no memories in {section.scope_key})")
        for entry in section.entries:
            number += 1
            lines.append(entry_line(number, entry, now))
        if section.not_shown > 0:
            lines.append(
                f"… and {section.not_shown} more not shown (raise --limit up to {MAX_LIMIT}, "
                "or use `open-memex search`)"
            )
        if many:
            lines.append("")
    history = listing.history
    if history.total:
        lines.append(history.line("shown with --include all"))
    return "\n".join(lines).rstrip("\n")
