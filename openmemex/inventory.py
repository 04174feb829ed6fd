"""``open-memex inventory``: what the assistant remembers, in the open (D68, D70).

One data layer (``listing.inventory``), three renderings: text for a terminal, JSON
(``open-memex-inventory/2``) for an agent, HTML (``inventory_html``) for a person. The
JSON carries no file path at all — it is made to be pasted into a cloud conversation,
and /1 leaked the home directory. A report holding personal memories is never written
inside a git work tree unless asked (``check_out_path``, the one guard every report and
bundle uses): a stray ``git add -A`` would otherwise carry them into a commit.
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import MemexError, UsageError
from .gitinfo import discover
from .ids import format_time
from .listing import Listing, entry_line
from .terminal import json_text

FORMAT = "open-memex-inventory/2"
FORMATS = ("text", "json", "html")
READ_ONLY_NOTE = (
    "Read-only report. To remove a memory: `open-memex forget ID` (`--soft` only hides it), or ask your agent "
    "to forget it — it reads the entry back before deleting."
)
OUTBOX_NOTE = (
    "These exist only on this machine. They reach the repo through review (`open-memex submit ID`), "
    "never automatically."
)


def counts(listing: Listing) -> dict[str, int]:
    """How many current memories each kind of section holds (their true totals)."""
    out = {"personal": 0, "project": 0, "outbox": 0}
    for section in listing.sections:
        out[section.kind] = out.get(section.kind, 0) + section.total
    return out


def has_personal(listing: Listing) -> bool:
    """Whether the report would show anything of the personal scope — current entries or
    folded history — which is what the work-tree guard protects."""
    return any(s.kind == "personal" and (s.total or s.history.total) for s in listing.sections)


def render_text(listing: Listing) -> str:
    now = listing.generated_at
    n = counts(listing)
    total = sum(n.values())
    lines = [
        f"What open-memex remembers — {format_time(now)}",
        f"{total} memories ({n['personal']} personal, {n['project']} in the repo, {n['outbox']} in the outbox).",
    ]
    number = 0
    for section in listing.sections:
        lines.extend(["", f"## {section.title} ({section.total})"])
        if section.kind == "outbox":
            lines.append(OUTBOX_NOTE)
        if not section.entries:
            lines.append("(nothing remembered)")
        for entry in section.entries:
            number += 1
            lines.append(entry_line(number, entry, now))
        if section.not_shown:
            lines.append(f"… and {section.not_shown} more not shown")
    history = listing.history
    if history.total:
        lines.extend(["", history.line("inspect with `open-memex list --scope both --include all`.")])
    lines.extend(["", READ_ONLY_NOTE])
    return "\n".join(lines) + "\n"


def to_json(listing: Listing, scope: str) -> dict[str, object]:
    """``open-memex-inventory/2``: the text report's data, numbered the same way."""
    now = listing.generated_at
    scopes: list[dict[str, object]] = []
    outbox: list[dict[str, object]] = []
    number = 0
    for section in listing.sections:
        entries = []
        for entry in section.entries:
            number += 1
            entries.append({"number": number, **entry.to_json(now)})
        if section.kind == "outbox":
            outbox.extend(entries)
            continue
        scopes.append({
            "scope": section.kind,
            "scope_key": section.scope_key,
            "title": section.title,
            "total": section.total,
            "memories": entries,
        })  # fmt: skip
    n = counts(listing)
    return {
        "format": FORMAT,
        "generated_at": format_time(now),
        "scope": scope,
        "total": sum(n.values()),
        "counts": n,
        "scopes": scopes,
        "outbox": outbox,
        "hidden": listing.history.to_json(),
    }


def render_json(listing: Listing, scope: str) -> str:
    return json_text(to_json(listing, scope), indent=2) + "\n"


def default_html_path(root: Path) -> Path:
    """The data root, never a work tree."""
    return root / "inventory.html"


def _nearest_existing(path: Path) -> Path:
    for folder in (path, *path.parents):
        if os.path.lexists(folder):
            return folder
    return Path(path.anchor or "/")


def check_out_path(target: str | Path, cwd: Path, personal: bool, allow_personal: bool,
                   what: str = "the report", flag: str = "--out") -> Path:  # fmt: skip
    """Where a report or bundle may be written, or a one-line refusal. The work tree is
    judged from the nearest folder that exists, with symlinks resolved, so a folder not
    created yet or a link into a repository cannot make the check pass (fails closed,
    D70); inside a work tree, that refusal comes before "does not exist"."""
    path = Path(os.path.expanduser(str(target)))
    path = path if path.is_absolute() else cwd / path
    parent = path.parent
    anchor = Path(os.path.realpath(_nearest_existing(parent)))
    repo = discover(anchor)
    if personal and not allow_personal and repo is not None:
        raise MemexError(
            f"{what} holds personal memories and {path} is inside the git work tree {repo.workdir} — "
            f"write it outside the repository ({flag} ~/…) or pass --allow-personal"
        )
    if not os.path.isdir(parent):
        raise UsageError(f"cannot write {path}: the directory {parent} does not exist — create it first, or pick another {flag}")
    if os.path.isdir(path):
        raise UsageError(f"cannot write {path}: it is a directory — give a file name")
    from .store import refuse_special

    refuse_special(path)
    return path
