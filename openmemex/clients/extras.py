"""What init writes beside the MCP entry: the agent skill (D54) and the Copilot
instructions section (D22).

Both are ours to refresh and to remove, and nothing else is: a skill folder carries a
small manifest with the hash of the SKILL.md we wrote, so a skill the user edited is never
overwritten (without --force) nor deleted; the instructions live between two markers in a
file the user may share with other text.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from importlib import resources
from pathlib import Path

from . import fileio
from .entry import ServerEntry

SKILL_NAME = "open-memex"
MANIFEST = ".open-memex.json"
START = "<!-- open-memex -->"
END = "<!-- /open-memex -->"


def template(name: str) -> str:
    return resources.files("openmemex.clients").joinpath("templates", name).read_text(encoding="utf-8")


def skill_text(entry: ServerEntry) -> str:
    """The bundled SKILL.md, naming this machine's CLI for agents without it on PATH."""
    cli = shlex.join([entry.command, *entry.args[:-1]])
    return template("SKILL.md").replace("{command}", cli)


def instructions_section() -> str:
    return f"{START}\n{template('copilot-instructions.md').rstrip()}\n{END}\n"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _recorded(folder: Path) -> str | None:
    try:
        value = json.loads((folder / MANIFEST).read_text(encoding="utf-8")).get("sha256")
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, str) else None


def install_skill(skills_root: Path, text: str, *, force: bool) -> tuple[str, str, Path]:
    """Copy the skill into ``<skills_root>/open-memex/`` (a copy, not a link: Windows needs no
    Developer Mode). Returns (action, detail, path)."""
    folder = skills_root / SKILL_NAME
    path = folder / "SKILL.md"
    data = text.encode("utf-8")
    current = fileio.read(path).data
    if current == data:
        if _recorded(folder) != _sha(data):
            _write_manifest(folder, data)
        return "kept", "already installed", path
    if current is not None and not force and _recorded(folder) != _sha(current):
        return "kept", "changed since open-memex wrote it (or not ours) — kept; rerun with --force to replace it", path
    ours = current is not None and _recorded(folder) == _sha(current)
    fileio.write(fileio.read(path), text, keep_backup=not ours)  # a replaced edit of the user's is kept aside
    _write_manifest(folder, data)
    if current is None:
        return "added", "", path
    return "updated", "refreshed to this version" if ours else f"replaced (--force); yours is in {path.name}{fileio.BACKUP_SUFFIX}", path


def _write_manifest(folder: Path, data: bytes) -> None:
    manifest = folder / MANIFEST
    body = json.dumps({"sha256": _sha(data), "written_by": "open-memex init"}, indent=2) + "\n"
    fileio.write(fileio.read(manifest), body, keep_backup=False)


def remove_skill(skills_root: Path) -> tuple[str, str, Path]:
    """Remove ``<skills_root>/open-memex/`` if we wrote it and it is unchanged."""
    folder = skills_root / SKILL_NAME
    path = folder / "SKILL.md"
    current = fileio.read(path).data
    if current is None:
        return "absent", "", folder
    recorded = _recorded(folder)
    if recorded is None:
        return "kept", "not written by open-memex — left alone", folder
    if recorded != _sha(current):
        return "kept", "changed since open-memex wrote it — remove it by hand if you want it gone", folder
    path.unlink()
    (folder / MANIFEST).unlink()
    try:
        folder.rmdir()
    except OSError:
        return "removed", "SKILL.md (other files in the folder kept)", folder
    return "removed", "", folder


class MissingEnd(ValueError):
    """Our start marker without its end marker."""


def install_instructions(text: str) -> tuple[str, str | None]:
    """Our section put into ``text`` (or refreshed): (action, new text or None). It goes
    after one blank line; a file without a final newline still ends without one (our end
    marker is then its last line), so that ``remove_instructions`` gives every byte back —
    uninstall added a newline to ``# Mine``, and took one from a file ending in a blank line."""
    section = instructions_section()
    try:
        span = _span(text)
    except MissingEnd:
        return "manual", None
    if span is None:
        if not text:
            return "added", section
        if text.endswith("\n"):
            return "added", text + "\n" + section
        return "added", text + "\n\n" + section.removesuffix("\n")
    if span[1] == len(text) and not text.endswith("\n"):  # ours is the last line, as init left it
        section = section.removesuffix("\n")
    new = text[: span[0]] + section + text[span[1] :]
    return ("kept", None) if new == text else ("updated", new)


def remove_instructions(text: str) -> tuple[str, str | None]:
    """Our section cut out of ``text``, with the blank line init put before it: (action, new
    text). A new text holding only whitespace means the file held only our section."""
    try:
        span = _span(text)
    except MissingEnd:
        return "manual", None
    if span is None:
        return "absent", None
    before, after = text[: span[0]], text[span[1] :]
    if not after and not text.endswith("\n") and before.endswith("\n\n"):
        before = before[:-2]  # the file ended without a newline before init
    elif before.endswith("\n\n") and (not after or after.startswith("\n")):
        before = before[:-1]
    return "removed", before + after


MISSING_END = (f"our section has lost its end marker {END} — what follows it may be yours: "
               "edit it by hand (put the marker back, or delete our section)")


def _span(text: str) -> tuple[int, int] | None:
    """Where our section is: from the start marker through the end marker and its newline.
    Without the end marker (deleted by hand, text added below it) where ours ends is
    unknown: ``MissingEnd``, and the file is left to the user."""
    start = text.find(START)
    if start < 0:
        return None
    end = text.find(END, start)
    if end < 0:
        raise MissingEnd(MISSING_END)
    end += len(END)
    if text.startswith("\n", end):
        end += 1
    return start, end
