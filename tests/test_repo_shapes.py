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


def test_a_memory_folder_that_is_a_link_or_a_file_is_refused_before_anything_is_written(
        cli: Any, git_repo: Path) -> None:  # fmt: skip
    """The team committed `.ai/open-memex` as a link to docs/memories: a submit through it
    would commit a folder in place of their link (a change to a file open-memex did not
    write). A file there cannot hold memories. Both are refused with the way out, nothing
    written, nothing committed; `setup` alike."""
    (git_repo / "docs" / "memories").mkdir(parents=True)
    (git_repo / "docs" / "memories" / "README.txt").write_text("keep\n")
    (git_repo / ".ai").mkdir()
    (git_repo / ".ai" / "open-memex").symlink_to("../docs/memories")
    git("add", "-A", cwd=git_repo)
    git("commit", "-qm", "memories live in docs/memories", cwd=git_repo)
    head = git("rev-parse", "HEAD", cwd=git_repo)
    memory = _draft(cli, "release tags are signed by the release bot")
    result = cli("submit", memory)
    assert result.rc == 1 and ".ai/open-memex is a symbolic link" in result.err, result.err
    assert "config set memoryDir docs/memories" in result.err and "Traceback" not in result.err
    setup = cli("setup")  # writes .gitattributes through the link and commits nothing: fine
    assert setup.rc == 0, setup.err
    assert "merge: openmemex" in git("check-attr", "merge", "--", f".ai/open-memex/{memory}.md", cwd=git_repo)
    (git_repo / "docs" / "memories" / ".gitattributes").unlink()
    assert git("rev-parse", "HEAD", cwd=git_repo) == head
    assert git("status", "--porcelain", "--untracked-files=all", cwd=git_repo) == ""
    assert sorted(p.name for p in (git_repo / "docs" / "memories").iterdir()) == ["README.txt"]
    assert cli("config", "set", "memoryDir", "docs/memories").rc == 0  # the way out works
    assert cli("submit", memory).rc == 0
    assert f"docs/memories/{memory}.md" in git("show", "--name-only", "--format=", "HEAD", cwd=git_repo)
    assert (git_repo / ".ai" / "open-memex").is_symlink()

    git("rm", "-q", ".ai/open-memex", cwd=git_repo)
    (git_repo / ".ai").mkdir(exist_ok=True)
    (git_repo / ".ai" / "open-memex").write_text("notes\n")
    git("add", "-A", cwd=git_repo)
    git("commit", "-qm", "a file where the folder goes", cwd=git_repo)
    assert cli("config", "set", "memoryDir", ".ai/open-memex").rc == 0
    other = _draft(cli, "a second draft")
    for args in (("submit", other), ("setup",)):
        result = cli(*args)
        assert result.rc == 1 and ".ai/open-memex is a file where open-memex keeps memory files" in result.err
        assert "internal error" not in result.err
    assert git("status", "--porcelain", cwd=git_repo) == ""


def test_a_commit_never_replaces_a_file_in_head_with_a_folder(git_repo: Path) -> None:
    """The last guard, below every caller: a path of ours whose folder is a file or a link
    in HEAD is refused by the commit itself."""
    import pygit2

    from openmemex.errors import MemexError
    from openmemex.git.repo import GitRepo
    from openmemex.git.submit import commit_paths

    (git_repo / "mem").write_text("a file\n")
    git("add", "mem", cwd=git_repo)
    git("commit", "-qm", "file", cwd=git_repo)
    head = git("rev-parse", "HEAD", cwd=git_repo)
    gitrepo = GitRepo(pygit2.Repository(str(git_repo)), git_repo, "mem")
    with pytest.raises(MemexError, match="mem is a file or link in HEAD"):
        commit_paths(gitrepo, ["mem/01J0000000000000000000000A.md"], "mem: x")
    assert git("rev-parse", "HEAD", cwd=git_repo) == head
