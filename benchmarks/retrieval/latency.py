#!/usr/bin/env python
"""What the issue-10 search layers cost: in-process ``search.search`` at N memories (run.py's
generator and its 50 queries, or the eval set's, one warm ``Context`` per index layout, as
the MCP server keeps one), for BM25 alone (expansions, alias rounds and the literal bonus
ablated), each layer added, and the vector lane on top (wordllama, vectors computed first,
on the default's own connection: the pair differs by the lane alone).
The reconcile before each search (identical in every configuration) is left out.

    python benchmarks/retrieval/latency.py                 # 10,000 memories
    python benchmarks/retrieval/latency.py --size 2000 --rounds 2

Never run by the test suite.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from isolation import ISOLATE_ENV
from run import QUERIES, generate_store, machine_facts

CONFIGS = (  # name, OPEN_MEMEX_SEARCH_ABLATE, embeddings
    ("bm25 only (before issue 10's layers)", "no-expansions,no-aliases,no-literal", "off"),
    ("+ D80 expansions", "no-aliases,no-literal", "off"),
    ("+ D81 alias rounds", "no-literal", "off"),
    ("+ literal bonus (the default)", "", "off"),
    ("+ vector lane (wordllama)", "", "wordllama"),
)
# The lane changes nothing in the index the default searches (its vectors are a table of
# their own): it runs on the default's data root and connection, turned on per call, so
# the pair differs by the lane alone. Each other configuration has its own root (the
# ablations index differently), and those roots' pages compete for the machine's caches.
LANE = len(CONFIGS) - 1
SHARES_ROOT = {LANE: LANE - 1}
# Names a team defines (D81): most queries name none of them; "kubernetes helm chart" and
# "服务器超时" do, and take the extra round (shown apart below).
ALIAS_PAIRS = (("psp", "payment service provider"), ("bff", "backend for frontend"), ("k8s", "kubernetes"),
               ("dq", "data quality"), ("服务器", "server"))  # fmt: skip


class _NoSync:
    @staticmethod
    def sync(*_args: object, **_kwargs: object) -> None:
        return None


def _eval_store(ctx: object, size: int) -> None:
    """``size`` memories cycling through the eval set's texts, half personal, half outbox."""
    from evalset import load_corpus

    from openmemex import memfile, store
    from openmemex.ids import new_ulid, now_rfc3339
    from openmemex.model import Memory

    items = list(load_corpus().items.values())
    stamp = now_rfc3339()
    for n in range(size):
        item = items[n % len(items)]
        personal = n % 2 == 0
        folder = ctx.personal_dir if personal else ctx.outbox_dir  # type: ignore[attr-defined]
        key = "personal" if personal else ctx.project.key  # type: ignore[attr-defined]
        memory = Memory(id=new_ulid(), scope="personal" if personal else "project", scope_key=key,
                        body=f"{item.body} (#{n})", tags=item.tags, created_at=stamp, updated_at=stamp)  # fmt: skip
        folder.mkdir(parents=True, exist_ok=True)
        store.write_atomic(folder / f"{memory.id}.md", memfile.serialize(memory))


def _eval_queries() -> list[str]:
    from evalset import load_queries

    return [q.text for q in load_queries()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5, help="passes over the 50 queries")
    parser.add_argument("--seed", type=int, default=20240601)
    parser.add_argument("--corpus", choices=("synthetic", "eval"), default="synthetic",
                        help="run.py's generator (every memory dense with the synonym groups' words: 32 "
                             "variants each, the worst case) or the eval set's memories repeated to the size "
                             "with its queries (about 7 variants each)")  # fmt: skip
    args = parser.parse_args()
    for name in ISOLATE_ENV:
        os.environ.pop(name, None)
    base = Path(tempfile.mkdtemp(prefix="omx-latency-"))
    project = base / "project"
    project.mkdir()
    from openmemex import freshness
    from openmemex import search as search_module
    from openmemex.aliases import rounds
    from openmemex.context import Context
    from openmemex.search import search
    from openmemex.write import add_memory

    try:
        print(machine_facts())
        os.environ["OPEN_MEMEX_HOME"] = str(base / "root0")
        ctx = Context.load(project)
        started = time.perf_counter()
        if args.corpus == "eval":
            _eval_store(ctx, args.size)
        else:
            generate_store(ctx, args.size, args.seed)
        query_list = _eval_queries() if args.corpus == "eval" else list(QUERIES)
        for alias, target in ALIAS_PAIRS:  # alias/target pairs, so some queries take extra rounds
            add_memory(ctx, f"{alias} is what we call {target} here", alias=alias, target=target)
        ctx.close()
        print(f"store: {args.size:,} memories + {len(ALIAS_PAIRS)} alias pairs ({time.perf_counter() - started:.0f} s)")
        # One data root per index layout (with and without expansions, with vectors), so the
        # configurations can take turns query by query and share the machine's drift.
        contexts = []
        for i, (name, ablate, _model) in enumerate(CONFIGS):
            if i in SHARES_ROOT:
                contexts.append(contexts[SHARES_ROOT[i]])
                continue
            root = base / f"root{i}"
            if i:
                shutil.copytree(base / "root0" / "memories", root / "memories")
            model = next((CONFIGS[j][2] for j, k in SHARES_ROOT.items() if k == i), "off")
            (root / "config.json").write_text(f'{{"embeddings": "{model}"}}')
            os.environ["OPEN_MEMEX_HOME"] = str(root)
            os.environ["OPEN_MEMEX_SEARCH_ABLATE"] = ablate
            ctx = Context.load(project)
            t0 = time.perf_counter()
            search(ctx, "warm up", scope="both")  # indexes, attaches the map, embeds (when a lane shares it)
            print(f"{name}: first search {time.perf_counter() - t0:.1f} s", flush=True)
            contexts.append(ctx)
        # The warm reconcile (a stat of every file, ~35 ms at 10k without the MCP server's
        # watcher) is the same for every configuration: time the search itself.
        search_module.freshness = _NoSync  # type: ignore[assignment]
        samples: list[list[float]] = [[] for _ in CONFIGS]
        rng = random.Random(args.seed)
        order: list[str] = []
        for _ in range(args.rounds):
            queries = list(query_list)
            rng.shuffle(queries)
            order.extend(queries)
            for query in queries:
                for i, (_name, ablate, model) in enumerate(CONFIGS):
                    os.environ["OPEN_MEMEX_SEARCH_ABLATE"] = ablate
                    t = time.perf_counter()
                    search(contexts[i], query, scope="both", limit=8, embeddings=model != "off")
                    samples[i].append((time.perf_counter() - t) * 1000)
        search_module.freshness = freshness
        for ctx in {id(c): c for c in contexts}.values():
            ctx.close()
        base_p50, base_mean = statistics.median(samples[0]), statistics.fmean(samples[0])
        print(f"\nin-process search at {args.size:,}, {args.corpus} corpus ({args.rounds} × {len(query_list)} "
              "queries per configuration, "
              "taking turns, warm Context, reconcile excluded)\n")  # fmt: skip
        print("| configuration | p50 ms | mean ms | p90 ms | p50 vs bm25 | mean vs bm25 |")
        print("|---|---:|---:|---:|---:|---:|")
        for (name, _a, _m), got in zip(CONFIGS, samples, strict=True):
            p50, mean, p90 = statistics.median(got), statistics.fmean(got), sorted(got)[int(0.9 * len(got))]
            print(f"| {name} | {p50:.2f} | {mean:.2f} | {p90:.2f} | {100 * (p50 / base_p50 - 1):+.0f} % | "
                  f"{100 * (mean / base_mean - 1):+.0f} % |")  # fmt: skip
        fired = [i for i, q in enumerate(order) if rounds(q, list(ALIAS_PAIRS))]
        if fired:
            print(f"\nthe {len({order[i] for i in fired})} queries that take an alias round "
                  f"({', '.join(sorted({order[i] for i in fired}))}), mean ms:")  # fmt: skip
            for (name, _a, _m), got in zip(CONFIGS, samples, strict=True):
                print(f"  {name}: {statistics.fmean(got[i] for i in fired):.2f}")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
