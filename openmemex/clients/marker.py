"""The first-run marker ``<data root>/.init.json`` (D50): init writes it, uninstall removes
it, and the CLI's one-line tip (F28) is shown only while it is missing.

Kept free of imports beyond ``paths`` so the tip costs one stat.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

MARKER_NAME = ".init.json"


def marker_path() -> Path:
    from ..paths import data_root

    return data_root() / MARKER_NAME


def write_marker(clients: list[str], *, declined: bool = False) -> bool:
    """Record that init ran (or was declined): the tip is not shown again. A marker that
    already names these clients is left as it is (a second init changes no byte);
    returns whether the file was written."""
    import json
    from datetime import UTC, datetime

    from .. import __version__

    path = marker_path()
    previous = _read(path)
    recorded = previous.get("clients")
    known: list[str] = [c for c in recorded if isinstance(c, str)] if isinstance(recorded, list) else []
    merged = [*known, *(c for c in clients if c not in known)]
    if previous and merged == known and (declined or not previous.get("declined")):
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"version": __version__, "at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
              "clients": merged, "declined": declined}  # fmt: skip
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)
    return True


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
