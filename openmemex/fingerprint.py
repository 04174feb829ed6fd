"""The cheap freshness check: a per-folder checksum of what ``lstat`` says about every
memory file, so an unchanged folder answers a read without reading its index rows
(docs/protocol.md, Consistency: what the check trusts)."""

from __future__ import annotations

import os
import zlib
from pathlib import Path

from .store import sweep_temp_files

Sig = tuple[int, int, int, int]  # mtime_ns, size, ctime_ns, inode: what a reread is decided on
SIG_COLUMNS = "mtime_ns, size, ctime_ns, ino"  # the same, as index columns
FILE_MODE = 0o100644  # a removed file's mode is not recorded; a wrong guess only costs a re-scan


def stat_sig(st: os.stat_result) -> Sig:
    return (st.st_mtime_ns, st.st_size, st.st_ctime_ns, st.st_ino)


def entry_crc(name: str, sig: tuple[int, ...], mode: int) -> int:
    mtime_ns, size, ctime_ns, ino = sig
    return zlib.crc32(
        b"%s\0%d\0%d\0%d\0%d\0%d" % (name.encode("utf-8", "surrogateescape"), mtime_ns, size, ctime_ns, ino, mode)
    )


def folder_checksum(folder: Path) -> tuple[int, int]:
    """An order-independent checksum of every ``*.md`` entry's name, mtime, size, ctime,
    inode and mode: equal to the stored one means nothing in the folder changed, so the
    index rows need not be read (the warm path of every read). ctime and inode are what an
    in-place rewrite cannot hide: ``touch -r`` restores mtime, but any write or chmod moves
    ctime, and a rename-over brings a new inode (docs/protocol.md, Consistency).

    The same listing finds temp files a killed writer left behind and removes them
    (``store.sweep_temp_files``): the one side effect of this read."""
    try:
        names = os.listdir(folder)
    except (FileNotFoundError, NotADirectoryError):
        return 0, 0
    base = f"{folder}{os.sep}"
    total = 0
    count = 0
    lstat = os.lstat
    temps = []
    for name in names:
        if not name.endswith(".md") or name.startswith("."):
            if name.endswith(".tmp") and name.startswith("."):
                temps.append(name)
            continue
        try:
            st = lstat(base + name)
        except OSError:
            continue
        total += entry_crc(name, (st.st_mtime_ns, st.st_size, st.st_ctime_ns, st.st_ino), st.st_mode)
        count += 1
    if temps:
        sweep_temp_files(folder, temps)
    return total & 0x7FFFFFFFFFFFFFFF, count
