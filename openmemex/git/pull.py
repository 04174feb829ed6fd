"""``pull`` and ``push`` (design §9, D12): fetch + fast-forward only; push only when asked.

The fast-forward is done in-process: ``merge_analysis``, then a SAFE checkout and the ref
move under one ref lock (notes/git-and-pygit2.md §2.6), so a local change in the way makes
the checkout refuse and nothing moves. Never merges, never forces.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .. import freshness
from ..context import Context
from ..errors import MemexError
from ..index import SyncStats
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


def _branch_and_upstream(gitrepo: GitRepo) -> tuple[str, str, object]:
    repo = gitrepo.repo
    if repo.head_is_detached:
        raise MemexError("HEAD is detached — switch to a branch first (git switch <branch>); nothing was changed")
    name = gitrepo.branch
    assert name is not None
    local = repo.branches.local.get(name)
    upstream = local.upstream if local is not None else None
    if local is None or upstream is None:
        raise MemexError(
            f"branch {name} has no upstream — set one with `git branch --set-upstream-to=origin/{name}`, "
            "or publish it with `open-memex push`; nothing was changed"
        )
    return name, str(upstream.remote_name), local


def pull(ctx: Context) -> PullReport:
    import pygit2

    gitrepo = open_repo(ctx)
    repo = gitrepo.repo
    name, remote, local = _branch_and_upstream(gitrepo)
    transport = _transport(ctx)
    transport.fetch(gitrepo.workdir, remote)
    local = repo.branches.local[name]
    upstream = local.upstream
    if upstream is None:
        raise MemexError(f"the upstream of {name} disappeared during fetch; nothing was changed")
    old = repo.head.target
    new = upstream.target
    analysis, _ = repo.merge_analysis(new, local.name)
    report = PullReport(name, remote, str(old), str(new), False)
    if analysis & pygit2.enums.MergeAnalysis.UP_TO_DATE:
        report.up_to_date = True
        report.new = report.old
        return report
    if not analysis & pygit2.enums.MergeAnalysis.FASTFORWARD:
        ahead, behind = repo.ahead_behind(old, new)
        raise MemexError(
            f"{name} and {upstream.shorthand} have diverged ({ahead} ahead, {behind} behind); nothing was changed — "
            f"open-memex only fast-forwards: integrate with `git pull --rebase` (or merge), "
            "then run `open-memex resolve` for memory-file conflicts"
        )
    target = repo.get(new)
    assert target is not None
    old_tree = repo.revparse_single(str(old)).peel(pygit2.Tree)
    new_tree = target.peel(pygit2.Tree)
    paths = [d.new_file.path or d.old_file.path for d in old_tree.diff_to_tree(new_tree).deltas]
    _refuse_staged_in_the_way(repo, paths)
    try:
        with repo.transaction() as tx:
            tx.lock_ref(local.name)
            repo.checkout_tree(target, strategy=pygit2.enums.CheckoutStrategy.SAFE)  # type: ignore[no-untyped-call]
            tx.set_target(local.name, new, message=f"pull: Fast-forward {str(old)[:8]}..{str(new)[:8]}")
    except (pygit2.GitError, OSError) as exc:
        text = str(exc)
        if "conflict" in text:
            raise MemexError(
                "local changes (edited or untracked files) would be overwritten by the pull; nothing was changed — "
                "commit or stash them (git stash -u), then pull again"
            ) from None
        raise MemexError(f"the fast-forward failed ({text}); nothing was changed — retry, or use `git pull --ff-only`") from None
    prefix = gitrepo.memory_rel + "/"
    report.files_changed = len(paths)
    report.memory_files_changed = sum(1 for p in paths if p.startswith(prefix))
    report.stats = freshness.sync(ctx, "project", kind="pull")
    return report


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
    if upstream is not None:
        remote = str(upstream.remote_name)
        try:
            merge_ref = str(repo.config[f"branch.{name}.merge"])
        except KeyError:
            merge_ref = f"refs/heads/{name}"
        if merge_ref != f"refs/heads/{name}" and (gitrepo.config_value("push", "default") or "simple") != "upstream":
            raise MemexError(
                f"{name} tracks {upstream.shorthand}, a branch with another name; open-memex pushes only to a "
                f"branch of the same name (as `git push` does) — publish it with `git push -u {remote} {name}`"
            )
    else:
        names = list(repo.remotes.names())
        if not names:
            raise MemexError("this repository has no remote — add one with `git remote add origin <url>`")
        remote = "origin" if "origin" in names else names[0]
        merge_ref = f"refs/heads/{name}"
    transport = _transport(ctx)
    result = transport.push(gitrepo.workdir, remote, local.name, merge_ref)
    set_upstream = False
    if upstream is None:
        _set_upstream(gitrepo, name, remote, merge_ref, str(result.new_target))
        set_upstream = True
    return PushReport(name, remote, str(result.new_target), set_upstream)


def _set_upstream(gitrepo: GitRepo, branch: str, remote: str, merge_ref: str, sha: str) -> None:
    import pygit2

    repo = gitrepo.repo
    tracking = f"refs/remotes/{remote}/{merge_ref.removeprefix('refs/heads/')}"
    if tracking not in repo.references:
        repo.references.create(tracking, pygit2.Oid(hex=sha), force=False)
    repo.config[f"branch.{branch}.remote"] = remote
    repo.config[f"branch.{branch}.merge"] = merge_ref
