"""Git commands: submit, pull, push, sync-status, propose, promote, resolve, merge-driver,
pr-status, setup. They import pygit2 only when they run."""

from __future__ import annotations

from typing import Annotated

from cyclopts import Parameter

from .output import Flag, emit_json, note, open_context, out


def submit(ids: list[str], /, *, branch: str | None = None, allow_unsigned: Flag = False, no_verify: Flag = False,
           json: Flag = False) -> int:  # fmt: skip
    """Commit outbox drafts into the repository for review.

    The drafts are copied into .ai/open-memex/ as `proposed` (approved stays approved),
    scanned for secrets, committed on the CURRENT branch with only those files (anything
    you had staged stays staged and out of the commit), verified, and only then removed
    from the outbox. Re-running is harmless. Nothing is pushed.

    Parameters
    ----------
    ids
        The draft ids to submit (see `open-memex sync-status`).
    branch
        Create (or switch to) this branch first — only when you ask for it.
    allow_unsigned
        Commit even though commit.gpgsign is set (open-memex cannot sign).
    no_verify
        Skip the repository's pre-commit and commit-msg hooks (as `git commit --no-verify`).
    json
        Print one JSON document.
    """
    from ..git.submit import submit as run_submit

    with open_context() as ctx:
        report = run_submit(ctx, ids, branch=branch, allow_unsigned=allow_unsigned, verify=not no_verify)
    for notice in report.notices:
        note(f"open-memex: {notice}")
    if not report.index_refreshed and report.commit:
        note(f"open-memex: warning: committed {report.commit[:8]}; the git index could not be refreshed "
             f"(locked by another git command) — run `{report.repair}` once it is free")  # fmt: skip
    if json:
        emit_json(report.to_json())
        return 0
    for line in report.lines():
        out(line)
    if (report.submitted or report.recovered) and report.commit:
        out("next: open-memex push   then open a pull request, e.g. gh pr create --fill")
    return 0


def pull(*, json: Flag = False) -> int:
    """Fetch and fast-forward only; never merges or forces.

    Diverged history, a detached HEAD, a missing upstream or local changes in the way stop
    with the next step named and nothing changed. The index is refreshed afterwards.

    Parameters
    ----------
    json
        Print one JSON document.
    """
    from ..git.pull import pull as run_pull

    with open_context() as ctx:
        report = run_pull(ctx)
    if json:
        stats = report.stats
        emit_json({"branch": report.branch, "remote": report.remote, "old": report.old, "new": report.new,
                   "up_to_date": report.up_to_date, "files_changed": report.files_changed,
                   "memory_files_changed": report.memory_files_changed,
                   "index": None if stats is None else {"added": stats.added, "updated": stats.updated,
                                                          "removed": stats.removed, "scanned": stats.scanned}})  # fmt: skip
        return 0
    if report.up_to_date:
        where = f"at {report.old[:8]}" if report.old else f"(no commits on {report.remote} yet)"
        out(f"already up to date: {report.branch} {where} ({report.remote})")
        return 0
    moved = f"{report.old[:8]}..{report.new[:8]} (fast-forward)" if report.old else f"{report.new[:8]} (its first commit)"
    out(f"pulled {report.branch} from {report.remote}: {moved}")
    out(f"files changed: {report.files_changed} ({report.memory_files_changed} memory files)")
    if report.stats is not None:
        out(f"index: {report.stats.summary()}")
    return 0


def push(*, json: Flag = False) -> int:
    """Push the current branch (sets the upstream once).

    Parameters
    ----------
    json
        Print one JSON document.
    """
    from ..git.pull import push as run_push

    with open_context() as ctx:
        report = run_push(ctx)
    if json:
        emit_json({"branch": report.branch, "remote": report.remote, "target": report.target,
                   "set_upstream": report.set_upstream})  # fmt: skip
        return 0
    out(f"pushed {report.branch} to {report.remote} @ {report.target[:8]}"
        + (f" (upstream set to {report.remote}/{report.branch})" if report.set_upstream else ""))  # fmt: skip
    return 0


def sync_status(*, json: Flag = False) -> int:
    """Show outbox drafts, review states, uncommitted files.

    Also when the index last synced.

    Parameters
    ----------
    json
        Print one JSON document.
    """
    from ..git.sync_status import render
    from ..git.sync_status import sync_status as run_status

    with open_context() as ctx:
        status = run_status(ctx)
    if json:
        emit_json(status.to_json())
    else:
        out(render(status))
    return 0


def propose(ids: list[str], /, *, to: str = "project", local_approve: Flag = False, by: str | None = None,
            json: Flag = False) -> int:  # fmt: skip
    """Copy personal memories into the project outbox.

    The copies get new ids, `derived_from` pointing at the original, and visibility
    internal; the personal originals never leave this machine.

    Parameters
    ----------
    ids
        Personal memory ids.
    to
        Only "project" is supported.
    local_approve
        Solo flow: record the copy as approved by you (no PR needed).
    by
        Who proposes (default: git user.name).
    json
        Print one JSON document.
    """
    from ..review import propose as run_propose

    with open_context() as ctx:
        proposals = run_propose(ctx, ids, to=to, local_approve=local_approve, by=by)
        outbox = ctx.outbox_dir
    if json:
        emit_json({"proposed": [p.to_json() for p in proposals]})
        return 0
    for proposal in proposals:
        out(proposal.line())
    # only a copy waiting in the outbox has a submit ahead; one already in the repository has not
    waiting = list(dict.fromkeys(p.copy.id for p in proposals if p.copy.path is None or p.copy.path.parent == outbox))
    if waiting:
        out("next: open-memex submit " + " ".join(waiting))
    else:
        out("nothing to submit: the copies are already in the repository")
    return 0


def promote(memory_id: str, /, *, reject: Flag = False, resubmit: Flag = False, note_: Annotated[str | None, Parameter(name="--note")] = None,
            by: str | None = None, json: Flag = False) -> int:  # fmt: skip
    """Advance, reject or resubmit a memory under review.

    One step up the ladder (proposed → approved → published), a rejection (a note is
    required), or a resubmission of a rejected memory.

    Parameters
    ----------
    memory_id
        The memory to promote.
    reject
        Reject it (from proposed or approved); needs --note.
    resubmit
        Send a rejected memory back to proposed.
    note_
        Why (recorded in review_history).
    by
        Reviewer name (default: git user.name).
    json
        Print one JSON document.
    """
    from ..review import promote as run_promote

    with open_context() as ctx:
        change = run_promote(ctx, memory_id, reject=reject, resubmit=resubmit, note=note_, by=by)
    if json:
        emit_json(change.to_json())
        return 0
    for line in change.lines():
        out(line)
    if change.in_repo:
        note("this memory lives in the repository: commit and push the change so the team sees it")
    return 0


def resolve(target: str | None = None, /, *, json: Flag = False) -> int:
    """List conflicted memory files, or merge one.

    During a conflicted `git merge` or `git rebase`: tags, aliases and review histories merge
    against the common ancestor (what one side removed stays removed), updated_at takes the
    latest, other fields merge 3-way, the review state keeps the further step but never
    drops a rejection, and the text merges when only one side changed it (or the line merge
    is clean). The merged file is staged, so `git commit` concludes the merge. Anything else
    is a semantic conflict (so is an approval on one side with a change to the text, type,
    role, importance, tags or aliases on the other): the file is left untouched and the
    command exits 3.

    Parameters
    ----------
    target
        A conflicted memory file (path or id); omit to list them.
    json
        Print one JSON document (a semantic conflict still exits 3).
    """
    from ..errors import ConflictError
    from ..git.repo import open_repo
    from ..git.resolve import conflicted_memory_files
    from ..git.resolve import resolve as run_resolve

    with open_context() as ctx:
        if target is None:
            paths = conflicted_memory_files(open_repo(ctx))
            if json:
                emit_json({"conflicted": paths})
                return 0
            if not paths:
                out("(no conflicted memory files)")
            for path in paths:
                out(path)
            return 0
        report = run_resolve(ctx, target)
    if json:
        emit_json(report.to_json())
        return 0 if report.outcome.clean else 3
    if report.outcome.clean:
        out(report.lines()[0])
        out("staged; finish with `git commit` (or `git rebase --continue`)")
        return 0
    lines = [*report.lines(), "decide by editing the file, then `git add` it"]
    raise ConflictError("\n".join(lines))


def merge_driver(base: str, ours: str, theirs: str, path: str = "", /, *, ours_label: str | None = None,
                 theirs_label: str | None = None) -> int:  # fmt: skip
    """Git merge driver for memory files (run by git).

    Configured as `merge.openmemex.driver` by `open-memex setup`.
    A side that is not a memory file is merged as plain text, markers included.

    Parameters
    ----------
    base
        %O — the common ancestor's file.
    ours
        %A — our version; the result is written here.
    theirs
        %B — their version.
    path
        %P — the path in the repository.
    ours_label
        %X — our side's name in conflict markers (git 2.44+).
    theirs_label
        %Y — their side's name in conflict markers (git 2.44+).
    """
    from ..git.resolve import merge_driver as run_driver

    return run_driver(base, ours, theirs, path or ours, ours_label, theirs_label)


def setup(*, merge_driver_: Annotated[bool, Parameter(name="--merge-driver", negative="")] = True,
          json: Flag = False) -> int:  # fmt: skip
    """Set up the memory merge driver in this clone.

    Writes `*.md merge=openmemex` into <memoryDir>/.gitattributes (commit it so teammates
    get it too) and this clone's `merge.openmemex.driver`. A driver configured by someone
    else is left alone.

    Parameters
    ----------
    merge_driver_
        Configure the merge driver (default).
    json
        Print one JSON document.
    """
    from ..git.resolve import setup_merge_driver

    if not merge_driver_:
        if json:
            emit_json({"attributes": None, "attributes_changed": False, "driver_set": False, "driver_kept": None})
        else:
            out("nothing to set up")
        return 0
    with open_context() as ctx:
        report = setup_merge_driver(ctx)
    if json:
        emit_json({"attributes": str(report.attributes), "attributes_changed": report.attributes_changed,
                   "driver_set": report.driver_set, "driver_kept": report.driver_kept})  # fmt: skip
        return 0
    out(f"{'wrote' if report.attributes_changed else 'kept'} {report.attributes}")
    if report.driver_kept:
        note(f"merge.openmemex.driver is already set to {report.driver_kept!r}; left unchanged")
    else:
        out("merge.openmemex.driver " + ("configured for this clone" if report.driver_set else "already configured"))
    if report.attributes_changed:
        out("next: commit the .gitattributes file so every clone uses the driver")
    return 0


def pr_status(*, apply: Flag = False, api_url: str | None = None, json: Flag = False) -> int:
    """Map the branch's GitHub PR onto review states.

    Merged → published; approved → approved (approved_by = reviewer login); changes
    requested → a suggestion only; a local rejection is never overridden. Report only unless
    --apply, which changes the files locally (no commit, no push). Token: GH_TOKEN,
    GITHUB_TOKEN, or `gh auth token`.

    Parameters
    ----------
    apply
        Write the transitions into the memory files.
    api_url
        GitHub Enterprise API URL, e.g. https://ghe.example.com/api/v3.
    json
        Print one JSON document.
    """
    from ..git.pr_status import pr_status as run_pr_status
    from ..git.pr_status import render

    with open_context() as ctx:
        report = run_pr_status(ctx, apply=apply, api_url=api_url)
    if json:
        emit_json(report.to_json())
    else:
        out(render(report))
    return 0
