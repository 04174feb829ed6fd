"""The pre-commit hooks (issue 9, item 4) under the real ``pre-commit`` framework.

``pre-commit try-repo <this repository> --all-files`` runs ``.pre-commit-hooks.yaml`` exactly
as a user's ``.pre-commit-config.yaml`` would: it clones the repository, pip-installs it
into a fresh virtualenv (``language: python``) and runs the hooks on a temporary git
repository built by ``fixtures/repos/memory_prs.py``. That install needs PyPI, which is
reachable on the development machines and in CI — the one network use of the suite besides
loopback.

try-repo makes a new store for every call (``Store(tempdir)`` in
``pre_commit/commands/try_repo.py``), so each call installs open-memex once (≈ 20 s with
warm wheels): two calls cover both hooks failing and both passing. ``PRE_COMMIT_HOME``,
pip's cache and virtualenv's app data point at one folder per test session (conftest's, removed
at exit), so the second install reuses the first one's downloads and nothing lands in a real
home directory.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import _SESSION_DIR, git
from tests.test_check import prs

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ("pyproject.toml", "README.md", ".pre-commit-hooks.yaml", "openmemex")


@pytest.fixture(scope="session")
def hooks_repo() -> Iterator[tuple[Path, dict[str, str]]]:
    """This repository as pre-commit sees it — the files pip needs plus the manifest, as on
    disk now (uncommitted edits included), committed into a throw-away repository — and the
    environment for the framework."""
    base = Path(tempfile.mkdtemp(prefix="pre-commit-", dir=_SESSION_DIR))  # removed with the session
    repo = base / "open-memex"
    repo.mkdir()
    for name in SHIPPED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, repo / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(source, repo / name)
    git("init", "-q", "-b", "main", cwd=repo)
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "snapshot for pre-commit try-repo", cwd=repo)
    env = {**os.environ, "PRE_COMMIT_HOME": str(base / "pre-commit"), "PIP_CACHE_DIR": str(base / "pip-cache"),
           "VIRTUALENV_OVERRIDE_APP_DATA": str(base / "virtualenv"), "PRE_COMMIT_COLOR": "never"}  # fmt: skip
    yield repo, env


def try_repo(hooks: tuple[Path, dict[str, str]], cwd: Path, *hook_ids: str) -> subprocess.CompletedProcess[str]:
    repo, env = hooks
    env = {**env, "HOME": os.environ["HOME"], "OPEN_MEMEX_HOME": os.environ["OPEN_MEMEX_HOME"]}
    return subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", str(repo), *hook_ids, "--all-files"],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=600)  # fmt: skip


def sections(output: str) -> dict[str, str]:
    """Each hook's block of pre-commit's report, by hook id."""
    out: dict[str, str] = {}
    for block in output.split("- hook id: ")[1:]:
        hook_id, _, rest = block.partition("\n")
        out[hook_id.strip()] = rest
    return out


def test_manifest_and_our_own_config_load_with_pre_commits_schema() -> None:
    from pre_commit.clientlib import load_config, load_manifest

    hooks = {hook["id"]: hook for hook in load_manifest(str(ROOT / ".pre-commit-hooks.yaml"))}
    assert set(hooks) == {"open-memex-secrets", "open-memex-check"}
    for hook in hooks.values():
        assert hook["language"] == "python" and hook["pass_filenames"] and not hook["require_serial"]
        assert hook["stages"] == ["pre-commit", "manual"]
    assert hooks["open-memex-secrets"]["entry"] == "open-memex scan --"  # file names are never options
    assert hooks["open-memex-check"]["entry"] == "open-memex check --"
    assert hooks["open-memex-secrets"]["args"] == hooks["open-memex-check"]["args"] == []
    config = load_config(str(ROOT / ".pre-commit-config.yaml"))
    local = {hook["id"]: hook for hook in config["repos"][0]["hooks"]}
    assert config["repos"][0]["repo"] == "local" and set(local) == set(hooks)
    assert all(hook["entry"].split()[-1] == "--" for hook in local.values())


def test_a_committed_file_named_like_an_option_is_scanned_not_obeyed(tmp_path: Path) -> None:
    """Files named ``--help``, ``-h`` and ``--version`` under ``files: ''``: pre-commit puts
    the file names after the entry, so with the shipped entry (ending in ``--``) they are
    files to scan and a token beside them or in them is found. Before, ``scan --help
    secret.txt`` printed help and exited 0: the hook passed and the tokens were committed.
    The shipped entry runs as a local hook (the open-memex under test, no install), in one
    batch (``PRE_COMMIT_NO_CONCURRENCY``) as for a commit of a few files."""
    from pre_commit.clientlib import load_manifest

    shipped = {hook["id"]: hook for hook in load_manifest(str(ROOT / ".pre-commit-hooks.yaml"))}["open-memex-secrets"]
    program, *rest = shipped["entry"].split()
    assert program == "open-memex"
    entry = " ".join([sys.executable, "-m", "openmemex", *rest])
    repo = tmp_path / "repo"
    repo.mkdir()
    git("init", "-q", "-b", "main", cwd=repo)
    (repo / ".pre-commit-config.yaml").write_text(
        "repos:\n  - repo: local\n    hooks:\n      - id: open-memex-secrets\n        name: open-memex secret scan\n"
        f"        entry: {entry}\n        args: {shipped['args']}\n        language: system\n        files: ''\n"
        "        types: [text]\n"
    )
    leaked = ["ghp_" + "Q7w2E9r4T1y6U3i8O5p0A2s7D4f9G1h6J3k8", "ghp_" + "Z5x8C1v4B7n0M3q6W9e2R5t8Y1u4I7o0P3a6"]
    (repo / "secret.txt").write_text(f"token {leaked[0]}\n")
    (repo / "-h").write_text(f"token {leaked[1]}\n")
    for name in ("--help", "--version"):
        (repo / name).write_text("an innocent file\n")
    git("add", "-A", cwd=repo)
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit"), "PRE_COMMIT_COLOR": "never",
           "PRE_COMMIT_NO_CONCURRENCY": "1"}  # fmt: skip
    proc = subprocess.run([sys.executable, "-m", "pre_commit", "run", "--all-files"], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "secret.txt:1:7 github-pat ghp_xxxx" in proc.stdout and "-h:1:7 github-pat ghp_xxxx" in proc.stdout
    assert "2 possible secrets in 2 of 5 files" in proc.stdout
    assert not any(token in proc.stdout for token in leaked)


def test_try_repo_fails_on_a_leaked_token_and_an_invalid_memory_file(hooks_repo: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    repo = prs.build("secret", tmp_path / "team")
    broken = repo / ".ai" / "open-memex" / f"{prs.NEW2}.md"
    broken.write_text(prs.memory(prs.NEW2, "Prefer small PRs.", state="published", history=[], type="opinion"))
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "an invalid memory", cwd=repo)
    proc = try_repo(hooks_repo, repo)
    report = sections(proc.stdout)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "open-memex secret scan" in proc.stdout and "open-memex memory check" in proc.stdout
    secrets, check = report["open-memex-secrets"], report["open-memex-check"]
    leaked = f".ai/open-memex/{prs.NEW}.md:31:38 github-pat ghp_{'x' * 36}"
    assert "- exit code: 1" in secrets and leaked in secrets  # file, line (and column), rule; the value masked
    assert "- exit code: 1" in check
    assert f".ai/open-memex/{prs.NEW2}.md:8: schema: field 'type' must be one of" in check
    assert f".ai/open-memex/{prs.NEW}.md:31: secret: possible secret (github-pat)" in check
    assert prs.fake_token() not in proc.stdout + proc.stderr


def test_try_repo_passes_on_a_clean_repository(hooks_repo: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    repo = prs.build("clean", tmp_path / "team")
    (repo / "notes.txt").write_text("not in the memory folder: not the hooks' business\n")
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "notes", cwd=repo)
    proc = try_repo(hooks_repo, repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "open-memex secret scan" in proc.stdout and "open-memex memory check" in proc.stdout
    assert proc.stdout.count("Passed") == 2


def test_docs_ci_workflow_and_snippets_parse() -> None:
    """docs/ci.md stays copy-pasteable: the workflow is valid YAML that checks out the whole
    history and runs both commands; the pre-commit snippets load with pre-commit's schema."""
    import re

    import yaml
    from pre_commit.clientlib import load_config

    text = (ROOT / "docs" / "ci.md").read_text()
    blocks = [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", text, re.S)]
    workflow = next(b for b in blocks if isinstance(b, dict) and "jobs" in b)
    steps = workflow["jobs"]["memories"]["steps"]
    assert steps[0]["uses"].startswith("actions/checkout@") and steps[0]["with"]["fetch-depth"] == 0
    assert steps[1]["uses"].startswith("actions/setup-python@")
    runs = [step.get("run") for step in steps]
    assert "pip install open-memex" in runs
    assert "git memex check --base origin/${{ github.base_ref }} --format github" in runs
    assert "open-memex scan --format github" in runs
    config = next(b for b in blocks if isinstance(b, dict) and "repos" in b)
    assert [h["id"] for h in config["repos"][0]["hooks"]] == ["open-memex-secrets", "open-memex-check"]
    snippet = re.search(r"```yaml\n(repos:.*?)```", text, re.S)
    assert snippet is not None
    tmp = Path(tempfile.mkdtemp(dir=_SESSION_DIR)) / ".pre-commit-config.yaml"
    tmp.write_text(snippet.group(1))
    assert load_config(str(tmp))["repos"][0]["rev"] == "v0.1.0"
