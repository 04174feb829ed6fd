"""The per-folder fingerprint (issue 11, item 2): cheaper, with the guarantees of
docs/protocol.md (Consistency: what the freshness check trusts). An edit that restores
size and mtime, a rename over a file, a chmod and a renamed file all change it; a
checksum stored by another formula is never taken for "unchanged"."""

from __future__ import annotations

import os
import time
import zlib
from pathlib import Path
from typing import Any

from openmemex import fingerprint, freshness, index
from openmemex.context import Context
from openmemex.fingerprint import folder_checksum
from tests.helpers import personal_text


def _folder(data_root: Path, n: int = 3) -> tuple[Path, list[Path]]:
    folder = data_root / "memories" / "personal"
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(n):
        memory_id = f"01J{i:023d}"
        path = folder / f"{memory_id}.md"
        path.write_text(personal_text(memory_id, f"memory number {i} about the staging database"))
        paths.append(path)
    return folder, paths


def _edit_keeping_size_and_mtime(path: Path, old: str, new: str) -> None:
    time.sleep(0.02)  # ctime moves in kernel clock ticks (a few ms): be a tick after the write
    before = path.stat()
    text = path.read_text()
    assert len(old) == len(new) and old in text
    path.write_text(text.replace(old, new))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # `touch -r`
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)


def test_an_edit_keeping_size_and_mtime_changes_the_checksum(data_root: Path) -> None:
    folder, paths = _folder(data_root)
    before = folder_checksum(folder)
    _edit_keeping_size_and_mtime(paths[1], "staging", "billing")  # ctime moved
    assert folder_checksum(folder) != before


def test_a_rename_over_a_file_changes_the_checksum(data_root: Path, tmp_path: Path) -> None:
    folder, paths = _folder(data_root)
    before = folder_checksum(folder)
    st = paths[0].stat()
    other = tmp_path / "swap.md"
    other.write_text(paths[0].read_text().replace("staging", "billing"))
    os.utime(other, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(other, paths[0])  # new inode, same name, size and mtime
    assert folder_checksum(folder) != before


def test_a_chmod_or_a_new_name_changes_the_checksum(data_root: Path) -> None:
    folder, paths = _folder(data_root)
    before = folder_checksum(folder)
    paths[0].chmod(0o600)
    chmodded = folder_checksum(folder)
    assert chmodded != before
    paths[2].rename(folder / "01J99999999999999999999999.md")  # same inode, other name
    assert folder_checksum(folder) not in (before, chmodded)


def test_the_checksum_ignores_listing_order_and_other_files(data_root: Path) -> None:
    folder, paths = _folder(data_root, 5)
    fd_way = folder_checksum(folder)
    assert fd_way == fingerprint._checksum_by_path(folder)  # the Windows way agrees
    expected = sum(fingerprint.entry_hash(p.name, fingerprint.stat_sig(p.lstat()), p.lstat().st_mode) for p in paths)
    assert fd_way == (expected & fingerprint.MASK, 5)
    (folder / "notes.txt").write_text("not a memory")
    (folder / ".hidden.md").write_text("not a memory either")
    assert folder_checksum(folder) == fd_way
    assert folder_checksum(folder / "missing") == (0, 0)


def _old_formula(folder: Path) -> tuple[int, int]:
    """Formula 1 (before issue 11): the sum of a CRC-32 of each entry's fields as text."""
    total = count = 0
    for path in folder.glob("*.md"):
        st = path.lstat()
        text = b"%s\0%d\0%d\0%d\0%d\0%d" % (
            path.name.encode(), st.st_mtime_ns, st.st_size, st.st_ctime_ns, st.st_ino, st.st_mode,
        )  # fmt: skip
        total += zlib.crc32(text)
        count += 1
    return total & fingerprint.MASK, count


def _reconcile(folder: Path) -> Any:
    with Context.load() as ctx:
        return freshness.reconcile(ctx.conn, ctx.folders("personal"))


def _store(key: str, checksum: tuple[int, int], formula: int) -> None:
    with Context.load() as ctx, index.transaction(ctx.conn):
        ctx.conn.execute(
            "UPDATE folder_state SET checksum = ?, count = ?, formula = ? WHERE dir = ?", (*checksum, formula, key)
        )


def test_a_checksum_of_another_formula_means_a_full_check(data_root: Path) -> None:
    folder, paths = _folder(data_root)
    assert _reconcile(folder).added == 3
    _edit_keeping_size_and_mtime(paths[0], "staging", "billing")
    # Even a stored value that happens to equal today's checksum is not trusted when an
    # older formula wrote it: the read compares rows and finds the edit.
    _store(str(folder), folder_checksum(folder), formula=1)
    stats = _reconcile(folder)
    assert (stats.updated, stats.added, stats.removed) == (1, 0, 0)
    with Context.load() as ctx:
        assert index.stored_fingerprint(ctx.conn, str(folder)) == folder_checksum(folder)
        content = ctx.conn.execute("SELECT content FROM memories WHERE id = ?", (paths[0].stem,)).fetchone()[0]
    assert "billing" in content
    # A real formula-1 value: one full check, then the warm path again.
    _store(str(folder), _old_formula(folder), formula=1)
    assert _reconcile(folder).changed is False
    with Context.load() as ctx:
        assert index.stored_fingerprint(ctx.conn, str(folder)) == folder_checksum(folder)


def test_an_edit_keeping_size_and_mtime_is_reindexed(data_root: Path) -> None:
    folder, paths = _folder(data_root)
    _reconcile(folder)
    _edit_keeping_size_and_mtime(paths[2], "staging", "billing")
    stats = _reconcile(folder)
    assert (stats.updated, stats.added, stats.removed) == (1, 0, 0)
    assert _reconcile(folder).changed is False  # and the folder is warm again
