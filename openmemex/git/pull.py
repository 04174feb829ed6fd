"""``pull`` and ``push`` (design §9, D12): fetch + fast-forward only; push only when asked.

The fast-forward is done in-process: ``merge_analysis``, then a SAFE checkout and the ref
move under one ref lock (notes/git-and-pygit2.md §2.6), so a local change in the way makes
the checkout refuse and nothing moves. Never merges, never forces.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import freshness
from ..context import Context
from ..errors import MemexError
from ..index import SyncStats
from .objects import file_at
from .repo import GitRepo, open_repo

if TYPE_CHECKING:
    import pygit2

    from .transport import Transport


@dataclass
class PullReport:
    branch: str
    remote: str
    old: str
    new: str
    up_to_date: bool
    files_changed: int = 0
    memory_files_changed: int = 0
    stats: SyncStats | None = None


def _transport(ctx: Context) -> Transport:
    from .transport import get_transport

    return get_transport(str(ctx.config.values.get("sync", {}).get("transport", "auto")))


GIT_DIRECTION_FETCH = 0  # libgit2's git_direction: a refspec's direction


def _branch_and_upstream(gitrepo: GitRepo) -> tuple[str, str, str]:
    """(branch, remote, the upstream's remote-tracking ref) from the branch's config, as git
    reads it: an unborn branch (a clone of an empty repository) has its upstream too."""
    repo = gitrepo.repo
    if repo.head_is_detached:
        raise MemexError("HEAD is detached — switch to a branch first (git switch <branch>); nothing was changed")
    name = gitrepo.branch
    assert name is not None
    remote, merge = (str(repo.config[f"branch.{name}.{key}"]) if f"branch.{name}.{key}" in repo.config else ""
                     for key in ("remote", "merge"))  # fmt: skip
    if remote == ".":
        raise MemexError(f"branch {name} tracks a local branch ({merge.removeprefix('refs/heads/')}); open-memex pulls "
                         "from a remote — use `git merge` (or `git pull`) for it; nothing was changed")  # fmt: skip
    if remote and remote not in repo.remotes.names():
        raise MemexError(f"branch {name} tracks {remote} rather than a named remote — pull it with `git pull`; "
                         "nothing was changed")  # fmt: skip
    if not remote or not merge.startswith("refs/heads/"):
        raise MemexError(
            f"branch {name} has no upstream — set one with `git branch --set-upstream-to=origin/{name}`, "
            "or publish it with `open-memex push`; nothing was changed"
        )
    handle = repo.remotes[remote]
    specs = [handle.get_refspec(n) for n in range(handle.refspec_count)]
    fetched = [s for s in specs if s.direction == GIT_DIRECTION_FETCH]
    # a negative refspec (^refs/heads/x) keeps a branch out of every fetch; libgit2 matches it to nothing
    excluded = any(_glob_matches(str(s.string)[1:], merge) for s in fetched if str(s.string).startswith("^"))
    for spec in fetched:  # where the remote's fetch refspec files the branch
        if excluded or str(spec.string).startswith("^") or ":" not in str(spec.string):
            continue  # no destination: fetched into FETCH_HEAD only
        if spec.src_matches(merge):
            return name, remote, str(spec.transform(merge))
    raise MemexError(f"{remote}'s fetch refspecs do not fetch {merge} into a remote-tracking branch (the upstream of "
                     f"{name}) — check `git config --get-all remote.{remote}.fetch`; nothing was changed")  # fmt: skip


def _glob_matches(pattern: str, ref: str) -> bool:
    """A refspec side as git matches it: one ``*`` stands for any text, else the whole name."""
    if "*" not in pattern:
        return pattern == ref
    head, tail = pattern.split("*", 1)
    return len(ref) >= len(head) + len(tail) and ref.startswith(head) and ref.endswith(tail)


def _refuse_busy(gitrepo: GitRepo) -> None:
    """What ``git pull --ff-only`` refuses before touching a file: another git command
    holding the index (libgit2 writes the work tree first and fails on the index lock only
    after), and a merge, rebase, cherry-pick, revert, ``git am`` or bisect not concluded."""
    from .submit import operation_in_progress

    if (Path(gitrepo.repo.path) / "index.lock").exists():
        raise MemexError(
            "another git command is using this repository (.git/index.lock exists); nothing was changed — "
            "let it finish and pull again (if no git command is running, the lock is stale: remove it)"
        )
    operation = operation_in_progress(gitrepo.repo)
    if operation is not None:
        what, step = operation
        raise MemexError(f"{what} is in progress; nothing was changed — {step}, then pull again")


def pull(ctx: Context) -> PullReport:
    import pygit2

    gitrepo = open_repo(ctx)
    repo = gitrepo.repo
    _refuse_busy(gitrepo)  # first: mid-rebase HEAD is detached, and "switch to a branch" would be harmful advice
    name, remote, tracking = _branch_and_upstream(gitrepo)
    transport = _transport(ctx)
    transport.fetch(gitrepo.workdir, remote)
    ref = f"refs/heads/{name}"
    upstream = repo.references.get(tracking)
    unborn = repo.head_is_unborn
    if upstream is None:
        if unborn:  # nobody has pushed a commit yet: nothing to pull
            return PullReport(name, remote, "", "", True)
        raise MemexError(f"the upstream of {name} ({tracking.removeprefix('refs/remotes/')}) is not on {remote}; "
                         "nothing was changed — check `git branch -vv`")  # fmt: skip
    new = upstream.resolve().target
    old = None if unborn else repo.head.target
    report = PullReport(name, remote, str(old or ""), str(new), False)
    shorthand = tracking.removeprefix("refs/remotes/")
    if old is not None:
        analysis, _ = repo.merge_analysis(new, ref)
        if analysis & pygit2.enums.MergeAnalysis.UP_TO_DATE:
            report.up_to_date = True
            report.new = report.old
            return report
        if not analysis & pygit2.enums.MergeAnalysis.FASTFORWARD:
            ahead, behind = repo.ahead_behind(old, new)
            raise MemexError(
                f"{name} and {shorthand} have diverged ({ahead} ahead, {behind} behind); nothing was changed — "
                f"open-memex only fast-forwards: integrate with `git pull --rebase` (or merge), "
                "then run `open-memex resolve` for memory-file conflicts"
            )
    target = repo.get(new)
    assert target is not None
    new_tree = target.peel(pygit2.Tree)
    if old is None:  # an unborn branch: the fast-forward is from nothing (as `git pull` does)
        paths = [d.new_file.path for d in new_tree.diff_to_tree(swap=True).deltas]
    else:
        old_tree = repo.revparse_single(str(old)).peel(pygit2.Tree)
        paths = [d.new_file.path or d.old_file.path for d in old_tree.diff_to_tree(new_tree).deltas]
    _refuse_staged_in_the_way(repo, paths)
    _refuse_filters(repo, paths, new)
    message = f"pull: Fast-forward {str(old)[:8]}..{str(new)[:8]}" if old is not None else "pull: initial pull"
    pristine = _as_in_head(repo, old, paths)
    try:
        with repo.transaction() as tx:
            tx.lock_ref(ref)
            repo.checkout_tree(target, strategy=pygit2.enums.CheckoutStrategy.SAFE)  # type: ignore[no-untyped-call]
            tx.set_target(ref, new, message=message)
    except (pygit2.GitError, OSError) as exc:
        text = str(exc)
        if "conflict" in text:
            raise MemexError(
                "local changes (edited or untracked files) would be overwritten by the pull; nothing was changed — "
                "commit or stash them (git stash -u), then pull again"
            ) from None
        undone = _undo_checkout(repo, old, pristine)
        state = "nothing was changed" if undone else "some files may already show the upstream's version"
        raise MemexError(f"the fast-forward failed ({text}); {state} — retry, or use `git pull --ff-only`") from None
    prefix = gitrepo.memory_rel + "/"
    report.files_changed = len(paths)
    report.memory_files_changed = sum(1 for p in paths if p.startswith(prefix))
    report.stats = freshness.sync(ctx, "project", kind="pull")
    return report


def _blob(tree: pygit2.Tree | None, rel: str) -> tuple[bytes, int] | None:
    found = file_at(tree, rel, " in HEAD")
    return None if found is None else (found.data, found.mode)


def _tree(repo: pygit2.Repository, commit: object) -> pygit2.Tree | None:
    import pygit2

    return repo.revparse_single(str(commit)).peel(pygit2.Tree) if commit is not None else None


def _as_in_head(repo: pygit2.Repository, old: object, paths: list[str]) -> set[str]:
    """The paths whose work-tree state is HEAD's (the same bytes, or absent from both) before
    the checkout: the only ones it may write, and so the only ones an undo may put back — a
    file the user already changed to the upstream's text is theirs, not the checkout's."""
    workdir = Path(str(repo.workdir))
    old_tree = _tree(repo, old)
    same: set[str] = set()
    for rel in paths:
        file, mine = workdir / rel, _blob(old_tree, rel)
        try:
            if mine is None:
                if not os.path.lexists(file):
                    same.add(rel)
            elif file.is_file() and not file.is_symlink() and file.read_bytes() == mine[0]:
                same.add(rel)
        except OSError:
            continue
    return same


def _undo_checkout(repo: pygit2.Repository, old: object, pristine: set[str]) -> bool:
    """A checkout that failed once it had begun (the index locked meanwhile) may have
    written some of the upstream's files while the branch stayed where it was: each path
    that was as HEAD has it before (``pristine``) and is not now is put back. True when the
    work tree is as it was."""
    import pygit2

    workdir = Path(str(repo.workdir))
    old_tree = _tree(repo, old)
    clean = True
    for rel in sorted(pristine):
        file, mine = workdir / rel, _blob(old_tree, rel)
        try:
            if mine is None:
                if os.path.lexists(file):
                    file.unlink()
                continue
            if file.is_file() and not file.is_symlink() and file.read_bytes() == mine[0]:
                continue
            if os.path.lexists(file) and not file.is_file():
                clean = False  # something else took the path meanwhile: not ours to remove
                continue
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_bytes(mine[0])
            os.chmod(file, 0o755 if mine[1] == pygit2.enums.FileMode.BLOB_EXECUTABLE else 0o644)
        except OSError:
            clean = False
    return clean


def _refuse_staged_in_the_way(repo: pygit2.Repository, paths: list[str]) -> None:
    """A SAFE checkout compares the work tree with HEAD only; a staged change to a file the
    pull would update must stop it too, as ``git pull --ff-only`` does."""
    import pygit2

    staged = (pygit2.enums.FileStatus.INDEX_NEW | pygit2.enums.FileStatus.INDEX_MODIFIED
              | pygit2.enums.FileStatus.INDEX_DELETED | pygit2.enums.FileStatus.INDEX_RENAMED
              | pygit2.enums.FileStatus.INDEX_TYPECHANGE)  # fmt: skip
    blocked = []
    for path in paths:
        try:
            flags = repo.status_file(path)
        except (KeyError, pygit2.GitError):
            continue
        if flags & staged:
            blocked.append(path)
    if blocked:
        raise MemexError(
            f"staged changes to {', '.join(blocked[:3])} would be overwritten by the pull; nothing was changed — "
            "commit them or `git stash`, then pull again"
        )


def _refuse_filters(repo: pygit2.Repository, paths: list[str], new: pygit2.Oid | str) -> None:
    """libgit2 runs no external filters (Git LFS's smudge, any ``filter.<driver>``) and no
    ``working-tree-encoding``: a checkout of such a file writes what the repository stores
    (an LFS pointer, the clean form) where git writes the real content — and the index then
    calls it clean. Refused before a file is touched, with git named to do it."""
    import pygit2

    flags = pygit2.enums.AttrCheck.FILE_THEN_INDEX | pygit2.enums.AttrCheck.INCLUDE_COMMIT
    for path in paths:
        try:
            driver = repo.get_attr(path, "filter", flags, new)
            encoding = repo.get_attr(path, "working-tree-encoding", flags, new)
        except (pygit2.GitError, ValueError):
            continue
        configured = isinstance(driver, str) and any(
            _config(repo, f"filter.{driver}.{kind}") for kind in ("smudge", "process", "clean", "required")
        )  # fmt: skip
        if configured or isinstance(encoding, str):
            what = f"the {driver} filter" if configured else f"working-tree-encoding={encoding}"
            raise MemexError(f"this pull changes {path}, which git converts with {what} (Git LFS works this way) "
                             "and open-memex cannot; nothing was changed — pull with `git pull --ff-only`")  # fmt: skip


@dataclass
class PushReport:
    branch: str
    remote: str
    target: str
    set_upstream: bool


def push(ctx: Context) -> PushReport:
    """Push the current branch; the first push sets its upstream (explicit only, D27)."""
    gitrepo = open_repo(ctx)
    repo = gitrepo.repo
    if repo.head_is_detached or repo.head_is_unborn:
        raise MemexError("nothing to push: HEAD is detached or has no commits — switch to a branch with commits")
    name = gitrepo.branch
    assert name is not None
    local = repo.branches.local[name]
    upstream = local.upstream
    remote = _push_remote(gitrepo, name, None if upstream is None else str(upstream.remote_name))
    merge_ref = f"refs/heads/{name}"
    if upstream is not None and remote == str(upstream.remote_name):
        merge_ref = _config(repo, f"branch.{name}.merge") or merge_ref
        if merge_ref != f"refs/heads/{name}" and (gitrepo.config_value("push", "default") or "simple") != "upstream":
            raise MemexError(
                f"{name} tracks {upstream.shorthand}, a branch with another name; open-memex pushes only to a "
                f"branch of the same name (as `git push` does) — publish it with `git push -u {remote} {name}`"
            )
    if _push_refspecs(repo, remote):
        raise MemexError(
            f"remote.{remote}.push is configured (e.g. refs/for/… for a review server); open-memex pushes a branch "
            f"only to the branch of the same name, which that setting says not to — push with `git push {remote}`"
        )
    transport = _transport(ctx)
    result = transport.push(gitrepo.workdir, remote, local.name, merge_ref)
    set_upstream = False
    if upstream is None:
        _set_upstream(gitrepo, name, remote, merge_ref, str(result.new_target))
        set_upstream = True
    return PushReport(name, remote, str(result.new_target), set_upstream)


def _push_remote(gitrepo: GitRepo, branch: str, upstream_remote: str | None) -> str:
    """Where `git push` would push ``branch``: ``branch.<name>.pushRemote``, then
    ``remote.pushDefault``, then the upstream's remote, then ``origin`` — and, like git,
    nowhere when none of them names a remote this repository has."""
    repo = gitrepo.repo
    names = [str(n) for n in repo.remotes.names()]
    if not names:
        raise MemexError("this repository has no remote — add one with `git remote add origin <url>`")
    chosen = (_config(repo, f"branch.{branch}.pushRemote") or _config(repo, "remote.pushDefault")
              or upstream_remote or ("origin" if "origin" in names else None))  # fmt: skip
    if chosen is None:
        raise MemexError(f"no push destination for {branch}: it has no upstream and there is no remote called origin "
                         f"— push once with `git push -u <remote> {branch}` (remotes: {', '.join(names)})")  # fmt: skip
    if chosen not in names:
        raise MemexError(f"{branch} is set to push to {chosen!r}, which is not a remote of this repository — "
                         f"check `git config --get-regexp 'push|remote'` (remotes: {', '.join(names)})")  # fmt: skip
    return chosen


def _config(repo: Any, key: str) -> str | None:
    try:
        value = str(repo.config[key]).strip()
    except (KeyError, ValueError):
        return None
    return value or None


def _push_refspecs(repo: Any, remote: str) -> list[str]:
    try:
        return [str(v) for v in repo.config.get_multivar(f"remote.{remote}.push")]
    except (KeyError, ValueError):
        return []


def _set_upstream(gitrepo: GitRepo, branch: str, remote: str, merge_ref: str, sha: str) -> None:
    import pygit2

    repo = gitrepo.repo
    tracking = f"refs/remotes/{remote}/{merge_ref.removeprefix('refs/heads/')}"
    if tracking not in repo.references:
        repo.references.create(tracking, pygit2.Oid(hex=sha), force=False)
    repo.config[f"branch.{branch}.remote"] = remote
    repo.config[f"branch.{branch}.merge"] = merge_ref
