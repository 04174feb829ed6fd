"""``open-memex audit``: the health of the memories themselves (D57) — ``doctor`` checks the
environment, this checks what is stored.

Read-only, truly: it brings the index in line with the files (the index is a cache) but
runs no chain repair, so a one-sided supersede pointer is reported rather than silently
fixed, and no memory file is written. Every finding names the command that fixes it.
The chain and duplicate-id checks are the ones ``doctor`` reports too — one function
each, called from both.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

from . import freshness, index
from .context import Context
from .index import Folder, placeholders
from .lifecycle import stranded_sql
from .text import similarity_tokens
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
    report.checks["supersede chains"] = chain_findings(conn, folders)
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
    the same tokens). Exact, without comparing every pair: PPJoin — tokens in one global
    rarest-first order; a pair at the bar must share a token within short prefixes of
    both sets, and the positions where they meet bound how large the overlap can still
    get, so most candidates are dropped before any set is intersected."""
    bar = Fraction(NEAR_DUP).limit_denominator(1000)
    num, den = bar.numerator, bar.denominator  # integer arithmetic: exact, and fast in the loop
    by_key: dict[str, list[sqlite3.Row]] = defaultdict(list)
    for row in rows:
        by_key[row["scope_key"]].append(row)
    found: list[tuple[float, Finding]] = []
    for key, members in by_key.items():
        sets = [similarity_tokens(r["content"]) for r in members]
        freq = Counter(token for s in sets for token in s)
        order = {token: rank for rank, token in enumerate(sorted(freq, key=lambda tok: (freq[tok], tok)))}
        ranked = [sorted(order[token] for token in s) for s in sets]
        sizes = [len(r) for r in ranked]
        postings: dict[int, list[tuple[int, int]]] = defaultdict(list)  # token -> (set, position)
        for x in sorted(range(len(members)), key=sizes.__getitem__):
            size = sizes[x]
            if not size:
                continue
            smallest = -(-num * size // den)  # ceil(bar * size): a smaller set cannot reach the bar
            probe = size - smallest + 1
            overlap: dict[int, int] = {}
            for i, token in enumerate(ranked[x][:probe]):
                rest = size - i - 1
                for y, j in postings[token]:
                    other = sizes[y]
                    have = overlap.get(y, 0)
                    if other < smallest or have < 0:
                        continue
                    need = -(-num * (size + other) // (num + den))  # ceil(bar / (1 + bar) * (|x| + |y|))
                    overlap[y] = have + 1 if have + 1 + min(rest, other - j - 1) >= need else -1
            index = size - (-(-2 * num * size // (num + den))) + 1  # ceil(2 bar / (1 + bar) * |x|)
            for i, token in enumerate(ranked[x][:index]):
                postings[token].append((x, i))
            for y, seen in overlap.items():
                if seen <= 0:
                    continue
                common = len(sets[x] & sets[y])  # one C-level intersection; the union follows from it
                if common * (num + den) < num * (size + sizes[y]):
                    continue
                pair = _pair(members[x], members[y], common / (len(sets[x]) + len(sets[y]) - common), key)
                if pair is not None:
                    found.append(pair)
    found.sort(key=lambda item: (-item[0], item[1].subject))
    return [finding for _, finding in found]


def _pair(a: sqlite3.Row, b: sqlite3.Row, score: float, key: str) -> tuple[float, Finding] | None:
    la, lb = len(a["content"]), len(b["content"])
    if score < NEAR_DUP or min(la, lb) / max(la, lb, 1) < LENGTH_RATIO:
        return None
    older, newer = sorted((a, b), key=lambda r: (r["updated_at"], r["id"]))
    where = "personal" if key == "personal" else "project"
    return score, Finding(
        f"{older['id']} ~ {newer['id']}",
        f"similarity {score:.2f} ({where}); {older['id']} is the older",
        f"open-memex forget {older['id']} --soft (or supersede it with the merged text)",
    )


def _stale(rows: list[sqlite3.Row], now: float) -> list[Finding]:
    out = []
    for row in sorted(rows, key=lambda r: (r["updated_at"], r["id"])):
        days = int((now - row["updated_at"]) // 86400)
        if days >= STALE_DAYS:
            out.append(Finding(row["id"], f"untouched for {days} days",
                               f"if it no longer holds: open-memex status {row['id']} archived "
                               f"(or open-memex supersede {row['id']} \"…\")"))  # fmt: skip
    return out


def chain_findings(conn: sqlite3.Connection, folders: list[Folder]) -> list[Finding]:
    """Supersede pointers that lead nowhere, memories replaced twice (a fork), a memory
    naming itself and loops (no read acts on those: they are broken files, fixed by hand),
    and pointers only one side of a pair holds (any read repairs those; ``audit`` only
    reports them) — but for one no read completes (``freshness.chain_refusal``: across
    scopes, or marking a repository memory replaced from outside it), whose fix is in its
    holder's file."""
    dirs = [str(f.path) for f in folders]
    by_dir = {str(f.path): f for f in folders}
    marks = placeholders(dirs)
    out, looped = _broken_chains(conn, dirs)
    for memory_id, target in conn.execute(
        f"SELECT m.id, m.superseded_by FROM memories m WHERE {stranded_sql('m')} AND m.dir IN ({marks}) ORDER BY m.id",
        dirs,
    ):
        gone = f"its replacement {target} is missing" if target else "it names no replacement"
        fix = f"open-memex status {memory_id} active"
        if target:  # a chain exported in two bundles joins when the other part is imported
            fix = f"import the bundle that holds {target} if it is still to come; else {fix}"
        out.append(Finding(memory_id, f"{memory_id} is superseded but {gone}", fix))
    for memory_id, count in conn.execute(
        f"SELECT supersedes, COUNT(DISTINCT id) FROM memories WHERE supersedes IS NOT NULL AND dir IN ({marks}) "
        "GROUP BY supersedes HAVING COUNT(DISTINCT id) > 1 ORDER BY supersedes",
        dirs,
    ):
        out.append(Finding(memory_id, f"{memory_id} is replaced by {count} memories", "forget all but one replacement"))
    for holder, partner, pointer, holder_dir, partner_dir, holder_path in conn.execute(
        f"SELECT h.id, x.id, 'superseded_by', h.dir, x.dir, h.file_path FROM memories h JOIN memories x ON x.id = h.superseded_by "
        f"WHERE h.superseded_by IS NOT NULL AND h.dir IN ({marks}) AND x.dir IN ({marks}) AND x.supersedes IS NULL "
        f"UNION SELECT h.id, x.id, 'supersedes', h.dir, x.dir, h.file_path FROM memories h JOIN memories x ON x.id = h.supersedes "
        f"WHERE h.supersedes IS NOT NULL AND h.dir IN ({marks}) AND x.dir IN ({marks}) AND x.superseded_by IS NULL "
        "ORDER BY 1",
        [*dirs, *dirs, *dirs, *dirs],
    ):
        if holder == partner or holder in looped:
            continue  # reported above: no read completes it
        back = "supersedes" if pointer == "superseded_by" else "superseded_by"
        why = freshness.chain_refusal(by_dir[holder_dir], by_dir[partner_dir], pointer, partner)
        if why is not None:
            out.append(Finding(f"{holder} → {partner}", f"{holder} says {pointer} {partner}, which no read follows: {why}",
                               freshness.refusal_fix(pointer, partner, holder_path)))  # fmt: skip
            continue
        out.append(Finding(f"{holder} → {partner}", f"{holder} says {pointer} {partner}, but {partner} has no {back}",
                           "any read repairs it: open-memex list --scope both"))  # fmt: skip
    return out + _healed_in_index_only(conn, [f for f in folders if f.location == "repo"])


def _broken_chains(conn: sqlite3.Connection, dirs: list[str]) -> tuple[list[Finding], set[str]]:
    """Memories naming themselves in a pointer, and supersede loops (A supersedes B, B
    supersedes A; either pointer of a pair links them), with the members of every loop.
    A read acts on neither (``freshness.loop_refusal``): which member is newest is a human
    call, so the fix names the files."""
    rows = conn.execute(
        f"SELECT id, file_path, supersedes, superseded_by FROM memories WHERE dir IN ({placeholders(dirs)}) "
        "AND (supersedes IS NOT NULL OR superseded_by IS NOT NULL) ORDER BY id, location = 'repo' DESC",
        dirs,
    ).fetchall()
    out: list[Finding] = []
    paths: dict[str, str] = {}
    edges: dict[str, set[str]] = defaultdict(set)  # old → new, by either pointer
    for memory_id, path, supersedes, superseded_by in rows:
        paths.setdefault(memory_id, path)
        for pointer, target in (("supersedes", supersedes), ("superseded_by", superseded_by)):
            if target == memory_id:
                out.append(Finding(memory_id, f"{memory_id} names itself in {pointer} (a broken file no read acts on)",
                                   freshness.refusal_fix(pointer, memory_id, path)))  # fmt: skip
            elif target:
                old, new = (target, memory_id) if pointer == "supersedes" else (memory_id, target)
                edges[old].add(new)
    looped: set[str] = set()
    for members in _loops(edges):
        looped.update(members)
        cycle = _one_cycle(edges, members)
        files = ", ".join(paths.get(m, m) for m in members)
        detail = f"the supersede chain loops: {' → '.join([*cycle, cycle[0]])} (no read acts on it)"
        if len(cycle) < len(members):
            detail += f"; members: {', '.join(members)}"
        out.append(Finding(", ".join(members), detail,
                           "break the loop by hand: the newest member gets `superseded_by: null` and `status: active`, "
                           f"the oldest `supersedes: null` ({files})"))  # fmt: skip
    return out, looped


def _loops(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected parts of two or more members (Tarjan, without recursion: a
    chain can be long), each sorted."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in order:
            continue
        order[root] = low[root] = len(order)
        stack.append(root)
        on_stack.add(root)
        work = [(root, iter(sorted(edges.get(root, ()))))]
        while work:
            node, todo = work[-1]
            nxt = next(todo, None)
            if nxt is not None:
                if nxt not in order:
                    order[nxt] = low[nxt] = len(order)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(edges.get(nxt, ())))))
                elif nxt in on_stack:
                    low[node] = min(low[node], order[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == order[node]:
                part: list[str] = []
                while not part or part[-1] != node:
                    part.append(stack.pop())
                    on_stack.discard(part[-1])
                if len(part) > 1:
                    found.append(sorted(part))
    return found


def _one_cycle(edges: dict[str, set[str]], members: list[str]) -> list[str]:
    """One loop inside a strongly connected part, from its smallest member on."""
    inside = set(members)
    walk = [members[0]]
    while True:
        nxt = min(edges[walk[-1]] & inside)
        if nxt in walk:
            return walk[walk.index(nxt) :]
        walk.append(nxt)


def _healed_in_index_only(conn: sqlite3.Connection, repo_folders: list[Folder]) -> list[Finding]:
    """A read completes a one-sided pointer of a repository file in the index only (a read
    never dirties the work tree), so the index shows a whole chain the file does not: a
    supersede killed between its two writes. The file is what git commits: say so."""
    from .memfile import MemoryFileError, read_memory

    if not repo_folders:
        return []
    dirs = [str(f.path) for f in repo_folders]
    out: list[Finding] = []
    for memory_id, path, supersedes, superseded_by in conn.execute(
        f"SELECT id, file_path, supersedes, superseded_by FROM memories WHERE dir IN ({placeholders(dirs)}) "
        "AND (supersedes IS NOT NULL OR superseded_by IS NOT NULL) ORDER BY id",
        dirs,
    ):
        try:
            held = read_memory(Path(path))
        except (MemoryFileError, OSError):
            continue  # unreadable files are reported on their own
        for pointer, value, now in (("superseded_by", superseded_by, held.superseded_by),
                                    ("supersedes", supersedes, held.supersedes)):  # fmt: skip
            if value and now != value:
                fix = (f"set `{pointer}: {value}`" + (" and `status: superseded`" if pointer == "superseded_by" else "")
                       + f" in {path}, or forget the other memory")  # fmt: skip
                out.append(Finding(f"{memory_id} → {value}", f"{memory_id}'s file in the repository does not say "
                                   f"{pointer} {value} (a supersede that did not finish; only the index does)", fix))  # fmt: skip
    return out


def duplicate_id_findings(conn: sqlite3.Connection, dirs: list[str]) -> list[Finding]:
    """One id in several files: every command names the copy it acts on; this lists them.
    Only the folders just synced count (another work tree's rows may be stale)."""
    from .lookup import LOCATION_RANK

    rows = conn.execute(
        f"SELECT id, file_path, location FROM memories WHERE dir IN ({placeholders(dirs)}) AND id IN "
        f"(SELECT id FROM memories WHERE dir IN ({placeholders(dirs)}) GROUP BY id HAVING COUNT(*) > 1) ORDER BY id",
        [*dirs, *dirs],
    ).fetchall()
    copies: dict[str, list[tuple[int, str]]] = {}
    for memory_id, path, location in rows:  # listed in the order every command picks its copy
        copies.setdefault(memory_id, []).append((LOCATION_RANK.get(location, 9), path))
    return [Finding(memory_id, " | ".join(path for _, path in sorted(found)),
                    "keep one copy: delete the other file by hand (`open-memex forget ID` would delete the memory itself)")
            for memory_id, found in copies.items()]  # fmt: skip


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

