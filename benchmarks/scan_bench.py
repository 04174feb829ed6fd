#!/usr/bin/env python
"""The pre-commit hook's start-up and the scanner's throughput, as a commit and CI see them.

In one run, so the numbers are comparable:

* start-up — the median of ``--runs`` fresh processes of the installed ``open-memex``
  console script: ``scan`` on 3 small clean memory files (what ``open-memex-secrets`` runs),
  ``scan --staged`` with those 3 files staged (a native ``.git/hooks/pre-commit``) and
  ``check`` on them (``open-memex-check``), beside ``python -c pass``;
* throughput — ``open-memex scan`` on a generated ~10 MB mixed corpus (memory notes with
  frontmatter, EN and ZH; Python and JavaScript code; npm, yarn, poetry and go.sum lockfiles
  full of hashes), seeded, with secrets of several shapes planted: the CLI end to end (fresh
  process, median of 3) and the scanner alone on bytes already in memory.

Targets (issue 9): hook start-up ≤ 0.1 s; bulk ≥ 20 MB/s.

    python benchmarks/scan_bench.py [--runs 21] [--mb 10] [--seed 7]

Never run by the test suite.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import random
import statistics
import string
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from isolation import ISOLATE_ENV
from run import EN_WORDS, chinese_body, english_body, machine_facts, say

CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
MEMDIR = ".ai/open-memex"


def console_script() -> list[str]:
    script = Path(sys.executable).parent / "open-memex"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "openmemex"]


def median_ms(argv: list[str], runs: int, cwd: Path, expect: int = 0) -> float:
    samples = []
    for _ in range(runs + 1):  # the first run warms the page cache and is not counted
        start = time.perf_counter()
        proc = subprocess.run(argv, capture_output=True, text=True, cwd=cwd, timeout=300)
        samples.append(time.perf_counter() - start)
        if proc.returncode != expect:
            raise RuntimeError(f"{argv} exited {proc.returncode}: {proc.stdout[-500:]} {proc.stderr[-500:]}")
    return statistics.median(samples[1:]) * 1000


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


# -- the corpus ----------------------------------------------------------------------------------
def ulid(rng: random.Random) -> str:
    return "01J" + "".join(rng.choice(CROCKFORD) for _ in range(23))


def note(rng: random.Random, body: str, chained: bool = True) -> str:
    mid, ts = ulid(rng), f"2026-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}T{rng.randint(10, 23)}:{rng.randint(10, 59)}:00Z"
    return (f"---\nid: {mid}\nschema_version: 2\nscope: project\nscope_key: project__widgets__3f9a0c1d2e4b\n"
            f"visibility: internal\ntype: {rng.choice(['fact', 'decision', 'gotcha', 'howto'])}\nstatus: active\n"
            f"tags: [{', '.join(rng.sample(EN_WORDS, 2))}]\ncreated_at: \"{ts}\"\nupdated_at: \"{ts}\"\n"
            f"supersedes: {ulid(rng) if chained else 'null'}\nreview_state: proposed\nreview_history:\n  - at: \"{ts}\"\n    by: alice\n"
            f"    from: draft\n    to: proposed\n---\n\n{body}\n")  # fmt: skip


def code(rng: random.Random, functions: int) -> str:
    parts = ['"""Generated module."""\n\nimport os\nimport hashlib\n\n']
    for _ in range(functions):
        name = "_".join(rng.sample(EN_WORDS, 2))
        digest = "".join(rng.choice("0123456789abcdef") for _ in range(64))
        parts.append(
            f"def {name}(value, retries=3):\n    \"\"\"{english_body(rng, 12)}\"\"\"\n"
            f"    token = os.environ[\"{name.upper()}_TOKEN\"]\n    expected = \"{digest}\"\n"
            f"    if hashlib.sha256(value).hexdigest() != expected:\n        raise ValueError(\"{english_body(rng, 6)}\")\n"
            f"    return {{\"token\": token, \"retries\": retries, \"id\": \"{rng.getrandbits(128):032x}\"}}\n\n\n"
        )  # fmt: skip
    return "".join(parts)


def javascript(rng: random.Random, functions: int) -> str:
    parts = []
    for _ in range(functions):
        name = "".join(w.capitalize() for w in rng.sample(EN_WORDS, 2))
        parts.append(f"export async function load{name}(client, opts = {{}}) {{\n  // {english_body(rng, 10)}\n"
                     f"  const apiKey = process.env.{name.upper()}_API_KEY;\n"
                     f"  const res = await client.get(`/v1/{name.lower()}`, {{ headers: {{ Authorization: `Bearer ${{apiKey}}` }} }});\n"
                     f"  return res.data;\n}}\n\n")  # fmt: skip
    return "".join(parts)


def b64(rng: random.Random, size: int) -> str:
    return base64.b64encode(rng.randbytes(size)).decode()


def npm_lock(rng: random.Random, packages: int) -> str:
    deps = {}
    for n in range(packages):
        name = f"{rng.choice(EN_WORDS)}-{rng.choice(EN_WORDS)}-{n}"
        deps[f"node_modules/{name}"] = {"version": f"{rng.randint(0, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 99)}",
                                        "resolved": f"https://registry.npmjs.org/{name}/-/{name}-1.0.0.tgz",
                                        "integrity": "sha512-" + b64(rng, 64), "dev": rng.random() < 0.3}  # fmt: skip
    return json.dumps({"name": "widgets", "lockfileVersion": 3, "packages": deps}, indent=2)


def go_sum(rng: random.Random, lines: int) -> str:
    out = []
    for _ in range(lines):
        module = f"github.com/{rng.choice(EN_WORDS)}/{rng.choice(EN_WORDS)}"
        version = f"v{rng.randint(0, 3)}.{rng.randint(0, 40)}.{rng.randint(0, 20)}"
        out += [f"{module} {version} h1:{b64(rng, 32)}", f"{module} {version}/go.mod h1:{b64(rng, 32)}"]
    return "\n".join(out) + "\n"


def poetry_lock(rng: random.Random, packages: int) -> str:
    out = []
    for n in range(packages):
        hashes = ",\n    ".join(f'{{file = "pkg-{n}-{k}.whl", hash = "sha256:{rng.randbytes(32).hex()}"}}' for k in range(4))
        out.append(f'[[package]]\nname = "{rng.choice(EN_WORDS)}-{n}"\nversion = "1.{n % 30}.0"\n'
                   f'description = "{english_body(rng, 8)}"\noptional = false\npython-versions = ">=3.8"\n'
                   f'files = [\n    {hashes},\n]\n\n')  # fmt: skip
    return "".join(out)


def yarn_lock(rng: random.Random, packages: int) -> str:
    return "".join(f'"{rng.choice(EN_WORDS)}-{n}@^1.0.0":\n  version "1.{n % 40}.2"\n  resolved "https://registry.yarnpkg.com/p/-/p-1.0.0.tgz#{rng.randbytes(20).hex()}"\n'
                   f'  integrity sha512-{b64(rng, 64)}\n\n' for n in range(packages))  # fmt: skip


def planted(rng: random.Random) -> list[tuple[str, str]]:
    """(line, rule family) of made-up secrets in several shapes, random from the seed, never real."""
    alnum = string.ascii_letters + string.digits
    pick = lambda n, chars=alnum: "".join(rng.choice(chars) for _ in range(n))  # noqa: E731
    return [
        (f"CI uses GITHUB_TOKEN=ghp_{pick(36)} until the app lands.", "github"),
        (f"the staging db password is {pick(6)}-{pick(6)}!{rng.randint(10, 99)}", "prose"),
        (f"export SLACK_BOT_TOKEN=xoxb-{rng.randint(10**10, 10**11)}-{rng.randint(10**10, 10**11)}-{pick(24)}", "slack"),
        (f"DATABASE_URL=postgres://app:{pick(14)}@db.internal:5432/app", "url"),
        (f'stripe.api_key = "sk_live_{pick(24)}"', "stripe"),
        (f"aws_secret_access_key = {pick(40, alnum + '/+')}", "aws"),
    ]


def build_corpus(root: Path, megabytes: float, seed: int) -> tuple[int, dict[str, int]]:
    """Write the corpus under ``root``; returns (bytes, secrets planted per relative path)."""
    rng = random.Random(seed)
    target = int(megabytes * 1_000_000)
    memdir, src, locks = root / MEMDIR, root / "src", root / "locks"
    for folder in (memdir, src, locks):
        folder.mkdir(parents=True)
    secrets = [line for _ in range(4) for line, _ in planted(rng)]
    where: dict[str, int] = {}
    written = 0
    n = 0
    while written < target:
        share = written / target
        if share < 0.35:  # memory notes, one in five Chinese
            body = chinese_body(rng, rng.randint(30, 120)) if n % 5 == 0 else english_body(rng, rng.randint(40, 220))
            path = memdir / f"{ulid(rng)}.md"
            if secrets and n % 97 == 0:
                body += "\n\n" + secrets.pop()
                where[str(path.relative_to(root))] = 1
            text = note(rng, body)
        elif share < 0.7:  # code
            text = code(rng, 40) if n % 2 else javascript(rng, 60)
            path = src / f"module_{n}.{'py' if n % 2 else 'js'}"
            if secrets and n % 7 == 0:
                text += f"\n# {secrets.pop()}\n"
                where[str(path.relative_to(root))] = 1
        else:  # lockfiles full of hashes
            kind = n % 4
            text = [lambda: npm_lock(rng, 900), lambda: go_sum(rng, 3000), lambda: poetry_lock(rng, 500),
                    lambda: yarn_lock(rng, 1500)][kind]()  # fmt: skip
            path = locks / f"{n}-{['package-lock.json', 'go.sum', 'poetry.lock', 'yarn.lock'][kind]}"
        path.write_text(text, encoding="utf-8")
        written += len(text.encode())
        n += 1
    return written, where


def inprocess_mb_s(root: Path) -> float:
    """The scanner alone: every file read first, then scanned as ``scan`` would."""
    from openmemex.scan import Scanner, load_config

    files = [(p, p.read_bytes()) for p in sorted(root.rglob("*")) if p.is_file() and ".git" not in p.parts]
    memprefix = str(root / MEMDIR) + os.sep
    best = float("inf")
    for _ in range(3):
        scanner = Scanner(load_config())
        start = time.perf_counter()
        for path, data in files:
            scanner.add(str(path), data, str(path).startswith(memprefix))
        best = min(best, time.perf_counter() - start)
    return sum(len(d) for _, d in files) / 1e6 / best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--mb", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    say(machine_facts())
    with tempfile.TemporaryDirectory(prefix="omx-scan-bench-") as tmp:
        work = Path(tmp)
        for name in ISOLATE_ENV:
            os.environ.pop(name, None)
        (work / "user").mkdir()
        (work / "user" / "gitconfig").write_text("[user]\n\tname = Bench\n\temail = bench@example.com\n[init]\n\tdefaultBranch = main\n")
        os.environ.update({"HOME": str(work / "user"), "OPEN_MEMEX_HOME": str(work / "data"), "GIT_CONFIG_NOSYSTEM": "1",
                           "GIT_CONFIG_GLOBAL": str(work / "user" / "gitconfig")})  # fmt: skip
        exe = console_script()
        # start-up: a repository with three small clean memory files, staged
        repo = work / "repo"
        (repo / MEMDIR).mkdir(parents=True)
        git("init", "-q", cwd=repo)
        (repo / "README.md").write_text("widgets\n")
        git("add", "README.md", cwd=repo)
        git("commit", "-q", "-m", "init", cwd=repo)
        rng = random.Random(args.seed)
        three = []
        for _ in range(3):
            text = note(rng, english_body(rng, 60), chained=False)
            path = repo / MEMDIR / f"{text.split()[2]}.md"
            path.write_text(text)
            three.append(str(path.relative_to(repo)))
        git("add", "-A", cwd=repo)
        base = median_ms([sys.executable, "-c", "pass"], args.runs, repo)
        scan3 = median_ms([*exe, "scan", *three], args.runs, repo)
        staged = median_ms([*exe, "scan", "--staged"], args.runs, repo)
        check3 = median_ms([*exe, "check", *three], args.runs, repo)
        # throughput
        corpus = work / "corpus"
        size, where = build_corpus(corpus, args.mb, args.seed)
        git("init", "-q", cwd=corpus)
        proc = subprocess.run([*exe, "scan", ".", "--format", "json"], cwd=corpus, capture_output=True, text=True, timeout=600)
        report = json.loads(proc.stdout)
        cli_ms = median_ms([*exe, "scan", "."], 3, corpus, expect=1)
        inproc = inprocess_mb_s(corpus)
        files = report["files"]
    say(f"\nconsole script: {' '.join(exe)}; start-up: median of {args.runs} fresh processes each")
    hit = {f["path"] for f in report["findings"] if f["path"] in where}
    elsewhere = [f for f in report["findings"] if f["path"] not in where]
    say(f"corpus: {size / 1e6:.1f} MB in {files} files (35 % memory notes, 35 % code, 30 % lockfiles), seed {args.seed}; "
        f"{len(where)} secrets planted, {len(hit)} found, {len(elsewhere)} findings elsewhere"
        + "".join(f"\n  elsewhere: {f['path']}:{f['line']} {f['rule']}" for f in elsewhere[:5]))  # fmt: skip
    rows = [
        ("python -c pass", f"{base:.1f} ms", "", "", ""),
        ("scan 3 memory files (open-memex-secrets)", f"{scan3:.1f} ms", f"{scan3 / base:.2f}×", "≤ 100 ms", _met(scan3 <= 100)),
        ("scan --staged, 3 files (native hook)", f"{staged:.1f} ms", f"{staged / base:.2f}×", "", ""),
        ("check 3 memory files (open-memex-check)", f"{check3:.1f} ms", f"{check3 / base:.2f}×", "", ""),
        (f"scan {size / 1e6:.1f} MB, CLI end to end", f"{size / 1e6 / (cli_ms / 1000):.1f} MB/s", f"{cli_ms / 1000:.2f} s", "≥ 20 MB/s",
         _met(size / 1e6 / (cli_ms / 1000) >= 20)),
        ("scanner alone (bytes in memory)", f"{inproc:.1f} MB/s", "", "≥ 20 MB/s", _met(inproc >= 20)),
    ]  # fmt: skip
    say("\n| measure | result | × python -c pass / time | target | met |\n|---|---:|---:|---:|:---:|")
    for row in rows:
        say("| " + " | ".join(row) + " |")
    return 0


def _met(ok: bool) -> str:
    return "yes" if ok else "**no**"


if __name__ == "__main__":
    sys.exit(main())
