"""Memory files on disk: atomic writes and deletes. The file is the source of truth (D1);
every write lands here before the index hears of it (D57)."""

from __future__ import annotations

import contextlib
import errno
import os
import threading
import time
from collections.abc import Iterable
from pathlib import Path

from .errors import MemexError, UsageError
from .memfile import MAX_FILE_BYTES, conflict_marker_line, serialize
from .model import Memory

TMP_SUFFIX = ".tmp"
STALE_TMP_S = 600.0  # a temp file this old is garbage even if its pid was reused
DEAD_TMP_S = 60.0  # …and one this old whose pid is gone (a pid from another pid namespace
# — a container sharing the data root — may look dead while its writer is at work)


def _reason(exc: OSError) -> str:
    return exc.strerror or errno.errorcode.get(exc.errno or 0, type(exc).__name__)


_changes = threading.local()


def changes() -> int:
    """How many files this thread wrote or deleted so far: a command compares the number
    before and after to know whether running it again would repeat a change."""
    return int(getattr(_changes, "count", 0))


def _changed() -> None:
    _changes.count = changes() + 1


def write_atomic(path: Path, text: str | bytes) -> None:
    """tmp + fsync + rename in the same folder: a reader never sees a torn file (D57, D64).
    A folder or file we may not write is one clear error, and no temp file is left. Text is
    written as UTF-8; bytes as they are."""
    data = text if isinstance(text, bytes) else text.encode("utf-8")
    refuse_special(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}{TMP_SUFFIX}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        _changed()
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        full = exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
        step = "free some disk space" if full else f"make {path.parent} and its files writable"
        raise MemexError(f"cannot write {path} ({_reason(exc)}) — nothing was changed; {step}, then retry") from None
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def refuse_special(path: Path) -> None:
    """A rename replaces whatever has the name: never a device, a FIFO or a socket (as root,
    `--out /dev/null` would otherwise replace the system's /dev/null with a file)."""
    import stat

    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        raise UsageError(f"cannot write {path}: it is a device, FIFO or socket, not a file — nothing was changed; "
                         "give the name of a regular file")  # fmt: skip


def _write_all(fd: int, data: bytes) -> None:
    """Every byte, or an error: on a nearly full disk ``write`` writes part and says how
    much, and a temp file cut short must never be renamed over a memory."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if written <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        view = view[written:]


# A new text leaves this much below the readers' limit for what its lifecycle adds later
# (status, superseded_by, review steps, a soft forget): a memory saved at the limit could
# otherwise never be deprecated.
LIFECYCLE_ROOM = 16 * 1024


def render(memory: Memory, new: bool = False) -> str:
    """The file text, refused when a reader would quarantine it (too large, or holding
    conflict markers or a NUL): what is written can always be read back. ``new``: a text
    being saved now (add, supersede), which must leave ``LIFECYCLE_ROOM``."""
    marker = conflict_marker_line(memory.body)
    if marker is not None:
        raise UsageError(
            f"the text holds git conflict markers (line {marker}) that would read as an unfinished merge — "
            "put them in a ``` code block"
        )
    text = serialize(memory)
    if "\x00" in text:  # a reader takes a file with a NUL byte for a binary file and skips it
        raise UsageError("the memory holds a NUL character (U+0000), which would make its file unreadable — remove it")
    size = len(text.encode("utf-8"))
    limit = MAX_FILE_BYTES - LIFECYCLE_ROOM if new else MAX_FILE_BYTES
    if size > limit:
        if not new:
            raise UsageError(f"{memory.id} is too close to the {MAX_FILE_BYTES // 2**20} MB every reader accepts for "
                             f"this change (its file would be {size:,} bytes) — shorten its text in the file, "
                             "then retry")  # fmt: skip
        raise UsageError(
            f"memory too large ({size:,} bytes; a new memory is at most {limit:,}, 2 MB less "
            f"{LIFECYCLE_ROOM // 1024} KB kept for its later changes) — save the key facts, or split it into several memories"
        )
    return text


def save(memory: Memory, folder: Path, new: bool = False) -> Path:
    """Write ``memory`` as ``<folder>/<id>.md`` and remember where it went (``new``: see ``render``)."""
    path = folder / f"{memory.id}.md"
    write_atomic(path, render(memory, new))
    memory.path = path
    return path


def delete(path: Path) -> None:
    """Hard delete. Only "already gone" is success; anything else is reported (D63)."""
    try:
        path.unlink()
        _changed()
    except FileNotFoundError:
        return
    except OSError as exc:
        code = errno.errorcode.get(exc.errno or 0, str(exc.errno))
        raise MemexError(f"could not delete {path} ({code}) — memory not forgotten; fix the file and retry") from None


def memory_files(folder: Path) -> list[Path]:
    try:
        return sorted(p for p in folder.iterdir() if p.suffix == ".md" and not p.name.startswith("."))
    except OSError:
        return []


def is_temp_name(name: str, of: str = "") -> bool:
    """A ``write_atomic`` temp file of a memory (``.<id>.md.<pid>.<hex>.tmp``), or of the
    file named ``of`` (a cache in the data root: ``.<of>.<pid>.<hex>.tmp``)."""
    if of:
        return name.startswith(f".{of}.") and name.endswith(TMP_SUFFIX)
    return name.startswith(".") and name.endswith(TMP_SUFFIX) and ".md." in name


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError, OverflowError):
        return True
    return True


def sweep_temp_files(folder: Path, names: Iterable[str], of: str = "") -> int:
    """Remove temp files a killed writer left behind (``.<id>.md.<pid>.<hex>.tmp``, or those
    of the file named ``of``): its pid is gone and it is a minute old, or it is older than any
    write takes. Returns how many were removed."""
    removed = 0
    now = time.time()
    for name in names:
        if not is_temp_name(name, of):
            continue
        path = folder / name
        parts = name.split(".")
        pid = int(parts[-3]) if len(parts) >= 4 and parts[-3].isdigit() else None
        try:
            age = now - path.lstat().st_mtime
        except OSError:
            continue
        dead = pid is not None and pid != os.getpid() and not _pid_alive(pid)
        if (dead and age > DEAD_TMP_S) or age > STALE_TMP_S:
            with contextlib.suppress(OSError):
                path.unlink()
                removed += 1
    return removed


def write_cache(path: Path, text: str) -> None:
    """A data-root cache (``vetted-reviews.json``, ``clean-texts.json``) written whole or not
    at all, best effort: one we cannot write only costs the next process a look. The temp
    files of a writer killed mid-write are swept here, the only place that writes this file."""
    with contextlib.suppress(OSError, MemexError):
        write_atomic(path, text)
    with contextlib.suppress(OSError):
        sweep_temp_files(path.parent, [n for n in os.listdir(path.parent) if is_temp_name(n, path.name)], of=path.name)
