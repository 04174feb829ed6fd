"""Fetch and push: one interface, two backends (SPEC §2 "Transport").

Backend ``git`` runs the user's own ``git fetch`` / ``git push`` so ~/.ssh/config, credential
helpers, ``http.extraheader`` and ``core.sshCommand`` behave exactly as for ``git pull``.
Backend ``pygit2`` is fully in-process for machines without a git executable, with the
safeguards libgit2 lacks (notes/git-and-pygit2.md §0, §2.7, §2.8). Everything else in the
sync layer (the fast-forward, commits, conflict stages) is pygit2 and never a subprocess.

Importing this module must not import pygit2 (the CLI's read path stays light): the backends
are imported only by :func:`get_transport`.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..errors import MemexError, UsageError

TIMEOUT_SECONDS = 120.0
"""Longest a single fetch or push (or credential-helper call) may take."""

MAX_AUTH_ATTEMPTS = 3
"""Credential answers the pygit2 backend offers before giving up (libgit2 would replay 15)."""

PULL_FIRST = "run `git memex pull` first, then push again"
USE_GIT_BACKEND = "or use your own git with `open-memex config set sync.transport git`"


class TransportError(MemexError):
    """A fetch or push failed; the one-line message names the next step."""


class PushRejected(TransportError):
    """The remote (or the client's own fast-forward check) refused to update a ref."""


@dataclass(frozen=True)
class PushResult:
    remote: str
    local_ref: str  # e.g. "refs/heads/main"
    remote_ref: str
    new_target: str  # hex sha the remote ref now points to


class Transport(Protocol):
    name: str  # "git" or "pygit2"

    def fetch(self, workdir: Path, remote: str) -> None:
        """Fetch with the remote's configured refspecs (updates refs/remotes/<remote>/*)."""
        ...

    def push(self, workdir: Path, remote: str, local_ref: str, remote_ref: str) -> PushResult:
        """Push ``local_ref`` to ``remote_ref``: never forced, never a '+' refspec."""
        ...


def get_transport(setting: str = "auto", *, github_hosts: tuple[str, ...] = ()) -> Transport:
    """The backend for ``sync.transport``: ``auto`` is git when a ``git`` executable is on
    PATH, else pygit2. ``github_hosts`` names GitHub Enterprise hosts whose HTTPS remotes
    the pygit2 backend may authenticate with GH_TOKEN / GITHUB_TOKEN."""
    choice = setting.strip().lower()
    if choice == "auto":
        choice = "git" if shutil.which("git") else "pygit2"
    if choice == "git":
        from .transport_git import GitTransport

        return GitTransport()
    if choice == "pygit2":
        from .transport_pygit2 import Pygit2Transport

        return Pygit2Transport(github_hosts=github_hosts)
    raise UsageError(
        f"unknown sync.transport {setting!r} — use auto, git or pygit2 "
        "(`open-memex config set sync.transport auto`)"
    )


# ----------------------------------------------------------------------------------------
# Shared by both backends: argument checks and message wording, so a failure reads the same
# whichever backend ran.

_REMOTE_NAME = re.compile(r"[^\s\x00-\x1f\x7f-][^\s\x00-\x1f\x7f]*")
_BAD_REF_CHARS = re.compile(r"[\s\x00-\x1f\x7f~^:?*\[\\]|\.\.|@\{|^[-+/]|/$|\.lock$|^\.|/\.")


def check_remote(remote: str) -> None:
    if not _REMOTE_NAME.fullmatch(remote or ""):
        raise UsageError(f"invalid remote name {remote!r} — name a remote from `git remote -v`")


def qualify_refs(local_ref: str, remote_ref: str) -> tuple[str, str]:
    """Full ref names for a push; a bare name means a branch (``main`` → ``refs/heads/main``).
    A leading '+' (force) or anything else that is not a plain ref name is refused."""
    qualified = []
    for ref in (local_ref, remote_ref):
        if not ref or _BAD_REF_CHARS.search(ref):
            hint = " (open-memex never force-pushes)" if ref.startswith("+") else ""
            raise UsageError(f"invalid ref name {ref!r} for push{hint} — name a branch such as refs/heads/main")
        qualified.append(ref if ref.startswith("refs/") else f"refs/heads/{ref}")
    return qualified[0], qualified[1]


_URL_SECRET = re.compile(r"([a-z][a-z0-9+.-]*://[^/@\s:]*):[^/@\s]+@", re.IGNORECASE)


def redact(text: str) -> str:
    """Hide a password or token embedded in a URL (``https://user:TOKEN@host``)."""
    return _URL_SECRET.sub(r"\1:***@", text)


_STEPS: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"could not resolve host|failed to resolve address|name or service not known"
                   r"|temporary failure in name resolution|nodename nor servname"),
        "check the remote's URL (`git remote -v`) and your network connection",
    ),
    (
        re.compile(r"host key|hostkey|certificate"),
        "check the server's identity: connect once with `ssh` to record its host key in "
        "~/.ssh/known_hosts, or fix the TLS certificate setup",
    ),
    (
        re.compile(r"authentication|could not read (username|password)|terminal prompts disabled"
                   r"|permission denied|\b40[13]\b|credential|access denied|unauthorized"),
        "check your credentials: a token or credential helper for HTTPS (e.g. `gh auth "
        "setup-git`), or your SSH key loaded with `ssh-add`",
    ),
    (
        re.compile(r"connection refused|failed to connect|couldn't connect|could not connect"
                   r"|timed out|network is unreachable|connection reset|early eof"
                   r"|unexpected disconnect|hung up"),
        "check your network connection and that the server is reachable",
    ),
    (
        re.compile(r"not a git repository"),
        "run this inside a clone of the repository (or check the path)",
    ),
    (
        re.compile(r"does not appear to be a git repository|not found|no such remote"
                   r"|could not find remote"),
        "check the remote's name and URL (`git remote -v`)",
    ),
)  # fmt: skip


def next_step(detail: str, fallback: str) -> str:
    """The next step for a failure whose text is ``detail``."""
    low = detail.lower()
    for pattern, step in _STEPS:
        if pattern.search(low):
            return step
    return fallback


def failure(operation: str, remote: str, detail: str, fallback: str) -> TransportError:
    """``fetch from 'origin' failed: <detail> — <next step>`` as one line."""
    detail = one_line(redact(detail)) or "no details"
    return TransportError(f"{operation} '{remote}' failed: {detail} — {next_step(detail, fallback)}")


def one_line(text: str, limit: int = 400) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def non_fast_forward(remote: str, local_ref: str, remote_ref: str, reason: str) -> PushRejected:
    return PushRejected(
        f"push to '{remote}' rejected: the remote's {remote_ref} has commits that your "
        f"{local_ref} does not have ({reason}) — {PULL_FIRST}"
    )


def server_rejected(remote: str, remote_ref: str, reason: str, server_text: list[str]) -> PushRejected:
    said = f": {one_line(' / '.join(server_text))}" if server_text else ""
    return PushRejected(
        f"push to '{remote}' rejected by the server for {remote_ref} ({reason}){said} — "
        "do what the server's message asks (a protected branch takes changes through a pull "
        "request: push to another branch), then push again"
    )


def is_non_fast_forward(reason: str) -> bool:
    low = reason.lower()
    return any(s in low for s in ("non-fast-forward", "fetch first", "non-fastforward",
                                  "not present locally", "fast forward", "fast-forward"))  # fmt: skip
