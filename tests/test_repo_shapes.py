"""Repository shapes libgit2 cannot handle are refused with the way out named; linked
worktrees and subdirectories work."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import git


def _draft(cli: Any, text: str) -> str:
    return str(json.loads(cli("add", text, "--json").out)["id"])


def test_sha256_repository_is_refused(cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = tmp_path / "sha"
    proc = subprocess.run(["git", "init", "-q", "--object-format=sha256", str(repo)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    monkeypatch.chdir(repo)
    memory = _draft(cli, "a draft in a sha256 repository")
    result = cli("submit", memory)
    assert result.rc == 1 and "SHA-256" in result.err and "Traceback" not in result.err
    assert cli("search", "draft").rc == 0  # read commands still work


def test_split_index_is_refused(cli: Any, git_repo: Path) -> None:
    git("update-index", "--split-index", cwd=git_repo)
    result = cli("submit", _draft(cli, "split index draft"))
    assert result.rc == 1 and "split index" in result.err and "--no-split-index" in result.err


def test_sparse_checkout_is_refused(cli: Any, git_repo: Path) -> None:
    git("sparse-checkout", "set", "docs", cwd=git_repo)
    result = cli("submit", _draft(cli, "sparse draft"))
    assert result.rc == 1 and "sparse" in result.err


def test_partial_clone_is_refused(cli: Any, git_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    git("config", "uploadpack.allowFilter", "true", cwd=git_repo)
    clone = tmp_path / "partial"
    git("clone", "-q", "--filter=blob:none", f"file://{git_repo}", str(clone), cwd=tmp_path)
    monkeypatch.chdir(clone)
    result = cli("submit", _draft(cli, "partial clone draft"))
    assert result.rc == 1 and "partial clone" in result.err


def test_submit_in_a_linked_worktree(cli: Any, git_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    worktree = tmp_path / "wt"
    git("worktree", "add", "-q", "-b", "feature", str(worktree), cwd=git_repo)
    monkeypatch.chdir(worktree)
    memory = _draft(cli, "written from a linked worktree")
    result = cli("submit", memory)
    assert result.rc == 0, result.err
    assert "on feature" in result.out
    assert f".ai/open-memex/{memory}.md" in git("show", "--name-only", "--format=", "feature", cwd=git_repo)
    assert git("rev-parse", "main", cwd=git_repo) != git("rev-parse", "feature", cwd=git_repo)
    assert git("status", "--porcelain", cwd=worktree).strip() == ""


def test_unborn_head(cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = tmp_path / "fresh"
    git("init", "-q", "-b", "main", str(repo), cwd=tmp_path)
    monkeypatch.chdir(repo)
    memory = _draft(cli, "the very first commit is a memory")
    result = cli("submit", memory)
    assert result.rc == 0, result.err
    assert git("rev-list", "--count", "HEAD", cwd=repo).strip() == "1"
    git("fsck", cwd=repo)


def test_paths_that_look_like_index_extensions_are_fine(cli: Any, git_repo: Path) -> None:
    """Regression: a tracked path containing "link" once read as a split-index marker."""
    for name in ("links.md", "unlink.c", "symlink/linker.c"):
        (git_repo / name).parent.mkdir(parents=True, exist_ok=True)
        (git_repo / name).write_text("x\n")
    git("add", ".", cwd=git_repo)
    git("commit", "-q", "-m", "links", cwd=git_repo)
    assert cli("sync-status").rc == 0
    assert cli("submit", _draft(cli, "works next to links.md")).rc == 0
