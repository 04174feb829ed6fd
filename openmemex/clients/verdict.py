"""What a merge decided for one file; shared by the JSON and TOML editors."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .entry import same_data_root
from .receipt import Receipt

DATA_ROOT = "OPEN_MEMEX_HOME"

FORCE_HINT = "a different open-memex entry is there — kept; rerun with --force to replace it"
LEGACY_NOTE = "removed the legacy my-o-memory entry"


@dataclass(frozen=True)
class Verdict:
    """The action word, why, and the new text (None: leave the file as it is)."""

    action: str  # added | updated | kept | manual | removed | absent
    detail: str = ""
    text: str | None = None
    delete: bool = False  # uninstall: the file held only our entry and init created it
    receipt: Receipt | None = None  # init: what this write put in (recorded for uninstall)


def matches(current: object, ours: dict[str, Any]) -> bool:
    """Our entry is there when every key we write has our value (keys the user added to
    it, such as ``alwaysAllow``, do not make it different), the data root in any spelling
    of the same folder (a symlink: init called it "a different entry", while uninstall and
    doctor took it for this data root's)."""
    return isinstance(current, dict) and all(_same(current.get(key), value) for key, value in ours.items())


def _same(found: object, wanted: object) -> bool:
    if found == wanted:
        return True
    if not (isinstance(found, dict) and isinstance(wanted, dict)):
        return False
    theirs, mine = dict(found), dict(wanted)
    root, want = theirs.pop(DATA_ROOT, None), mine.pop(DATA_ROOT, None)
    return theirs == mine and isinstance(root, str) and bool(root) and isinstance(want, str) and same_data_root(root, want)
