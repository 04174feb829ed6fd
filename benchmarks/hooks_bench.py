#!/usr/bin/env python
"""Agent-host hook cost: what each Claude Code / Codex prompt and session start pays.

In one run, so the ratios are comparable: the median of ``--runs`` fresh processes of
``python -c pass`` against the installed ``open-memex`` console script running
``hook user-prompt`` with a prompt that triggers nothing (the cost of every ordinary
prompt), with a prompt that triggers a capture, and ``hook session-start`` on a store of
``--size`` memories (10k by default; the store is mcp_bench.py's, reusable with ``--keep``).
The event JSON goes on stdin exactly as Claude Code sends it.

Targets (issue 8): no trigger ≤ 3× ``python -c pass``; session-start at 10k ≤ 5×.

    python benchmarks/hooks_bench.py
    python benchmarks/hooks_bench.py --size 10000 --runs 15 --keep

Never run by the test suite.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mcp_bench import Store, open_store
from run import machine_facts, say


def console_script() -> list[str]:
    """The installed entry point itself (a version manager's shim would add its own cost)."""
    script = Path(sys.executable).parent / "open-memex"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "openmemex"]


def median_ms(argv: list[str], runs: int, stdin: str = "", cwd: Path | None = None,
              env: dict[str, str] | None = None) -> tuple[float, str]:  # fmt: skip
    samples = []
    out = ""
    for _ in range(runs + 1):  # the first run warms the page cache and is not counted
        start = time.perf_counter()
        proc = subprocess.run(argv, input=stdin, capture_output=True, text=True, cwd=cwd, env=env, timeout=120)
        samples.append(time.perf_counter() - start)
        if proc.returncode != 0:
            raise RuntimeError(f"{argv} exited {proc.returncode}: {proc.stderr}")
        out = proc.stdout
    return statistics.median(samples[1:]) * 1000, out


def payload(store: Store, event: str, **extra: object) -> str:
    return json.dumps({"session_id": "hooks-bench", "transcript_path": str(store.base / "t.jsonl"),
                       "cwd": str(store.repo), "hook_event_name": event, **extra})  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", action="store_true", help="build the store once and reuse it")
    args = parser.parse_args()
    say(machine_facts())
    with tempfile.TemporaryDirectory(prefix="omx-hooks-bench-") as tmp:
        store = open_store(args.size, args.seed, Path(tmp), args.keep)
        exe = console_script()
        env = store.env()
        base, _ = median_ms([sys.executable, "-c", "pass"], args.runs)
        plain, out = median_ms([*exe, "hook", "user-prompt"], args.runs,
                               payload(store, "UserPromptSubmit", prompt="please refactor the billing module"),
                               store.repo, env)  # fmt: skip
        assert out == "", out
        trigger, out = median_ms([*exe, "hook", "user-prompt"], args.runs,
                                 payload(store, "UserPromptSubmit", prompt="remember that the bench cache is warm"),
                                 store.repo, env)  # fmt: skip
        assert "hookSpecificOutput" in out, out
        start, out = median_ms([*exe, "hook", "session-start"], args.runs,
                               payload(store, "SessionStart", source="startup"), store.repo, env)  # fmt: skip
        block = json.loads(out)["hookSpecificOutput"]["additionalContext"]
        rows = [
            ("python -c pass", base, None, None),
            ("hook user-prompt, no trigger", plain, plain / base, 3.0),
            ("hook user-prompt, a capture", trigger, trigger / base, None),
            (f"hook session-start, {args.size:,} memories", start, start / base, 5.0),
        ]
        say(f"\nconsole script: {' '.join(exe)}; median of {args.runs} runs each; "
            f"session-start block: {len(block)} chars")  # fmt: skip
        say("\n| measure | ms | × python -c pass | target | met |\n|---|---:|---:|---:|:---:|")
        for name, value, ratio, target in rows:
            shown = "" if ratio is None else f"{ratio:.2f}×"
            goal = "" if target is None else f"≤ {target:.0f}×"
            met = "" if target is None else ("yes" if ratio is not None and ratio <= target else "**no**")
            say(f"| {name} | {value:.1f} | {shown} | {goal} | {met} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
