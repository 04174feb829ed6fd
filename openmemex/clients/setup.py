"""init and uninstall across clients: which files to touch, and what happened to each.

Every file gets one ``Action``; nothing here prints. Config files go through
``wiring`` (the merge rules) and ``fileio`` (atomic, backed up, race-aware). Skills and
the Copilot instructions are user-level only (D22, D54): ``--project`` touches only the
project's own config files. What init changed in a config travels on its action as a
``Receipt`` (the caller records it in the marker); uninstall is given those records, and
drops each one it has settled.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..errors import MemexError
from . import extras, fileio, hookconf, receipt, tomlconf, wiring
from .entry import SERVER_NAME, ServerEntry, same_data_root, server_entry
from .receipt import Receipt
from .registry import CLIENTS, Client


@dataclass
class Action:
    """One file and what init or uninstall did to it."""

    client: str
    kind: str  # mcp | hooks | skill | instructions | marker
    path: Path | None
    action: str  # added | updated | kept | manual | skipped | failed | removed | absent
    detail: str = ""
    level: str = "user"
    snippet: str | None = None
    receipt: Receipt | None = None  # init: what it changed in the file, for the marker
    adopt: tuple[str, ...] = ()  # init --force replaced the entry of these other data roots

    @property
    def part(self) -> str:
        """The record's name for what this action changed in its file: one Copilot section,
        whichever clients asked for it."""
        return receipt.part("copilot" if self.kind == "instructions" else self.client, self.kind)

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"client": self.client, "kind": self.kind, "level": self.level,
                               "path": str(self.path) if self.path else None, "action": self.action,
                               "detail": self.detail}  # fmt: skip
        if self.snippet is not None:
            doc["snippet"] = self.snippet
        return doc


def instructions_path() -> Path:
    return Path.home() / ".copilot" / "copilot-instructions.md"


def snippet(client: Client, entry: ServerEntry, path: Path | None = None) -> str:
    """What init merges for ``client``, paste-ready. JSON stays pure JSON (valid for any
    JSON tool; the file path is printed beside it); TOML carries the path as a comment."""
    shape = client.shape(entry)
    if client.fmt == "toml":
        return f"# {wiring.display(path or client.user_path())}\n" + tomlconf.block(shape).rstrip("\n")
    return json.dumps({client.section: {SERVER_NAME: shape}}, indent=2, ensure_ascii=False)


def init(clients: list[Client], *, level: str, project: Path, force: bool) -> list[Action]:
    entry = server_entry()
    _check_utf8(entry)
    actions = [_wire(client, entry, level, project, force) for client in clients]
    if level == "user":
        actions += [_hooks(client.id, entry, force) for client in clients if client.id in hookconf.HOOK_CLIENTS]
        actions += _skills(clients, entry, force)
        if any(client.copilot for client in clients):
            actions.append(_instructions(clients))
    return actions


def _check_utf8(entry: ServerEntry) -> None:
    """Config files are UTF-8; a path that is not (bytes read on a Latin-1 system) cannot be
    written into one, nor pasted from a snippet. Said once, before anything is written —
    it blamed each config file ("holds text that cannot be written back") and gave no snippet."""
    for what, value in (("data root", entry.env.get("OPEN_MEMEX_HOME", "")), ("open-memex executable", entry.command)):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            shown = os.fsencode(value).decode("utf-8", "backslashreplace")
            fix = ("point OPEN_MEMEX_HOME at a folder whose path is UTF-8 (a symlink to this one will do)"
                   if what == "data root" else "install open-memex under a folder whose path is UTF-8")  # fmt: skip
            raise MemexError(f"the {what}'s path {shown} is not UTF-8, so it cannot be written into the agents' "
                             f"config files (UTF-8 text) — {fix}, and run init again") from None  # fmt: skip


def _wire(client: Client, entry: ServerEntry, level: str, project: Path, force: bool) -> Action:
    path = client.path(level, project)
    if path is None:
        return Action(client.id, "mcp", None, "skipped", f"{client.label} reads only its user-level config", level)
    verdicts: list[wiring.Verdict] = []
    roots: list[str | None] = []

    def decide(snap: fileio.Snapshot) -> str | None:
        try:
            text = snap.text
        except UnicodeDecodeError:
            verdicts.append(wiring.Verdict("manual", "left untouched: not UTF-8 text"))
            return None
        roots.append(wiring.data_root_of(wiring.entry_in(client, text)))
        verdicts.append(wiring.add(client, text, entry, force=force))
        return verdicts[-1].text

    try:
        snap, written = fileio.update(path, decide, within=project if level == "project" else None)
    except OSError as exc:
        return Action(client.id, "mcp", path, "failed", _why(exc), level)
    verdict = verdicts[-1]
    detail = verdict.detail + _read_only(snap, written)
    if verdict.action in ("added", "updated") and level == "project" and client.project_note:
        detail += f" ({client.project_note})"
    action = Action(client.id, "mcp", path, verdict.action, detail, level, receipt=_written(verdict, snap, written),
                    adopt=_others(entry, roots[-1:]) if verdict.action == "updated" else ())  # fmt: skip
    if verdict.action == "manual":
        action.snippet = snippet(client, entry, path)
    return action


def _hooks(client_id: str, entry: ServerEntry, force: bool) -> Action:
    """Session-start injection and keyword capture for Claude Code and Codex (user level)."""
    path = hookconf.hooks_path(client_id)
    verdicts: list[wiring.Verdict] = []
    roots: list[str | None] = []

    def decide(snap: fileio.Snapshot) -> str | None:
        try:
            roots[:] = sorted(hookconf.roots_in(snap.text))
            verdicts.append(hookconf.add(snap.text, entry, force=force))
        except UnicodeDecodeError:
            verdicts.append(wiring.Verdict("manual", "left untouched: not UTF-8 text"))
        return verdicts[-1].text

    try:
        snap, written = fileio.update(path, decide)
    except OSError as exc:
        return Action(client_id, "hooks", path, "failed", _why(exc))
    verdict = verdicts[-1]
    detail = verdict.detail + _read_only(snap, written)
    disabled = hookconf.codex_hooks_disabled() if client_id == "codex" else None
    if disabled:
        detail = f"{detail}; {disabled}"
    if client_id == "codex" and verdict.action in ("added", "updated"):
        detail += "; Codex runs new or changed hooks only once you trust them: open Codex and review them in /hooks"
    action = Action(client_id, "hooks", path, verdict.action, detail, receipt=_written(verdict, snap, written),
                    adopt=_others(entry, roots) if verdict.action == "updated" else ())  # fmt: skip
    if verdict.action == "manual":
        action.snippet = json.dumps(hookconf.merged(entry), indent=2, ensure_ascii=False)
    return action


def _read_only(snap: fileio.Snapshot, written: str | None) -> str:
    """A file without its owner's write bit is rewritten all the same (the rename needs only
    the folder's permission) and keeps its mode: the report says so."""
    return " (the file is read-only: rewritten all the same, its mode kept)" if written and fileio.read_only(snap.path) else ""


def _written(verdict: wiring.Verdict, snap: fileio.Snapshot, written: str | None) -> Receipt | None:
    """What this write changed, with whether the file was there before it."""
    if written is None or verdict.receipt is None:
        return None
    return replace(verdict.receipt, existed=snap.data is not None)


def _others(entry: ServerEntry, roots: list[str | None]) -> tuple[str, ...]:
    mine = entry.env.get("OPEN_MEMEX_HOME")
    return tuple(root for root in roots if root and mine and not same_data_root(root, mine))


def _skills(clients: list[Client], entry: ServerEntry, force: bool) -> list[Action]:
    text = extras.skill_text(entry)
    actions = []
    for client in clients:
        if client.skills_dir is None:
            continue
        try:
            verb, detail, path = extras.install_skill(client.skills_dir(), text, force=force)
        except OSError as exc:
            verb, detail, path = "failed", _why(exc), client.skills_dir() / extras.SKILL_NAME
        actions.append(Action(client.id, "skill", path, verb, detail))
    return actions


def _instructions(clients: list[Client]) -> Action:
    """The Copilot section; its receipt says whether the file was there (and its text, when
    blank), so that uninstall gives it back rather than deleting a file init did not create."""
    ids = ",".join(client.id for client in clients if client.copilot)
    path = instructions_path()
    results: list[str] = []

    def decide(snap: fileio.Snapshot) -> str | None:
        verb, new = extras.install_instructions(snap.text)
        results.append(verb)
        return new

    try:
        snap, written = fileio.update(path, decide)
    except (OSError, UnicodeDecodeError) as exc:
        return Action(ids, "instructions", path, "failed", _why(exc))
    verb = results[-1]
    detail = {"kept": "already there", "manual": extras.MISSING_END}.get(verb, "Copilot memory section")
    was = None if snap.data is None else snap.text
    found = Receipt(existed=was is not None, blank=was if was is not None and not was.strip() else None)
    return Action(ids, "instructions", path, verb, detail, receipt=found if written else None)


def uninstall(clients: list[Client], *, levels: list[str], project: Path, files: dict[str, Any] | None = None,
              folders: set[str] | None = None) -> list[Action]:  # fmt: skip
    """Take out what init wrote. ``files``: the marker's record of what init changed in
    each config (``receipt.py``); the records of files settled here are dropped from it.
    A file without a record (an earlier version's init) is judged by its bytes.
    ``folders``: the folders init created, the only ones that may go once empty (None: the
    record does not say; none goes); those removed are dropped from it."""
    files = {} if files is None else files
    actions: list[Action] = []
    for level in levels:
        for client in clients:
            path = client.path(level, project)
            if path is not None and fileio.real_path(path).exists():
                shared = any(other is not client and other.path(level, project) == path for other in CLIENTS)
                actions.append(_unwire(client, path, level, files, folders, shared=shared, project=project))
    if "user" in levels:
        for client in clients:
            if client.id in hookconf.HOOK_CLIENTS and fileio.real_path(hookconf.hooks_path(client.id)).exists():
                actions.append(_unhook(client.id, files, folders))
        for client in clients:
            if client.skills_dir is not None and (client.skills_dir() / extras.SKILL_NAME).exists():
                folder = client.skills_dir() / extras.SKILL_NAME
                others = _other_data_roots([client], project)
                if others:
                    actions.append(Action(client.id, "skill", folder, "kept", _still_used(others)))
                    continue
                try:
                    verb, detail, folder = extras.remove_skill(client.skills_dir())
                    if verb == "removed":  # an empty skills folder left behind would fool detection
                        fileio.prune_empty_parents(folder, folders)
                except OSError as exc:
                    verb, detail = "failed", _why(exc)
                actions.append(Action(client.id, "skill", folder, verb, detail))
        if any(client.copilot for client in clients) and instructions_path().exists():
            actions.append(_remove_instructions(clients, project, files, folders))
    return actions


def _other_data_roots(clients: list[Client], project: Path) -> list[str]:
    """Data roots other than this one that these clients are still wired to — entries and
    hooks uninstall kept as another setup's. The skill and the Copilot section are one per
    machine, not per data root: while another setup's entries remain, they serve it."""
    mine = server_entry().env.get("OPEN_MEMEX_HOME")
    found: set[str] = set()
    for client in clients:
        for level in ("user", "project"):
            path = client.path(level, project)
            text = _text(path) if path is not None else None
            root = wiring.data_root_of(wiring.entry_in(client, text)) if text else None
            if root is not None:
                found.add(root)
        if client.id in hookconf.HOOK_CLIENTS:
            found |= hookconf.data_roots(client.id)
    return sorted(root for root in found if mine is None or not same_data_root(root, mine))


def _still_used(roots: list[str]) -> str:
    return (f"still used by the open-memex setup of another data root ({', '.join(roots)}) — left; "
            "uninstall with that OPEN_MEMEX_HOME to remove it")  # fmt: skip


def _unwire(client: Client, path: Path, level: str, files: dict[str, Any], folders: set[str] | None, *,
            shared: bool, project: Path) -> Action:  # fmt: skip
    entry = server_entry()
    part = receipt.part(client.id, "mcp")
    found = receipt.lookup(files, path, part)
    action = _strip(client.id, "mcp", path, level,
                    lambda text, backup: wiring.remove(client, text, entry=entry, receipt=found, had_backup=backup,
                                                       shared=shared),
                    folders, within=project if level == "project" else None)  # fmt: skip
    _settle(files, path, part, action)
    return action


def _unhook(client_id: str, files: dict[str, Any], folders: set[str] | None) -> Action:
    root = server_entry().env.get("OPEN_MEMEX_HOME")
    path = hookconf.hooks_path(client_id)
    part = receipt.part(client_id, "hooks")
    found = receipt.lookup(files, path, part)
    action = _strip(client_id, "hooks", path, "user",
                    lambda text, backup: hookconf.remove(text, data_root=root, receipt=found, had_backup=backup),
                    folders)  # fmt: skip
    if action.action == "removed" and found is not None and found.events is not None and hookconf.installed(client_id, root):
        receipt.put_none(files, path, part)  # ours that init did not put in are left: a later uninstall leaves them too
    else:
        _settle(files, path, part, action)
    return action


def _settle(files: dict[str, Any], path: Path, part: str, action: Action) -> None:
    """A record is done with once its part is out (or was not there): a later init records
    afresh. One uninstall kept or could not change stays for the next try."""
    if action.action in ("removed", "absent"):
        text = _text(path) or ""
        receipt.settle(files, path, part, whole=not text.removeprefix("\ufeff").strip())  # gone, or blank again


def _strip(client_id: str, kind: str, path: Path, level: str, remove: Callable[[str, bool], wiring.Verdict],
           folders: set[str] | None, *, within: Path | None = None) -> Action:  # fmt: skip
    """Take our part out of one file (``remove`` decides on its text), re-reading it when the
    editor writes it meanwhile; a file init created that holds nothing else now goes —
    unless it is reached through a symlink: then it is the user's dotfile (deleting it left
    a dangling link, and pruning emptied the dotfiles folders), so it stays, without ours.
    ``within``: the repository a project file must not lead out of (``fileio.confine``)."""
    try:
        if within is not None:
            fileio.confine(path, within)
    except OSError as exc:
        return Action(client_id, kind, path, "failed", _why(exc), level)
    fileio.sweep(fileio.real_path(path))
    had_backup = fileio.has_backup(path)
    verdict = wiring.Verdict("absent")
    for _ in range(fileio.RETRIES):
        detail = ""
        try:
            snap = fileio.read(path)
            try:
                verdict = remove(snap.text, had_backup)
            except UnicodeDecodeError:
                verdict = wiring.Verdict("absent", "not UTF-8 text; nothing of ours read")
            if verdict.delete and not fileio.through_link(path):
                fileio.remove(snap)
                detail = " (the file held only ours: deleted)"
                if level == "user":  # a project's folders are the project's, whatever is left in them
                    fileio.prune_empty_parents(path, folders)
            elif verdict.text is not None:
                # the text before init back (blank), or a file init created: a .bak would hold only ours
                ours_only = verdict.delete or not verdict.text.removeprefix("\ufeff").strip()
                fileio.write(snap, verdict.text, keep_backup=not ours_only)
                if verdict.delete:
                    detail = " (the file held only ours; kept, as it is reached through a symlink)"
        except fileio.Changed:
            continue
        except OSError as exc:
            return Action(client_id, kind, path, "failed", _why(exc), level)
        return Action(client_id, kind, path, verdict.action, verdict.detail + detail, level)
    return Action(client_id, kind, path, "failed", "the file kept changing while we wrote it — close the editor and run again", level)


def _remove_instructions(clients: list[Client], project: Path, files: dict[str, Any],
                         folders: set[str] | None) -> Action:  # fmt: skip
    """Cut our section out. What is left is written back byte for byte; a file left blank
    goes only when init created it (its record says so) — without a record (an earlier
    version's init), when nothing but whitespace is left."""
    copilots = [client for client in clients if client.copilot]
    ids = ",".join(client.id for client in copilots)
    path = instructions_path()
    others = _other_data_roots(copilots, project)
    if others:
        return Action(ids, "instructions", path, "kept", _still_used(others))
    part = receipt.part("copilot", "instructions")
    found = receipt.lookup(files, path, part)
    try:
        fileio.sweep(fileio.real_path(path))
        snap = fileio.read(path)
        verb, new = extras.remove_instructions(snap.text)
        if verb == "removed" and new is not None and not new.strip():
            if found is None or not found.existed:
                if not fileio.through_link(path):
                    fileio.remove(snap)
                    fileio.prune_empty_parents(path, folders)  # ~/.copilot, when init made it (the skills folder went)
                    receipt.settle(files, path, part, whole=True)
                    return Action(ids, "instructions", path, "removed", "the file held only our section: deleted")
                new = ""
            elif found.blank is not None:
                new = found.blank
        if new is not None:
            fileio.write(snap, new)
    except (OSError, UnicodeDecodeError, fileio.Changed) as exc:
        return Action(ids, "instructions", path, "failed", _why(exc))
    if verb in ("removed", "absent"):
        receipt.settle(files, path, part, whole=True)
    detail = {"removed": "Copilot memory section", "manual": extras.MISSING_END}.get(verb, "")
    return Action(ids, "instructions", path, verb, detail)


def wired_clients(project: Path) -> list[Client]:
    """Clients with something of ours in any of their files: what uninstall would clean. An
    entry of another data root, or one init called different, is not ours: it does not
    keep this data root's marker alive."""
    entry = server_entry()
    root = entry.env.get("OPEN_MEMEX_HOME")
    found = []
    for client in CLIENTS:
        paths = [client.path(level, project) for level in ("user", "project")]
        texts = [_text(path) for path in paths if path is not None]
        wired = any(text and wiring.wired(client, text, entry) for text in texts)
        skill = client.skills_dir is not None and (client.skills_dir() / extras.SKILL_NAME / extras.MANIFEST).exists()
        hooks = client.id in hookconf.HOOK_CLIENTS and hookconf.installed(client.id, root)
        if wired or skill or hooks:
            found.append(client)
    return found


def _text(path: Path) -> str | None:
    try:
        return fileio.read(path).text or None
    except (OSError, UnicodeDecodeError):
        return None


def _why(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        where = f" ({exc.filename})" if exc.filename else ""
        return f"{exc.strerror}{where} — check the folder's permissions and run again"
    return str(exc)
