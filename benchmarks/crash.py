"""kill -9 at random moments, then the consistency audit of ``stress.py`` (issue 6).

Each round starts P writer processes on one data root (adds, supersedes, hard and soft
forgets, status changes in both scopes), lets them run for a random fraction of a second,
and kills every one with SIGKILL — mid-write, mid-rename, mid-transaction, wherever they
are. After the last round it waits out the temp-file grace period, lets one ``list``
reconcile and heal, and audits files against the index and every supersede chain.

    python benchmarks/crash.py                     # 40 rounds × 3 writers (~2 min)
    python benchmarks/crash.py --rounds 10 --seed 3 --keep

Exit 1 when any audit counter is non-zero or a command crashed (crash.log).
Never run by the test suite; touches nothing outside a fresh temp dir.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import stress  # the audit is shared, not copied
from isolation import ISOLATE_ENV

WRITER = """
import io, json, random, sys
from contextlib import redirect_stderr, redirect_stdout
from openmemex.cli.app import run

rng = random.Random(int(sys.argv[1]))
ids = []
for i in range(100000):
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        op = rng.random()
        scope = rng.choice(["personal", "project"])
        if op < 0.4 or not ids:
            rc = run(["add", f"note {rng.randrange(30)} about widget {rng.randrange(5)}", "--scope", scope, "--json"])
            if rc == 0:
                ids.append(json.loads(out.getvalue())["id"])
        elif op < 0.7:
            rc = run(["supersede", rng.choice(ids), f"replacement {rng.randrange(10**6)}", "--json"])
            if rc == 0:
                ids.append(json.loads(out.getvalue())["id"])
        elif op < 0.85:
            run(["forget", rng.choice(ids), *(["--soft"] if rng.random() < 0.5 else [])])
        else:
            run(["status", rng.choice(ids), rng.choice(["deprecated", "archived", "active"])])
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--procs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", action="store_true", help="keep the temp dir and print its path")
    args = parser.parse_args(argv)
    base = Path(tempfile.mkdtemp(prefix="memex-crash-"))
    home, work = base / "data", base / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ISOLATE_ENV}
    env.update({"OPEN_MEMEX_HOME": str(home), "HOME": str(base)})
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    subprocess.run(["git", "-C", str(work), "remote", "add", "origin", "git@github.com:acme/crash.git"], check=True)
    script = base / "writer.py"
    script.write_text(WRITER)
    rng = random.Random(args.seed)
    started = time.monotonic()
    try:
        for rnd in range(args.rounds):
            procs = [
                subprocess.Popen([sys.executable, str(script), str(rnd * 100 + k)], cwd=work, env=env)
                for k in range(args.procs)
            ]
            time.sleep(rng.uniform(0.4, 1.5))
            for proc in procs:
                time.sleep(rng.uniform(0, 0.05))
                proc.send_signal(signal.SIGKILL)
            for proc in procs:
                proc.wait()
        killed = time.monotonic() - started
        time.sleep(61)  # temp files of a dead pid are swept once a minute old (docs/protocol.md)
        final = subprocess.run([sys.executable, "-m", "openmemex", "list", "--scope", "all"], cwd=work, env=env,
                               capture_output=True, text=True)  # fmt: skip
        audit = stress.audit(stress.memory_folders(home, work / ".ai" / "open-memex"), home / "index.db",
                             home / "logs" / "crash.log")  # fmt: skip
        print(f"{args.rounds} rounds × {args.procs} writers killed with SIGKILL in {killed:.0f} s; "
              f"final list exit {final.returncode}; {audit.files} files, {audit.rows} index rows")  # fmt: skip
        print(stress.audit_table(None, audit))
        bad = final.returncode != 0 or any(audit.counters.values())
        print("RESULT: " + ("FAIL" if bad else "PASS — every counter is zero"))
        return 1 if bad else 0
    finally:
        if args.keep:
            print(f"kept: {base}")
        else:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
