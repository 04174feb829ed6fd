"""Backend ``pygit2``: fetch and push in-process with libgit2, for machines without a git
executable. libgit2 ignores the user's git setup, so this module adds what it lacks
(notes/git-and-pygit2.md §2.7, §2.8):

- credentials: a GitHub token from GH_TOKEN / GITHUB_TOKEN for HTTPS remotes on GitHub, then
  the user's credential helpers through ``git credential fill`` (approve / reject after);
  ssh-agent or unencrypted default key files for SSH; at most ``MAX_AUTH_ATTEMPTS`` answers;
- host keys and TLS certificates really checked (``certificate_check`` returns ``valid``);
- server-side push rejections (pre-receive hooks, branch protection) turned into
  ``PushRejected``; libgit2 itself raises nothing for them.

This module imports pygit2; only ``get_transport`` imports this module.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pygit2
from pygit2.enums import CredentialType, Option

from .transport import (
    MAX_AUTH_ATTEMPTS,
    TIMEOUT_SECONDS,
    USE_GIT_BACKEND,
    PushResult,
    TransportError,
    check_remote,
    failure,
    is_non_fast_forward,
    non_fast_forward,
    qualify_refs,
    redact,
    server_rejected,
)
from .transport_git import REPO_ENV

_Credential = pygit2.Username | pygit2.UserPass | pygit2.Keypair
_SSH_KEY_FILES = ("id_ed25519", "id_ecdsa", "id_rsa")
_PROGRESS = re.compile(
    r"^(enumerating|counting|compressing|writing|total|resolving|receiving|unpacking)\b",
    re.IGNORECASE,
)
_AUTH_FAILURE = re.compile(r"authentication|\b401\b|credential|unauthorized", re.IGNORECASE)



def pre_push_hook(workdir: Path) -> str | None:
    """The repository's pre-push hook when there is one git would run (``core.hooksPath``,
    else ``<common git dir>/hooks``, executable): libgit2 runs no hooks, and pushing past a
    check the team put there is not ours to decide."""
    from ..gitinfo import discover, hook_file

    info = discover(workdir)
    if info is None:
        return None
    hook = hook_file(info.git_dir, info.workdir, "pre-push")
    return None if hook is None else str(hook)


SERVER_HOOKS = ("pre-receive", "update", "proc-receive", "post-receive", "post-update", "reference-transaction")


def local_repository(url: str, workdir: Path) -> Path | None:
    """The repository a local remote (a path, or ``file://``) names; None for a network URL.
    libgit2 reaches a local repository by reading and writing its files itself: no receive
    hooks run there, and a shallow clone's fetch from it drops ``.git/shallow``."""
    if url.startswith("file://"):
        path = Path(urlsplit(url).path)
    elif "://" in url or re.match(r"^[^/\\]+:", url):  # a scheme, or scp-like host:path
        return None
    else:
        path = Path(os.path.expanduser(url))
    return path if path.is_absolute() else (workdir / path)


def _server_hooks(repository: Path) -> list[str]:
    from ..gitinfo import hook_file

    git_dir = repository / ".git" if (repository / ".git").exists() else repository
    return [name for name in SERVER_HOOKS if hook_file(git_dir, repository, name) is not None]


class Pygit2Transport:
    """Fetch and push in-process (no git executable needed)."""

    name = "pygit2"

    def __init__(self, *, github_hosts: Iterable[str] = (), timeout: float = TIMEOUT_SECONDS) -> None:
        self.github_hosts = tuple(host.lower() for host in github_hosts)
        self.timeout = timeout

    def fetch(self, workdir: Path, remote: str) -> None:
        check_remote(remote)
        repo = _open(workdir)
        try:
            handle = _remote(repo, remote)
            if repo.is_shallow and local_repository(handle.url or "", workdir) is not None:
                raise TransportError(
                    f"this clone is shallow and {remote} is a local repository, which libgit2 fetches from without "
                    "keeping the clone's shallow boundary (it would break the clone) — nothing was fetched; use your "
                    "own git: `open-memex config set sync.transport git` (or `git pull`)"
                )
            callbacks = self.make_callbacks(workdir, handle.url or "")
            try:
                handle.fetch(callbacks=callbacks, proxy=True)
            except pygit2.GitError as exc:
                callbacks.finish(ok=_outcome(exc))
                raise failure("fetch from", remote, _detail(exc, callbacks), _FALLBACK) from None
            callbacks.finish(ok=True)
        finally:
            repo.free()

    def push(self, workdir: Path, remote: str, local_ref: str, remote_ref: str) -> PushResult:
        check_remote(remote)
        local, dst = qualify_refs(local_ref, remote_ref)
        hook = pre_push_hook(workdir)
        if hook is not None:
            raise TransportError(
                f"this repository has a pre-push hook ({hook}), which libgit2 does not run — nothing was pushed; "
                "push with your own git: `open-memex config set sync.transport git` (or `git push`)"
            )
        repo = _open(workdir)
        try:
            handle = _remote(repo, remote)
            ref = repo.references.get(local)
            if ref is None:
                raise TransportError(
                    f"cannot push {local}: no such ref in {workdir} — check the branch name (`git branch`)"
                )
            target = str(ref.resolve().target)
            there = local_repository(handle.url or "", workdir)
            hooks = _server_hooks(there) if there is not None else []
            if hooks:
                raise TransportError(
                    f"{remote} is a local repository with a {hooks[0]} hook, which libgit2 does not run when it "
                    "writes there itself — nothing was pushed; push with your own git: "
                    "`open-memex config set sync.transport git` (or `git push`)"
                )
            callbacks = self.make_callbacks(workdir, handle.url or "")
            try:
                handle.push([f"{local}:{dst}"], callbacks=callbacks, proxy=True)
            except pygit2.GitError as exc:
                callbacks.finish(ok=_outcome(exc))
                message = str(exc)
                if is_non_fast_forward(message):
                    raise non_fast_forward(remote, local, dst, "non-fast-forward") from None
                raise failure("push to", remote, _detail(exc, callbacks), _FALLBACK) from None
            callbacks.finish(ok=True)
            # libgit2 raises nothing when the server refuses a ref (§2.7): check every report.
            for refname, reason in callbacks.rejected.items():
                if is_non_fast_forward(reason):
                    raise non_fast_forward(remote, local, refname, reason)
                raise server_rejected(remote, refname, reason, callbacks.server_lines())
            return PushResult(remote, local, dst, target)
        finally:
            repo.free()

    def make_callbacks(self, workdir: Path, url: str) -> Callbacks:
        _set_timeouts(self.timeout)
        return Callbacks(url, workdir=workdir, github_hosts=self.github_hosts, timeout=self.timeout)


_FALLBACK = f"check the remote (`git remote -v`), {USE_GIT_BACKEND}"


def _open(workdir: Path) -> pygit2.Repository:
    try:
        return pygit2.Repository(str(workdir))
    except pygit2.GitError as exc:
        raise TransportError(f"cannot open the repository at {workdir}: {exc} — run this inside a git clone") from None


def _remote(repo: pygit2.Repository, name: str) -> pygit2.Remote:
    try:
        return repo.remotes[name]
    except (KeyError, ValueError):
        raise TransportError(f"no remote named '{name}' — add one with `git remote add {name} URL`") from None


def _detail(exc: pygit2.GitError, callbacks: Callbacks) -> str:
    said = callbacks.server_lines()
    return "; ".join([*(f"remote: {line}" for line in said), str(exc)])


def _outcome(exc: pygit2.GitError) -> bool | None:
    """False when the failure was authentication (the helper's answer is rejected); None when
    it was something else (the answer was never tested: neither approve nor reject)."""
    return False if _AUTH_FAILURE.search(str(exc)) else None


def _set_timeouts(seconds: float) -> None:
    """libgit2's connect and read timeouts (process-wide; 0 would mean the OS default)."""
    millis = max(1, int(seconds * 1000))
    try:
        pygit2.option(Option.SET_SERVER_CONNECT_TIMEOUT, millis)
        pygit2.option(Option.SET_SERVER_TIMEOUT, millis)
    except (pygit2.GitError, ValueError):  # an older libgit2 without these options
        pass


class Callbacks(pygit2.RemoteCallbacks):
    """Credentials with a retry cap, real host-key checks, and server-side rejections."""

    def __init__(
        self,
        url: str,
        *,
        workdir: Path | None = None,
        github_hosts: Iterable[str] = (),
        timeout: float = TIMEOUT_SECONDS,
        max_attempts: int = MAX_AUTH_ATTEMPTS,
    ) -> None:
        super().__init__()
        self.url = url
        self.workdir = workdir
        self.github_hosts = tuple(github_hosts)
        self.timeout = timeout
        self.max_attempts = max_attempts
        self.attempts = 0  # credential callbacks seen
        self.rejected: dict[str, str] = {}  # remote ref -> the server's reason
        self.accepted: list[str] = []
        self._sideband: list[str] = []
        self._answers: Iterator[_Credential] | None = None
        self._pending: list[str] | None = None  # the helper's answer in use (fill output lines)

    # -- credentials ----------------------------------------------------------------------

    def credentials(
        self, url: str, username_from_url: str | None, allowed_types: CredentialType
    ) -> _Credential:
        self.attempts += 1
        # libgit2 asks again only when the previous answer was refused.
        self._settle(ok=False)
        if self.attempts > self.max_attempts:
            raise TransportError(
                f"authentication to {_where(url)} failed after {self.max_attempts} attempts — "
                "check the token or credential helper for this remote (`git credential fill`), "
                f"{USE_GIT_BACKEND}"
            )
        if allowed_types & CredentialType.USERNAME and not allowed_types & (
            CredentialType.SSH_KEY | CredentialType.USERPASS_PLAINTEXT
        ):
            return pygit2.Username(username_from_url or "git")
        if self._answers is None:
            self._answers = self._candidates(url, username_from_url, allowed_types)
        for answer in self._answers:
            if answer.credential_type & allowed_types:  # libgit2 may narrow what it accepts
                return answer
        raise TransportError(_no_credentials(url))

    def _candidates(
        self, url: str, username: str | None, allowed: CredentialType
    ) -> Iterator[_Credential]:
        if allowed & CredentialType.SSH_KEY:
            user = username or "git"
            if os.environ.get("SSH_AUTH_SOCK"):
                yield pygit2.KeypairFromAgent(user)
            ssh_dir = Path.home() / ".ssh"
            for name in _SSH_KEY_FILES:
                private, public = ssh_dir / name, ssh_dir / f"{name}.pub"
                if private.is_file() and public.is_file():
                    yield pygit2.Keypair(user, str(public), str(private), "")
        if allowed & CredentialType.USERPASS_PLAINTEXT and urlsplit(url).scheme.lower() in ("http", "https"):
            token = github_token(url, self.github_hosts)
            if token:
                yield pygit2.UserPass("x-access-token", token)
            tried: set[tuple[str, str]] = set()
            while True:
                filled = self._credential("fill", _describe(url, username))
                if filled is None:
                    return
                fields = _fields(filled)
                pair = (fields.get("username", ""), fields.get("password", ""))
                if not pair[1] or pair in tried:  # the helpers have nothing new to offer
                    return
                tried.add(pair)
                self._pending = filled
                yield pygit2.UserPass(*pair)

    def finish(self, *, ok: bool | None) -> None:
        """After the operation: tell the credential helpers whether their answer worked
        (``None``: the operation failed for another reason, so say nothing)."""
        self._settle(ok=ok)

    def _settle(self, *, ok: bool | None) -> None:
        if self._pending is not None:
            pending, self._pending = self._pending, None
            if ok is not None:
                self._credential("approve" if ok else "reject", "".join(f"{line}\n" for line in pending))

    def _credential(self, action: str, description: str) -> list[str] | None:
        """``git credential fill|approve|reject`` (git-lfs's bridge to the user's helpers)."""
        exe = shutil.which("git")
        if exe is None or not description:
            return None
        env = {key: value for key, value in os.environ.items() if key not in REPO_ENV}
        env["GIT_TERMINAL_PROMPT"] = "0"
        args = [exe] + (["-C", str(self.workdir)] if self.workdir else []) + ["credential", action]
        try:
            proc = subprocess.run(
                args, input=description + "\n", capture_output=True, text=True, env=env,
                timeout=self.timeout, check=False,
            )  # fmt: skip
        except (OSError, subprocess.TimeoutExpired):
            return None
        if proc.returncode != 0:
            return None
        return [line for line in proc.stdout.splitlines() if "=" in line]

    # -- host identity --------------------------------------------------------------------

    def certificate_check(self, certificate: None, valid: bool, host: bytes) -> bool:
        # pygit2's default accepts unknown *and* mismatched SSH host keys (§2.8); libgit2 has
        # checked ~/.ssh/known_hosts (or the TLS chain) and says so in ``valid``.
        return valid

    # -- what the server said ---------------------------------------------------------------

    def sideband_progress(self, string: str) -> None:
        self._sideband.append(string)

    def push_update_reference(self, refname: str, message: str | None) -> None:
        if message:
            self.rejected[refname] = message
        else:
            self.accepted.append(refname)

    def server_lines(self) -> list[str]:
        """The server's text (hook output), split into lines, without progress meters."""
        lines: list[str] = []
        for raw in re.split(r"[\r\n]+", "".join(self._sideband)):
            text = raw.strip()
            if text and not _PROGRESS.search(text) and text not in lines:
                lines.append(text)
        return lines


def github_token(url: str, github_hosts: Iterable[str] = ()) -> str | None:
    """A token from the environment for an HTTPS remote on GitHub (gh's precedence:
    GH_TOKEN, GITHUB_TOKEN; for Enterprise hosts — ``github_hosts`` or GH_HOST — first
    GH_ENTERPRISE_TOKEN, GITHUB_ENTERPRISE_TOKEN). Never sent over plain HTTP."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if parts.scheme.lower() != "https" or not host:
        return None
    enterprise = {h.lower() for h in github_hosts} | {os.environ.get("GH_HOST", "").lower()}
    enterprise -= {"", "github.com"}
    if host == "github.com" or host.endswith(".ghe.com"):
        names: tuple[str, ...] = ("GH_TOKEN", "GITHUB_TOKEN")
    elif host in enterprise or (parts.netloc.rpartition("@")[2].lower() in enterprise):
        names = ("GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN", "GH_TOKEN", "GITHUB_TOKEN")
    else:
        return None
    for name in names:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    return None


def _describe(url: str, username: str | None) -> str:
    """The ``git credential`` input for ``url`` (empty when it cannot be described)."""
    parts = urlsplit(url)
    fields = {
        "protocol": parts.scheme.lower(),
        "host": parts.netloc.rpartition("@")[2],
        "path": parts.path.lstrip("/"),
    }
    if username:
        fields["username"] = username
    if not fields["protocol"] or not fields["host"]:
        return ""
    if any("\n" in value or "\0" in value for value in fields.values()):
        return ""
    return "".join(f"{key}={value}\n" for key, value in fields.items())


def _fields(lines: list[str]) -> dict[str, str]:
    return dict(line.split("=", 1) for line in lines)


def _where(url: str) -> str:
    parts = urlsplit(url)
    return redact(parts.netloc.rpartition("@")[2] or url)


def _no_credentials(url: str) -> str:
    where = _where(url)
    if urlsplit(url).scheme.lower() in ("http", "https"):
        return (
            f"authentication to {where} failed: no working credential — set GH_TOKEN for "
            "GitHub, or store one with a credential helper (`gh auth setup-git`, "
            f"`git credential approve`), {USE_GIT_BACKEND}"
        )
    return (
        f"SSH authentication to {where} failed — load your key with `ssh-add` (ssh-agent), "
        f"{USE_GIT_BACKEND} (it reads ~/.ssh/config)"
    )
