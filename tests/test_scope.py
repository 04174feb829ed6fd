"""Scope identity (design §4, D71): the same repository gets the same key everywhere."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from openmemex.scope import normalize_remote, resolve_project, scope_for_folder, scope_for_remote
from tests.conftest import git, run_process

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


# Keys of existing data roots: project folders are named by them, so they never change.
@pytest.mark.parametrize(
    ("make", "key"),
    [
        (lambda: scope_for_folder(Path("/home/u/Café Projekt")), "project__Caf--Projekt__666c6f3ac077"),
        (lambda: scope_for_folder(Path("/srv/部署")), "project__--__6e1c92adf14b"),
        (lambda: scope_for_remote("git@github.com:Acme/Payments.git"), "project__payments__9dbff7b4bc78"),
    ],
)
def test_known_keys_stay_as_they_are(make: Any, key: str) -> None:
    assert make()[0] == key


def _latin1_repo(tmp_path: Path) -> Path:
    """A git repository (no origin) whose folder name is latin-1 bytes, not UTF-8."""
    raw = os.fsencode(tmp_path) + b"/caf\xe9"
    try:
        os.mkdir(raw)
    except OSError as exc:  # a filesystem that only takes UTF-8 names (EILSEQ)
        pytest.skip(f"this filesystem refuses a non-UTF-8 name: {exc}")
    folder = Path(os.fsdecode(raw))
    git("init", "-q", cwd=folder)
    return folder


def test_a_folder_that_is_not_utf8_gets_a_key_from_its_bytes(tmp_path: Path) -> None:
    folder = _latin1_repo(tmp_path)
    project = resolve_project(folder)
    seed = os.fsencode(str(folder).lower())
    assert project.key == f"project__caf-__{hashlib.sha256(seed).hexdigest()[:12]}"
    assert project.name == "caf\ufffd"  # shown and stored as UTF-8


def test_commands_work_in_a_repository_whose_path_is_not_utf8(tmp_path: Path, data_root: Path) -> None:
    """doctor, add, list and the hooks ran into ``seed.encode("utf-8")`` (exit 70); the
    repository's own memory folder cannot be indexed (paths are UTF-8 text there), which
    is said in one line, and the personal memories and the outbox work."""
    folder = _latin1_repo(tmp_path)
    added = run_process("add", "the latin-1 folder fact", cwd=folder)
    assert added.rc == 0, added.err
    assert "is not UTF-8" in added.err and "caf\\xe9" in added.err
    listed = run_process("list", cwd=folder)
    assert listed.rc == 0 and "the latin-1 folder fact" in listed.out, listed.err
    doctor = run_process("doctor", "--json", cwd=folder)
    assert doctor.rc in (0, 1) and "internal error" not in doctor.err, doctor.err
    checks = {c["name"]: c["ok"] for c in json.loads(doctor.out)["checks"]}
    assert checks["mcp handshake"] and checks["memory files"]
    hook = subprocess.run([sys.executable, "-m", "openmemex", "hook", "session-start"], capture_output=True, text=True,
                          input=json.dumps({"hook_event_name": "SessionStart", "source": "startup", "session_id": "s"}),
                          cwd=folder, timeout=60)  # fmt: skip
    assert hook.returncode == 0 and "internal error" not in hook.stderr, hook.stderr
    assert "the latin-1 folder fact" in hook.stdout
    assert not (data_root / "logs" / "crash.log").exists()
