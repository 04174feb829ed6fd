#!/usr/bin/env python
"""Retrieval quality through the real CLI: build the eval store, run every query as
``open-memex search QUERY --json --limit 10`` in its own process (cwd the project it is
asked from), and print R@1, R@5, MRR@10, nDCG@10, leaked inactive memories and zero-result
counts per kind. See README.md beside this file.

    python benchmarks/retrieval/eval.py
    python benchmarks/retrieval/eval.py --pythonpath /tmp/before      # another checkout's code
    python benchmarks/retrieval/eval.py --ablate tiers-strict,no-expansions
    python benchmarks/retrieval/eval.py --config '{"embeddings": "wordllama"}' --misses

Never run by the test suite (tests/test_retrieval_eval.py runs the same set in-process).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalset import Outcome, Query, build, load_corpus, load_queries, render, score
from isolation import ISOLATE_ENV


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pythonpath", help="run the CLI from this source tree (PYTHONPATH)")
    parser.add_argument("--ablate", default="", help="OPEN_MEMEX_SEARCH_ABLATE for the CLI (comma-separated)")
    parser.add_argument("--config", default="", help="JSON object written to the data root's config.json")
    parser.add_argument("--keep", type=Path, help="build the store here (must not exist) and keep it")
    parser.add_argument("--reuse", type=Path, help="reuse a store built with --keep")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--json-out", type=Path, help="write per-query outcomes here")
    parser.add_argument("--misses", action="store_true", help="list queries whose answer is not at rank 1")
    args = parser.parse_args(argv)

    corpus = load_corpus()
    queries = load_queries()
    if args.reuse:
        base = args.reuse
        ids = json.loads((base / "ids.json").read_text())
    else:
        base = args.keep or Path(tempfile.mkdtemp(prefix="omx-retrieval-"))
        if args.keep:
            base.mkdir(parents=True)
        ids = build(base, corpus)
        (base / "ids.json").write_text(json.dumps(ids))
        (base / "home").mkdir(exist_ok=True)
    if args.config:
        (base / "data" / "config.json").write_text(json.dumps(json.loads(args.config)))
    elif (base / "data" / "config.json").exists():
        (base / "data" / "config.json").unlink()
    env = {k: v for k, v in os.environ.items() if k not in ISOLATE_ENV}
    env.update({"HOME": str(base / "home"), "OPEN_MEMEX_HOME": str(base / "data"), "GIT_CONFIG_NOSYSTEM": "1",
                "OPEN_MEMEX_SEARCH_ABLATE": args.ablate, "PYTHONUNBUFFERED": "1"})  # fmt: skip
    if args.pythonpath:
        env["PYTHONPATH"] = str(Path(args.pythonpath).resolve())
    by_id = {v: k for k, v in ids.items()}
    try:
        started = time.perf_counter()
        for project in corpus.projects:  # index once per project before the parallel runs
            _search(base, env, project, "warm up")
        with ThreadPoolExecutor(max_workers=args.workers) as pool:
            outcomes = list(pool.map(lambda q: _outcome(base, env, q, by_id), queries))
        elapsed = time.perf_counter() - started
    finally:
        if not (args.keep or args.reuse):
            shutil.rmtree(base, ignore_errors=True)
    table = score(outcomes, corpus.inactive())
    who = args.pythonpath or "this checkout"
    print(f"# retrieval eval: {len(corpus.items)} memories, {len(queries)} queries, CLI from {who}"
          f"{', ablate ' + args.ablate if args.ablate else ''}{', config ' + args.config if args.config else ''}"
          f" ({elapsed:.0f} s)\n")  # fmt: skip
    print(render(table))
    if args.misses:
        print()
        for out in outcomes:
            rank = out.first_rank()
            if out.query.relevant and rank != 1:
                want = ",".join(k for k, g in out.query.relevant.items() if g == 2)
                print(f"{out.query.kind:10} rank {rank or '-':>2}  want {want:8} got {','.join(out.ranked[:5]):30} "
                      f"{' '.join(out.lanes[:5])}  {out.query.text}")  # fmt: skip
    if args.json_out:
        args.json_out.write_text(json.dumps(
            {"table": {k: v.ratios() for k, v in table.items()},
             "queries": [{"kind": o.query.kind, "query": o.query.text, "ranked": o.ranked, "lanes": o.lanes,
                          "rank": o.first_rank()} for o in outcomes]}, indent=1, ensure_ascii=False))  # fmt: skip
    return 0


def _search(base: Path, env: dict[str, str], project: str, text: str) -> dict[str, object]:
    proc = subprocess.run(
        [sys.executable, "-m", "openmemex", "search", text, "--json", "--limit", "10"],
        cwd=base / "projects" / project, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"search {text!r} failed ({proc.returncode}): {proc.stderr.strip()}")
    result: dict[str, object] = json.loads(proc.stdout)
    return result


def _outcome(base: Path, env: dict[str, str], query: Query, by_id: dict[str, str]) -> Outcome:
    result = _search(base, env, query.project, query.text)
    hits = result["hits"]
    assert isinstance(hits, list)
    return Outcome(query, [by_id.get(h["id"], "?") for h in hits], [str(h.get("lane", "bm25")) for h in hits])


if __name__ == "__main__":
    sys.exit(main())
