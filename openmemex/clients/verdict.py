"""What a merge decided for one file; shared by the JSON and TOML editors."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .receipt import Receipt

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
    it, such as ``alwaysAllow``, do not make it different)."""
    return isinstance(current, dict) and all(current.get(key) == value for key, value in ours.items())
