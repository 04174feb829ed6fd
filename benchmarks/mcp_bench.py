#!/usr/bin/env python
"""MCP server benchmark: cold start, warm tool calls per store size, and the tools/list size.

Everything is measured in one run so the ratios are comparable:

1. cold start: median of ``--runs`` fresh ``python -c "import mcp"`` against spawning
   ``python -m openmemex mcp`` (cwd a git repository with an origin, its own data root with a
   10k store) and timing spawn → the ``initialize`` reply line read from its stdout. The
   client is raw JSON-RPC over the pipes: the first reply is timed exactly, with no client
   library start-up in it.
2. warm ``memory_search`` per call at each ``--sizes`` store: one server per store, warm-up
   calls, then ``--calls`` tools/call round trips over a mix of queries (run.py's query list
   sorted into kinds, plus identifiers), each timed from the request write to the reply line;
   p50/p90/p99. Beside it, the same queries in-process: through the server's own
   ``Session`` (watcher, no wire; also right after another process changed one memory
   file) and through the CLI's core path (a fresh ``Context`` +
   ``search.search`` per query, no watcher, so it pays the stat scan); and ``memory_add``
   per call in the warm server.
3. the compact JSON size of ``tools/list`` as a client receives it.
4. whether the server process holds inotify watches (read from /proc) and the in-process
   watcher's counters.

    python benchmarks/mcp_bench.py                        # sizes 10000,100000
    python benchmarks/mcp_bench.py --sizes 10000 --calls 60
    python benchmarks/mcp_bench.py --keep                 # build the stores once, reuse them
    python benchmarks/mcp_bench.py --profile              # cProfile the in-process server path

Never run by the test suite.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from isolation import ISOLATE_ENV
from run import (
    EN_WORDS,
    QUERIES,
    chinese_body,
    english_body,
    generate_store,
    machine_facts,
    parse_sizes,
    percentile,
    say,
)

import openmemex
from openmemex import __version__, freshness
from openmemex.context import Context
from openmemex.lifecycle import forget
from openmemex.search import search
from openmemex.server.calls import Session
from openmemex.text import has_cjk, word_terms

DEFAULT_SIZES = (10_000, 100_000)
COLD_SIZE = 10_000
DEFAULT_SEED = 20240601
PROTOCOL = "2025-11-25"
ORIGIN = "git@github.com:acme/mcp-bench.git"
SEARCH_LIMIT = 8  # memory_search's default
WARMUP_CALLS = 5
CHANGED_RUNS = 10  # in-process searches right after one memory file changed
ADD_WORDS = 25  # what an agent saves is a sentence or two, not a stored memory's 80 words
TARGET_COLD_RATIO = 1.2
TARGET_TOOLS_BYTES = 10 * 1024
TARGET_P50_MS = {10_000: 15.0, 100_000: 60.0}
CACHE = Path(tempfile.gettempdir()) / "open-memex-mcp-bench"

# run.py's deliberate misses, and identifiers (what agents paste from code), which run.py's
# list has none of: snake case, a constant, a dotted name, a file name.
MISSES = ("kubernetes helm chart", "graphql subscription", "zebra quantum banana")
IDENTIFIERS = ("sqlite_busy_timeout", "OPEN_MEMEX_HOME", "FolderWatch.reconcile", "deploy.yaml")
KIND_ORDER = ("1 word", "2 words", "3 words", "question", "identifier", "Chinese", "mixed", "no hit")  # fmt: skip


def query_kind(query: str) -> str:
    if query in MISSES:
        return "no hit"
    if query in IDENTIFIERS:
        return "identifier"
    if has_cjk(query):
        return "mixed" if word_terms(query) else "Chinese"
    words = len(query.split())
    return {1: "1 word", 2: "2 words", 3: "3 words"}.get(words, "question")


def query_mix(calls: int, seed: int) -> list[tuple[str, str]]:
    """``calls`` (kind, query) pairs, the kinds taken in turn so each gets an equal share:
    run.py's 50 queries sorted into kinds, the identifiers, and one- and two-word queries
    drawn from run.py's vocabulary (its list has only a few of those)."""
    assert all(q in QUERIES for q in MISSES)
    rng = random.Random(seed)
    drawn = [*rng.sample(EN_WORDS, 6), *(" ".join(rng.sample(EN_WORDS, 2)) for _ in range(6))]
    by_kind: dict[str, list[str]] = {}
    for query in dict.fromkeys([*QUERIES, *IDENTIFIERS, *drawn]):
        by_kind.setdefault(query_kind(query), []).append(query)
    for queries in by_kind.values():
        rng.shuffle(queries)
    kinds = [k for k in KIND_ORDER if k in by_kind]
    mix = []
    for i in range(calls):
        kind = kinds[i % len(kinds)]
        queries = by_kind[kind]
        mix.append((kind, queries[(i // len(kinds)) % len(queries)]))
    return mix


# -- stores ----------------------------------------------------------------------------


@dataclass
class Store:
    n: int
    base: Path
    build_s: float | None = None  # None: reused from --keep

    @property
    def home(self) -> Path:
        return self.base / "home"

    @property
    def repo(self) -> Path:
        return self.base / "repo"

    def env(self) -> dict[str, str]:
        return {**os.environ, "OPEN_MEMEX_HOME": str(self.home)}

    def use(self) -> None:
        """Point this process's open-memex at the store (its data root comes from the env)."""
        os.environ["OPEN_MEMEX_HOME"] = str(self.home)


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def build_store(store: Store, seed: int) -> None:
    """A git repository with an origin (the project) and a data root holding ``n`` memories,
    written by run.py's generator and indexed once, so the first read is warm."""
    store.home.mkdir(parents=True)
    store.repo.mkdir()
    git("init", "-q", "-b", "main", cwd=store.repo)
    git("remote", "add", "origin", ORIGIN, cwd=store.repo)
    (store.repo / "README.md").write_text("mcp bench\n")
    git("add", "README.md", cwd=store.repo)
    git("commit", "-q", "-m", "initial", cwd=store.repo)
    store.use()
    start = time.perf_counter()
    with Context.load(store.repo) as ctx:
        if ctx.project.repo is None:
            raise RuntimeError(f"{store.repo} is not seen as a git repository")
        generate_store(ctx, store.n, seed)
        stats = freshness.sync(ctx, "both")
    if stats.added != store.n:
        raise RuntimeError(f"indexed {stats.added} of {store.n} files: {stats.summary()}")
    store.build_s = time.perf_counter() - start
    (store.base / "complete").write_text(f"{store.n} {seed} {__version__}\n")


def open_store(n: int, seed: int, work: Path, keep: bool) -> Store:
    if not keep:
        store = Store(n, work / f"n{n}")
        build_store(store, seed)
        say(f"built the {n:,} store in {store.build_s:.1f} s ({store.base})")
        return store
    store = Store(n, CACHE / f"n{n}-seed{seed}-v{__version__}")
    if (store.base / "complete").is_file():
        say(f"reusing the {n:,} store in {store.base}")
        return store
    shutil.rmtree(store.base, ignore_errors=True)  # a build that did not finish
    build_store(store, seed)
    say(f"built the {n:,} store in {store.build_s:.1f} s; kept in {store.base}")
    return store


# -- a raw JSON-RPC client -------------------------------------------------------------


class Server:
    """``python -m openmemex mcp`` as a child process, spoken to in JSON-RPC lines."""

    def __init__(self, store: Store, errlog: Path) -> None:
        self._err = errlog.open("ab")
        self.started = time.perf_counter()
        self.proc = subprocess.Popen([sys.executable, "-m", "openmemex", "mcp"], cwd=store.repo, env=store.env(),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._err)  # fmt: skip
        self._errlog = errlog
        self._next = 0

    def _write(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def notify(self, method: str) -> None:
        self._write({"jsonrpc": "2.0", "method": method})

    def request(
        self, method: str, params: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], bytes, float]:
        """The reply, its raw line, and the seconds from the write to the line read."""
        self._next += 1
        number = self._next
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": number, "method": method}
        if params is not None:
            message["params"] = params
        start = time.perf_counter()
        self._write(message)
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            seconds = time.perf_counter() - start
            if not line:
                raise RuntimeError(
                    f"the server closed stdout; stderr:\n{self._errlog.read_text()[-2000:]}"
                )
            reply = json.loads(line)
            if reply.get("id") == number:
                if "error" in reply:
                    raise RuntimeError(f"{method} failed: {reply['error']}")
                return reply, line, seconds

    def initialize(self) -> dict[str, Any]:
        reply, _, _ = self.request("initialize", {"protocolVersion": PROTOCOL, "capabilities": {},
                                                  "clientInfo": {"name": "mcp_bench", "version": "0"}})  # fmt: skip
        self.notify("notifications/initialized")
        return reply["result"]  # type: ignore[no-any-return]

    def call(self, name: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], float]:
        reply, _, seconds = self.request("tools/call", {"name": name, "arguments": arguments})
        result = reply["result"]
        if result.get("isError"):
            raise RuntimeError(f"{name}({arguments}) failed: {result['content'][0]['text']}")
        return result, seconds

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()  # EOF ends the server
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self._err.close()


def inotify_watches(pid: int) -> int | None:
    """Watches held by the process's inotify instances (from /proc), None when it has none."""
    total: int | None = None
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return None
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") != "anon_inode:inotify":
                continue
            info = Path(f"/proc/{pid}/fdinfo/{fd}").read_text()
        except OSError:
            continue
        total = (total or 0) + sum(line.startswith("inotify wd:") for line in info.splitlines())
    return total


# -- measurements ----------------------------------------------------------------------


@dataclass
class Cold:
    runs: int
    python_ms: float = 0.0
    import_ms: float = 0.0
    spawn_ms: float = 0.0
    import_all: list[float] = field(default_factory=list)
    spawn_all: list[float] = field(default_factory=list)


def measure_cold(store: Store, runs: int, errlog: Path) -> Cold:
    """Fresh processes, interleaved (pass, import, spawn) so drift hits all three alike;
    one untimed round first for the page cache and .pyc files."""

    def python(code: str) -> float:
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, env=store.env())
        return time.perf_counter() - start

    def spawn() -> float:
        server = Server(store, errlog)
        try:
            result = server.initialize()
            seconds = time.perf_counter() - server.started
        finally:
            server.close()
        if result.get("serverInfo", {}).get("name") != "open-memex":
            raise RuntimeError(f"unexpected initialize result: {result}")
        return seconds

    python("import mcp")
    spawn()
    cold = Cold(runs)
    passes: list[float] = []
    for _ in range(runs):
        passes.append(python("pass"))
        cold.import_all.append(python("import mcp"))
        cold.spawn_all.append(spawn())
    cold.python_ms = statistics.median(passes) * 1000
    cold.import_ms = statistics.median(cold.import_all) * 1000
    cold.spawn_ms = statistics.median(cold.spawn_all) * 1000
    return cold


@dataclass
class Size:
    n: int
    build_s: float | None
    mcp: list[float] = field(default_factory=list)
    by_kind: dict[str, list[float]] = field(default_factory=dict)
    session: list[float] = field(default_factory=list)
    changed: list[float] = field(default_factory=list)
    core: list[float] = field(default_factory=list)
    add: list[float] = field(default_factory=list)
    add_status: dict[str, int] = field(default_factory=dict)
    watches: int | None = None
    counters: dict[str, int] = field(default_factory=dict)
    watched: int = 0
    misses: int = 0
    mismatches: list[str] = field(default_factory=list)
    tools_bytes: int = 0
    tools_line_bytes: int = 0
    tools_count: int = 0


def hit_ids(data: dict[str, Any]) -> list[str]:
    return [h["id"] for h in data["hits"]]


def measure_server(store: Store, mix: list[tuple[str, str]], adds: int, seed: int, errlog: Path,
                   size: Size) -> dict[str, list[str]]:  # fmt: skip
    """Search and add round trips in one warm server; the hit ids per query for comparison."""
    answers: dict[str, list[str]] = {}
    server = Server(store, errlog)
    added: list[str] = []
    try:
        server.initialize()
        reply, line, _ = server.request("tools/list")
        tools = reply["result"]["tools"]
        size.tools_count = len(tools)
        size.tools_bytes = len(
            json.dumps(tools, separators=(",", ":"), ensure_ascii=False).encode()
        )
        size.tools_line_bytes = len(line.rstrip(b"\n"))
        for _, query in mix[:WARMUP_CALLS]:
            server.call("memory_search", {"query": query})
        for kind, query in mix:
            result, seconds = server.call("memory_search", {"query": query, "limit": SEARCH_LIMIT})
            size.mcp.append(seconds)
            size.by_kind.setdefault(kind, []).append(seconds)
            answers[query] = hit_ids(result["structuredContent"])
        size.misses = sum(not ids for ids in answers.values())
        size.watches = inotify_watches(server.proc.pid)
        rng = random.Random(seed + 2)
        nonce = time.time_ns()
        for i in range(adds):
            body = chinese_body(rng, ADD_WORDS) if i % 5 == 4 else english_body(rng, ADD_WORDS)
            text = f"{body} (mcp bench add {nonce}-{i})"
            arguments = {
                "content": text,
                "scope": "personal" if i % 2 else "project",
                "tags": ["bench", "mcp"],
            }
            result, seconds = server.call("memory_add", arguments)
            status = result["structuredContent"]["status"]
            size.add_status[status] = size.add_status.get(status, 0) + 1
            if status == "saved":
                added.append(result["structuredContent"]["id"])
            size.add.append(seconds)
    finally:
        server.close()
        if added:  # leave the store as it was (a --keep store is reused), untimed
            store.use()
            with Context.load(store.repo) as ctx:
                for memory_id in added:
                    forget(ctx, memory_id)
    return answers


def measure_in_process(store: Store, mix: list[tuple[str, str]], answers: dict[str, list[str]],
                       size: Size, profile: bool) -> None:  # fmt: skip
    """The same queries through the server's Session (watcher, no wire) and through the
    CLI's core path (fresh Context + search per query, stat scan, no watcher)."""
    store.use()

    def core(query: str) -> list[str]:
        with Context.load(store.repo) as ctx:
            return hit_ids(search(ctx, query, scope="both", limit=SEARCH_LIMIT).to_json())

    session = Session.start(store.repo)
    try:
        if session.watch is None:
            say(
                "no inotify watcher in this process (not Linux?): the Session path pays the stat scan"
            )

        def served(query: str) -> list[str]:
            data, _ = session.run(
                lambda ctx: search(ctx, query, scope="both", limit=SEARCH_LIMIT).to_json()
            )
            return hit_ids(data)

        for _, query in mix[:WARMUP_CALLS]:
            served(query)
        profiler = cProfile.Profile() if profile else None
        if profiler is not None:
            profiler.enable()
        for _, query in mix:
            start = time.perf_counter()
            served(query)
            size.session.append(time.perf_counter() - start)
        if profiler is not None:
            profiler.disable()
            print_profile(
                profiler,
                f"in-process server path (Session + watcher), N={size.n:,}, {len(mix)} searches",
            )
        # another process touched one memory file: the next read re-checks (and re-reads) it
        with Context.load(store.repo) as ctx:
            touched = next(e.path for e in os.scandir(ctx.outbox_dir) if e.name.endswith(".md"))
        for _, query in mix[:CHANGED_RUNS]:
            stamp = time.time_ns()
            os.utime(touched, ns=(stamp, stamp))
            start = time.perf_counter()
            served(query)
            size.changed.append(time.perf_counter() - start)
        if session.watch is not None:
            size.counters = dict(session.watch.counters)
            size.watched = len(session.watch.watched())
    finally:
        session.close()

    for _, query in mix[:WARMUP_CALLS]:
        core(query)
    for _, query in mix:
        start = time.perf_counter()
        ids = core(query)
        size.core.append(time.perf_counter() - start)
        if ids != answers[query] and len(size.mismatches) < 3:
            size.mismatches.append(query)


def print_profile(profiler: cProfile.Profile, label: str) -> None:
    for order in ("cumulative", "tottime"):
        buffer = io.StringIO()
        pstats.Stats(profiler, stream=buffer).sort_stats(order).print_stats(25)
        say(f"\n--- cProfile: {label}, top 25 by {order} ---\n{buffer.getvalue()}")


# -- report ----------------------------------------------------------------------------


def ms(samples: list[float], pct: float) -> str:
    return f"{percentile(samples, pct) * 1000:.1f}" if samples else "-"


def verdict(ok: bool) -> str:
    return "yes" if ok else "**no**"


def cold_table(cold: Cold, size: Size) -> str:
    ratio = cold.spawn_ms / cold.import_ms
    rows = [
        ("`python -c pass`", f"{cold.python_ms:.0f} ms", "", ""),
        ('`python -c "import mcp"`', f"{cold.import_ms:.0f} ms", "", ""),
        (f"spawn `open-memex mcp` ({COLD_SIZE // 1000}k store) → `initialize` reply", f"{cold.spawn_ms:.0f} ms", "", ""),
        ("cold start ratio (spawn / import mcp)", f"{ratio:.2f}×", f"≤ {TARGET_COLD_RATIO}×", verdict(ratio <= TARGET_COLD_RATIO)),
        (f"`tools/list`: {size.tools_count} tools, compact JSON", f"{size.tools_bytes:,} B", f"≤ {TARGET_TOOLS_BYTES:,} B",
         verdict(size.tools_bytes <= TARGET_TOOLS_BYTES)),
        ("`tools/list`: the whole reply line on the wire", f"{size.tools_line_bytes:,} B", "", ""),
    ]  # fmt: skip
    lines = ["| measure | value | target | met |", "|---|---:|---:|:---:|"]
    lines += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows]
    return "\n".join(lines)


def warm_table(sizes: list[Size]) -> str:
    head = ("N", "MCP search p50 ms", "p90", "p99", "target p50", "met", "in-process Session p50 ms",
            "Session after 1 changed file p50 ms", "core path p50 ms", "p90", "p99", "MCP add p50 ms", "inotify watches")  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---:" for _ in head) + "|"]
    for s in sizes:
        target = TARGET_P50_MS.get(s.n)
        p50 = percentile(s.mcp, 50) * 1000
        lines.append("| " + " | ".join([
            f"{s.n:,}", ms(s.mcp, 50), ms(s.mcp, 90), ms(s.mcp, 99),
            f"≤ {target:.0f}" if target else "-", verdict(p50 <= target) if target else "-",
            ms(s.session, 50), ms(s.changed, 50), ms(s.core, 50), ms(s.core, 90), ms(s.core, 99), ms(s.add, 50),
            "-" if s.watches is None else str(s.watches),
        ]) + " |")  # fmt: skip
    return "\n".join(lines)


def kind_table(sizes: list[Size]) -> str:
    head = ["query kind", *(f"N={s.n:,} MCP p50 ms" for s in sizes), "calls per size"]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "|".join("---:" for _ in head[1:]) + "|"]
    for kind in KIND_ORDER:
        if not any(kind in s.by_kind for s in sizes):
            continue
        cells = [ms(s.by_kind.get(kind, []), 50) for s in sizes]
        lines.append(
            f"| {kind} | " + " | ".join(cells) + f" | {len(sizes[0].by_kind.get(kind, []))} |"
        )
    return "\n".join(lines)


# -- main ------------------------------------------------------------------------------


def isolate(work: Path) -> None:
    """This process and every child it starts see only the temp dirs: no real home, git
    config or data root."""
    for name in ISOLATE_ENV:
        os.environ.pop(name, None)
    user = work / "user"
    user.mkdir()
    (user / "gitconfig").write_text("[init]\n\tdefaultBranch = main\n")
    os.environ.update({
        "HOME": str(user), "XDG_CONFIG_HOME": str(user / ".config"), "XDG_DATA_HOME": str(user / ".local" / "share"),
        "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": str(user / "gitconfig"),
        "GIT_AUTHOR_NAME": "Bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
        "GIT_COMMITTER_NAME": "Bench", "GIT_COMMITTER_EMAIL": "bench@example.com",
        "OPEN_MEMEX_HOME": str(work / "no-store-yet"),
    })  # fmt: skip


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--sizes",
        type=parse_sizes,
        default=DEFAULT_SIZES,
        help="comma-separated store sizes for the warm calls (default: 10000,100000)",
    )
    parser.add_argument(
        "--runs", type=int, default=7, help="fresh processes per cold-start median (default 7)"
    )
    parser.add_argument(
        "--calls", type=int, default=100, help="timed memory_search calls per size (default 100)"
    )
    parser.add_argument(
        "--adds", type=int, default=20, help="timed memory_add calls per size (default 20)"
    )
    parser.add_argument(
        "--seed", type=int, default=DEFAULT_SEED, help="random seed of the synthetic text"
    )
    parser.add_argument(
        "--keep",
        action="store_true",
        help=f"build each store once under {CACHE}/n<N>-seed<S>-v<version> and reuse it",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="cProfile the in-process server path of every size (its column is then inflated)",
    )
    args = parser.parse_args(argv)
    if args.calls < 50 or args.runs < 1 or args.adds < 1:
        parser.error("--calls must be at least 50, --runs and --adds at least 1")
    return args  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="memex-mcp-bench-"))
    errlog = work / "server-stderr.log"
    try:
        isolate(work)
        say(machine_facts())
        say(f"open-memex {__version__} from {Path(openmemex.__file__).parent}")
        say(f"sizes {', '.join(f'{n:,}' for n in args.sizes)}; {args.calls} searches "
            f"and {args.adds} adds per size; cold start median of {args.runs}; seed {args.seed}")  # fmt: skip
        say(f"client: raw JSON-RPC lines over the server's stdin/stdout (protocol {PROTOCOL}); "
            "times are from the request write to its reply line")  # fmt: skip
        stores: dict[int, Store] = {}
        for n in sorted({COLD_SIZE, *args.sizes}):
            stores[n] = open_store(n, args.seed, work, args.keep)

        say(f"\n== cold start ({args.runs} rounds) ==")
        cold = measure_cold(stores[COLD_SIZE], args.runs, errlog)
        say(f"import mcp runs (ms): {', '.join(f'{x * 1000:.0f}' for x in cold.import_all)}")
        say(f"spawn → initialize runs (ms): {', '.join(f'{x * 1000:.0f}' for x in cold.spawn_all)}")

        mix = query_mix(args.calls, args.seed)
        sizes: list[Size] = []
        for n in args.sizes:
            say(f"\n== N = {n:,} ==")
            size = Size(n, stores[n].build_s)
            answers = measure_server(stores[n], mix, args.adds, args.seed, errlog, size)
            say(
                f"MCP search p50 {ms(size.mcp, 50)} ms; add p50 {ms(size.add, 50)} ms {size.add_status}"
            )
            measure_in_process(stores[n], mix, answers, size, args.profile)
            say(f"Session p50 {ms(size.session, 50)} ms; core path p50 {ms(size.core, 50)} ms")
            sizes.append(size)

        say("")
        say(cold_table(cold, sizes[0]))
        say("")
        say(warm_table(sizes))
        say("")
        say(kind_table(sizes))
        say("")
        for s in sizes:
            built = "reused (--keep)" if s.build_s is None else f"built in {s.build_s:.0f} s"
            watcher = (f"in-process watcher on {s.watched} folders, counters {s.counters}" if s.counters
                       else "no in-process watcher")  # fmt: skip
            say(f"N={s.n:,}: store {built}; {s.misses} of {len(set(q for _, q in mix))} distinct queries found nothing; "
                f"server inotify watches: {'none' if s.watches is None else s.watches}; {watcher}; "
                f"adds {s.add_status}; "
                + (f"MCP and core path disagree on {s.mismatches}" if s.mismatches else "MCP and core path return the same hits"))  # fmt: skip
        say(f"total runtime {time.perf_counter() - started:.0f} s")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
