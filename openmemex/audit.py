"""``open-memex audit``: the health of the memories themselves (D57) — ``doctor`` checks the
environment, this checks what is stored.

Read-only, truly: it brings the index in line with the files (the index is a cache) but
runs no chain repair, so a one-sided supersede pointer is reported rather than silently
fixed, and no memory file is written. Every finding names the command that fixes it.
The chain and duplicate-id checks are the ones ``doctor`` reports too — one function
each, called from both.
"""

from __future__ import annotations

import math
import os
import sqlite3
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from . import freshness, index
from .context import Context
from .index import Folder, placeholders
from .lifecycle import stranded_sql
from .text import jaccard, similarity_tokens
from .write import NEAR_DUP

STALE_DAYS = 90
LENGTH_RATIO = 0.5  # near-duplicates of very different length are a summary and its source
CHECKS = ("near-duplicates", "stale", "supersede chains", "duplicate ids", "personal in repo", "index drift",
          "unreadable files")  # fmt: skip


@dataclass
class Finding:
    subject: str  # the id(s) or path it is about
    detail: str
    fix: str  # the command that fixes it

    def to_json(self) -> dict[str, str]:
        return {"subject": self.subject, "detail": self.detail, "fix": self.fix}


@dataclass
class Report:
    scope: str
    memories: int
    checks: dict[str, list[Finding]] = field(default_factory=dict)

    @property
    def findings(self) -> int:
        return sum(len(f) for f in self.checks.values())

    def to_json(self) -> dict[str, object]:
        return {
            "scope": self.scope,
            "memories": self.memories,
            "findings": self.findings,
            "checks": [
                {"name": name, "ok": not found, "findings": [f.to_json() for f in found]}
                for name, found in self.checks.items()
            ],
        }


def audit(ctx: Context, scope: str = "both", now: float | None = None) -> Report:
    folders = ctx.folders(scope)
    freshness.reconcile(ctx.conn, folders, warn=ctx.warn, progress=ctx.progress)  # no chain repair: read-only
    conn = ctx.conn
    dirs = [str(f.path) for f in folders]
    marks = placeholders(dirs)
    total = conn.execute(f"SELECT COUNT(DISTINCT id) FROM memories WHERE dir IN ({marks})", dirs).fetchone()[0]
    report = Report(scope, total)
    now = time.time() if now is None else now
    active = conn.execute(
        f"SELECT id, scope_key, content, updated_at, location FROM memories WHERE dir IN ({marks}) AND status = 'active' "
        "ORDER BY location = 'repo' DESC",
        dirs,
    ).fetchall()
    unique = list({r["id"]: r for r in reversed(active)}.values())  # the repo copy of a duplicated id
    report.checks["near-duplicates"] = near_duplicates(unique)
    report.checks["stale"] = _stale(unique, now)
    report.checks["supersede chains"] = chain_findings(conn, dirs)
    report.checks["duplicate ids"] = duplicate_id_findings(conn, dirs)
    report.checks["personal in repo"] = _personal_in_repo(conn, folders, ctx.project.root)
    report.checks["index drift"] = _drift(conn, folders)
    report.checks["unreadable files"] = [
        Finding(path, reason, f"fix or delete {path} by hand (then `open-memex reindex`)")
        for path, reason in index.quarantined(conn) if str(Path(path).parent) in dirs
    ]  # fmt: skip
    return report


def near_duplicates(rows: list[sqlite3.Row]) -> list[Finding]:
    """Active pairs of one scope at the write path's near-duplicate bar (Jaccard ≥ 0.8 over
    the same tokens). Exact, and fast enough for 100k memories: prefix filtering (AllPairs)
    compares only pairs that share one of their rarest tokens, which every pair at the bar
    must."""
    by_key: dict[str, list[sqlite3.Row]] = defaultdict(list)
    for row in rows:
        by_key[row["scope_key"]].append(row)
    found: list[tuple[float, Finding]] = []
    for key, members in by_key.items():
        tokens = [similarity_tokens(r["content"]) for r in members]
        freq = Counter(t for s in tokens for t in s)
        seen: dict[str, list[int]] = defaultdict(list)
        for i in sorted(range(len(members)), key=lambda k: len(tokens[k])):
            size = len(tokens[i])
            if not size:
                continue
            ordered = sorted(tokens[i], key=lambda t: (freq[t], t))
            prefix = size - math.ceil(NEAR_DUP * size - 1e-9) + 1
            candidates: set[int] = set()
            for token in ordered[:prefix]:
                candidates.update(j for j in seen[token] if len(tokens[j]) >= NEAR_DUP * size - 1e-9)
                seen[token].append(i)
            for j in candidates:
                a, b = members[i], members[j]
                la, lb = len(a["content"]), len(b["content"])
                if min(la, lb) / max(la, lb, 1) < LENGTH_RATIO:
                    continue
                score = jaccard(tokens[i], tokens[j])
                if score >= NEAR_DUP:
                    older, newer = sorted((a, b), key=lambda r: (r["updated_at"], r["id"]))
                    where = "personal" if key == "personal" else "project"
                    found.append((score, Finding(
                        f"{older['id']} ~ {newer['id']}",
                        f"similarity {score:.2f} ({where}); {older['id']} is the older",
                        f"open-memex forget {older['id']} --soft (or supersede it with the merged text)",
                    )))  # fmt: skip
    found.sort(key=lambda item: (-item[0], item[1].subject))
    return [finding for _, finding in found]


def _stale(rows: list[sqlite3.Row], now: float) -> list[Finding]:
    out = []
    for row in sorted(rows, key=lambda r: (r["updated_at"], r["id"])):
        days = int((now - row["updated_at"]) // 86400)
        if days >= STALE_DAYS:
            out.append(Finding(row["id"], f"untouched for {days} days",
                               f"if it no longer holds: open-memex status {row['id']} archived "
                               f"(or open-memex supersede {row['id']} \"…\")"))  # fmt: skip
    return out


def chain_findings(conn: sqlite3.Connection, dirs: list[str]) -> list[Finding]:
    """Supersede pointers that lead nowhere, memories replaced twice (a fork), and pointers
    only one side of a pair holds (any read repairs those; ``audit`` only reports them)."""
    marks = placeholders(dirs)
    out: list[Finding] = []
    for memory_id, target in conn.execute(
        f"SELECT m.id, m.superseded_by FROM memories m WHERE {stranded_sql('m')} AND m.dir IN ({marks}) ORDER BY m.id",
        dirs,
    ):
        gone = f"its replacement {target} is missing" if target else "it names no replacement"
        out.append(Finding(memory_id, f"{memory_id} is superseded but {gone}", f"open-memex status {memory_id} active"))
    for memory_id, count in conn.execute(
        f"SELECT supersedes, COUNT(DISTINCT id) FROM memories WHERE supersedes IS NOT NULL AND dir IN ({marks}) "
        "GROUP BY supersedes HAVING COUNT(DISTINCT id) > 1 ORDER BY supersedes",
        dirs,
    ):
        out.append(Finding(memory_id, f"{memory_id} is replaced by {count} memories", "forget all but one replacement"))
    for holder, partner, pointer in conn.execute(
        f"SELECT h.id, x.id, 'superseded_by' FROM memories h JOIN memories x ON x.id = h.superseded_by "
        f"WHERE h.superseded_by IS NOT NULL AND h.dir IN ({marks}) AND x.dir IN ({marks}) AND x.supersedes IS NULL "
        f"UNION SELECT h.id, x.id, 'supersedes' FROM memories h JOIN memories x ON x.id = h.supersedes "
        f"WHERE h.supersedes IS NOT NULL AND h.dir IN ({marks}) AND x.dir IN ({marks}) AND x.superseded_by IS NULL "
        "ORDER BY 1",
        [*dirs, *dirs, *dirs, *dirs],
    ):
        back = "supersedes" if pointer == "superseded_by" else "superseded_by"
        out.append(Finding(f"{holder} → {partner}", f"{holder} says {pointer} {partner}, but {partner} has no {back}",
                           "any read repairs it: open-memex list --scope both"))  # fmt: skip
    return out


def duplicate_id_findings(conn: sqlite3.Connection, dirs: list[str]) -> list[Finding]:
    """One id in several files: every command names the copy it acts on; this lists them.
    Only the folders just synced count (another work tree's rows may be stale)."""
    rows = conn.execute(
        f"SELECT id, GROUP_CONCAT(file_path, ' | ') FROM memories WHERE dir IN ({placeholders(dirs)}) "
        "GROUP BY id HAVING COUNT(*) > 1 ORDER BY id",
        dirs,
    ).fetchall()
    return [Finding(r[0], r[1], "keep one copy: delete the other file (`open-memex forget ID` acts on the first listed)")
            for r in rows]  # fmt: skip


def _personal_in_repo(conn: sqlite3.Connection, folders: list[Folder], root: Path) -> list[Finding]:
    """Iron rule: personal memories never travel with git; a private one in the repo dir
    does once it is committed (design §4)."""
    repo = [str(f.path) for f in folders if f.location == "repo"]
    if not repo:
        return []
    out = []
    for row in conn.execute(
        f"SELECT id, file_path, scope, visibility FROM memories WHERE dir IN ({placeholders(repo)}) "
        "AND (scope = 'personal' OR visibility = 'private') ORDER BY id",
        repo,
    ):
        rel = os.path.relpath(row["file_path"], root)
        what = "a personal memory" if row["scope"] == "personal" else "a private memory"
        out.append(Finding(rel, f"{what} inside the repository's memory folder",
                           f"git rm {rel} and commit (keep it with `open-memex add --scope personal`)"))  # fmt: skip
    return out


def _drift(conn: sqlite3.Connection, folders: list[Folder]) -> list[Finding]:
    """Files the index does not know and rows whose file is gone (zero after a reconcile,
    unless something changed the folders meanwhile)."""
    not_indexed = missing = 0
    for folder in folders:
        key = str(folder.path)
        known = {r[0] for r in conn.execute("SELECT file_path FROM memories WHERE dir = ?", (key,))}
        known |= {r[0] for r in conn.execute("SELECT file_path FROM quarantine WHERE dir = ?", (key,))}
        on_disk = set()
        try:
            with os.scandir(folder.path) as entries:
                for entry in entries:
                    if entry.name.endswith(".md") and not entry.name.startswith("."):
                        on_disk.add(entry.path)
        except (FileNotFoundError, NotADirectoryError):
            pass
        not_indexed += len(on_disk - known)
        for path in known - on_disk:
            try:
                os.lstat(path)
            except FileNotFoundError:
                missing += 1
            except OSError:
                continue
    if not (not_indexed or missing):
        return []
    return [Finding("index", f"{not_indexed} file(s) not indexed, {missing} row(s) whose file is gone",
                    "open-memex reindex")]  # fmt: skip

