"""Issue 10: relevance-gated tiers (D30), D80 expansion groups, D81 alias rounds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from openmemex import expansions, memfile, paths, store
from openmemex.aliases import MAX_EXTRA_ROUNDS, merge, rounds
from openmemex.expansions import BUILTIN, GROUPS, MAX_EXPANSIONS
from openmemex.ids import new_ulid, now_rfc3339
from openmemex.model import Memory
from openmemex.scope import resolve_project
from tests.conftest import run_process


def _write(folder: Path, body: str, *, scope: str = "project", key: str = "", review: str = "draft",
           tags: list[str] | None = None) -> str:  # fmt: skip
    stamp = now_rfc3339()
    memory = Memory(id=new_ulid(), scope=scope, scope_key=key or "personal", body=body, review_state=review,
                    tags=tags or [], created_at=stamp, updated_at=stamp)  # fmt: skip
    folder.mkdir(parents=True, exist_ok=True)
    store.write_atomic(folder / f"{memory.id}.md", memfile.serialize(memory))
    return memory.id


def _hits(cli: Any, *args: str) -> list[dict[str, Any]]:
    result = cli("search", *args, "--json", "--limit", "10")
    assert result.rc == 0, result.err
    hits: list[dict[str, Any]] = json.loads(result.out)["hits"]
    return hits


# -- D30 as a preference --------------------------------------------------------------


def test_strong_draft_beats_weak_personal_hit(cli: Any, data_root: Path, git_repo: Path) -> None:
    project = resolve_project(git_repo)
    draft = _write(paths.scope_dir(data_root, project.key), key=project.key, body=(
        "Checkout ships through Argo CD: staging sync is automatic, the production sync of Argo CD needs approval."))  # fmt: skip
    personal = _write(paths.scope_dir(data_root, "personal"), scope="personal", body="I drink tea from Argo the tea shop.")
    hits = _hits(cli, "argo cd production sync approval")
    assert [h["id"] for h in hits[:2]] == [draft, personal]
    assert hits[0]["tier"] == 2 and hits[1]["tier"] == 1  # the draft won on relevance, not on tier


def test_approved_beats_a_comparably_relevant_draft(cli: Any, data_root: Path, git_repo: Path) -> None:
    project = resolve_project(git_repo)
    draft = _write(paths.scope_dir(data_root, project.key), key=project.key,
                   body="Production deploys need a manual Argo CD sync after the canary is healthy.")  # fmt: skip
    approved = _write(git_repo / ".ai" / "open-memex", key=project.key, review="approved",
                      body="Production deploys need a manual Argo CD sync after the canary looks healthy.")  # fmt: skip
    hits = _hits(cli, "manual argo cd sync for production deploys")
    assert [h["id"] for h in hits[:2]] == [approved, draft]
    explained = cli("search", "manual argo cd sync for production deploys", "--explain")
    assert "bm25=" in explained.out and "tier=0" in explained.out and "reviewed prior 1" in explained.out
    assert "order: final = relevance × tier prior" in explained.out


def test_strict_tiers_stay_available_as_the_benchmark_ablation(cli: Any, data_root: Path, git_repo: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    project = resolve_project(git_repo)
    draft = _write(paths.scope_dir(data_root, project.key), key=project.key,
                   body="Rotate the signing key for webhooks every quarter with the rotate-keys job.")  # fmt: skip
    _write(paths.scope_dir(data_root, "personal"), scope="personal", body="Quarterly review with my manager.")
    assert _hits(cli, "rotate webhook signing key quarter")[0]["id"] == draft
    monkeypatch.setenv("OPEN_MEMEX_SEARCH_ABLATE", "tiers-strict")
    assert _hits(cli, "rotate webhook signing key quarter")[0]["id"] != draft  # the wall issue 10 removed


# -- D80 expansions -------------------------------------------------------------------


@pytest.mark.parametrize("group", GROUPS, ids=[g[0] for g in GROUPS])
def test_each_expansion_group_reaches_every_member(group: tuple[str, ...]) -> None:
    """A memory using any member carries the group's concept token, and a query using any
    other member asks for it: every member reaches every other (index time + query)."""
    token = expansions.token(group)
    for member in group:
        assert token in BUILTIN.tokens(f"Note about {member} here."), member
        assert member in BUILTIN.reached(BUILTIN.matched_members(member), token, "Note about nothing here.")


def test_expansion_rules() -> None:
    """Reference scenario 38 in concept tokens: "deploy" is reached by "ship" (and by
    部署), 数据库备份保留 by database/backup/retention, "staging wipes" by 清空."""
    def reach(memory: str, query: str) -> bool:
        return bool(set(BUILTIN.tokens(memory)) & set(BUILTIN.tokens(query)))

    assert reach("We deploy on Tuesdays", "ship") and reach("We deploy on Tuesdays", "部署")
    assert reach("We shipped it", "deploy") and reach("releasing weekly", "上线")  # inflections
    assert all(reach("数据库备份保留 30 天", q) for q in ("database", "backup", "retention"))
    assert reach("staging wipes the cache", "清空") and reach("回归测试很慢", "regression test")
    assert BUILTIN.tokens("hello world") == []
    crowded = " ".join(g[0] for g in GROUPS)
    assert len(BUILTIN.tokens(crowded)) == MAX_EXPANSIONS
    assert not reach("an association of rollbacks", "single sign-on")  # whole words only: no "sso" inside
    memory = "We deploy checkout with Argo CD"
    column = " ".join(BUILTIN.tokens(memory))
    assert BUILTIN.reached(BUILTIN.matched_members("ship checkout"), column, memory) == ["ship"]
    assert BUILTIN.reached(BUILTIN.matched_members("deploy checkout"), column, memory) == []  # its own word: not a synonym
    assert BUILTIN.reached(BUILTIN.matched_members("部署 argo"), column, memory) == ["部署"]


def test_search_attributes_synonyms_both_languages(cli: Any) -> None:
    assert cli("add", "We deploy checkout with Argo CD every Tuesday.").rc == 0
    assert cli("add", "订单数据库每天凌晨备份一次。").rc == 0
    for query, want in (("ship checkout", "ship"), ("部署 checkout", "部署"), ("database backup", "database")):
        hits = _hits(cli, query)
        assert hits and want in hits[0].get("synonyms", []), (query, hits)
    text = cli("search", "部署 argo").out
    assert "(synonym: 部署)" in text


def test_user_groups_reindex_when_the_map_changes(cli: Any, data_root: Path) -> None:
    assert cli("add", "Vacation requests go through the HR portal two weeks ahead.").rc == 0
    assert _hits(cli, "pto") == []
    assert cli("config", "set", "searchExpansions", '[["pto", "vacation", "休假"]]').rc == 0
    hits = _hits(cli, "pto")
    assert len(hits) == 1 and hits[0]["synonyms"] == ["pto"]
    assert _hits(cli, "休假")
    assert cli("config", "set", "searchExpansions", "[]").rc == 0
    assert _hits(cli, "pto") == []
    bad = cli("config", "set", "searchExpansions", '["pto"]')
    assert bad.rc != 0 and "list of groups" in bad.err and "Traceback" not in bad.err


@pytest.mark.parametrize(("member", "said"), [
    ("café", "write it as 'cafe'"),  # cut by the matcher to "caf": matched nothing it means
    ("été", "write it as 'ete'"),  # cut to "t": matched every "don't"
    ("отпуск", "letters other than a-z"),  # cut to nothing: a group that never matched
    ("!!!", "no word to match"),
    ("\ud800pto", "lone surrogate"),  # no file can hold it: every command failed (exit 70)
    ("x" * 61, "too long"),  # a 200,000-character member, or 20,000 members, cost every process seconds
])  # fmt: skip
def test_a_member_the_groups_cannot_match_is_refused_in_one_line(cli: Any, data_root: Path, member: str,
                                                                 said: str) -> None:  # fmt: skip
    """A user's group member is matched as ASCII words or as Chinese/Japanese/Korean text;
    one the matcher would cut into fragments (or none) is refused by name, by `config set`
    and, hand-edited, reported while every command goes on with the built-in groups."""
    assert cli("add", "Vacation requests go through the HR portal two weeks ahead.").rc == 0
    result = cli("config", "set", "searchExpansions", json.dumps([[member, "vacation"]]))
    assert result.rc == 2 and said in result.err and "Traceback" not in result.err
    assert len(result.err.strip().splitlines()) == 1
    (data_root / "config.json").write_text(json.dumps({"searchExpansions": [["pto", "vacation"], [member, "x"]]}))
    for command in (("search", "vacation"), ("list",), ("config", "get", "searchExpansions")):
        ran = cli(*command)
        assert ran.rc == 0 and "searchExpansions" in ran.err and said in ran.err, (command, ran.err)
    assert expansions.check_groups([["k8s集群", "cluster"], ["don’t", "never"], ["c++", "cpp"]])  # CJK, punctuation
    for too_many, said_so in (([[f"leave{i}" for i in range(33)]], "at most 32"),
                              ([[f"a{i}", f"b{i}"] for i in range(201)], "at most 200 groups")):  # fmt: skip
        with pytest.raises(ValueError, match=said_so):
            expansions.check_groups(too_many)


def test_a_memory_written_with_an_older_map_is_re_derived_by_the_next_process(cli: Any, data_root: Path,
                                                                              git_repo: Path) -> None:  # fmt: skip
    """A process that attached the expansion map before another process changed the config
    (and re-derived the index) writes a new memory with its older map: the index is marked
    as following no one map, and the next process re-derives it — the new memory is found
    through the new group (it never was, and `doctor` saw nothing wrong)."""
    from openmemex.context import Context
    from openmemex.write import add_memory

    assert cli("add", "Deploys need a manual sync.").rc == 0
    with Context.load(git_repo) as holding:
        holding.conn.execute("SELECT 1")  # opening the index attaches the built-in map
        assert run_process("config", "set", "searchExpansions", '[["pto", "vacation"]]').rc == 0
        assert run_process("search", "deploys").rc == 0  # another process re-derives with the new map
        taken = add_memory(holding, "Taking PTO the first week of May.").id  # written with the older map
    found = json.loads(run_process("search", "vacation", "--json").out)["hits"]
    assert [h["id"] for h in found] == [taken] and found[0]["synonyms"] == ["vacation"]


def test_a_cjk_member_with_latin_letters_matches_in_any_case(cli: Any) -> None:
    """A user's Chinese member holding Latin letters ("API网关") matches memory text and
    queries in any case ("api网关", "Api网关"), as the Latin members do; the attribution names
    the member as the group writes it. Only a map with such a member changes its hash: the
    built-in map's indexes are not re-derived for it."""
    from openmemex.expansions import for_config

    lower = json.loads(cli("add", "api网关的超时是 30 秒。", "--json").out)["id"]
    mixed = json.loads(cli("add", "Api网关按商户限流。", "--json").out)["id"]
    english = json.loads(cli("add", "The ingress retries twice on a 502.", "--json").out)["id"]
    assert cli("config", "set", "searchExpansions", '[["API网关", "ingress"]]').rc == 0
    found = {h["id"]: h for h in _hits(cli, "ingress")}  # no word in common: the group alone
    assert {lower, mixed, english} <= set(found)
    across = {h["id"]: h for h in _hits(cli, "api网关")}  # the query in another case
    assert english in across and across[english]["synonyms"] == ["API网关"]
    assert for_config([["网关", "gateway"]]).digest != for_config([["API网关", "gateway"]]).digest
    import hashlib  # the built-in map's hash is what it was: its indexes are not re-derived for this
    canonical = json.dumps([expansions.RULES_VERSION, [list(g) for g in GROUPS]], ensure_ascii=False)
    assert expansions.BUILTIN.digest == hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


# -- D81 alias rounds -----------------------------------------------------------------


def test_alias_rewrites_both_ways_whole_words_only() -> None:
    pairs = [("sso", "single sign-on")]
    assert [r.text for r in rounds("sso setup", pairs)] == ["single sign-on setup"]
    assert [r.text for r in rounds("single sign-on setup", pairs)] == ["sso setup"]
    assert rounds("association rules", pairs) == []
    assert rounds("nothing here", pairs) == []
    assert [r.text for r in rounds("小程序登录", [("小程序", "mini program")])] == ["mini program登录"]


def test_alias_chains_stop_after_two_rounds_and_cycles_stop_at_once() -> None:
    chain = rounds("a", [("a", "b"), ("b", "c"), ("c", "d")])
    assert [r.text for r in chain] == ["b", "c"] and len(chain) == MAX_EXTRA_ROUNDS
    assert [r.text for r in rounds("x", [("x", "y"), ("y", "x")])] == ["y"]
    assert [r.text for r in rounds("x", [("x", "y"), ("y", "z"), ("z", "x")])] == ["y", "z"]


def test_a_round_rewrites_each_name_once_the_longest_first_and_says_what_it_used() -> None:
    """Overlapping names: the longer one is rewritten (``PSP API``, not its ``PSP``), and the
    label names only the pairs the round used. A round is one hop: ``a`` becomes ``b`` and
    is not rewritten again by ``b → c`` in the same round (that is the next round's)."""
    from openmemex import aliases

    pairs = [("PSP", "payment service provider"), ("PSP API", "payments gateway")]
    got = rounds("PSP API rate limit", pairs)
    assert [(r.text, r.label()) for r in got] == [("payments gateway rate limit", "PSP API → payments gateway")]
    got = rounds("psp outage and the PSP API", pairs)
    assert got[0].text == "payment service provider outage and the payments gateway"
    assert got[0].label() == "PSP → payment service provider, PSP API → payments gateway"
    chain = rounds("a only", [("a", "b"), ("b", "c")])
    assert [(r.text, r.label()) for r in chain] == [("b only", "a → b"), ("c only", "a → b, b → c")]
    folded = rounds("ſso and Kelvin", [("sso", "single sign-on"), ("kelvin", "K")])  # ſ is s, K is k to the pattern
    assert folded[0].text == "single sign-on and K"
    # one pattern per registry, compiled once: a thousand pairs cost one search, not one per pair
    many = [(f"proj{i}", f"internal codename {i}") for i in range(1000)]
    assert [r.text for r in rounds("proj7 status", many)] == ["internal codename 7 status"]
    before = aliases._rewriter.cache_info().misses
    for _ in range(3):
        assert [r.text for r in rounds("proj7 status", many)] == ["internal codename 7 status"]
    assert aliases._rewriter.cache_info().misses == before


def test_the_registry_pattern_finds_a_name_exactly_where_one_term_alone_would() -> None:
    """One pattern per registry finds the names a round rewrites (and, asked first, lets a
    query naming none skip the rounds): whatever the registry holds (CJK, punctuation, case,
    a name inside another, a longer name failing its word boundary), a round rewrites
    something exactly when some name, looked for on its own by the documented rule (CJK as a
    substring, Latin as a whole word in any case), is in the query."""
    import random
    import re

    from openmemex import aliases
    from openmemex.text import CJK_RUN

    def named(query: str, term: str) -> bool:
        if CJK_RUN.fullmatch(term):
            return term in query
        return re.search(rf"(?<![\w]){re.escape(term)}(?![\w])", query, re.IGNORECASE) is not None

    terms = ["sso", "single sign-on", "C++", ".NET", "k8s", "KUBERNETES", "小程序", "mini program", "数据",
             "a.b", "Ünïcode", "x", "dq", "data quality", "[brackets]", "back\\slash", "PSP", "PSP API"]  # fmt: skip
    fillers = ["setup", "association", "csso", "C+", "net", "kubernetesy", "程序", "the", "sso-", "-sso", "ünïcode",
               "APIs"]  # fmt: skip
    rnd = random.Random(20261201)
    rewritten = 0
    for _ in range(3000):
        pairs = [(rnd.choice(terms), rnd.choice(terms)) for _ in range(rnd.randint(1, 4))]
        pairs = [(a, b) for a, b in pairs if a != b]
        if not pairs:
            continue
        query = rnd.choice(["", " ", "-", "/"]).join(rnd.choice(terms + fillers) for _ in range(rnd.randint(1, 5)))
        rules = aliases._all_rules(tuple(pairs))
        _, applied = aliases._rewrite(query, rules)
        assert bool(applied) == any(named(query, src) for src, _ in rules), (query, pairs)
        assert all(named(query, src) for src, _ in applied), (query, applied)  # it says only what it used
        rewritten += bool(applied)
    assert rewritten > 500  # the cases do rewrite, often


def test_a_pair_defined_or_retracted_elsewhere_applies_to_the_next_search(
    cli: Any, data_root: Path, git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The registry read is kept per index while no row changes (``index.generation``): a
    process holding it sees another process's new pair, and its retraction, at once."""
    from openmemex.context import Context
    from openmemex.search import search

    monkeypatch.chdir(git_repo)
    monkeypatch.setenv("OPEN_MEMEX_HOME", str(data_root))
    assert cli("add", "The payment service provider outage runbook lives in the wiki.").rc == 0
    ctx = Context.load(git_repo)
    try:
        assert search(ctx, "PSP runbook").rewrites == []
        statements: list[str] = []
        ctx.conn.set_trace_callback(statements.append)
        assert search(ctx, "PSP runbook").rewrites == []
        ctx.conn.set_trace_callback(None)
        assert statements and not any("memories_alias_target" in s for s in statements)  # kept: not read again
        defined = cli("add", "PSP is our shorthand.", "--alias", "PSP", "--target", "payment service provider",
                      "--json")  # fmt: skip
        assert defined.rc == 0, defined.err
        assert search(ctx, "PSP runbook").rewrites == ["PSP → payment service provider"]
        assert cli("forget", json.loads(defined.out)["id"], "--soft").rc == 0
        assert search(ctx, "PSP runbook").rewrites == []
    finally:
        ctx.close()


def test_alias_merge_normalises_each_round() -> None:
    merged = merge([{1: 10.0, 2: 5.0}, {3: 2.0, 2: 1.0}])
    assert merged[1][0] == 1.0 and merged[3][0] == 1.0  # each round's best scores 1.0
    assert merged[3][0] > merged[2][0]  # an alias-only champion beats a mediocre literal match
    assert merged[2][1] == 2  # found in both rounds
    assert merge([{1: 4.0, 2: 2.0}]) == {1: (1.0, 1, 0), 2: (0.5, 1, 0)}  # one round keeps its order


def test_alias_round_end_to_end(cli: Any) -> None:
    defined = cli("add", "PSP is our shorthand for the payment provider.", "--alias", "PSP",
                  "--target", "payment service provider", "--json")  # fmt: skip
    assert defined.rc == 0, defined.err
    assert cli("add", "The payment service provider outage runbook lives in the wiki.").rc == 0
    for n in range(12):
        assert cli("add", f"Unrelated note {n} about the outage calendar.").rc == 0
    hits = _hits(cli, "PSP runbook")
    assert any("runbook" in h["snippet"] for h in hits[:2])  # reached through the rewrite
    assert any(h.get("alias_round") == "PSP → payment service provider" for h in hits)
    assert len(_hits(cli, "outage")) <= 10  # never more than the limit, whatever the rounds (#53)
    explained = cli("search", "PSP runbook", "--explain").out
    assert "alias round: PSP → payment service provider" in explained
    half = cli("add", "x", "--alias", "PSP")
    assert half.rc == 2 and "needs its target" in half.err


def test_a_superseded_definition_can_correct_or_drop_its_pair(cli: Any) -> None:
    """The pair carries over a supersede unless given (it did, and could not be changed: a
    corrected definition kept rewriting queries to the old meaning); both given anew
    replace it, both empty drop it, one alone is refused in one line."""
    first = cli("add", "PSP is our payment service provider.", "--alias", "PSP", "--target",
                "payment service provider", "--json")  # fmt: skip
    old = json.loads(first.out)["id"]
    kept = json.loads(cli("supersede", old, "PSP is our payment service provider (Adyen).", "--json").out)["id"]
    assert cli("search", "PSP", "--explain").out.count("alias round: PSP → payment service provider") == 1
    fixed = cli("supersede", kept, "PSP means Platform Security Policy here.", "--alias", "PSP", "--target",
                "platform security policy", "--json")  # fmt: skip
    assert fixed.rc == 0, fixed.err
    newest = json.loads(fixed.out)["id"]
    shown = json.loads(cli("show", newest, "--json").out)
    assert (shown["alias"], shown["target"]) == ("PSP", "platform security policy")
    explained = cli("search", "PSP", "--explain").out
    assert "alias round: PSP → platform security policy" in explained and "payment service provider" not in explained
    half = cli("supersede", newest, "PSP is something.", "--alias", "PSP")
    assert half.rc == 2 and "needs its target" in half.err and len(half.err.strip().splitlines()) == 1
    dropped = json.loads(cli("supersede", newest, "PSP: see the glossary.", "--alias", "", "--target", "",
                             "--json").out)["id"]  # fmt: skip
    assert json.loads(cli("show", dropped, "--json").out).get("alias") in (None, "")
    assert "alias round" not in cli("search", "PSP", "--explain").out


def test_typed_words_never_reach_concept_tokens(cli: Any) -> None:
    """The concept tokens are asked for only by a query that uses a group member: no typed
    word or prefix reaches one ("ω", "ωxg", a whole token, or the Latin that follows the
    ω); only a word starting with ω needs a column filter to keep it so (``build_query``)."""
    assert cli("add", "We deploy checkout with Argo CD every Tuesday.").rc == 0
    token = expansions.token(GROUPS[0])
    assert token.startswith("ω")
    for typed in ("ω", "ωx", "Ωxg", "xg", token, token[1:], f"{token} {token[:5]}"):
        assert _hits(cli, typed) == [], typed
    assert _hits(cli, "ship")  # the group's own members still reach it


def test_index_time_group_lookup_agrees_with_the_attribution_one() -> None:
    """``matched_groups`` (indexing's fast path, once per memory) finds exactly the groups,
    in the same order, that ``matched_members`` (attribution) names."""
    import random

    words = [m for g in GROUPS for m in g] + ["the", "deployed", "shipping", "retries", "数据", "rate", "limiting"]
    rnd = random.Random(20261130)
    for _ in range(5000):
        text = " ".join(rnd.choice(words) for _ in range(rnd.randint(0, 12)))
        assert BUILTIN.matched_groups(text) == list(BUILTIN.matched_members(text)), text


def test_a_concept_token_is_named_by_its_group_not_its_place() -> None:
    """Two maps that number a group differently give it the same token, so a process still
    holding an older map (another one re-derived the index with a new map) neither writes
    nor asks for a token that means another concept in the index."""
    old = expansions.for_config([["pto", "vacation"], ["oncall", "pager"]])
    new = expansions.for_config([["oncall", "pager"]])
    assert old.tokens("pager rotation") == new.tokens("pager rotation")
    assert not set(old.tokens("vacation requests go through HR")) & set(new.tokens("pager"))
    assert old.digest != new.digest  # the index still re-derives on a map change


@pytest.mark.parametrize("query", ["\x00", "a\x00b", "\x00\x00 deploy", "部署\x00"])
def test_a_nul_in_the_query_is_text_not_an_fts_error(cli: Any, query: str) -> None:
    """The MCP tool can pass a NUL the shell cannot: FTS5 took it for the end of the
    string ("unterminated string") and search crashed."""
    from openmemex.context import Context
    from openmemex.search import search

    assert cli("add", "We deploy checkout on Fridays. 部署在周五。").rc == 0
    ctx = Context.load(Path.cwd())
    try:
        hits = search(ctx, query).hits
    finally:
        ctx.close()
    assert bool(hits) == any(w in query for w in ("deploy", "部署"))  # the words around it still count


def test_the_literal_bonus_reads_the_candidates_texts_not_their_whole_rows(cli: Any, data_root: Path,
                                                                          git_repo: Path) -> None:  # fmt: skip
    """An identifier in the query (``PAYMENTS_WEBHOOK_SECRET``) gives the candidates holding it
    verbatim a bonus: their text, tags and aliases are read for every candidate, and the
    whole row only for the few shown (reading whole rows for 40 candidates cost more than
    the rest of such a search). The bonus still decides the order."""
    from openmemex.context import Context
    from openmemex.search import search

    folder = paths.scope_dir(data_root, "personal")
    for n in range(40):  # the query's words rare enough to weigh (bm25 gives a word in most rows nothing)
        _write(folder, f"Rotate the payments webhook secret number {n} every quarter." if n % 4 == 0 else
               f"Invoice {n} is rendered as a PDF by the billing worker.", scope="personal")  # fmt: skip
    exact = _write(folder, "PAYMENTS_WEBHOOK_SECRET lives in the vault under payments/.", scope="personal")
    with Context.load(git_repo) as ctx:
        search(ctx, "warm up")
        statements: list[str] = []
        ctx.conn.set_trace_callback(statements.append)
        hits = search(ctx, "PAYMENTS_WEBHOOK_SECRET", limit=3).hits
        ctx.conn.set_trace_callback(None)
    assert hits[0].id == exact
    texts = [s for s in statements if s.startswith("SELECT rowid, content, tags, aliases FROM memories")]
    whole = [s for s in statements if s.startswith("SELECT * FROM memories WHERE rowid IN")]
    assert len(texts) == 1 and texts[0].split("json_each(", 1)[1].count(",") >= 8  # every candidate's, in one read
    assert whole and all(s.split("json_each(", 1)[1].count(",") < 6 for s in whole)  # the shown rows only
