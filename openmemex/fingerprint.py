"""The cheap freshness check: a per-folder checksum of what ``lstat`` says about every
memory file, so an unchanged folder answers a read without reading its index rows
(docs/protocol.md, Consistency: what the check trusts)."""

from __future__ import annotations

import os
from pathlib import Path

from .store import sweep_temp_files

Sig = tuple[int, int, int, int]  # mtime_ns, size, ctime_ns, inode: what a reread is decided on
SIG_COLUMNS = "mtime_ns, size, ctime_ns, ino"  # the same, as index columns
FILE_MODE = 0o100644  # a removed file's mode is not recorded; a wrong guess only costs a re-scan
# Stored beside every checksum: a checksum made by another formula (an older release, or
# another Python whose tuple hash differs) is never compared, so it costs one full check
# and can never answer "unchanged". 2: tuple hash per entry (issue 11); 1: CRC-32 of text.
FORMULA = 2
MASK = 0x7FFFFFFFFFFFFFFF  # checksums are kept modulo 2**63: an SQLite INTEGER

# fstatat() on the folder's descriptor resolves one name, not the whole path again per
# file: the check costs less than a plain listdir + lstat of full paths (issue 11).
_AT_FD = os.stat in os.supports_dir_fd and os.listdir in os.supports_fd and hasattr(os, "O_DIRECTORY")


def stat_sig(st: os.stat_result) -> Sig:
    return (st.st_mtime_ns, st.st_size, st.st_ctime_ns, st.st_ino)


def entry_hash(name: str, sig: tuple[int, ...], mode: int) -> int:
    """One entry's share of its folder's checksum: a hash of its name, mtime, size, ctime,
    inode and mode. Python's tuple hash of integers is the same in every process (only
    ``str`` hashes are salted, so the name goes in as the integer of its bytes), and a
    change of any one field always changes it: each step of the tuple hash is a bijection
    of its state for the fields that follow."""
    mtime_ns, size, ctime_ns, ino = sig
    return hash((int.from_bytes(name.encode("utf-8", "surrogateescape"), "little"), mtime_ns, size, ctime_ns, ino, mode))


def folder_checksum(folder: Path) -> tuple[int, int]:
    """An order-independent checksum (the sum of ``entry_hash``) of every ``*.md`` entry's
    name, mtime, size, ctime, inode and mode, and their count: equal to the stored one
    means nothing in the folder changed, so the index rows need not be read (the warm path
    of every read). ctime and inode are what an in-place rewrite cannot hide: ``touch -r``
    restores mtime, but any write or chmod moves ctime, and a rename-over brings a new
    inode (docs/protocol.md, Consistency).

    The same listing finds temp files a killed writer left behind and removes them
    (``store.sweep_temp_files``): the one side effect of this read."""
    if not _AT_FD:
        return _checksum_by_path(folder)
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except (FileNotFoundError, NotADirectoryError):
        return 0, 0
    total = 0
    count = 0
    lstat = os.lstat
    from_bytes = int.from_bytes
    temps = []
    try:
        for name in os.listdir(fd):
            if name[-3:] != ".md" or name[0] == ".":
                if name[0] == "." and name[-4:] == ".tmp":
                    temps.append(name)
                continue
            try:
                st = lstat(name, dir_fd=fd)
            except OSError:
                continue
            # entry_hash, inlined: this loop is the whole cost of a warm read
            key = from_bytes(name.encode("utf-8", "surrogateescape"), "little")
            total += hash((key, st.st_mtime_ns, st.st_size, st.st_ctime_ns, st.st_ino, st.st_mode))
            count += 1
    finally:
        os.close(fd)
    if temps:
        sweep_temp_files(folder, temps)
    return total & MASK, count


def _checksum_by_path(folder: Path) -> tuple[int, int]:
    """``folder_checksum`` where descriptors of folders cannot be used (Windows)."""
    try:
        names = os.listdir(folder)
    except (FileNotFoundError, NotADirectoryError):
        return 0, 0
    base = f"{folder}{os.sep}"
    total = 0
    count = 0
    temps = []
    for name in names:
        if not name.endswith(".md") or name.startswith("."):
            if name.endswith(".tmp") and name.startswith("."):
                temps.append(name)
            continue
        try:
            st = os.lstat(base + name)
        except OSError:
            continue
        total += entry_hash(name, stat_sig(st), st.st_mode)
        count += 1
    if temps:
        sweep_temp_files(folder, temps)
    return total & MASK, count
