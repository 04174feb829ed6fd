"""Backend ``git``: the user's own ``git fetch`` / ``git push`` as subprocesses, so every
remote behaves exactly as it does for ``git pull`` (notes/git-and-pygit2.md §0.1)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from .transport import (
    TIMEOUT_SECONDS,
    PushResult,
    TransportError,
    check_remote,
    failure,
    is_non_fast_forward,
    non_fast_forward,
    one_line,
    qualify_refs,
    server_rejected,
)

# Variables that would point git at another repository than ``-C <workdir>`` (set when we run
# inside a git hook or under `git memex`'s caller); pre-commit's no_git_env drops them too.
REPO_ENV = (
    "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_NAMESPACE", "GIT_PREFIX",
)  # fmt: skip

# Lines that carry no information for the one-line message.
_NOISE = re.compile(
    r"^(hint:|to |from |done$|please make sure you have the correct access rights"
    r"|and the repository exists|fatal: could not read from remote repository"
    r"|error: failed to push some refs|everything up-to-date)",
    re.IGNORECASE,
)
_PROGRESS = re.compile(
    r"^(enumerating|counting|compressing|writing|total|resolving|receiving|unpacking)\b"
    r"|^(processing|create a pull request|\s*https?://\S+\s*$)",
    re.IGNORECASE,
)


def interactive() -> bool:
    """True when a person can answer a prompt (stdin is a terminal)."""
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (ValueError, OSError):
        return False


def child_env(*, prompt: bool) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in REPO_ENV}
    if not prompt:
        env["GIT_TERMINAL_PROMPT"] = "0"
    return env


@dataclass(frozen=True)
class _Run:
    rc: int
    out: str
    err: str


class GitTransport:
    """Fetch and push with the ``git`` executable on PATH."""

    name = "git"

    def __init__(self, *, timeout: float = TIMEOUT_SECONDS) -> None:
        self.timeout = timeout

    def fetch(self, workdir: Path, remote: str) -> None:
        check_remote(remote)
        run = self._git(workdir, "fetch", "--", remote, what=f"git fetch {remote}")
        if run.rc != 0:
            raise failure("fetch from", remote, _condense(run.err), self._fallback(workdir, "fetch", remote))

    def push(self, workdir: Path, remote: str, local_ref: str, remote_ref: str) -> PushResult:
        check_remote(remote)
        local, dst = qualify_refs(local_ref, remote_ref)
        resolved = self._git(workdir, "rev-parse", "--verify", "--quiet", local, what="git rev-parse")
        target = resolved.out.strip()
        if resolved.rc != 0 or not target:
            raise TransportError(
                f"cannot push {local}: no such ref in {workdir} — check the branch name (`git branch`)"
            )
        run = self._git(workdir, "push", "--porcelain", "--", remote, f"{local}:{dst}", what=f"git push {remote}")
        if run.rc == 0:
            return PushResult(remote, local, dst, target)
        rejected = _rejections(run.out)
        if rejected:
            ref, kind, reason = rejected[0]
            if kind == "rejected" and is_non_fast_forward(reason):
                raise non_fast_forward(remote, local, ref, reason)
            if kind in ("rejected", "remote rejected"):
                raise server_rejected(remote, ref, reason or kind, _remote_lines(run.err))
        raise failure("push to", remote, _condense(run.err), self._fallback(workdir, "push", remote))

    @staticmethod
    def _fallback(workdir: Path, verb: str, remote: str) -> str:
        return f"run `git -C {workdir} {verb} {remote}` to see git's full output"

    def _git(self, workdir: Path, *args: str, what: str) -> _Run:
        exe = shutil.which("git")
        if exe is None:
            raise TransportError(
                "no `git` executable on PATH — install git, or use the in-process transport "
                "with `open-memex config set sync.transport pygit2`"
            )
        prompt = interactive()
        try:
            proc = subprocess.Popen(
                [exe, "-C", str(workdir), *args],
                stdin=None if prompt else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=child_env(prompt=prompt),
                # Without a terminal, run in a new session so a timeout can end git *and* its
                # ssh / remote-helper children (they would otherwise outlive it).
                start_new_session=not prompt,
            )
        except OSError as exc:
            raise TransportError(f"cannot run git: {exc} — check your git installation") from None
        with proc:
            try:
                out, err = proc.communicate(timeout=self.timeout)
            except subprocess.TimeoutExpired:
                _kill(proc, group=not prompt)
                raise TransportError(
                    f"{what} timed out after {self.timeout:g} s — check your network connection "
                    "and the remote's URL (`git remote -v`)"
                ) from None
        return _Run(proc.returncode, _text(out), _text(err))


def _kill(proc: subprocess.Popen[bytes], *, group: bool) -> None:
    try:
        if group and hasattr(os, "killpg"):
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _rejections(porcelain: str) -> list[tuple[str, str, str]]:
    """(remote ref, kind, reason) for each ``!`` line of ``git push --porcelain``, e.g.
    ``!\trefs/heads/main:refs/heads/main\t[remote rejected] (pre-receive hook declined)``."""
    found = []
    for line in porcelain.splitlines():
        if not line.startswith("!\t"):
            continue
        parts = line.split("\t")
        if len(parts) < 3:
            continue
        dst = parts[1].rpartition(":")[2]
        match = re.match(r"\[([^\]]*)\]\s*(?:\((.*)\))?", parts[2])
        kind, reason = (match.group(1), match.group(2) or "") if match else (parts[2], "")
        found.append((dst, kind, reason))
    return found


def _remote_lines(stderr: str) -> list[str]:
    """What the server said (hook output, branch-protection text), without progress noise."""
    lines = []
    for raw in re.split(r"[\r\n]+", stderr):
        if not raw.startswith("remote:"):
            continue
        text = raw[len("remote:") :].strip()
        if text and not _PROGRESS.search(text) and text not in lines:
            lines.append(text)
    return lines


def _condense(stderr: str) -> str:
    """git's stderr as one readable line: server text, then fatal/error lines, minus noise."""
    picked = [f"remote: {line}" for line in _remote_lines(stderr)]
    for raw in re.split(r"[\r\n]+", stderr):
        line = raw.strip()
        if not line or line.startswith("remote:") or _NOISE.search(line):
            continue
        for prefix in ("fatal: ", "error: ", "warning: "):
            line = line.removeprefix(prefix)
        if line not in picked:
            picked.append(line)
    if not picked:  # only noise: keep the last thing git said
        tail = [line.strip() for line in stderr.splitlines() if line.strip()]
        picked = tail[-1:]
    return one_line("; ".join(picked))
