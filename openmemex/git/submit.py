"""``submit``: outbox drafts → ``<memoryDir>/`` as ``proposed``, one commit on the current
branch containing only those files (D26, D36; notes/git-and-pygit2.md §2.3).

The commit's tree is built from HEAD's tree in a separate in-memory index, so whatever the
user has staged stays staged and out of our commit; ``create_commit("HEAD", …)`` is a
compare-and-swap on the branch tip; afterwards only our paths are refreshed in the real
index. libgit2 runs no hooks, so the secret scanner runs here, before anything is written.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .. import index, store
from ..context import Context
from ..errors import LifecycleError, MemexError, UsageError
from ..index import Folder
from ..lookup import rows_for
from ..memfile import MemoryFileError, read_memory, serialize
from ..model import Memory
from ..redact import find_secrets
from ..review import apply_transition, default_reviewer
from .repo import GitRepo, ensure_gitattributes, open_repo

if TYPE_CHECKING:
    import pygit2

SUBMITTABLE = ("draft", "rejected", "approved")


@dataclass
class SubmitReport:
    branch: str
    commit: str | None = None
    submitted: list[tuple[str, str]] = field(default_factory=list)  # (id, new review_state)
    already: list[str] = field(default_factory=list)
    created_branch: bool = False


def _signing_required(gitrepo: GitRepo) -> bool:
    value = (gitrepo.config_value("commit", "gpgsign") or "").strip().lower()
    return value in ("true", "yes", "on", "1")


def submit(ctx: Context, ids: list[str], branch: str | None = None, allow_unsigned: bool = False) -> SubmitReport:
    if not ids:
        raise UsageError("name the drafts to submit: open-memex submit ID [ID…] (see `open-memex sync-status`)")
    gitrepo = open_repo(ctx)
    ctx.sync("project", kind="submit")
    folders = ctx.folders("project")
    outbox = next(f for f in folders if f.location == "outbox")
    repo_folder = Folder(gitrepo.memory_dir, "repo", ctx.project.key)
    # 1. validate everything before touching anything (all-or-nothing)
    plan: list[Memory] = []
    leftovers: list[Path] = []  # outbox copies whose repo copy already exists (an interrupted run)
    pending: list[Path] = []  # repo copies written by an interrupted run but never committed
    report = SubmitReport(branch=branch or gitrepo.branch or "")
    for memory_id in ids:
        rows = rows_for(ctx.conn, memory_id, folders)
        if not rows:
            raise MemexError(f"no project memory with id {memory_id!r} in the outbox — see `open-memex sync-status`")
        locations = {r["location"] for r in rows}
        if "outbox" not in locations:
            report.already.append(rows[0]["id"])
            continue
        row = next(r for r in rows if r["location"] == "outbox")
        try:
            memory = read_memory(Path(row["file_path"]), ctx.project.key)
        except MemoryFileError as exc:
            raise MemexError(f"{row['file_path']} is unreadable ({exc}); fix it before submitting") from None
        target = gitrepo.memory_dir / f"{memory.id}.md"
        if target.exists():
            try:
                existing = read_memory(target, ctx.project.key)
            except MemoryFileError:
                existing = None
            if existing is None or existing.body != memory.body:
                raise MemexError(
                    f"{gitrepo.rel(target)} already exists with different content — nothing was submitted; "
                    f"compare it with `open-memex show {memory.id}` and supersede instead"
                )
            # the repo copy wins (it may have moved on in review); never rewrite it
            report.already.append(memory.id)
            leftovers.append(Path(row["file_path"]))
            if not _committed(gitrepo, target):
                pending.append(target)
            continue
        if memory.review_state not in SUBMITTABLE:
            raise LifecycleError(f"{memory.id} is {memory.review_state}; only draft, rejected or approved drafts can be submitted")
        findings = find_secrets(serialize(memory), ctx.config.redact_patterns)
        if findings:
            first = findings[0]
            raise MemexError(
                f"{row['file_path']}:{first.line}: possible secret ({first.rule}) — nothing was submitted; "
                f"edit the draft (or `open-memex supersede {memory.id} …`) and retry"
            )
        plan.append(memory)
    if plan or pending:
        if _signing_required(gitrepo) and not allow_unsigned:
            raise MemexError(
                "commit.gpgsign is set, but open-memex commits in-process and cannot sign them; nothing was "
                "submitted — re-run with --allow-unsigned to make an unsigned commit"
            )
        if gitrepo.repo.head_is_detached and branch is None:
            raise MemexError("HEAD is detached — switch to a branch first (git switch <branch>), or pass --branch NAME")
        if branch is not None:
            _check_branch_name(branch)
        identity = (gitrepo.signature("AUTHOR"), gitrepo.signature("COMMITTER"))
        if branch is not None:
            report.created_branch = _switch_to_new_branch(gitrepo, branch)
            report.branch = branch
        # 2. write the in-repo copies (removed again if the commit fails)
        who = default_reviewer(ctx)
        created: list[Path] = []
        try:
            attributes = gitrepo.memory_dir / ".gitattributes"
            if ensure_gitattributes(gitrepo) is not None:
                created.append(attributes)
            for memory in plan:
                new_state = "approved" if memory.review_state == "approved" else "proposed"
                apply_transition(memory, new_state, who, f"submitted to branch {report.branch}")
                created.append(store.save(memory, gitrepo.memory_dir))
                report.submitted.append((memory.id, new_state))
            paths = [p for p in created if p != attributes] + pending
            if attributes.exists() and not _in_head(gitrepo, attributes):
                paths.append(attributes)  # ours, never committed (e.g. an interrupted first submit)
            # 3. commit only our paths, then refresh only them in the real index
            ids_text = " ".join(p.stem[:8] for p in paths if p != attributes)
            count = len(paths) - (attributes in paths)
            message = f"mem: submit {count} memor{'y' if count == 1 else 'ies'} for review ({ids_text})"
            report.commit = commit_paths(gitrepo, [gitrepo.rel(p) for p in paths], message, identity)
            _verify(gitrepo, report.commit, paths)
        except BaseException:
            for path in created:
                path.unlink(missing_ok=True)
            raise
    # 4. only now remove the outbox copies
    gone: list[Path] = []
    for memory in plan:
        outbox_path = outbox.path / f"{memory.id}.md"
        store.delete(outbox_path)
        gone.append(outbox_path)
    for path in leftovers:
        store.delete(path)
        gone.append(path)
    index.apply_changes(ctx.conn, [(memory, repo_folder) for memory in plan], gone)
    return report


def _committed(gitrepo: GitRepo, path: Path) -> bool:
    """Whether HEAD already holds exactly this file."""
    import pygit2

    repo = gitrepo.repo
    if repo.head_is_unborn or not path.exists():
        return False
    try:
        entry = repo.head.peel(pygit2.Commit).tree[gitrepo.rel(path)]
    except KeyError:
        return False
    blob = repo[entry.id]
    return isinstance(blob, pygit2.Blob) and blob.data == path.read_bytes()


def _in_head(gitrepo: GitRepo, path: Path) -> bool:
    import pygit2

    if gitrepo.repo.head_is_unborn:
        return False
    try:
        gitrepo.repo.head.peel(pygit2.Commit).tree[gitrepo.rel(path)]
    except KeyError:
        return False
    return True


def _check_branch_name(name: str) -> None:
    import pygit2

    if name.startswith("-") or not pygit2.reference_is_valid_name(f"refs/heads/{name}"):
        raise UsageError(f"{name!r} is not a valid branch name")


def commit_paths(gitrepo: GitRepo, rel_paths: list[str], message: str,
                 identity: tuple[pygit2.Signature, pygit2.Signature] | None = None) -> str:  # fmt: skip
    """Commit exactly ``rel_paths`` (as in the work tree) on top of HEAD; returns the sha."""
    import pygit2

    repo = gitrepo.repo
    unborn = repo.head_is_unborn
    tmp = pygit2.Index()
    parents: list[pygit2.Oid] = []
    if not unborn:
        head = repo.head.peel(pygit2.Commit)
        tmp.read_tree(head.tree)
        parents = [head.id]
    for rel in rel_paths:
        blob = repo.create_blob_fromworkdir(rel)
        tmp.add(pygit2.IndexEntry(rel, blob, pygit2.enums.FileMode.BLOB))
    tree = tmp.write_tree(repo)
    if not unborn and tree == repo.head.peel(pygit2.Commit).tree.id:
        return str(repo.head.target)
    author, committer = identity or (gitrepo.signature("AUTHOR"), gitrepo.signature("COMMITTER"))
    try:
        oid = repo.create_commit("HEAD", author, committer, message, tree, parents)
    except (pygit2.GitError, OSError) as exc:
        raise MemexError(
            f"could not commit ({exc}) — the branch moved or is locked by another git command; "
            "nothing was committed, run the command again"
        ) from None
    _refresh_index(repo, rel_paths)
    return str(oid)


def _refresh_index(repo: object, rel_paths: list[str]) -> None:
    import pygit2

    assert isinstance(repo, pygit2.Repository)
    for attempt in range(20):
        try:
            idx = repo.index
            idx.read(False)  # never write back a stale index (notes §2.10)
            for rel in rel_paths:
                idx.add(rel)
            idx.write()
            return
        except (pygit2.GitError, OSError):
            if attempt == 19:
                raise MemexError(
                    "committed, but the git index is locked by another git command — run `git status`; "
                    "`git reset -q -- .ai/open-memex` makes the index match the commit"
                ) from None
            time.sleep(0.05)


def _switch_to_new_branch(gitrepo: GitRepo, name: str) -> bool:
    """``--branch``: create NAME at HEAD and switch to it, or switch to it if it exists and
    points at HEAD. Only ever on request (D36)."""
    import pygit2

    repo = gitrepo.repo
    if gitrepo.branch == name:
        return False
    existing = repo.branches.local.get(name)
    if repo.head_is_unborn:
        repo.set_head(f"refs/heads/{name}")
        return True
    head_commit = repo.head.peel(pygit2.Commit)
    if existing is not None:
        if existing.target != head_commit.id:
            raise MemexError(f"branch {name} exists and points elsewhere — switch to it yourself (git switch {name}) and re-run")
        repo.set_head(existing.name)
        return False
    created = repo.branches.local.create(name, head_commit)
    repo.set_head(created.name)
    return True


def _verify(gitrepo: GitRepo, commit: str | None, written: list[Path]) -> None:
    import pygit2

    repo = gitrepo.repo
    if commit is None:
        raise MemexError("the submit commit was not created")
    tree = repo.revparse_single(commit).peel(pygit2.Tree)
    for path in written:
        rel = gitrepo.rel(path)
        try:
            entry = tree[rel]
        except KeyError:
            raise MemexError(f"verification failed: {rel} is not in commit {commit[:8]}") from None
        blob = repo[entry.id]
        if not isinstance(blob, pygit2.Blob) or blob.data != path.read_bytes():
            raise MemexError(f"verification failed: {rel} in commit {commit[:8]} differs from the file")
