#!/usr/bin/env python
"""Stress test for open-memex: N processes × M mixed operations on one data root, then a
consistency audit of the files and the index.

Every worker is a real OS process (multiprocessing, spawn) that imports openmemex once and
calls ``openmemex.cli.app.run([...])`` in-process per operation. All workers are released
together by a go-file; every tenth operation is a synchronised race round (all workers add
the same text, or supersede the same id while one or two of them change or forget it).
Afterwards the memory files are read directly (yaml.safe_load, not the product's reader)
and compared with ``index.db``. See benchmarks/README.md ("Stress and consistency").

    python benchmarks/stress.py                        # 8 processes × 200 operations
    python benchmarks/stress.py --procs 4 --ops 50     # quicker
    python benchmarks/stress.py --keep                 # keep the temp store, print its paths
    python benchmarks/stress.py --self-test            # check the audit on hand-made fixtures

Exit 0 when no operation failed and every audit counter is zero, 1 otherwise.
Never run by the test suite.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import math
import multiprocessing
import os
import platform
import random
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

import yaml
from isolation import ISOLATE_ENV

DEFAULT_PROCS = 8
DEFAULT_OPS = 200
DEFAULT_SEED = 20240601
DEFAULT_TIMEOUT_S = 600
ORIGIN_URL = "git@github.com:acme/stress.git"
RACE_EVERY = 10  # every 10th operation of every worker is a synchronised race round
BARRIER_TIMEOUT_S = 120.0
START_TIMEOUT_S = 120.0
# Normal (unsynchronised) operations and their weights.
OP_WEIGHTS: dict[str, int] = {
    "add": 28,
    "supersede": 14,
    "status": 12,
    "forget": 5,
    "forget-soft": 4,
    "search": 17,
    "list": 17,
    "reindex": 1,
}
# Row order of the operations table; the race kinds are the synchronised rounds.
OP_KINDS = (
    "add", "add-same-text", "supersede", "supersede-same-id", "status", "forget", "forget-soft",
    "spoil-same-id", "search", "list", "reindex",
)  # fmt: skip
RACE_KINDS = ("add-same-text", "supersede-same-id")  # even and odd race rounds
SPOILERS = ("status archived", "forget --soft", "status deprecated", "forget")
# Exit 1/2 messages a user can get when others change the same memory: counted, not failures.
EXPECTED_ERRORS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("already superseded", re.compile(r"is already superseded by")),
    ("superseded (chain-managed)", re.compile(r"is superseded by .*chain-managed")),
    ("no memory with id", re.compile(r"no memory with id")),
    ("retracted is one-way", re.compile(r"retraction is one-way")),
    ("cannot supersede retracted/archived", re.compile(r"cannot supersede \S+: it is")),
    ("busy", re.compile(r"\bbusy\b")),
    ("unreadable", re.compile(r"is unreadable")),
)
TRACEBACK = "Traceback (most recent call last)"
ULID = re.compile(r"\b[0-9A-HJKMNP-TV-Z]{26}\b")
FENCE = re.compile(r"^-{3,}\s*$")


def words(text: str) -> tuple[str, ...]:
    """Whitespace-separated words, duplicates dropped, order kept."""
    return tuple(dict.fromkeys(text.split()))


WORDS = words(
    """
agent memory index search query token cache config deploy build release branch commit merge
review draft approve reject publish folder file path scope project personal outbox schema
migration database table column sqlite fts5 rank snippet stem python typescript package
module import function class method parameter argument error exception retry timeout latency
worker queue thread process lock busy write read sync reconcile rebuild scan server client
request response header endpoint route handler session cookie oauth secret private team test
fixture mock coverage lint format pipeline runner docker container image volume network port
proxy certificate json yaml markdown frontmatter field value tag alias decision gotcha lesson
always never prefer avoid remember keep install upgrade pin before after because default fast
slow small large stable flaky broken fixed local remote staging production
"""
)
TYPES = ("fact", "decision", "gotcha", "lesson", "howto", "preference", "constraint")
TAGS = ("db", "ci", "deploy", "perf", "auth", "cache", "git", "api", "infra", "testing")


def say(message: str = "") -> None:
    print(message, flush=True)


def percentile(samples: list[float], pct: float) -> float:
    """Nearest-rank percentile, as in benchmarks/run.py."""
    if not samples:
        return math.nan
    ordered = sorted(samples)
    return ordered[max(1, math.ceil(pct / 100 * len(ordered))) - 1]


def shape(text: str) -> str:
    """A message with ids, paths and numbers blanked, so equal kinds count together."""
    text = ULID.sub("<id>", text)
    text = re.sub(r"(/[^\s'\"():,]+)+", "<path>", text)
    text = re.sub(r"\d+", "N", text)
    return " ".join(text.split())[:110]


def sentence(rng: random.Random, low: int = 6, high: int = 14) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))


# -- one worker process --------------------------------------------------------------


@dataclass
class WorkerSpec:
    """Everything a spawned worker needs (picklable)."""

    index: int
    procs: int
    ops: int
    seed: int
    project: str
    run_dir: str
    env: dict[str, str]
    exclude: tuple[str, ...] = ()


@dataclass
class WorkerReport:
    """What one worker sends back, as JSON in <run>/result-<i>.json."""

    index: int
    counts: dict[str, dict[str, int]] = field(default_factory=dict)  # kind -> outcome -> n
    seconds: dict[str, list[float]] = field(default_factory=dict)  # kind -> durations
    expected: dict[str, int] = field(default_factory=dict)  # error kind -> n
    warnings: dict[str, int] = field(default_factory=dict)  # shaped stderr line of a success -> n
    failures: list[str] = field(default_factory=list)  # first few, described
    failure_count: int = 0
    barrier_broken: bool = False
    skipped_rounds: int = 0
    fatal: str | None = None


class Worker:
    def __init__(
        self, spec: WorkerSpec, barrier: Barrier, memex: Callable[[list[str]], int], log: Any
    ) -> None:
        self.spec = spec
        self.barrier = barrier
        self.memex = memex
        self.log = log
        self.run_dir = Path(spec.run_dir)
        self.ids_file = self.run_dir / "ids.txt"
        self.rng = random.Random(f"{spec.seed}-worker-{spec.index}")
        self.seen: list[str] = []
        self.report = WorkerReport(spec.index)
        mix = {k: w for k, w in OP_WEIGHTS.items() if k not in spec.exclude}
        kinds, weights = zip(*mix.items(), strict=True)
        self.kinds: tuple[str, ...] = kinds
        self.weights: tuple[int, ...] = weights

    # one CLI call, classified

    def cli(self, kind: str, argv: list[str]) -> tuple[bool, str]:
        """Run one command in-process; record its outcome; (succeeded, stdout)."""
        out, err = io.StringIO(), io.StringIO()
        start = time.perf_counter()
        code: int | None
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = self.memex(argv)
        except BaseException:  # run() must never raise; if it does, that is a failure
            code = None
            err.write(traceback.format_exc())
        elapsed = time.perf_counter() - start
        stdout, stderr = out.getvalue(), err.getvalue()
        self.log.write(
            f"[{time.time():.3f}] {kind}: open-memex {' '.join(argv)!r} -> {code} ({elapsed * 1000:.0f} ms)\n"
        )
        if stderr:
            self.log.write("".join(f"    {line}\n" for line in stderr.splitlines()))
        self.report.seconds.setdefault(kind, []).append(elapsed)
        counts = self.report.counts.setdefault(kind, {})
        if code == 0 and TRACEBACK not in stderr:
            outcome = "ok"
            for line in stderr.splitlines():
                if line.strip():
                    key = shape(line)
                    self.report.warnings[key] = self.report.warnings.get(key, 0) + 1
        elif code in (1, 2) and TRACEBACK not in stderr:
            outcome = "expected"
            message = (
                stderr.strip().splitlines()[-1] if stderr.strip() else f"(no message, exit {code})"
            )
            label = next(
                (name for name, pattern in EXPECTED_ERRORS if pattern.search(message)), None
            )
            if label is None:
                label = f"other (exit {code}): {shape(message)}"
            self.report.expected[label] = self.report.expected.get(label, 0) + 1
        else:
            outcome = "failure"
            self.report.failure_count += 1
            if len(self.report.failures) < 5:
                tail = " | ".join(stderr.strip().splitlines()[-3:])
                self.report.failures.append(
                    f"worker {self.spec.index}: {kind} {argv!r} -> exit {code}: {tail}"
                )
        counts[outcome] = counts.get(outcome, 0) + 1
        return outcome == "ok", stdout

    # ids

    def remember(self, memory_id: str) -> None:
        with self.ids_file.open("a", encoding="utf-8") as fh:  # O_APPEND: one short line is atomic
            fh.write(memory_id + "\n")

    def pick_id(self) -> str | None:
        try:
            shared = self.ids_file.read_text(encoding="utf-8").split()
        except FileNotFoundError:
            shared = []
        roll = self.rng.random()
        if self.seen and (roll < 0.15 or not shared):
            return self.rng.choice(self.seen)
        if not shared:
            return None
        if roll < 0.75:
            return self.rng.choice(shared[-40:])  # recent ids are more often still active
        return self.rng.choice(shared)

    def note_seen(self, stdout: str, key: str) -> None:
        try:
            document = json.loads(stdout)
        except ValueError:
            return
        found: list[str] = []
        if key == "hits":
            found = [hit["id"] for hit in document.get("hits", [])]
        else:
            for section in document.get("sections", []):
                found.extend(memory["id"] for memory in section.get("memories", []))
        self.seen = (self.seen + found)[-300:]

    def json_id(self, stdout: str) -> str | None:
        try:
            document = json.loads(stdout)
        except ValueError:
            return None
        value = document.get("id") if isinstance(document, dict) else None
        return value if isinstance(value, str) and document.get("status") == "saved" else None

    # operations

    def add(self, kind: str, text: str, scope: str) -> str | None:
        argv = ["add", text, "--scope", scope, "--type", self.rng.choice(TYPES), "--json"]
        if self.rng.random() < 0.5:
            argv += ["--tags", ",".join(self.rng.sample(TAGS, self.rng.randint(1, 3)))]
        ok, stdout = self.cli(kind, argv)
        memory_id = self.json_id(stdout) if ok else None
        if memory_id:
            self.remember(memory_id)
        return memory_id

    def supersede(self, kind: str, target: str, text: str) -> None:
        ok, stdout = self.cli(kind, ["supersede", target, text, "--json"])
        memory_id = self.json_id(stdout) if ok else None
        if memory_id:
            self.remember(memory_id)

    def normal(self, k: int) -> None:
        i = self.spec.index
        kind = self.rng.choices(self.kinds, self.weights)[0]
        if kind in ("supersede", "status", "forget", "forget-soft"):
            target = self.pick_id()
            if target is None:
                kind = "add"
        if kind == "add":
            scope = "personal" if self.rng.random() < 0.4 else "project"
            self.add(kind, f"{sentence(self.rng)} (worker {i} op {k})", scope)
        elif kind == "supersede":
            self.supersede(kind, target or "", f"{sentence(self.rng)} (worker {i} op {k} replaces)")
        elif kind == "status":
            new = self.rng.choices(("deprecated", "archived", "active"), (40, 25, 35))[0]
            self.cli(kind, ["status", target or "", new])
        elif kind == "forget":
            self.cli(kind, ["forget", target or ""])
        elif kind == "forget-soft":
            self.cli(kind, ["forget", target or "", "--soft"])
        elif kind == "search":
            query = " ".join(self.rng.choice(WORDS) for _ in range(self.rng.randint(1, 3)))
            ok, stdout = self.cli(
                kind, ["search", query, "--json", "--scope", self.rng.choice(("both", "all"))]
            )
            if ok:
                self.note_seen(stdout, "hits")
        elif kind == "list":
            scope = self.rng.choice(("project", "personal", "both", "all"))
            include = self.rng.choice(("all", "active"))
            ok, stdout = self.cli(
                kind, ["list", "--json", "--scope", scope, "--include", include, "--limit", "100"]
            )
            if ok:
                self.note_seen(stdout, "sections")
        else:
            self.cli(kind, ["reindex"])

    def wait_barrier(self) -> bool:
        if self.report.barrier_broken:
            return False
        try:
            self.barrier.wait(BARRIER_TIMEOUT_S)
        except threading.BrokenBarrierError:
            self.report.barrier_broken = True
            return False
        return True

    def race(self, k: int) -> None:
        """A synchronised round: every worker reaches operation k and waits for the others."""
        i, procs = self.spec.index, self.spec.procs
        r = k // RACE_EVERY
        shared = random.Random(f"{self.spec.seed}-round-{r}")  # the same in every worker
        scope = shared.choice(("personal", "project"))
        if RACE_KINDS[r % 2] in self.spec.exclude:
            self.normal(k)
            return
        if r % 2 == 0:  # everyone adds the same text at the same moment
            text = f"{sentence(shared)} (same text, round {r})"
            self.wait_barrier()
            self.add("add-same-text", text, scope)
            return
        # everyone supersedes the same fresh id; with 3+ workers one in four spoils it
        leader = r % procs
        target_file = self.run_dir / f"round-{r}.id"
        if i == leader:
            target = self.add("add", f"{sentence(shared)} (target of round {r})", scope)
            tmp = target_file.with_suffix(".tmp")
            tmp.write_text(target or "", encoding="utf-8")
            os.replace(tmp, target_file)
        self.wait_barrier()
        try:
            target = target_file.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            target = ""
        if not target:
            self.report.skipped_rounds += 1
            return
        if procs >= 3 and (i + r) % 4 == 3 and "spoil-same-id" not in self.spec.exclude:
            verb, *rest = SPOILERS[(r // 2) % len(SPOILERS)].split()
            self.cli("spoil-same-id", [verb, target, *rest])
        else:
            self.supersede(
                "supersede-same-id", target, f"{sentence(self.rng)} (worker {i} round {r} replaces)"
            )

    def run(self) -> None:
        for k in range(self.spec.ops):
            if (k + 1) % RACE_EVERY == 0:
                self.race(k)
            else:
                self.normal(k)


def worker_main(spec: WorkerSpec, barrier: Barrier) -> None:
    """Entry point of a spawned worker process."""
    run_dir = Path(spec.run_dir)
    os.environ.update(spec.env)
    for name in ISOLATE_ENV:
        if name not in spec.env:
            os.environ.pop(name, None)
    os.chdir(spec.project)
    log = (run_dir / f"worker-{spec.index}.log").open("a", encoding="utf-8", buffering=1)
    os.dup2(log.fileno(), 1)  # anything written past sys.stdout/sys.stderr lands in the log
    os.dup2(log.fileno(), 2)
    report = WorkerReport(spec.index)
    try:
        from openmemex.cli.app import run as memex  # imported once per process

        worker = Worker(spec, barrier, memex, log)
        report = worker.report
        (run_dir / f"ready-{spec.index}").touch()
        deadline = time.monotonic() + START_TIMEOUT_S
        go = run_dir / "go"
        while not go.exists():
            if time.monotonic() > deadline:
                raise RuntimeError("no go-file within the start timeout")
            time.sleep(0.002)
        worker.run()
    except BaseException:
        report.fatal = traceback.format_exc()
        log.write(report.fatal)
    finally:
        result = run_dir / f"result-{spec.index}.json"
        tmp = result.with_suffix(".tmp")
        tmp.write_text(json.dumps(report.__dict__), encoding="utf-8")
        os.replace(tmp, result)
        log.close()


# -- the audit -----------------------------------------------------------------------


@dataclass
class MemFile:
    path: Path
    id: str
    status: str
    supersedes: str | None
    superseded_by: str | None
    scope_key: str
    body: str  # whitespace-normalised

    @property
    def content_hash(self) -> str:
        # the index keeps the first 20 hex digits (schema 12, issue 11)
        return hashlib.sha256(self.body.encode("utf-8")).hexdigest()[:20]


def read_memfile(path: Path) -> MemFile | str:
    """The fields the audit needs, read with yaml.safe_load (not the product's reader);
    a string is the reason the file could not be read."""
    try:
        text = path.read_bytes().decode("utf-8").removeprefix("\ufeff").replace("\r\n", "\n")
    except (OSError, UnicodeDecodeError) as exc:
        return f"unreadable: {exc}"
    lines = text.split("\n")
    if not lines or not FENCE.match(lines[0]):
        return "no frontmatter"
    end = next((n for n in range(1, len(lines)) if FENCE.match(lines[n])), None)
    if end is None:
        return "frontmatter not closed"
    try:
        meta = yaml.safe_load("\n".join(lines[1:end]))
    except yaml.YAMLError as exc:
        return f"invalid YAML: {str(exc).splitlines()[0]}"
    if not isinstance(meta, dict):
        return "frontmatter is not a mapping"

    def text_or_none(key: str) -> str | None:
        value = meta.get(key)
        return None if value is None or value == "" else str(value)

    memory_id = text_or_none("id")
    if memory_id != path.stem:
        return f"id {memory_id!r} does not match the file name"
    return MemFile(
        path=path,
        id=memory_id,
        status=str(meta.get("status") or "active"),
        supersedes=text_or_none("supersedes"),
        superseded_by=text_or_none("superseded_by"),
        scope_key=str(meta.get("scope_key") or path.parent.name),
        body=" ".join("\n".join(lines[end + 1 :]).split()),
    )


AUDIT_CHECKS: tuple[tuple[str, str], ...] = (
    ("files_without_row", "memory files with no index row"),
    ("rows_without_file", "index rows whose file is missing"),
    ("duplicate_ids", "ids in more than one file or row (extra copies)"),
    ("rows_differ", "index rows that disagree with their file"),
    ("forked_chains", "chains with more than one non-superseded member"),
    ("orphan_replacements", "supersedes: X, but X.superseded_by is not it"),
    ("superseded_twice", "ids superseded by two or more memories"),
    ("one_sided_superseded_by", "superseded_by: N, but N.supersedes is not it"),
    ("dangling_pointers", "supersedes/superseded_by naming no file"),
    ("status_mismatch", "status superseded without superseded_by, or the reverse"),
    ("duplicate_text", "active copies of the same text in one scope (extra copies)"),
    ("stray_temp_files", "leftover .*.tmp files in memory folders"),
    ("unreadable_files", "memory files yaml.safe_load cannot read"),
    ("quarantined", "rows in the index's quarantine table"),
    ("crash_log_tracebacks", "tracebacks in <data root>/logs/crash.log"),
)


@dataclass
class Audit:
    counters: dict[str, int]
    examples: dict[str, list[str]]
    files: int
    rows: int

    @property
    def clean(self) -> bool:
        return not any(self.counters.values())


def memory_folders(home: Path, repo_dir: Path | None) -> list[Path]:
    folders = sorted(p for p in (home / "memories").glob("*") if p.is_dir())
    if repo_dir is not None and repo_dir.is_dir():
        folders.append(repo_dir)
    return folders


def read_index(db: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """``memories`` rows and quarantined paths, from a read-only connection."""
    if not db.exists():
        return [], []
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    from openmemex.index_schema import register_functions

    register_functions(conn)  # the memories view inflates texts with one of ours
    try:
        rows = [
            dict(r)
            for r in conn.execute(
                "SELECT id, file_path, dir, status, supersedes, superseded_by, content_hash FROM memories"
            )
        ]
        quarantined = [r[0] for r in conn.execute("SELECT file_path FROM quarantine")]
    finally:
        conn.close()
    return rows, quarantined


def audit(folders: Iterable[Path], db: Path, crash_log: Path) -> Audit:
    counters = dict.fromkeys((key for key, _ in AUDIT_CHECKS), 0)
    examples: dict[str, list[str]] = {}

    def flag(key: str, example: str, n: int = 1) -> None:
        counters[key] += n
        examples.setdefault(key, [])
        if len(examples[key]) < 3:
            examples[key].append(example)

    files: list[MemFile] = []
    all_paths: list[Path] = []
    for folder in folders:
        for path in sorted(folder.iterdir()):
            if path.name.startswith(".") and path.name.endswith(".tmp"):
                flag("stray_temp_files", str(path))
            elif path.suffix == ".md" and not path.name.startswith(".") and path.is_file():
                all_paths.append(path)
                parsed = read_memfile(path)
                if isinstance(parsed, str):
                    flag("unreadable_files", f"{path}: {parsed}")
                else:
                    files.append(parsed)

    rows, quarantined = read_index(db)
    for quarantined_path in quarantined:
        flag("quarantined", quarantined_path)
    quarantined_set = set(quarantined)

    # files = index rows
    rows_by_path = {r["file_path"]: r for r in rows}
    for path in all_paths:
        if str(path) not in rows_by_path and str(path) not in quarantined_set:
            flag("files_without_row", str(path))
    for row in rows:
        if not Path(row["file_path"]).is_file():
            flag("rows_without_file", f"{row['id']} -> {row['file_path']}")
    row_ids, file_ids = Counter(r["id"] for r in rows), Counter(m.id for m in files)
    for memory_id in sorted(set(row_ids) | set(file_ids)):
        copies = max(row_ids[memory_id], file_ids[memory_id])
        if copies > 1:
            flag(
                "duplicate_ids",
                f"{memory_id}: {file_ids[memory_id]} files, {row_ids[memory_id]} rows",
                copies - 1,
            )
    by_id: dict[str, MemFile] = {}
    for memory in files:
        by_id.setdefault(memory.id, memory)
    for memory in files:
        indexed = rows_by_path.get(str(memory.path))
        if indexed is None:
            continue
        differ = [
            name
            for name, ours, theirs in (
                ("status", memory.status, indexed["status"]),
                ("supersedes", memory.supersedes, indexed["supersedes"] or None),
                ("superseded_by", memory.superseded_by, indexed["superseded_by"] or None),
                ("content_hash", memory.content_hash, indexed["content_hash"]),
            )
            if ours != theirs
        ]
        if differ:
            flag("rows_differ", f"{memory.id}: {', '.join(differ)}")

    # chains
    replacements: dict[str, list[str]] = {}
    for memory in files:
        if memory.supersedes is not None:
            replacements.setdefault(memory.supersedes, []).append(memory.id)
            old = by_id.get(memory.supersedes)
            if old is None:
                flag(
                    "dangling_pointers", f"{memory.id}.supersedes -> {memory.supersedes} (no file)"
                )
            elif old.superseded_by != memory.id:
                flag(
                    "orphan_replacements",
                    f"{memory.id} supersedes {old.id}, which points to {old.superseded_by}",
                )
        if memory.superseded_by is not None:
            new = by_id.get(memory.superseded_by)
            if new is None:
                flag(
                    "dangling_pointers",
                    f"{memory.id}.superseded_by -> {memory.superseded_by} (no file)",
                )
            elif new.supersedes != memory.id:
                flag(
                    "one_sided_superseded_by",
                    f"{memory.id} -> {new.id}, which supersedes {new.supersedes}",
                )
        if (memory.status == "superseded") != (memory.superseded_by is not None):
            flag(
                "status_mismatch",
                f"{memory.id}: status {memory.status}, superseded_by {memory.superseded_by}",
            )
    for old_id, new_ids in replacements.items():
        if len(new_ids) > 1:
            flag("superseded_twice", f"{old_id} <- {', '.join(sorted(new_ids))}")

    parent: dict[str, str] = {memory_id: memory_id for memory_id in by_id}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for memory in by_id.values():
        for other in (memory.supersedes, memory.superseded_by):
            if other is not None and other in by_id:
                parent[find(memory.id)] = find(other)
    chains: dict[str, list[MemFile]] = {}
    for memory in by_id.values():
        chains.setdefault(find(memory.id), []).append(memory)
    for members in chains.values():
        heads = [m for m in members if m.status != "superseded"]
        if len(members) > 1 and len(heads) > 1:
            flag(
                "forked_chains",
                f"{len(members)} members, heads: "
                + ", ".join(f"{m.id} [{m.status}]" for m in heads),
            )

    # duplicate text among active memories of one scope
    groups: dict[tuple[str, str], list[MemFile]] = {}
    for memory in by_id.values():
        if memory.status == "active":
            groups.setdefault((memory.scope_key, memory.body), []).append(memory)
    for (scope_key, body), members in groups.items():
        if len(members) > 1:
            flag(
                "duplicate_text", f"{len(members)}× in {scope_key}: {body[:60]!r}", len(members) - 1
            )

    if crash_log.exists():
        text = crash_log.read_text(encoding="utf-8", errors="replace")
        n = text.count(TRACEBACK)
        last = [line for line in text.splitlines() if line and not line.startswith(" ")]
        if n:
            flag("crash_log_tracebacks", last[-1] if last else str(crash_log), n)
    return Audit(counters, examples, len(all_paths), len(rows))


# -- setting up and running ------------------------------------------------------------


@dataclass
class Layout:
    base: Path
    home: Path  # OPEN_MEMEX_HOME
    user: Path  # HOME
    project: Path  # the git repository, cwd of every worker
    run: Path  # go-file, ids, logs, results

    @property
    def repo_dir(self) -> Path:
        return self.project / ".ai" / "open-memex"


def make_layout(base: Path) -> Layout:
    layout = Layout(base, base / "home", base / "user", base / "project", base / "run")
    for path in (layout.home, layout.user, layout.project, layout.run):
        path.mkdir(parents=True)
    return layout


def isolated_env(layout: Layout) -> dict[str, str]:
    """The variables that point open-memex and git at the temp dirs only."""
    return {
        "OPEN_MEMEX_HOME": str(layout.home),
        "HOME": str(layout.user),
        "XDG_CONFIG_HOME": str(layout.user / ".config"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
    }


def git(layout: Layout, *args: str) -> None:
    subprocess.run(["git", *args], cwd=layout.project, check=True, capture_output=True, text=True)


def call(argv: list[str]) -> tuple[int, str, str]:
    """One in-process CLI call in the main process (cwd and env already set)."""
    from openmemex.cli.app import run as memex

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = memex(argv)
    return code, out.getvalue(), err.getvalue()


def seed_store(layout: Layout, seed: int) -> list[str]:
    """A few memories before the race: personal, project drafts, and three submitted into
    the repository (so in-repo files take part). Returns their ids."""
    git(layout, "-c", "init.defaultBranch=main", "init", "-q")
    git(layout, "remote", "add", "origin", ORIGIN_URL)
    git(layout, "config", "user.name", "Stress Test")
    git(layout, "config", "user.email", "stress@example.invalid")
    rng = random.Random(f"{seed}-seed")
    ids: list[str] = []
    for n in range(10):
        scope = "personal" if n < 4 else "project"
        code, stdout, stderr = call(
            ["add", f"{sentence(rng)} (seed {n})", "--scope", scope, "--json"]
        )
        if code != 0:
            raise RuntimeError(f"seeding failed: add exited {code}: {stderr.strip()}")
        ids.append(json.loads(stdout)["id"])
    code, _, stderr = call(["submit", *ids[-3:]])
    if code != 0:
        raise RuntimeError(f"seeding failed: submit exited {code}: {stderr.strip()}")
    (layout.run / "ids.txt").write_text("".join(i + "\n" for i in ids), encoding="utf-8")
    return ids


@dataclass
class Totals:
    counts: dict[str, Counter[str]] = field(default_factory=dict)
    seconds: dict[str, list[float]] = field(default_factory=dict)
    expected: Counter[str] = field(default_factory=Counter)
    warnings: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    failure_count: int = 0
    barrier_broken: int = 0
    skipped_rounds: int = 0

    def add(self, report: dict[str, Any]) -> None:
        for kind, outcomes in report["counts"].items():
            self.counts.setdefault(kind, Counter()).update(outcomes)
        for kind, values in report["seconds"].items():
            self.seconds.setdefault(kind, []).extend(values)
        self.expected.update(report["expected"])
        self.warnings.update(report["warnings"])
        self.failures.extend(report["failures"])
        self.failure_count += report["failure_count"]
        self.barrier_broken += bool(report["barrier_broken"])
        self.skipped_rounds += report["skipped_rounds"]
        if report.get("fatal"):
            self.failure_count += 1
            self.failures.append(
                f"worker {report['index']} died: {report['fatal'].strip().splitlines()[-1]}"
            )


def run_workers(
    layout: Layout, procs: int, ops: int, seed: int, timeout: float, exclude: tuple[str, ...]
) -> tuple[Totals, float]:
    mp = multiprocessing.get_context("spawn")
    barrier = mp.Barrier(procs)
    env = isolated_env(layout)
    specs = [
        WorkerSpec(i, procs, ops, seed, str(layout.project), str(layout.run), env, exclude)
        for i in range(procs)
    ]
    workers = [
        mp.Process(target=worker_main, args=(spec, barrier), name=f"stress-{spec.index}")
        for spec in specs
    ]
    for process in workers:
        process.start()
    deadline = time.monotonic() + START_TIMEOUT_S
    while not all((layout.run / f"ready-{i}").exists() for i in range(procs)):
        if time.monotonic() > deadline or any(not p.is_alive() for p in workers):
            break
        time.sleep(0.01)
    (layout.run / "go").touch()
    started = time.perf_counter()
    deadline = time.monotonic() + timeout
    for process in workers:
        process.join(max(0.0, deadline - time.monotonic()))
    wall = time.perf_counter() - started
    totals = Totals()
    for spec, process in zip(specs, workers, strict=True):
        if process.is_alive():
            process.terminate()
            process.join(5)
            if process.is_alive():
                process.kill()
                process.join()
            totals.failure_count += 1
            totals.failures.append(
                f"worker {spec.index} still running after {timeout:.0f} s; terminated"
            )
        result = layout.run / f"result-{spec.index}.json"
        if result.exists():
            totals.add(json.loads(result.read_text(encoding="utf-8")))
        else:
            totals.failure_count += 1
            totals.failures.append(
                f"worker {spec.index} left no result (exit code {process.exitcode})"
            )
    return totals, wall


# -- report ----------------------------------------------------------------------------


def markdown(header: list[str], rows: list[list[str]], align: str = "---:") -> str:
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join([":---", *[align] * (len(header) - 1)]) + "|",
    ]
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return "\n".join(lines)


def ops_table(totals: Totals) -> str:
    rows: list[list[str]] = []
    all_seconds: list[float] = []
    sums = Counter[str]()
    for kind in [*OP_KINDS, *sorted(set(totals.counts) - set(OP_KINDS))]:
        counts = totals.counts.get(kind, Counter())
        seconds = totals.seconds.get(kind, [])
        if not seconds and not counts:
            continue
        all_seconds.extend(seconds)
        sums.update(counts)
        rows.append([
            kind, f"{sum(counts.values()):,}", f"{counts['ok']:,}", f"{counts['expected']:,}",
            f"{counts['failure']:,}", f"{percentile(seconds, 50) * 1000:.0f}", f"{percentile(seconds, 95) * 1000:.0f}",
        ])  # fmt: skip
    rows.append([
        "**total**", f"{sum(sums.values()):,}", f"{sums['ok']:,}", f"{sums['expected']:,}", f"{sums['failure']:,}",
        f"{percentile(all_seconds, 50) * 1000:.0f}", f"{percentile(all_seconds, 95) * 1000:.0f}",
    ])  # fmt: skip
    return markdown(
        ["operation", "ops", "ok", "expected error", "failure", "p50 ms", "p95 ms"], rows
    )


def audit_table(before: Audit | None, after: Audit) -> str:
    header = ["check", "count"] if before is None else ["check", "before final list", "count"]
    rows = []
    for key, label in AUDIT_CHECKS:
        row = [label]
        if before is not None:
            row.append(str(before.counters[key]))
        row.append(f"**{after.counters[key]}**" if after.counters[key] else "0")
        rows.append(row)
    return markdown(header, rows)


def machine_facts() -> str:
    return (
        f"python {platform.python_version()} ({sys.executable}); sqlite {sqlite3.sqlite_version}; "
        f"cpus {os.cpu_count()}; {platform.platform()}"
    )


# -- self-test: the audit against hand-made fixtures -----------------------------------

FIXTURE_EXPECTED = {
    "files_without_row": 1,
    "rows_without_file": 1,
    "duplicate_ids": 1,
    "rows_differ": 1,
    "forked_chains": 2,
    "orphan_replacements": 1,
    "superseded_twice": 1,
    "one_sided_superseded_by": 2,
    "dangling_pointers": 2,
    "status_mismatch": 2,
    "duplicate_text": 2,
    "stray_temp_files": 1,
    "unreadable_files": 1,
    "quarantined": 1,
    "crash_log_tracebacks": 2,
}


def fixture_id(name: str) -> str:
    return ("01FX" + name.upper()).ljust(26, "0")[:26]


def write_fixture(folder: Path, name: str, body: str, status: str = "active", supersedes: str | None = None,
                  superseded_by: str | None = None, scope_key: str | None = None) -> Path:  # fmt: skip
    memory_id = fixture_id(name)
    meta = {
        "id": memory_id, "schema_version": 2, "scope": "personal" if folder.name == "personal" else "project",
        "scope_key": scope_key or folder.name, "type": "fact", "status": status,
        "supersedes": fixture_id(supersedes) if supersedes else None,
        "superseded_by": fixture_id(superseded_by) if superseded_by else None,
    }  # fmt: skip
    path = folder / f"{memory_id}.md"
    path.write_text(
        f"---\n{yaml.safe_dump(meta, sort_keys=False)}---\n\n{body}\n", encoding="utf-8"
    )
    return path


def self_test() -> int:
    """Build a tiny store with known defects and check that the audit counts exactly those."""
    base = Path(tempfile.mkdtemp(prefix="memex-stress-fixture-"))
    try:
        home = base / "home"
        personal = home / "memories" / "personal"
        outbox = home / "memories" / "project__fx__000000000000"
        repo = base / "project" / ".ai" / "open-memex"
        for folder in (personal, outbox, repo):
            folder.mkdir(parents=True)
        # duplicate text: A1/A2 (whitespace differs) and R1/O1 (repo + outbox, one scope): 2 extra
        # copies; A3 is deprecated and A4 lives in another scope, so neither counts
        write_fixture(personal, "a1", "Alpha  beta\ngamma")
        write_fixture(personal, "a2", "alpha beta gamma".replace("alpha", "Alpha"))
        write_fixture(personal, "a3", "Alpha beta gamma", status="deprecated")
        write_fixture(outbox, "a4", "Alpha beta gamma")
        write_fixture(outbox, "o1", "the same in outbox and repo")
        write_fixture(repo, "r1", "the same in outbox and repo", scope_key=outbox.name)
        # a healthy chain of three: nothing to count
        write_fixture(personal, "h1", "healthy one", "superseded", superseded_by="h2")
        write_fixture(
            personal, "h2", "healthy two", "superseded", supersedes="h1", superseded_by="h3"
        )
        write_fixture(personal, "h3", "healthy three", supersedes="h2")
        # a fork: X replaced by Y1 and Y2 -> forked chain, orphan Y2, X superseded twice
        write_fixture(outbox, "x", "fork base", "superseded", superseded_by="y1")
        write_fixture(outbox, "y1", "fork one", supersedes="x")
        write_fixture(outbox, "y2", "fork two", supersedes="x")
        # dangling both ways: Z.supersedes and W.superseded_by name no file
        write_fixture(personal, "z", "dangling back", supersedes="gone1")
        write_fixture(personal, "w", "dangling forward", "superseded", superseded_by="gone2")
        # one-sided: S -> T but T.supersedes is empty (chain of one head: not a fork)
        write_fixture(personal, "s", "one sided old", "superseded", superseded_by="t")
        write_fixture(personal, "t", "one sided new")
        # U active but superseded_by V, V points back: forked chain, status mismatch
        write_fixture(personal, "u", "still active", superseded_by="v")
        write_fixture(personal, "v", "its replacement", supersedes="u")
        # superseded with no successor: status mismatch only
        write_fixture(repo, "q", "superseded alone", "superseded")
        # D superseded by E, but E does not point back (one head): one-sided only
        write_fixture(repo, "d", "deprecated pointing", "superseded", superseded_by="e")
        write_fixture(repo, "e", "pointed at")
        # the same id in two folders
        write_fixture(personal, "k", "copied")
        write_fixture(outbox, "k", "copied")
        # a stray temp file, an unreadable file (quarantined), a file the index never saw
        (personal / f".{fixture_id('tmp')}.md.123.abcd.tmp").write_text("partial", encoding="utf-8")
        broken = personal / f"{fixture_id('broken')}.md"
        broken.write_text("---\nid: [unclosed\n---\n\nbody\n", encoding="utf-8")
        unseen = write_fixture(personal, "unseen", "written behind the index's back")
        # the index: every readable file but `unseen`; one stale row; one row for a missing file
        db = home / "index.db"
        conn = sqlite3.connect(db)
        conn.execute(
            "CREATE TABLE memories(id TEXT, file_path TEXT UNIQUE, dir TEXT, status TEXT, supersedes TEXT, "
            "superseded_by TEXT, content_hash TEXT)"
        )
        conn.execute("CREATE TABLE quarantine(file_path TEXT PRIMARY KEY, reason TEXT)")
        for folder in (personal, outbox, repo):
            for path in sorted(folder.glob("*.md")):
                memory = read_memfile(path)
                if isinstance(memory, str) or path == unseen:
                    continue
                status = "deprecated" if memory.id == fixture_id("h3") else memory.status
                conn.execute(
                    "INSERT INTO memories VALUES (?,?,?,?,?,?,?)",
                    (memory.id, str(path), str(folder), status, memory.supersedes, memory.superseded_by,
                     memory.content_hash),
                )  # fmt: skip
        conn.execute(
            "INSERT INTO memories VALUES (?,?,?,?,?,?,?)",
            (fixture_id("vanished"), str(personal / f"{fixture_id('vanished')}.md"), str(personal), "active",
             None, None, "0"),
        )  # fmt: skip
        conn.execute("INSERT INTO quarantine VALUES (?, ?)", (str(broken), "invalid YAML"))
        conn.commit()
        conn.close()
        (home / "logs").mkdir()
        (home / "logs" / "crash.log").write_text(
            f"{TRACEBACK}:\n  File x\nValueError: one\n\n{TRACEBACK}:\n  File y\nKeyError: two\n\n",
            encoding="utf-8",
        )
        result = audit(memory_folders(home, repo), db, home / "logs" / "crash.log")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    say(markdown(
        ["check", "expected", "counted", ""],
        [[label, str(FIXTURE_EXPECTED[key]), str(result.counters[key]),
          "ok" if FIXTURE_EXPECTED[key] == result.counters[key] else "**WRONG**"] for key, label in AUDIT_CHECKS],
    ))  # fmt: skip
    wrong = [key for key, _ in AUDIT_CHECKS if FIXTURE_EXPECTED[key] != result.counters[key]]
    for key in wrong:
        say(f"{key}: {result.examples.get(key)}")
    say(
        f"\nself-test: {'FAILED (' + ', '.join(wrong) + ')' if wrong else 'the audit counts every fixture exactly'}"
    )
    return 1 if wrong else 0


# -- main ------------------------------------------------------------------------------


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("expected a positive integer")
    return value


def parse_exclude(text: str) -> tuple[str, ...]:
    kinds = tuple(part.strip() for part in text.split(",") if part.strip())
    unknown = [kind for kind in kinds if kind not in OP_KINDS]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown operation kind {', '.join(unknown)}; use any of: {', '.join(OP_KINDS)}"
        )
    if all(kind in kinds for kind in OP_WEIGHTS):
        raise argparse.ArgumentTypeError("leave at least one normal operation kind in")
    return kinds


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--procs", type=positive, default=DEFAULT_PROCS, help="worker processes (default 8)"
    )
    parser.add_argument(
        "--ops", type=positive, default=DEFAULT_OPS, help="operations per worker (default 200)"
    )
    parser.add_argument(
        "--seed", type=int, default=DEFAULT_SEED, help="seed of every worker's random choices"
    )
    parser.add_argument(
        "--keep", action="store_true", help="keep the temp dirs and print their paths"
    )
    parser.add_argument("--timeout", type=positive, default=DEFAULT_TIMEOUT_S,
                        help="seconds the workers may run before they are terminated (default 600)")  # fmt: skip
    parser.add_argument(
        "--exclude",
        type=parse_exclude,
        default=(),
        metavar="KINDS",
        help="comma-separated operation kinds to leave out, e.g. forget,forget-soft,spoil-same-id "
        f"(any of: {', '.join(OP_KINDS)}); a left-out race round becomes a normal operation",
    )
    parser.add_argument(
        "--self-test", action="store_true", help="only check the audit on hand-made fixtures"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.self_test:
        return self_test()
    if shutil.which("git") is None:
        sys.exit("git is not on PATH; the stress store is a git repository")
    started = time.perf_counter()
    base = Path(tempfile.mkdtemp(prefix="memex-stress-"))
    layout = make_layout(base)
    for name in ISOLATE_ENV:
        os.environ.pop(name, None)
    os.environ.update(isolated_env(layout))
    cwd = Path.cwd()
    os.chdir(layout.project)
    try:
        say(machine_facts())
        say(
            f"{args.procs} processes × {args.ops} operations, seed {args.seed}, race round every {RACE_EVERY}th op"
            + (f", excluded: {','.join(args.exclude)}" if args.exclude else "")
        )
        try:
            seeded = seed_store(layout, args.seed)
        except (RuntimeError, subprocess.CalledProcessError) as exc:
            say(f"setup failed, nothing was stressed: {exc}")
            return 1
        say(
            f"seeded {len(seeded)} memories (3 of them submitted into the repository); starting the workers"
        )
        totals, wall = run_workers(
            layout, args.procs, args.ops, args.seed, args.timeout, args.exclude
        )
        crash_log = layout.home / "logs" / "crash.log"
        before = audit(
            memory_folders(layout.home, layout.repo_dir), layout.home / "index.db", crash_log
        )
        code, _, stderr = call(["list", "--scope", "all"])  # let the index reconcile once
        if code != 0:
            totals.failure_count += 1
            totals.failures.append(
                f"final `list --scope all` exited {code}: {stderr.strip()[-300:]}"
            )
        elif stderr.strip():
            say(f"final list warned: {' | '.join(stderr.strip().splitlines()[:5])}")
        after = audit(
            memory_folders(layout.home, layout.repo_dir), layout.home / "index.db", crash_log
        )

        total_ops = sum(sum(c.values()) for c in totals.counts.values())
        say("")
        say(ops_table(totals))
        say("")
        say(f"wall time {wall:.1f} s for {total_ops:,} operations: {total_ops / wall if wall else 0:.1f} ops/s "
            f"({args.procs} processes)")  # fmt: skip
        if totals.expected:
            say("")
            say(
                markdown(
                    ["expected error", "count"],
                    [[k, f"{n:,}"] for k, n in totals.expected.most_common()],
                )
            )
        if totals.warnings:
            say("")
            say("stderr notes of successful operations (most common first):")
            for text, n in totals.warnings.most_common(8):
                say(f"  {n:>5}  {text}")
        if totals.barrier_broken or totals.skipped_rounds:
            say(
                f"race rounds: barrier broken in {totals.barrier_broken} workers, {totals.skipped_rounds} skipped"
            )
        say("")
        say(
            f"audit: {after.files:,} memory files, {after.rows:,} index rows (after the final list)"
        )
        say(audit_table(before, after))
        for key, _ in AUDIT_CHECKS:
            for example in after.examples.get(key, []):
                say(f"  {key}: {example}")
        if totals.failures:
            say("")
            say(f"failures ({totals.failure_count}), first {min(len(totals.failures), 10)}:")
            for line in totals.failures[:10]:
                say(f"  {line}")
        failed = totals.failure_count > 0 or not after.clean
        say("")
        say(f"total runtime {time.perf_counter() - started:.0f} s")
        say("RESULT: " + ("FAIL — operations failed or the audit found inconsistencies" if failed
                          else "PASS — no failures, every audit counter is zero"))  # fmt: skip
        return 1 if failed else 0
    finally:
        os.chdir(cwd)
        if args.keep:
            say(f"kept: base {base}\n  data root (OPEN_MEMEX_HOME) {layout.home}\n  HOME {layout.user}\n"
                f"  repository {layout.project}\n  run dir (logs, ids, results) {layout.run}")  # fmt: skip
        else:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
