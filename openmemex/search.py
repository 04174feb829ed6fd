"""Search (design §7, D30, D56, D57): bm25 over FTS5, lifecycle, review tiers, explain."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field

from . import freshness
from .context import Context
from .errors import UsageError
from .index import placeholders, split_tags
from .lifecycle import newest_in_chain, replacement_missing
from .model import HIDDEN_STATUSES, TYPES
from .text import build_query, check_text, normalize_ws

DEFAULT_LIMIT = 8
MAX_LIMIT = 50
# bm25 column weights: content, tags, aliases, type, cjk. Tags and aliases are
# deliberate retrieval hints (D39, D61), so a hit there counts for more than one in prose.
WEIGHTS = (1.0, 2.0, 1.5, 0.5, 1.0)
IMPORTANCE_FACTOR = {"high": 1.25, "normal": 1.0, "low": 0.8}


@dataclass
class Hit:
    id: str
    scope: str
    scope_key: str
    type: str
    status: str
    review_state: str
    score: float
    snippet: str
    tags: list[str]
    location: str
    path: str
    matched_via: str  # body | tags | alias | type | cjk
    tier: int = 1

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "scope": self.scope,
            "scope_key": self.scope_key,
            "type": self.type,
            "status": self.status,
            "review_state": self.review_state,
            "score": round(self.score, 4),
            "snippet": self.snippet,
            "tags": self.tags,
        }


@dataclass
class SearchResult:
    query: str
    expression: str
    hits: list[Hit]
    candidates: int = 0
    hidden_superseded: int = 0
    hidden_retracted: int = 0
    scopes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        return {"query": self.query, "hits": [h.to_json() for h in self.hits]}


def tier(location: str, scope: str, review_state: str, status: str) -> int:
    """D30: reviewed project knowledge first, personal and proposed next, project drafts
    and rejections last; deprecated after everything, kept as a warning."""
    if status == "deprecated":
        return 3
    if scope == "personal":
        return 1
    if review_state in ("approved", "published"):
        return 0
    if review_state in ("draft", "rejected"):
        return 2
    return 1


def check_limit(limit: int, maximum: int) -> int:
    if limit < 1:
        raise UsageError(f"--limit must be at least 1 (got {limit})")
    return min(limit, maximum)


def search(ctx: Context, query: str, scope: str = "both", type: str | None = None, limit: int = DEFAULT_LIMIT,
           explain: bool = False) -> SearchResult:  # fmt: skip
    """The best hits for ``query``. Ranked by FTS5 itself (its ``rank`` column with our bm25
    weights), so the join to ``memories`` stops at the over-fetch limit instead of scoring
    and sorting every match; what lifecycle hid is counted only for ``explain``."""
    if type is not None and type not in TYPES:
        raise UsageError(f"unknown type {type!r} — use one of: {', '.join(TYPES)}")
    check_text(query, "the search query")
    limit = check_limit(limit, MAX_LIMIT)
    folders = ctx.folders(scope)
    freshness.sync(ctx, scope)
    expression = build_query(query)
    result = SearchResult(query, expression, [], scopes=[str(f.path) for f in folders])
    if not expression:
        return result
    dirs = [str(f.path) for f in folders]
    marks = placeholders(dirs)
    params: list[object] = [expression, *dirs]
    type_clause = ""
    if type is not None:
        type_clause = " AND m.type = ?"
        params.append(type)
    overfetch = min(3 * limit + 10, 150)
    params.append(overfetch)
    weights = ", ".join(str(w) for w in WEIGHTS)
    hidden_clause = "m.status IN ('retracted', 'archived')"
    if explain:
        result.hidden_retracted = ctx.conn.execute(
            f"SELECT COUNT(*) FROM memories_fts JOIN memories m ON m.rowid = memories_fts.rowid "
            f"WHERE memories_fts MATCH ? AND m.dir IN ({marks}){type_clause} AND {hidden_clause}",
            params[:-1],
        ).fetchone()[0]
    rows = ctx.conn.execute(
        f"SELECT m.*, memories_fts.rank AS rank, "
        f"snippet(memories_fts, 0, '[', ']', ' … ', 12) AS snip, "
        f"highlight(memories_fts, 1, '\x01', '\x02') AS tag_hl, "
        f"highlight(memories_fts, 2, '\x01', '\x02') AS alias_hl "
        f"FROM memories_fts JOIN memories m ON m.rowid = memories_fts.rowid "
        f"WHERE memories_fts MATCH ? AND memories_fts.rank MATCH 'bm25({weights})' "
        f"AND m.dir IN ({marks}){type_clause} AND NOT {hidden_clause} "
        f"ORDER BY memories_fts.rank LIMIT ?",
        params,
    ).fetchall()
    result.candidates = len(rows) + result.hidden_retracted
    by_id: dict[str, sqlite3.Row] = {}
    for row in rows:
        by_id.setdefault(row["id"], row)
    seen: set[str] = set()
    hits: list[Hit] = []
    for row in rows:
        target = row
        if row["status"] == "superseded":
            target = newest_in_chain(ctx.conn, dict(by_id), row, dirs)
            if target["id"] != row["id"]:
                result.hidden_superseded += 1
            if target["status"] in HIDDEN_STATUSES:
                continue
            if _replaced_elsewhere(ctx, target, dirs):
                continue  # its replacement lives outside this scope (e.g. the repo, seen from outside)
            if type is not None and target["type"] != type:
                continue
        if target["id"] in seen:
            continue
        seen.add(target["id"])
        hits.append(_hit(target, row))
    hits.sort(key=lambda h: (h.tier, -h.score))
    result.hits = hits[:limit]
    return result


def _replaced_elsewhere(ctx: Context, row: sqlite3.Row, dirs: list[str]) -> bool:
    """A chain that stopped here because its next member is outside ``dirs`` but exists
    (a cycle or a truly missing successor still shows the memory: never hide knowledge)."""
    nxt = row["superseded_by"]
    if row["status"] != "superseded" or not nxt:
        return False
    inside = ctx.conn.execute(
        f"SELECT 1 FROM memories WHERE id = ? AND dir IN ({placeholders(dirs)}) LIMIT 1", [nxt, *dirs]
    ).fetchone()
    return inside is None and not replacement_missing(ctx.conn, nxt)


def _hit(target: sqlite3.Row, matched: sqlite3.Row) -> Hit:
    score = -float(matched["rank"]) * IMPORTANCE_FACTOR.get(target["importance"], 1.0)
    if target["id"] == matched["id"] and "[" in (matched["snip"] or ""):
        snippet = normalize_ws(matched["snip"])
    else:
        snippet = normalize_ws(target["content"])[:160]
    via = "body"
    if "\x01" in (matched["alias_hl"] or ""):
        via = "alias"
        snippet += f" (aka: {matched['aliases']})"
    elif "\x01" in (matched["tag_hl"] or ""):
        via = "tags"
    elif "[" not in (matched["snip"] or ""):
        via = "cjk" if matched["cjk"] else "type"
    tags = split_tags(target["tags"])
    return Hit(
        id=target["id"],
        scope=target["scope"],
        scope_key=target["scope_key"],
        type=target["type"],
        status=target["status"],
        review_state=target["review_state"],
        score=score,
        snippet=snippet,
        tags=tags,
        location=target["location"],
        path=target["file_path"],
        matched_via=via,
        tier=tier(target["location"], target["scope"], target["review_state"], target["status"]),
    )


def state_tag(hit_scope: str, review_state: str, status: str) -> str:
    """``[draft]``-style tags; personal memories are never tagged with a review state (D30)."""
    parts = []
    if hit_scope != "personal":
        parts.append(f"[{review_state}]")
    if status not in ("active",):
        parts.append(f"[{status}]")
    return " ".join(parts)
