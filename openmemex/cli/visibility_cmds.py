"""Visibility and portability commands: inventory, audit, export, import, distill-agents.

Thin on purpose: each parses, calls its core module, and prints (design principle 6).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

from cyclopts import Parameter

from .output import Count, Flag, emit_json, note, open_context, out

Output = Annotated[str | None, Parameter(name=["--output", "-o"])]
PROGRESS_MIN = 500  # files before a progress bar is worth showing (freshness uses the same)


def inventory(
    *,
    format: str = "text",
    scope: str = "both",
    type: str | None = None,
    out_: Annotated[str | None, Parameter(name="--out")] = None,
    allow_personal: Flag = False,
) -> int:
    """Show everything open-memex remembers: about you, this project, and the outbox.

    One numbering across sections, true totals, hidden history counted. Text and JSON
    go to stdout unless --out is given; HTML is written to <data root>/inventory.html
    (one self-contained page that loads nothing from the network). A report holding
    personal memories is refused inside a git work tree unless --allow-personal.

    Parameters
    ----------
    format
        text (default), json (open-memex-inventory/2, no file paths) or html.
    scope
        both (default: personal and this project), project, personal or all.
    type
        Only this memory type.
    out_
        Write the report to this file.
    allow_personal
        Allow a report with personal memories inside a git work tree.
    """
    from ..errors import UsageError
    from ..inventory import (
        FORMATS,
        check_out_path,
        default_html_path,
        has_personal,
        render_json,
        render_text,
    )
    from ..listing import inventory as load
    from ..store import write_atomic

    if format not in FORMATS:
        raise UsageError(f"unknown --format {format!r} — use one of: {', '.join(FORMATS)}")
    with open_context() as ctx:
        listing = load(ctx, scope=scope, type=type, history_entries=format == "html")
        root, cwd = ctx.root, ctx.cwd
    if format == "html":
        from ..inventory_html import render_html

        text = render_html(listing)
        target = out_ if out_ is not None else default_html_path(root)
    else:
        text = render_text(listing) if format == "text" else render_json(listing, scope)
        if out_ is None:
            if format == "json":
                sys.stdout.write(text)
            else:
                out(text.rstrip("\n"))
            return 0
        target = out_
    path = check_out_path(target, cwd, has_personal(listing), allow_personal)
    write_atomic(path, text)
    total = sum(s.total for s in listing.sections)
    out(f"wrote the inventory ({total} memories, {format}) to {path}")
    if format == "html":
        note(f"open it in a browser: {path.as_uri()}")
    return 0


def audit(*, scope: str = "both", json: Flag = False) -> int:
    """Check the memories' health: near-duplicates, stale, broken chains, and more.

    Read-only: nothing is changed (not even a chain repair); each finding names the
    command that fixes it. Checks: near-duplicate active pairs (the write path's 0.8
    bar), actives untouched for 90+ days, broken or one-sided supersede chains, one id
    in several files, personal or private files in the repository's memory folder,
    index/file drift, unreadable files.

    Parameters
    ----------
    scope
        both (default), project, personal or all.
    json
        Print one JSON document.
    """
    from ..audit import audit as run_audit

    with open_context() as ctx:
        report = run_audit(ctx, scope)
    if json:
        emit_json(report.to_json())
        return 0
    out(f"audit: {report.memories} memories ({scope}) — read-only, nothing was changed")
    for name, findings in report.checks.items():
        if not findings:
            out(f"  ok    {name}")
            continue
        out(f"  {len(findings):<5} {name}")
        for finding in findings[:10]:
            out(f"        {finding.subject} — {finding.detail}")
            out(f"          fix: {finding.fix}")
        if len(findings) > 10:
            out(f"        … and {len(findings) - 10} more (`open-memex audit --json` lists all)")
    out(f"{report.findings} finding(s)." if report.findings else "No findings.")
    return 0


def export(
    *,
    output: Output = None,
    scope: str = "project",
    type: str | None = None,
    tag: str | None = None,
    all_: Annotated[bool, Parameter(name=["--all", "-a"], negative="")] = False,
    allow_personal: Flag = False,
    json: Flag = False,
) -> int:
    """Write memories to a portable .tar.gz bundle (Markdown files + manifest.json).

    Private memories (every personal one, by default) stay behind unless --all; a full
    move to a new machine is `open-memex export --scope both --all -o ~/memories.tar.gz`.

    Parameters
    ----------
    output
        The bundle to write (default: open-memex-export-<time>.tar.gz here).
    scope
        project (default), personal or both.
    type
        Only this memory type.
    tag
        Only memories with this tag.
    all_
        Include private memories too.
    allow_personal
        Allow a bundle with personal memories inside a git work tree.
    json
        Print one JSON document.
    """
    from ..export import export_bundle
    from .progress import Progress

    with open_context() as ctx, Progress("exporting") as bar:
        result = export_bundle(ctx, output, scope=scope, type=type, tag=tag, include_private=all_,
                               allow_personal=allow_personal, progress=_gated(bar.update))  # fmt: skip
    if json:
        emit_json(result.to_json())
        return 0
    out(f"exported {result.exported} memories ({result.personal} personal, {result.project} project) → {result.path}")
    if result.skipped_private:
        note(f"skipped {result.skipped_private} private memories (use --all to include them)")
    if result.unreadable:
        note(f"skipped {len(result.unreadable)} memories whose file changed or vanished meanwhile: {', '.join(result.unreadable[:5])}")
    return 0


def import_(bundle: str, /, *, dry_run: Flag = False, json: Flag = False) -> int:
    """Import a bundle written by `open-memex export`.

    Personal memories go to your personal scope, project memories to this project's
    outbox (re-keyed to it). Every file is checked and redacted like any other write;
    the same id with the same text is skipped, with other text it is reported and never
    overwritten. A bundle with unsafe entries (paths outside it, links, devices, a
    manifest that disagrees with its files, too large) is refused whole. Exit 1 when a
    memory was rejected.

    Parameters
    ----------
    bundle
        The .tar.gz file.
    dry_run
        Check everything and report, but write nothing.
    json
        Print one JSON document.
    """
    from ..importer import import_bundle
    from .progress import Progress

    with open_context() as ctx, Progress("importing") as bar:
        result = import_bundle(ctx, Path(bundle), dry_run=dry_run, progress=_gated(bar.update))
        project = ctx.project.name
    if json:
        emit_json(result.to_json())
        return 1 if result.rejected else 0
    personal = sum(1 for _, scope in result.imported if scope == "personal")
    head = "DRY RUN — nothing was written: would import" if dry_run else "imported"
    line = f"{head} {len(result.imported)}, skipped {len(result.identical)} identical"
    if result.conflicts:
        line += f", {len(result.conflicts)} conflict(s)"
    if result.rejected:
        line += f", {len(result.rejected)} rejected"
    out(line)
    if result.imported:
        out(f"  {personal} to personal, {len(result.imported) - personal} to the outbox of {project}")
    for memory_id, file, why in result.conflicts:
        out(f"  conflict (kept existing): {memory_id} from {file} — {why}")
    for file, reason in result.rejected:
        out(f"  rejected: {file} ({reason})")
    for memory_id, pointer, why in result.unlinked:
        out(f"  unlinked: {memory_id} no longer {pointer} ({why})")
    if result.masked:
        rules = sorted({r for found in result.masked.values() for r in found})
        note(f"secret masked in {len(result.masked)} imported memories ({', '.join(rules)})")
    return 1 if result.rejected else 0


def distill_agents(
    *,
    type: str | None = None,
    limit: Count = 30,
    output: Output = None,
    force: Flag = False,
) -> int:
    """Propose an AGENTS.md section from this project's memories (review it, merge by hand).

    Only project memories: personal ones never appear, and an instruction only once it
    was approved. Ends with the memory-hygiene guidance for agents that read AGENTS.md.

    Parameters
    ----------
    type
        Comma-separated types (default: decision,constraint,lesson,gotcha,howto).
    limit
        At most this many memories (1–200, default 30).
    output
        Write the snippet to this file instead of stdout.
    force
        Overwrite --output if it exists.
    """
    from ..distill import distill_agents as run_distill
    from ..errors import UsageError
    from ..store import write_atomic
    from .output import split_list

    with open_context() as ctx:
        text, count = run_distill(ctx, split_list(type) or None, limit)
        cwd = ctx.cwd
    if not count:
        note("no distillable memories found (active project memories of the chosen types) — nothing written")
        return 0
    if output is None:
        out(text.rstrip("\n"))
        return 0
    path = Path(output) if Path(output).is_absolute() else cwd / output
    if path.exists() and not force:
        raise UsageError(f"{path} exists — pick another -o, or pass --force to overwrite it")
    write_atomic(path, text)
    out(f"wrote {count} memories to {path} — review it, then merge it into AGENTS.md by hand")
    return 0


def _gated(update: Callable[[int, int], None]) -> Callable[[int, int], None]:
    """The progress bar, for stores large enough to need one."""

    def gated(done: int, total: int) -> None:
        if total >= PROGRESS_MIN:
            update(done, total)

    return gated
