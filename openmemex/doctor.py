"""Health checks of the environment (not of the memories — that is ``audit``)."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from . import freshness, index, paths
from .context import Context
from .errors import MemexError, StoreBusyError
from .index import Folder


@dataclass
class Check:
    name: str
    ok: bool
    detail: str


def run_checks(ctx: Context) -> list[Check]:
    checks: list[Check] = []
    checks.append(Check("python", sys.version_info >= (3, 11), sys.version.split()[0]))
    try:
        # made now (every command makes it on first use), but said: a mistyped OPEN_MEMEX_HOME shows here
        made = "" if os.path.lexists(ctx.root) else "; created just now — no memories were there yet"
        ctx.root.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=ctx.root, prefix=".doctor-"):
            pass
        checks.append(Check("storage", True, f"{ctx.root} is writable (from {paths.data_root_source()}{made})"))
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
    try:
        freshness.sync(ctx, "all")
        synced = True
    except StoreBusyError:  # another process's write: the checks below read the index as it is
        checks.append(Check("index busy", False, index_holders(paths.index_path(ctx.root))))
        synced = False
    conn = ctx.conn  # the sync may have rebuilt a damaged index
    bad = index.quarantined(conn)
    unreadable = [str(f.path) for f in ctx.folders("all") if f.path.is_dir() and not os.access(f.path, os.R_OK | os.X_OK)]
    bad += [(folder, "the folder cannot be read — chmod u+rx") for folder in unreadable]
    checks.append(Check("memory files", not bad, "all readable" if not bad else
                        f"{len(bad)} skipped: " + "; ".join(f"{p}: {r}" for p, r in bad[:5])))  # fmt: skip
    dirs = [str(f.path) for f in ctx.folders("all")]
    if synced:  # rows not brought up to date would differ from their files for no fault
        checks.append(_rows_agree(ctx, conn))
    checks.append(_duplicate_ids(conn, dirs))
    checks.append(_chains(conn, ctx.folders("all")))
    git = shutil.which("git")
    transport = ctx.config.values.get("sync", {}).get("transport", "auto")
    checks.append(Check("git", git is not None or transport == "pygit2",
                        f"{git} (sync.transport={transport})" if git else
                        "no git on PATH — fetch/push use the in-process pygit2 transport"))  # fmt: skip
    checks.append(Check("git memex", shutil.which("git-memex") is not None,
                        "git-memex is on PATH" if shutil.which("git-memex") else
                        "git-memex is not on PATH — add the folder of the open-memex script to PATH"))  # fmt: skip
    checks.append(mcp_handshake(ctx))
    from .clients import doctor_checks

    checks.extend(Check(name, ok, detail) for name, ok, detail in doctor_checks())
    man_dirs = [d for d in os.environ.get("MANPATH", "").split(os.pathsep) if d]
    on_manpath = str(paths.manpath()) in man_dirs
    checks.append(Check("man page", on_manpath, "git memex --help finds git-memex.1" if on_manpath else
                        f"for `git memex --help`: export MANPATH=\"{paths.manpath()}:$MANPATH\" "
                        "(git memex -h always works)"))  # fmt: skip
    return checks


def index_holders(db_path: Path) -> str:
    """The busy index's check line: which processes have ``index.db`` open (Linux /proc;
    one of them holds the write), else that another open-memex is writing."""
    from .echo import masked

    found: list[str] = []
    target = os.path.realpath(db_path)  # what /proc/<pid>/fd links to
    with contextlib.suppress(OSError):
        for pid in (p for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()):
            with contextlib.suppress(OSError):
                fds = f"/proc/{pid}/fd"
                if any(os.readlink(f"{fds}/{fd}") == target for fd in os.listdir(fds)):
                    with open(f"/proc/{pid}/cmdline", "rb") as fh:
                        command = fh.read().replace(b"\0", b" ").decode(errors="replace").strip()
                    found.append(f"pid {pid} ({masked(command, 60)})")  # `add "…"`: its text may hold a secret
    who = f"processes with it open: {', '.join(found[:3])}" if found else "another open-memex process is writing"
    return (f"{db_path} is locked by another process's write — {who}; the checks below read the index "
            "as it is (index rows not compared) — run `open-memex doctor` again once it is done")


# What a row holds straight from its file. Inside a repository a read heals a one-sided
# supersede pointer in the index only (it never dirties the work tree): those fields may
# rightly differ there.
_FROM_FILE = ("scope", "scope_key", "visibility", "project_name", "type", "role", "importance", "review_state",
              "source", "status", "supersedes", "superseded_by")  # fmt: skip
_HEALED_IN_INDEX = {"status", "supersedes", "superseded_by"}


def _rows_agree(ctx: Context, conn: sqlite3.Connection) -> Check:
    """Every index row says what its file says. The index is a cache the fingerprint keeps
    fresh; a row changed behind it (a sqlite3 shell, a bug of ours) is found here, and
    ``reindex`` rebuilds it. Reads every memory file once."""
    from .memfile import MemoryFileError, read_memory

    differ: list[str] = []
    for folder in ctx.folders("all"):
        fields = [f for f in _FROM_FILE if folder.location != "repo" or f not in _HEALED_IN_INDEX]
        for row in conn.execute(f"SELECT file_path, id, content, {', '.join(fields)} FROM memories WHERE dir = ?",
                                (str(folder.path),)):  # fmt: skip
            try:
                memory = read_memory(row["file_path"], folder.scope_key, keep_raw=False)
            except (MemoryFileError, OSError):
                continue  # changed or gone since the sync: the next read takes it up
            wrong = [f for f in fields if row[f] != getattr(memory, f)]
            if row["content"] != memory.body:
                wrong.append("body")
            if wrong:
                differ.append(f"{row['id']} ({', '.join(wrong)})")
    if not differ:
        return Check("index rows", True, "every row says what its file says")
    more = f" (and {len(differ) - 3} more)" if len(differ) > 3 else ""
    return Check("index rows", False, f"{len(differ)} row(s) differ from their files: {'; '.join(differ[:3])}{more} "
                 "— changed outside open-memex; rebuild the index with `open-memex reindex`")  # fmt: skip


def _duplicate_ids(conn: sqlite3.Connection, dirs: list[str]) -> Check:
    """One id in several files (the check ``audit`` runs too)."""
    from .audit import duplicate_id_findings

    found = duplicate_id_findings(conn, dirs)
    if not found:
        return Check("duplicate ids", True, "every id is in one file")
    shown = "; ".join(f"{f.subject}: {f.detail}" for f in found[:5])
    more = f" (and {len(found) - 5} more)" if len(found) > 5 else ""
    return Check("duplicate ids", False, f"{len(found)} id(s) in several files: {shown}{more} — "
                 "keep one copy: delete the other file by hand (`open-memex forget ID` would delete the memory itself)")  # fmt: skip


def _chains(conn: sqlite3.Connection, folders: list[Folder]) -> Check:
    """Supersede pointers that lead nowhere, memories replaced twice (a fork), a memory
    naming itself and loops (no read repairs those) — the check ``audit`` runs too (doctor
    has just healed the one-sided pointers it also lists)."""
    from .audit import chain_findings

    problems = [f"{f.detail} (fix: {f.fix})" for f in chain_findings(conn, folders)]
    if not problems:
        return Check("supersede chains", True, "every chain has one head")
    more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
    return Check("supersede chains", False, f"{len(problems)} problem(s): " + "; ".join(problems[:5]) + more)


HANDSHAKE_TIMEOUT_S = 20.0


def mcp_handshake(ctx: Context, timeout: float = HANDSHAKE_TIMEOUT_S) -> Check:
    """Start ``open-memex mcp`` as an editor would (a child process on stdio, this data
    root) and speak raw JSON-RPC to it: initialize, then tools/list must name exactly the
    eleven tools, and nothing but protocol may appear on its stdout."""
    from .server.names import TOOL_NAMES

    env = {**os.environ, "OPEN_MEMEX_HOME": str(ctx.root)}
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "open-memex doctor", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]  # fmt: skip
    # stderr into a file, not a pipe: a server warning about many files must not fill a pipe
    # nobody reads and stall the handshake
    errlog = tempfile.TemporaryFile()  # noqa: SIM115 (closed in the finally below)
    try:
        proc = subprocess.Popen([sys.executable, "-m", "openmemex", "mcp"], cwd=ctx.cwd, env=env,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errlog)  # fmt: skip
    except OSError as exc:
        errlog.close()
        return Check("mcp handshake", False, f"could not start the server: {exc.strerror}")
    lines: queue.Queue[bytes] = queue.Queue()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(b"")

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    started = time.monotonic()
    try:
        assert proc.stdin is not None
        proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
        proc.stdin.flush()
        tools: list[str] | None = None
        while tools is None:
            left = timeout - (time.monotonic() - started)
            line = lines.get(timeout=max(left, 0.01))
            if not line:
                proc.wait(timeout=5)
                errlog.seek(0)
                err = errlog.read().decode(errors="replace").strip().splitlines()
                return Check("mcp handshake", False, "the server exited: " + (err[-1] if err else "no message"))
            message = json.loads(line)  # a non-JSON line on stdout is a broken wire: reported below
            if not isinstance(message, dict):
                raise json.JSONDecodeError("not a JSON-RPC object", line.decode(errors="replace"), 0)
            if message.get("id") == 2:
                tools = [t["name"] for t in message.get("result", {}).get("tools", [])]
    except queue.Empty:
        return Check("mcp handshake", False, f"no answer within {timeout:.0f} s — run `open-memex mcp` to see why")
    except (json.JSONDecodeError, UnicodeDecodeError):
        return Check("mcp handshake", False, "the server wrote something that is not JSON-RPC on stdout")
    except OSError as exc:
        return Check("mcp handshake", False, f"the server closed its input: {exc}")
    finally:
        with contextlib.suppress(OSError):
            if proc.stdin is not None:
                proc.stdin.close()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        reader.join(timeout=5)
        if proc.stdout is not None:
            proc.stdout.close()
        errlog.close()
    elapsed = time.monotonic() - started
    if sorted(tools) != sorted(TOOL_NAMES):
        return Check("mcp handshake", False, f"expected the eleven memory_* tools, got {len(tools)}: {', '.join(tools)}")
    return Check("mcp handshake", True, f"{len(tools)} tools listed in {elapsed:.1f} s")
