"""audit (D57): every check finds its problem, names the command that fixes it, and
changes nothing — not even a chain repair."""

from __future__ import annotations

import json
import random
import shutil
from itertools import combinations
from pathlib import Path
from typing import Any

from openmemex import freshness
from openmemex.audit import _drift, near_duplicates
from openmemex.context import Context
from openmemex.doctor import _chains
from openmemex.ids import new_ulid
from openmemex.text import jaccard, similarity_tokens
from tests.helpers import personal_text

OLD = 'created_at: "2020-01-01T00:00:00Z"\nupdated_at: "2020-01-01T00:00:00Z"'


def add(cli: Any, text: str, *args: str) -> str:
    result = cli("add", text, *args, "--json")
    assert result.rc == 0, result.err
    return str(json.loads(result.out)["id"])


def _write(folder: Path, memory_id: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{memory_id}.md"
    path.write_text(text)
    return path


def _state(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(root.rglob("*.md"))}


def test_each_check_finds_its_problem_and_names_the_fix(cli: Any, data_root: Path, git_repo: Path) -> None:
    near_a = add(cli, "the payments service retries failed webhooks three times with backoff", "--scope", "personal")
    near_b = add(cli, "the payments service retries failed webhooks three times with a backoff", "--scope", "personal")
    personal = data_root / "memories" / "personal"
    stale = new_ulid()
    _write(personal, stale, personal_text(stale, "an old truth nobody touched").replace(
        'created_at: "2026-09-26T12:00:00Z"\nupdated_at: "2026-09-26T12:00:00Z"', OLD))
    dangling, missing = new_ulid(), new_ulid()
    _write(personal, dangling, personal_text(dangling, "replaced by a file that was deleted", status="superseded",
                                             superseded_by=missing))  # fmt: skip
    _write(personal, new_ulid(), "---\nid: [unclosed\n---\nbroken yaml\n")
    dup = add(cli, "a memory copied by hand into the outbox", "--scope", "personal")
    ctx = Context.load()
    ctx.outbox_dir.mkdir(parents=True, exist_ok=True)
    shutil.copy(personal / f"{dup}.md", ctx.outbox_dir / f"{dup}.md")
    leaked = new_ulid()
    _write(git_repo / ".ai" / "open-memex", leaked, personal_text(leaked, "my home wifi is slow"))
    one, two = new_ulid(), new_ulid()
    _write(personal, one, personal_text(one, "first version of the rule", status="superseded", superseded_by=two))
    _write(personal, two, personal_text(two, "second version of the rule"))  # lacks supersedes: one-sided; after the last add, whose read would heal it

    before = _state(data_root) | _state(git_repo)
    result = cli("audit")
    assert result.rc == 0, result.err
    assert _state(data_root) | _state(git_repo) == before  # read-only: the one-sided chain was NOT repaired
    assert result.out.startswith("audit: ") and "read-only, nothing was changed" in result.out
    doc = json.loads(cli("audit", "--json").out)
    checks = {c["name"]: c for c in doc["checks"]}
    assert list(checks) == ["near-duplicates", "stale", "supersede chains", "duplicate ids", "personal in repo",
                            "index drift", "unreadable files"]  # fmt: skip
    [pair] = checks["near-duplicates"]["findings"]
    assert pair["subject"] == f"{near_a} ~ {near_b}" and pair["fix"].startswith(f"open-memex forget {near_a} --soft")
    [old] = checks["stale"]["findings"]
    assert old["subject"] == stale and f"open-memex status {stale} archived" in old["fix"]
    chains = {f["subject"]: f for f in checks["supersede chains"]["findings"]}
    assert chains[dangling]["fix"].endswith(f"else open-memex status {dangling} active")  # or import the rest of a chain
    assert f"{one} → {two}" in chains and "any read repairs it" in chains[f"{one} → {two}"]["fix"]
    assert [f["subject"] for f in checks["duplicate ids"]["findings"]] == [dup]
    [repo] = checks["personal in repo"]["findings"]
    assert repo["subject"] == f".ai/open-memex/{leaked}.md" and repo["fix"].startswith(f"git rm .ai/open-memex/{leaked}.md")
    assert checks["index drift"]["ok"]
    [broken] = checks["unreadable files"]["findings"]
    assert "invalid YAML" in broken["detail"] and broken["fix"].startswith("fix or delete")
    assert doc["findings"] == 7
    assert "fix: " in result.out and "open-memex status" in result.out and "7 finding(s)." in result.out

    # doctor reports the same chain problems through the same function (after healing)
    conn = Context.load().conn
    assert f"{dangling} is superseded but its replacement {missing} is missing" in _chains(conn, Context.load().folders("personal")).detail


def test_a_clean_store_has_no_findings(cli: Any) -> None:
    add(cli, "one fine memory")
    result = cli("audit", "--scope", "project")
    assert result.rc == 0 and result.out.rstrip().endswith("No findings.") and result.out.count("  ok    ") == 7


def test_drift_is_reported(cli: Any, data_root: Path) -> None:
    memory_id = add(cli, "a file removed behind the index's back", "--scope", "personal")
    ctx = Context.load()
    folders = ctx.folders("personal")
    freshness.reconcile(ctx.conn, folders)
    (ctx.personal_dir / f"{memory_id}.md").unlink()
    [finding] = _drift(ctx.conn, folders)
    assert finding.detail == "0 file(s) not indexed, 1 row(s) whose file is gone" and finding.fix == "open-memex reindex"
    ctx.close()


def test_near_duplicates_match_a_brute_force_search() -> None:
    """Prefix filtering finds exactly the pairs an all-pairs comparison finds."""
    rng = random.Random(3)
    vocab = [f"w{i}" for i in range(40)]
    rows = []
    base = [rng.sample(vocab, 10) for _ in range(30)]
    for i in range(300):
        words = list(rng.choice(base))
        for _ in range(rng.randint(0, 3)):
            words[rng.randrange(len(words))] = rng.choice(vocab)
        rows.append({"id": f"{i:026d}", "scope_key": "personal", "content": " ".join(words), "updated_at": float(i)})
    found = {f.subject for f in near_duplicates(rows)}  # type: ignore[arg-type]
    expected = set()
    for a, b in combinations(rows, 2):
        la, lb = len(a["content"]), len(b["content"])
        if min(la, lb) / max(la, lb) >= 0.5 and jaccard(similarity_tokens(a["content"]), similarity_tokens(b["content"])) >= 0.8:
            expected.add(f"{a['id']} ~ {b['id']}")
    assert found == expected and len(expected) > 20
