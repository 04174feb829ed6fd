"""Memory files on disk: atomic writes and deletes. The file is the source of truth (D1);
every write lands here before the index hears of it (D57)."""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path

from .errors import MemexError
from .memfile import serialize
from .model import Memory


def write_atomic(path: Path, text: str) -> None:
    """tmp + fsync + rename in the same folder: a reader never sees a torn file (D57, D64)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    data = text.encode("utf-8")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def save(memory: Memory, folder: Path) -> Path:
    """Write ``memory`` as ``<folder>/<id>.md`` and remember where it went."""
    path = folder / f"{memory.id}.md"
    write_atomic(path, serialize(memory))
    memory.path = path
    return path


def delete(path: Path) -> None:
    """Hard delete. Only "already gone" is success; anything else is reported (D63)."""
    try:
        path.unlink()
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
