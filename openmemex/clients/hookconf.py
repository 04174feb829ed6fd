"""The agent-host hooks in Claude Code's ``settings.json`` and Codex's ``hooks.json``.

Both hosts read the same shape — ``{"hooks": {Event: [{"matcher"?, "hooks": [{"type":
"command", "command": …, "timeout": …}]}]}}`` — so one merge serves both. The rules are
init's: other hooks and keys are never touched, our handler is recognised by its command
(``… open-memex hook <event>``) wherever the user moved it, a different one of ours is
kept unless ``--force``, and uninstall removes exactly the handlers init put in (and the
groups left empty by that, and the event lists and ``hooks`` object init's ``Receipt`` says
it made — an empty ``"Stop": []`` of the user's stays, and so does a hand-written handler
of ours init found and kept). Hooks are user-level only: a committed
project file would carry this machine's executable path to every teammate.

The files under the repository's top-level ``hooks/`` are ``document("open-memex")``,
checked by a test, for people who wire hosts by hand; a file init cannot rewrite (JSONC)
is given ``merged(entry)``, exactly what init would have merged.
"""

from __future__ import annotations

import re
import shlex
import sys
import tomllib
from pathlib import Path
from typing import Any

from . import jsonconf
from .entry import EXE_PATTERN, ServerEntry, same_data_root
from .receipt import Receipt, finish
from .registry import claude_dir, codex_home
from .verdict import Verdict

# (host event, our sub-command, seconds the host waits)
# session-start may have to index a large store for the first time: more room than the rest
EVENTS = (("SessionStart", "session-start", 30), ("UserPromptSubmit", "user-prompt", 10), ("Stop", "stop", 10))
HOOK_CLIENTS = ("claude", "codex")
_NAMES_US = re.compile(r"open-memex(?:\.exe)?\s+hook\s|-m\s+openmemex\s+hook\s")


def hooks_path(client_id: str) -> Path:
    return claude_dir() / "settings.json" if client_id == "claude" else codex_home() / "hooks.json"


def command(entry: ServerEntry, event: str) -> str:
    """The shell command a host runs: our executable (``args`` minus ``mcp``), pinned to this
    data root like the MCP entry (hosts start hooks with their own environment)."""
    argv = shlex.join([entry.command, *entry.args[:-1], "hook", event])
    home = entry.env.get("OPEN_MEMEX_HOME")
    if home and sys.platform != "win32":
        return f"OPEN_MEMEX_HOME={shlex.quote(home)} {argv}"
    return argv


def document(executable: str) -> dict[str, Any]:
    """The hooks document for an executable found on PATH (the shipped ``hooks/`` files)."""
    return {"hooks": {name: [{"hooks": [_handler(f"{executable} hook {event}", timeout)]}]
                      for name, event, timeout in EVENTS}}  # fmt: skip


def merged(entry: ServerEntry) -> dict[str, Any]:
    """The hooks document init merges for ``entry``: what a file it cannot rewrite is told
    to hold (the shipped ``document`` lacks the data-root pin, so pasting it gave hooks init
    then called "a different open-memex hook")."""
    return {"hooks": {name: [{"hooks": [_handler(command(entry, event), timeout)]}]
                      for name, event, timeout in EVENTS}}  # fmt: skip


def _handler(cmd: str, timeout: int) -> dict[str, Any]:
    return {"type": "command", "command": cmd, "timeout": timeout}


def event_of(handler: object) -> str | None:
    """Which of our events a handler runs, or None when it is not ours. Ours is the whole
    command and nothing more — ``[OPEN_MEMEX_HOME=…] <…/open-memex | python -m openmemex>
    hook <event>`` — so a user's command that merely mentions it (``… && say done``, an
    ``echo``) is never taken, rewritten or removed."""
    parsed = _parse(handler)
    return parsed[0] if parsed else None


def data_root_of(handler: object) -> str | None:
    """The data root a handler of ours is pinned to (``OPEN_MEMEX_HOME=…``), if any."""
    parsed = _parse(handler)
    return parsed[1] if parsed else None


def _parse(handler: object) -> tuple[str, str | None] | None:
    if not isinstance(handler, dict):
        return None
    split = _split(handler.get("command"))
    if split is None:
        return None
    words, home = split
    if len(words) == 3 and EXE_PATTERN.match(words[0]):
        rest = words[1:]
    elif len(words) == 5 and words[1:3] == ["-m", "openmemex"]:
        rest = words[3:]
    else:
        return None
    events = {event for _, event, _ in EVENTS}
    return (rest[1], home) if rest[0] == "hook" and rest[1] in events else None


def _split(cmd: object) -> tuple[list[str], str | None] | None:
    """A command's words after its ``OPEN_MEMEX_HOME=…`` pin, and the pinned data root."""
    if not isinstance(cmd, str):
        return None
    try:
        words = shlex.split(cmd)
    except ValueError:
        return None
    home = None
    while words and re.fullmatch(r"OPEN_MEMEX_HOME=.*", words[0], re.DOTALL):
        home = words[0].split("=", 1)[1]
        words = words[1:]
    return words, home


def same_command(found: object, wanted: str) -> bool:
    """Whether a handler's command is ``wanted``, the data root pinned in another spelling
    (a symlink, a trailing slash) included — init called such a hook "different" while
    uninstall took it for its own."""
    if found == wanted:
        return True
    theirs, ours = _split(found), _split(wanted)
    if theirs is None or ours is None or theirs[0] != ours[0] or theirs[1] is None or ours[1] is None:
        return False
    return same_data_root(theirs[1], ours[1])


def add(text: str, entry: ServerEntry, *, force: bool) -> Verdict:
    """Merge our three handlers. The verdict names the events whose handler went in (or was
    replaced, ``--force``) and those where a different one of ours was kept — all three were
    reported "added" when one was a hand-written ``open-memex hook stop`` left as it was —
    and its receipt records the events put in, which uninstall takes out and no other."""
    try:
        doc, source = jsonconf.parse(text)
    except jsonconf.NotPlainJson as exc:
        return Verdict("manual", f"left untouched: {exc}")
    hooks = doc.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        return Verdict("manual", f'left untouched: "hooks" is a JSON {jsonconf._kind(hooks)}, not an object')
    added: list[str] = []
    updated: list[str] = []
    differs: list[str] = []
    for name, event, timeout in EVENTS:
        groups = hooks.setdefault(name, [])
        if not isinstance(groups, list):
            return Verdict("manual", f'left untouched: "hooks.{name}" is not a list')
        wanted = command(entry, event)
        found = [h for h in _handlers(groups) if event_of(h) == event]
        if not found:
            groups.append({"hooks": [_handler(wanted, timeout)]})
            added.append(name)
        elif all(same_command(h.get("command"), wanted) for h in found):
            continue
        elif force:
            for handler in found:
                handler["command"] = wanted
            updated.append(name)
        else:
            differs.append(name)
    kept = f"a different open-memex hook is there for {', '.join(differs)} — kept; rerun with --force to replace it"
    if added or updated:
        changes = jsonconf.Changes([], {})
        new_text = jsonconf.edit(source, doc, changes=changes)
        if new_text is None:
            return Verdict("manual", "left untouched: could not add our hooks without rewriting the rest of the file")
        receipt = Receipt(blank=text if not source.text.strip() else None, made=frozenset(changes.made),
                          mine=frozenset(changes.made), filled=changes.filled,
                          events=frozenset(added + updated))  # fmt: skip
        detail = "; ".join(part for part in (f"hooks {', '.join(added)}" if added else "",
                                             f"hooks {', '.join(updated)} replaced (--force)" if updated else "",
                                             kept if differs else "") if part)  # fmt: skip
        return Verdict("added" if added else "updated", detail, new_text, receipt=receipt)
    if differs:
        return Verdict("kept", kept)
    return Verdict("kept", "hooks already installed")


def remove(text: str, *, data_root: str | None, receipt: Receipt | None = None, had_backup: bool = True) -> Verdict:
    """Take out our handlers. One pinned to another data root (``OPEN_MEMEX_HOME=…``) is
    another setup of the user's, as its MCP entry is (init kept it as "a different hook"):
    it stays. Which events' handlers init put in is the record's to say (``receipt.events``):
    a handler of ours it did not put in — a hand-written, unpinned ``open-memex hook stop``
    init kept — stays, and so does its list. Without that record (an earlier version's
    init) one without a pin (Windows; the shipped ``hooks/`` files) is taken for ours. An
    event list or ``hooks`` object left empty goes only when init made it (``receipt``)."""
    others: set[str] = set()
    not_put: set[str] = set()

    def mine(handler: object) -> bool:
        if event_of(handler) is None:
            return False
        theirs = data_root_of(handler)
        if theirs is not None and data_root is not None and not same_data_root(theirs, data_root):
            others.add(theirs)
            return False
        return True

    kept_note = ("the open-memex hooks there serve another data root ({}) — left as they are; "
                 "uninstall with that OPEN_MEMEX_HOME, or remove them by hand")  # fmt: skip
    by_hand = "remove the open-memex hook commands by hand"
    try:
        doc, source = jsonconf.parse(text)
    except jsonconf.NotPlainJson as exc:
        lenient = jsonconf.read_lenient(text)
        if lenient is None:  # nothing here reads it: whether ours is in it is not known either
            if _NAMES_US.search(text):
                return Verdict("manual", f"left untouched ({exc}): if it holds open-memex hooks, {by_hand}")
            return Verdict("absent", "nothing of ours found")
        if any(mine(h) for h in _all_handlers(lenient)):
            return Verdict("manual", f"left untouched ({exc}): {by_hand}")
        if others:
            return Verdict("kept", kept_note.format(", ".join(sorted(others))))
        return Verdict("absent", "nothing of ours found")
    if not _has_ours(doc):
        return Verdict("absent", "no open-memex hooks")
    if receipt is None:  # no record of init's: a file byte for byte as init writes a new one is one it made
        made = not had_backup and not source.layout.bom and source.text == jsonconf.dump(doc, jsonconf.Layout())
        receipt = Receipt(existed=False, blank="", made=frozenset({("hooks",)})) if made else Receipt()
    removed = False
    hooks = doc["hooks"]
    for name in [n for n, _, _ in EVENTS if n in hooks]:  # only where we put them
        groups = hooks[name]
        if not isinstance(groups, list):
            continue
        if receipt.events is not None and name not in receipt.events:
            if any(mine(h) for h in _handlers(groups)):
                not_put.add(name)
            continue
        kept_groups = []
        for group in groups:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                left = [h for h in group["hooks"] if not mine(h)]
                if len(left) < len(group["hooks"]):
                    removed = True
                    group["hooks"] = left
                    if not left:
                        continue
            kept_groups.append(group)
        if len(kept_groups) == len(groups):
            continue
        if kept_groups or not receipt.covers(("hooks", name)):
            hooks[name] = kept_groups
        else:
            del hooks[name]
    not_ours = (f"kept the open-memex hooks init did not put in ({', '.join(n for n, _, _ in EVENTS if n in not_put)}): "
                "remove them by hand if you want them gone")  # fmt: skip
    if not removed:
        notes = [kept_note.format(", ".join(sorted(others))) if others else "", not_ours if not_put else ""]
        if others or not_put:
            return Verdict("kept", "; ".join(note for note in notes if note))
        return Verdict("absent", "no open-memex hooks")
    if not hooks and receipt.covers(("hooks",)):
        del doc["hooks"]
    new_text, delete = finish(source, doc, receipt)
    if new_text is None:
        return Verdict("manual", f"left untouched (could not cut out only our hooks without rewriting the rest "
                                 f"of the file): {by_hand}")  # fmt: skip
    detail = "hooks" + (f"; kept those of another data root ({', '.join(sorted(others))})" if others else "")
    return Verdict("removed", detail + (f"; {not_ours}" if not_put else ""), new_text, delete=delete)


def _handlers(groups: list[Any]) -> list[Any]:
    return [h for g in groups if isinstance(g, dict) and isinstance(g.get("hooks"), list) for h in g["hooks"]]


def _all_handlers(doc: dict[str, Any]) -> list[Any]:
    hooks = doc.get("hooks")
    if not isinstance(hooks, dict):
        return []
    return [h for groups in hooks.values() if isinstance(groups, list) for h in _handlers(groups)]


def _has_ours(doc: dict[str, Any]) -> bool:
    return any(event_of(h) is not None for h in _all_handlers(doc))


def data_roots(client_id: str) -> set[str]:
    """The data roots our handlers in ``client_id``'s hooks file are pinned to."""
    try:
        return roots_in(hooks_path(client_id).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return set()


def roots_in(text: str) -> set[str]:
    """The data roots our handlers in a hooks file's text are pinned to."""
    return {root for h in _all_handlers(jsonconf.read_lenient(text) or {}) if (root := data_root_of(h))}


def installed(client_id: str, data_root: str | None = None) -> bool:
    """Whether the hooks file holds handlers of ours (with ``data_root``: not pinned to
    another one), or — a file too deep or too long to read at all — names them."""
    try:
        text = hooks_path(client_id).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    doc = jsonconf.read_lenient(text)
    if doc is None:
        return _NAMES_US.search(text) is not None
    roots = [data_root_of(h) for h in _all_handlers(doc) if event_of(h) is not None]
    return any(root is None or data_root is None or same_data_root(root, data_root) for root in roots)


def codex_hooks_disabled() -> str | None:
    """The note to give when Codex's config turns hooks off (``[features] hooks`` or the
    older ``codex_hooks``); newer Codex runs hooks by default, so nothing is written there."""
    try:
        data = tomllib.loads((codex_home() / "config.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError, ValueError):
        return None
    features = data.get("features")
    if not isinstance(features, dict):
        return None
    for key in ("hooks", "codex_hooks"):
        if features.get(key) is False:
            return f"Codex has [features] {key} = false in {codex_home() / 'config.toml'} — set it to true to run them"
    return None
