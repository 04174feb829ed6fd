"""Issue 11: the index may change shape (schema, paths, batching, fingerprint), never what
search answers. A seeded store with every lifecycle case (tests/golden/make_search_golden.py)
is searched in-process and through the CLI, and compared with the checked-in golden:
ids, order, snippets, rounded scores, lanes, tiers and ``--explain``'s hidden counts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_process
from tests.golden.make_search_golden import GOLDEN, build_store, golden, placeless, queries

IN_PROCESS_ONLY = ("reason", "location", "path")  # Hit fields the CLI's JSON does not carry


def _expected() -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(GOLDEN.read_text("utf-8"))["queries"]
    return data


def test_golden_covers_every_lifecycle_case() -> None:
    hits = [h for q in _expected() for h in q["hits"]]
    assert len(_expected()) >= 40
    assert {h["review_state"] for h in hits} >= {"approved", "published", "proposed", "draft", "rejected"}
    assert {h["status"] for h in hits} >= {"active", "deprecated"}
    assert {h["location"] for h in hits} == {"personal", "outbox", "repo"}
    assert {h["matched_via"] for h in hits} >= {"body", "tags", "alias", "synonym"}
    assert any(q["hidden_superseded"] for q in _expected()) and any(q["hidden_retracted"] for q in _expected())
    assert any(q["rewrites"] for q in _expected())  # D81 alias rounds
    assert any(any("\u4e00" <= c <= "\u9fff" for c in q["text"]) for q in _expected())


def test_search_answers_match_the_golden(data_root: Path) -> None:
    got = golden(data_root.parent, shim=False)["queries"]
    expected = _expected()
    assert [q["text"] for q in got] == [q["text"] for q in expected]
    for now, then in zip(got, expected, strict=True):
        assert now == then, f"search {now['text']!r} ({now['project']}, scope {now['scope']}) changed"


def test_cli_json_matches_the_golden(cli: Any, data_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base = data_root.parent
    by_id = build_store(base)
    for q, then in zip(queries(), _expected(), strict=True):
        monkeypatch.chdir(base / "projects" / q["project"])
        args = ["search", q["text"], "--json", "--scope", q["scope"], "--limit", str(q.get("limit", 8))]
        if q.get("type"):
            args += ["--type", q["type"]]
        result = cli(*args)
        assert result.rc == 0, result.err
        hits = json.loads(result.out)["hits"]
        for hit in hits:
            hit["id"] = by_id.get(hit["id"], "?")
        hits = placeless({"hits": hits}, base)["hits"]
        expected = [{k: v for k, v in h.items() if k not in IN_PROCESS_ONLY} for h in then["hits"]]
        assert hits == expected, f"CLI search {q['text']!r} changed"


def test_explain_reports_hidden_counts(data_root: Path) -> None:
    """A real process, as a user runs it: --explain says what lifecycle hid."""
    base = data_root.parent
    build_store(base)
    explained = [q for q in _expected() if q["hidden_superseded"] and q["hidden_retracted"]]
    assert explained
    q = explained[0]
    result = run_process("search", q["text"], "--explain", "--scope", q["scope"], cwd=base / "projects" / q["project"])
    assert result.rc == 0, result.err
    assert (
        f"hidden by lifecycle: {q['hidden_superseded']} superseded, {q['hidden_retracted']} retracted/archived"
        in result.out
    )
    assert f"candidates: {q['candidates']}," in result.out
