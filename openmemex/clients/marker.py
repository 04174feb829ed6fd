"""The first-run marker ``<data root>/.init.json`` (D50): init writes it, uninstall removes
it, and the CLI's one-line tip (F28) is shown only while it is missing. It also holds
init's record of what it changed in each config file (``files``, see ``receipt.py``), so
that uninstall undoes exactly that, and the folders init created (``folders``), the only
ones uninstall may remove.

Two inits at once (one per agent, from a setup script) each read the record, added their
part and wrote it back: one's part was lost, and with one fixed temporary name one of
them failed. init and uninstall now hold the data root's ``init`` lock from reading the
record to writing it back, and the record is written under a name of its own.

Kept free of imports beyond ``paths`` so the tip costs one stat.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

MARKER_NAME = ".init.json"
LOCK_KEY = "init"


def marker_path() -> Path:
    from ..paths import data_root

    return data_root() / MARKER_NAME


@contextmanager
def locked() -> Iterator[None]:
    """Hold the data root's init lock (``locks.scope_lock``: re-entrant, dropped by the
    kernel when the holder dies) for a read-merge-write of the record."""
    from ..locks import scope_lock
    from ..paths import data_root

    with scope_lock(data_root(), [LOCK_KEY]):
        yield


def check_writable() -> None:
    """Before init touches another program's file: the record of what it changes can be
    written, or those changes could never be undone exactly (init edited every config,
    then failed to write the record). The data root is made, an existing record must be
    readable (its parts are merged, not replaced) and a file can be created beside it."""
    import os

    from ..errors import MemexError

    path = marker_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if os.path.lexists(path):
            if not path.is_file():
                raise OSError(f"{path} is not a file")
            with open(path, "rb"):
                pass
        probe = path.with_name(f".{path.name}.open-memex-{os.getpid()}-{os.urandom(4).hex()}.tmp")
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        os.unlink(probe)
    except OSError as exc:
        why = f"{exc.strerror} ({exc.filename})" if exc.strerror and exc.filename else exc.strerror or str(exc)
        raise MemexError(f"cannot write {path}, the record of what init changes in your agents' files: {why} — "
                         "nothing was changed; check that the data root is writable (`open-memex where`)") from None


def write_marker(clients: list[str], *, declined: bool = False, files: dict[str, Any] | None = None,
                 folders: set[str] | None = None) -> bool:  # fmt: skip
    """Record that init ran (or was declined): the tip is not shown again. ``files``: the
    record of what init changed (replacing the one read by ``read_files``); ``folders``:
    the folders init created (replacing ``read_folders``). A marker that already says all
    this is left as it is (a second init changes no byte); returns whether the file was
    written."""
    from datetime import UTC, datetime

    from .. import __version__

    with locked():
        path = marker_path()
        previous = _read(path)
        recorded = previous.get("clients")
        known: list[str] = [c for c in recorded if isinstance(c, str)] if isinstance(recorded, list) else []
        merged = [*known, *(c for c in clients if c not in known)]
        had = read_files()
        files = had if files is None else files
        had_folders = read_folders()
        folders = had_folders if folders is None else folders
        if (previous and merged == known and (declined or not previous.get("declined")) and files == had
                and folders == had_folders):  # fmt: skip
            return False
        record: dict[str, Any] = {"version": __version__, "at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                                  "clients": merged, "declined": declined}  # fmt: skip
        if files:
            record["files"] = files
        if folders is not None:
            record["folders"] = sorted(folders)
        _write(path, record)
    return True


def read_files(root: Path | None = None) -> dict[str, Any]:
    """init's record of what it changed per config file (this data root's, or ``root``'s);
    empty when there is none (an earlier version's init kept no record)."""
    files = _read(root / MARKER_NAME if root is not None else marker_path()).get("files")
    return files if isinstance(files, dict) else {}


def read_folders() -> set[str] | None:
    """The folders init created (absolute paths), which uninstall may remove once empty;
    None when the record does not say (an earlier version's init): then it removes none."""
    folders = _read(marker_path()).get("folders")
    return {f for f in folders if isinstance(f, str)} if isinstance(folders, list) else None


def save_files(files: dict[str, Any], folders: set[str] | None = None) -> None:
    """Rewrite the record of what init changed, once uninstall settled some of it (the
    marker stays while anything of ours is left). ``folders``: the created folders still
    there. The caller holds ``locked`` from reading the record on."""
    path = marker_path()
    record = _read(path)
    before = dict(record)
    if not record:
        return
    if files:
        record["files"] = files
    else:
        record.pop("files", None)
    if folders is not None and "folders" in record:
        record["folders"] = sorted(folders)
    if record != before:
        _write(path, record)


def _write(path: Path, record: dict[str, Any]) -> None:
    import json

    from . import fileio

    fileio.replace(path, (json.dumps(record, indent=2) + "\n").encode("utf-8"))


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
