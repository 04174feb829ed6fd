"""Writing other programs' files safely: atomic, mode-keeping, backed up once, race-aware.

Editors rewrite their own configs while running (Claude Code rewrites ``~/.claude.json``
many times a session), so a write re-reads the file just before replacing it and starts
over when it changed in between; nothing the editor wrote in the meantime is lost.

A config may hold tokens (``"env": {"GITHUB_TOKEN": …}``): its temporary copy and its
backup are created exclusively, readable by the owner only while the bytes go in, and get
the file's own mode just before the rename. A temporary file a killed run left behind is
removed by the next run that edits the file beside it. A project's files are confined to
the repository: a symlink a cloned repository ships (the file, a folder above it, the name
of its backup) never makes init write outside it.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

BACKUP_SUFFIX = ".open-memex.bak"
RETRIES = 5
TMP_MARK = ".open-memex-"  # .<name>.open-memex-<pid>-<hex>.tmp beside the file
STALE_TMP_S = 600.0  # a temporary file this old is garbage even if its pid was reused (as store.py)
_TMP = re.compile(r"^\.(?P<name>.+)\.open-memex-(?P<pid>[0-9]+)(?:-[0-9a-f]+)?\.tmp$")
_made: list[list[Path]] = []  # the folder collectors open in this process (noting_folders)


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


def confine(path: Path, root: Path) -> None:
    """Refuse a project file that a symlink leads out of the repository ``root``: the file,
    a folder above it, or the name of its backup. A cloned repository shipping
    ``.mcp.json.open-memex.bak -> ~/.bash_profile`` or ``.cursor/mcp.json -> ~/x`` made init
    write into the user's home. A link that stays inside the repository is followed; the
    user's own (user-level) configs may link anywhere, and are never confined."""
    top = os.path.realpath(root)
    real = os.path.realpath(path)
    backup_name = os.path.basename(real) + BACKUP_SUFFIX
    for what, where in (("a symlink leads it", real), (f"{backup_name} beside it is a symlink",
                                                     os.path.realpath(real + BACKUP_SUFFIX))):  # fmt: skip
        try:
            inside = os.path.commonpath([top, where]) == top
        except ValueError:  # another drive
            inside = False
        if not inside:
            raise OSError(f"{what} out of the repository (to {where}) — open-memex writes a project's files only "
                          "inside it; left alone")  # fmt: skip


def update(path: Path, decide: Callable[[Snapshot], str | None], *,
           within: Path | None = None) -> tuple[Snapshot, str | None]:  # fmt: skip
    """Read ``path``, ask ``decide`` for the new text (None: leave it), write it atomically.

    Returns the snapshot decided on and the text written. Retries when the file changes
    under us; the last decision wins only if the file held still for it. ``within``: the
    repository a project file must stay in (``confine``).
    """
    if within is not None:
        confine(path, within)
    sweep(real_path(path))
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
    make_folders(path.parent)
    sweep(path)
    mode = _mode(path)
    tmp = _temp_file(path, data, mode, _owner(path))
    try:
        if read(path).data != snap.data:
            raise Changed
        if keep_backup and snap.data and snap.data.strip():
            backup(path, snap.data, mode)
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def replace(path: Path, data: bytes) -> None:
    """Write ``path`` whole (temp file, then rename), keeping its mode: for files only we
    write (the first-run marker), with no backup and no check of what it held."""
    make_folders(path.parent)
    sweep(path)
    tmp = _temp_file(path, data, _mode(path), None)
    try:
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def _temp_file(path: Path, data: bytes, mode: int | None, owner: tuple[int, int] | None) -> Path:
    """A new file beside ``path`` holding ``data``, ready to be renamed over it. Created
    exclusively (never through a link planted under its name) with a name no other run
    uses, and 0600 while a copy of an existing file goes in (it may hold tokens; a 0644
    temp file was world-readable until the chmod); then ``mode``, the file's own, and its
    owner when init runs as root on a user's file. A new file holds only ours: it gets
    the umask's default, as a file opened for writing does."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    for _ in range(RETRIES):
        tmp = path.with_name(f".{path.name}{TMP_MARK}{os.getpid()}-{os.urandom(4).hex()}.tmp")
        try:
            fd = os.open(tmp, flags, 0o600 if mode is not None else 0o666)
            break
        except FileExistsError:
            continue
    else:
        raise OSError(f"could not create a temporary file beside {path}")
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
            if owner is not None and hasattr(os, "fchown"):
                # the user's agent must still be able to read its own config
                with contextlib.suppress(OSError):
                    os.fchown(fd, *owner)
            if mode is not None:
                if hasattr(os, "fchmod"):
                    os.fchmod(fd, mode)
                else:  # pragma: no cover - Windows
                    os.chmod(tmp, mode)
        finally:
            os.close(fd)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    return tmp


def backup(path: Path, data: bytes | None = None, mode: int | None = None) -> Path | None:
    """Keep ``data`` (else what ``path`` holds) as the one-time backup unless one is there;
    the backup path or None. Whatever is at the backup's name counts as there — a
    dangling symlink too, which the copy used to follow — and the copy is whole or absent:
    it goes in under a temporary name and is linked to its own name only once complete (a
    kill mid-copy left a truncated backup no later run replaced)."""
    target = path.with_name(path.name + BACKUP_SUFFIX)
    if os.path.lexists(target):
        return None
    if data is None:
        data = path.read_bytes()
    tmp = _temp_file(target, data, _mode(path) if mode is None else mode, _owner(path))
    try:
        try:
            os.link(tmp, target)  # fails on anything at the name, and never follows it
        except FileExistsError:
            return None
        except OSError:  # a filesystem without hard links
            if os.path.lexists(target):
                return None
            os.replace(tmp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    return target


def remove(snap: Snapshot) -> None:
    """Delete ``snap.path`` if it still holds what we read."""
    sweep(snap.path)
    if read(snap.path).data != snap.data:
        raise Changed
    snap.path.unlink()


def prune_empty_parents(path: Path, made: set[str] | None) -> None:
    """After deleting a user-level file that held only ours: the folders above it that init
    created (``made``, its record) and that are now empty go too — left behind, a later init
    would take an empty ``~/.cursor`` for an installed Cursor. A folder that was there before
    init stays, empty or not (an agent's installer makes ``~/.codex``), and so does every
    folder above it; without a record (an earlier version's init) none goes. Never the home
    folder, nor the shared ones above a client's (``~/.config``, ``APPDATA`` …). A folder
    removed is dropped from ``made``."""
    if not made:
        return
    home = Path.home().absolute()
    shared = {home, home / ".config", home / "Library", home / "Library" / "Application Support",
              *(Path(os.environ[v]).absolute() for v in ("XDG_CONFIG_HOME", "APPDATA", "LOCALAPPDATA")
                if os.environ.get(v))}  # fmt: skip
    folder = path.parent.absolute()
    while str(folder) in made and folder not in shared and home in folder.parents:
        try:
            folder.rmdir()
        except FileNotFoundError:
            pass
        except OSError:
            return
        made.discard(str(folder))
        folder = folder.parent


def make_folders(folder: Path) -> None:
    """``mkdir -p``, noting each folder it creates for the open ``noting_folders`` collectors:
    init records them, and uninstall removes only those."""
    missing: list[Path] = []
    here = folder.absolute()
    while not os.path.lexists(here) and here.parent != here:
        missing.append(here)
        here = here.parent
    for made in reversed(missing):
        try:
            made.mkdir()
        except FileExistsError:
            continue  # another run made it meanwhile: not ours
        for collector in _made:
            collector.append(made)


@contextlib.contextmanager
def noting_folders() -> Iterator[list[Path]]:
    """The folders ``make_folders`` creates while the block runs."""
    made: list[Path] = []
    _made.append(made)
    try:
        yield made
    finally:
        _made.remove(made)


def sweep(path: Path) -> None:
    """Remove the temporary files of ours beside ``path`` (its own and its backup's) that a
    killed run left behind: a full copy of the config, tokens included, that nothing else
    would ever remove. One is stale when its process is gone, or when it is older than any
    write takes (its pid reused). A live process's is left; should another pid namespace's
    run lose one, its rename fails and it says so."""
    try:
        names = os.listdir(path.parent)
    except OSError:
        return
    mine = {path.name, path.name + BACKUP_SUFFIX}
    now = time.time()
    for name in names:
        match = _TMP.match(name)
        if match is None or match.group("name") not in mine:
            continue
        stale = path.with_name(name)
        try:
            st = stale.lstat()
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode) and (not _alive(int(match.group("pid"))) or now - st.st_mtime > STALE_TMP_S):
            with contextlib.suppress(OSError):
                stale.unlink()


def _alive(pid: int) -> bool:
    if pid == os.getpid() or sys.platform == "win32":  # os.kill(pid, 0) is no probe on Windows
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError, OverflowError):
        return True  # someone else's process, or a platform that cannot tell: keep its file
    return True


def read_only(path: Path) -> bool:
    """Whether the file lacks its owner's write bit (rewritten anyway, by rename: init says so)."""
    mode = _mode(path)
    return mode is not None and not mode & stat.S_IWUSR


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
    return os.path.lexists(real_path(path).with_name(real_path(path).name + BACKUP_SUFFIX))


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
