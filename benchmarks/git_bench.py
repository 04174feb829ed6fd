"""Benchmark the git flow: submit of 100 drafts and pull of 100 new memories, each beside the
plain-git equivalent (``git add`` + ``git commit``; ``git pull --ff-only``) as a ratio.

Not a test; it prints a table. Run: ``python benchmarks/git_bench.py [--drafts 100] [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CLI = [sys.executable, "-m", "openmemex"]


def sh(*args: str, cwd: Path, env: dict[str, str] | None = None) -> None:
    subprocess.run(args, cwd=cwd, check=True, capture_output=True, env=env)


def timed(fn: object) -> float:
    start = time.perf_counter()
    fn()  # type: ignore[operator]
    return time.perf_counter() - start


def one_round(base: Path, drafts: int) -> dict[str, float]:
    env = {
        **os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": str(base / "gitconfig"),
        "GIT_AUTHOR_NAME": "Bench", "GIT_AUTHOR_EMAIL": "b@example.com",
        "GIT_COMMITTER_NAME": "Bench", "GIT_COMMITTER_EMAIL": "b@example.com",
    }  # fmt: skip
    (base / "gitconfig").write_text("[init]\n\tdefaultBranch = main\n")
    remote = base / "remote.git"
    sh("git", "init", "-q", "--bare", "-b", "main", str(remote), cwd=base, env=env)
    seed = base / "seed"
    sh("git", "clone", "-q", str(remote), str(seed), cwd=base, env=env)
    (seed / "README.md").write_text("bench\n")
    sh("git", "add", "README.md", cwd=seed, env=env)
    sh("git", "commit", "-q", "-m", "init", cwd=seed, env=env)
    sh("git", "push", "-q", "origin", "main", cwd=seed, env=env)
    clones = {name: base / name for name in ("alice", "bob", "carol", "plain")}
    for path in clones.values():
        sh("git", "clone", "-q", str(remote), str(path), cwd=base, env=env)
    alice_env = {**env, "OPEN_MEMEX_HOME": str(base / "alice-data")}
    bob_env = {**env, "OPEN_MEMEX_HOME": str(base / "bob-data")}
    # drafts (not timed)
    os.environ.update(alice_env)
    os.chdir(clones["alice"])
    from openmemex.context import Context
    from openmemex.write import add_memory

    with Context.load() as ctx:
        ids = [add_memory(ctx, f"benchmark memory {i}: rotate key {i * 7919} before release {i % 13}").id
               for i in range(drafts)]  # fmt: skip
    out: dict[str, float] = {}
    out["submit (CLI process)"] = timed(lambda: sh(*CLI, "submit", *ids, cwd=clones["alice"], env=alice_env))
    # plain git: the same 100 files, add + commit
    memdir = clones["plain"] / ".ai" / "open-memex"
    memdir.mkdir(parents=True)
    src = clones["alice"] / ".ai" / "open-memex"
    for path in src.iterdir():
        shutil.copy(path, memdir / path.name)
    out["git add + git commit"] = timed(lambda: (sh("git", "add", ".ai/open-memex", cwd=clones["plain"], env=env),
                                                  sh("git", "commit", "-q", "-m", "m", cwd=clones["plain"], env=env)))  # fmt: skip
    sh("git", "push", "-q", "origin", "main", cwd=clones["alice"], env=env)
    # pull of 100 new memories
    sh(*CLI, "search", "warm-up", cwd=clones["bob"], env=bob_env)  # index exists before timing
    out["pull (CLI process)"] = timed(lambda: sh(*CLI, "pull", cwd=clones["bob"], env=bob_env))
    out["git pull --ff-only"] = timed(lambda: sh("git", "pull", "-q", "--ff-only", cwd=clones["carol"], env=env))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--drafts", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    results: dict[str, list[float]] = {}
    cwd = Path.cwd()
    saved = dict(os.environ)
    try:
        for _ in range(args.rounds):
            base = Path(tempfile.mkdtemp(prefix="memex-gitbench-"))
            try:
                for key, value in one_round(base, args.drafts).items():
                    results.setdefault(key, []).append(value)
            finally:
                os.chdir(cwd)
                os.environ.clear()
                os.environ.update(saved)
                shutil.rmtree(base, ignore_errors=True)
    finally:
        os.chdir(cwd)
    med = {k: statistics.median(v) * 1000 for k, v in results.items()}
    print(f"git flow, {args.drafts} memories, median of {args.rounds} rounds (ms)\n")
    print("| operation | open-memex ms | plain git ms | ratio |")
    print("|---|---:|---:|---:|")
    print(f"| submit {args.drafts} drafts vs git add+commit | {med['submit (CLI process)']:.0f} | "
          f"{med['git add + git commit']:.0f} | {med['submit (CLI process)'] / med['git add + git commit']:.1f}x |")
    print(f"| pull {args.drafts} new memories vs git pull --ff-only | {med['pull (CLI process)']:.0f} | "
          f"{med['git pull --ff-only']:.0f} | {med['pull (CLI process)'] / med['git pull --ff-only']:.1f}x |")
    print("\nopen-memex times are whole CLI processes (python start-up included); submit also scans "
          "for secrets, verifies the commit and removes the outbox copies; pull re-indexes.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
