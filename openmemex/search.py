"""Search (design §7, D30, D56, D57, D80, D81): bm25 over FTS5 with D80 expansions in
their own column, D81 alias rounds, an optional embeddings lane, lifecycle, review tiers
as a bounded preference, explain."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from . import aliases, expansions, freshness
from .context import Context
from .errors import UsageError
from .expansions import MAX_EXPANSIONS, ablated
from .index import generation as index_generation
from .index import placeholders, read_snapshot, split_tags
from .index_schema import FTS_COLUMNS, LEAN_COLUMNS, TOKENIZE, words_apart, words_together
from .lifecycle import newest_in_chain, replacement_missing
from .lookup import LOCATION_RANK
from .model import HIDDEN_STATUSES, TYPES
from .text import build_query, check_text, identifiers, normalize_ws, query_phrases

# A memory's row: the ``memories`` view's (sqlite3.Row), or a lean one read for ranking (a dict)
Row: TypeAlias = "sqlite3.Row | dict[str, Any]"
DEFAULT_LIMIT = 8
MAX_LIMIT = 50
# bm25 column weights: content, tags, aliases, expansions, type, cjk. Tags and aliases are
# deliberate retrieval hints (D39, D61), so a hit there counts for more than one in prose;
# derived expansions count for less than the words the memory itself uses (D83).
WEIGHTS = (1.0, 2.0, 1.5, 0.75, 0.5, 1.0, 0.75)  # … and cjk_expansions
IMPORTANCE_FACTOR = {"high": 1.25, "normal": 1.0, "low": 0.8}
# D30 as a preference, never a wall (issue 10): the final score is the relevance (each
# round's bm25 normalised to its best) times the tier's prior, so reviewed knowledge wins
# among comparably relevant hits, while a draft or personal memory that is clearly more
# relevant (by more than the ratio of the priors) still ranks above a weak reviewed one.
# Chosen on benchmarks/retrieval (README there): strict tiers lose a third of MRR; a draft
# prior anywhere in 0.85-0.95 measured the same and 0.7-0.8 one query worse at R@5.
TIER_PRIOR = {0: 1.0, 1: 0.9, 2: 0.85, 3: 0.5}
TIER_NAMES = {0: "reviewed", 1: "personal/proposed", 2: "draft", 3: "deprecated"}
# How FTS5 marks the matched words of a snippet, shown as [ ]: a "[" in the memory's own text
# is not a mark (the snippet of a row only its grams or concept tokens matched has none).
MARK_OPEN, MARK_CLOSE = "\x02", "\x03"


@dataclass
class Hit:
    id: str
    scope: str
    scope_key: str
    type: str
    status: str
    review_state: str
    score: float  # the final ranking score: relevance × tier prior
    snippet: str
    tags: list[str]
    location: str
    path: str
    matched_via: str  # body | tags | alias | synonym | type | cjk | vector
    tier: int = 1
    bm25: float = 0.0  # raw bm25 (negated, × importance) in the round that found it best
    relevance: float = 0.0  # normalised to the best hit of its round (1.0) before the tier prior
    lane: str = "bm25"  # bm25 | vector | both (recall receipt, design §7)
    vector: float | None = None  # cosine similarity when the vector lane saw it
    round: str = ""  # the D81 rewrite that found it best ("" for the query as typed)
    rounds: int = 1
    synonyms: list[str] = field(default_factory=list)
    reason: str = ""

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
            "lane": self.lane,
            "matched_via": self.matched_via,
            "tier": self.tier,
            "bm25": round(self.bm25, 4),
            **({"vector": round(self.vector, 4)} if self.vector is not None else {}),
            **({"synonyms": self.synonyms} if self.synonyms else {}),
            **({"alias_round": self.round} if self.round else {}),
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
    rewrites: list[str] = field(default_factory=list)  # D81 rounds, "a → b"
    left_out: list[str] = field(default_factory=list)  # concept tokens bm25 gives no weight ("token (group)")
    lanes: list[str] = field(default_factory=lambda: ["bm25"])
    rule: str = ""

    def to_json(self) -> dict[str, object]:
        return {"query": self.query, "hits": [h.to_json() for h in self.hits], "lanes": self.lanes}


def tier(location: str, scope: str, review_state: str, status: str) -> int:
    """D30: reviewed project knowledge first, personal and proposed next, project drafts
    and rejections last; deprecated after those, kept as a warning."""
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


@dataclass
class _Candidate:
    row: Row
    relevance: float
    bm25: float
    rounds: int
    round: str
    lane: str = "bm25"
    vector: float | None = None
    expression: str = ""  # the round's FTS5 expression that found it (its snippet is marked by it)
    marks: tuple[str, str, str] | None = None  # snippet, tag and alias highlights: shown hits only


def search(ctx: Context, query: str, scope: str = "both", type: str | None = None, limit: int = DEFAULT_LIMIT,
           explain: bool = False, embeddings: bool | None = None) -> SearchResult:  # fmt: skip
    """The best hits for ``query``. Each round (the query as typed, then up to two D81
    alias rewrites) is ranked by FTS5 itself (its ``rank`` column with our bm25 weights, so
    the join stops at the over-fetch limit); rounds merge by normalised best score, the
    vector lane (when on) is fused with it (half each, both normalised), then lifecycle
    resolves chains and the tier prior orders comparably relevant hits. ``embeddings``
    overrides the config."""
    if type is not None and type not in TYPES:
        raise UsageError(f"unknown type {type!r} — use one of: {', '.join(TYPES)}")
    check_text(query, "the search query")
    limit = check_limit(limit, MAX_LIMIT)
    folders = ctx.folders(scope)
    freshness.sync(ctx, scope)
    expression = _expression(query)
    result = SearchResult(query, expression, [], scopes=[str(f.path) for f in folders], rule=_rule())
    if not expression:
        return result
    dirs = [str(f.path) for f in folders]
    overfetch = min(3 * limit + 10, 150)
    model = _vector_model(ctx, embeddings)
    with_aliases = not ablated("no-aliases")
    concepts = expansions.current().tokens(query)
    own_snapshot = not ctx.conn.in_transaction
    # each round ranks, then looks its rows up, and the texts of the few shown are read last:
    # one view of the index for all (a row read later is the version that was ranked)
    with read_snapshot(ctx.conn):  # a row looked up after ranking is the version that was ranked
        # what the registry and the lane's vectors read is kept while no row changes: one read
        # in the snapshot says (its own read lock is taken here)
        generation = index_generation(ctx.conn, ctx.root, snapshot=True) \
            if own_snapshot and (with_aliases or model is not None or concepts) else None  # fmt: skip
        pending = None
        if model is not None:
            from .embeddings import ready, start

            if own_snapshot and not ready(model, generation):
                # the lane makes its vectors current first, which writes: outside any transaction
                ctx.conn.execute("COMMIT")  # (nothing read yet but the generation)
                pending = start(ctx, model, query, dirs, type, 2 * limit + 4)
                ctx.conn.execute("BEGIN")
                generation = index_generation(ctx.conn, ctx.root, snapshot=True)
            else:
                pending = start(ctx, model, query, dirs, type, 2 * limit + 4, generation,  # runs while bm25 does
                                writes=not own_snapshot)  # fmt: skip
        rewrites = aliases.rounds(query, aliases.registry(ctx.conn, dirs, generation)) if with_aliases else []
        result.rewrites = [r.label() for r in rewrites]
        expressions, round_rows = [], []
        for text in (query, *(r.text for r in rewrites)):
            used, rows, left_out = _round(ctx, text, dirs, type, overfetch, generation, lean_ok=not rewrites)
            expressions.append(used)
            round_rows.append(rows)
            if left_out:
                result.left_out = list(dict.fromkeys([*result.left_out, *(t for t in _named(text)
                                                                           if t.split(" ", 1)[0] in left_out)]))  # fmt: skip
        result.expression = expressions[0]
        if explain:  # over the whole expression: what a left-out token reaches is hidden too
            result.hidden_retracted = _hidden_count(ctx, expression, dirs, type)
        candidates = _merge(round_rows, ["", *(r.label() for r in rewrites)], expressions)
        words = identifiers(query)
        if words and not ablated("no-literal"):
            _complete(ctx, [c.row for c in candidates], _TEXTS)
        _literal_bonus(candidates, words)
        near = pending() if pending is not None else None
        if model is not None and near is not None:
            from .embeddings import fuse

            def lane_rows(ids: list[int]) -> list[Row]:
                kept = pending.rows(ids, generation) if pending is not None else None
                return visible_rows(ctx, ids, dirs, type) if kept is None else list(kept)

            candidates = fuse(ctx, model, candidates, near, _Candidate, lane_rows)
            result.lanes = ["bm25", f"vector:{model}"]
        result.candidates = len(candidates) + result.hidden_retracted
        resolved = _resolve(ctx, candidates, dirs, type, result, {})
        shown = _order(resolved)[:limit]
        preferred: dict[str, Row] = {}
        for _ in range(3):  # an id held twice is shown as the copy `show` reads (rare: resolved again)
            more = _preferred_copies(ctx, [target["id"] for target, _ in shown if target["id"] not in preferred], dirs)
            if not more:
                break
            preferred.update(more)
            result.hidden_superseded = 0
            resolved = _resolve(ctx, candidates, dirs, type, result, preferred)
            shown = _order(resolved)[:limit]
        _complete(ctx, [row for target, cand in shown for row in (target, cand.row)])
    asked = expansions.current().matched_members(query)
    _mark(ctx, [cand for _, cand in shown])
    result.hits = [_hit(target, cand, asked) for target, cand in shown]
    _explain_order(result.hits, resolved)
    return result


def _expression(text: str, without: frozenset[str] = frozenset()) -> str:
    """``build_query``, plus the D80 concept tokens of the groups ``text`` uses (but
    ``without``), asked of the ``expansions`` column only (a memory may hold a token's
    spelling in its own text: a pasted ``--explain`` line). The words need no column filter:
    no typed word or prefix reaches a concept token (``expansions.TOKEN``; ``build_query``
    keeps a word starting with its Greek letter from that column)."""
    expression = build_query(text)
    if not expression:
        return expression
    tokens = [t for t in expansions.current().tokens(text) if t not in without]
    return f"({expression}) OR expansions:({' OR '.join(tokens)})" if tokens else expression


def _named(text: str) -> list[str]:
    """``text``'s concept tokens as ``--explain`` names them: "token (the group's first member)"."""
    found = expansions.current()
    return [f"{found.token_of(gi)} ({found.groups[gi][0]})" for gi in found.matched_groups(text)[:MAX_EXPANSIONS]]


def _round(ctx: Context, text: str, dirs: list[str], type: str | None, overfetch: int,
           generation: tuple[str, str, int] | None, lean_ok: bool) -> tuple[str, list[tuple[Row, float]], frozenset[str]]:  # fmt: skip
    """One round's expression, its ranked rows and the concept tokens it left out.

    A concept token in at least half the index's rows is left out when that cannot change
    the answer: FTS5's bm25 floors the IDF of such a phrase to 1e-6, so it adds under
    ``FLOORED`` to any score (once for each time the query asks it), and the rows only it
    reaches score under that — yet scoring them was most of a common concept's cost. The
    rest of the round runs first and ``_settle`` makes the whole round's answer of it: the
    tokens' terms added to its rows as FTS5 adds them, ties ordered as it orders them. Where
    it cannot tell (rows past the rest's may rank in), the round runs whole, and the same
    round in the same index generation runs whole at once.

    It runs whole from the start where the rest would often not settle it or its counts may
    be stale: unless ``lean_ok`` (no alias round: a hit's round is credited by comparing
    rounds' normalised scores, which the floor's weight can tip); in a transaction the
    caller holds (FTS5 writes its counts at commit); for a ``type``; unless the searched
    folders hold all the index's files (a word's rows may all be elsewhere); and when none
    of the query's own phrases has weight and the rows to fill the list (``_may_settle``)."""
    tokens = expansions.current().tokens(text)
    drop: frozenset[str] = frozenset()
    whole_index = lean_ok and bool(tokens) and generation is not None and type is None
    if whole_index:
        inside, total = _scope_files(ctx, dirs)
        whole_index = inside == total > 0
    if whole_index:
        weightless = _weightless(ctx, tokens, generation)
        # only those the query asks after every token it keeps: FTS5 adds the terms in the
        # query's order, and ``_settle`` adds theirs after the rest's sum (floating-point
        # addition in another order differs in the last bit, and ties go by those bits)
        kept_last = max((i for i, t in enumerate(tokens) if t not in weightless), default=-1)
        drop = frozenset(tokens[kept_last + 1:])
    tried = None if not drop or generation is None else (*generation, text, overfetch, *dirs)
    if drop and tried not in _refused and _may_settle(ctx, text, generation, overfetch):
        lean = _expression(text, drop)
        rows = _fetch(ctx, lean, dirs, type, overfetch + _PAST)
        settled = _settle(ctx, rows, overfetch, [t for t in tokens if t in drop], len(rows) == overfetch + _PAST)
        if settled is not None:
            return lean, settled, drop
        if len(_refused) >= _DOCS_KEPT:
            _refused.clear()
        _refused.add(tried)  # the same search again in this generation runs whole at once
    whole = _expression(text)
    return whole, _fetch(ctx, whole, dirs, type, overfetch), frozenset()


# FTS5's bm25 (fts5_aux.c): k1, b, and the IDF it gives a phrase in half the rows or more.
BM25_K1, BM25_B, FLOOR_IDF = 1.2, 0.75, 1e-6
# The most such a phrase adds to a row's bm25: its term-frequency part,
# f (k1 + 1) / (f + k1 (1 - b + b d / avgdl)), stays under k1 + 1.
FLOORED = FLOOR_IDF * (BM25_K1 + 1.0)
_FTS_AVERAGES = 1  # the rowid of FTS5's averages record in ``memories_fts_data`` (its row count first)
_DOCS_KEPT = 4096  # (generation, phrase) row counts kept between searches
_docs: dict[tuple[object, ...], int] = {}
_refused: set[tuple[object, ...] | None] = set()  # (generation, text, overfetch, folders) the rest did not settle


_PAST = 16  # rows the rest ranks past the list, so a tie there can be seen to its end


def _settle(ctx: Context, rows: list[tuple[Row, float]], wanted: int, dropped: list[str],
            more: bool) -> list[tuple[Row, float]] | None:  # fmt: skip
    """The whole round's best ``wanted`` rows, from the rest's ``rows`` (best first; ``more``
    when rows past them may match) and the left-out tokens as the query asks them (a token
    asked twice counts twice), or None when they cannot be told.

    Each row's whole score is its own plus each token's floored term, worked out as FTS5's
    bm25 does (``_floored_terms``), so rows the tokens' weight would reorder — ties, above
    all — are ordered as the whole round orders them. Rows the rest did not return score at
    most the last one's plus ``FLOORED`` a token (and rows only the tokens reach, under
    that): the ``wanted``-th best must score above that, or the round runs whole."""
    if len(rows) < wanted:
        return None
    terms = _floored_terms(ctx, [int(row["rowid"]) for row, _ in rows], dropped)
    if terms is None:
        return None
    whole = []
    for row, score in rows:
        total = -score  # FTS5 adds each phrase's term to the sum, in the query's order, and negates it
        for term in terms[int(row["rowid"])]:
            total += term
        whole.append((row, -total))
    whole.sort(key=lambda pair: (pair[1], int(pair[0]["rowid"])))  # as the rest ranks: ORDER BY score, rowid
    below = (-rows[-1][1] if more else 0.0) + FLOORED * len(dropped)
    return whole[:wanted] if -whole[wanted - 1][1] > below else None


def _floored_terms(ctx: Context, rowids: list[int], dropped: list[str]) -> dict[int, list[float]] | None:
    """What the ``dropped`` tokens add to each row's bm25, computed as FTS5's bm25 computes
    a phrase's term: IDF (floored, 1e-6) × f (k1 + 1) / (f + k1 (1 - b + b D / avgdl)), with
    f the token's instances in the row's ``expansions`` column times that column's weight, D
    the row's tokens in all columns (its docsize record) and avgdl the index's (its averages
    record); k1 1.2, b 0.75, summed in the order the query asks them. None when a record
    cannot be read."""
    counts = _averages(ctx)
    if not counts or counts[0] <= 0 or sum(counts[1:]) <= 0:
        return None
    avgdl = float(sum(counts[1:])) / float(counts[0])
    listed = _rowid_list(rowids)
    sizes = {int(r[0]): r[1] for r in ctx.conn.execute(
        "SELECT id, sz FROM memories_fts_docsize WHERE id IN (SELECT value FROM json_each(?))", (listed,))}  # fmt: skip
    held = {int(r[0]): r[1] for r in ctx.conn.execute(
        f"SELECT rowid, expansions FROM memory_rows WHERE {_ROWID_IN}", (listed,))}  # fmt: skip
    codes = [expansions.compact(t) for t in dropped]
    weight, k1, b = WEIGHTS[FTS_COLUMNS.index("expansions")], BM25_K1, BM25_B
    out: dict[int, list[float]] = {}
    for rowid in rowids:
        size, column = sizes.get(rowid), held.get(rowid)
        if not isinstance(size, bytes) or not isinstance(column, bytes):
            return None
        length = float(sum(_varints(size)))
        own = [column[i:i + expansions.CODE_BYTES] for i in range(0, len(column), expansions.CODE_BYTES)]
        terms = []
        for code in codes:
            f = 0.0
            for _ in range(own.count(code)):
                f += weight
            terms.append(FLOOR_IDF * ((f * (k1 + 1.0)) / (f + k1 * (1 - b + b * length / avgdl))))
        out[rowid] = terms
    return out


def _may_settle(ctx: Context, text: str, generation: tuple[str, str, int] | None, wanted: int) -> bool:
    """Whether the rest of the round can settle it: some typed phrase has weight (is in
    under half the index) and is in ``wanted`` rows or more. A query whose every word is in
    half the index or more ranks its rows at the floor, among the left-out tokens' rows:
    trying the rest would only run the round twice. Counted like the tokens, once per
    generation, up to the first phrase that does."""
    rows = _documents(ctx, generation, None)
    for phrase in query_phrases(text):
        n = _documents(ctx, generation, phrase)
        if 2 * n < rows and n >= wanted:
            return True
    return False


def _weightless(ctx: Context, tokens: list[str], generation: tuple[str, str, int] | None) -> frozenset[str]:
    """The ``tokens`` FTS5's bm25 gives no weight: those in ``2 n >= N`` of the index's
    rows, where its IDF, log((N - n + 0.5) / (n + 0.5)), is not positive. N is FTS5's own
    count (its averages record), n the rows a token's phrase matches, as bm25 counts them.
    Kept per index generation: counting costs about 45 ns a matching row, once."""
    if not tokens:
        return frozenset()
    total = _documents(ctx, generation, None)
    return frozenset(t for t in tokens if total and 2 * _documents(ctx, generation, f"expansions:{t}") >= total)


def _documents(ctx: Context, generation: tuple[str, str, int] | None, phrase: str | None) -> int:
    """The rows ``phrase`` (an FTS5 expression) matches, or with None the index's rows."""
    key = None if generation is None else (*generation, phrase)
    kept = _docs.get(key) if key is not None else None  # (one lookup: another thread may clear it)
    if kept is not None:
        return kept
    if phrase is None:
        count = (_averages(ctx) or [0])[0]  # damaged: 0, nothing is left out, and FTS5 reports the damage
    else:
        count = int(ctx.conn.execute("SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?",
                                     (phrase,)).fetchone()[0])  # fmt: skip
    if key is not None:
        if len(_docs) >= _DOCS_KEPT:
            _docs.clear()
        _docs[key] = count
    return count


def _averages(ctx: Context) -> list[int]:
    """FTS5's averages record: the index's rows, then each column's tokens; [] when it is
    missing or not such a record (a damaged index)."""
    row = ctx.conn.execute("SELECT block FROM memories_fts_data WHERE id = ?", (_FTS_AVERAGES,)).fetchone()
    counts = _varints(row[0]) if row and isinstance(row[0], bytes) else []
    return counts if len(counts) == 1 + len(FTS_COLUMNS) else []


def _varints(data: bytes) -> list[int]:
    """Every SQLite varint in ``data`` (an FTS5 averages or docsize record), in order: 7 bits
    a byte, the high bit set to go on, the ninth byte whole."""
    out: list[int] = []
    value = used = 0
    for byte in data:
        if used == 8:
            out.append((value << 8) | byte)
            value = used = 0
            continue
        value, used = (value << 7) | (byte & 0x7F), used + 1
        if byte < 0x80:
            out.append(value)
            value = used = 0
    if used:
        out.append(value)  # cut short: what there is
    return out


def _rule() -> str:
    if ablated("tiers-strict"):
        return "strict tiers: tier first, then score (benchmark ablation)"
    if ablated("tiers-none"):
        return "score only, no tier prior (benchmark ablation)"
    priors = ", ".join(f"{TIER_NAMES[t]} {p:g}" for t, p in TIER_PRIOR.items())
    return f"final = relevance × tier prior ({priors})"


def _vector_model(ctx: Context, override: bool | None) -> str | None:
    """The embeddings model when the lane is on (config ``embeddings``, off by default, D7)."""
    if override is False:
        return None
    configured = str(ctx.config.values.get("embeddings") or "off")
    if configured == "off":
        if override:
            raise UsageError("the embeddings lane is off — turn it on with `open-memex config set embeddings "
                             "multilingual-e5-small` (or wordllama)")  # fmt: skip
        return None
    return configured


def _fetch(ctx: Context, expression: str, dirs: list[str], type: str | None,
           overfetch: int) -> list[tuple[Row, float]]:  # fmt: skip
    """The ``overfetch`` best visible rows in scope for ``expression`` with their bm25, best
    first. Rank first, filter after (issue 11): FTS5 scores its matches in SQLite's top-k
    sorter with no join (a join, or FTS5's own ``ORDER BY rank``, costs about 1 µs more per
    match, and a common query matches half the store), then only the ranked rows are looked
    up, in rank order. The ranked list is as long as the scope's share of the index needs;
    where the filter does most of the work (a small scope, a type: no count says how rare)
    or left too few, the ranked join is cheaper and gives the same answer."""
    likely, wanted = _ranked_length(ctx, dirs, overfetch)
    if type is not None or wanted > _RANK_FIRST_MAX:
        return _ranked_join(ctx, expression, dirs, type, overfetch)
    weights = ", ".join(str(w) for w in WEIGHTS)
    ranked = ctx.conn.execute(
        f"SELECT rowid, bm25(memories_fts, {weights}) AS score FROM memories_fts "
        "WHERE memories_fts MATCH ? ORDER BY score, rowid LIMIT ?",
        (expression, wanted),
    ).fetchall()
    # the rows usually enough are looked up first, the rest only if the filter left too few
    kept = _visible(ctx, ranked[:likely], dirs, type)
    if len(kept) < overfetch:
        kept += _visible(ctx, ranked[likely:], dirs, type)
    if len(kept) >= overfetch or len(ranked) < wanted:
        return kept[:overfetch]
    return _ranked_join(ctx, expression, dirs, type, overfetch)  # the filter left too few


_RANK_FIRST_MAX = 1000  # ranked rows worth looking up one by one; past it the join's early stop wins


def _ranked_join(ctx: Context, expression: str, dirs: list[str], type: str | None,
                 overfetch: int) -> list[tuple[Row, float]]:  # fmt: skip
    """FTS5's ``ORDER BY rank`` joined to the rows and filtered on the way: SQLite stops at
    the ``overfetch``-th visible row, however few of the matches are in scope."""
    weights = ", ".join(str(w) for w in WEIGHTS)
    type_clause = " AND m.type = ?" if type is not None else ""
    rows = ctx.conn.execute(
        f"SELECT m.*, memories_fts.rank AS rank FROM memories_fts JOIN memories m ON m.rowid = memories_fts.rowid "
        f"WHERE memories_fts MATCH ? AND memories_fts.rank MATCH 'bm25({weights})' "
        f"AND m.dir IN ({placeholders(dirs)}){type_clause} AND m.status NOT IN ('retracted', 'archived') "
        f"ORDER BY memories_fts.rank LIMIT ?",
        [expression, *dirs, *([type] if type is not None else []), overfetch],
    ).fetchall()
    return [(r, float(r["rank"])) for r in rows]


_LEAN = ", ".join(LEAN_COLUMNS)  # (``_complete`` reads the rest, for the shown rows and the literal bonus's)


def _visible(ctx: Context, ranked: list[tuple[int, float]], dirs: list[str],
             type: str | None) -> list[tuple[Row, float]]:  # fmt: skip
    """The rows of ``ranked`` (rowid, bm25) in ``dirs``, of ``type``, not hidden: in rank
    order, as lean dicts (``_LEAN``, ``_complete``)."""
    if not ranked:
        return []
    score = {int(r[0]): float(r[1]) for r in ranked}
    rows = visible_rows(ctx, list(score), dirs, type)
    rows.sort(key=lambda r: (score[int(r["rowid"])], int(r["rowid"])))
    return [(r, score[int(r["rowid"])]) for r in rows]


def visible_rows(ctx: Context, rowids: list[int], dirs: list[str], type: str | None) -> list[Row]:
    """``lean_rows`` of these rows that are in ``dirs``, of ``type`` and not hidden, as the
    search's view of the index has them (the lane's candidates were picked from an earlier one)."""
    type_clause = " AND +type = ?" if type is not None else ""
    return lean_rows(ctx, rowids, f" AND +dir IN ({placeholders(dirs)}){type_clause} "
                     "AND +status NOT IN ('retracted', 'archived')",  # by rowid: never a scan of the scope
                     [*dirs, *([type] if type is not None else [])])  # fmt: skip


# Rows by rowid, the rowids given as one JSON array: the statement's text stays the same, so
# sqlite3's statement cache prepares it once (a literal list made a new statement every search,
# and preparing it through the view cost more than reading the rows).
_ROWID_IN = "rowid IN (SELECT value FROM json_each(?))"


def _rowid_list(rowids: Iterable[int]) -> str:
    return f"[{','.join(str(int(r)) for r in rowids)}]"


def lean_rows(ctx: Context, rowids: list[int], where: str = "", params: list[object] | None = None) -> list[Row]:
    """The ``_LEAN`` columns of these rows (and ``where``), as dicts ``_complete`` can fill."""
    if not rowids:
        return []
    cursor = ctx.conn.cursor()
    cursor.row_factory = None
    try:
        found = cursor.execute(
            f"SELECT {_LEAN} FROM memories WHERE {_ROWID_IN}{where}", [_rowid_list(rowids), *(params or [])],
        ).fetchall()
        names = [d[0] for d in cursor.description]
    finally:
        cursor.close()
    return [dict(zip(names, r, strict=True)) for r in found]


def _complete(ctx: Context, rows: list[Row], columns: str = "*") -> None:
    """Read every column of each lean row (``_visible``) among ``rows`` — or only
    ``columns`` (the texts the literal bonus reads, for every candidate: the rest is read
    for the few shown) — in one query, as plain tuples with the names once (a
    ``sqlite3.Row``'s ``keys()`` per row took half the time)."""
    lean = {int(r["rowid"]): r for r in rows if isinstance(r, dict) and "file_path" not in r
            and (columns == "*" or "content" not in r)}  # fmt: skip
    if not lean:
        return
    cursor = ctx.conn.cursor()
    cursor.row_factory = None
    try:
        found = cursor.execute(f"SELECT {columns} FROM memories WHERE {_ROWID_IN}", (_rowid_list(lean),)).fetchall()
        names = [d[0] for d in cursor.description]
    finally:
        cursor.close()
    at = names.index("rowid")
    for values in found:
        lean[int(values[at])].update(zip(names, values, strict=True))


_TEXTS = "rowid, content, tags, aliases"  # what the literal bonus reads of every candidate


def _scope_files(ctx: Context, dirs: list[str]) -> tuple[int, int]:
    """(files in the searched folders, files in the index), as ``folder_state`` counts each
    folder's: one tiny read."""
    counts = {str(d): int(n) for d, n in ctx.conn.execute("SELECT dir, count FROM folder_state")}
    return sum(counts.get(d, 0) for d in dirs), sum(counts.values())


def _ranked_length(ctx: Context, dirs: list[str], overfetch: int) -> tuple[int, int]:
    """How many ranked matches hold ``overfetch`` in scope as the scope's share of the index
    goes: (usually enough, to rank — half as many again, and at least twice ``overfetch``)."""
    inside, total = _scope_files(ctx, dirs)
    share = inside / total if total and inside else 1.0
    likely = int((overfetch + 8) / max(share, 0.001))
    return likely, max(2 * overfetch, int(1.5 * likely))


def _hidden_count(ctx: Context, expression: str, dirs: list[str], type: str | None) -> int:
    """Retracted/archived matches, counted only for ``--explain`` (it costs a full match)."""
    params: list[object] = [expression, *dirs]
    type_clause = ""
    if type is not None:
        type_clause = " AND m.type = ?"
        params.append(type)
    count: int = ctx.conn.execute(
        f"SELECT COUNT(*) FROM memories_fts JOIN memories m ON m.rowid = memories_fts.rowid "
        f"WHERE memories_fts MATCH ? AND m.dir IN ({placeholders(dirs)}){type_clause} "
        f"AND m.status IN ('retracted', 'archived')",
        params,
    ).fetchone()[0]
    return count


def _raw(row: Row, rank: float) -> float:
    return -rank * IMPORTANCE_FACTOR.get(row["importance"], 1.0)


def _merge(round_rows: list[list[tuple[Row, float]]], labels: list[str],
           expressions: list[str]) -> list[_Candidate]:  # fmt: skip
    """One candidate per matched row, best first (D81 normalised-max merge)."""
    scores = [{int(r["rowid"]): _raw(r, rank) for r, rank in rows} for rows in round_rows]
    merged = aliases.merge(scores)
    rows_at = [{int(r["rowid"]): r for r, _ in rows} for rows in round_rows]
    out = [
        _Candidate(rows_at[where][rowid], rel, scores[where][rowid], count, labels[where], expression=expressions[where])
        for rowid, (rel, count, where) in merged.items()
    ]
    out.sort(key=lambda c: (-c.relevance, -c.rounds))
    return out


LITERAL_BONUS = 0.5


def _literal_bonus(candidates: list[_Candidate], words: list[str]) -> None:
    """Identifiers as written: FTS5 splits ``VITE_`` or ``Idempotency-Key`` into plain words
    that match everywhere, so a candidate holding the identifier verbatim gains up to half."""
    if not words or ablated("no-literal"):
        return
    for cand in candidates:
        text = " ".join((cand.row["content"], cand.row["tags"], cand.row["aliases"])).lower()
        found = sum(1 for w in words if w in text)
        cand.relevance *= 1 + LITERAL_BONUS * found / len(words)
    candidates.sort(key=lambda c: (-c.relevance, -c.rounds))


def _resolve(ctx: Context, candidates: list[_Candidate], dirs: list[str], type: str | None,
             result: SearchResult, preferred: dict[str, Row]) -> list[tuple[Row, _Candidate]]:  # fmt: skip
    """Superseded matches answer with the newest member of their chain (one hit per
    chain, the best relevance any member earned); hidden members never show. Returns
    (the memory to show, the candidate that found it), by relevance."""
    by_id: dict[str, Row] = {}
    for cand in candidates:
        by_id.setdefault(cand.row["id"], cand.row)
    seen: set[str] = set()
    out: list[tuple[Row, _Candidate]] = []
    for cand in candidates:
        if cand.row["id"] in preferred:  # shown, marked and judged as the copy `show` reads
            cand.row = preferred[cand.row["id"]]
            if cand.row["status"] in HIDDEN_STATUSES:
                continue
        row = cand.row
        target = row
        if row["status"] == "superseded":
            target = newest_in_chain(ctx.conn, by_id, row, dirs)
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
        out.append((target, cand))
    return out


def _preferred_copies(ctx: Context, ids: list[str], dirs: list[str]) -> dict[str, Row]:
    """An id held in two places (an interrupted submit leaves the outbox copy beside the
    repository's, which review may have moved on) is answered with the copy ``show`` and
    ``list`` use, whichever copy the query matched best. One indexed read of the shown ids;
    an id in one place only (the rule) costs nothing more."""
    if not ids:
        return {}
    copies = ctx.conn.execute(  # the table, not the view: each id is one probe of (id, folder)
        "SELECT id FROM memory_rows WHERE id IN (SELECT value FROM json_each(?)) GROUP BY id HAVING COUNT(*) > 1",
        (json.dumps(ids),),
    ).fetchall()
    if not copies:
        return {}
    best: dict[str, Row] = {}
    for memory_id, in copies:
        rows = ctx.conn.execute(f"SELECT rowid FROM memories WHERE id = ? AND dir IN ({placeholders(dirs)})",
                                [memory_id, *dirs]).fetchall()  # fmt: skip
        found = lean_rows(ctx, [int(r[0]) for r in rows])
        found.sort(key=lambda r: LOCATION_RANK.get(str(r["location"]), 9))
        if len(found) > 1:  # both copies in this scope
            best[memory_id] = found[0]
    return best


def _tier_of(row: Row) -> int:
    return tier(row["location"], row["scope"], row["review_state"], row["status"])


def _order(resolved: list[tuple[Row, _Candidate]]) -> list[tuple[Row, _Candidate]]:
    """The final order: relevance × tier prior (ties: better tier); strict tiers and no
    tiers are the benchmark's ablations."""
    if ablated("tiers-strict"):
        return sorted(resolved, key=lambda rc: (_tier_of(rc[0]), -rc[1].relevance))
    if ablated("tiers-none"):
        return sorted(resolved, key=lambda rc: -rc[1].relevance)
    return sorted(resolved, key=lambda rc: (-rc[1].relevance * TIER_PRIOR.get(_tier_of(rc[0]), 1.0), _tier_of(rc[0])))


def _explain_order(hits: list[Hit], resolved: list[tuple[Row, _Candidate]]) -> None:
    """Each hit's final score and the reason it stands where it does (``--explain``)."""
    by_relevance = {target["id"]: i for i, (target, _) in enumerate(resolved)}
    none = ablated("tiers-none")
    for final, hit in enumerate(hits):
        prior = 1.0 if none else TIER_PRIOR.get(hit.tier, 1.0)
        hit.score = hit.relevance * prior
        before = by_relevance[hit.id]
        why = f"relevance {hit.relevance:.3f} × {TIER_NAMES[hit.tier]} prior {prior:g}"
        if final < before:
            why += f"; up from #{before + 1} by relevance (tier preferred)"
        elif final > before:
            why += f"; down from #{before + 1} by relevance (a better tier or score ahead)"
        hit.reason = why


def _replaced_elsewhere(ctx: Context, row: Row, dirs: list[str]) -> bool:
    """A chain that stopped here because its next member is outside ``dirs`` but exists
    (a cycle or a truly missing successor still shows the memory: never hide knowledge)."""
    nxt = row["superseded_by"]
    if row["status"] != "superseded" or not nxt:
        return False
    inside = ctx.conn.execute(
        f"SELECT 1 FROM memories WHERE id = ? AND dir IN ({placeholders(dirs)}) LIMIT 1", [nxt, *dirs]
    ).fetchone()
    return inside is None and not replacement_missing(ctx.conn, nxt)


def _synonyms(row: Row, asked: dict[int, list[str]]) -> list[str]:
    """The query's words that reached ``row`` through a D80 concept rather than its own
    words — worked out for the shown hits only."""
    if not row["expansions"] or not asked:
        return []
    text = " ".join((row["content"], row["tags"], row["aliases"]))
    return expansions.current().reached(asked, expansions.spell(row["expansions"]), text)


def _mark(ctx: Context, shown: list[_Candidate]) -> None:
    """FTS5's snippet and highlights for the hits shown, and only those (issue 11: in the
    ranking query they cost a tokenisation of every ranked row; the index's FTS5 table
    keeps no text to mark). The shown rows' text, tags and aliases (the columns marked; a
    row only its other columns matched gets no marks, as before) go into a scratch FTS5
    table with the index's tokenizer, in an in-memory database of this thread's own: the
    same text (an ASCII word written against CJK set apart, as the index's ``plain`` sets
    it: ``words_apart``) under the same expression marks the same words, and the index's
    connection writes nothing (a read-only or ``query_only`` one, or one inside a
    transaction, is left as is)."""
    todo: dict[str, list[_Candidate]] = {}
    for cand in shown:
        if cand.lane != "vector" and cand.expression:
            todo.setdefault(cand.expression, []).append(cand)
    if not todo:
        return
    scratch = _scratch()
    for expression, cands in todo.items():
        scratch.execute("BEGIN")
        try:
            # the marked columns only (a row the others alone matched shows no marks), numbered
            # 1, 2, 3…: FTS5 writes rowids that do not rise (hits in relevance order) as a new
            # segment each, which took a third more time than the rows themselves
            scratch.executemany(
                "INSERT INTO marks(rowid, content, tags, aliases) VALUES (?, ?, ?, ?)",
                [(n, _unmarked(words_apart(c.row["content"])), _unmarked(c.row["tags"]), _unmarked(c.row["aliases"]))
                 for n, c in enumerate(cands, 1)],
            )
            found = {
                int(r[0]): (str(r[1] or ""), str(r[2] or ""), str(r[3] or ""))
                for r in scratch.execute(
                    f"SELECT rowid, snippet(marks, 0, '{MARK_OPEN}', '{MARK_CLOSE}', ' … ', 12), "
                    "highlight(marks, 1, '\x01', '\x02'), highlight(marks, 2, '\x01', '\x02') "
                    "FROM marks WHERE marks MATCH ?",
                    (expression,),
                )
            }
        finally:
            scratch.execute("ROLLBACK")  # empty again (cheaper than a DELETE, which re-tokenises)
        for n, cand in enumerate(cands, 1):
            cand.marks = found.get(n, ("", "", ""))


# The marks' own characters in a memory's text would read as marks: each becomes U+FFFD, one
# character for one (offsets kept), a separator to FTS5's tokenizer as the control was.
_MARK_CHARS = frozenset(("\x01", "\x02", MARK_OPEN, MARK_CLOSE))
_NO_MARKS = str.maketrans({c: "\ufffd" for c in _MARK_CHARS})


def _unmarked(text: str) -> str:
    """``text`` with the marks' characters replaced; a text holding none (nearly every one)
    is returned as it is, since ``translate`` looks each character up (a tenth of ``_mark``)."""
    for c in _MARK_CHARS:
        if c in text:
            return text.translate(_NO_MARKS)
    return text


_scratches = threading.local()


def _scratch() -> sqlite3.Connection:
    """This thread's in-memory database holding the empty ``marks`` FTS5 table (a forked
    child makes its own: SQLite connections do not cross a fork)."""
    held: tuple[int, sqlite3.Connection] | None = getattr(_scratches, "held", None)
    if held is None or held[0] != os.getpid():
        conn = sqlite3.connect(":memory:", isolation_level=None)
        conn.execute(f"CREATE VIRTUAL TABLE marks USING fts5({', '.join(FTS_COLUMNS)}, tokenize='{TOKENIZE}')")
        held = (os.getpid(), conn)
        _scratches.held = held
    return held[1]


def _hit(target: Row, cand: _Candidate, asked: dict[int, list[str]]) -> Hit:
    matched = cand.row
    marks = cand.marks
    snip = marks[0] if marks is not None else ""
    marked = MARK_OPEN in snip
    if target["id"] == matched["id"] and marked:
        snippet = normalize_ws(words_together(snip).replace(MARK_OPEN, "[").replace(MARK_CLOSE, "]"))
    else:
        snippet = normalize_ws(target["content"])[:160]
    via = "body"
    synonyms: list[str] = []
    if marks is None:
        via = "vector"
    elif "\x01" in marks[2]:
        via = "alias"
        snippet += f" (aka: {matched['aliases']})"
    elif "\x01" in marks[1]:
        via = "tags"
    if marks is not None:
        synonyms = _synonyms(matched, asked)
    if via == "body" and not marked:
        via = "synonym" if synonyms else ("cjk" if matched["cjk"] else "type")
    if synonyms:
        snippet += f" (synonym: {', '.join(synonyms)})"
    if cand.round:
        snippet += f" (alias: {cand.round})"
    return Hit(
        id=target["id"],
        scope=target["scope"],
        scope_key=target["scope_key"],
        type=target["type"],
        status=target["status"],
        review_state=target["review_state"],
        score=cand.relevance,
        snippet=snippet,
        tags=split_tags(target["tags"]),
        location=target["location"],
        path=target["file_path"],
        matched_via=via,
        tier=tier(target["location"], target["scope"], target["review_state"], target["status"]),
        bm25=cand.bm25,
        relevance=cand.relevance,
        lane=cand.lane,
        vector=cand.vector,
        round=cand.round,
        rounds=cand.rounds,
        synonyms=synonyms,
    )


def state_tag(hit_scope: str, review_state: str, status: str) -> str:
    """``[draft]``-style tags; personal memories are never tagged with a review state (D30)."""
    parts = []
    if hit_scope != "personal":
        parts.append(f"[{review_state}]")
    if status not in ("active",):
        parts.append(f"[{status}]")
    return " ".join(parts)
