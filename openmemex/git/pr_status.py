"""``pr-status``: map the branch PR's GitHub state onto each in-repo memory (D32).

* PR merged → ``published`` (a ``proposed`` memory steps through ``approved`` first, by the
  approvers of the merged head; each step is its own ``review_history`` entry). A merge
  with no such approval approves nothing: a ``proposed`` memory stays proposed;
* PR approved (every reviewer's latest non-COMMENTED review is APPROVED, at least one, on
  the PR's head commit) → ``approved`` with ``approved_by`` = the approving logins (only
  from ``proposed``); an approval of an older commit approved another text and is stale;
* changes requested → a suggestion only, naming the exact ``promote --reject`` command;
* a memory the team rejected locally keeps ``rejected``; ``published`` stays published;
  drafts are reported as not submitted;
* a transition is written only to a file that holds the PR head's text (review fields
  aside): a local edit, a branch behind the PR or a head commit missing here is ``skipped``.

Report by default; ``apply=True`` writes the transitions to the working tree (file, then
index). Nothing is committed or pushed (D27). PyGithub and pygit2 are imported lazily so
importing this module stays cheap.

``PrReport.to_json()`` (``pr-status --json``)::

    {"branch", "remote", "repo", "api_url",
     "pr": {"number", "state", "merged", "merged_by", "url", "head_sha",
            "reviews": [{"login", "state", "stale"}]},
     "memories": [{"id", "path", "from", "to", "action", "note"}],
     "applied": bool}

``action`` is one of ``approve`` / ``publish`` (a transition; ``to`` is the final state),
``suggest-reject``, ``merged-unreviewed`` (a proposed memory in a PR merged with no approval
of its final commit: not published), ``kept`` (local rejection), ``not-submitted`` (draft), ``unchanged``
or ``skipped`` (unreadable file, personal memory, a file that is not the PR head's text);
``to`` is null when nothing changes. ``reviews`` lists each reviewer once with the state
that counts (their latest non-COMMENTED review, else COMMENTED); ``stale``: an APPROVED one
given on another commit than ``head_sha``, which approves nothing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from .. import freshness
from ..config import UrlCredentialsError, check_url
from ..errors import MemexError
from .objects import UnreadableObject, file_at
from .remote_url import GITHUB_HOST, RemoteRepo, parse_remote, redact_url

if TYPE_CHECKING:
    from ..context import Context
    from ..index import Folder
    from ..model import Memory
    from .repo import GitRepo

API_TIMEOUT = 30  # seconds per HTTP request
GH_TIMEOUT = 10.0  # seconds for `gh auth token`
DECISIVE = ("APPROVED", "CHANGES_REQUESTED", "DISMISSED")  # COMMENTED/PENDING change nothing
TRANSITIONS = ("approve", "publish")


# -- tokens ------------------------------------------------------------------------------
def resolve_token(host: str = GITHUB_HOST) -> str | None:
    """A token for ``host``: ``GH_TOKEN``, ``GITHUB_TOKEN``, then (GitHub Enterprise hosts)
    ``GH_ENTERPRISE_TOKEN`` / ``GITHUB_ENTERPRISE_TOKEN``, then ``gh auth token`` when the
    GitHub CLI is installed. Tokens are never read from or written to git config."""
    names = ["GH_TOKEN", "GITHUB_TOKEN"]
    if host.lower() != GITHUB_HOST:
        names += ["GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN"]
    for name in names:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    return _gh_cli_token(host)


def _gh_cli_token(host: str) -> str | None:
    gh = shutil.which("gh")
    if gh is None:
        return None
    args = [gh, "auth", "token"]
    if host.lower() != GITHUB_HOST:
        args += ["--hostname", host]
    try:
        proc = subprocess.run(
            args, capture_output=True, text=True, timeout=GH_TIMEOUT, stdin=subprocess.DEVNULL, check=False,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    token = proc.stdout.strip() if proc.returncode == 0 else ""
    return token.splitlines()[0].strip() if token else None


def _no_token_error(host: str) -> MemexError:
    if host == GITHUB_HOST:
        step = "set GH_TOKEN (or GITHUB_TOKEN) to a token that can read the repository, or run `gh auth login`"
    else:
        step = f"set GH_ENTERPRISE_TOKEN (or GH_TOKEN) for {host}, or run `gh auth login --hostname {host}`"
    return MemexError(f"no GitHub token for {host} — {step}")


# -- the report --------------------------------------------------------------------------
@dataclass
class Review:
    login: str
    state: str
    stale: bool = False  # an APPROVED review given on another commit than the PR's head


@dataclass
class PullRequestInfo:
    number: int
    state: str  # GitHub's: open | closed
    merged: bool
    url: str
    reviews: list[Review] = field(default_factory=list)
    approvers: list[str] = field(default_factory=list)
    blockers: list[str] = field(default_factory=list)
    merged_by: str | None = None
    head_sha: str | None = None  # the PR's head commit: the only text an approval counts for
    stale: list[str] = field(default_factory=list)  # approvals given on an older commit

    def to_json(self) -> dict[str, Any]:
        return {
            "number": self.number, "state": self.state, "merged": self.merged,
            "merged_by": self.merged_by, "url": self.url, "head_sha": self.head_sha,
            "reviews": [{"login": r.login, "state": r.state, "stale": r.stale} for r in self.reviews],
        }  # fmt: skip


@dataclass
class Step:
    to: str
    by: str
    note: str


@dataclass
class MemoryOutcome:
    id: str
    path: str  # posix, relative to the work tree
    from_state: str | None
    to_state: str | None  # the final state of a transition, None when nothing changes
    action: str
    note: str = ""
    steps: list[Step] = field(default_factory=list)
    reviewed: Memory | None = field(default=None, repr=False)  # the file at the PR's head

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "path": self.path, "from": self.from_state, "to": self.to_state,
                "action": self.action, "note": self.note}  # fmt: skip


@dataclass
class PrReport:
    branch: str
    remote: str
    repo: str
    api_url: str
    pr: PullRequestInfo
    memories: list[MemoryOutcome]
    applied: bool
    from_pr_files: bool  # False: the PR touched no local memory file; all pending ones shown
    memory_dir: str = ".ai/open-memex"

    @property
    def transitions(self) -> list[MemoryOutcome]:
        return [m for m in self.memories if m.action in TRANSITIONS]

    def to_json(self) -> dict[str, Any]:
        return {
            "branch": self.branch, "remote": self.remote, "repo": self.repo, "api_url": self.api_url,
            "pr": self.pr.to_json(), "memories": [m.to_json() for m in self.memories],
            "applied": self.applied,
        }  # fmt: skip


def render(report: PrReport) -> str:
    """The report for people (``pr-status`` without ``--json``)."""
    pr = report.pr
    shown_state = "merged" if pr.merged else pr.state
    lines = [f"branch {report.branch} on {report.repo} (remote {report.remote})",
             f"PR #{pr.number} ({shown_state}): {pr.url}"]  # fmt: skip
    if pr.merged and pr.merged_by:
        lines[-1] += f" — merged by {pr.merged_by}"
    reviews = ", ".join(f"{r.login} {r.state}" + (" (on an older commit: does not count)" if r.stale else "")
                        for r in pr.reviews) or "none yet"  # fmt: skip
    lines.append(f"reviews: {reviews}")
    if report.from_pr_files:
        lines.append("memories in this PR:")
    else:
        lines.append("memories (the PR changes no memory file; in-repo proposed/approved ones):")
    if not report.memories:
        lines.append("  none")
    for m in report.memories:
        lines.append(f"  {m.id}  {_describe(m)}")
    count = len(report.transitions)
    plural = "transition" if count == 1 else "transitions"
    if not report.from_pr_files and count:
        lines.append("not applied: these memories are not part of this PR — promote them yourself "
                     "(open-memex promote ID) if the PR really reviewed them")  # fmt: skip
    elif count == 0:
        lines.append("nothing to apply")
    elif report.applied:
        lines.append(
            f"applied {count} {plural} locally — nothing was committed or pushed; review, commit and push "
            f"them yourself (git add {report.memory_dir} && git commit)"
        )
    else:
        lines.append(f"report only — re-run with --apply to write the {count} {plural} above locally")
    return "\n".join(lines)


def _describe(m: MemoryOutcome) -> str:
    if m.action in TRANSITIONS:
        chain = " → ".join([m.from_state or "?", *(s.to for s in m.steps)])
        return f"{chain} ({m.note})"
    if m.action == "kept":
        return "rejected (kept: a local rejection is never overridden)"
    if m.action == "suggest-reject":
        return m.note
    if m.action == "not-submitted":
        return f"draft ({m.note})"
    if m.action == "skipped":
        return f"skipped ({m.note})"
    return f"{m.from_state} ({m.note})"


# -- mapping (pure) ----------------------------------------------------------------------
def review_decision(
    reviews: Sequence[tuple[str, str, datetime | None, str | None]], head_sha: str | None,
) -> tuple[list[Review], list[str], list[str], list[str]]:
    """``(login, state, submitted_at, commit_id)`` in API order → (per-reviewer view,
    approvers, blockers, stale approvers).

    A reviewer's latest APPROVED / CHANGES_REQUESTED / DISMISSED review counts; COMMENTED
    and PENDING ones do not change it ("changes requested, then approved" is approved). An
    approval counts only when it was given on ``head_sha``: one given on an older commit
    approved a text the PR no longer holds (GitHub's "dismiss stale approvals", always on
    here). A request for changes stands whatever commit it was made on, as on GitHub."""
    epoch = datetime.min.replace(tzinfo=UTC)
    ordered = sorted(
        enumerate(reviews),
        key=lambda item: (_aware(item[1][2]) or epoch, item[0]),
    )
    seen: dict[str, tuple[str, str | None]] = {}
    for _, (login, state, _submitted, commit) in ordered:
        if state == "PENDING":
            continue
        if state in DECISIVE:
            seen[login] = (state, commit)
        else:
            seen.setdefault(login, (state, commit))
    current = {login for login, (state, commit) in seen.items()
               if state == "APPROVED" and head_sha is not None and commit == head_sha}  # fmt: skip
    view = [Review(login, state, state == "APPROVED" and login not in current) for login, (state, _) in seen.items()]
    approvers = sorted(current)
    stale = sorted(r.login for r in view if r.stale)
    blockers = sorted(login for login, (state, _) in seen.items() if state == "CHANGES_REQUESTED")
    return view, approvers, blockers, stale


def _aware(value: datetime | None) -> datetime | None:
    if value is not None and value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value


def plan(memory: Memory, path: str, pr: PullRequestInfo) -> MemoryOutcome:
    """What the PR's state means for one memory (D32)."""
    state = memory.review_state
    out = MemoryOutcome(memory.id, path, state, None, "unchanged")
    if memory.scope == "personal":
        out.action, out.note = "skipped", "a personal memory is never reviewed"
    elif state == "rejected":
        out.action, out.note = "kept", "a local rejection is never overridden"
    elif state == "draft":
        out.action, out.note = "not-submitted", "not submitted"
    elif state == "published":
        out.note = "already published"
    elif pr.merged:
        merger = pr.merged_by or "github"  # who merged: never one of the approvers in their stead
        if state == "proposed" and not pr.approvers:
            # a merge is not a review (D29): nobody approved this text, so no approval is
            # recorded and the ladder (no proposed → published) leaves it for a reviewer
            out.action = "merged-unreviewed"
            out.note = (f"PR #{pr.number} was merged by {merger} without an approving review of its final commit "
                        f"— not published, nobody approved this text: review it with open-memex promote {memory.id} "
                        "(twice, to publish)")  # fmt: skip
            return out
        if state == "proposed":
            approvers = ", ".join(pr.approvers)
            out.steps.append(Step("approved", approvers, f"PR #{pr.number} merged (approved by {approvers})"))
        out.steps.append(Step("published", merger, f"PR #{pr.number} merged by {merger}"))
        out.action, out.to_state = "publish", "published"
        out.note = f"merged by {merger}"
    elif pr.state != "open":
        out.note = f"PR #{pr.number} was closed without merging — no change"
    elif pr.blockers:
        who = ", ".join(pr.blockers)
        reason = f"changes requested by {who} on PR #{pr.number}"
        out.action = "suggest-reject"
        out.note = (
            f"changes requested by {who} — suggestion: open-memex promote {memory.id} --reject "
            f'--note "{reason}" (or revise it and push again)'
        )
    elif pr.approvers:
        if state == "proposed":
            approvers = ", ".join(pr.approvers)
            out.steps.append(Step("approved", approvers, f"PR #{pr.number} approved on GitHub by {approvers}"))
            out.action, out.to_state, out.note = "approve", "approved", f"approved by {approvers}"
        else:
            out.note = "already approved"
    elif pr.stale:
        out.note = (f"awaiting review — the approval by {', '.join(pr.stale)} was given on an older commit; "
                    f"the PR changed since (head {_short_sha(pr.head_sha)})")  # fmt: skip
    else:
        out.note = "awaiting review"
    return out


def _short_sha(sha: str | None) -> str:
    return sha[:12] if sha else "unknown"


# -- the command -------------------------------------------------------------------------
def pr_status(ctx: Context, apply: bool = False, api_url: str | None = None) -> PrReport:
    """Look up the current branch's PR and map its state onto the in-repo memories."""
    from .repo import open_repo

    gitrepo = open_repo(ctx)
    branch = gitrepo.branch
    if branch is None:
        raise MemexError("HEAD is detached — switch to the branch of your pull request first: git switch <branch>")
    remote_name, remote_url, head_ref = _remote_for(gitrepo, branch)
    remote = parse_remote(remote_url)
    if remote is None:
        raise MemexError(
            f"remote {remote_name} ({redact_url(remote_url)}) is not a GitHub remote — "
            "pr-status needs a github.com or GitHub Enterprise remote"
        )
    api = _api_url(ctx, remote, api_url)
    token = resolve_token(remote.host)
    if not token:
        raise _no_token_error(remote.host)
    folder = _repo_folder(ctx)
    pr, files = _fetch(api, token, remote, head_ref, remote_name)
    outcomes, from_files = _outcomes(ctx, folder, gitrepo, files, pr, remote_name)
    applied = apply and from_files  # memories outside the PR are shown, never changed
    if applied:
        _apply(ctx, folder, outcomes)
    return PrReport(branch, remote_name, remote.slug, api, pr, outcomes, applied, from_files, gitrepo.memory_rel)


def run_cli(apply: bool = False, as_json: bool = False, api_url: str | None = None,
            cwd: Path | None = None) -> int:  # fmt: skip
    """``open-memex pr-status [--apply] [--json]``: print the report, return the exit code.
    A ``MemexError`` propagates to the CLI's error handler (one line, exit 1)."""
    import sys

    from ..context import Context

    with Context.load(cwd) as ctx:
        report = pr_status(ctx, apply=apply, api_url=api_url)
    if as_json:
        from ..terminal import json_text

        sys.stdout.write(json_text(report.to_json(), indent=2) + "\n")
    else:
        from ..terminal import safe  # file names and notes come from the PR

        sys.stdout.write(safe(render(report)) + "\n")
    return 0


def _remote_for(gitrepo: GitRepo, branch: str) -> tuple[str, str, str]:
    """(remote name, URL, branch name on that remote): the branch's upstream remote, else
    ``origin`` (else the only remote)."""
    repo = gitrepo.repo
    config = repo.config
    names = [str(r.name) for r in repo.remotes]
    upstream = _config_get(config, f"branch.{branch}.remote")
    if upstream and upstream in names:
        name = upstream
    elif "origin" in names:
        name = "origin"
    elif len(names) == 1:
        name = names[0]
    else:
        raise MemexError(
            "no remote named origin — add it: git remote add origin git@github.com:OWNER/REPO.git"
            if not names
            else f"branch {branch} has no upstream and there is no origin remote — run: git push -u <remote> {branch}"
        )
    url = repo.remotes[name].url
    if not url:
        raise MemexError(f"remote {name} has no URL — run: git remote set-url {name} <url>")
    head = branch
    merge = _config_get(config, f"branch.{branch}.merge")
    if name == upstream and merge and merge.startswith("refs/heads/"):
        head = merge.removeprefix("refs/heads/")
    return name, str(url), head


def _config_get(config: Any, key: str) -> str | None:
    try:
        value = config[key]
    except (KeyError, ValueError):
        return None
    return str(value) if value else None


def _api_url(ctx: Context, remote: RemoteRepo, explicit: str | None) -> str:
    """The ``api_url`` argument, else config ``github.apiUrl``, else derived from the host."""
    github_cfg = ctx.config.values.get("github")
    configured = github_cfg.get("apiUrl") if isinstance(github_cfg, dict) else None
    for value, origin in ((explicit, "--api-url"), (configured, "config github.apiUrl")):
        if isinstance(value, str) and value.strip():
            url = value.strip().rstrip("/")
            try:
                check_url(url)  # the rule `config set github.apiUrl` applies
            except UrlCredentialsError as exc:
                raise MemexError(f"{origin}: {exc}") from None  # the URL is not repeated: it holds a token
            except ValueError:
                raise MemexError(
                    f"{origin} {_shown(url)!r} is not an http(s) URL — use e.g. https://github.example.com/api/v3 "
                    "(or `open-memex config set github.apiUrl \"\"` to derive it from the remote)"
                ) from None
            return url
    return remote.api_url


def _repo_folder(ctx: Context) -> Folder:
    for folder in ctx.folders("project"):
        if folder.location == "repo":
            return folder
    raise MemexError(f"{ctx.cwd} is not inside a git repository — run this in your project's clone")


def _fetch(api: str, token: str, remote: RemoteRepo, head_ref: str,
           remote_name: str) -> tuple[PullRequestInfo, list[tuple[str, str]]]:  # fmt: skip
    """The newest PR for ``owner:head_ref``, its reviews and its changed files
    (``(filename, status)``). GitHub failures become one-line ``MemexError``s, masked
    (``_shown``): they quote the server and the API URL."""
    try:
        return _query(api, token, remote, head_ref, remote_name)
    except MemexError as exc:
        error = MemexError(_shown(str(exc), token))
        error.exit_code = exc.exit_code
        raise error from None


def _query(api: str, token: str, remote: RemoteRepo, head_ref: str,
           remote_name: str) -> tuple[PullRequestInfo, list[tuple[str, str]]]:  # fmt: skip
    import github
    from github import Auth, Github

    # lazy: get_repo() sends no request (get_repo(lazy=...) is deprecated in PyGithub 2.10)
    client = Github(
        auth=Auth.Token(token), base_url=api, retry=None, timeout=API_TIMEOUT,
        seconds_between_requests=0, seconds_between_writes=0, lazy=True,
    )  # fmt: skip
    try:
        gh_repo = client.get_repo(remote.slug)
        head = f"{remote.owner}:{head_ref}"
        pulls = list(gh_repo.get_pulls(state="all", head=head))
        searched = [remote.slug]
        # a fork's branch: its PR of record is on the repository it was forked from (or the
        # network's root), and wins over one opened against the fork itself
        upstream: list[Any] = []
        unreadable = ""
        for up in _upstreams(gh_repo):
            try:
                upstream += list(up.get_pulls(state="all", head=head))
                searched.append(up.full_name)
            except github.RateLimitExceededException:
                raise
            except github.GithubException as exc:
                unreadable = unreadable or f"{up.full_name}, which it is a fork of, could not be read ({exc.status})"
        pulls = upstream or pulls
        if not pulls:
            if unreadable:
                raise MemexError(f"no pull request for branch {head_ref} on {remote.slug}, and {unreadable} at {api} — "
                                 "check that the token can read it (a fine-grained token may cover the fork only)")  # fmt: skip
            kind = {1: "", 2: ", the repository it is a fork of"}.get(len(searched), ", the repositories it is a fork of")
            where = " or ".join(searched) + kind
            raise MemexError(
                f"no pull request for branch {head_ref} on {where} — push and open one: "
                f"git push -u {remote_name} {head_ref} && gh pr create --head {head_ref}"
            )
        pull = max(pulls, key=_newest)
        head_sha = str(pull.head.sha) if pull.head is not None and pull.head.sha else None
        raw_reviews = [
            (r.user.login if r.user is not None else "ghost", str(r.state), r.submitted_at,
             str(r.commit_id) if r.commit_id else None)
            for r in pull.get_reviews()
        ]  # fmt: skip
        view, approvers, blockers, stale = review_decision(raw_reviews, head_sha)
        merged = pull.merged_at is not None
        merged_by = None
        if merged:
            user = pull.merged_by  # not in the list payload: one GET of the PR
            merged_by = user.login if user is not None else None
        files = [(str(f.filename), str(f.status)) for f in pull.get_files()]
        info = PullRequestInfo(
            number=int(pull.number), state=str(pull.state), merged=merged,
            url=str(pull.html_url or pull.url), reviews=view, approvers=approvers,
            blockers=blockers, merged_by=merged_by, head_sha=head_sha, stale=stale,
        )  # fmt: skip
    except github.BadCredentialsException:
        raise MemexError(
            f"GitHub at {api} rejected the token (401 bad credentials) — set a valid GH_TOKEN or run `gh auth login`"
        ) from None
    except github.RateLimitExceededException:
        raise MemexError(f"GitHub API rate limit exceeded at {api} — wait a while and run pr-status again") from None
    except github.UnknownObjectException:
        raise MemexError(
            f"{remote.slug} was not found at {api} (404) — check the remote URL, github.apiUrl, "
            "and that the token can read this repository"
        ) from None
    except github.GithubException as exc:
        message = exc.data.get("message") if isinstance(exc.data, dict) else None
        text = _short(_shown(str(message or exc), token))  # masked before the cut: half a token is not found
        raise MemexError(f"GitHub API error {exc.status} at {api}: {text}") from None
    except OSError as exc:  # requests' RequestException (connection refused, timeout, TLS) is one
        raise MemexError(
            f"cannot reach the GitHub API at {api} ({type(exc).__name__}) — check the network or github.apiUrl"
        ) from None
    except MemexError:
        raise
    except Exception as exc:
        # an answer the API client could not make sense of (not JSON, a list where an object
        # belongs, a redirect to a login page or another host, a token it cannot send)
        raise MemexError(f"the GitHub API at {api} gave an answer that is not GitHub's ({type(exc).__name__}: "
                         f"{_short(_shown(str(exc), token))}) — check github.apiUrl, a proxy or SSO in between, and the "
                         "token") from None  # fmt: skip
    finally:
        client.close()
    return info, files


def _upstreams(gh_repo: Any) -> list[Any]:
    """The repositories a fork was forked from: its parent and the network's root."""
    if not gh_repo.fork:
        return []
    found: dict[str, Any] = {}
    for up in (gh_repo.parent, gh_repo.source):
        if up is not None:
            found.setdefault(str(up.full_name).lower(), up)
    return list(found.values())


def _shown(text: str, token: str | None = None) -> str:
    """An error line as pr-status may print it (CI logs keep it): the token it sent and every
    secret the scanner knows masked — a proxy's error page can echo the Authorization header."""
    from ..echo import masked

    if token and len(token) >= 8:  # a token the scanner does not recognise (GHE, a custom proxy)
        text = text.replace(token, "<token>")
    return masked(text)


def _short(text: str, limit: int = 200) -> str:
    """An error page can be megabytes: one line, cut."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _newest(pull: Any) -> tuple[float, int]:
    created = _aware(pull.created_at)
    return (created.timestamp() if created is not None else 0.0, int(pull.number))


def _outcomes(ctx: Context, folder: Folder, gitrepo: GitRepo, files: list[tuple[str, str]],
              pr: PullRequestInfo, remote_name: str) -> tuple[list[MemoryOutcome], bool]:  # fmt: skip
    """Outcomes for the PR's memory files that exist locally; when there are none, for
    every in-repo memory still under review (proposed or approved). A PR file's transition
    stands only when the file here is the text the PR holds at its head (``_at_head``)."""
    from .. import store
    from ..memfile import MemoryFileError, read_memory

    memory_rel = gitrepo.memory_rel
    rel_dir = PurePosixPath(memory_rel)
    names = sorted(
        {
            PurePosixPath(name).name
            for name, status in files
            if status != "removed"
            and PurePosixPath(name).parent == rel_dir
            and name.endswith(".md")
            and not PurePosixPath(name).name.startswith(".")
        }
    )
    paths = [folder.path / n for n in names if (folder.path / n).is_file()]
    out: list[MemoryOutcome] = []
    key = ctx.project.key
    if paths:
        for path in paths:
            rel = f"{memory_rel}/{path.name}"
            try:
                memory = read_memory(path, key)
            except MemoryFileError as exc:
                out.append(MemoryOutcome(path.stem, rel, None, None, "skipped", f"unreadable: {exc}"))
                continue
            outcome = plan(memory, rel, pr)
            if outcome.action in TRANSITIONS:
                outcome.reviewed, problem = _at_head(gitrepo, pr, rel, path.read_bytes(), memory, key, remote_name)
                if problem:
                    outcome.action, outcome.to_state, outcome.steps = "skipped", None, []
                    outcome.note = f"{problem}; not changed"
            out.append(outcome)
        return out, True
    for path in store.memory_files(folder.path):
        try:
            memory = read_memory(path, key)
        except MemoryFileError:
            continue  # reported by reindex/audit; nothing to map
        if memory.review_state in ("proposed", "approved"):
            out.append(plan(memory, f"{memory_rel}/{path.name}", pr))
    return out, False


REVIEW_FIELDS = frozenset({"review_state", "approved_by", "review_note", "review_history", "updated_at", "path", "raw"})


def _at_head(gitrepo: GitRepo, pr: PullRequestInfo, rel: str, data: bytes, memory: Memory,
             key: str, remote_name: str) -> tuple[Memory | None, str]:  # fmt: skip
    """(the memory as the PR's head commit holds it, "") when the local file is that text —
    or (None, why not). What GitHub approved or merged is the head commit, not this working
    tree: an edit made here since, or a branch behind the PR, is not what was reviewed. The
    review fields may differ (a transition applied here and not yet pushed): the head's
    ``review_history`` only has to be kept as a prefix."""
    import pygit2

    from ..memfile import MemoryFileError, parse_memory

    sha = pr.head_sha
    if not sha:
        return None, "GitHub named no head commit for the PR, so what was reviewed cannot be compared with this file"
    short = _short_sha(sha)
    try:
        commit = gitrepo.repo.get(sha)
    except (ValueError, KeyError, pygit2.GitError):
        commit = None
    if not isinstance(commit, pygit2.Commit):
        return None, (f"the PR's head commit {short} is not in this clone, so this file cannot be compared with "
                      f"what was reviewed — run `git fetch {remote_name}`, then pr-status again")  # fmt: skip
    try:
        found = file_at(commit.peel(pygit2.Tree), rel, f" in the PR's head commit {short}")
    except UnreadableObject as exc:  # not in this clone, or damaged: named, and this file is left as it is
        return None, str(exc)
    if found is None:
        return None, f"the PR's head commit {short} holds no file {rel}"
    try:
        head = parse_memory(found.data, key)
    except MemoryFileError as exc:
        return None, f"the file in the PR's head commit {short} is unreadable ({exc})"
    if found.data == data or _same_text(memory, head):
        return head, ""
    return None, (f"the file here is not the text of the PR's head commit {short}, which is what GitHub "
                  "shows as reviewed — `git pull` if the branch is behind; an edit made here needs its own "
                  "review (commit and push it)")  # fmt: skip


def _same_text(local: Memory, head: Memory) -> bool:
    """Everything but the review fields is equal, and the local history extends the head's."""
    import dataclasses

    for item in dataclasses.fields(local):
        if item.name not in REVIEW_FIELDS and getattr(local, item.name) != getattr(head, item.name):
            return False
    return local.review_history[: len(head.review_history)] == head.review_history


def _apply(ctx: Context, folder: Folder, outcomes: list[MemoryOutcome]) -> None:
    """Write each planned transition: re-read every file first (all-or-nothing check),
    then step through the ladder, save atomically, index. Working-tree edits only."""

    with ctx.lock(ctx.project.key):
        _apply_locked(ctx, folder, outcomes)


def _apply_locked(ctx: Context, folder: Folder, outcomes: list[MemoryOutcome]) -> None:
    from .. import store
    from ..memfile import MemoryFileError, read_memory
    from ..review import apply_transition

    todo: list[tuple[Memory, MemoryOutcome]] = []
    for outcome in outcomes:
        if outcome.action not in TRANSITIONS:
            continue
        try:
            memory = read_memory(folder.path / PurePosixPath(outcome.path).name, ctx.project.key)
        except MemoryFileError as exc:
            raise MemexError(f"{outcome.path} became unreadable while pr-status ran ({exc}); nothing was written") from None
        if memory.review_state != outcome.from_state:
            raise MemexError(
                f"{memory.id} changed while pr-status ran ({outcome.from_state} → {memory.review_state}); "
                "nothing was written — run it again"
            )
        if outcome.reviewed is None or not _same_text(memory, outcome.reviewed):
            raise MemexError(f"the text of {memory.id} changed while pr-status ran; nothing was written — run it again")
        todo.append((memory, outcome))
    for memory, outcome in todo:
        for step in outcome.steps:
            apply_transition(memory, step.to, step.by, step.note)
        store.save(memory, folder.path)
        freshness.record(ctx, [(memory, folder)])
