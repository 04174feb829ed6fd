"""What the next commit adds or changes, read from the index a pre-commit hook is given.

git hands a pre-commit hook the index it is about to commit in ``GIT_INDEX_FILE``: the real
``.git/index`` for a plain ``git commit``, ``index.lock`` for ``git commit -a``, a temporary
``next-index-*.lock`` holding HEAD plus the named files for ``git commit -- path``. libgit2
ignores that variable, so the file is opened by path (``pygit2.Index(path)``) and compared
with HEAD's tree in C. Nothing here writes an index (STYLE habit 7).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import MemexError, UsageError
from ..gitinfo import discover

if TYPE_CHECKING:
    import pygit2

_SKIPPED_MODES = (0o160000, 0o120000)  # submodules (a commit id) and symlinks (a path)


@dataclass(frozen=True)
class StagedEntry:
    path: str  # repository-relative, '/'-separated
    oid: str
    size: int


@dataclass
class Staged:
    repo: pygit2.Repository
    entries: list[StagedEntry]

    def read(self, entry: StagedEntry) -> bytes:
        data: bytes = self.repo.odb.read(entry.oid)[1]
        return data


def index_path(git_dir: Path) -> Path:
    """``GIT_INDEX_FILE`` (relative to the current folder, as git resolves it), else the
    repository's own index."""
    named = os.environ.get("GIT_INDEX_FILE")
    return Path(named).absolute() if named else git_dir / "index"


def staged_entries(cwd: Path, paths: list[str]) -> Staged:
    """Blobs of the hook's index that are added or changed against HEAD (all of them before
    the first commit), narrowed to ``paths`` (files or folders, relative to ``cwd``)."""
    info = discover(cwd)
    if info is None:
        raise UsageError(f"{cwd} is not inside a git repository — --staged reads the git index; scan files with: open-memex scan PATH…")
    import pygit2

    location = index_path(info.git_dir)
    try:
        repo = pygit2.Repository(str(info.git_dir if os.environ.get("GIT_DIR") else info.workdir))
        index = _open_index(location)
    except pygit2.GitError as exc:
        if "'sdir'" in str(exc):
            raise MemexError("this repository uses a sparse index, which libgit2 cannot read — run `git sparse-checkout "
                             "init --no-sparse-index` (the checkout stays sparse), then commit again") from None  # fmt: skip
        raise MemexError(f"cannot read the git index {location}: {exc} — check the repository with `git status`") from None
    wanted = [_repo_relative(p, cwd, info.workdir) for p in paths]
    entries: list[StagedEntry] = []
    if repo.head_is_unborn:
        candidates = [(e.path, e.id, e.mode) for e in index]
    else:
        tree = repo.head.peel(pygit2.Tree)
        diff = tree.diff_to_index(index)
        # an unmerged path (mid-merge or mid-rebase) has no staged blob yet — git refuses to
        # commit it until it is resolved, and then it is staged and scanned like any other
        candidates = [(d.new_file.path, d.new_file.id, d.new_file.mode) for d in diff.deltas
                      if d.status_char() not in ("D", "U") and int(str(d.new_file.id), 16) != 0]  # fmt: skip
    seen: set[str] = set()
    for path, oid, mode in candidates:
        if mode in _SKIPPED_MODES or path in seen or not _selected(path, wanted):
            continue
        seen.add(path)
        entries.append(StagedEntry(path, str(oid), repo.odb.read_header(oid)[1]))
    return Staged(repo, entries)


def _open_index(location: Path) -> pygit2.Index:
    """``pygit2.Index(path)``, whose ``__del__`` would print a traceback ("Exception ignored
    in …") after a constructor that failed on an unreadable file: the error alone is raised."""
    import pygit2

    class Index(pygit2.Index):
        def __del__(self) -> None:
            if hasattr(self, "_index"):
                super().__del__()

    return Index(str(location))


def _repo_relative(given: str, cwd: Path, workdir: Path) -> str:
    full = Path(os.path.abspath(cwd / given))
    try:
        rel = full.relative_to(workdir.absolute()).as_posix()
    except ValueError:
        raise UsageError(f"{given} is outside the repository {workdir} — --staged scans only this repository's index") from None
    return "" if rel == "." else rel


def _selected(path: str, wanted: list[str]) -> bool:
    if not wanted:
        return True
    return any(not w or path == w or path.startswith(w + "/") for w in wanted)
