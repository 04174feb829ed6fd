"""Store commands: where, scopes, reindex, migrate, config, redact."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

from cyclopts import Parameter

from .output import Flag, emit_json, note, out, out_exact, warn


def where(*, json: Flag = False) -> int:
    """Show where memories, the index and the config live."""
    from .reads import where as run_where

    return run_where(json=json)


def scopes(*, json: Flag = False) -> int:
    """List the scope folders with their memory counts."""
    from ..context import Context
    from ..store import memory_files

    with Context.load(warn=warn) as ctx:
        rows = [(len(memory_files(ctx.folder_for_key(k).path)), k) for k in ctx.scope_keys_on_disk()]
        current = ctx.project.key
    rows.sort(key=lambda r: (-r[0], r[1]))
    if json:
        emit_json({"scopes": [{"key": k, "count": n, "current": k == current} for n, k in rows]})
        return 0
    if not rows:
        out("(no scopes with memories yet — add one with `open-memex add`)")
        return 0
    for count, key in rows:
        mark = "  <- current project" if key == current else "  <- personal" if key == "personal" else ""
        out(f"{count:>5}  {key}{mark}")
    return 0


def reindex(*, scope: str = "all", json: Flag = False) -> int:
    """Rebuild the search index from the memory files.

    Parameters
    ----------
    scope
        Which folders to re-read: all (default), both, project or personal.
    json
        Print one JSON document.
    """
    from .. import freshness
    from ..context import Context
    from .progress import Progress

    with Context.load(warn=warn) as ctx, Progress("reindex") as bar:
        stats = freshness.rebuild(ctx.conn, ctx.folders(scope), warn=ctx.warn, progress=bar.update)
    if json:
        emit_json({"added": stats.added, "scanned": stats.scanned,
                   "quarantined": [{"path": str(path), "reason": reason} for path, reason in stats.quarantined]})  # fmt: skip
        return 0
    out(f"reindexed: {stats.added} memories from {stats.scanned} files"
        + (f", {len(stats.quarantined)} skipped (see warnings)" if stats.quarantined else ""))  # fmt: skip
    return 0


def migrate(
    *,
    from_: Annotated[str | None, Parameter(name="--from")] = None,
    to: str | None = None,
    dry_run: Flag = False,
    on_conflict: str = "skip",
    json: Flag = False,
) -> int:
    """Move memories from one scope key to another.

    Use it after a repository's origin URL changed (its project key changed with it).

    Parameters
    ----------
    from_
        The scope key to move from (see `open-memex scopes`).
    to
        The scope key to move to: a key, "project" (the current project, default) or "personal".
    dry_run
        Only report what would move.
    on_conflict
        When the same id exists at the target with other text: skip (default), newer or overwrite.
    json
        Print one JSON document.
    """
    from ..context import Context
    from ..errors import UsageError
    from ..migrate import migrate as run_migrate

    if not from_:
        raise UsageError("no --from given — pick the old key from `open-memex scopes`")
    with Context.load(warn=warn) as ctx:
        report = run_migrate(ctx, from_, to, dry_run=dry_run, on_conflict=on_conflict)
    if json:
        emit_json({"source": report.source, "target": report.target, "dry_run": report.dry_run,
                   "moved": report.moved, "skipped": report.skipped, "conflicts": report.conflicts})  # fmt: skip
        return 0
    prefix = "[DRY RUN] " if dry_run else ""
    out(f"{prefix}{report.source} → {report.target}: moved {len(report.moved)}, skipped {len(report.skipped)} "
        f"identical, conflicts {len(report.conflicts)}")  # fmt: skip
    for memory_id in report.conflicts:
        out(f"  conflict (kept both): {memory_id} — rerun with --on-conflict newer|overwrite to decide")
    return 0


def config(action: str | None = None, key: str | None = None, value: str | None = None, /, *,
           json: Flag = False) -> int:  # fmt: skip
    """Show the effective settings, or get/set one.

    Usage: ``open-memex config``, ``open-memex config get KEY``, ``open-memex config set KEY VALUE``.

    Parameters
    ----------
    action
        get or set (omit to print everything as JSON).
    key
        A setting such as memoryDir, captureAliases, redactPatterns, sync.transport.
    value
        The new value (JSON where it parses, else text).
    json
        Print one JSON document (the settings and get print JSON anyway; set prints
        {"key", "value", "path"}).
    """
    from .. import paths
    from ..config import load_config, set_value
    from ..errors import UsageError

    path = paths.config_path(paths.data_root())
    if action is None:
        emit_json(load_config(path).values)
        return 0
    if action == "get" and key:
        emit_json(load_config(path).get(key))
        return 0
    if action == "set" and key and value is not None:
        stored = set_value(path, key, value)
        if json:
            emit_json({"key": key, "value": stored, "path": str(path)})
            return 0
        out(f"set {key} = {stored!r} ({path})")
        return 0
    raise UsageError("usage: open-memex config [get KEY | set KEY VALUE]")


def redact(source: Annotated[str | None, Parameter(allow_leading_hyphen=True)] = None, /, *,
           json: Flag = False) -> int:  # fmt: skip
    """Print text exactly as it would be stored (secrets masked).

    Secrets are masked and private spans become [REDACTED], exactly as the write path does.
    On a terminal, control characters are shown as visible escapes; piped or redirected,
    the output is byte-for-byte what would be stored.

    Parameters
    ----------
    source
        A file to read, or - (default) for standard input.
    json
        Print one JSON document: {"text", "masked", "private_spans"}.
    """
    from ..context import Context
    from ..errors import UsageError
    from ..write import clean

    name = "standard input" if source in (None, "-") else source
    try:
        data = _stdin_bytes() if source in (None, "-") else Path(source).read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read {name}: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")  # text mode's newlines
    except UnicodeDecodeError as exc:
        raise UsageError(
            f"cannot read {name}: not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}) — "
            "convert it first, e.g. `iconv -t UTF-8`"
        ) from None
    with Context.load(warn=warn) as ctx:
        result = clean(ctx, text)
    if json:
        emit_json({"text": result.text, "masked": list(result.rules), "private_spans": result.private_spans})
        return 0
    out_exact(result.text)
    if result.rules:
        note(f"masked: {', '.join(result.rules)}")
    return 0


def _stdin_bytes() -> bytes:
    """Standard input undecoded: a text-mode stdin would hide invalid UTF-8 as surrogates."""
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is not None:
        return bytes(buffer.read())
    return sys.stdin.read().encode("utf-8", "surrogateescape")


def doctor(*, json: Flag = False) -> int:
    """Check the environment (storage, locking, git, man page).

    Checks storage, SQLite locking, YAML speed, unreadable memory files, git, and how to
    make `git memex --help` find the man page.
    """
    from ..context import Context
    from ..doctor import run_checks

    with Context.load(warn=warn) as ctx:
        checks = run_checks(ctx)
    failed = [c for c in checks if not c.ok and c.name not in ("git memex", "man page")]
    if json:
        emit_json({"ok": not failed, "checks": [{"name": c.name, "ok": c.ok, "detail": c.detail} for c in checks]})
        return 1 if failed else 0
    for check in checks:
        mark = "ok  " if check.ok else ("FAIL" if check in failed else "note")
        out(f"  {mark} {check.name}: {check.detail}")
    out("All checks passed." if not failed else "Some checks failed — see above.")
    return 1 if failed else 0
