#!/usr/bin/env python
"""The search golden (issue 11): a seeded store with every lifecycle case, ~40 queries,
and what search answers — ids (as corpus keys), order, snippets, rounded scores, the
hit's lane and tier, and ``--explain``'s hidden counts. An index change (schema, paths,
fingerprint, batching) must leave all of it as it was; ``tests/test_index_golden.py``
compares against the checked-in ``search_golden.json``.

    python tests/golden/make_search_golden.py          # compare with the checked-in file
    python tests/golden/make_search_golden.py --write  # regenerate it (say why in the commit)

The store is the retrieval eval corpus (benchmarks/retrieval/memories.txt) plus a few
cases it lacks, with ids made from the corpus order, so the files are the same on every
run. Run it in a throw-away data root only: it sets OPEN_MEMEX_HOME itself.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import json
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent / "search_golden.json"
sys.path.insert(0, str(ROOT / "benchmarks" / "retrieval"))

from evalset import Corpus, Item, build, load_corpus, load_queries  # noqa: E402

PER_KIND = 4  # queries taken from each kind of the eval set (in file order, spread out)
ID_EPOCH_MS = 1_767_600_000_000  # 2026-01-05: the ids' time part

# Cases the eval corpus lacks: a three-member personal chain, a chain whose head is
# retracted, Chinese aliases, an archived personal memory, English aliases on a
# reviewed memory, a high-importance published one, a proposed one superseding.
EXTRA: list[Item] = [
    Item("x01", None, "preference", "draft", "superseded", ["editor"], "Use tabs of width 4 in the Makefile templates."),
    Item("x02", None, "preference", "draft", "superseded", ["editor"], "Use tabs of width 8 in the Makefile templates, as make expects."),
    Item("x03", None, "preference", "draft", "active", ["editor"], "Makefile templates indent recipes with one tab; width is the editor's business."),
    Item("x04", None, "fact", "draft", "superseded", ["vpn"], "The office VPN profile is vpn-old.ovpn from the IT wiki."),
    Item("x05", None, "fact", "draft", "retracted", ["vpn"], "The office VPN profile moved to WireGuard, config from the IT portal."),
    Item("x06", None, "observation", "draft", "archived", ["laptop"], "The old laptop's battery lasts two hours on a Zoom call."),
    Item("x07", "checkout-api", "gotcha", "approved", "active", ["队列", "queue"],
         "消息队列的消费者必须幂等：同一条消息可能投递两次，用消息 ID 去重。", aliases=["MQ", "消息中间件"]),
    Item("x08", "checkout-api", "fact", "published", "active", ["cache"],
         "The price cache in Redis expires after 300 seconds; a stale price is never charged.",
         aliases=["price TTL", "redis expiry"], importance="high"),
    Item("x09", "checkout-api", "decision", "proposed", "active", ["payments", "retry"],
         "Stripe requests are retried at most twice with jitter; the dunning job owns longer retries.",
         supersedes="c51"),
]

# Queries beyond the eval set's: other scopes, a type filter, aliases, chains.
EXTRA_QUERIES: list[dict[str, Any]] = [
    {"project": "checkout-api", "text": "Makefile tabs", "scope": "personal"},
    {"project": "checkout-api", "text": "office VPN profile", "scope": "both"},
    {"project": "checkout-api", "text": "laptop battery", "scope": "all"},
    {"project": "checkout-api", "text": "消息队列 幂等", "scope": "both"},
    {"project": "checkout-api", "text": "MQ consumers", "scope": "project"},
    {"project": "checkout-api", "text": "price TTL", "scope": "both"},
    {"project": "checkout-api", "text": "v1 charges endpoint removal", "scope": "both"},
    {"project": "checkout-api", "text": "retry", "scope": "both", "type": "gotcha"},
    {"project": "checkout-api", "text": "stripe retry", "scope": "all", "limit": 20},
    {"project": "atlas-web", "text": "deploy", "scope": "all", "limit": 12},
    {"project": "mobile-app", "text": "小程序 登录", "scope": "both"},
    {"project": "dataflow", "text": "DQ checks", "scope": "both"},
    {"project": "infra-tools", "text": "k8s", "scope": "both"},
]


def corpus() -> Corpus:
    base = load_corpus()
    items = dict(base.items)
    for item in EXTRA:
        items[item.key] = Item(**vars(item))
    chains = {"x02": "x01", "x03": "x02", "x05": "x04"}
    for new, old in chains.items():
        items[new].supersedes = old
    for item in items.values():
        if item.supersedes:
            older = items[item.supersedes]
            older.superseded_by = item.key
            if older.status == "active":
                older.status = "superseded"
    return Corpus(items, base.projects)


def queries() -> list[dict[str, Any]]:
    by_kind: dict[str, list[Any]] = {}
    for query in load_queries():
        by_kind.setdefault(query.kind, []).append(query)
    out: list[dict[str, Any]] = []
    for kind, group in by_kind.items():
        step = max(1, len(group) // PER_KIND)
        for query in group[::step][:PER_KIND]:
            out.append({"kind": kind, "project": query.project, "text": query.text, "scope": "both"})
    out.extend({"kind": "extra", **q} for q in EXTRA_QUERIES)
    return out


def _ulid(n: int) -> str:
    from openmemex.ids import CROCKFORD

    value = ((ID_EPOCH_MS + n * 1000) << 80) | (0xC0FFEE << 40) | n
    return "".join(CROCKFORD[(value >> (5 * i)) & 31] for i in reversed(range(26)))


@contextmanager
def fixed_ids() -> Iterator[None]:
    """Ids from the corpus order: the same files (names, so rowids) on every run."""
    from openmemex import ids

    counter = iter(range(1, 10**6))
    saved = ids.new_ulid
    ids.new_ulid = lambda now_ms=None: _ulid(next(counter))
    try:
        yield
    finally:
        ids.new_ulid = saved


@contextmanager
def sorted_scan() -> Iterator[None]:
    """Files indexed in name order, so rowids — which break bm25 ties — are the same on
    every file system (ext4 lists a folder in hash order). Since issue 11 ``reconcile``
    does this itself; the shim lets a commit from before it regenerate the same golden."""
    from openmemex import freshness

    scan = getattr(freshness, "_scan", None)
    if scan is None:
        yield
        return

    def ordered(folder: Path, only: set[str] | None = None) -> Any:
        found, *rest = scan(folder, only)  # (found, odd) before, (found, odd, scanned) now
        return (dict(sorted(found.items())), *rest)

    freshness._scan = ordered
    try:
        yield
    finally:
        freshness._scan = scan


def build_store(base: Path) -> dict[str, str]:
    """The store under ``base`` (data root ``base/data``); returns id → key."""
    with fixed_ids():
        keys = build(base, corpus())
    return {v: k for k, v in keys.items()}


def run_in_process(base: Path, by_id: dict[str, str]) -> list[dict[str, Any]]:
    """Every query through ``openmemex.search.search`` with ``explain``: hits and counts."""
    from openmemex.context import Context
    from openmemex.search import search

    warnings: list[str] = []
    out = []
    for q in queries():
        with Context.load(base / "projects" / q["project"], warn=warnings.append) as ctx:
            result = search(ctx, q["text"], scope=q["scope"], type=q.get("type"), limit=q.get("limit", 8),
                            explain=True)  # fmt: skip
        hits = []
        for hit in result.hits:
            shown = hit.to_json()
            shown["id"] = by_id.get(hit.id, "?")
            shown["reason"] = hit.reason
            shown["location"] = hit.location
            shown["path"] = os.path.relpath(hit.path, base)
            hits.append(shown)
        out.append({
            **q,
            "expression": result.expression,
            "rewrites": result.rewrites,
            "candidates": result.candidates,
            "hidden_superseded": result.hidden_superseded,
            "hidden_retracted": result.hidden_retracted,
            "hits": hits,
        })  # fmt: skip
    assert not warnings, warnings
    return out


def golden(base: Path, shim: bool = True) -> dict[str, Any]:
    """What the store under ``base`` answers; ``shim``: index files in name order even if
    this commit's ``reconcile`` does not (the test runs the product as it is)."""
    by_id = build_store(base)
    with sorted_scan() if shim else contextlib.nullcontext():
        return placeless({"queries": run_in_process(base, by_id)}, base)


def placeless(data: dict[str, Any], base: Path) -> dict[str, Any]:
    """A project that is not a git repository is keyed by its folder's path (D71), which
    differs from run to run: its key is written as ``project__<name>__<folder>``."""
    from openmemex.scope import resolve_project

    text = json.dumps(data, ensure_ascii=False)
    for folder in sorted((base / "projects").iterdir()):
        key = resolve_project(folder).key
        if not (folder / ".git").exists():
            text = text.replace(key, key.rsplit("__", 1)[0] + "__<folder>")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def dump(data: dict[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False, indent=1, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--write", action="store_true", help=f"write {GOLDEN.name} instead of comparing")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="omx-golden-") as tmp:
        base = Path(tmp)
        os.environ.update({"OPEN_MEMEX_HOME": str(base / "data"), "HOME": str(base / "home"),
                           "XDG_CONFIG_HOME": str(base / "home" / ".config"),
                           "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull})  # fmt: skip
        os.environ.pop("XDG_DATA_HOME", None)
        (base / "home").mkdir()
        text = dump(golden(base))
    if args.write:
        GOLDEN.write_text(text, "utf-8")
        print(f"wrote {GOLDEN} ({len(json.loads(text)['queries'])} queries)")
        return 0
    old = GOLDEN.read_text("utf-8") if GOLDEN.exists() else ""
    if old == text:
        print("search golden: unchanged")
        return 0
    sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), text.splitlines(True), "checked-in", "now"))
    return 1


if __name__ == "__main__":
    sys.exit(main())
