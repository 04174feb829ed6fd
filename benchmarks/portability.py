#!/usr/bin/env python
"""Export and import at scale: how long moving a store to another machine takes.

For each size N: a throw-away data root with N synthetic memories (``run.py``'s generator,
half personal, half the project outbox, 20 % Chinese), indexed once (not timed), then
timed in-process through the same core calls the CLI makes: ``export --scope both --all``,
``import`` into an empty data root, the same import again (every memory identical), an
``import --dry-run`` of it, and — the other commands of the visibility issue — ``inventory
--format html`` and ``audit`` on the imported store. The two inventories (JSON) must be
equal, or the run fails.

    python benchmarks/portability.py                  # N = 10,000
    python benchmarks/portability.py --sizes 1000,10000,100000 --keep /tmp/memex-port

Never run by the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
from pathlib import Path

from isolation import ISOLATE_ENV
from run import DEFAULT_SEED, generate_store, machine_facts, say, timed

from openmemex import freshness
from openmemex.audit import audit
from openmemex.context import Context
from openmemex.export import export_bundle
from openmemex.importer import import_bundle
from openmemex.inventory import to_json
from openmemex.inventory_html import render_html
from openmemex.listing import inventory


def use_root(root: Path, project: Path) -> Context:
    os.environ["OPEN_MEMEX_HOME"] = str(root)
    return Context.load(project)


def inventory_doc(ctx: Context) -> dict[str, object]:
    """The inventory as of one fixed moment, so relative times ("saved 3 minutes ago")
    compare equal however long the import took."""
    listing = inventory(ctx)
    listing.generated_at = 2_000_000_000.0
    return to_json(listing, "both")


def bench(n: int, base: Path, seed: int) -> dict[str, float]:
    project = base / "project"
    project.mkdir(parents=True)
    row: dict[str, float] = {"n": n}
    with use_root(base / "machine-a", project) as ctx:
        if ctx.project.repo is not None:
            raise SystemExit(f"{project} is inside a git repository; use a --keep dir outside any repo")
        generate_store(ctx, n, seed)
        freshness.sync(ctx, "both")
        before = inventory_doc(ctx)
        result, row["export_s"] = timed(export_bundle, ctx, str(base / "all.tar.gz"), scope="both", include_private=True)
        if result.exported != n:
            raise RuntimeError(f"exported {result.exported} of {n}")
    row["bundle_mb"] = (base / "all.tar.gz").stat().st_size / 1e6
    say(f"N={n:,}: export {row['export_s']:.2f} s, bundle {row['bundle_mb']:.1f} MB")
    with use_root(base / "machine-b", project) as ctx:
        dry, row["dry_run_s"] = timed(import_bundle, ctx, base / "all.tar.gz", dry_run=True)
        first, row["import_s"] = timed(import_bundle, ctx, base / "all.tar.gz")
        again, row["reimport_s"] = timed(import_bundle, ctx, base / "all.tar.gz")
        if (len(dry.imported), len(first.imported), len(again.identical)) != (n, n, n):
            raise RuntimeError(f"dry run {len(dry.imported)}, import {len(first.imported)}, again {len(again.identical)} of {n}")
        if inventory_doc(ctx) != before:
            raise RuntimeError("the imported store's inventory differs from the exported one's")
        listing, row["inventory_html_s"] = timed(lambda: render_html(inventory(ctx, history_entries=True)))
        report, row["audit_s"] = timed(audit, ctx, "both")
    say(f"N={n:,}: import {row['import_s']:.2f} s, again {row['reimport_s']:.2f} s, dry run {row['dry_run_s']:.2f} s, "
        f"inventory html {row['inventory_html_s']:.2f} s ({len(listing) / 1e6:.1f} MB), audit {row['audit_s']:.2f} s "
        f"({report.findings} findings)")  # fmt: skip
    return row


def table(rows: list[dict[str, float]]) -> str:
    head = ("| memories | bundle | export | import (empty root) | import again (all identical) | import --dry-run "
            "| inventory --format html | audit |\n|---:|---:|---:|---:|---:|---:|---:|---:|")  # fmt: skip
    lines = [
        f"| {int(r['n']):,} | {r['bundle_mb']:.1f} MB | {r['export_s']:.2f} s | {r['import_s']:.2f} s | "
        f"{r['reimport_s']:.2f} s | {r['dry_run_s']:.2f} s | {r['inventory_html_s']:.2f} s | {r['audit_s']:.2f} s |"
        for r in rows
    ]
    return "\n".join([head, *lines])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000", help="comma-separated store sizes (default 10000)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--keep", type=Path, help="build the stores here and keep them")
    args = parser.parse_args()
    for name in ISOLATE_ENV:
        os.environ.pop(name, None)
    say(machine_facts())
    rows = []
    for n in (int(s) for s in args.sizes.split(",")):
        base = Path(tempfile.mkdtemp(prefix=f"memex-port-{n}-", dir=args.keep))
        try:
            rows.append(bench(n, base, args.seed))
        finally:
            if args.keep is None:
                shutil.rmtree(base, ignore_errors=True)
    say("\n" + table(rows))
    say(json.dumps(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
