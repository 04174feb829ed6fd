"""``submit``: outbox drafts → ``<memoryDir>/`` as ``proposed``, one commit on the current
branch containing only those files (D26, D36; notes/git-and-pygit2.md §2.3). A named memory
already in ``<memoryDir>/`` that HEAD does not hold as it is (``supersede`` writes a submitted
memory's replacement there) is committed as found, with the memory it replaces when that
file's only change is the supersede pointer (``_take_repository_copy``, ``_take_chain_partners``).

The commit's tree is built from HEAD's tree in a separate in-memory index, so whatever the
user has staged stays staged and out of our commit; ``create_commit("HEAD", …)`` is a
compare-and-swap on the branch tip; afterwards only our paths are refreshed in the real
index. libgit2 runs no hooks: the secret scanner runs here, before anything is written, and
the repository's commit hooks are run as ``git commit --only`` would (``commit_hooks``).

Once the commit exists its files are never deleted again: a locked index only means the
index could not be refreshed, which is reported with the exact repair command and owed to
the next submit (issue 6, item 12). A rebase, cherry-pick, revert, bisect or ``git am`` in
progress refuses the commit; during a merge the commit goes on the branch below the merge,
which then concludes on top of it (item 14).

The commit hooks run between two turns at the project's write lock, not under it (``submit``):
what they saw is checked again before the commit. A submit that makes no commit leaves
nothing behind — not its files, and not a ``--branch`` switch either.
"""

from __future__ import annotations

import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .. import freshness, store
from ..context import Context
from ..errors import LifecycleError, MemexError, UsageError
from ..ids import is_ulid
from ..index import Folder
from ..locks import announce, submit_lane
from ..lookup import rows_for
from ..memfile import MemoryFileError, parse_memory, read_memory, serialize
from ..model import Memory
from ..redact import find_secrets_in_memory_file
from ..review import apply_transition, reviewer
from .commit_hooks import HookRun
from .objects import file_at
from .repo import GITATTRIBUTES, GitRepo, check_memory_folder, ensure_gitattributes, open_repo

if TYPE_CHECKING:
    import pygit2

SUBMITTABLE = ("draft", "rejected", "approved")
SUBJECT_LIMIT = 72  # git's customary subject width; longer submits list their ids in the body only
OWED_REFRESH = "open-memex-index-refresh"  # in the git dir: paths committed but not yet in the index


@dataclass
class SubmitReport:
    branch: str
    commit: str | None = None
    submitted: list[tuple[str, str]] = field(default_factory=list)  # (id, new review_state)
    already: list[str] = field(default_factory=list)
    recovered: list[str] = field(default_factory=list)  # repo copies committed as found (not from the outbox)
    found: dict[str, str] = field(default_factory=dict)  # recovered id → why it was not committed yet
    created_branch: bool = False
    index_refreshed: bool = True
    repair: str | None = None  # the command that makes the index match the commit
    notices: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        return {"branch": self.branch, "commit": self.commit, "created_branch": self.created_branch,
                "submitted": [{"id": i, "review_state": s} for i, s in self.submitted],
                "recovered": self.recovered, "already": self.already,
                "index_refreshed": self.index_refreshed, "repair": self.repair}  # fmt: skip

    def lines(self) -> list[str]:
        """What happened to each id, for every surface (each adds its own next step)."""
        out = [f"submitted {memory_id} [{state}]" for memory_id, state in self.submitted]
        out += [f"committed {memory_id} ({self.found.get(memory_id, 'left uncommitted by an interrupted submit')})"
                for memory_id in self.recovered]  # fmt: skip
        out += [f"already in the repository: {memory_id}" for memory_id in self.already]
        if (self.submitted or self.recovered) and self.commit:
            made = " (new branch)" if self.created_branch else ""
            out.append(f"committed {self.commit[:8]} on {self.branch}{made} — you are still on this branch")
        else:
            out.append("nothing new to commit")
        return out


@dataclass
class CommitResult:
    sha: str
    index_refreshed: bool = True
    made: bool = True  # False: HEAD already held every path as it is


def _signing_required(gitrepo: GitRepo) -> bool:
    value = (gitrepo.config_value("commit", "gpgsign") or "").strip().lower()
    return value in ("true", "yes", "on", "1")


@dataclass
class _Job:
    """One submit between its turns at the project's write lock: what was decided and written
    before the repository's commit hooks ran, checked again before the commit, and undone
    when no commit follows (the files it wrote, a ``--branch`` switch)."""

    report: SubmitReport = field(default_factory=lambda: SubmitReport(branch=""))
    gitrepo: GitRepo | None = None
    plan: list[Memory] = field(default_factory=list)
    leftovers: list[Path] = field(default_factory=list)  # outbox copies whose repo copy already exists
    pending: list[Path] = field(default_factory=list)  # repo copies an interrupted run wrote, never committed
    drafts: dict[Path, bytes] = field(default_factory=dict)  # each planned outbox copy, as read
    created: dict[Path, bytes] = field(default_factory=dict)  # each file this submit wrote, as written
    paths: list[Path] = field(default_factory=list)  # what the commit holds
    staged: Staged | None = None
    message: str = ""
    identity: tuple[pygit2.Signature, pygit2.Signature] | None = None
    head_before: str | pygit2.Oid | None = None  # HEAD's target before --branch switched it
    switched_at: pygit2.Oid | None = None  # the commit HEAD was on when --branch switched it
    head_staged: tuple[object, object] | None = None  # HEAD (ref, commit) when the commit tree was built
    committed: bool = False

    def in_flight(self) -> list[str]:
        return [memory.id for memory in self.plan] + [path.stem for path in self.pending]


def submit(ctx: Context, ids: list[str], branch: str | None = None, allow_unsigned: bool = False,
           verify: bool = True) -> SubmitReport:  # fmt: skip
    """Submit the outbox drafts ``ids`` (module docstring).

    The project's write lock is held while the drafts are read and checked, their copies
    written, and again while the commit is made — but not while the repository's commit
    hooks run: a team's hook may run a test suite, and every add, forget or supersede of the
    project (every agent's) would wait on it, then fail (review 46). Submits of one project
    queue on a lock of their own for the whole run (``locks.submit_lane``), which names the
    ids in flight: no other submit takes their uncommitted copies for an interrupted run's,
    and no supersede, forget, status or promote changes them meanwhile (``lookup.locked``).
    Under the write lock again, what the hooks saw is checked to be what is still there."""
    if not ids:
        raise UsageError("name the drafts to submit: open-memex submit ID [ID…] (see `open-memex sync-status`)")
    lane = submit_lane(ctx.project.key)
    with ctx.lock(lane):
        announce(ctx.root, lane, "submitting to the repository")
        try:
            return _submit_in_lane(ctx, lane, ids, branch, allow_unsigned, verify)
        finally:
            announce(ctx.root, lane, None)


def _submit_in_lane(ctx: Context, lane: str, ids: list[str], branch: str | None, allow_unsigned: bool,
                    verify: bool) -> SubmitReport:  # fmt: skip
    job = _Job()
    hooks: HookRun | None = None
    made = False
    try:
        # the docs' Consistency rule: a supersede or forget of a draft cannot interleave with
        # moving it from the outbox into the repository
        with ctx.lock(ctx.project.key):
            _prepare(ctx, job, ids, branch, allow_unsigned)
            if job.gitrepo is not None and job.staged is not None and not job.staged.empty:
                hooks = HookRun(job.gitrepo, verify)
            slow = hooks is not None and hooks.has_hooks()
            if not slow:  # no hook to run before the commit: one turn at the lock
                made = _finish(ctx, job, job.message)
            else:
                count = len(job.in_flight())
                announce(ctx.root, lane, f"submitting {count} memor{'y' if count == 1 else 'ies'} to the repository, "
                                         "whose commit hooks are running", job.in_flight())  # fmt: skip
        if slow and hooks is not None and job.staged is not None:
            message = hooks.before(job.staged.index, job.message)  # without the project's write lock
            with ctx.lock(ctx.project.key):
                made = _finish(ctx, job, message)
    except BaseException:
        _undo(ctx, job)
        raise
    if made and hooks is not None:
        hooks.after()  # post-commit, its outcome ignored as git ignores it
    return job.report


def _prepare(ctx: Context, job: _Job, ids: list[str], branch: str | None, allow_unsigned: bool) -> None:
    """Validate every id (all-or-nothing), then switch the branch, write the repository
    copies and build the commit's tree — under the project's write lock."""
    import pygit2

    gitrepo = job.gitrepo = open_repo(ctx)
    _refresh_owed(gitrepo)
    freshness.sync(ctx, "project")  # a read: "last sync (submit)" is recorded once a submit went through
    folders = ctx.folders("project")
    report = job.report = SubmitReport(branch=branch or gitrepo.branch or "")
    plan, leftovers, pending = job.plan, job.leftovers, job.pending
    # 1. validate everything before touching anything (all-or-nothing)
    seen: set[str] = set()
    for memory_id in ids:
        rows = rows_for(ctx.conn, memory_id, folders)
        if rows and rows[0]["id"] in seen:
            continue  # named twice (or by its full id and a prefix): one memory, reported once
        seen.update(r["id"] for r in rows[:1])
        if not rows:
            freshness.sync(ctx, "personal")
            if rows_for(ctx.conn, memory_id, ctx.folders("personal")):
                raise MemexError(f"{memory_id} is a personal memory — copy it into the project first: "
                                 f"open-memex propose {memory_id} (memory_propose), then submit the copy")  # fmt: skip
            raise MemexError(f"no project memory with id {memory_id!r} in the outbox — see `open-memex sync-status`")
        locations = {r["location"] for r in rows}
        if "outbox" not in locations:
            _take_repository_copy(ctx, job, gitrepo, str(rows[0]["id"]))
            continue
        row = next(r for r in rows if r["location"] == "outbox")
        try:
            memory = read_memory(Path(row["file_path"]), ctx.project.key)
            as_read = Path(row["file_path"]).read_bytes()
        except (MemoryFileError, OSError) as exc:
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
            leftovers.append(Path(row["file_path"]))
            if _committed(gitrepo, target):
                report.already.append(memory.id)
            else:  # written by an interrupted submit, and perhaps edited since: checked as a draft is
                assert existing is not None
                _check_found_copy(ctx, gitrepo, target, existing, "fix or remove the file, then retry",
                                  "set its review_state back to proposed (or remove the file: the outbox copy is "
                                  "kept), then retry")  # fmt: skip
                pending.append(target)
                report.recovered.append(memory.id)
            continue
        if memory.review_state not in SUBMITTABLE:
            raise LifecycleError(f"{memory.id} is {memory.review_state}; only draft, rejected or approved drafts can be submitted")
        _refuse_unsafe(ctx, str(row["file_path"]), serialize(memory), memory,
                       f"edit the draft (or `open-memex supersede {memory.id} …`) and retry")  # fmt: skip
        plan.append(memory)
        job.drafts[Path(row["file_path"])] = as_read
    _take_chain_partners(ctx, job, gitrepo)
    if not (plan or pending):
        return
    check_memory_folder(gitrepo)
    _check_repository_state(gitrepo, branch, report)
    if _signing_required(gitrepo) and not allow_unsigned:
        raise MemexError(
            "commit.gpgsign is set, but open-memex commits in-process and cannot sign them; nothing was "
            "submitted — re-run with --allow-unsigned to make an unsigned commit"
        )
    repo = gitrepo.repo
    if repo.head_is_detached and branch is None:
        raise MemexError("HEAD is detached — switch to a branch first (git switch <branch>), or pass --branch NAME")
    if branch is not None:
        _check_branch_name(branch)
    job.identity = (gitrepo.signature("AUTHOR"), gitrepo.signature("COMMITTER"))
    if branch is not None:
        job.head_before = repo.references["HEAD"].target
        at = None if repo.head_is_unborn else repo.head.peel(pygit2.Commit).id
        report.created_branch = _switch_to_new_branch(gitrepo, branch)
        report.branch = branch
        if repo.references["HEAD"].target != job.head_before:
            job.switched_at = at
        else:
            job.head_before = None  # already on it: nothing to switch back
    # 2. write the in-repo copies (removed again if no commit is made)
    who = reviewer(ctx, None)
    attributes = gitrepo.memory_dir / ".gitattributes"
    if ensure_gitattributes(gitrepo) is not None:
        job.created[attributes] = attributes.read_bytes()
    for memory in plan:
        new_state = "approved" if memory.review_state == "approved" else "proposed"
        apply_transition(memory, new_state, who, f"submitted to branch {report.branch}")
        path = store.save(memory, gitrepo.memory_dir)
        job.created[path] = path.read_bytes()
        report.submitted.append((memory.id, new_state))
    paths = [p for p in job.created if p != attributes] + pending
    if attributes in job.created or _ours_uncommitted(gitrepo, attributes, report):
        paths.append(attributes)  # ours, never committed (e.g. an interrupted first submit)
    job.paths = paths
    # 3. the commit's tree: HEAD plus only our paths
    job.message = commit_message([p.stem for p in paths if p != attributes])
    job.staged = stage_paths(gitrepo, [gitrepo.rel(p) for p in paths])
    job.head_staged = _head_now(gitrepo)


def _finish(ctx: Context, job: _Job, message: str) -> bool:
    """Under the project's write lock: check that nothing the commit holds changed since the
    tree was built (the hooks ran without the lock), commit, refresh the index, verify, and
    only then remove the outbox copies. True when a new commit was made."""
    report, gitrepo = job.report, job.gitrepo
    made = False
    if job.staged is not None and gitrepo is not None:
        _check_unchanged(gitrepo, job)
        result = commit_staged(gitrepo, job.staged, message, job.identity)
        job.committed, made = True, result.made
        report.commit = result.sha
        rels = [gitrepo.rel(p) for p in job.paths]
        if not result.index_refreshed:
            report.index_refreshed = False
            report.repair = repair_command(gitrepo, rels)
        _verify(gitrepo, report.commit, job.paths)
    # 4. only now remove the outbox copies
    gone: list[Path] = []
    for path in [*job.drafts, *job.leftovers]:
        store.delete(path)
        gone.append(path)
    repo_folder = Folder(gitrepo.memory_dir, "repo", ctx.project.key) if gitrepo is not None else None
    freshness.record(ctx, [(memory, repo_folder) for memory in job.plan if repo_folder is not None], gone)
    freshness.sync(ctx, "project", kind="submit")  # the "last sync … (submit)" of sync-status
    return made


def _head_now(gitrepo: GitRepo) -> tuple[object, object]:
    repo = gitrepo.repo
    return repo.references["HEAD"].target, None if repo.head_is_unborn else repo.head.target


def _check_unchanged(gitrepo: GitRepo, job: _Job) -> None:
    """What the commit holds is still what the tree was built from: HEAD, each path in the
    work tree, each outbox draft. Another git command or a hand edit while the hooks ran
    stops the submit (all-or-nothing) rather than committing what nobody checked."""
    assert job.staged is not None
    again = "nothing was committed; run the submit again"
    if _head_now(gitrepo) != job.head_staged:
        raise MemexError(f"HEAD moved while the repository's commit hooks ran (another git command) — {again}")
    for rel, data in job.staged.data.items():
        if _bytes_of(gitrepo.workdir / rel) != data:
            raise MemexError(f"{rel} changed while the repository's commit hooks ran — {again}")
    for path, data in job.drafts.items():
        if _bytes_of(path) != data:
            raise MemexError(f"the outbox draft {path.stem} changed or went while the repository's commit hooks ran "
                             f"— {again}")  # fmt: skip


def _bytes_of(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def _undo(ctx: Context, job: _Job) -> None:
    """No commit was made: remove the files this submit wrote (while they are as it wrote
    them: an edit is someone's) and switch HEAD back where ``--branch`` found it. Without the
    write lock — the ids are still announced in flight, so nobody else acts on these files."""
    gitrepo = job.gitrepo
    if gitrepo is None or job.committed:
        return
    for path, data in job.created.items():  # once a commit holds a file, it is never deleted (item 12)
        if _bytes_of(path) == data and not _committed(gitrepo, path):
            path.unlink(missing_ok=True)
    if job.head_before is not None:
        _switch_back(ctx, gitrepo, job)


def _switch_back(ctx: Context, gitrepo: GitRepo, job: _Job) -> None:
    """``--branch`` switched HEAD and no commit followed: HEAD goes back where it was, and a
    branch this submit created is deleted while it still points where it was made — "nothing
    was committed" must also mean the next commit lands where it would have (review 46)."""
    import pygit2

    repo = gitrepo.repo
    name = job.report.branch
    try:
        if repo.references["HEAD"].target != f"refs/heads/{name}":
            return  # switched again since: not ours to undo
        made = repo.branches.local.get(name)
        if made is not None and made.target != job.switched_at:
            return  # the branch moved on: a commit is on it
        assert job.head_before is not None
        repo.set_head(job.head_before)
        if job.report.created_branch and made is not None:
            made.delete()
    except (pygit2.GitError, OSError, KeyError) as exc:
        ctx.warn(f"could not switch back from {name} ({exc}) — `git switch -` returns to where you were")


IN_REVIEW = ("proposed", "approved", "rejected")  # where a submitted copy can be before its merge


def _refuse_unsafe(ctx: Context, where: str, text: str, memory: Memory, fix: str) -> None:
    """What never goes into a submit commit: a personal or private memory, or a secret the
    scanner finds in the file as it will be committed."""
    if memory.scope != "project" or memory.visibility == "private":
        what = "a personal memory" if memory.scope != "project" else "visibility: private"
        raise MemexError(f"{where} is {what}, which never leaves this machine — nothing was submitted; {fix}")
    findings = find_secrets_in_memory_file(text, ctx.config.redact_patterns)
    if findings:
        first = findings[0]
        raise MemexError(f"{where}:{first.line}: possible secret ({first.rule}) — nothing was submitted; {fix}")


def _check_found_copy(ctx: Context, gitrepo: GitRepo, target: Path, memory: Memory, fix: str, state_fix: str) -> None:
    """A repository copy no submit of this run wrote, about to be committed as it is: the
    checks a draft gets (libgit2 runs no hook that would catch it), on the file as it is now,
    and a review state a submitted copy can have before its merge."""
    rel = gitrepo.rel(target)
    _refuse_unsafe(ctx, rel, target.read_text("utf-8", errors="replace"), memory, fix)
    if memory.review_state not in IN_REVIEW:  # a submit writes proposed or approved; promote may move on
        raise LifecycleError(f"{rel} is {memory.review_state}, which no review step before the merge leads to — "
                             f"nothing was submitted; {state_fix}")  # fmt: skip


def _found(job: _Job, target: Path, why: str) -> None:
    job.pending.append(target)
    job.report.recovered.append(target.stem)
    job.report.found[target.stem] = why


def _take_repository_copy(ctx: Context, job: _Job, gitrepo: GitRepo, memory_id: str) -> None:
    """A named memory that is only in the repository folder: "already in the repository"
    when HEAD holds the file as it is. Otherwise it is committed as found — ``supersede``
    writes a replacement there, uncommitted — after the checks a draft gets; a superseded
    memory whose only change is the pointer ``supersede`` wrote needs none (``_pointer_only``)."""
    target = gitrepo.memory_dir / f"{memory_id}.md"
    if target in job.pending:
        return
    if not target.is_file() or _committed(gitrepo, target):
        job.report.already.append(memory_id)
        return
    rel = gitrepo.rel(target)
    try:
        memory = read_memory(target, ctx.project.key)
        data = target.read_bytes()
    except (MemoryFileError, OSError) as exc:
        raise MemexError(f"{rel} is unreadable ({exc}); fix it before submitting") from None
    if _pointer_only(ctx, gitrepo, target, memory, data):
        _found(job, target, f"superseded by {memory.superseded_by}")
        return
    why = "changed since its last commit" if _in_head(gitrepo, target) else "never committed"
    _refuse_reviewed_edit(ctx, gitrepo, target, memory, data)
    _check_found_copy(ctx, gitrepo, target, memory, "fix the file, then retry",
                      f"set its review_state back to proposed and retry, or commit the file yourself "
                      f"(git add {shlex.quote(rel)} && git commit)")  # fmt: skip
    _found(job, target, f"in the repository folder, {why}")


def _refuse_reviewed_edit(ctx: Context, gitrepo: GitRepo, target: Path, memory: Memory, data: bytes) -> None:
    """A reviewed memory's text changed in place is no review step: ``check`` refuses it in
    the PR (``reviewed-edit``), so submit does not commit it either — one rule, check's."""
    from ..check import reviewed_edit_problems

    held = _head_bytes(gitrepo, target)
    if held is None:
        return
    try:
        before = parse_memory(held, ctx.project.key)
    except MemoryFileError:
        return
    found = reviewed_edit_problems(gitrepo.rel(target), data.decode("utf-8", errors="replace"), memory, before)
    if found:
        raise LifecycleError(f"{found[0].message} — nothing was submitted; {found[0].fix}")


def _take_chain_partners(ctx: Context, job: _Job, gitrepo: GitRepo) -> None:
    """The memory each committed one replaces (its ``supersedes``), as ``supersede`` left it:
    it goes into the same commit — never a file we did not write — only when HEAD holds it,
    the file's sole change is the pointer ``supersede`` writes to this very successor
    (``_pointer_only``), and no other version of it is staged. Any other change to it is the
    user's: left out, with the next step named; so is a chain partner that was never committed."""
    going = {memory.id for memory in job.plan} | {path.stem for path in job.pending}
    members = list(job.plan)
    for path in list(job.pending):
        try:
            members.append(read_memory(path, ctx.project.key))
        except MemoryFileError:
            continue  # checked above; one that went meanwhile is caught before the commit
    for member in members:
        for partner, role in ((member.supersedes, "replaces"), (member.superseded_by, "is replaced by")):
            if not partner or partner in going:
                continue
            path = gitrepo.memory_dir / f"{partner}.md"
            rel = gitrepo.rel(path)
            if not path.is_file():
                continue
            if _committed(gitrepo, path):
                if role == "replaces" and not _points_to(ctx, path, member.id):
                    raise LifecycleError(
                        f"{member.id} replaces {partner}, but {rel} does not say so (a supersede that did not finish) — "
                        f"nothing was submitted; set `status: superseded` and `superseded_by: {member.id}` in {rel}, "
                        f"or forget {member.id}, then retry"
                    )
                continue
            if not _in_head(gitrepo, path):
                job.report.notices.append(f"{member.id} {role} {partner}, which is not committed either — "
                                          f"submit it too: open-memex submit {partner}")  # fmt: skip
                continue
            if role != "replaces":
                continue  # a committed replacement already points back; what else changed there is not ours
            if _ours_to_chain(ctx, gitrepo, path, member.id):
                _found(job, path, f"superseded by {member.id}")
                going.add(partner)
                continue
            job.report.notices.append(f"{rel} (which {member.id} replaces) has changes besides its supersede pointer, or "
                                      "another version staged — left out of the submit commit; commit it yourself "
                                      f"(git add {shlex.quote(rel)} && git commit)")  # fmt: skip


def _points_to(ctx: Context, path: Path, successor: str) -> bool:
    try:
        return read_memory(path, ctx.project.key).superseded_by == successor
    except MemoryFileError:
        return True  # unreadable: check reports it; not this refusal's business


def _ours_to_chain(ctx: Context, gitrepo: GitRepo, path: Path, successor: str) -> bool:
    """Whether ``path`` is the memory ``successor`` replaced, changed against HEAD by nothing
    but that supersede, and staged (if at all) as HEAD or the work tree has it."""
    import pygit2

    try:
        memory = read_memory(path, ctx.project.key)
        data = path.read_bytes()
        idx = gitrepo.repo.index
        idx.read(False)
        rel = gitrepo.rel(path)
        staged = idx[rel].id if rel in idx else None
        held = gitrepo.repo.head.peel(pygit2.Commit).tree[rel].id
    except (MemoryFileError, OSError, pygit2.GitError, KeyError):
        return False
    return memory.superseded_by == successor and staged in (held, pygit2.hash(data)) and \
        _pointer_only(ctx, gitrepo, path, memory, data)


def _pointer_only(ctx: Context, gitrepo: GitRepo, path: Path, memory: Memory, data: bytes) -> bool:
    """Whether the file differs from HEAD's copy only as ``supersede`` rewrites the memory it
    replaces: ``status: superseded``, ``superseded_by`` and ``updated_at`` — HEAD's copy with
    those three values set, written as every rewrite writes it, is the file byte for byte."""
    if memory.status != "superseded" or not memory.superseded_by:
        return False
    held = _head_bytes(gitrepo, path)
    if held is None:
        return False
    try:
        before = parse_memory(held, ctx.project.key)
    except MemoryFileError:
        return False
    if before.id != memory.id:
        return False
    before.status, before.superseded_by, before.updated_at = memory.status, memory.superseded_by, memory.updated_at
    return serialize(before).encode("utf-8") == data


def _head_bytes(gitrepo: GitRepo, path: Path) -> bytes | None:
    """HEAD's copy of ``path``, None when HEAD holds none."""
    import pygit2

    repo = gitrepo.repo
    if repo.head_is_unborn:
        return None
    found = file_at(repo.head.peel(pygit2.Tree), gitrepo.rel(path), " in HEAD")
    return None if found is None else found.data


def _committed(gitrepo: GitRepo, path: Path) -> bool:
    """Whether HEAD already holds exactly this file."""
    if not path.exists():
        return False
    held = _head_bytes(gitrepo, path)
    return held is not None and held == path.read_bytes()


def _in_head(gitrepo: GitRepo, path: Path) -> bool:
    import pygit2

    if gitrepo.repo.head_is_unborn:
        return False
    try:
        gitrepo.repo.head.peel(pygit2.Commit).tree[gitrepo.rel(path)]
    except KeyError:
        return False
    return True


def _ours_uncommitted(gitrepo: GitRepo, attributes: Path, report: SubmitReport) -> bool:
    """A ``<memoryDir>/.gitattributes`` HEAD does not hold goes into our commit only when it
    is ours: nothing in it but the lines ``setup`` and submit write, and no other version of
    it staged. A user's own file (or one with their lines, or staged apart from the work
    tree) is theirs to commit: left alone, and said so."""
    import pygit2

    from .resolve import ATTRIBUTE_LINE

    if not attributes.exists() or _in_head(gitrepo, attributes):
        return False
    rel = gitrepo.rel(attributes)
    try:
        data = attributes.read_bytes()
        staged = gitrepo.repo.index[rel].id if rel in gitrepo.repo.index else None
    except (OSError, pygit2.GitError):
        return False
    lines = {line.strip() for line in data.splitlines() if line.strip()}
    ours = lines <= {GITATTRIBUTES.strip().encode(), ATTRIBUTE_LINE.encode()}
    if ours and (staged is None or staged == pygit2.hash(data)):
        return True
    report.notices.append(f"{rel} is not open-memex's alone (lines of yours, or staged apart from the file) — "
                          "left out of the submit commit; commit it yourself")  # fmt: skip
    return False


def _check_branch_name(name: str) -> None:
    import pygit2

    if name.startswith("-") or not pygit2.reference_is_valid_name(f"refs/heads/{name}"):
        raise UsageError(f"{name!r} is not a valid branch name")


def commit_message(ids: list[str]) -> str:
    """``mem: submit N memories for review (<id8> …)``; the short ids only while the subject
    fits SUBJECT_LIMIT (3,000 drafts made a 27 KB subject); every full id is in the body."""
    count = len(ids)
    subject = f"mem: submit {count} memor{'y' if count == 1 else 'ies'} for review"
    with_ids = f"{subject} ({' '.join(i[:8] for i in ids)})"
    if len(with_ids) <= SUBJECT_LIMIT:
        subject = with_ids
    return subject + "\n\n" + "\n".join(ids) + "\n"


def repair_command(gitrepo: GitRepo, rel_paths: list[str]) -> str:
    return "git reset -q -- " + " ".join(shlex.quote(rel) for rel in rel_paths)


def commit_paths(gitrepo: GitRepo, rel_paths: list[str], message: str,
                 identity: tuple[pygit2.Signature, pygit2.Signature] | None = None,
                 verify: bool = True) -> CommitResult:  # fmt: skip
    """Commit exactly ``rel_paths`` (as in the work tree) on top of HEAD, the repository's
    commit hooks around it (``stage_paths``, ``commit_staged``)."""
    staged = stage_paths(gitrepo, rel_paths)
    if staged.empty:
        return commit_staged(gitrepo, staged, message, identity)
    hooks = HookRun(gitrepo, verify)
    message = hooks.before(staged.index, message)  # the team's pre-commit and commit-msg may refuse it
    result = commit_staged(gitrepo, staged, message, identity)
    hooks.after()
    return result


@dataclass
class Staged:
    """What a commit of ``rel_paths`` holds: HEAD's tree plus those files as they were read
    (``data``), in an index of its own (the real one is never touched)."""

    rel_paths: list[str]
    index: pygit2.Index
    tree: pygit2.Oid
    parents: list[pygit2.Oid]
    data: dict[str, bytes]
    empty: bool  # HEAD already holds every path as it is: nothing to commit


def stage_paths(gitrepo: GitRepo, rel_paths: list[str]) -> Staged:
    """The commit's tree, built from HEAD's in a separate in-memory index. Only our own files
    are ever committed: ``<memoryDir>/<ULID>.md`` and ``<memoryDir>/.gitattributes`` — never a
    temp file a killed writer left behind, nor anything else in the folder (item 16)."""
    import pygit2

    for rel in rel_paths:
        folder, _, name = rel.rpartition("/")
        own = name == ".gitattributes" or (name.endswith(".md") and is_ulid(name[:-3]))
        if folder != gitrepo.memory_rel or not own:
            raise MemexError(f"submit commits only memory files (<memoryDir>/<id>.md), not {rel!r}; nothing was committed")
    repo = gitrepo.repo
    unborn = repo.head_is_unborn
    tmp = pygit2.Index()
    parents: list[pygit2.Oid] = []
    if not unborn:
        head = repo.head.peel(pygit2.Commit)
        tmp.read_tree(head.tree)
        parents = [head.id]
    data: dict[str, bytes] = {}
    for rel in rel_paths:
        parts = rel.split("/")
        for depth in range(1, len(parts)):
            prefix = "/".join(parts[:depth])
            if prefix in tmp:  # HEAD has a file or a link where a folder of ours goes: never replaced
                raise MemexError(f"{prefix} is a file or link in HEAD where {rel} would go — a commit would "
                                 "replace it; nothing was committed")  # fmt: skip
        data[rel] = (gitrepo.workdir / rel).read_bytes()
        blob = repo.create_blob_fromworkdir(rel)
        tmp.add(pygit2.IndexEntry(rel, blob, pygit2.enums.FileMode.BLOB))
    tree = tmp.write_tree(repo)
    empty = not unborn and tree == repo.head.peel(pygit2.Commit).tree.id
    return Staged(rel_paths, tmp, tree, parents, data, empty)


def commit_staged(gitrepo: GitRepo, staged: Staged, message: str,
                  identity: tuple[pygit2.Signature, pygit2.Signature] | None = None) -> CommitResult:  # fmt: skip
    """Make the commit of ``staged`` (its hooks already run), a compare-and-swap on the branch
    tip, then refresh only its paths in the real index."""
    import pygit2

    repo = gitrepo.repo
    rel_paths = staged.rel_paths
    if staged.empty:
        return CommitResult(str(repo.head.target), _refresh_index(gitrepo, rel_paths), made=False)
    author, committer = identity or (gitrepo.signature("AUTHOR"), gitrepo.signature("COMMITTER"))
    # owed before the commit exists: a process killed between the commit and the index refresh
    # (kill -9, a power cut) leaves the index without our files, and the next `git commit -a`
    # would delete them; the next submit pays the debt (only where HEAD holds the work tree's file)
    _owe(gitrepo, rel_paths)
    try:
        oid = repo.create_commit("HEAD", author, committer, message, staged.tree, staged.parents)
    except (pygit2.GitError, OSError) as exc:
        _paid(gitrepo, rel_paths)
        raise MemexError(
            f"could not commit ({exc}) — the branch moved or is locked by another git command; "
            "nothing was committed, run the command again"
        ) from None
    return CommitResult(str(oid), _refresh_index(gitrepo, rel_paths))


def _refresh_index(gitrepo: GitRepo, rel_paths: list[str], attempts: int = 20) -> bool:
    """Make the index match the commit for ``rel_paths``; False (and the debt recorded for the
    next submit) when another git command holds the index lock throughout."""
    import pygit2

    for attempt in range(attempts):
        try:
            idx = gitrepo.repo.index
            idx.read(False)  # never write back a stale index (notes §2.10)
            for rel in rel_paths:
                idx.add(rel)
            idx.write()
            _paid(gitrepo, rel_paths)
            return True
        except (pygit2.GitError, OSError):
            if attempt < attempts - 1:
                time.sleep(0.05)
    _owe(gitrepo, rel_paths)
    return False


def owed_refresh(gitrepo: GitRepo) -> list[str]:
    """The paths a submit committed whose index entries may not have been refreshed yet."""
    try:
        text = (Path(gitrepo.repo.path) / OWED_REFRESH).read_text("utf-8", errors="replace")
    except OSError:
        return []
    return [line for line in text.splitlines() if line.strip()]


def _owe(gitrepo: GitRepo, rel_paths: list[str]) -> None:
    path = Path(gitrepo.repo.path) / OWED_REFRESH
    try:
        owed = set(owed_refresh(gitrepo))
        if not set(rel_paths) <= owed:
            store.write_atomic(path, "".join(f"{rel}\n" for rel in sorted(owed | set(rel_paths))))
    except (OSError, MemexError):
        pass  # the warning already names the repair command


def _paid(gitrepo: GitRepo, rel_paths: list[str]) -> None:
    """``rel_paths`` are in the index now: off the debt (the file goes when nothing is owed)."""
    path = Path(gitrepo.repo.path) / OWED_REFRESH
    owed = owed_refresh(gitrepo)
    left = [rel for rel in owed if rel not in set(rel_paths)]
    if len(left) == len(owed) and path.exists() == bool(owed):
        return
    try:
        if left:
            store.write_atomic(path, "".join(f"{rel}\n" for rel in left))
        else:
            path.unlink(missing_ok=True)
    except (OSError, MemexError):
        pass  # a debt left behind is paid by the next submit, where HEAD still holds the file


def _refresh_owed(gitrepo: GitRepo) -> None:
    """Refresh index entries an earlier submit committed while the index was locked — only
    where HEAD still holds the file and the work tree still equals it."""
    owed = owed_refresh(gitrepo)
    if not owed:
        return
    due = stale_in_index(gitrepo, owed)
    if due is None or (due and not _refresh_index(gitrepo, due, attempts=3)):
        return
    _paid(gitrepo, owed)


def stale_in_index(gitrepo: GitRepo, owed: list[str] | None = None) -> list[str] | None:
    """The owed paths whose index entry still differs from HEAD while HEAD holds exactly the
    work tree's file (what the refresh would fix; anything else the user changed since);
    None when the index cannot be read now."""
    import pygit2

    owed = owed_refresh(gitrepo) if owed is None else owed
    repo = gitrepo.repo
    due: list[str] = []
    if not repo.head_is_unborn:
        tree = repo.head.peel(pygit2.Commit).tree
        try:
            idx = repo.index
            idx.read(False)
        except (pygit2.GitError, OSError):
            return None
        for rel in owed:
            found = file_at(tree, rel, " in HEAD")
            try:
                data = (gitrepo.workdir / rel).read_bytes()
            except OSError:
                continue
            if found is None or found.data != data:
                continue
            try:
                current = idx[rel].id
            except KeyError:
                current = None
            if current != found.id:
                due.append(rel)
    return due


_OPERATIONS: dict[str, tuple[str, str]] = {
    # state → (what, the next step)
    "MERGE": ("a merge", "finish it (git commit) or abort it (git merge --abort)"),
    "REVERT": ("a revert", "finish it (git revert --continue) or abort it (git revert --abort)"),
    "CHERRYPICK": ("a cherry-pick", "finish it (git cherry-pick --continue) or abort it (git cherry-pick --abort)"),
    "BISECT": ("a bisect", "end it (git bisect reset)"),
    "REBASE": ("a rebase", "finish it (git rebase --continue) or abort it (git rebase --abort)"),
    "APPLY_MAILBOX": ("a `git am`", "finish it (git am --continue) or abort it (git am --abort)"),
    "APPLY_MAILBOX_OR_REBASE": ("a `git am` or rebase",
                                "finish it (git am --continue / git rebase --continue) or abort it"),
}  # fmt: skip


def operation_in_progress(repo: pygit2.Repository) -> tuple[str, str] | None:
    """(what, next step) for a git operation in progress, None when the repository is clean."""
    import pygit2

    state = repo.state()
    if state == pygit2.enums.RepositoryState.NONE:
        return _sequence_in_progress(Path(repo.path))
    name = state.name.removesuffix("_SEQUENCE")
    if name.startswith("REBASE"):
        name = "REBASE"
    return _OPERATIONS.get(name, (f"a git operation ({state.name.lower()})", "finish or abort it"))


def _sequence_in_progress(git_dir: Path) -> tuple[str, str] | None:
    """A ``git cherry-pick A B`` or ``git revert A B`` paused between its picks: once the
    conflicted pick is committed, ``CHERRY_PICK_HEAD``/``REVERT_HEAD`` are gone and libgit2
    sees a clean repository, but ``sequencer/`` still holds the rest (and ``--abort`` rewinds
    to where the sequence began: a commit of ours on top would be lost or refused)."""
    sequencer = git_dir / "sequencer"
    if not sequencer.is_dir():
        return None
    try:
        first = (sequencer / "todo").read_text("utf-8", errors="replace").split(maxsplit=1)
    except OSError:
        first = []
    verb = first[0] if first else ""
    if verb in ("revert", "v"):
        return _OPERATIONS["REVERT"]
    if verb in ("pick", "p"):
        return _OPERATIONS["CHERRYPICK"]
    return ("a cherry-pick or revert sequence",
            "finish it (git cherry-pick --continue / git revert --continue) or abort it (--abort)")  # fmt: skip


def _check_repository_state(gitrepo: GitRepo, branch: str | None, report: SubmitReport) -> None:
    """``--branch`` would carry the operation onto the new branch: refused in every state.
    A plain commit would change what an abort of a rebase, cherry-pick, revert or ``git am``
    rewinds to (and a bisect's branch): refused. During a merge it is safe: the commit goes
    on the branch, the merge's staged changes stay out of it, and ``git commit`` (or ``git
    merge --abort``) then works as usual on top of it (item 14)."""
    operation = operation_in_progress(gitrepo.repo)
    if operation is None:
        return
    what, step = operation
    if branch is not None or what != "a merge":
        raise MemexError(f"{what} is in progress — {step}, then re-run")
    report.notices.append(
        f"a merge is in progress — the submit commit goes on {report.branch} below it; "
        "conclude the merge as usual (git commit)"
    )


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
        found = file_at(tree, rel, f" in commit {commit[:8]}")
        if found is None:
            raise MemexError(f"verification failed: {rel} is not in commit {commit[:8]}")
        if found.data != path.read_bytes():
            raise MemexError(f"verification failed: {rel} in commit {commit[:8]} differs from the file")
