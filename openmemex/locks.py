"""Cross-process write locks, one per scope key (issue 6: check-then-write races).

Every read-decide-write sequence — dedup then write, supersede, status, forget, chain
repair — runs while holding the lock of the scope it writes, so two processes (or two
MCP threads) never both decide from the same stale picture. The lock is an ``flock`` on
``<data root>/locks/<key>.lock`` (``msvcrt.locking`` on Windows): the kernel drops it
when the holder dies, so ``kill -9`` never leaves a stale lock behind.

Within one process the lock is re-entrant per thread (a supersede that reconciles and
heals under its own lock must not deadlock on itself); several keys are always taken in
sorted order.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from .errors import MemexError, StoreBusyError

WAIT_S = 30.0  # a writer holds a lock for milliseconds; this long means something is stuck

_registry_guard = threading.Lock()
_registry: dict[str, _KeyLock] = {}


class _KeyLock:
    """A thread-re-entrant holder of one lock file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.rlock = threading.RLock()
        self.depth = 0
        self.fd: int | None = None

    def acquire(self, wait_s: float) -> None:
        if not self.rlock.acquire(timeout=wait_s):
            raise _busy(self.path, wait_s)
        if self.depth == 0:
            try:
                self.fd = _lock_file(self.path, wait_s)
            except BaseException:
                self.rlock.release()
                raise
        self.depth += 1

    def release(self) -> None:
        self.depth -= 1
        if self.depth == 0 and self.fd is not None:
            _unlock_file(self.fd)
            self.fd = None
        self.rlock.release()


def _busy(path: Path, wait_s: float) -> StoreBusyError:
    said = _read_note(path) or {}
    doing = said.get("doing")
    if isinstance(doing, str) and doing:  # the holder said what it is doing: a slow hook is no hung process
        return StoreBusyError(
            f"another open-memex (pid {said.get('pid')}) is {doing} and has held the lock {path.name} for "
            f"{wait_s:.0f} s — nothing was changed; retry once it is done"
        )
    return StoreBusyError(
        f"another open-memex has held the write lock {path.name} for {wait_s:.0f} s — nothing was changed; "
        "retry, and check for a hung open-memex process"
    )


def _open(path: Path) -> int:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise MemexError(
            f"cannot create the lock file {path} ({exc.strerror}) — check that the data root is writable "
            "(`open-memex where`)"
        ) from None


if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def _lock_file(path: Path, wait_s: float) -> int:
        fd = _open(path)
        deadline = time.monotonic() + wait_s
        while True:
            try:
                msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
                return fd
            except OSError:
                if time.monotonic() > deadline:
                    os.close(fd)
                    raise _busy(path, wait_s) from None
                time.sleep(0.01)

    def _unlock_file(fd: int) -> None:
        with contextlib.suppress(OSError):
            os.lseek(fd, 0, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
        os.close(fd)

else:
    import fcntl

    def _lock_file(path: Path, wait_s: float) -> int:
        # flock locks belong to the open file description, so two threads of one process
        # (each with its own open()) exclude each other too — unlike fcntl/POSIX locks.
        fd = _open(path)
        deadline = time.monotonic() + wait_s
        delay = 0.001
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return fd
            except BlockingIOError:
                if time.monotonic() > deadline:
                    os.close(fd)
                    raise _busy(path, wait_s) from None
                time.sleep(delay)
                delay = min(delay * 2, 0.02)
            except OSError as exc:  # a filesystem without flock (some network mounts): refuse, never write unlocked
                os.close(fd)
                raise MemexError(f"cannot lock {path} ({exc.strerror}) — put the data root on a local filesystem") from None

    def _unlock_file(fd: int) -> None:
        os.close(fd)  # closing the last descriptor releases the flock


def lock_path(root: Path, key: str) -> Path:
    return root / "locks" / f"{key}.lock"


def _holder(path: Path) -> _KeyLock:
    name = str(path)
    with _registry_guard:
        holder = _registry.get(name)
        if holder is None:
            holder = _registry[name] = _KeyLock(path)
        return holder


@contextlib.contextmanager
def scope_lock(root: Path, keys: Iterable[str], wait_s: float = WAIT_S) -> Iterator[None]:
    """Hold the write locks of ``keys`` (sorted, de-duplicated) for the block."""
    held: list[_KeyLock] = []
    try:
        for key in sorted(set(keys)):
            holder = _holder(lock_path(root, key))
            holder.acquire(wait_s)
            held.append(holder)
        yield
    finally:
        for holder in reversed(held):
            holder.release()


def submit_lane(key: str) -> str:
    """The lock key one project's submits queue on: held for the whole submit, the
    repository's commit hooks included, while the project's own write lock is taken only
    around the reads and writes before and after them (``git.submit``)."""
    return f"{key}.submit"


def announce(root: Path, key: str, doing: str | None, ids: list[str] | None = None) -> None:
    """Write into ``key``'s lock file, which this thread holds, what the holder is doing and
    the memory ids it has in flight (``None``: nothing any more). A waiter that gives up
    says it (``_busy``) instead of suspecting a hung process, and ``holder_note`` tells a
    writer whether the memory it is about to change is one of them."""
    holder = _holder(lock_path(root, key))
    fd = holder.fd
    if fd is None or holder.depth == 0:
        raise AssertionError(f"announce on {key!r}, a lock this process does not hold")
    import json

    data = b"" if doing is None else json.dumps({"pid": os.getpid(), "doing": doing, "ids": ids or []}).encode()
    with contextlib.suppress(OSError):  # a note that cannot be written only makes a waiter's message vaguer
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, data)


def holder_note(root: Path, key: str) -> dict[str, object] | None:
    """What the current holder of ``key``'s lock announced ({} when nothing), or None when
    nobody else holds it — free, held by this thread, or left by a process that died (the
    kernel dropped its lock; its note is stale and ignored). Never waits."""
    holder = _holder(lock_path(root, key))
    try:
        holder.acquire(0.0)
    except StoreBusyError:
        return _read_note(holder.path) or {}
    holder.release()
    return None


def _read_note(path: Path) -> dict[str, object] | None:
    import json

    try:
        data = json.loads(path.read_bytes() or b"null")
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
