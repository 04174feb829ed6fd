"""The repository's commit hooks around a submit commit, as ``git commit --only <paths>``
runs them: libgit2 runs no hooks, and a team's ``pre-commit`` or ``commit-msg`` check is not
ours to skip (session-8 review: a hook exiting 1 stopped ``git commit`` but not ``submit``).

Git's order: ``pre-commit`` with ``GIT_INDEX_FILE`` naming a temporary index that holds HEAD
plus the paths being committed; ``prepare-commit-msg FILE message``; ``commit-msg FILE``; the
commit; ``post-commit`` (its exit ignored). A hook's output is captured — the MCP server's
stdout is its protocol — and its last lines name the refusal. ``--no-verify`` skips the two
that can refuse, as it does for git.

``submit`` runs them without holding the project's write lock (a team's hook may run a test
suite), so each gets ``HOOK_TIMEOUT_S`` — far more than a check takes, and a hook that waits
on something that never comes ends instead of holding up every later submit. Refusals name
the CLI's ``--no-verify`` as the way past, whichever surface ran the submit: the MCP tool has
no such switch, and skipping a team's checks is the user's call.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import MemexError
from ..gitinfo import hook_file

if TYPE_CHECKING:
    import pygit2

    from .repo import GitRepo

TAIL_LINES = 8
HOOK_TIMEOUT_S = 600.0  # per hook; git has none, but a submit holds up the project's next one
SKIP = "`open-memex submit --no-verify` skips the hooks"  # the way past, for every surface


def hook_path(gitrepo: GitRepo, name: str) -> Path | None:
    """The hook git would run (``gitinfo.hook_file``: a linked worktree's are the main
    repository's, which ``repo.path`` alone would have missed)."""
    return hook_file(Path(gitrepo.repo.path), gitrepo.workdir, name)


def _remove_orphans(git_dir: Path) -> None:
    """Temporary indexes a submit killed during its hooks left (``kill -9`` skips the
    ``finally`` that removes them): those of processes that no longer run."""
    for path in git_dir.glob("open-memex-index.*"):
        pid = path.suffix.lstrip(".")
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            path.unlink(missing_ok=True)
        except (PermissionError, OSError, OverflowError):
            continue  # alive under another user, or not ours to judge


@dataclass
class HookRun:
    """The hooks of one commit: ``before`` runs the refusing ones and returns the message
    (a hook may rewrite it); ``after`` runs post-commit."""

    gitrepo: GitRepo
    verify: bool = True

    def has_hooks(self) -> bool:
        """Whether ``before`` has a hook to run."""
        names = ("pre-commit", "prepare-commit-msg", "commit-msg") if self.verify else ("prepare-commit-msg",)
        return any(hook_path(self.gitrepo, name) is not None for name in names)

    def before(self, index: pygit2.Index, message: str) -> str:
        """Run pre-commit (on ``index`` written to a temporary file), prepare-commit-msg
        and commit-msg; raise a ``MemexError`` when one refuses or pre-commit changed what
        would be committed. Returns the commit message as the hooks left it."""
        names = ("pre-commit", "prepare-commit-msg", "commit-msg") if self.verify else ("prepare-commit-msg",)
        hooks = {name: hook_path(self.gitrepo, name) for name in names}
        if not any(hooks.values()):
            return message
        git_dir = Path(self.gitrepo.repo.path)
        _remove_orphans(git_dir)
        index_file = git_dir / f"open-memex-index.{os.getpid()}"
        message_file = git_dir / "COMMIT_EDITMSG"
        try:
            tree = index.write_tree(self.gitrepo.repo)
            if hooks.get("pre-commit") is not None:
                self._write_index(index, index_file)
                self._run("pre-commit", hooks["pre-commit"], [], index_file)
                if self._tree_of(index_file) != tree:
                    raise MemexError("the pre-commit hook changed what the submit commit would hold — nothing was "
                                     f"committed; run the hook's fixes yourself, then retry ({SKIP})")  # fmt: skip
            message_file.write_text(message, encoding="utf-8")
            if hooks.get("prepare-commit-msg") is not None:
                self._run("prepare-commit-msg", hooks["prepare-commit-msg"], [str(message_file), "message"], None)
            if hooks.get("commit-msg") is not None:
                self._run("commit-msg", hooks["commit-msg"], [str(message_file)], None)
            text = message_file.read_text("utf-8", errors="replace")
        except OSError as exc:
            raise MemexError(f"cannot run the repository's commit hooks ({exc.strerror or exc}) — nothing was "
                             f"committed; check .git/hooks (or core.hooksPath), then retry ({SKIP})") from None  # fmt: skip
        finally:
            index_file.unlink(missing_ok=True)
        lines = [line for line in text.splitlines() if not line.startswith("#")]
        cleaned = "\n".join(lines).strip()
        if not cleaned:
            raise MemexError("a commit-msg hook left the submit commit's message empty — nothing was committed")
        return cleaned + "\n"

    def after(self) -> None:
        hook = hook_path(self.gitrepo, "post-commit")
        if hook is not None:
            with contextlib.suppress(OSError):  # git ignores post-commit's outcome too
                self._run("post-commit", hook, [], None, check=False)

    def _write_index(self, index: pygit2.Index, path: Path) -> None:
        import pygit2

        on_disk = pygit2.Index(str(path))
        for entry in index:
            on_disk.add(entry)
        on_disk.write()

    def _tree_of(self, path: Path) -> pygit2.Oid:
        import pygit2

        return pygit2.Index(str(path)).write_tree(self.gitrepo.repo)

    def _run(self, name: str, hook: Path | None, args: list[str], index_file: Path | None, check: bool = True) -> None:
        assert hook is not None
        env = {**os.environ, "GIT_EDITOR": ":"}
        if index_file is not None:
            env["GIT_INDEX_FILE"] = str(index_file)
        returncode, out = run_bounded([str(hook), *args], self.gitrepo.workdir, env, HOOK_TIMEOUT_S)
        if returncode is None and check:
            raise MemexError(f"the repository's {name} hook ran for more than {HOOK_TIMEOUT_S:.0f} s and was stopped — "
                             f"nothing was committed; find out what it waits for, then retry ({SKIP})")  # fmt: skip
        if check and returncode != 0:
            from ..terminal import safe

            output = out.decode("utf-8", errors="replace").strip().splitlines()
            said = " | ".join(line.strip() for line in output[-TAIL_LINES:] if line.strip())
            raise MemexError(f"the repository's {name} hook refused the submit commit (exit {returncode})"
                             + (f": {safe(said)}" if said else "")
                             + f" — nothing was committed; fix what it reports, then retry ({SKIP})")  # fmt: skip


def run_bounded(argv: list[str], cwd: Path, env: dict[str, str], timeout_s: float) -> tuple[int | None, bytes]:
    """Run ``argv`` with its output captured; (exit code, output), or (None, output so far)
    when it ran past ``timeout_s``. The hook gets a process group of its own so that what it
    started goes too (a linter left running would hold the pipe open), also when we are
    interrupted (Ctrl-C, a cancelled tool call)."""
    posix = sys.platform != "win32"
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=posix)  # fmt: skip
    try:
        out, _ = proc.communicate(timeout=timeout_s)
        return proc.returncode, out
    except subprocess.TimeoutExpired:
        _stop(proc, posix)
        out, _ = proc.communicate()
        return None, out
    except BaseException:
        _stop(proc, posix)
        proc.wait()
        raise


def _stop(proc: subprocess.Popen[bytes], posix: bool) -> None:
    with contextlib.suppress(OSError):
        if posix:
            os.killpg(proc.pid, signal.SIGKILL)
        else:  # pragma: no cover - Windows
            proc.kill()
