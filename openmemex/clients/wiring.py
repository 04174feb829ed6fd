"""Merging our server entry into a client's config text, and taking it out again.

Pure functions from old text to new text (or None: leave the file as it is) and a verdict.
Merge, never clobber: other servers and keys stay as they were; an existing open-memex
entry that differs is kept unless forced; a legacy ``my-o-memory`` entry is dropped
wherever we touch a file (F30). Files that are not plain JSON / valid TOML are never
rewritten, nor one where our entry cannot be put in or cut out as an edit of its text
(everything else keeping its bytes): the verdict is "manual" and the caller prints the
snippet (D47).
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

from . import jsonconf, tomlconf
from .entry import LEGACY_NAME, SERVER_NAME, ServerEntry, same_data_root
from .registry import Client
from .verdict import FORCE_HINT, LEGACY_NOTE, Verdict, matches

__all__ = ["Verdict", "add", "data_root_of", "display", "entry_in", "has_legacy", "matches", "remove"]

EDIT_FAILED = "could not change only our entry without rewriting the rest of the file"
_LEGACY_PLUGIN = re.compile(r"(^|[/\\:])my-o-memory($|@|[/\\])")


def add(client: Client, text: str, entry: ServerEntry, *, force: bool) -> Verdict:
    if client.fmt == "toml":
        return tomlconf.add(text, client.shape(entry), force=force)
    return _json_add(client, text, entry, force=force)


def remove(client: Client, text: str, *, had_backup: bool, entry: ServerEntry) -> Verdict:
    """Take out our entry. One that names another data root (``OPEN_MEMEX_HOME``) belongs
    to another setup of the user's — init said "a different entry — kept" for it — and is
    not ours to remove: it stays, and so does its file. (One of this data root is ours
    whatever its command: an install that moved leaves such an entry behind.)"""
    current = entry_in(client, text)
    theirs = data_root_of(current)
    mine = entry.env.get("OPEN_MEMEX_HOME")
    if theirs is not None and mine is not None and not same_data_root(theirs, mine):
        return Verdict("kept", f"the {SERVER_NAME} entry there serves another data root ({theirs}) — left as it "
                               "is; uninstall with that OPEN_MEMEX_HOME, or remove it by hand")  # fmt: skip
    if client.fmt == "toml":
        return tomlconf.remove(text, had_backup=had_backup)
    return _json_remove(client, text, had_backup=had_backup)


def data_root_of(found: object) -> str | None:
    """The ``OPEN_MEMEX_HOME`` an entry sets, wherever the client keeps its environment."""
    if isinstance(found, dict):
        for key, value in found.items():
            if key == "OPEN_MEMEX_HOME" and isinstance(value, str):
                return value
            inner = data_root_of(value)
            if inner is not None:
                return inner
    return None


def entry_in(client: Client, text: str) -> dict[str, Any] | None:
    """Our entry as the file holds it (JSONC read leniently), for doctor; None when absent."""
    if client.fmt == "toml":
        return tomlconf.entry_in(text)
    doc = jsonconf.read_lenient(text)
    section = doc.get(client.section) if doc else None
    found = section.get(SERVER_NAME) if isinstance(section, dict) else None
    return found if isinstance(found, dict) else None


def has_legacy(client: Client, text: str) -> bool:
    if client.fmt == "toml":
        return tomlconf.has_legacy(text)
    doc = jsonconf.read_lenient(text) or {}
    section = doc.get(client.section)
    if isinstance(section, dict) and LEGACY_NAME in section:
        return True
    return client.id == "opencode" and bool(_legacy_plugins(doc))


def _json_add(client: Client, text: str, entry: ServerEntry, *, force: bool) -> Verdict:
    try:
        doc, source = jsonconf.parse(text)
    except jsonconf.NotPlainJson as exc:
        return Verdict("manual", f"left untouched: {exc}")
    ours = client.shape(entry)
    names = [client.section]
    if client.mirror and isinstance(doc.get(client.mirror), dict):
        names.append(client.mirror)  # a repo-root .mcp.json shared with Claude Code (notes §5)
    for name in names:
        if name in doc and not isinstance(doc[name], dict):
            return Verdict("manual", f'left untouched: "{name}" is a JSON {jsonconf._kind(doc[name])}, not an object')
    legacy = _drop_legacy(doc, names, plugins=client.id == "opencode")
    verdicts = set()
    for name in names:
        section = doc.setdefault(name, {})
        current = section.get(SERVER_NAME)
        if current is None:
            section[SERVER_NAME] = copy.deepcopy(ours)
            verdicts.add("added")
        elif matches(current, ours):
            verdicts.add("kept")
        elif force:
            section[SERVER_NAME] = copy.deepcopy(ours)
            verdicts.add("updated")
        else:
            verdicts.add("differs")
    where = " + ".join(f"{name}.{SERVER_NAME}" for name in names)
    changed = legacy or verdicts & {"added", "updated"}
    new_text = jsonconf.edit(source, doc) if changed else None
    if changed and new_text is None:
        return Verdict("manual", f"left untouched: {EDIT_FAILED}")
    return _verdict(verdicts, legacy, where, new_text)


def _verdict(verdicts: set[str], legacy: bool, where: str, new_text: str | None) -> Verdict:
    extra = f"; {LEGACY_NOTE}" if legacy else ""
    if "added" in verdicts:
        return Verdict("added", where + extra, new_text)
    if "updated" in verdicts:
        return Verdict("updated", f"{where} replaced (--force){extra}", new_text)
    if "differs" in verdicts:
        return Verdict("kept", FORCE_HINT + extra, new_text)
    if legacy:
        return Verdict("updated", f"already wired; {LEGACY_NOTE}", new_text)
    return Verdict("kept", "already wired", None)


def _json_remove(client: Client, text: str, *, had_backup: bool) -> Verdict:
    try:
        doc, source = jsonconf.parse(text)
    except jsonconf.NotPlainJson as exc:
        lenient = jsonconf.read_lenient(text)
        if lenient is not None and _json_has_ours(client, lenient):
            return Verdict("manual", f"left untouched ({exc}): remove \"{SERVER_NAME}\" from \"{client.section}\" by hand")
        return Verdict("absent", "nothing of ours found")
    removed = False
    section = doc.get(client.section)
    if isinstance(section, dict):
        removed = section.pop(SERVER_NAME, None) is not None
    legacy = _drop_legacy(doc, [client.section], plugins=client.id == "opencode")
    if not (removed or legacy):
        return Verdict("absent", "no open-memex entry")
    if isinstance(section, dict) and not section:
        del doc[client.section]
    detail = f"{client.section}.{SERVER_NAME}" if removed else ""
    detail = "; ".join(part for part in (detail, LEGACY_NOTE if legacy else "") if part)
    new_text = jsonconf.edit(source, doc)
    if new_text is None:
        return Verdict("manual", f'left untouched ({EDIT_FAILED}): remove "{SERVER_NAME}" from "{client.section}" by hand')
    return Verdict("removed", detail, new_text, delete=not doc and not had_backup)


def _json_has_ours(client: Client, doc: dict[str, Any]) -> bool:
    section = doc.get(client.section)
    return isinstance(section, dict) and (SERVER_NAME in section or LEGACY_NAME in section)


def _drop_legacy(doc: dict[str, Any], names: list[str], *, plugins: bool) -> bool:
    """Remove ``my-o-memory`` server keys from the named sections and, in opencode files,
    ``my-o-memory`` plugin entries; prune what becomes empty. True when anything went."""
    dropped = False
    for name in names:
        section = doc.get(name)
        if isinstance(section, dict) and section.pop(LEGACY_NAME, None) is not None:
            dropped = True
    for key, stale in (_legacy_plugins(doc) if plugins else {}).items():
        kept = [item for item in doc[key] if item not in stale]
        if kept:
            doc[key] = kept
        else:
            del doc[key]
        dropped = True
    return dropped


def _legacy_plugins(doc: dict[str, Any]) -> dict[str, list[Any]]:
    found: dict[str, list[Any]] = {}
    for key in ("plugin", "plugins"):
        items = doc.get(key)
        if isinstance(items, list):
            stale = [item for item in items if _is_legacy_plugin(item)]
            if stale:
                found[key] = stale
    return found


def _is_legacy_plugin(item: object) -> bool:
    if isinstance(item, dict):
        item = item.get("package") or item.get("path") or ""
    return isinstance(item, str) and _LEGACY_PLUGIN.search(item) is not None


def display(path: Path) -> str:
    """A path as people read it: under the home folder it starts with ``~``."""
    try:
        return "~/" + path.relative_to(Path.home()).as_posix()
    except ValueError:
        return str(path)
