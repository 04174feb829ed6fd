#!/usr/bin/env python
"""Scale benchmark for open-memex: synthetic stores of N memories, timed end to end.

For each size N this builds a throw-away data root (``OPEN_MEMEX_HOME``) and a project
folder that is not a git repository, writes N memory files directly (not timed as a
product operation), then measures the index and search paths in-process and through the
``open-memex`` CLI, beside floors measured in the same run (``python -c pass``, a bare
listdir+lstat, a bare FTS5 MATCH, reading and parsing every file with libyaml) and the
ratios issue 11 sets targets for. See benchmarks/README.md for what every column means.

    python benchmarks/run.py                  # sizes 1000,10000,100000
    python benchmarks/run.py --quick          # sizes 1000,10000
    python benchmarks/run.py --sizes 5000 --keep /tmp/memex-bench
    python benchmarks/run.py --sizes 10000 --profile cold
    python benchmarks/run.py --json out.json  # every row, for a before/after comparison
    /tmp/venv-old/bin/python benchmarks/run.py   # measure the checkout installed in that venv

Never run by the test suite.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import math
import os
import platform
import pstats
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import ParamSpec, TypeVar

import yaml
from isolation import ISOLATE_ENV

import openmemex
from openmemex import freshness, memfile, store
from openmemex.context import Context
from openmemex.ids import new_ulid, now_rfc3339
from openmemex.index import SyncStats
from openmemex.model import IMPORTANCE, PERSONAL_KEY, TYPES, Memory, default_visibility
from openmemex.search import search
from openmemex.text import build_query
from openmemex.write import add_memory

P = ParamSpec("P")
T = TypeVar("T")

DEFAULT_SIZES = (1000, 10_000, 100_000)
QUICK_SIZES = (1000, 10_000)
DEFAULT_SEED = 20240601
BODY_WORDS = 80
CHINESE_SHARE = 0.2
PERSONAL_SHARE = 0.5
WARM_RUNS = 15  # warm reconciles, each right after the two bare scans (interleaved)
ADD_RUNS = 20
SEARCH_RUNS = 50
CLI_SEARCH_RUNS = 20
CLI_VERSION_RUNS = 10
PYTHON_PASS_RUNS = 15
PARSE_RUNS_UP_TO_10K = 3  # parse-only floor runs (median); one above 10k (it takes ~15 s)
SEARCH_LIMIT = 8
PHASES = ("cold", "warm", "rebuild", "add", "search", "query")
# set once the script re-ran itself for --pythonpath
PYTHONPATH_MARK = "OPEN_MEMEX_BENCH_PYTHONPATH"


def words(text: str) -> tuple[str, ...]:
    """Whitespace-separated words, duplicates dropped, order kept."""
    return tuple(dict.fromkeys(text.split()))


EN_WORDS = words(
    """
agent memory index search query token cache config deploy build release branch commit merge
review draft approve reject publish folder file path scope project personal outbox repository
schema migration database table column row sqlite fts5 bm25 rank snippet highlight stem
python typescript rust golang node package module import export function class method
parameter argument return value error exception retry timeout latency throughput worker
queue thread process lock busy write read sync reconcile rebuild scan stat mtime size
server client request response header status endpoint route handler middleware session
cookie auth oauth token secret redact mask private public internal shared team user
test fixture mock assert coverage lint format type check ci pipeline job runner cron
docker container image volume network port host proxy dns certificate tls http json yaml
markdown frontmatter field value list tag alias type fact decision constraint gotcha lesson
always never usually prefer avoid remember note use keep run install upgrade pin check
before after when because while until unless instead first last next previous default
fast slow small large stable flaky broken fixed new old local remote staging production
"""
)

ZH_WORDS = words(
    """
我们 项目 数据 文件 配置 服务器 数据库 用户 测试 部署 代码 接口 缓存 索引 搜索 记忆
问题 方法 系统 版本 更新 错误 日志 性能 网络 安全 权限 需要 使用 可以 应该 因为
所以 如果 但是 已经 没有 这个 那个 时候 现在 之后 之前 设置 运行 启动 关闭 修改
检查 处理 默认 目录 环境 变量 依赖 脚本 命令 参数 结果 返回 请求 响应 连接 超时
重试 分支 提交 合并 审查 团队 文档 说明 格式 编码 中文 英文 模型 会话 上下文 工具
"""
)

TAGS = words(
    """
auth oauth db sqlite fts ci deploy docker perf security testing frontend backend api
cache config git review release logging network infra python typescript 中文 数据库 部署
"""
)

SOURCES = ("user", "tool", "cli", "import", "keyword", "inference")

# Fixed query mix: plain English, tag words, multi-word, misses, Chinese, and mixed.
QUERIES = (
    "sqlite lock busy", "deploy to production", "oauth token refresh", "retry timeout",
    "merge branch review", "docker image volume", "python package import", "cache config",
    "flaky test fixture", "frontmatter yaml field", "worker queue thread", "tls certificate proxy",
    "auth", "perf", "security", "how do we run the ci pipeline?", "what is the default scope",
    "never commit secret", "prefer small release", "rebuild index after migration",
    "server response header", "reconcile stat mtime", "bm25 rank snippet", "local staging host",
    "kubernetes helm chart", "graphql subscription", "zebra quantum banana",
    "remember to upgrade node", "json endpoint route handler", "typescript lint format",
    "数据库", "部署", "缓存配置", "搜索索引", "用户权限", "服务器超时", "测试环境",
    "如何处理错误日志", "什么是默认目录", "代码审查", "团队文档", "版本更新", "网络连接", "中文编码",
    "运行脚本命令",
    "sqlite 数据库", "deploy 部署 production", "cache 缓存", "review 代码审查", "oauth 安全",
)  # fmt: skip


@dataclass
class Row:
    """One size's results; times in seconds unless the name says ms, sizes in bytes unless
    the name says mb. NaN (null in --json) for what was not measured."""

    n: int
    generate_s: float = math.nan
    cold_s: float = math.nan
    warm_ms: float = math.nan
    rebuild_s: float = math.nan
    db_mb: float = math.nan
    add_ms: float = math.nan
    search_p50_ms: float = math.nan
    search_p95_ms: float = math.nan
    cli_search_p50_ms: float = math.nan
    cli_search_p95_ms: float = math.nan
    cli_version_ms: float = math.nan
    # issue 11: the query without the freshness check, and the floors of the same run
    query_p50_ms: float = math.nan
    query_p95_ms: float = math.nan
    python_pass_ms: float = math.nan
    listdir_lstat_ms: float = math.nan
    scandir_stat_ms: float = math.nan
    fts_p50_ms: float = math.nan
    fts_p95_ms: float = math.nan
    parse_s: float = math.nan
    corpus_bytes: int = 0
    db_bytes: int = 0  # index.db alone after PRAGMA wal_checkpoint(TRUNCATE), before the adds
    wal_bytes: int = 0  # index.db-wal after that checkpoint (0 unless a reader held it)
    load: list[float] = field(default_factory=list)  # 1-minute load average, start and end
    samples: dict[str, list[float]] = field(default_factory=dict)  # every timing, in ms
    notes: list[str] = field(default_factory=list)

    def ratio(self, name: str) -> float:
        """One of RATIOS' values (NaN when a side is missing or zero)."""
        pairs = {
            "cli": (self.cli_search_p50_ms, self.python_pass_ms),
            "query": (self.query_p50_ms, 1.0),
            "query_fts": (self.query_p50_ms, self.fts_p50_ms),
            "fresh": (self.warm_ms, self.listdir_lstat_ms),
            "fresh_scandir": (self.warm_ms, self.scandir_stat_ms),
            "rebuild": (self.rebuild_s, self.parse_s),
            "size": (float(self.db_bytes), float(self.corpus_bytes)),
        }
        top, bottom = pairs[name]
        return top / bottom if bottom and not math.isnan(bottom) else math.nan


# -- helpers ---------------------------------------------------------------------------


def say(message: str) -> None:
    print(message, flush=True)


def timed(fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> tuple[T, float]:
    """``fn(*args, **kwargs)`` and its wall time in seconds."""
    start = time.perf_counter()
    result = fn(*args, **kwargs)
    return result, time.perf_counter() - start


def percentile(samples: list[float], pct: float) -> float:
    """Nearest-rank percentile (p50 of 20 samples is the 10th smallest, p95 the 19th)."""
    ordered = sorted(samples)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[rank - 1]


@contextmanager
def maybe_profile(enabled: bool, label: str) -> Iterator[None]:
    """Run the block under cProfile and print the top functions by cumulative time."""
    if not enabled:
        yield
        return
    profiler = cProfile.Profile()
    profiler.enable()
    try:
        yield
    finally:
        profiler.disable()
        buffer = io.StringIO()
        pstats.Stats(profiler, stream=buffer).sort_stats("cumulative").print_stats(20)
        say(f"\n--- cProfile: {label} (top 20 by cumulative time) ---\n{buffer.getvalue()}")


def file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def load_1min() -> float:
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):  # not on Windows
        return math.nan


def cli_executable() -> str:
    """The ``open-memex`` console script of this interpreter, so a pyenv/asdf shim's own
    start-up (often ~100 ms) is not counted as ours; PATH lookup as a fallback."""
    bin_dir = Path(sys.executable).parent
    for name in ("open-memex", "open-memex.exe"):
        candidate = bin_dir / name
        if candidate.is_file():
            return str(candidate)
    found = shutil.which("open-memex")
    if found is None:
        sys.exit("open-memex is not on PATH; install the package with `pip install -e .`")
    return found


def cli_python(exe: str) -> str:
    """The interpreter the console script runs under (its ``#!`` line), so ``python -c
    pass`` is timed with the same interpreter as the CLI; this one when it cannot tell."""
    try:
        with open(exe, "rb") as fh:
            first = fh.readline(1024)
    except OSError:
        return sys.executable
    if not first.startswith(b"#!"):
        return sys.executable
    parts = first[2:].decode(errors="replace").split()
    if parts and Path(parts[0]).name != "env" and Path(parts[0]).is_file():
        return parts[0]
    return sys.executable


def product_location() -> str:
    """Where the in-process ``openmemex`` package was imported from."""
    return str(Path(openmemex.__file__).resolve().parent)


def checkout_facts(package_dir: str) -> str:
    """``git describe`` of the work tree the package lives in (and whether its openmemex/
    has uncommitted changes); empty for an installed copy outside any repository."""
    root = Path(package_dir).parent
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--", "openmemex"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""
    return f"commit {head}" + (" + uncommitted changes in openmemex/" if dirty else "")  # fmt: skip


# -- synthetic data --------------------------------------------------------------------


def english_body(rng: random.Random, words: int) -> str:
    sentences: list[str] = []
    left = words
    while left > 0:
        length = min(left, rng.randint(6, 14))
        picked = rng.choices(EN_WORDS, k=length)
        sentences.append(" ".join(picked).capitalize() + ".")
        left -= length
    return " ".join(sentences)


def chinese_body(rng: random.Random, words: int) -> str:
    sentences: list[str] = []
    left = words
    while left > 0:
        length = min(left, rng.randint(6, 14))
        picked = rng.choices(ZH_WORDS, k=length)
        half = length // 2
        sentences.append("".join(picked[:half]) + "，" + "".join(picked[half:]) + "。")
        left -= length
    return "".join(sentences)


def random_body(rng: random.Random) -> str:
    words = BODY_WORDS + rng.randint(-10, 10)
    return chinese_body(rng, words) if rng.random() < CHINESE_SHARE else english_body(rng, words)


def synthetic_memory(rng: random.Random, ctx: Context) -> tuple[Memory, Path]:
    """One random memory and the folder it belongs in (personal or the project outbox)."""
    personal = rng.random() < PERSONAL_SHARE
    scope = "personal" if personal else "project"
    stamp = now_rfc3339()
    memory = Memory(
        id=new_ulid(),
        scope=scope,
        scope_key=PERSONAL_KEY if personal else ctx.project.key,
        body=random_body(rng),
        type=rng.choice(TYPES),
        visibility=default_visibility(scope),
        project_name="" if personal else ctx.project.name,
        importance=rng.choices(IMPORTANCE, weights=(1, 8, 1))[0],
        tags=sorted(set(rng.sample(TAGS, k=rng.randint(0, 3)))),
        source=rng.choice(SOURCES),
        created_at=stamp,
        updated_at=stamp,
    )
    return memory, ctx.personal_dir if personal else ctx.outbox_dir


def generate_store(ctx: Context, n: int, seed: int) -> None:
    """Write ``n`` memory files straight to disk, bypassing the index (it is built later)."""
    rng = random.Random(seed)
    for _ in range(n):
        memory, folder = synthetic_memory(rng, ctx)
        store.write_atomic(folder / f"{memory.id}.md", memfile.serialize(memory))


# -- floors ----------------------------------------------------------------------------


def listdir_lstat(folders: list[Path]) -> tuple[int, int]:
    """The freshness floor: ``os.listdir`` of every memory folder and ``os.lstat`` of every
    entry in it, nothing else. Returns (entries, their total size in bytes)."""
    count = size = 0
    for folder in folders:
        text = str(folder)
        try:
            names = os.listdir(text)
        except FileNotFoundError:
            continue
        for name in names:
            size += os.lstat(os.path.join(text, name)).st_size
            count += 1
    return count, size


def scandir_stat(folders: list[Path]) -> int:
    """A tighter scan than listdir+lstat, shown beside it: ``os.scandir`` and each entry's
    ``stat(follow_symlinks=False)`` (the path is ready-made, as in the product's scan)."""
    count = 0
    for folder in folders:
        try:
            entries = os.scandir(folder)
        except FileNotFoundError:
            continue
        with entries:
            for entry in entries:
                entry.stat(follow_symlinks=False)
                count += 1
    return count


def parse_only(folders: list[Path]) -> int:
    """The cold-build floor: read every ``*.md`` file, split off its frontmatter the
    simplest way and parse it with libyaml's safe loader; no validation, no index."""
    loader = yaml.CSafeLoader
    parsed = 0
    for folder in folders:
        text = str(folder)
        for name in os.listdir(text):
            if not name.endswith(".md"):
                continue
            with open(os.path.join(text, name), "rb") as fh:
                data = fh.read().decode()
            _, front, _body = data.split("---\n", 2)
            yaml.load(front, Loader=loader)  # CSafeLoader: the safe loader, in C
            parsed += 1
    return parsed


def fts_match(conn: sqlite3.Connection, expression: str) -> list[tuple[int]]:
    """The query floor: a bare FTS5 MATCH, default rank, no join, no snippet."""
    return conn.execute(
        "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? ORDER BY rank LIMIT ?",
        (expression, SEARCH_LIMIT),
    ).fetchall()


@contextmanager
def freshness_skipped() -> Iterator[list[int]]:
    """Replace ``freshness.sync`` and ``freshness.sync_folders`` with no-ops wherever an
    ``openmemex`` module holds them (``freshness.sync`` or a ``from … import sync``), so a
    search times the query alone. Yields a one-item list counting the skipped calls, so a
    search that reconciles some other way is noticed, not silently measured. Benchmark
    only: the product code is not changed."""
    calls = [0]

    def skip(*_args: object, **_kwargs: object) -> SyncStats:
        calls[0] += 1
        return SyncStats()

    originals = [getattr(freshness, name) for name in ("sync", "sync_folders")]
    patched: list[tuple[object, str, object]] = []
    for name, module in list(sys.modules.items()):
        if module is None or not (name == "openmemex" or name.startswith("openmemex.")):
            continue
        for attr, value in list(vars(module).items()):
            if any(value is original for original in originals):
                patched.append((module, attr, value))
                setattr(module, attr, skip)
    try:
        yield calls
    finally:
        for holder, attr, value in patched:
            setattr(holder, attr, value)


# -- phases ----------------------------------------------------------------------------


def measure_sync(ctx: Context, runs: int, folders: list[Path]) -> dict[str, list[float]]:
    """Warm reconciles, each right after one bare listdir+lstat and one scandir+stat of the
    same folders, so a busy neighbour hits all three alike; one untimed scan first (the
    same warm dentry cache for all). Samples in seconds by name."""
    listdir_lstat(folders)
    samples: dict[str, list[float]] = {"warm": [], "listdir_lstat": [], "scandir_stat": []}
    for _ in range(runs):
        samples["listdir_lstat"].append(timed(listdir_lstat, folders)[1])
        samples["scandir_stat"].append(timed(scandir_stat, folders)[1])
        stats, seconds = timed(freshness.sync, ctx, "both")
        if stats.changed:
            raise RuntimeError(f"warm reconcile found changes: {stats.summary()}")
        samples["warm"].append(seconds)
    return samples


def measure_add(ctx: Context, seed: int, n: int) -> list[float]:
    rng = random.Random(seed + 1)
    samples = []
    for i in range(ADD_RUNS):
        text = f"{random_body(rng)} (benchmark add {n}-{i})"
        scope = "personal" if i % 2 else "project"
        tags = rng.sample(TAGS, k=2)
        result, seconds = timed(add_memory, ctx, text, scope=scope, tags=tags, source="tool")
        if result.status != "saved":
            raise RuntimeError(f"add_memory did not save a new memory: {result.status}")
        samples.append(seconds)
    return samples


def measure_search(ctx: Context) -> tuple[list[float], int]:
    """Latency of every query, and how many of them found nothing (a sanity check)."""
    samples = []
    empty = 0
    for query in QUERIES[:SEARCH_RUNS]:
        result, seconds = timed(search, ctx, query, scope="both", limit=SEARCH_LIMIT)
        samples.append(seconds)
        empty += not result.hits
    return samples, empty


def measure_query(ctx: Context, db: Path) -> tuple[list[float], list[float]]:
    """The query alone (``search`` with the freshness check skipped) and the bare FTS5
    MATCH of the expression the product builds, query by query in turn, after one untimed
    pass of each. The index was brought up to date just before. Returns (query, floor)."""
    queries = QUERIES[:SEARCH_RUNS]
    expressions = [build_query(q) for q in queries]
    floor_conn = sqlite3.connect(db)
    try:
        with freshness_skipped() as calls:
            for query, expression in zip(queries, expressions, strict=True):  # warm-up
                fts_match(floor_conn, expression)
                search(ctx, query, scope="both", limit=SEARCH_LIMIT)
            if calls[0] < len(queries):
                raise RuntimeError(
                    "search no longer calls freshness.sync/sync_folders; teach "
                    "freshness_skipped() how it reconciles now, or the query column is wrong"
                )
            samples: list[float] = []
            floor: list[float] = []
            for query, expression in zip(queries, expressions, strict=True):
                floor.append(timed(fts_match, floor_conn, expression)[1])
                samples.append(timed(search, ctx, query, scope="both", limit=SEARCH_LIMIT)[1])
    finally:
        floor_conn.close()
    return samples, floor


def measure_processes(commands: list[tuple[str, list[str], int]], env: dict[str, str],
                      cwd: Path) -> dict[str, list[float]]:  # fmt: skip
    """Wall time of fresh processes: ``(label, argv, runs)`` each, taken in turn (one of
    each, then the next round), so a busy neighbour hits all alike; one untimed run of each
    first (bytecode caches, page cache). ``{query}`` in an argv is the next query."""
    samples: dict[str, list[float]] = {label: [] for label, _, _ in commands}
    for label, args, _ in commands:
        run_process(label, args, 0, env, cwd)
    for i in range(max(runs for _, _, runs in commands)):
        for label, args, runs in commands:
            if i < runs:
                samples[label].append(run_process(label, args, i, env, cwd))
    return samples


def run_process(label: str, args: list[str], i: int, env: dict[str, str], cwd: Path) -> float:
    argv = [part.format(query=cli_query(i)) for part in args]
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(
            f"{label}: {' '.join(argv)} exited {done.returncode}: {done.stderr.strip()}"
        )
    if "--json" in argv:
        json.loads(done.stdout)  # the answer must be a JSON document
    return seconds


def keep_samples(row: Row, samples: dict[str, list[float]]) -> None:
    """Every timing (seconds) into ``row.samples`` in ms, for --json."""
    for name, values in samples.items():
        row.samples[name] = [round(v * 1000, 3) for v in values]


def cli_query(i: int) -> str:
    """Spread the CLI runs evenly over the query list so they get the same EN/ZH mix."""
    return QUERIES[(i * len(QUERIES)) // CLI_SEARCH_RUNS % len(QUERIES)]


# -- one size --------------------------------------------------------------------------


def bench_size(n: int, base: Path, seed: int, profile: str | None) -> Row:
    row = Row(n)
    row.load.append(load_1min())
    home = base / "home"
    project = base / "project"
    home.mkdir(parents=True)
    project.mkdir(parents=True)
    os.environ["OPEN_MEMEX_HOME"] = str(home)
    for name in ISOLATE_ENV:
        os.environ.pop(name, None)

    say(f"\n== N = {n:,} ==  (store: {base}; load {row.load[0]:.2f})")
    ctx = Context.load(project)
    try:
        if ctx.project.repo is not None:
            raise RuntimeError(
                f"{project} is inside a git repository; use a --keep dir outside any repo"
            )
        _, row.generate_s = timed(generate_store, ctx, n, seed)
        say(f"generated {n:,} files in {row.generate_s:.1f} s")
        folders = [folder.path for folder in ctx.folders("both")]

        with maybe_profile(profile == "cold", f"cold reconcile, N={n:,}"):
            stats, row.cold_s = timed(freshness.sync, ctx, "both")
        if stats.added != n:
            raise RuntimeError(
                f"cold reconcile indexed {stats.added} of {n} files: {stats.summary()}"
            )
        say(f"cold reconcile: {row.cold_s:.2f} s ({stats.summary()})")

        with maybe_profile(profile == "warm", f"warm reconcile x{WARM_RUNS}, N={n:,}"):
            scans = measure_sync(ctx, WARM_RUNS, folders)
        keep_samples(row, scans)
        row.warm_ms = statistics.median(scans["warm"]) * 1000
        row.listdir_lstat_ms = statistics.median(scans["listdir_lstat"]) * 1000
        row.scandir_stat_ms = statistics.median(scans["scandir_stat"]) * 1000
        files, row.corpus_bytes = listdir_lstat(folders)
        if files != n:
            raise RuntimeError(f"expected {n} files in the memory folders, found {files}")
        say(
            f"warm reconcile: {row.warm_ms:.1f} ms median of {WARM_RUNS}; "
            f"bare listdir+lstat {row.listdir_lstat_ms:.1f} ms, scandir+stat "
            f"{row.scandir_stat_ms:.1f} ms (interleaved)"
        )

        parse_runs = PARSE_RUNS_UP_TO_10K if n <= 10_000 else 1
        parse: list[float] = []
        for _ in range(parse_runs):
            parsed, seconds = timed(parse_only, folders)
            if parsed != n:
                raise RuntimeError(f"parse-only floor read {parsed} of {n} files")
            parse.append(seconds)
        row.parse_s = statistics.median(parse)
        keep_samples(row, {"parse": parse})
        say(f"parse-only floor (read + libyaml): {row.parse_s:.2f} s median of {parse_runs}")

        with maybe_profile(profile == "rebuild", f"full rebuild, N={n:,}"):
            stats, row.rebuild_s = timed(
                freshness.rebuild, ctx.conn, ctx.folders("both"), warn=ctx.warn
            )
        say(f"full rebuild: {row.rebuild_s:.2f} s ({stats.summary()})")

        db = home / "index.db"
        wal = db.with_name("index.db-wal")
        db_size, wal_size = file_size(db), file_size(wal)
        row.db_mb = (db_size + wal_size) / 1e6
        row.notes.append(
            f"index.db {db_size / 1e6:.1f} MB + wal {wal_size / 1e6:.1f} MB (after rebuild)"
        )
        say(f"index size: {row.db_mb:.1f} MB ({row.notes[-1]})")
        ctx.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        row.db_bytes, row.wal_bytes = file_size(db), file_size(wal)
        say(
            f"after PRAGMA wal_checkpoint(TRUNCATE): index.db {row.db_bytes:,} bytes "
            f"(wal {row.wal_bytes:,}); corpus {row.corpus_bytes:,} bytes in {n:,} files"
        )

        with maybe_profile(profile == "add", f"add_memory x{ADD_RUNS}, N={n:,}"):
            add_samples = measure_add(ctx, seed, n)
        row.add_ms = statistics.median(add_samples) * 1000
        keep_samples(row, {"add": add_samples})
        say(f"add: {row.add_ms:.1f} ms median of {ADD_RUNS} (max {max(add_samples) * 1000:.1f} ms)")

        with maybe_profile(profile == "search", f"search x{SEARCH_RUNS}, N={n:,}"):
            search_samples, empty = measure_search(ctx)
        keep_samples(row, {"search": search_samples})
        row.search_p50_ms = percentile(search_samples, 50) * 1000
        row.search_p95_ms = percentile(search_samples, 95) * 1000
        row.notes.append(f"{empty} of {len(search_samples)} queries found nothing")
        say(
            f"search: p50 {row.search_p50_ms:.1f} ms, p95 {row.search_p95_ms:.1f} ms ({row.notes[-1]})"
        )

        freshness.sync(ctx, "both")  # the query-only phase skips it: be up to date first
        with maybe_profile(profile == "query", f"query only x{SEARCH_RUNS}, N={n:,}"):
            query_samples, fts_samples = measure_query(ctx, db)
        keep_samples(row, {"query": query_samples, "fts": fts_samples})
        row.query_p50_ms = percentile(query_samples, 50) * 1000
        row.query_p95_ms = percentile(query_samples, 95) * 1000
        row.fts_p50_ms = percentile(fts_samples, 50) * 1000
        row.fts_p95_ms = percentile(fts_samples, 95) * 1000
        say(
            f"query only (freshness skipped): p50 {row.query_p50_ms:.2f} ms, p95 "
            f"{row.query_p95_ms:.2f} ms; bare FTS5 MATCH p50 {row.fts_p50_ms:.2f} ms, "
            f"p95 {row.fts_p95_ms:.2f} ms"
        )
    finally:
        ctx.close()

    exe = cli_executable()
    env = {**os.environ, "OPEN_MEMEX_HOME": str(home)}
    processes = measure_processes(
        [
            ("python -c pass", [cli_python(exe), "-c", "pass"], PYTHON_PASS_RUNS),
            ("CLI search", [exe, "search", "{query}", "--json"], CLI_SEARCH_RUNS),
            ("CLI --version", [exe, "--version"], CLI_VERSION_RUNS),
        ],
        env,
        project,
    )
    keep_samples(row, processes)
    row.python_pass_ms = statistics.median(processes["python -c pass"]) * 1000
    row.cli_search_p50_ms = percentile(processes["CLI search"], 50) * 1000
    row.cli_search_p95_ms = percentile(processes["CLI search"], 95) * 1000
    row.cli_version_ms = statistics.median(processes["CLI --version"]) * 1000
    say(f"python -c pass: {row.python_pass_ms:.1f} ms median of {PYTHON_PASS_RUNS}")
    say(f"CLI search: p50 {row.cli_search_p50_ms:.0f} ms, p95 {row.cli_search_p95_ms:.0f} ms")
    say(f"CLI --version: {row.cli_version_ms:.0f} ms median of {CLI_VERSION_RUNS}")
    row.load.append(load_1min())
    row.notes.append(f"1-min load {row.load[0]:.2f} at start, {row.load[-1]:.2f} at end")
    return row


# -- report ----------------------------------------------------------------------------


def f1(value: float) -> str:
    return f"{value:.1f}"


def f2(value: float) -> str:
    return f"{value:.2f}"


def f0(value: float) -> str:
    return f"{value:.0f}"


COLUMNS: tuple[tuple[str, Callable[[Row], str]], ...] = (
    ("N", lambda r: f"{r.n:,}"),
    ("generate s", lambda r: f1(r.generate_s)),
    ("cold reconcile s", lambda r: f2(r.cold_s)),
    ("warm reconcile ms", lambda r: f1(r.warm_ms)),
    ("full rebuild s", lambda r: f2(r.rebuild_s)),
    ("index MB", lambda r: f1(r.db_mb)),
    ("add ms", lambda r: f1(r.add_ms)),
    ("search p50 ms", lambda r: f1(r.search_p50_ms)),
    ("search p95 ms", lambda r: f1(r.search_p95_ms)),
    ("CLI search p50 ms", lambda r: f0(r.cli_search_p50_ms)),
    ("CLI search p95 ms", lambda r: f0(r.cli_search_p95_ms)),
    ("CLI --version ms", lambda r: f0(r.cli_version_ms)),
)

FLOOR_COLUMNS: tuple[tuple[str, Callable[[Row], str]], ...] = (
    ("N", lambda r: f"{r.n:,}"),
    ("python -c pass ms", lambda r: f1(r.python_pass_ms)),
    ("CLI search p50 ms", lambda r: f0(r.cli_search_p50_ms)),
    ("listdir+lstat ms", lambda r: f1(r.listdir_lstat_ms)),
    ("scandir+stat ms", lambda r: f1(r.scandir_stat_ms)),
    ("warm reconcile ms", lambda r: f1(r.warm_ms)),
    ("bare FTS5 p50 ms", lambda r: f2(r.fts_p50_ms)),
    ("bare FTS5 p95 ms", lambda r: f2(r.fts_p95_ms)),
    ("query p50 ms", lambda r: f2(r.query_p50_ms)),
    ("query p95 ms", lambda r: f2(r.query_p95_ms)),
    ("parse-only s", lambda r: f2(r.parse_s)),
    ("full rebuild s", lambda r: f2(r.rebuild_s)),
    ("corpus MB", lambda r: f1(r.corpus_bytes / 1e6)),
    ("index.db MB", lambda r: f1(r.db_bytes / 1e6)),
)

# (ratio name, column title, target as shown, check(n, value) → met?, or None where the
# issue sets no target at that size)
Target = Callable[[int, float], bool | None]
RATIOS: tuple[tuple[str, str, str, Target], ...] = (
    ("cli", "CLI search / python -c pass", "≤ 6× at 10k",
     lambda n, v: v <= 6 if n == 10_000 else None),
    ("query", "query p50 ms", "≤ 5 at 10k, ≤ 40 at 100k",
     lambda n, v: v <= 5 if n == 10_000 else v <= 40 if n == 100_000 else None),
    ("query_fts", "query / bare FTS5 (p50)", "—", lambda n, v: None),
    ("fresh", "warm reconcile / listdir+lstat", "≤ 1.2×", lambda n, v: v <= 1.2),
    ("fresh_scandir", "warm reconcile / scandir+stat", "—", lambda n, v: None),
    ("rebuild", "full rebuild / parse-only", "≤ 1.5×", lambda n, v: v <= 1.5),
    ("size", "index.db / corpus bytes", "≤ 1.5×", lambda n, v: v <= 1.5),
)  # fmt: skip


def ratio_cell(row: Row, name: str, check: Target) -> str:
    value = row.ratio(name)
    if math.isnan(value):
        return "—"
    text = f"{value:.2f}" if name == "query" else f"{value:.2f}×"
    met = check(row.n, value)
    return text if met is None else f"{text} {'✓' if met else '✗'}"


def table(columns: tuple[tuple[str, Callable[[Row], str]], ...], rows: list[Row]) -> str:
    lines = [
        "| " + " | ".join(name for name, _ in columns) + " |",
        "|" + "|".join("---:" for _ in columns) + "|",
    ]
    lines.extend("| " + " | ".join(cell(r) for _, cell in columns) + " |" for r in rows)
    return "\n".join(lines)


def markdown_table(rows: list[Row]) -> str:
    return table(COLUMNS, rows)


def floor_table(rows: list[Row]) -> str:
    return table(FLOOR_COLUMNS, rows)


def ratio_table(rows: list[Row]) -> str:
    lines = [
        "| N | " + " | ".join(title for _, title, _, _ in RATIOS) + " |",
        "|---:|" + "|".join("---:" for _ in RATIOS) + "|",
        "| target (issue 11) | " + " | ".join(target for _, _, target, _ in RATIOS) + " |",
    ]
    lines.extend(
        f"| {r.n:,} | "
        + " | ".join(ratio_cell(r, name, check) for name, _, _, check in RATIOS)
        + " |"
        for r in rows
    )
    return "\n".join(lines)


def machine_facts() -> dict[str, str]:
    return {
        "python": f"{platform.python_version()} ({platform.python_implementation()}, {sys.executable})",
        "sqlite": sqlite3.sqlite_version,
        "cpus": str(os.cpu_count()),
        "platform": platform.platform(),
    }


def jsonable(value: object) -> object:
    """NaN → null, recursively (JSON has no NaN)."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, list):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    return value


def write_json(path: Path, rows: list[Row], meta: dict[str, object]) -> None:
    data = {
        **meta,
        "rows": [
            {**asdict(row), "ratios": {name: row.ratio(name) for name, _, _, _ in RATIOS}}
            for row in rows
        ],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(jsonable(data), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )


# -- main ------------------------------------------------------------------------------


def parse_sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(part.replace("_", "")) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"sizes must be comma-separated integers, got {text!r}"
        ) from None
    if not sizes or any(s < 1 for s in sizes):
        raise argparse.ArgumentTypeError("sizes must be positive integers")
    return sizes


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    sizes = parser.add_mutually_exclusive_group()
    sizes.add_argument(
        "--sizes",
        type=parse_sizes,
        default=DEFAULT_SIZES,
        help="comma-separated store sizes (default: 1000,10000,100000)",
    )
    sizes.add_argument(
        "--quick",
        action="store_const",
        const=QUICK_SIZES,
        dest="sizes",
        help="only sizes 1000,10000",
    )
    parser.add_argument(
        "--keep",
        type=Path,
        metavar="DIR",
        help="build the stores under DIR/n<N> and keep them (default: a temp dir, removed)",
    )
    parser.add_argument(
        "--seed", type=int, default=DEFAULT_SEED, help="random seed of the synthetic text"
    )
    parser.add_argument(
        "--profile",
        choices=PHASES,
        help="run this in-process phase under cProfile and print the top functions "
        "(that phase's number in the table is then inflated)",
    )
    parser.add_argument(
        "--json",
        type=Path,
        metavar="PATH",
        help="also write every row (all columns, floors, ratios) and the run's facts to PATH",
    )
    parser.add_argument(
        "--pythonpath",
        type=Path,
        metavar="DIR",
        help="measure the openmemex package in DIR (a checkout's root) instead of the "
        "installed one: the script re-runs itself with PYTHONPATH=DIR, so the in-process "
        "code and the CLI processes both import it (a venv with DIR installed is the "
        "cleaner way; see README)",
    )
    parser.add_argument(
        "--label", default="", help="a name for this run in the output and --json (e.g. before)"
    )
    return parser.parse_args(argv)  # fmt: skip


def reexec_with_pythonpath(directory: Path, argv: list[str]) -> None:
    """Run this script again with ``directory`` first on PYTHONPATH (inherited by the CLI
    processes), unless this process already is that run."""
    target = str(directory.resolve())
    if not (Path(target) / "openmemex" / "__init__.py").is_file():
        sys.exit(f"--pythonpath {directory}: no openmemex/__init__.py there")
    if os.environ.get(PYTHONPATH_MARK) == target:
        return
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (target, env.get("PYTHONPATH", "")) if p)
    env[PYTHONPATH_MARK] = target
    sys.stdout.flush()
    os.execve(sys.executable, [sys.executable, str(Path(__file__).resolve()), *argv], env)


def check_same_product(exe: str, expected: str) -> None:
    """The CLI processes must import the same openmemex as this process (asked from the
    temp dir: ``python -c`` puts its cwd first on sys.path, a console script does not)."""
    done = subprocess.run(
        [cli_python(exe), "-c", "import openmemex, pathlib; "
         "print(pathlib.Path(openmemex.__file__).resolve().parent)"],
        capture_output=True, text=True, check=True, cwd=tempfile.gettempdir(),
    )  # fmt: skip
    found = done.stdout.strip()
    if found != expected:
        sys.exit(f"the CLI ({exe}) imports openmemex from {found}, this script from {expected}")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if args.pythonpath is not None:
        reexec_with_pythonpath(args.pythonpath, argv)
        if not Path(product_location()).is_relative_to(args.pythonpath.resolve()):
            sys.exit(
                f"--pythonpath {args.pythonpath}: openmemex still comes from {product_location()}"
            )
    started = time.perf_counter()
    exe = cli_executable()
    package = product_location()
    check_same_product(exe, package)
    facts = machine_facts()
    checkout = checkout_facts(package)
    for key, value in facts.items():
        say(f"{key} {value}")
    say(f"openmemex {package}" + (f" ({checkout})" if checkout else ""))
    if args.label:
        say(f"label {args.label}")
    say(f"sizes {', '.join(f'{n:,}' for n in args.sizes)}; seed {args.seed}; CLI {exe}")
    rows: list[Row] = []
    for n in args.sizes:
        if args.keep is not None:
            base = args.keep.absolute() / f"n{n}"
            if base.exists():
                sys.exit(f"{base} already exists; choose an empty --keep dir")
            rows.append(bench_size(n, base, args.seed, args.profile))
            continue
        base = Path(tempfile.mkdtemp(prefix=f"memex-bench-{n}-"))
        try:
            rows.append(bench_size(n, base, args.seed, args.profile))
        finally:
            shutil.rmtree(base, ignore_errors=True)
    say("")
    say(markdown_table(rows))
    say("")
    say("Floors beside the product, same run (times are medians unless p50/p95):")
    say("")
    say(floor_table(rows))
    say("")
    say("Ratios against the floors, with issue 11's targets (✓ met, ✗ not met):")
    say("")
    say(ratio_table(rows))
    say("")
    for row in rows:
        say(f"N={row.n:,}: " + "; ".join(row.notes))
    runtime = time.perf_counter() - started
    say(f"total runtime {runtime:.0f} s")
    if args.json is not None:
        meta: dict[str, object] = {
            "label": args.label,
            "command": [sys.executable, "benchmarks/run.py", *argv],
            "machine": facts,
            "openmemex": package,
            "checkout": checkout,
            "cli": exe,
            "cli_python": cli_python(exe),
            "seed": args.seed,
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(time.time() - runtime)),
            "runtime_s": round(runtime, 1),
        }
        write_json(args.json, rows, meta)
        say(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
