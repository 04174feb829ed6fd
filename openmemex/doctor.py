"""Health checks of the environment (not of the memories — that is ``audit``)."""

from __future__ import annotations

import os
import shutil
import sqlite3
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from . import freshness, index, paths
from .context import Context
from .errors import MemexError
from .index import placeholders
from .lifecycle import stranded_sql


@dataclass
class Check:
    name: str
    ok: bool
    detail: str


def manpath() -> Path:
    return Path(__file__).resolve().parent / "man"


def run_checks(ctx: Context) -> list[Check]:
    checks: list[Check] = []
    checks.append(Check("python", sys.version_info >= (3, 11), sys.version.split()[0]))
    try:
        ctx.root.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=ctx.root, prefix=".doctor-"):
            pass
        checks.append(Check("storage", True, f"{ctx.root} is writable (from {paths.data_root_source()})"))
    except OSError as exc:
        checks.append(Check("storage", False, f"{ctx.root}: {exc.strerror} — set OPEN_MEMEX_HOME to a writable folder"))
    import yaml

    checks.append(Check("yaml", bool(getattr(yaml, "__with_libyaml__", False)),
                        "libyaml C loader" if getattr(yaml, "__with_libyaml__", False) else
                        "pure-Python YAML (slow) — reinstall PyYAML from a wheel"))  # fmt: skip
    try:
        conn = ctx.conn
    except (MemexError, OSError, sqlite3.Error) as exc:
        checks.append(Check("locking", False, f"the index cannot be opened: {exc}"))
        return checks
    mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
    timeout = conn.execute("PRAGMA busy_timeout").fetchone()[0]
    checks.append(Check("locking", mode == "wal" and timeout >= 1000, f"journal_mode={mode}, busy_timeout={timeout} ms"))
    freshness.sync(ctx, "all")
    conn = ctx.conn  # the sync may have rebuilt a damaged index
    bad = index.quarantined(conn)
    checks.append(Check("memory files", not bad, "all readable" if not bad else
                        f"{len(bad)} skipped: " + "; ".join(f"{p}: {r}" for p, r in bad[:5])))  # fmt: skip
    dirs = [str(f.path) for f in ctx.folders("all")]
    checks.append(_duplicate_ids(conn, dirs))
    checks.append(_chains(conn, dirs))
    git = shutil.which("git")
    transport = ctx.config.values.get("sync", {}).get("transport", "auto")
    checks.append(Check("git", git is not None or transport == "pygit2",
                        f"{git} (sync.transport={transport})" if git else
                        "no git on PATH — fetch/push use the in-process pygit2 transport"))  # fmt: skip
    checks.append(Check("git memex", shutil.which("git-memex") is not None,
                        "git-memex is on PATH" if shutil.which("git-memex") else
                        "git-memex is not on PATH — add the folder of the open-memex script to PATH"))  # fmt: skip
    man_dirs = [d for d in os.environ.get("MANPATH", "").split(os.pathsep) if d]
    on_manpath = str(manpath()) in man_dirs
    checks.append(Check("man page", on_manpath, "git memex --help finds git-memex.1" if on_manpath else
                        f"for `git memex --help`: export MANPATH=\"{manpath()}:$MANPATH\" "
                        "(git memex -h always works)"))  # fmt: skip
    return checks


def _duplicate_ids(conn: sqlite3.Connection, dirs: list[str]) -> Check:
    """One id in several files: every command names the copy it acts on; this lists them.
    Only the folders just synced count (another work tree's rows may be stale)."""
    rows = conn.execute(
        f"SELECT id, GROUP_CONCAT(file_path, ' | ') FROM memories WHERE dir IN ({placeholders(dirs)}) "
        "GROUP BY id HAVING COUNT(*) > 1 ORDER BY id",
        dirs,
    ).fetchall()
    if not rows:
        return Check("duplicate ids", True, "every id is in one file")
    shown = "; ".join(f"{r[0]}: {r[1]}" for r in rows[:5])
    more = f" (and {len(rows) - 5} more)" if len(rows) > 5 else ""
    return Check("duplicate ids", False, f"{len(rows)} id(s) in several files: {shown}{more} — "
                 "keep one copy (delete the other file, or `open-memex forget ID` acts on the first listed)")  # fmt: skip


def _chains(conn: sqlite3.Connection, dirs: list[str]) -> Check:
    """Supersede pointers that lead nowhere, and memories replaced twice (a fork)."""
    problems: list[str] = []
    for memory_id, target in conn.execute(
        f"SELECT m.id, m.superseded_by FROM memories m WHERE {stranded_sql('m')} AND m.dir IN ({placeholders(dirs)}) "
        "ORDER BY m.id",
        dirs,
    ):
        gone = f"its replacement {target} is missing" if target else "it names no replacement"
        problems.append(f"{memory_id} is superseded but {gone} (fix: open-memex status {memory_id} active)")
    for memory_id, count in conn.execute(
        f"SELECT supersedes, COUNT(DISTINCT id) FROM memories WHERE supersedes IS NOT NULL AND dir IN ({placeholders(dirs)}) "
        "GROUP BY supersedes HAVING COUNT(DISTINCT id) > 1 ORDER BY supersedes",
        dirs,
    ):
        problems.append(f"{memory_id} is replaced by {count} memories (fix: forget all but one replacement)")
    if not problems:
        return Check("supersede chains", True, "every chain has one head")
    more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
    return Check("supersede chains", False, f"{len(problems)} problem(s): " + "; ".join(problems[:5]) + more)
