"""Merging our server entry into a client's config text, and taking it out again.

Pure functions from old text to new text (or None: leave the file as it is) and a verdict.
Merge, never clobber: other servers and keys stay as they were; an existing open-memex
entry that differs is kept unless forced; a legacy ``my-o-memory`` entry is dropped
wherever we touch a file (F30). Files that are not plain JSON / valid TOML are never
rewritten, nor one where our entry cannot be put in or cut out as an edit of its text
(everything else keeping its bytes): the verdict is "manual" and the caller prints the
snippet (D47).

Uninstall takes out only what is ours: the entry init writes for this data root (from any
install of open-memex), never a value init called "a different entry" and kept; and it
undoes only what init's ``Receipt`` says it changed (``receipt.py``).
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

from . import jsonconf, tomlconf
from .entry import (
    LEGACY_NAME,
    SERVER_NAME,
    ServerEntry,
    is_our_args,
    runs_our_server,
    same_data_root,
)
from .receipt import Receipt, finish
from .registry import Client
from .verdict import FORCE_HINT, LEGACY_NOTE, Verdict, matches

__all__ = ["Verdict", "add", "data_root_of", "display", "entry_in", "has_legacy", "matches", "not_ours", "remove",
           "wired"]  # fmt: skip

EDIT_FAILED = "could not change only our entry without rewriting the rest of the file"
_LEGACY_PLUGIN = re.compile(r"(^|[/\\:])my-o-memory($|@|[/\\])")


def add(client: Client, text: str, entry: ServerEntry, *, force: bool) -> Verdict:
    if client.fmt == "toml":
        return tomlconf.add(text, client.shape(entry), force=force)
    return _json_add(client, text, entry, force=force)


def remove(client: Client, text: str, *, entry: ServerEntry, receipt: Receipt | None = None,
           had_backup: bool = True, shared: bool = False) -> Verdict:  # fmt: skip
    """Take out our entry, and what ``receipt`` says init made for it. Visual Studio's
    ``mcpServers`` mirror goes too — in a ``shared`` file (a repo-root ``.mcp.json`` is
    Claude Code's as well) only where Visual Studio's own init put it. Without a receipt,
    a file is deleted only when it is what init writes into a new file and has no ``.bak``."""
    if client.fmt == "toml":
        return tomlconf.remove(text, owner=lambda found: not_ours(client, found, entry), receipt=receipt,
                               had_backup=had_backup)  # fmt: skip
    return _json_remove(client, text, entry, receipt=receipt, had_backup=had_backup, shared=shared)


def not_ours(client: Client, found: object, entry: ServerEntry) -> str | None:
    """Why the value under ``open-memex`` is not ours to remove, or None when it is: it runs
    our server (``open-memex mcp``, from this or a moved install) for this data root. A
    value init called "a different entry" and kept — a docker command, ``"disabled"``,
    ``null``, an entry without our ``OPEN_MEMEX_HOME`` — is the user's, and so is one of
    another data root (another setup of theirs)."""
    mine = entry.env.get("OPEN_MEMEX_HOME")
    env = found.get("environment" if client.id == "opencode" else "env") if isinstance(found, dict) else None
    theirs = env.get("OPEN_MEMEX_HOME") if isinstance(env, dict) else None
    if isinstance(theirs, str) and mine is not None and not same_data_root(theirs, mine):
        return (f"the {SERVER_NAME} entry there serves another data root ({theirs}) — left as it is; "
                "uninstall with that OPEN_MEMEX_HOME, or remove it by hand")  # fmt: skip
    if isinstance(found, dict) and isinstance(theirs, str) and _runs_ours(client, found, entry):
        return None
    return (f"the {SERVER_NAME} entry there is not one init writes for this data root (init kept it as a "
            "different entry) — left as it is; remove it by hand if you want it gone")  # fmt: skip


def _runs_ours(client: Client, found: dict[str, Any], entry: ServerEntry) -> bool:
    command: object
    args: object
    if client.id == "opencode":
        argv = found.get("command")
        if not isinstance(argv, list) or not argv:
            return False
        command, args = argv[0], list(argv[1:])
    else:
        command, args = found.get("command"), found.get("args")
    return runs_our_server(command, args) or (command == entry.command and is_our_args(args))


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
    """Our entry as the file holds it (JSONC read leniently), for doctor; None when absent.
    Visual Studio's is in ``servers``, else in the ``mcpServers`` mirror init also fills."""
    if client.fmt == "toml":
        return tomlconf.entry_in(text)
    doc = jsonconf.read_lenient(text) or {}
    for name in _names(client):
        section = doc.get(name)
        found = section.get(SERVER_NAME) if isinstance(section, dict) else None
        if isinstance(found, dict):
            return found
    return None


def wired(client: Client, text: str, entry: ServerEntry) -> bool:
    """Whether the file holds something uninstall would take out (or tell the user to):
    our entry for this data root, a legacy one, or — in a file too deep or too long to
    read at all — the name of either."""
    if has_legacy(client, text):
        return True
    if client.fmt == "toml":
        found = tomlconf.entry_in(text)
        return (found is not None and not_ours(client, found, entry) is None) or tomlconf.unreadable_with_ours(text)
    doc = jsonconf.read_lenient(text)
    if doc is None:
        return _names_us(text)
    return any(isinstance(doc.get(name), dict) and SERVER_NAME in doc[name]
               and not_ours(client, doc[name][SERVER_NAME], entry) is None for name in _names(client))  # fmt: skip


def _names(client: Client) -> list[str]:
    return [client.section, *([client.mirror] if client.mirror else [])]


def _names_us(text: str) -> bool:
    """A text no parser here can read (1,200 levels deep, a 5,000-digit number) may still
    hold our entry: a JSON string ``"open-memex"`` (or the legacy name) says it might."""
    return f'"{SERVER_NAME}"' in text or f'"{LEGACY_NAME}"' in text


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
        if SERVER_NAME not in section:  # a JSON null there is a value the user wrote: a different entry
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
    changes = jsonconf.Changes([], {})
    new_text = jsonconf.edit(source, doc, changes=changes) if changed else None
    if changed and new_text is None:
        return Verdict("manual", f"left untouched: {EDIT_FAILED}")
    receipt = Receipt(blank=text if not source.text.strip() else None, made=frozenset(changes.made),
                      mine=frozenset(changes.made), filled=changes.filled)  # fmt: skip
    return _verdict(verdicts, legacy, where, new_text, receipt)


def _verdict(verdicts: set[str], legacy: bool, where: str, new_text: str | None, receipt: Receipt) -> Verdict:
    extra = f"; {LEGACY_NOTE}" if legacy else ""
    if "added" in verdicts:
        return Verdict("added", where + extra, new_text, receipt=receipt)
    if "updated" in verdicts:
        return Verdict("updated", f"{where} replaced (--force){extra}", new_text, receipt=receipt)
    if "differs" in verdicts:
        return Verdict("kept", FORCE_HINT + extra, new_text, receipt=receipt)
    if legacy:
        return Verdict("updated", f"already wired; {LEGACY_NOTE}", new_text, receipt=receipt)
    return Verdict("kept", "already wired", None)


def _json_remove(client: Client, text: str, entry: ServerEntry, *, receipt: Receipt | None,
                 had_backup: bool, shared: bool) -> Verdict:  # fmt: skip
    by_hand = f'remove "{SERVER_NAME}" from "{client.section}" by hand'
    try:
        doc, source = jsonconf.parse(text)
    except jsonconf.NotPlainJson as exc:
        lenient = jsonconf.read_lenient(text)
        if lenient is None:  # nothing here reads it: whether ours is in it is not known either
            if _names_us(text):
                return Verdict("manual", f"left untouched ({exc}): if it holds an {SERVER_NAME} entry, {by_hand}")
            return Verdict("absent", "nothing of ours found")
        found = [lenient[name][SERVER_NAME] for name in _names(client)
                 if isinstance(lenient.get(name), dict) and SERVER_NAME in lenient[name]]  # fmt: skip
        verdicts = [not_ours(client, value, entry) for value in found]
        if None in verdicts or has_legacy(client, text):
            return Verdict("manual", f"left untouched ({exc}): {by_hand}")
        if verdicts:
            return Verdict("kept", str(verdicts[0]))
        return Verdict("absent", "nothing of ours found")
    if receipt is None:
        receipt = _new_file(client, source, doc, had_backup)
    names = [client.section]
    left_for = ""
    if client.mirror and isinstance(doc.get(client.mirror), dict) and SERVER_NAME in doc[client.mirror]:
        if not shared or receipt.put_in((client.mirror, SERVER_NAME)):  # in a shared file, Claude Code's own
            names.append(client.mirror)
        elif not_ours(client, doc[client.mirror][SERVER_NAME], entry) is None:
            left_for = (f"{client.mirror}.{SERVER_NAME} left: Claude Code reads it in this file "
                        "(uninstall --client claude removes it)")  # fmt: skip
    removed: list[str] = []
    reasons: list[str] = []
    for name in names:
        section = doc.get(name)
        if isinstance(section, dict) and SERVER_NAME in section:
            why = not_ours(client, section[SERVER_NAME], entry)
            if why is None:
                del section[SERVER_NAME]
                removed.append(f"{name}.{SERVER_NAME}")
            else:
                reasons.append(why)
    legacy = _drop_legacy(doc, [client.section], plugins=client.id == "opencode")
    if not (removed or legacy):
        return Verdict("kept", reasons[0]) if reasons else Verdict("absent", "no open-memex entry")
    for name in names:
        if doc.get(name) == {} and receipt.covers((name,)):  # only a section init made: the user's stays
            del doc[name]
    detail = "; ".join(part for part in (" + ".join(removed), LEGACY_NOTE if legacy else "", left_for, *reasons) if part)
    new_text, delete = finish(source, doc, receipt)
    if new_text is None:
        return Verdict("manual", f"left untouched ({EDIT_FAILED}): {by_hand}")
    return Verdict("removed", detail, new_text, delete=delete)


def _new_file(client: Client, source: jsonconf.Source, doc: dict[str, Any], had_backup: bool) -> Receipt:
    """No record of init's (an earlier version's init, a deleted marker): a file that is byte
    for byte what init writes into a new one, with no ``.bak`` beside it, is taken for one
    init created; anything else is the user's — nothing pruned, nothing deleted."""
    if had_backup or source.layout.bom or source.text != jsonconf.dump(doc, jsonconf.Layout()):
        return Receipt(mine=None)
    return Receipt(existed=False, blank="", made=frozenset((name,) for name in _names(client)), mine=None)


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
