"""Hermetic test environment: every test gets its own data root, HOME, git identity and
working folder; a tripwire fails any test that touches the real data root."""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

# HOME and git config must be hermetic before pygit2 is imported anywhere (it reads HOME
# at import time; notes/git-and-pygit2.md).
_REAL_HOME = Path(os.environ.get("HOME", str(Path.home())))
_REAL_DATA_ROOT = Path(os.environ.get("XDG_DATA_HOME") or _REAL_HOME / ".local" / "share") / "open-memex"
_SESSION_DIR = Path(tempfile.mkdtemp(prefix="omx-session-"))
atexit.register(shutil.rmtree, _SESSION_DIR, ignore_errors=True)
_GITCONFIG = _SESSION_DIR / "gitconfig"
_GITCONFIG.write_text(
    "[user]\n\tname = Test User\n\temail = test@example.com\n"
    "[init]\n\tdefaultBranch = main\n[commit]\n\tgpgsign = false\n[protocol \"file\"]\n\tallow = always\n"
)
for var in ("GIT_DIR", "GIT_INDEX_FILE", "GIT_WORK_TREE", "GIT_OBJECT_DIRECTORY", "GIT_COMMON_DIR",
            "OPEN_MEMEX_CONFIG", "MY_O_MEMORY_HOME", "MY_O_MEMORY_CONFIG", "XDG_DATA_HOME"):  # fmt: skip
    os.environ.pop(var, None)
os.environ.update(
    {
        "HOME": str(_SESSION_DIR / "home"),
        "OPEN_MEMEX_HOME": str(_SESSION_DIR / "data"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": str(_GITCONFIG),
        "GIT_TEMPLATE_DIR": str(_SESSION_DIR / "no-templates"),
        "GIT_AUTHOR_NAME": "Test User",
        "GIT_AUTHOR_EMAIL": "test@example.com",
        "GIT_COMMITTER_NAME": "Test User",
        "GIT_COMMITTER_EMAIL": "test@example.com",
    }
)
(_SESSION_DIR / "home").mkdir()
(_SESSION_DIR / "no-templates").mkdir()


def _snapshot(root: Path) -> tuple[bool, tuple[tuple[str, int], ...]]:
    if not root.exists():
        return False, ()
    items = []
    for path in sorted(root.rglob("*")):
        try:
            items.append((str(path), path.stat().st_mtime_ns))
        except OSError:
            continue
    return True, tuple(items)


_REAL_BEFORE = _snapshot(_REAL_DATA_ROOT)


@pytest.fixture(autouse=True)
def hermetic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Own OPEN_MEMEX_HOME, HOME and cwd per test; fail if the real data root changed."""
    home = tmp_path / "home"
    home.mkdir()
    data = tmp_path / "data"
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("OPEN_MEMEX_HOME", str(data))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    for client_home in ("CODEX_HOME", "CLAUDE_CONFIG_DIR"):  # agent hosts' own homes: never the developer's
        monkeypatch.delenv(client_home, raising=False)
    monkeypatch.chdir(work)
    yield data
    assert _snapshot(_REAL_DATA_ROOT) == _REAL_BEFORE, f"a test touched the real data root {_REAL_DATA_ROOT}"


@pytest.fixture
def data_root(hermetic: Path) -> Path:
    return hermetic


@dataclass
class Result:
    rc: int
    out: str
    err: str


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> object:
    """Run the CLI in-process: ``cli("add", "text")`` → Result(rc, out, err)."""
    from openmemex.cli.app import run

    def invoke(*args: str) -> Result:
        capsys.readouterr()
        rc = run(list(args))
        captured = capsys.readouterr()
        return Result(rc, captured.out, captured.err)

    return invoke


def run_process(*args: str, cwd: Path | None = None, input: str | None = None,
                env: dict[str, str] | None = None) -> Result:  # fmt: skip
    """Run ``open-memex`` as a real process (the installed console script's module)."""
    full_env = {**os.environ, **(env or {})}
    proc = subprocess.run(
        [sys.executable, "-c", "from openmemex.cli.app import main; main()", *args],
        cwd=cwd, input=input, capture_output=True, text=True, env=full_env, timeout=120,
    )  # fmt: skip
    return Result(proc.returncode, proc.stdout, proc.stderr)


def git(*args: str, cwd: Path) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return proc.stdout


@pytest.fixture
def git_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh repository with one commit and an origin URL; the test's cwd."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git("init", "-q", "-b", "main", cwd=repo)
    git("remote", "add", "origin", "git@github.com:acme/widgets.git", cwd=repo)
    (repo / "README.md").write_text("hello\n")
    git("add", "README.md", cwd=repo)
    git("commit", "-q", "-m", "initial", cwd=repo)
    monkeypatch.chdir(repo)
    return repo
