"""Issue 10: the retrieval eval set (benchmarks/retrieval/) as a regression floor, run
in-process through the CLI. The floors sit well below the measured figures (the README
there has them); ``benchmarks/retrieval/eval.py`` runs the same set through real processes."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks" / "retrieval"))

from evalset import Outcome, build, load_corpus, load_queries, score

FLOORS = {  # measured after issue 10 (R@5 / MRR@10): all 0.954 / 0.887, vocabulary kinds 0.922 / 0.768
    "all": {"r5": 0.85, "mrr": 0.75},
    "paraphrase+synonym+cross": {"r5": 0.75, "mrr": 0.6},
    "exact": {"r5": 0.9, "mrr": 0.85},
    "identifier": {"r5": 0.9, "mrr": 0.8},
}


def test_eval_set_floors(cli: Any, data_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    corpus = load_corpus()
    queries = load_queries()
    assert len(corpus.items) >= 300 and len(queries) >= 150
    ids = build(data_root.parent, corpus)
    by_id = {v: k for k, v in ids.items()}
    outcomes = []
    for query in queries:
        monkeypatch.chdir(data_root.parent / "projects" / query.project)
        result = cli("search", query.text, "--json", "--limit", "10")
        assert result.rc == 0, result.err
        outcomes.append(Outcome(query, [by_id.get(h["id"], "?") for h in json.loads(result.out)["hits"]]))
    table = {k: v.ratios() for k, v in score(outcomes, corpus.inactive()).items()}
    assert table["all"]["leaks"] == 0  # superseded, retracted and archived memories never show
    for kind, floor in FLOORS.items():
        for metric, value in floor.items():
            assert table[kind][metric] >= value, (kind, metric, table[kind])
