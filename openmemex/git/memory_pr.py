"""The memory files ``check`` judges, gathered from git trees (pygit2) or the work tree.

Three ways in (docs/cli.md, ``check``):

* ``--base REF`` — the memory files added or changed between the merge base of REF and HEAD,
  both read from their trees, never the work tree: what CI checks on a pull request;
* paths — those files as they are on disk, against HEAD's versions: what the pre-commit hook
  passes (pre-commit stashes unstaged changes first, so disk holds what is being committed);
* neither — every memory file in HEAD.

Chains and ids are judged against every memory file on the same side: HEAD's tree, or for
paths the memory folder as the index being committed holds it (a file on disk that was
never staged is not in the commit), with the given files as they are on disk.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..check import CheckInput, Problem
from ..errors import MemexError, UsageError
from ..gitinfo import RepoInfo, discover
from .objects import MissingObject, UnreadableObject, blob_data, file_at, missing

if TYPE_CHECKING:
    import pygit2

FETCH_HINT = "in GitHub Actions check out with `fetch-depth: 0`; elsewhere `git fetch origin <branch>`"


@dataclass
class Gathered:
    pr: CheckInput
    mode: str  # "base", "paths" or "head"
    base: str | None = None  # the merge base's commit id (--base), "HEAD" (paths), or None
    skipped: list[str] = field(default_factory=list)  # given paths that are not memory files


def gather(cwd: Path, memory_dir: str, base_ref: str | None, paths: list[str]) -> Gathered:
    """The check's input for this folder and these arguments (see the module docstring)."""
    info = discover(cwd)
    folder = memory_dir.strip("/")
    if info is None:
        if base_ref is not None or not paths:
            raise UsageError(f"{cwd} is not inside a git repository — run check in a clone, or name the memory files: open-memex check FILE…")
        names, skipped = _given_files(paths, cwd, None)
        read = [(p, _read_disk(Path(cwd, p))) for p in names]
        return Gathered(CheckInput(read, universe=read), "paths", skipped=skipped)
    repo = _open(info)
    if base_ref is not None:
        return _from_base(repo, folder, base_ref, [_relative(p, cwd, info.workdir) for p in paths])
    if paths:
        return _from_disk(repo, info, folder, paths, cwd)
    head = _head_tree(repo)
    try:
        blobs = _folder_blobs(repo, head, folder) if head is not None else {}
        files = [(path, blob_data(repo, oid, path, " in HEAD")) for path, oid in blobs.items()]
    except MissingObject as exc:  # one command for every file, not one run per file
        raise MissingObject(exc.rel, exc.where, f"run `git archive HEAD {shlex.quote(folder)} >/dev/null` so git "
                            "fetches every file check reads") from None  # fmt: skip
    shape = _folder_shape(head, folder) if head is not None else []
    return Gathered(CheckInput(files, universe=files, problems=shape), "head")


def _folder_shape(tree: pygit2.Tree, folder: str) -> list[Problem]:
    """The memory folder must be a real folder in the commit. A symbolic link there (or at a
    parent) is followed by every reader on a checkout, so the files behind it would reach
    agents without any check: the commit fails instead."""
    import pygit2

    current: pygit2.Tree = tree
    walked: list[str] = []
    for part in folder.split("/"):
        walked.append(part)
        try:
            entry = current[part]
        except KeyError:
            return []
        if isinstance(entry, pygit2.Tree):
            current = entry
            continue
        where = "/".join(walked)
        what = "a symbolic link" if entry.filemode == pygit2.enums.FileMode.LINK else "a file"
        return [Problem(where, 1, "memory-folder",
                        f"{where} is {what} in this commit, where the memory folder {folder} must be a real folder "
                        "(readers follow a link, so memories behind it would skip every check)",
                        f"commit {folder} as a folder holding the memory files (git rm the link, git mv the files in)")]  # fmt: skip
    return []


def _open(info: RepoInfo) -> pygit2.Repository:
    import pygit2

    try:
        return pygit2.Repository(str(info.git_dir if os.environ.get("GIT_DIR") else info.workdir))
    except pygit2.GitError as exc:
        raise MemexError(f"cannot open the repository at {info.workdir}: {exc} — check it with `git status`") from None


def _head_tree(repo: pygit2.Repository) -> pygit2.Tree | None:
    import pygit2

    if repo.head_is_unborn:
        return None
    return repo.head.peel(pygit2.Tree)


def _folder_blobs(repo: pygit2.Repository, tree: pygit2.Tree, folder: str) -> dict[str, pygit2.Oid]:
    """``<folder>/<name>.md`` files of a tree (memory files are the folder's direct children)."""
    import pygit2

    try:
        sub = tree[folder]
    except KeyError as exc:
        if isinstance(exc, pygit2.GitError):  # NotFoundError: a folder on the way is not in this clone (tree:0)
            raise missing(folder, None) from None
        return {}
    if not isinstance(sub, pygit2.Tree):
        return {}
    return {f"{folder}/{e.name}": e.id for e in sub if e.name and e.type_str == "blob" and e.filemode != 0o120000
            and e.name.endswith(".md") and not e.name.startswith(".")}  # fmt: skip


def _from_base(repo: pygit2.Repository, folder: str, ref: str, only: list[str]) -> Gathered:
    import pygit2

    if repo.head_is_unborn:
        raise UsageError("HEAD has no commits yet — commit the memory files first, then run check --base")
    head = repo.head.peel(pygit2.Commit)
    try:
        other = repo.revparse_single(ref).peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError):  # InvalidSpecError is both
        raise UsageError(f"unknown --base {ref!r}: no such commit here — {FETCH_HINT}") from None
    try:
        merge_base = repo.merge_base(other.id, head.id)
    except pygit2.GitError as exc:
        raise UsageError(f"cannot find where {ref} and HEAD meet ({exc}) — {FETCH_HINT}") from None
    if merge_base is None:
        raise UsageError(f"{ref} and HEAD share no history — pass the branch this one was started from as --base")
    at_base = f" in {ref} (where it meets HEAD, {str(merge_base)[:8]})"
    quoted = shlex.quote(folder)
    fetch = (f"run `git diff {str(merge_base)[:12]} HEAD -- {quoted} >/dev/null && git archive HEAD {quoted} "
             ">/dev/null` so git fetches every version check --base reads (in CI: fetch in full)")  # fmt: skip
    try:  # every version read here, so a partial clone that lacks some is told once how to fetch them all
        try:
            base_files = _folder_blobs(repo, repo[merge_base].peel(pygit2.Tree), folder)
            head_files = _folder_blobs(repo, head.peel(pygit2.Tree), folder)
        except pygit2.GitError:  # a commit's tree not in this clone (--filter=tree:0)
            raise missing(folder, None, at_base) from None
        wanted = [p for p, oid in head_files.items() if base_files.get(p) != oid and _selected(p, only)]
        universe = {path: blob_data(repo, oid, path, " in HEAD") for path, oid in head_files.items()}
        deleted = [(p, blob_data(repo, oid, p, at_base)) for p, oid in base_files.items()
                   if p not in head_files and _selected(p, only)]  # fmt: skip
        before = {p: blob_data(repo, base_files[p], p, at_base) for p in wanted if p in base_files}
    except MissingObject as exc:
        raise MissingObject(exc.rel, exc.where, fetch) from None

    pr = CheckInput([(p, universe[p]) for p in wanted], before.get, list(universe.items()), deleted,
                    _folder_shape(head.peel(pygit2.Tree), folder), kind="pr")  # fmt: skip
    return Gathered(pr, "base", str(merge_base))


def _from_disk(repo: pygit2.Repository, info: RepoInfo, folder: str, paths: list[str], cwd: Path) -> Gathered:
    files, skipped = _given_files(paths, cwd, info.workdir)
    changed = [(rel, _read_disk(info.workdir / rel)) for rel in files]
    universe = _staged_folder(repo, info, folder)
    if universe is None:  # an index libgit2 cannot read (a sparse index): the folder on disk
        universe = _disk_folder(info.workdir, folder)
    universe.update(changed)
    head = _head_tree(repo)

    def base(path: str) -> bytes | None:
        found = file_at(head, path, " in HEAD")
        return None if found is None else found.data

    return Gathered(CheckInput(changed, base, list(universe.items()), kind="commit"), "paths", "HEAD", skipped)


def _staged_folder(repo: pygit2.Repository, info: RepoInfo, folder: str) -> dict[str, bytes] | None:
    """The memory folder as the commit being made will hold it: its files in the index git
    hands the hook (``GIT_INDEX_FILE``), not on disk, where a replacement that was never
    staged would otherwise satisfy a chain that the commit breaks. None when the index
    cannot be read."""
    import pygit2

    from .staged import _open_index, index_path

    try:
        index = _open_index(index_path(info.git_dir))
    except pygit2.GitError:
        return None
    prefix = f"{folder}/"
    files: dict[str, bytes] = {}
    for entry in index:
        name = entry.path[len(prefix):]
        if (entry.path.startswith(prefix) and "/" not in name and name.endswith(".md") and not name.startswith(".")
                and entry.mode in (0o100644, 0o100755) and entry.path not in files):  # fmt: skip
            try:
                files[entry.path] = blob_data(repo, entry.id, entry.path, " in the index")
            except UnreadableObject:
                continue  # outside a sparse partial clone's cone: not fetched; as before, the commit is not held up
    return files


def _disk_folder(workdir: Path, folder: str) -> dict[str, bytes]:
    memdir = workdir / folder
    try:
        names = sorted(e.name for e in os.scandir(memdir) if e.name.endswith(".md") and not e.name.startswith(".") and e.is_file())
    except OSError:
        names = []
    files: dict[str, bytes] = {}
    for name in names:
        try:
            files[f"{folder}/{name}"] = (memdir / name).read_bytes()
        except OSError:
            continue  # removed meanwhile: not part of what is checked
    return files


def _given_files(paths: list[str], cwd: Path, workdir: Path | None) -> tuple[list[str], list[str]]:
    """The memory files (``*.md``) named or inside named folders — repository-relative inside
    a repository — and the named files that are not memory files."""
    files: list[str] = []
    skipped: list[str] = []
    for given in paths:
        full = Path(os.path.abspath(cwd / given))
        if full.is_dir():
            found = sorted(p for p in full.rglob("*.md") if p.is_file() and not p.name.startswith(".") and ".git" not in p.parts)
        elif full.is_file():
            found = [full] if full.suffix == ".md" and not full.name.startswith(".") else []
            if not found:
                skipped.append(given)
        else:
            raise UsageError(f"no such file or folder: {given} — check the path")
        for path in found:
            shown = _relative(str(path), cwd, workdir) if workdir is not None else os.path.relpath(path, cwd)
            if shown not in files:
                files.append(shown)
    return files, skipped


def _read_disk(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise MemexError(f"cannot read {path}: {exc.strerror} — check its permissions") from None


def _relative(given: str, cwd: Path, workdir: Path) -> str:
    full = Path(os.path.abspath(cwd / given))
    try:
        rel = full.relative_to(workdir).as_posix()
    except ValueError:
        raise UsageError(f"{given} is outside the repository {workdir} — check only this repository's memory files") from None
    return "" if rel == "." else rel


def _selected(path: str, only: list[str]) -> bool:
    return not only or any(not w or path == w or path.startswith(w + "/") for w in only)
