"""Listing what is remembered (D68, D70): numbered structured lines, one numbering across
sections, truncation always disclosed."""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass, field

from . import freshness
from .context import Context
from .errors import UsageError
from .ids import format_time
from .index import Folder, split_tags
from .lifecycle import stranded_sql
from .model import TYPES
from .search import check_limit
from .text import normalize_ws

DEFAULT_LIMIT = 20
MAX_LIMIT = 100
BODY_CHARS = 240
PERSONAL_HEADING = "## About you (personal — stays on this machine, applies everywhere)"


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

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "scope": self.scope,
            "scope_key": self.scope_key,
            "type": self.type,
            "status": self.status,
            "review_state": self.review_state,
            "source": self.source,
            "location": self.location,
            "created_at": format_time(self.created_at),
            "updated_at": format_time(self.updated_at),
            "tags": self.tags,
            "content": self.body,
        }


@dataclass
class Section:
    heading: str
    scope_key: str
    entries: list[Entry]
    total: int

    @property
    def hidden(self) -> int:
        return self.total - len(self.entries)


@dataclass
class Listing:
    sections: list[Section] = field(default_factory=list)
    limit: int = DEFAULT_LIMIT

    def to_json(self) -> dict[str, object]:
        return {
            "sections": [
                {
                    "heading": s.heading.lstrip("# "),
                    "scope_key": s.scope_key,
                    "total": s.total,
                    "shown": len(s.entries),
                    "memories": [e.to_json() for e in s.entries],
                }
                for s in self.sections
            ]
        }


def list_memories(
    ctx: Context, scope: str = "project", type: str | None = None, limit: int = DEFAULT_LIMIT, include: str = "active"
) -> Listing:
    if type is not None and type not in TYPES:
        raise UsageError(f"unknown type {type!r} — use one of: {', '.join(TYPES)}")
    if include not in ("active", "all"):
        raise UsageError(f"unknown --include {include!r} — use active or all")
    limit = check_limit(limit, MAX_LIMIT)
    freshness.sync(ctx, scope)
    listing = Listing(limit=limit)
    groups: list[tuple[str, str, list[Folder]]] = []
    if scope in ("personal", "both", "all"):
        groups.append((PERSONAL_HEADING, "personal", ctx.folders("personal")))
    if scope in ("project", "both"):
        groups.append((f"## This project ({ctx.project.name})", ctx.project.key, ctx.folders("project")))
    if scope == "all":
        for key in ctx.scope_keys_on_disk():
            if key == "personal":
                continue
            folders = [ctx.folder_for_key(key)]
            if key == ctx.project.key:
                folders = ctx.folders("project")
            groups.append((f"## Project {key}", key, folders))
    for heading, key, folders in groups:
        entries, total = _query(ctx.conn, folders, type, limit, include)
        listing.sections.append(Section(heading, key, entries, total))
    return listing


def _query(
    conn: sqlite3.Connection, folders: list[Folder], type: str | None, limit: int, include: str
) -> tuple[list[Entry], int]:
    dirs = [str(f.path) for f in folders]
    where = f"dir IN ({','.join('?' for _ in dirs)})"
    params: list[object] = list(dirs)
    if type is not None:
        where += " AND type = ?"
        params.append(type)
    if include == "active":
        # a superseded memory whose successor is gone is the head of what is left (lifecycle)
        where += f" AND (status IN ('active', 'deprecated') OR {stranded_sql('memories')})"
    total = conn.execute(f"SELECT COUNT(DISTINCT id) FROM memories WHERE {where}", params).fetchone()[0]
    rows = conn.execute(
        f"SELECT * FROM memories WHERE {where} ORDER BY updated_at DESC, id DESC LIMIT ?", [*params, limit * 2]
    ).fetchall()
    entries: list[Entry] = []
    seen: set[str] = set()
    for row in sorted(rows, key=lambda r: r["location"] != "repo"):
        if row["id"] in seen:
            continue
        seen.add(row["id"])
        entries.append(_entry(row))
    entries.sort(key=lambda e: (-e.updated_at, e.id), reverse=False)
    return entries[:limit], total


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
        if many or section.scope_key != "personal":
            lines.append(section.heading)
        if not section.entries:
            lines.append("(nothing remembered in this scope yet)" if many else f"(no memories in {section.scope_key})")
        for entry in section.entries:
            number += 1
            lines.append(entry_line(number, entry, now))
        if section.hidden > 0:
            lines.append(
                f"… and {section.hidden} more not shown (raise --limit up to {MAX_LIMIT}, "
                "or use `open-memex search`)"
            )
        if many:
            lines.append("")
    return "\n".join(lines).rstrip("\n")
