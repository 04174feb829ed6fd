"""``resolve`` and the git merge driver: one merge function (``merge3``) for both.

``resolve`` reads index stages 1/2/3 of a conflicted memory file after a real ``git merge``
or ``git rebase``, writes the merged file and stages it with ``index.add`` (which clears the
stages, so ``git commit`` concludes the merge; never ``del conflicts[path]``, never
``state_cleanup()`` — notes/git-and-pygit2.md §2.5). A semantic conflict leaves the file
untouched and exits 3.
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .. import store
from ..context import Context
from ..errors import ConflictError, MemexError, UsageError
from ..memfile import MemoryFileError, parse_memory, serialize
from ..merge3 import MergeOutcome, TextMerge, merge_memories
from .repo import GitRepo, open_repo

if TYPE_CHECKING:
    import pygit2

DRIVER_NAME = "openmemex"
ATTRIBUTE_LINE = f"*.md merge={DRIVER_NAME}"


def side_labels(repo: pygit2.Repository) -> tuple[str, str]:
    """In a rebase, stage 2 is the upstream and stage 3 the commit being replayed."""
    import pygit2

    state = repo.state()
    rebasing = state in (pygit2.enums.RepositoryState.REBASE, pygit2.enums.RepositoryState.REBASE_INTERACTIVE,
                         pygit2.enums.RepositoryState.REBASE_MERGE)  # fmt: skip
    if rebasing:
        return ("upstream (being rebased onto)", "your commit (being replayed)")
    return ("ours (HEAD)", "theirs (being merged)")


def conflicted_memory_files(gitrepo: GitRepo) -> list[str]:
    conflicts = gitrepo.repo.index.conflicts
    if conflicts is None:
        return []
    prefix = gitrepo.memory_rel + "/"
    paths: set[str] = set()
    for ancestor, ours, theirs in conflicts:
        for entry in (ancestor, ours, theirs):
            if entry is not None and entry.path.startswith(prefix) and entry.path.endswith(".md"):
                paths.add(entry.path)
    return sorted(paths)


def text_merger(repo: pygit2.Repository) -> TextMerge:
    """libgit2's line-level merge for bodies both sides changed; None when it conflicts."""
    import pygit2

    def merge(base: str, ours: str, theirs: str) -> str | None:
        entries = [
            pygit2.IndexEntry("body.md", repo.create_blob(text.encode("utf-8")), pygit2.enums.FileMode.BLOB)
            for text in (base, ours, theirs)
        ]
        result = repo.merge_file_from_index(entries[0], entries[1], entries[2])
        if isinstance(result, str) or not result.automergeable:
            return None
        return str(result.contents)

    return merge


@dataclass
class ResolveReport:
    path: str
    outcome: MergeOutcome
    labels: tuple[str, str]
    auto: list[str] = field(default_factory=list)


def _stage_blobs(gitrepo: GitRepo, rel: str) -> tuple[bytes | None, bytes | None, bytes | None]:
    import pygit2

    conflicts = gitrepo.repo.index.conflicts
    if conflicts is None:
        raise MemexError(f"{rel} is not conflicted — nothing to resolve (`open-memex resolve` lists conflicts)")
    try:
        ancestor, ours, theirs = conflicts[rel]
    except KeyError:
        raise MemexError(f"{rel} is not conflicted — nothing to resolve (`open-memex resolve` lists conflicts)") from None

    def data(entry: pygit2.IndexEntry | None) -> bytes | None:
        if entry is None:
            return None
        blob = gitrepo.repo[entry.id]
        assert isinstance(blob, pygit2.Blob)
        return bytes(blob.data)

    return data(ancestor), data(ours), data(theirs)


def _target_path(gitrepo: GitRepo, target: str) -> str:
    candidate = Path(target)
    if candidate.suffix != ".md" and "/" not in target:
        return gitrepo.memory_path(target)
    absolute = candidate if candidate.is_absolute() else (Path.cwd() / candidate)
    try:
        return gitrepo.rel(absolute)
    except ValueError:
        raise UsageError(f"{target} is not inside the repository") from None


def resolve(ctx: Context, target: str) -> ResolveReport:
    gitrepo = open_repo(ctx)
    rel = _target_path(gitrepo, target)
    base_b, ours_b, theirs_b = _stage_blobs(gitrepo, rel)
    labels = side_labels(gitrepo.repo)
    if ours_b is None or theirs_b is None:
        side = labels[0] if ours_b is None else labels[1]
        raise ConflictError(f"{rel}: deleted on {side} and changed on the other side — decide with git (git rm or git add)")
    try:
        base = parse_memory(base_b) if base_b is not None else None
        ours, theirs = parse_memory(ours_b), parse_memory(theirs_b)
    except MemoryFileError as exc:
        raise ConflictError(f"{rel}: a side is not a valid memory file ({exc}); resolve it by hand") from None
    outcome = merge_memories(base, ours, theirs, text_merger(gitrepo.repo), labels)
    report = ResolveReport(rel, outcome, labels, outcome.auto)
    if not outcome.clean:
        return report
    assert outcome.merged is not None
    path = gitrepo.workdir / rel
    store.write_atomic(path, serialize(outcome.merged))
    import pygit2

    idx = gitrepo.repo.index
    idx.read(False)
    try:
        idx.add(rel)
        idx.write()
    except (pygit2.GitError, OSError) as exc:
        raise MemexError(f"merged {rel} but could not stage it ({exc}) — run `git add {rel}`") from None
    ctx.sync("project", kind="request")
    return report


def merge_driver(base_path: str, ours_path: str, theirs_path: str, path: str) -> int:
    """``git merge-file``-style driver: writes the result to OURS; 0 clean, 1 conflict."""
    try:
        base_b = Path(base_path).read_bytes()
        ours_b = Path(ours_path).read_bytes()
        theirs_b = Path(theirs_path).read_bytes()
    except OSError as exc:
        sys.stderr.write(f"open-memex merge-driver: cannot read a side of {path}: {exc}\n")
        return 1
    try:
        base = parse_memory(base_b) if base_b.strip() else None
        ours, theirs = parse_memory(ours_b), parse_memory(theirs_b)
    except MemoryFileError as exc:
        sys.stderr.write(f"open-memex merge-driver: {path}: {exc}; leaving it to git\n")
        return 1
    merger: TextMerge | None = None
    repo = None
    try:
        import pygit2

        repo = pygit2.Repository(str(Path.cwd()))
        merger = text_merger(repo)
    except Exception:  # no repository here: body merges need one side unchanged
        merger = None
    outcome = merge_memories(base, ours, theirs, merger)
    if not outcome.clean:
        sys.stderr.write(f"open-memex: {path}: semantic conflict — " + "; ".join(outcome.conflicts) + "\n")
        sys.stderr.write("  run `open-memex resolve` to see it again, then edit the file and `git add` it\n")
        if repo is not None:  # leave git's usual conflict markers, so neither side is lost from view
            marked = _with_markers(repo, base_b, ours_b, theirs_b)
            if marked is not None:
                store.write_atomic(Path(ours_path), marked)
        return 1
    assert outcome.merged is not None
    store.write_atomic(Path(ours_path), serialize(outcome.merged))
    return 0


def _with_markers(repo: pygit2.Repository, base: bytes, ours: bytes, theirs: bytes) -> str | None:
    import pygit2

    entries = [
        pygit2.IndexEntry("memory.md", repo.create_blob(data), pygit2.enums.FileMode.BLOB)
        for data in (base, ours, theirs)
    ]
    result = repo.merge_file_from_index(entries[0], entries[1], entries[2])
    return None if isinstance(result, str) else str(result.contents)


@dataclass
class SetupReport:
    attributes: Path
    attributes_changed: bool
    driver_set: bool
    driver_kept: str | None  # a foreign driver we refused to replace


def driver_command() -> str:
    return f"{shlex.quote(sys.executable)} -m openmemex merge-driver %O %A %B %P"


def setup_merge_driver(ctx: Context) -> SetupReport:
    """Idempotently write ``<memoryDir>/.gitattributes`` (``*.md merge=openmemex``) and the
    per-clone ``merge.openmemex.driver``; a driver someone else configured is left alone."""
    gitrepo = open_repo(ctx)
    attributes = gitrepo.memory_dir / ".gitattributes"
    lines = attributes.read_text("utf-8").splitlines() if attributes.exists() else []
    changed = False
    if "*.md text eol=lf" not in lines:
        lines.append("*.md text eol=lf")
        changed = True
    if ATTRIBUTE_LINE not in lines:
        lines.append(ATTRIBUTE_LINE)
        changed = True
    if changed:
        attributes.parent.mkdir(parents=True, exist_ok=True)
        store.write_atomic(attributes, "\n".join(lines) + "\n")
    config = gitrepo.repo.config
    key = f"merge.{DRIVER_NAME}.driver"
    wanted = driver_command()
    try:
        current: str | None = str(config[key])
    except KeyError:
        current = None
    kept = None
    driver_set = False
    if current is None:
        config[key] = wanted
        config[f"merge.{DRIVER_NAME}.name"] = "open-memex field-level memory merge"
        driver_set = True
    elif "openmemex" not in current and "git-memex" not in current and "open-memex" not in current:
        kept = str(current)
    elif current != wanted:
        config[key] = wanted
        driver_set = True
    return SetupReport(attributes, changed, driver_set, kept)
