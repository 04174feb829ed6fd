"""Writing other programs' files safely: atomic, mode-keeping, backed up once, race-aware.

Editors rewrite their own configs while running (Claude Code rewrites ``~/.claude.json``
many times a session), so a write re-reads the file just before replacing it and starts
over when it changed in between; nothing the editor wrote in the meantime is lost.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

BACKUP_SUFFIX = ".open-memex.bak"
RETRIES = 5


class Changed(Exception):
    """The file changed between our read and our write; read and decide again."""


@dataclass(frozen=True)
class Snapshot:
    """A file as we read it: None bytes when it did not exist."""

    path: Path
    data: bytes | None

    @property
    def text(self) -> str:
        return "" if self.data is None else self.data.decode("utf-8")


def real_path(path: Path) -> Path:
    """Where a symlinked config really lives: the rename must replace the target, not the
    link a dotfiles manager put there."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def read(path: Path) -> Snapshot:
    """The file as it is (None bytes when absent). Only a regular file is ever read,
    rewritten or deleted: a config linked to /dev/null (a common way to discard it) or to a
    FIFO is another program's business — reading a FIFO would wait forever, and as root a
    rename over /dev/null would replace the device."""
    path = real_path(path)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return Snapshot(path, None)
    if not stat.S_ISREG(mode):
        raise OSError(f"{path} is not a regular file (a device, FIFO, socket or folder) — open-memex leaves it alone")
    try:
        return Snapshot(path, path.read_bytes())
    except FileNotFoundError:
        return Snapshot(path, None)


def update(path: Path, decide: Callable[[Snapshot], str | None]) -> tuple[Snapshot, str | None]:
    """Read ``path``, ask ``decide`` for the new text (None: leave it), write it atomically.

    Returns the snapshot decided on and the text written. Retries when the file changes
    under us; the last decision wins only if the file held still for it.
    """
    for _ in range(RETRIES):
        snap = read(path)
        new = decide(snap)
        try:
            if new is None or (snap.data is not None and new.encode("utf-8") == snap.data):
                return snap, None
        except UnicodeEncodeError:  # a lone surrogate escape in the file (a string cut mid-emoji)
            raise OSError(f"{path} holds text that cannot be written back as UTF-8 (a lone surrogate "
                          "escape) — left untouched; add the entry by hand") from None  # fmt: skip
        try:
            write(snap, new)
        except Changed:
            continue
        return snap, new
    raise OSError(f"{path} kept changing while we wrote it; close the editor and run again")


def write(snap: Snapshot, text: str, *, keep_backup: bool = True) -> None:
    """Replace ``snap.path`` with ``text`` if it still holds ``snap.data``.

    The first rewrite of a pre-existing non-empty file copies it to ``<file>.open-memex.bak``
    (never overwritten later: it keeps the state before open-memex touched it); files
    that are wholly ours (a skill we wrote, its manifest) pass ``keep_backup=False``.
    """
    path = snap.path
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate escape in the file (a string cut mid-emoji)
        raise OSError(f"{path} holds text that cannot be written back as UTF-8 (a lone surrogate escape) — "
                      "left untouched; edit it by hand") from None  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = _mode(path)
    owner = _owner(path)
    tmp = path.with_name(f".{path.name}.open-memex-{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        if owner is not None and hasattr(os, "chown"):
            # run as root (sudo -E, a container) on a user's file: the user's agent must
            # still be able to read its own config
            with contextlib.suppress(OSError):
                os.chown(tmp, *owner)
        if read(path).data != snap.data:
            raise Changed
        if keep_backup and snap.data and snap.data.strip():
            backup(path)
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def backup(path: Path) -> Path | None:
    """Copy ``path`` to its one-time backup unless that exists; the backup path or None."""
    target = path.with_name(path.name + BACKUP_SUFFIX)
    if target.exists():
        return None
    shutil.copy2(path, target)
    return target


def remove(snap: Snapshot) -> None:
    """Delete ``snap.path`` if it still holds what we read."""
    if read(snap.path).data != snap.data:
        raise Changed
    snap.path.unlink()


def prune_empty_parents(path: Path) -> None:
    """After deleting a user-level config that held only ours: the client's own folders
    above it that are now empty go too (init made them; left behind, a later init would take
    an empty ``~/.cursor`` for an installed Cursor). Never the home folder, nor the shared
    ones above a client's (``~/.config``, ``APPDATA`` …); a folder with anything in it stays."""
    home = Path.home().absolute()
    shared = {home, home / ".config", home / "Library", home / "Library" / "Application Support",
              *(Path(os.environ[v]).absolute() for v in ("XDG_CONFIG_HOME", "APPDATA", "LOCALAPPDATA")
                if os.environ.get(v))}  # fmt: skip
    folder = path.parent.absolute()
    while folder not in shared and home in folder.parents:
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent


def through_link(path: Path) -> bool:
    """Whether ``path`` is a symlink, or sits in a symlinked folder below the home folder
    (a dotfiles manager links a file or a whole folder): deleting what it reaches would
    delete the user's own dotfile, and pruning would climb the dotfiles tree."""
    here = Path(os.path.abspath(path))
    home = Path.home().absolute()
    stop = home if home in here.parents else here.parent.parent
    while here not in (stop, here.parent):
        if here.is_symlink():
            return True
        here = here.parent
    return False


def has_backup(path: Path) -> bool:
    return real_path(path).with_name(real_path(path).name + BACKUP_SUFFIX).exists()


def _owner(path: Path) -> tuple[int, int] | None:
    """The file's (uid, gid) when they are not this process's: kept across the rewrite."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    if not hasattr(os, "geteuid") or (st.st_uid, st.st_gid) == (os.geteuid(), os.getegid()):
        return None
    return st.st_uid, st.st_gid


def _mode(path: Path) -> int | None:
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        return None
