"""What the session is about, read cheaply for the session-start block (design §7: relevance
to the cwd, branch and recently changed files): the folder inside the repository, the
branch name, the last commit subjects and the most recently modified tracked files.

Pure Python over ``.git`` files, no pygit2: the session-start hook runs at every session
start and must cost little more than Python's own start-up. Every reader degrades to
"nothing known" on any surprise (a packed or v4 index, a detached HEAD, no repository).
"""

from __future__ import annotations

import os
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path

from .gitinfo import discover

RECENT_FILES = 20
RECENT_SUBJECTS = 8
_MAX_INDEX_BYTES = 32 * 1024 * 1024


@dataclass
class Focus:
    folder: str = ""  # the cwd relative to the work tree root
    branch: str = ""
    subjects: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)

    def words(self) -> str:
        """The focus as search text: path parts and branch words split on separators."""
        parts = [self.folder, self.branch, *self.subjects, *self.files]
        text = " ".join(parts)
        return re.sub(r"[/\\._\-]+", " ", text)


def read_focus(cwd: Path) -> Focus:
    repo = discover(cwd)
    if repo is None:
        return Focus()
    focus = Focus()
    try:
        rel = cwd.absolute().relative_to(repo.workdir)
        focus.folder = "" if str(rel) == "." else rel.as_posix()
    except ValueError:
        pass
    focus.branch = _branch(repo.git_dir)
    focus.subjects = _subjects(repo.git_dir)
    focus.files = _recent_files(repo.git_dir / "index")
    return focus


def _branch(git_dir: Path) -> str:
    try:
        head = (git_dir / "HEAD").read_text("utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return ""
    prefix = "ref: refs/heads/"
    return head[len(prefix) :] if head.startswith(prefix) else ""


def _subjects(git_dir: Path) -> list[str]:
    """The last commit subjects from HEAD's reflog (``commit: fix retries`` lines)."""
    try:
        with (git_dir / "logs" / "HEAD").open("rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - 16384))
            tail = fh.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return []
    subjects: list[str] = []
    for line in reversed(tail):
        _, _, message = line.partition("\t")
        kind, _, subject = message.partition(": ")
        if kind.startswith("commit") and subject and subject not in subjects:
            subjects.append(subject.strip())
        if len(subjects) >= RECENT_SUBJECTS:
            break
    return subjects


def _recent_files(index_path: Path) -> list[str]:
    """Tracked paths by their last recorded modification, newest first, from the index
    file (versions 2 and 3; version 4 compresses paths and is skipped)."""
    try:
        if index_path.stat().st_size > _MAX_INDEX_BYTES:
            return []
        data = index_path.read_bytes()
    except OSError:
        return []
    if len(data) < 12 or data[:4] != b"DIRC":
        return []
    version, count = struct.unpack(">II", data[4:12])
    if version not in (2, 3):
        return []
    entries: list[tuple[int, str]] = []
    offset = 12
    try:
        for _ in range(count):
            mtime = struct.unpack_from(">I", data, offset + 8)[0]
            flags = struct.unpack_from(">H", data, offset + 60)[0]
            start = offset + 62
            if version == 3 and flags & 0x4000:
                start += 2
            end = data.index(b"\0", start)
            entries.append((mtime, data[start:end].decode("utf-8", "replace")))
            length = end - offset
            offset += (length + 8) & ~7  # entries are NUL-padded to a multiple of 8
    except (struct.error, ValueError):
        return []
    entries.sort(key=lambda e: -e[0])
    return [path for _, path in entries[:RECENT_FILES]]
