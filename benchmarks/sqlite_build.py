#!/usr/bin/env python
"""How much of the query time is the SQLite build: the same index and queries, searched
through Python's own ``sqlite3`` (the system's libsqlite3; Debian's is built with
``OMIT_LOOKASIDE`` and ``SECURE_DELETE``) and through a wheel that bundles its own SQLite
(``pysqlite3-binary``), each in its own process, taking turns. It measures a choice the
product has not made: SPEC fixes "SQLite FTS5 from the standard library".

    python benchmarks/run.py --sizes 10000,100000 --keep /tmp/stores   # build the stores once
    pip install --target /tmp/pysq pysqlite3-binary                     # not a dependency
    python benchmarks/sqlite_build.py /tmp/stores/n10000 /tmp/stores/n100000 --pysqlite3 /tmp/pysq

Rows: the ranking statement alone (``search._fetch``'s bm25 top-k over the expression the
product builds) and the whole in-process ``search`` with the freshness check skipped (as
run.py's "query" column). Never run by the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROUNDS = 3


def child(store: Path, engine: str) -> dict[str, object]:
    if engine == "pysqlite3":
        import pysqlite3.dbapi2 as bundled  # type: ignore[import-not-found]

        sys.modules["sqlite3"] = bundled  # before openmemex imports it
    sys.path.insert(0, str(HERE))
    os.environ["OPEN_MEMEX_HOME"] = str(store / "home")
    import sqlite3

    from run import QUERIES, SEARCH_LIMIT, freshness_skipped

    from openmemex.context import Context
    from openmemex.search import WEIGHTS, _expression, search

    weights = ", ".join(str(w) for w in WEIGHTS)
    ranking = (f"SELECT rowid, bm25(memories_fts, {weights}) AS score FROM memories_fts "
               "WHERE memories_fts MATCH ? ORDER BY score, rowid LIMIT ?")  # fmt: skip
    ctx = Context.load(store / "project")
    conn = sqlite3.connect(f"file:{store / 'home' / 'index.db'}?mode=ro", uri=True)
    expressions = [_expression(q) for q in QUERIES]
    sql: list[float] = []
    whole: list[float] = []
    with freshness_skipped():
        for query, expression in zip(QUERIES, expressions, strict=True):  # warm-up
            conn.execute(ranking, (expression, 40)).fetchall()
            search(ctx, query, scope="both", limit=SEARCH_LIMIT)
        for _ in range(ROUNDS):
            for query, expression in zip(QUERIES, expressions, strict=True):
                start = time.perf_counter()
                conn.execute(ranking, (expression, 40)).fetchall()
                sql.append(time.perf_counter() - start)
                start = time.perf_counter()
                search(ctx, query, scope="both", limit=SEARCH_LIMIT)
                whole.append(time.perf_counter() - start)
    conn.close()
    ctx.close()
    return {"version": sqlite3.sqlite_version, "sql": sql, "search": whole}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("stores", nargs="+", type=Path, help="stores run.py --keep built (DIR/n<N>)")
    parser.add_argument("--pysqlite3", type=Path, required=True, help="a folder holding pysqlite3 (pip --target)")
    parser.add_argument("--turns", type=int, default=2, help="processes per engine, taking turns")
    parser.add_argument("--child", nargs=2, metavar=("STORE", "ENGINE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(Path(args.child[0]), args.child[1])))
        return 0
    print("| store | engine | SQLite | ranking SQL p50 ms | mean ms | search p50 ms | mean ms |")
    print("|---|---|---|---:|---:|---:|---:|")
    for store in args.stores:
        samples: dict[str, dict[str, list[float]]] = {}
        versions: dict[str, str] = {}
        for _ in range(args.turns):
            for engine in ("system", "pysqlite3"):
                env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(args.pysqlite3), str(HERE.parent)]))
                done = subprocess.run([sys.executable, __file__, *map(str, args.stores[:1]), "--pysqlite3",
                                       str(args.pysqlite3), "--child", str(store), engine],
                                      env=env, capture_output=True, text=True, check=True)  # fmt: skip
                got = json.loads(done.stdout)
                versions[engine] = str(got["version"])
                into = samples.setdefault(engine, {"sql": [], "search": []})
                into["sql"] += got["sql"]
                into["search"] += got["search"]
        for engine, got in samples.items():
            cells = [f"{f(got[k]) * 1000:.2f}" for k in ("sql", "search") for f in (statistics.median, statistics.mean)]
            print(f"| {store.name} | {engine} | {versions[engine]} | {' | '.join(cells)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
