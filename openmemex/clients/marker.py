"""The first-run marker ``<data root>/.init.json`` (D50): init writes it, uninstall removes
it, and the CLI's one-line tip (F28) is shown only while it is missing. It also holds
init's record of what it changed in each config file (``files``, see ``receipt.py``), so
that uninstall undoes exactly that.

Kept free of imports beyond ``paths`` so the tip costs one stat.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

MARKER_NAME = ".init.json"


def marker_path() -> Path:
    from ..paths import data_root

    return data_root() / MARKER_NAME


def write_marker(clients: list[str], *, declined: bool = False, files: dict[str, Any] | None = None) -> bool:
    """Record that init ran (or was declined): the tip is not shown again. ``files``: the
    record of what init changed (replacing the one read by ``read_files``). A marker that
    already says all this is left as it is (a second init changes no byte); returns
    whether the file was written."""
    from datetime import UTC, datetime

    from .. import __version__

    path = marker_path()
    previous = _read(path)
    recorded = previous.get("clients")
    known: list[str] = [c for c in recorded if isinstance(c, str)] if isinstance(recorded, list) else []
    merged = [*known, *(c for c in clients if c not in known)]
    had = read_files()
    files = had if files is None else files
    if previous and merged == known and (declined or not previous.get("declined")) and files == had:
        return False
    record: dict[str, Any] = {"version": __version__, "at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                              "clients": merged, "declined": declined}  # fmt: skip
    if files:
        record["files"] = files
    _write(path, record)
    return True


def read_files(root: Path | None = None) -> dict[str, Any]:
    """init's record of what it changed per config file (this data root's, or ``root``'s);
    empty when there is none (an earlier version's init kept no record)."""
    files = _read(root / MARKER_NAME if root is not None else marker_path()).get("files")
    return files if isinstance(files, dict) else {}


def save_files(files: dict[str, Any]) -> None:
    """Rewrite the record of what init changed, once uninstall settled some of it (the
    marker stays while anything of ours is left)."""
    path = marker_path()
    record = _read(path)
    if not record or record.get("files", {}) == files:
        return
    if files:
        record["files"] = files
    else:
        del record["files"]
    _write(path, record)


def _write(path: Path, record: dict[str, Any]) -> None:
    import json

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)


def _read(path: Path) -> dict[str, Any]:
    import json

    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def remove_marker() -> bool:
    try:
        marker_path().unlink()
    except FileNotFoundError:
        return False
    return True
