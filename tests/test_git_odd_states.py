"""The git flow in states a real team's clone gets into (session-8 hostile review): a submit
killed between its commit and the index refresh, a cherry-pick sequence paused between picks,
config that git reads through includes or ``git -c``, a ``.gitattributes`` of the user's,
a teammate's non-UTF-8 edit meeting the merge driver, and the next step each state needs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import git
from tests.test_git_hardening import MEMDIR, _setup_driver, draft, porcelain, rc_of


def test_a_submit_killed_after_its_commit_leaves_a_debt_the_next_run_pays(cli: Any, git_repo: Path) -> None:
    memory = draft(cli, "a submit killed right after its commit still ends up in the index")
    head = git("rev-parse", "HEAD", cwd=git_repo).strip()
    lock = git_repo / ".git" / "index.lock"
    lock.write_text("")  # the refresh retries for about a second: the window to kill it in
    proc = subprocess.Popen([sys.executable, "-m", "openmemex", "submit", memory], cwd=git_repo,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    deadline = time.monotonic() + 60
    while git("rev-parse", "HEAD", cwd=git_repo).strip() == head:
        assert proc.poll() is None and time.monotonic() < deadline, "submit ended without committing"
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    lock.unlink()
    rel = f"{MEMDIR}/{memory}.md"
    assert porcelain(git_repo, rel) != ""  # the index does not have it yet: `git commit -a` would delete it
    status = json.loads(cli("sync-status", "--json").out)
    assert status["repair"] and rel in status["repair"]
    assert {"path": rel, "status": "index stale"} in status["uncommitted"]
    again = cli("submit", memory)
    assert again.rc == 0, again.err
    assert f"already in the repository: {memory}" in again.out
    assert porcelain(git_repo, MEMDIR) == ""
    assert not (git_repo / ".git" / "open-memex-index-refresh").exists()
    git("fsck", "--strict", cwd=git_repo)


def test_a_paused_cherry_pick_sequence_refuses_submit(cli: Any, git_repo: Path) -> None:
    git("switch", "-q", "-c", "feat", cwd=git_repo)
    (git_repo / "README.md").write_text("feat\n")
    git("commit", "-q", "-am", "feat1", cwd=git_repo)
    (git_repo / "other").write_text("f2\n")
    git("add", "other", cwd=git_repo)
    git("commit", "-q", "-m", "feat2", cwd=git_repo)
    git("switch", "-q", "main", cwd=git_repo)
    (git_repo / "README.md").write_text("main\n")
    git("commit", "-q", "-am", "main", cwd=git_repo)
    assert rc_of("cherry-pick", "feat~1", "feat", cwd=git_repo).returncode != 0  # stops on feat1
    (git_repo / "README.md").write_text("resolved\n")
    git("add", "README.md", cwd=git_repo)
    assert rc_of("commit", "-q", "--no-edit", cwd=git_repo).returncode == 0  # the sequence goes on
    head = git("rev-parse", "HEAD", cwd=git_repo).strip()
    memory = draft(cli, "a memory written while a cherry-pick sequence is paused")
    result = cli("submit", memory)
    assert result.rc == 1
    assert "a cherry-pick is in progress" in result.err and "git cherry-pick --continue" in result.err
    assert git("rev-parse", "HEAD", cwd=git_repo).strip() == head
    pulled = cli("pull")
    assert pulled.rc == 1 and "a cherry-pick is in progress" in pulled.err


def test_gpgsign_from_an_included_file_or_git_c_is_honoured(cli: Any, git_repo: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    memory = draft(cli, "signing is asked for through an include")
    included = git_repo.parent / "signing.inc"
    included.write_text("[commit]\n\tgpgsign = true\n")
    git("config", "includeIf.gitdir:**/repo/.path", str(included), cwd=git_repo)
    result = cli("submit", memory)
    assert result.rc == 1 and "commit.gpgsign is set" in result.err
    git("config", "--unset", "includeIf.gitdir:**/repo/.path", cwd=git_repo)
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", "'commit.gpgsign'='true'")  # what `git -c` hands `git memex`
    result = cli("submit", memory)
    assert result.rc == 1 and "commit.gpgsign is set" in result.err
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", "'commit.gpgsign'='true' 'commit.gpgsign'='false'")
    assert cli("submit", memory).rc == 0


def test_identity_from_an_included_file(cli: Any, git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for role in ("AUTHOR", "COMMITTER"):
        monkeypatch.delenv(f"GIT_{role}_NAME")
        monkeypatch.delenv(f"GIT_{role}_EMAIL")
    identity = git_repo.parent / "identity.inc"
    identity.write_text("[user]\n\tname = Inc Luded\n\temail = inc@example.com\n")
    git("config", "include.path", "../../identity.inc", cwd=git_repo)  # relative to .git/config
    assert git("config", "user.name", cwd=git_repo).strip() == "Inc Luded"
    result = cli("submit", draft(cli, "identity kept in an included file"))
    assert result.rc == 0, result.err
    assert git("log", "-1", "--format=%an <%ae>", cwd=git_repo).strip() == "Inc Luded <inc@example.com>"


def test_a_gitattributes_of_the_users_is_never_committed_by_submit(cli: Any, git_repo: Path) -> None:
    attributes = git_repo / MEMDIR / ".gitattributes"
    attributes.parent.mkdir(parents=True)
    attributes.write_text("*.md text eol=lf\n*.png binary\n")
    rel = f"{MEMDIR}/.gitattributes"
    git("add", rel, cwd=git_repo)
    with attributes.open("a") as handle:
        handle.write("# WIP - do not commit yet\n")
    result = cli("submit", draft(cli, "a memory beside the user's own gitattributes"))
    assert result.rc == 0, result.err
    assert "left out of the submit commit" in result.err
    assert rel not in git("show", "--name-only", "--format=", "HEAD", cwd=git_repo).split()
    assert porcelain(git_repo, rel) == f"AM {rel}"  # staged and unstaged parts both kept
    assert "WIP" not in git("show", f":{rel}", cwd=git_repo)


def test_our_own_uncommitted_gitattributes_is_still_committed(cli: Any, git_repo: Path) -> None:
    assert cli("setup").rc == 0  # writes ours (both lines), not committed
    result = cli("submit", draft(cli, "the first submit carries setup's attributes"))
    assert result.rc == 0, result.err
    assert f"{MEMDIR}/.gitattributes" in git("show", "--name-only", "--format=", "HEAD", cwd=git_repo).split()
    assert porcelain(git_repo, MEMDIR) == ""


def test_merge_driver_keeps_a_non_utf8_side_with_markers(cli: Any, git_repo: Path) -> None:
    _setup_driver(cli, git_repo)
    rel = f"{MEMDIR}/notes.md"
    base = b"# notes\n\nshared line\n"
    path = git_repo / rel
    path.write_bytes(base)
    git("add", rel, cwd=git_repo)
    git("commit", "-q", "-m", "base", cwd=git_repo)
    git("switch", "-q", "-c", "feature", cwd=git_repo)
    path.write_bytes(base + b"teammate line caf\xe9\n")  # the teammate's side, in Latin-1
    git("commit", "-q", "-am", "latin-1", cwd=git_repo)
    git("switch", "-q", "main", cwd=git_repo)
    path.write_bytes(base + b"my body line\n")
    git("commit", "-q", "-am", "ours", cwd=git_repo)
    proc = rc_of("merge", "--no-edit", "feature", cwd=git_repo)
    assert proc.returncode != 0
    data = (git_repo / rel).read_bytes()
    assert b"<<<<<<< main\n" in data and b">>>>>>> feature\n" in data
    assert b"my body line\n" in data and b"teammate line caf\xe9\n" in data


def test_setup_keeps_a_non_utf8_gitattributes_byte_for_byte(cli: Any, git_repo: Path) -> None:
    attributes = git_repo / MEMDIR / ".gitattributes"
    attributes.parent.mkdir(parents=True)
    attributes.write_bytes(b"# caf\xe9\r\n*.bin binary")  # Latin-1, CRLF, no final newline
    result = cli("setup")
    assert result.rc == 0, result.err
    assert attributes.read_bytes() == b"# caf\xe9\r\n*.bin binary\r\n*.md text eol=lf\r\n*.md merge=openmemex\r\n"
    assert cli("setup").rc == 0
    assert attributes.read_bytes().count(b"merge=openmemex") == 1


def test_pull_during_a_rebase_names_the_rebase(cli: Any, git_repo: Path) -> None:
    from tests.test_git_hardening import _start_rebase

    _start_rebase(git_repo)
    result = cli("pull")
    assert result.rc == 1
    assert "a rebase is in progress" in result.err and "git rebase --continue" in result.err
    assert "switch to a branch" not in result.err


def test_sync_status_names_resolve_for_a_conflicted_memory(cli: Any, git_repo: Path) -> None:
    memory = draft(cli, "a memory both sides edit")
    assert cli("submit", memory).rc == 0
    rel = f"{MEMDIR}/{memory}.md"
    text = (git_repo / rel).read_text()
    git("switch", "-q", "-c", "mate", cwd=git_repo)
    (git_repo / rel).write_text(text.replace("a memory both sides edit", "the mate's wording"))
    git("commit", "-q", "-am", "mate", cwd=git_repo)
    git("switch", "-q", "main", cwd=git_repo)
    (git_repo / rel).write_text(text.replace("a memory both sides edit", "my wording"))
    git("commit", "-q", "-am", "mine", cwd=git_repo)
    assert rc_of("merge", "--no-edit", "mate", cwd=git_repo).returncode != 0
    status = json.loads(cli("sync-status", "--json").out)
    assert {"path": rel, "status": "conflicted"} in status["uncommitted"]
    assert any(step.startswith("open-memex resolve") for step in status["next"])
    assert not any(step.startswith("commit the memory files") for step in status["next"])


def _hook(repo: Path, name: str, body: str) -> None:
    hook = repo / ".git" / "hooks" / name
    hook.parent.mkdir(exist_ok=True)
    hook.write_text("#!/bin/sh\n" + body)
    hook.chmod(0o755)


def test_a_refusing_pre_commit_hook_stops_submit(cli: Any, git_repo: Path, data_root: Path) -> None:
    _hook(git_repo, "pre-commit", 'echo "pre-commit: no direct commits on main" >&2\nexit 1\n')
    head = git("rev-parse", "HEAD", cwd=git_repo).strip()
    memory = draft(cli, "a memory the team's hook holds back")
    result = cli("submit", memory)
    assert result.rc == 1
    assert "pre-commit hook refused the submit commit (exit 1): pre-commit: no direct commits on main" in result.err
    assert git("rev-parse", "HEAD", cwd=git_repo).strip() == head
    assert not (git_repo / MEMDIR / f"{memory}.md").exists()  # nothing written stays behind
    assert json.loads(cli("show", memory, "--json").out)["location"] == "outbox"
    result = cli("submit", memory, "--no-verify")
    assert result.rc == 0, result.err
    assert git("rev-parse", "HEAD~1", cwd=git_repo).strip() == head


def test_a_refused_submit_records_no_sync_and_names_the_cli_switch(cli: Any, git_repo: Path) -> None:
    """A refused submit is no sync of the project (sync-status showed "last sync … (submit)"
    for it), and the way past the hooks is named as the CLI command: the MCP tool, which
    shows the same message, has no such switch."""
    _hook(git_repo, "pre-commit", "exit 1\n")
    memory = draft(cli, "a memory a refused submit does not count as synced")
    refused = cli("submit", memory)
    assert refused.rc == 1
    assert "fix what it reports, then retry (`open-memex submit --no-verify` skips the hooks)" in refused.err
    assert "pass --no-verify" not in refused.err
    last = json.loads(cli("sync-status", "--json").out)["last_sync"]
    assert last is None or last["kind"] != "submit"
    assert cli("submit", memory, "--no-verify").rc == 0
    assert json.loads(cli("sync-status", "--json").out)["last_sync"]["kind"] == "submit"


def test_a_refused_submit_switches_back_from_its_branch(cli: Any, git_repo: Path) -> None:
    """"Nothing was committed" leaves HEAD where it was: a branch --branch created goes
    again, one that existed stays, a detached HEAD is detached again — else the next submit
    (or the user's next commit) lands on the branch a failed submit switched to."""
    _hook(git_repo, "pre-commit", 'echo "lint failed"\nexit 1\n')
    memory = draft(cli, "a memory whose submit the team's hook refuses")
    git("branch", "existing", cwd=git_repo)
    head = git("rev-parse", "HEAD", cwd=git_repo).strip()
    for name in ("mem/new", "existing"):
        result = cli("submit", memory, "--branch", name)
        assert result.rc == 1 and "nothing was committed" in result.err
        assert git("symbolic-ref", "HEAD", cwd=git_repo).strip() == "refs/heads/main"
    assert git("branch", "--format=%(refname:short)", cwd=git_repo).split() == ["existing", "main"]
    git("switch", "-q", "--detach", cwd=git_repo)
    assert cli("submit", memory, "--branch", "mem/detached").rc == 1
    assert rc_of("symbolic-ref", "-q", "HEAD", cwd=git_repo).returncode != 0  # detached again
    assert git("rev-parse", "HEAD", cwd=git_repo).strip() == head
    assert "mem/detached" not in git("branch", cwd=git_repo)
    git("switch", "-q", "main", cwd=git_repo)
    (git_repo / ".git" / "hooks" / "pre-commit").unlink()
    result = cli("submit", memory, "--branch", "mem/new")
    assert result.rc == 0, result.err
    assert git("symbolic-ref", "HEAD", cwd=git_repo).strip() == "refs/heads/mem/new"
    assert git("rev-parse", "HEAD~1", cwd=git_repo).strip() == head


def test_the_commit_hooks_run_without_the_project_write_lock(cli: Any, git_repo: Path) -> None:
    """A slow hook (a test suite) holds up no other write of the project: an add and a forget
    of another draft go through at once. The ids in flight are not to be changed until the
    submit is done, and a second submit waits, then says who it waited for — not "check for a
    hung process" (review 46)."""
    from openmemex.context import Context
    from openmemex.errors import StoreBusyError
    from openmemex.git.submit import submit

    started, go = git_repo / ".git" / "hook-started", git_repo / ".git" / "hook-go"
    _hook(git_repo, "pre-commit", f'touch "{started}"\nn=0\n'
                                  f'while [ ! -e "{go}" ] && [ $n -lt 1200 ]; do sleep 0.05; n=$((n+1)); done\n')  # fmt: skip
    memory = draft(cli, "a memory whose submit waits on a slow hook")
    other = draft(cli, "another draft of the project, forgotten meanwhile")
    third = draft(cli, "a third draft, submitted once the first submit is done")
    proc = subprocess.Popen([sys.executable, "-m", "openmemex", "submit", memory], cwd=git_repo,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not started.exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.02)
        began = time.monotonic()
        assert cli("add", "a new fact saved while the hooks run").rc == 0
        assert cli("forget", other).rc == 0
        assert time.monotonic() - began < 10
        busy = cli("forget", memory)
        assert busy.rc != 0 and f"{memory} is being submitted by another open-memex" in busy.err
        assert "retry once the submit is done" in busy.err
        assert "places" not in busy.err  # its copies are in flight, not duplicates to see doctor about
        with Context.load(git_repo) as ctx:
            ctx.lock_wait_s = 1.0
            with pytest.raises(StoreBusyError) as waited:
                submit(ctx, [third])
        assert "is submitting 1 memory to the repository, whose commit hooks are running" in str(waited.value)
        assert "hung" not in str(waited.value)
    finally:
        go.touch()
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert f"submitted {memory} [proposed]" in out
    assert f"{MEMDIR}/{memory}.md" in git("show", "--name-only", "--format=", "HEAD", cwd=git_repo)
    assert cli("submit", third).rc == 0


def test_a_draft_changed_while_the_hooks_ran_stops_the_submit(cli: Any, git_repo: Path, data_root: Path) -> None:
    """The hooks run without the write lock, so what they saw is checked again under it: a
    draft changed meanwhile is not committed as it was read — nothing is, nothing is left."""
    memory = draft(cli, "a draft edited while the commit hooks run")
    outbox = next(data_root.rglob(f"{memory}.md"))
    _hook(git_repo, "pre-commit", f'printf "edited meanwhile\\n" >> "{outbox}"\n')
    head = git("rev-parse", "HEAD", cwd=git_repo).strip()
    result = cli("submit", memory)
    assert result.rc == 1
    assert f"the outbox draft {memory} changed or went while the repository's commit hooks ran" in result.err
    assert git("rev-parse", "HEAD", cwd=git_repo).strip() == head
    assert not (git_repo / MEMDIR / f"{memory}.md").exists() and outbox.read_text().endswith("edited meanwhile\n")


def test_a_hook_that_never_ends_is_stopped(cli: Any, git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Git gives hooks no time limit, but a submit holds up the project's next one: past
    HOOK_TIMEOUT_S the hook and what it started are stopped, and nothing is committed."""
    from openmemex.git import commit_hooks

    monkeypatch.setattr(commit_hooks, "HOOK_TIMEOUT_S", 1.0)
    _hook(git_repo, "pre-commit", "sleep 60 &\nsleep 60\n")  # the background one holds the output pipe too
    memory = draft(cli, "a memory whose hook hangs")
    head = git("rev-parse", "HEAD", cwd=git_repo).strip()
    began = time.monotonic()
    result = cli("submit", memory)
    assert time.monotonic() - began < 20
    assert result.rc == 1 and "the repository's pre-commit hook ran for more than 1 s and was stopped" in result.err
    assert git("rev-parse", "HEAD", cwd=git_repo).strip() == head
    assert not (git_repo / MEMDIR / f"{memory}.md").exists()


def test_pre_commit_sees_only_the_submit_and_commit_msg_may_edit_the_message(cli: Any, git_repo: Path) -> None:
    (git_repo / "README.md").write_text("my unstaged edit\n")
    _hook(git_repo, "pre-commit", 'git diff --cached --name-only > "$(git rev-parse --git-dir)/seen"\n')
    _hook(git_repo, "commit-msg", 'printf "\\nReviewed-by: hook\\n" >> "$1"\n')
    _hook(git_repo, "post-commit", 'touch "$(git rev-parse --git-dir)/post"\nexit 3\n')
    memory = draft(cli, "a memory committed past the team's hooks")
    result = cli("submit", memory)
    assert result.rc == 0, result.err
    seen = (git_repo / ".git" / "seen").read_text().split()
    assert seen == [f"{MEMDIR}/.gitattributes", f"{MEMDIR}/{memory}.md"]
    assert git("log", "-1", "--format=%B", cwd=git_repo).rstrip().endswith("Reviewed-by: hook")
    assert (git_repo / ".git" / "post").exists()
    assert (git_repo / "README.md").read_text() == "my unstaged edit\n"
    assert not list((git_repo / ".git").glob("open-memex-index.*"))


def test_a_pre_commit_hook_that_stages_more_is_refused(cli: Any, git_repo: Path) -> None:
    (git_repo / "extra.txt").write_text("not ours\n")
    _hook(git_repo, "pre-commit", "git add extra.txt\n")
    head = git("rev-parse", "HEAD", cwd=git_repo).strip()
    result = cli("submit", draft(cli, "a hook must not widen the submit commit"))
    assert result.rc == 1 and "changed what the submit commit would hold" in result.err
    assert git("rev-parse", "HEAD", cwd=git_repo).strip() == head
    assert "extra.txt" not in git("ls-files", cwd=git_repo)


def test_the_real_pre_commit_framework_runs_on_submit(cli: Any, git_repo: Path) -> None:
    (git_repo / ".pre-commit-config.yaml").write_text(
        "repos:\n- repo: local\n  hooks:\n  - id: no-memory-files\n    name: no memory files\n"
        "    language: fail\n    entry: memory files need a ticket\n    files: \\.md$\n"
    )
    git("add", ".pre-commit-config.yaml", cwd=git_repo)
    git("commit", "-q", "-m", "pre-commit", cwd=git_repo)
    subprocess.run([sys.executable, "-m", "pre_commit", "install"], cwd=git_repo, check=True, capture_output=True)
    (git_repo / "README.md").write_text("my unstaged edit\n")
    result = cli("submit", draft(cli, "a memory the framework refuses"))
    assert result.rc == 1 and "pre-commit hook refused" in result.err and "memory files need a ticket" in result.err
    assert (git_repo / "README.md").read_text() == "my unstaged edit\n"
    assert git("status", "--porcelain", cwd=git_repo).strip() == "M README.md"


def test_a_linked_worktree_runs_the_main_repositorys_hooks(cli: Any, git_repo: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """Hooks live in the common git dir; the worktree's own git dir has none (they were missed)."""
    _hook(git_repo, "pre-commit", 'echo "pre-commit: refused in every worktree" >&2\nexit 1\n')
    linked = git_repo.parent / "linked"
    git("worktree", "add", "-q", "-b", "side", str(linked), cwd=git_repo)
    monkeypatch.chdir(linked)
    head = git("rev-parse", "HEAD", cwd=linked).strip()
    result = cli("submit", draft(cli, "a memory submitted from a linked worktree"))
    assert result.rc == 1 and "refused in every worktree" in result.err
    assert git("rev-parse", "HEAD", cwd=linked).strip() == head


def test_a_temporary_index_a_killed_submit_left_is_removed(cli: Any, git_repo: Path) -> None:
    """kill -9 during the hooks skips the cleanup: the next submit with hooks removes the
    orphans of processes that are gone (one of a live process stays)."""
    _hook(git_repo, "pre-commit", "exit 0\n")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    orphan = git_repo / ".git" / f"open-memex-index.{dead.pid}"
    alive = git_repo / ".git" / f"open-memex-index.{os.getppid()}"
    orphan.write_bytes(b"DIRC")
    alive.write_bytes(b"DIRC")
    assert cli("submit", draft(cli, "a submit after a killed one")).rc == 0
    assert not orphan.exists() and alive.exists()
    alive.unlink()
