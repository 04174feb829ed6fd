"""What init changed in each config file, so that uninstall takes out exactly that.

A config's text does not say which of its parts init put there: an empty ``"mcpServers":
{}`` may be the user's or what is left of init's section, ``{}`` may have been ``{ }``, a
file holding only our entry may be one init created or one the user wrote. Guessing from
the one-time ``.bak`` deleted a user's empty sections, their whitespace, and whole files
init had never written. So init records, per file, in the first-run marker (D50):

- ``existed`` — whether the file was there; ``blank`` — its text when it held only
  whitespace (or a BOM), given back as it was;
- ``parts`` — per client and kind (``"cursor mcp"``, ``"claude hooks"``), the members that
  client's init inserted: our entry, and the section or hook list it had to create;
- ``filled`` — the whitespace inside each container that was empty until ours went in;
- ``events`` — per hooks part, the host events whose handler that init put in (added, or
  replaced with ``--force``): a hand-written ``open-memex hook stop`` beside them is the
  user's, and stays.

uninstall prunes only a container some init made, writes an emptied container with its
old whitespace, deletes only a file init created, and takes Visual Studio's mirror entry
only where its own init put it. Without a record (an init of an earlier version, a marker
that was deleted) it prunes nothing and deletes a file only when it is, byte for byte,
what init writes into a new file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import jsonconf
from .jsonconf import Key

_WHITESPACE = frozenset(" \t\r\n")


@dataclass(frozen=True)
class Receipt:
    """What init changed in one file, as uninstall of one client's part needs it."""

    existed: bool = True
    blank: str | None = None  # the whole text when it held only whitespace: uninstall writes it back
    made: frozenset[Key] = frozenset()  # what any init inserted into this file
    mine: frozenset[Key] | None = frozenset()  # what this part's init inserted; None: not recorded
    filled: dict[Key, str] = field(default_factory=dict)
    events: frozenset[str] | None = None  # hooks: the events whose handler this init put in; None: not recorded

    def covers(self, key: Key) -> bool:
        """Whether ``key`` is something init put in, or lies inside it."""
        return any(key[: len(made)] == made for made in self.made)

    def put_in(self, key: Key) -> bool:
        """Whether this part's own init put ``key`` in (or what holds it)."""
        return self.mine is not None and any(key[: len(made)] == made for made in self.mine)


def finish(source: jsonconf.Source, doc: dict[str, Any], receipt: Receipt) -> tuple[str | None, bool]:
    """The text uninstall leaves once ours is out of ``doc``, and whether the file goes
    instead: one init created and that holds nothing now is deleted (the text is for a
    file reached through a symlink, which stays); one that held only whitespace gets it
    back; an emptied container gets back the whitespace it had before init filled it."""
    text = jsonconf.edit(source, doc, restore=receipt.filled)
    if doc or receipt.blank is None or text is None:
        return text, False
    return (text, True) if not receipt.existed else (receipt.blank, False)


def part(client_id: str, kind: str) -> str:
    return f"{client_id} {kind}"


def note(files: dict[str, Any], path: Path, part_name: str, receipt: Receipt, *, older: bool = False) -> None:
    """Add what one write of init changed to ``files`` (the marker's record). What was noted
    first stays: it describes the file before open-memex touched it, as the ``.bak`` does
    (``older``: ``receipt`` describes an earlier state than what is recorded)."""
    record = files.get(_key(path))
    if not isinstance(record, dict):
        record = files[_key(path)] = {"existed": receipt.existed, "blank": receipt.blank}
    if older:
        record["existed"], record["blank"] = receipt.existed, receipt.blank
    filled = _filled(record.get("filled"))
    filled.update({key: text for key, text in receipt.filled.items() if older or key not in filled})
    record["filled"] = [[list(key), text] for key, text in filled.items()]
    parts = record.get("parts")
    if not isinstance(parts, dict):
        parts = {}
    new_part = part_name not in parts
    parts[part_name] = [list(key) for key in sorted(_keys(parts.get(part_name)) | receipt.made)]
    record["parts"] = parts
    events = record.get("events")
    if not isinstance(events, dict):
        events = {}
    if receipt.events is not None and (new_part or part_name in events):  # an earlier init's events are unknown
        events[part_name] = sorted(set(_strings(events.get(part_name))) | receipt.events)
        record["events"] = events


def adopt(files: dict[str, Any], path: Path, part_name: str, theirs: dict[str, Any]) -> None:
    """init replaced (--force) the entry or hooks of another data root in this file: what
    that root's init made there is this root's to undo now (its uninstall will find nothing
    of its own). ``theirs``: that root's record."""
    found = lookup(theirs, path, part_name)
    if found is not None and found.mine is not None:
        note(files, path, part_name, Receipt(found.existed, found.blank, found.mine, found.mine, found.filled,
                                             found.events), older=True)  # fmt: skip


def lookup(files: dict[str, Any], path: Path, part_name: str) -> Receipt | None:
    """The record for one file and part, or None when the file has none (or a record that
    is not one init wrote: the marker is a file the user can edit)."""
    record = files.get(_key(path))
    if not isinstance(record, dict):
        return None
    existed, blank, parts = record.get("existed"), record.get("blank"), record.get("parts")
    if not isinstance(existed, bool) or not isinstance(parts, dict):
        return None
    if blank is not None and not (isinstance(blank, str) and not blank.removeprefix("\ufeff").strip()):
        return None  # not what parse takes for an empty file
    made: set[Key] = set()
    for keys in parts.values():
        made |= _keys(keys)
    mine = _keys(parts[part_name]) if part_name in parts else None
    events = record.get("events")
    put = events.get(part_name) if isinstance(events, dict) and mine is not None else None
    return Receipt(existed, blank, frozenset(made), None if mine is None else frozenset(mine), _filled(record.get("filled")),
                   frozenset(_strings(put)) if isinstance(put, list) else None)  # fmt: skip


def settle(files: dict[str, Any], path: Path, part_name: str, *, whole: bool) -> None:
    """uninstall took this part out (``whole``: the file is back as it was, or gone)."""
    record = files.get(_key(path))
    if not isinstance(record, dict):
        return
    parts = record.get("parts")
    if isinstance(parts, dict):
        parts.pop(part_name, None)
    events = record.get("events")
    if isinstance(events, dict):
        events.pop(part_name, None)
        if not events:
            del record["events"]
    if whole or not parts:
        del files[_key(path)]


def put_none(files: dict[str, Any], path: Path, part_name: str) -> None:
    """uninstall took out the hooks this part's init put in, and handlers of ours it did not
    put in stay (a hand-written ``open-memex hook stop``): the record stays, naming no event,
    so that a later uninstall leaves them too — without it they would be judged by their
    bytes, and an unpinned one taken for ours."""
    record = files.get(_key(path))
    events = record.get("events") if isinstance(record, dict) else None
    if isinstance(events, dict) and part_name in events:
        events[part_name] = []


def _key(path: Path) -> str:
    return str(path.absolute())


def _keys(value: object) -> set[Key]:
    if not isinstance(value, list):
        return set()
    return {tuple(key) for key in value if isinstance(key, list) and all(isinstance(k, str) for k in key)}


def _strings(value: object) -> list[str]:
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


def _filled(value: object) -> dict[Key, str]:
    """The recorded whitespace per container: [[key, text], …], JSON whitespace only."""
    found: dict[Key, str] = {}
    for item in value if isinstance(value, list) else []:
        if isinstance(item, list) and len(item) == 2 and isinstance(item[1], str) and set(item[1]) <= _WHITESPACE:
            for key in _keys([item[0]]):
                found[key] = item[1]
    return found
