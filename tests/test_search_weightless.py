"""Issue 10: a D80 concept token in half the index or more is left out of a round while the
rest of it finds enough. FTS5's bm25 floors such a phrase's IDF to 1e-6, so it changes no
score; these tests hold the boundary to FTS5's own scores, the answer to the search that
keeps the token, and the cache of counts to the index generation."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from openmemex import expansions, memfile, paths, search, store
from openmemex.context import Context
from openmemex.ids import new_ulid, now_rfc3339
from openmemex.model import Memory

PERF = next(g for g in expansions.GROUPS if "perf" in g)  # performance, perf, latency, slow, …
TOKEN = expansions.token(PERF)


def _write(root: Path, bodies: list[str], status: str = "active") -> None:
    """Personal memory files with these texts, written straight to disk (indexed by the
    next search)."""
    folder = paths.scope_dir(root, "personal")
    folder.mkdir(parents=True, exist_ok=True)
    stamp = now_rfc3339()
    for body in bodies:
        memory = Memory(id=new_ulid(), scope="personal", scope_key="personal", body=body, status=status,
                        created_at=stamp, updated_at=stamp)  # fmt: skip
        store.write_atomic(folder / f"{memory.id}.md", memfile.serialize(memory))


def _fill(root: Path, literal: int, concept_only: int, neither: int) -> None:
    """``literal`` memories saying "perf" (which also carry the group's token), ``concept_only``
    saying "latency" (the token, not the word), ``neither`` saying nothing of the group; the
    texts' lengths vary, so bm25 orders them."""
    texts = [f"perf budget of service {i} " + "word " * i for i in range(literal)]  # no two score alike
    texts += [f"latency went up in region {i} " + "word " * i for i in range(concept_only)]
    texts += [f"gardening tip number {i}" for i in range(neither)]
    _write(root, texts)


def _context(root: Path, tmp_path: Path, literal: int, concept_only: int, neither: int) -> Context:
    _fill(root, literal, concept_only, neither)
    ctx = Context.load(tmp_path / "work")
    search.search(ctx, "warm the index", scope="personal")
    return ctx


def _scores(ctx: Context, expression: str) -> dict[int, float]:
    weights = ", ".join(str(w) for w in search.WEIGHTS)
    rows = ctx.conn.execute(f"SELECT rowid, bm25(memories_fts, {weights}) FROM memories_fts "
                            f"WHERE memories_fts MATCH ?", (expression,)).fetchall()  # fmt: skip
    return {int(r[0]): float(r[1]) for r in rows}


@pytest.mark.parametrize(("literal", "concept_only", "neither", "left_out"), [
    (30, 20, 50, True),  # the token in 50 of 100 rows: 2n = N, IDF log(50.5/50.5) = 0, floored
    (30, 19, 51, False),  # 49 of 100: IDF log(51.5/49.5) > 0, it counts
    (40, 30, 5, True),  # 70 of 75
])  # fmt: skip
def test_a_token_is_left_out_exactly_where_fts5_gives_it_no_weight(
    data_root: Path, tmp_path: Path, literal: int, concept_only: int, neither: int, left_out: bool
) -> None:
    ctx = _context(data_root, tmp_path, literal, concept_only, neither)
    generation = None  # no cache: counted now
    assert search._documents(ctx, generation, None) == literal + concept_only + neither  # FTS5's own N
    assert search._weightless(ctx, [TOKEN], generation) == (frozenset({TOKEN}) if left_out else frozenset())
    # FTS5 itself: with the token, a "perf" row's score moves by the floor's 1e-6 or by a real weight
    whole, lean = _scores(ctx, search._expression("perf")), _scores(ctx, search._expression("perf", frozenset({TOKEN})))
    moved = max(abs(whole[rowid] - score) for rowid, score in lean.items())
    assert (moved < 1e-5) if left_out else (moved > 1e-3)
    ctx.close()


def test_leaving_it_out_changes_no_hit_score_or_snippet(data_root: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    ctx = _context(data_root, tmp_path, literal=40, concept_only=50, neither=10)
    lean = search.search(ctx, "perf budget", scope="personal", limit=5, explain=True)
    assert TOKEN not in lean.expression and lean.left_out == [f"{TOKEN} (performance)"]
    monkeypatch.setattr(search, "_weightless", lambda *_args: frozenset())
    whole = search.search(ctx, "perf budget", scope="personal", limit=5, explain=True)
    assert TOKEN in whole.expression and not whole.left_out

    assert _shown(lean) == _shown(whole) and len(lean.hits) == 5
    ctx.close()


def _shown(result: search.SearchResult) -> list[tuple[Any, ...]]:
    return [(h.id, round(h.score, 5), round(h.bm25, 4), h.snippet, h.synonyms) for h in result.hits]


def _whole(ctx: Context, monkeypatch: pytest.MonkeyPatch, *args: Any, **kwargs: Any) -> search.SearchResult:
    """The same search with every token kept (the rule off)."""
    with monkeypatch.context() as patch:
        patch.setattr(search, "_weightless", lambda *_args: frozenset())
        return search.search(ctx, *args, **kwargs)


def test_rows_the_query_words_reach_only_at_the_floor_keep_the_round_whole(
    data_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """"service" is in 50 of 97 rows (floored like the token), "slow" in 3: the 3 rank
    first, then "service" rows and "latency" rows (the concept's) score alike, near zero,
    and which of them come next is FTS5's to say — leaving the token out would change it."""
    texts = [f"service slow path {i}" for i in range(3)] + [f"service filler that runs on and on and on {i}" for i in range(47)]
    texts += [f"latency went up {i}" for i in range(47)]
    _write(data_root, texts)
    ctx = Context.load(tmp_path / "work")
    search.search(ctx, "warm the index", scope="personal")
    assert search._weightless(ctx, [TOKEN], None) == {TOKEN}  # 50 of 97
    statements: list[str] = []
    ctx.conn.set_trace_callback(statements.append)
    got = search.search(ctx, "service slow", scope="personal", limit=8, explain=True)
    ctx.conn.set_trace_callback(None)
    assert not got.left_out and TOKEN in got.expression
    assert _shown(got) == _shown(_whole(ctx, monkeypatch, "service slow", scope="personal", limit=8))
    assert any("latency" in h.snippet for h in got.hits)  # the concept's rows outrank some "service" ones
    ranked = [q for q in statements if "bm25(memories_fts" in q]
    assert len(ranked) == 1 and TOKEN in ranked[0]  # not tried without it: "slow" is in 3 rows, 34 are ranked
    ctx.close()


def test_a_round_the_rest_did_not_settle_runs_whole_at_once_next_time(
    data_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """"slow" is in 43 rows, enough to try the rest; 40 of them are retracted, so the rest
    ranks 3 visible rows above the floor: not settled, run whole — and, asked again before
    any row changes, run whole at once."""
    _write(data_root, [f"service slow path {i}" for i in range(40)], status="retracted")
    _write(data_root, [f"service slow {i}" for i in range(3)] + [f"service filler that runs on and on and on {i}" for i in range(47)]
           + [f"latency went up {i}" for i in range(47)])  # fmt: skip
    ctx = Context.load(tmp_path / "work")
    search.search(ctx, "warm the index", scope="personal")
    statements: list[str] = []
    ctx.conn.set_trace_callback(statements.append)
    got = search.search(ctx, "service slow", scope="personal", limit=8)
    ranked = [q for q in statements if "bm25(memories_fts" in q]
    assert len(ranked) == 2 and TOKEN not in ranked[0] and TOKEN in ranked[1]  # tried, then whole
    assert _shown(got) == _shown(_whole(ctx, monkeypatch, "service slow", scope="personal", limit=8))
    statements.clear()
    assert _shown(search.search(ctx, "service slow", scope="personal", limit=8)) == _shown(got)
    ranked = [q for q in statements if "bm25(memories_fts" in q]
    assert len(ranked) == 1 and TOKEN in ranked[0]
    ctx.close()


def test_in_a_transaction_the_caller_holds_nothing_is_left_out(data_root: Path, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """FTS5 writes its row count at commit: inside the caller's transaction the stored one
    may be far behind (here the search's own sync indexes 90 more rows in it)."""
    ctx = _context(data_root, tmp_path, literal=30, concept_only=30, neither=20)
    _fill(data_root, literal=0, concept_only=0, neither=90)  # the concept: 60 of 170 once indexed
    ctx.conn.execute("BEGIN")
    try:
        got = search.search(ctx, "perf", scope="personal", limit=3, explain=True)
        assert not got.left_out and TOKEN in got.expression
        assert _shown(got) == _shown(_whole(ctx, monkeypatch, "perf", scope="personal", limit=3))
    finally:
        ctx.conn.execute("ROLLBACK")
    ctx.close()


def test_a_type_or_a_scope_short_of_the_index_runs_the_round_whole(data_root: Path, tmp_path: Path,
                                                                    git_repo: Path) -> None:  # fmt: skip
    """Where the rest may find too few in scope (a word's rows may all be elsewhere, and the
    round would then run twice)."""
    _fill(data_root, literal=30, concept_only=30, neither=20)
    from openmemex.write import add_memory

    ctx = Context.load(git_repo)
    search.search(ctx, "warm the index", scope="personal")
    statements: list[str] = []
    ctx.conn.set_trace_callback(statements.append)
    assert not search.search(ctx, "perf", scope="project", limit=3).hits  # a scope holding nothing
    assert not [q for q in statements if "count(*)" in q]  # nothing counted, nothing tried lean
    assert all(TOKEN in q for q in statements if "memories_fts MATCH" in q)
    ctx.conn.set_trace_callback(None)
    add_memory(ctx, "the perf dashboard shows perf per region", scope="project")  # (no score like another)
    assert search.search(ctx, "perf", scope="both", limit=3, explain=True).left_out  # the control: every file
    assert not search.search(ctx, "perf", scope="both", type="fact", limit=3, explain=True).left_out
    assert not search.search(ctx, "perf", scope="personal", limit=3, explain=True).left_out  # 80 of 81 files
    project = search.search(ctx, "perf", scope="project", limit=3, explain=True)
    assert not project.left_out and [h.snippet for h in project.hits] == ["the [perf] dashboard shows [perf] per region"]
    ctx.close()


@pytest.mark.parametrize("block", ["'garbage text'", "-5", "4611686018427387904", "x'00'", "NULL"])
def test_a_damaged_row_count_leaves_nothing_out_and_the_search_answers(cli: Any, data_root: Path,
                                                                       block: str) -> None:  # fmt: skip
    for i in range(3):
        assert cli("add", f"the deploy was slow {i}").rc == 0
    conn = sqlite3.connect(data_root / "index.db")
    conn.execute(f"UPDATE memories_fts_data SET block = {block} WHERE id = 1")
    conn.commit()
    conn.close()
    result = cli("search", "slow deploy")
    assert result.rc == 0, result.err
    assert result.out.count("the [deploy] was [slow]") == 3 or result.out.count("[slow]") == 3


def test_the_counts_are_read_once_per_index_generation(data_root: Path, tmp_path: Path) -> None:
    ctx = _context(data_root, tmp_path, literal=30, concept_only=30, neither=20)
    statements: list[str] = []
    ctx.conn.set_trace_callback(statements.append)
    counted = lambda: [q for q in statements if "count(*)" in q]  # noqa: E731
    for _ in range(3):
        assert search.search(ctx, "perf", scope="personal", limit=3).hits
    assert len(counted()) == 2  # the token's rows and "perf"'s, at the first search of this generation only
    from openmemex.write import add_memory

    add_memory(ctx, "kitchen shelf label", scope="personal")
    statements.clear()
    assert search.search(ctx, "perf", scope="personal", limit=3).hits
    assert len(counted()) == 2  # a row changed: counted again
    ctx.close()


def test_a_search_with_an_alias_round_leaves_nothing_out(data_root: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """A round's best can tie another round's, and the floor's weight decides which round a
    hit is credited to (``(alias: …)``): with an alias round, every round runs whole."""
    from openmemex.write import add_memory

    ctx = _context(data_root, tmp_path, literal=30, concept_only=30, neither=20)
    assert search.search(ctx, "perf budget", scope="personal", limit=3, explain=True).left_out  # the control
    add_memory(ctx, "pf is what we call perf here", scope="personal", alias="pf", target="perf")
    for query in ("pf budget", "perf budget"):
        got = search.search(ctx, query, scope="personal", limit=3, explain=True)
        assert got.rewrites and not got.left_out
        whole = _whole(ctx, monkeypatch, query, scope="personal", limit=3)
        assert _shown(got) == _shown(whole) and [h.round for h in got.hits] == [h.round for h in whole.hits]
    ctx.close()


def test_when_the_rest_finds_too_few_the_round_runs_whole(data_root: Path, tmp_path: Path) -> None:
    """Five rows say "perf"; the limit wants more: the rows only the concept reaches fill the
    list, as without the rule (a synonym hit is still a hit)."""
    ctx = _context(data_root, tmp_path, literal=5, concept_only=60, neither=10)
    result = search.search(ctx, "perf", scope="personal", limit=20, explain=True)
    assert TOKEN in result.expression and not result.left_out
    assert len(result.hits) == 20
    assert sum("latency" in h.snippet for h in result.hits) == 15 and result.hits[0].synonyms == []
    assert any(h.synonyms == ["perf"] for h in result.hits)  # reached through the concept, said so
    ctx.close()


def test_the_counts_are_kept_for_one_index_generation(data_root: Path, tmp_path: Path) -> None:
    """Counted once per generation; a write elsewhere (another process's connection) that
    makes the concept rare brings the token back at the next search."""
    ctx = _context(data_root, tmp_path, literal=30, concept_only=30, neither=20)
    assert search.search(ctx, "perf", scope="personal", limit=3, explain=True).left_out
    other = Context.load(tmp_path / "work")
    from openmemex.write import add_memory

    for i in range(80):
        add_memory(other, f"kitchen shelf label {i}")
    other.close()
    again = search.search(ctx, "perf", scope="personal", limit=3, explain=True)
    assert not again.left_out and TOKEN in again.expression  # 60 of 160 now
    ctx.close()


def test_explain_names_what_was_left_out(cli: Any, data_root: Path, tmp_path: Path) -> None:
    _fill(data_root, literal=30, concept_only=30, neither=20)
    result = cli("search", "perf", "--scope", "personal", "--explain", "--limit", "3")
    assert result.rc == 0, result.err
    assert f"left out, in half the index or more (bm25 gives them no weight): {TOKEN} (performance)" in result.out
    assert f"expansions:({TOKEN})" not in result.out


@pytest.mark.parametrize("value", [0, 1, 127, 128, 300, 16_383, 16_384, 10_005, 2**35, 2**56 - 1, 2**56, 2**63 - 1])
def test_varint_reads_sqlites_encoding(value: int) -> None:
    encoded = _sqlite_varint(value)
    assert search._varints(encoded + _sqlite_varint(300) + encoded) == [value, 300, value]
    assert search._varints(encoded + b"\xff")[0] == value  # a record cut short keeps what it has


def _sqlite_varint(value: int) -> bytes:
    """sqlite3PutVarint, written from the file format's description: big-endian groups of
    7 bits with the high bit set on all but the last; past 56 bits the ninth byte is whole."""
    if value > 0x00FFFFFFFFFFFFFF:
        out = [value & 0xFF]
        value >>= 8
        for _ in range(8):
            out.append((value & 0x7F) | 0x80)
            value >>= 7
        return bytes(reversed(out))
    groups = [value & 0x7F]
    value >>= 7
    while value:
        groups.append((value & 0x7F) | 0x80)
        value >>= 7
    return bytes(reversed(groups))


@pytest.mark.parametrize("query", ["perf budget", "部署 上线", "deploy 部署 to prod", "ωmega perf", "C++ a", "数据"])
def test_each_phrase_counted_is_one_the_query_asks(data_root: Path, tmp_path: Path, query: str) -> None:
    """``query_phrases`` are ``build_query``'s phrases one by one: each alone matches a
    subset of what the whole query matches, and together exactly it."""
    from openmemex.text import build_query, query_phrases

    _fill(data_root, literal=5, concept_only=5, neither=5)
    _write(data_root, ["部署到生产环境", "上线 checklist", "deploy to prod", "ωmega release", "C++ build flags", "数据库 备份"])
    ctx = _context(data_root, tmp_path, 0, 0, 0)

    def matched(expression: str) -> set[int]:
        return {int(r[0]) for r in ctx.conn.execute("SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?",
                                                     (expression,))}  # fmt: skip

    phrases = query_phrases(query)
    assert phrases
    union = set().union(*(matched(p) for p in phrases))
    assert union == matched(build_query(query)) and union
    ctx.close()


def test_rows_tied_without_the_concept_keep_the_round_whole(data_root: Path, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """20 "widget alpha bravo" and 20 "widget ship" memories score alike on "widget"; the
    concept of "release" (in 80 of 100 rows, floored) is what puts the "ship" ones first.
    Without it the tie would go by rowid and other memories be shown."""
    texts = ["widget alpha bravo"] * 20 + ["widget ship"] * 20 + [f"ship filler {i}" for i in range(60)]
    _write(data_root, texts)
    ctx = Context.load(tmp_path / "work")
    search.search(ctx, "warm the index", scope="personal")
    for limit in (1, 2, 3):
        got = search.search(ctx, "widget release", scope="personal", limit=limit, explain=True)
        whole = _whole(ctx, monkeypatch, "widget release", scope="personal", limit=limit)
        assert not got.left_out and _shown(got) == _shown(whole)
        assert all(h.snippet.startswith("[widget] ship") for h in got.hits)
    ctx.close()


def test_a_token_asked_twice_counts_twice(cli: Any, data_root: Path, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """A group listed ten times in ``searchExpansions`` asks its token ten times: FTS5 adds the
    floor's term once for each, and so does the rest's settling — to the bit."""
    assert cli("config", "set", "searchExpansions", json.dumps([["pto", "vacation"]] * 10)).rc == 0
    texts = [f"pto planning {i} " + "word " * i for i in range(20)] + [f"vacation days {i}" for i in range(40)]
    _write(data_root, texts + [f"other note {i}" for i in range(10)])
    ctx = _context(data_root, tmp_path, 0, 0, 0)
    tokens = expansions.current().tokens("pto")
    assert len(tokens) == 10 and len(set(tokens)) == 1 and search._weightless(ctx, tokens, None) == set(tokens)
    whole, lean = _scores(ctx, search._expression("pto")), _scores(ctx, search._expression("pto", frozenset(tokens)))
    moved = max(abs(whole[rowid] - score) for rowid, score in lean.items())
    assert search.FLOORED < moved < 10 * search.FLOORED  # more than one token's floor: the margin counts ten
    dirs = [str(f.path) for f in ctx.folders("personal")]
    rows = search._fetch(ctx, search._expression("pto", frozenset(tokens)), dirs, None, 30)
    settled = search._settle(ctx, rows, 13, tokens, more=True)
    assert settled is not None
    assert [(int(r["rowid"]), score) for r, score in settled] == _fts5_best(ctx, search._expression("pto"), 13)
    ctx.close()


def _fts5_best(ctx: Context, expression: str, n: int) -> list[tuple[int, float]]:
    weights = ", ".join(str(w) for w in search.WEIGHTS)
    return [(int(r[0]), float(r[1])) for r in ctx.conn.execute(
        f"SELECT rowid, bm25(memories_fts, {weights}) AS score FROM memories_fts WHERE memories_fts MATCH ? "
        f"ORDER BY score, rowid LIMIT ?", (expression, n))]  # fmt: skip


@pytest.mark.parametrize("seed", range(6))
def test_the_rest_settled_is_fts5s_whole_round_to_the_bit(data_root: Path, tmp_path: Path, seed: int) -> None:
    """Random memories dense with two groups' words (ties among them, lengths alike): the
    whole round's best rows and scores, as FTS5 ranks them, are what ``_settle`` makes of
    the rest's, or it says it cannot tell."""
    import random

    rng = random.Random(seed)
    words = ["perf", "latency", "slow", "deploy", "ship", "release", "widget", "budget", "filler", "note"]
    _write(data_root, [" ".join(rng.choice(words) for _ in range(rng.randint(2, 7))) for _ in range(rng.randint(60, 160))])
    ctx = _context(data_root, tmp_path, 0, 0, 0)
    dirs = [str(f.path) for f in ctx.folders("personal")]
    told = 0
    for query in ("widget release", "budget slow", "perf budget", "deploy widget note", "slow", "ship latency"):
        tokens = expansions.current().tokens(query)
        drop = search._weightless(ctx, tokens, None)
        if not drop:
            continue
        dropped = [t for t in tokens if t in drop]
        for wanted in (1, 5, 13):
            rows = search._fetch(ctx, search._expression(query, drop), dirs, None, wanted + search._PAST)
            settled = search._settle(ctx, rows, wanted, dropped, len(rows) == wanted + search._PAST)
            if settled is not None:
                told += 1
                got = [(int(r["rowid"]), score) for r, score in settled]
                assert got == _fts5_best(ctx, search._expression(query), wanted), (query, wanted)
    assert told  # some were told
    ctx.close()


@pytest.mark.parametrize("seed", range(4))
def test_a_token_asked_before_one_kept_is_not_left_out(data_root: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch, seed: int) -> None:  # fmt: skip
    """FTS5 adds its terms in the query's order; the rest's sum plus the left-out terms is
    another order, a bit off where a kept token comes after a left-out one — and the
    common words' rows tie but for such bits. Only the tokens after every kept one are left
    out, so the search is the whole round's to the bit (scores compared as floats)."""
    import random

    rng = random.Random(1000 + seed)
    bodies = []
    for _ in range(rng.randint(80, 160)):
        words = [rng.choice(["deploy", "db", "log", "test"]) for _ in range(rng.randint(2, 6))]
        words += [rng.choice(["auth", "cache", "error"]) for _ in range(rng.randint(0, 2))]
        rng.shuffle(words)
        bodies.append(" ".join(words))
    _write(data_root, bodies)
    ctx = _context(data_root, tmp_path, 0, 0, 0)
    left = 0
    for query in ("deploy auth db cache log error test", "auth cache error deploy db log test"):
        for limit in (1, 3, 8):
            got = search.search(ctx, query, scope="both", limit=limit)
            left += bool(got.left_out)
            whole = _whole(ctx, monkeypatch, query, scope="both", limit=limit)
            assert [(h.id, h.score, h.snippet) for h in got.hits] == [(h.id, h.score, h.snippet) for h in whole.hits]
    assert left  # the rule was used
    ctx.close()
