"""Scope identity (design §4, D71): the same repository gets the same key everywhere."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from openmemex.scope import normalize_remote, resolve_project, scope_for_folder, scope_for_remote
from tests.conftest import git

CANON = "https://github.com/acme/widgets"


@pytest.mark.parametrize(
    "url",
    [
        "git@github.com:acme/widgets.git",
        "git@github.com:acme/widgets",
        "ssh://git@github.com/acme/widgets.git",
        "https://github.com/acme/widgets.git",
        "https://github.com/acme/widgets",
        "https://github.com/acme/widgets/",
        "https://github.com/acme/widgets.git/",
        "HTTPS://GitHub.com/Acme/Widgets.GIT",
        "  https://github.com/acme/widgets  ",
    ],
)
def test_remote_forms_normalize_to_one_seed(url: str) -> None:
    assert normalize_remote(url) == CANON


def test_key_vector() -> None:
    key, name, seed = scope_for_remote("git@github.com:acme/widgets.git")
    digest = hashlib.sha256(CANON.encode()).hexdigest()[:12]
    assert (key, name, seed) == (f"project__widgets__{digest}", "widgets", CANON)


def test_folder_key_is_deterministic(tmp_path: Path) -> None:
    folder = tmp_path / "My Project!"
    folder.mkdir()
    key, name, seed = scope_for_folder(folder)
    assert key.startswith("project__My-Project-__") and len(key.rsplit("__", 1)[1]) == 12
    assert seed == str(folder).lower() and name == "My Project!"
    assert scope_for_folder(folder) == (key, name, seed)


def test_repo_with_origin_from_subdirectory(git_repo: Path) -> None:
    sub = git_repo / "src" / "deep"
    sub.mkdir(parents=True)
    project = resolve_project(sub)
    assert project.root == git_repo
    assert project.key == scope_for_remote("git@github.com:acme/widgets.git")[0]


def test_repo_without_origin_uses_root_folder(git_repo: Path) -> None:
    git("remote", "remove", "origin", cwd=git_repo)
    assert resolve_project(git_repo / ".").key == scope_for_folder(git_repo)[0]


def test_linked_worktree_shares_the_key(git_repo: Path, tmp_path: Path) -> None:
    other = tmp_path / "wt"
    git("worktree", "add", "-q", str(other), "-b", "feature", cwd=git_repo)
    project = resolve_project(other)
    assert project.root == other
    assert project.key == resolve_project(git_repo).key


def test_not_a_repository(tmp_path: Path) -> None:
    project = resolve_project(tmp_path)
    assert project.repo is None and project.root == tmp_path
