#!/usr/bin/env python
"""Scale benchmark for open-memex: synthetic stores of N memories, timed end to end.

For each size N this builds a throw-away data root (``OPEN_MEMEX_HOME``) and a project
folder that is not a git repository, writes N memory files directly (not timed as a
product operation), then measures the index and search paths in-process and through the
``open-memex`` CLI. See benchmarks/README.md for what every column means.

    python benchmarks/run.py                  # sizes 1000,10000,100000
    python benchmarks/run.py --quick          # sizes 1000,10000
    python benchmarks/run.py --sizes 5000 --keep /tmp/memex-bench
    python benchmarks/run.py --sizes 10000 --profile cold

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import ParamSpec, TypeVar

from isolation import ISOLATE_ENV

from openmemex import freshness, memfile, store
from openmemex.context import Context
from openmemex.ids import new_ulid, now_rfc3339
from openmemex.model import IMPORTANCE, PERSONAL_KEY, TYPES, Memory, default_visibility
from openmemex.search import search
from openmemex.write import add_memory

P = ParamSpec("P")
T = TypeVar("T")

DEFAULT_SIZES = (1000, 10_000, 100_000)
QUICK_SIZES = (1000, 10_000)
DEFAULT_SEED = 20240601
BODY_WORDS = 80
CHINESE_SHARE = 0.2
PERSONAL_SHARE = 0.5
WARM_RUNS = 5
ADD_RUNS = 20
SEARCH_RUNS = 50
CLI_SEARCH_RUNS = 20
CLI_VERSION_RUNS = 10
SEARCH_LIMIT = 8
PHASES = ("cold", "warm", "rebuild", "add", "search")


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
    """One line of the result table; times in seconds unless the name says ms."""

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
    notes: list[str] = field(default_factory=list)


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


def file_mb(path: Path) -> float:
    try:
        return path.stat().st_size / 1e6
    except FileNotFoundError:
        return 0.0


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


# -- phases ----------------------------------------------------------------------------


def measure_sync(ctx: Context, runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        stats, seconds = timed(freshness.sync, ctx, "both")
        if stats.changed:
            raise RuntimeError(f"warm reconcile found changes: {stats.summary()}")
        samples.append(seconds)
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


def measure_cli(args: list[str], runs: int, env: dict[str, str], cwd: Path) -> list[float]:
    samples = []
    for i in range(runs):
        argv = [part.format(query=cli_query(i)) for part in args]
        start = time.perf_counter()
        done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, check=False)
        samples.append(time.perf_counter() - start)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.strip()}")
        if "--json" in argv:
            json.loads(done.stdout)  # the answer must be a JSON document
    return samples


def cli_query(i: int) -> str:
    """Spread the CLI runs evenly over the query list so they get the same EN/ZH mix."""
    return QUERIES[(i * len(QUERIES)) // CLI_SEARCH_RUNS % len(QUERIES)]


# -- one size --------------------------------------------------------------------------


def bench_size(n: int, base: Path, seed: int, profile: str | None) -> Row:
    row = Row(n)
    home = base / "home"
    project = base / "project"
    home.mkdir(parents=True)
    project.mkdir(parents=True)
    os.environ["OPEN_MEMEX_HOME"] = str(home)
    for name in ISOLATE_ENV:
        os.environ.pop(name, None)

    say(f"\n== N = {n:,} ==  (store: {base})")
    ctx = Context.load(project)
    try:
        if ctx.project.repo is not None:
            raise RuntimeError(
                f"{project} is inside a git repository; use a --keep dir outside any repo"
            )
        _, row.generate_s = timed(generate_store, ctx, n, seed)
        say(f"generated {n:,} files in {row.generate_s:.1f} s")

        with maybe_profile(profile == "cold", f"cold reconcile, N={n:,}"):
            stats, row.cold_s = timed(freshness.sync, ctx, "both")
        if stats.added != n:
            raise RuntimeError(
                f"cold reconcile indexed {stats.added} of {n} files: {stats.summary()}"
            )
        say(f"cold reconcile: {row.cold_s:.2f} s ({stats.summary()})")

        with maybe_profile(profile == "warm", f"warm reconcile x{WARM_RUNS}, N={n:,}"):
            row.warm_ms = statistics.median(measure_sync(ctx, WARM_RUNS)) * 1000
        say(f"warm reconcile: {row.warm_ms:.1f} ms median of {WARM_RUNS}")

        with maybe_profile(profile == "rebuild", f"full rebuild, N={n:,}"):
            stats, row.rebuild_s = timed(
                freshness.rebuild, ctx.conn, ctx.folders("both"), warn=ctx.warn
            )
        say(f"full rebuild: {row.rebuild_s:.2f} s ({stats.summary()})")

        db = home / "index.db"
        db_mb, wal_mb = file_mb(db), file_mb(db.with_name("index.db-wal"))
        row.db_mb = db_mb + wal_mb
        row.notes.append(f"index.db {db_mb:.1f} MB + wal {wal_mb:.1f} MB (after rebuild)")
        say(f"index size: {row.db_mb:.1f} MB ({row.notes[-1]})")

        with maybe_profile(profile == "add", f"add_memory x{ADD_RUNS}, N={n:,}"):
            add_samples = measure_add(ctx, seed, n)
        row.add_ms = statistics.median(add_samples) * 1000
        say(f"add: {row.add_ms:.1f} ms median of {ADD_RUNS} (max {max(add_samples) * 1000:.1f} ms)")

        with maybe_profile(profile == "search", f"search x{SEARCH_RUNS}, N={n:,}"):
            search_samples, empty = measure_search(ctx)
        row.search_p50_ms = percentile(search_samples, 50) * 1000
        row.search_p95_ms = percentile(search_samples, 95) * 1000
        row.notes.append(f"{empty} of {len(search_samples)} queries found nothing")
        say(
            f"search: p50 {row.search_p50_ms:.1f} ms, p95 {row.search_p95_ms:.1f} ms ({row.notes[-1]})"
        )
    finally:
        ctx.close()

    exe = cli_executable()
    env = {**os.environ, "OPEN_MEMEX_HOME": str(home)}
    cli_search = measure_cli([exe, "search", "{query}", "--json"], CLI_SEARCH_RUNS, env, project)
    row.cli_search_p50_ms = percentile(cli_search, 50) * 1000
    row.cli_search_p95_ms = percentile(cli_search, 95) * 1000
    say(f"CLI search: p50 {row.cli_search_p50_ms:.0f} ms, p95 {row.cli_search_p95_ms:.0f} ms")
    cli_version = measure_cli([exe, "--version"], CLI_VERSION_RUNS, env, project)
    row.cli_version_ms = statistics.median(cli_version) * 1000
    say(f"CLI --version: {row.cli_version_ms:.0f} ms median of {CLI_VERSION_RUNS}")
    return row


# -- report ----------------------------------------------------------------------------

COLUMNS: tuple[tuple[str, Callable[[Row], str]], ...] = (
    ("N", lambda r: f"{r.n:,}"),
    ("generate s", lambda r: f"{r.generate_s:.1f}"),
    ("cold reconcile s", lambda r: f"{r.cold_s:.2f}"),
    ("warm reconcile ms", lambda r: f"{r.warm_ms:.1f}"),
    ("full rebuild s", lambda r: f"{r.rebuild_s:.2f}"),
    ("index MB", lambda r: f"{r.db_mb:.1f}"),
    ("add ms", lambda r: f"{r.add_ms:.1f}"),
    ("search p50 ms", lambda r: f"{r.search_p50_ms:.1f}"),
    ("search p95 ms", lambda r: f"{r.search_p95_ms:.1f}"),
    ("CLI search p50 ms", lambda r: f"{r.cli_search_p50_ms:.0f}"),
    ("CLI search p95 ms", lambda r: f"{r.cli_search_p95_ms:.0f}"),
    ("CLI --version ms", lambda r: f"{r.cli_version_ms:.0f}"),
)


def markdown_table(rows: list[Row]) -> str:
    lines = [
        "| " + " | ".join(name for name, _ in COLUMNS) + " |",
        "|" + "|".join("---:" for _ in COLUMNS) + "|",
    ]
    lines.extend("| " + " | ".join(cell(r) for _, cell in COLUMNS) + " |" for r in rows)
    return "\n".join(lines)


def machine_facts() -> str:
    return "\n".join([
        f"python {platform.python_version()} ({platform.python_implementation()}, {sys.executable})",
        f"sqlite {sqlite3.sqlite_version}",
        f"cpus {os.cpu_count()}",
        f"platform {platform.platform()}",
    ])  # fmt: skip


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
    return parser.parse_args(argv)  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    say(machine_facts())
    say(
        f"sizes {', '.join(f'{n:,}' for n in args.sizes)}; seed {args.seed}; CLI {cli_executable()}"
    )
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
    for row in rows:
        say(f"N={row.n:,}: " + "; ".join(row.notes))
    say(f"total runtime {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
