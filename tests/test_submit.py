"""submit: outbox → repository, one commit with only our files (checked with the git CLI)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import git, run_process

ID = re.compile(r"\b[0-7][0-9A-HJKMNP-TV-Z]{25}\b")


def draft(cli: Any, text: str) -> str:
    result = cli("add", text, "--json")
    assert result.rc == 0, result.err
    return str(json.loads(result.out)["id"])


def interrupted(cli: Any, git_repo: Path, data_root: Path, text: str) -> tuple[str, Path, Path]:
    """A draft whose submit was killed before its commit: its outbox copy, and the proposed
    copy the submit wrote into the repository folder, uncommitted."""
    memory = draft(cli, text)
    outbox_file = next(data_root.rglob(f"{memory}.md"))
    target = git_repo / ".ai" / "open-memex" / f"{memory}.md"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(outbox_file.read_text().replace("review_state: draft", "review_state: proposed"))
    return memory, outbox_file, target


def test_submit_commits_only_memory_files(cli: Any, git_repo: Path) -> None:
    (git_repo / "src.py").write_text("print('user work')\n")
    git("add", "src.py", cwd=git_repo)
    (git_repo / "scratch.txt").write_text("untracked\n")
    a = draft(cli, "Use idempotency keys for payment retries")
    b = draft(cli, "Staging deploys need the VPN")
    head_before = git("rev-parse", "HEAD", cwd=git_repo).strip()
    result = cli("submit", a, b)
    assert result.rc == 0, result.err
    assert f"submitted {a} [proposed]" in result.out and "on main" in result.out
    files = git("show", "--name-only", "--format=", "HEAD", cwd=git_repo).split()
    assert sorted(files) == sorted([".ai/open-memex/.gitattributes", f".ai/open-memex/{a}.md", f".ai/open-memex/{b}.md"])
    assert git("rev-parse", "HEAD~1", cwd=git_repo).strip() == head_before
    assert re.match(r"mem: submit 2 memories for review", git("log", "-1", "--format=%s", cwd=git_repo))
    status = git("status", "--porcelain", cwd=git_repo)
    assert "A  src.py" in status and "?? scratch.txt" in status
    assert ".ai/open-memex" not in status  # our files are committed and the index matches
    git("fsck", "--strict", cwd=git_repo)
    committed = git("show", f"HEAD:.ai/open-memex/{a}.md", cwd=git_repo)
    assert "review_state: proposed" in committed and "submitted to branch main" in committed
    # the outbox copy is gone, the memory is found in the repo copy
    shown = json.loads(cli("show", a, "--json").out)
    assert shown["location"] == "repo" and shown["review_state"] == "proposed"
    # idempotent
    again = cli("submit", a, b)
    assert again.rc == 0 and "already in the repository" in again.out
    assert git("rev-parse", "HEAD~1", cwd=git_repo).strip() == head_before


def test_submit_is_all_or_nothing(cli: Any, git_repo: Path) -> None:
    a = draft(cli, "a valid draft about caching")
    result = cli("submit", a, "01ZZZZZZZZZZZZZZZZZZZZZZZZ")
    assert result.rc == 1 and "no project memory" in result.err
    assert git("rev-list", "--count", "HEAD", cwd=git_repo).strip() == "1"
    assert not (git_repo / ".ai").exists()


def test_submit_refuses_hand_edited_secret(cli: Any, git_repo: Path, data_root: Path) -> None:
    a = draft(cli, "deploy credentials live in the vault")
    path = next(data_root.rglob(f"{a}.md"))
    path.write_text(path.read_text().replace("live in the vault", "are AKIA" + "ABCDEFGHIJKLMNOP"))
    result = cli("submit", a)
    assert result.rc == 1 and "possible secret (aws-access-key-id)" in result.err
    assert git("rev-list", "--count", "HEAD", cwd=git_repo).strip() == "1"


def test_submit_with_branch_and_from_subdirectory(git_repo: Path, cli: Any) -> None:
    a = draft(cli, "feature flags are read at boot")
    sub = git_repo / "pkg" / "inner"
    sub.mkdir(parents=True)
    result = run_process("submit", a, "--branch", "mem/flags", cwd=sub)
    assert result.rc == 0, result.err
    assert git("rev-parse", "--abbrev-ref", "HEAD", cwd=git_repo).strip() == "mem/flags"
    assert f".ai/open-memex/{a}.md" in git("show", "--name-only", "--format=", "HEAD", cwd=git_repo)


def test_gpgsign_is_not_silently_ignored(cli: Any, git_repo: Path) -> None:
    git("config", "commit.gpgsign", "true", cwd=git_repo)
    a = draft(cli, "signed commits are required here")
    refused = cli("submit", a)
    assert refused.rc == 1 and "commit.gpgsign" in refused.err
    assert cli("submit", a, "--allow-unsigned").rc == 0


def test_submit_outside_a_repository(cli: Any) -> None:
    a = draft(cli, "no repository here")
    result = cli("submit", a)
    assert result.rc == 1 and "not inside a git repository" in result.err


def test_sync_status(cli: Any, git_repo: Path) -> None:
    a = draft(cli, "first outbox draft")
    b = draft(cli, "second outbox draft")
    cli("submit", a)
    (git_repo / ".ai" / "open-memex" / "01ZZZZZZZZZZZZZZZZZZZZZZZZ.md").write_text("hand made\n")
    text = cli("sync-status").out
    assert "outbox (local drafts, not in the repo yet): 1" in text and b in text
    assert "(1 proposed)" in text
    assert "untracked" in text and "next: open-memex submit " + b in text
    doc = json.loads(cli("sync-status", "--json").out)
    assert [i["id"] for i in doc["outbox"]] == [b] and doc["repo"]["counts"] == {"proposed": 1}
    assert doc["last_sync"] is not None


@pytest.mark.parametrize("cmd", [("-h",), ("submit", "--help")])
def test_git_memex_help(git_repo: Path, cmd: tuple[str, ...], tmp_path: Path) -> None:
    import os
    import shutil
    import subprocess
    import sys

    bindir = tmp_path / "bin"
    bindir.mkdir()
    script = bindir / "git-memex"
    script.write_text(f"#!{sys.executable}\nfrom openmemex.cli.app import git_main\ngit_main()\n")
    script.chmod(0o755)
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}"}
    assert shutil.which("git", path=env["PATH"])
    proc = subprocess.run(["git", "memex", *cmd], cwd=git_repo, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "Usage" in proc.stdout


def test_git_memex_submit_from_a_subdirectory(cli: Any, git_repo: Path, tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    bindir = tmp_path / "bin"
    bindir.mkdir()
    script = bindir / "git-memex"
    script.write_text(f"#!{sys.executable}\nfrom openmemex.cli.app import git_main\ngit_main()\n")
    script.chmod(0o755)
    memory = draft(cli, "git memex works from anywhere in the tree")
    sub = git_repo / "services" / "api"
    sub.mkdir(parents=True)
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.run(["git", "memex", "submit", memory], cwd=sub, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert f"submitted {memory} [proposed]" in proc.stdout
    assert f".ai/open-memex/{memory}.md" in git("show", "--name-only", "--format=", "HEAD", cwd=git_repo)
    assert not (sub / ".ai").exists()  # the memory dir is at the work-tree root, not the cwd


def test_rerun_after_an_interrupted_submit(cli: Any, git_repo: Path, data_root: Path) -> None:
    """The repo copy was written but never committed, and the outbox copy is still there."""
    memory, outbox_file, _ = interrupted(cli, git_repo, data_root, "interrupted submits recover")
    result = cli("submit", memory)
    assert result.rc == 0, result.err
    assert f".ai/open-memex/{memory}.md" in git("show", "--name-only", "--format=", "HEAD", cwd=git_repo)
    assert not outbox_file.exists()
    assert git("status", "--porcelain", cwd=git_repo).strip() == ""


@pytest.mark.parametrize("committed", [False, True])
def test_forget_after_an_interrupted_submit_deletes_every_copy(cli: Any, git_repo: Path, data_root: Path,
                                                              committed: bool) -> None:  # fmt: skip
    """A submit killed before its commit (or after it, before removing the draft) leaves the
    repository copy beside the outbox draft. ``forget`` deleted only the copy it acted on and
    answered "deleted", and the next submit committed the draft — the forgotten text in git."""
    memory, outbox_file, target = interrupted(cli, git_repo, data_root, "a fact the user forgets after an interrupted submit")
    if committed:
        git("add", ".ai", cwd=git_repo)
        git("commit", "-q", "-m", "submitted, then killed before the draft was removed", cwd=git_repo)
    head = git("rev-parse", "HEAD", cwd=git_repo)
    gone = cli("forget", memory, "--json")
    assert gone.rc == 0, gone.err
    assert json.loads(gone.out)["copies"] == [str(outbox_file)]
    assert not target.exists() and not outbox_file.exists()
    again = cli("submit", memory)
    assert again.rc == 1 and "no project memory" in again.err
    assert git("rev-parse", "HEAD", cwd=git_repo) == head
    assert cli("show", memory).rc != 0


def test_forget_from_outside_the_repository_reaches_the_interrupted_copy(cli: Any, git_repo: Path, data_root: Path,
                                                                         tmp_path: Path) -> None:  # fmt: skip
    """Run outside the repository (or from a worktree, or by an MCP server started
    elsewhere), forget saw only the outbox draft: the repository copy an interrupted submit
    left stayed, and the next submit there committed the forgotten text. A copy git tracks
    is that checkout's history: named, not deleted from elsewhere."""
    kept = draft(cli, "a fact already committed in the repository")
    assert cli("submit", kept).rc == 0
    memory, outbox_file, target = interrupted(cli, git_repo, data_root,
                                              "a fact forgotten from another folder after an interrupted submit")  # fmt: skip
    assert cli("list").rc == 0  # the index has seen the repository copy
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    gone = run_process("forget", memory, "--json", cwd=elsewhere)
    assert gone.rc == 0, gone.err
    assert json.loads(gone.out)["copies"] == [str(target)]
    assert not target.exists() and not outbox_file.exists()
    assert cli("submit", memory).rc == 1
    head = git("rev-parse", "HEAD", cwd=git_repo)
    committed = git_repo / ".ai" / "open-memex" / f"{kept}.md"
    shutil.copy(committed, data_root / "memories" / outbox_file.parent.name / committed.name)  # a leftover draft
    gone = run_process("forget", kept, "--json", cwd=elsewhere)
    assert gone.rc == 0 and json.loads(gone.out)["copies"] == []
    assert committed.exists() and f"{kept} is also committed at {committed}" in gone.err
    assert git("rev-parse", "HEAD", cwd=git_repo) == head


def test_a_soft_forget_retracts_every_copy(cli: Any, git_repo: Path, data_root: Path) -> None:
    """Retraction is one-way for the memory, not for one of its files: the outbox draft
    stayed active beside the retracted repository copy (or the reverse), and a submit
    committed the active one."""
    memory, outbox_file, target = interrupted(cli, git_repo, data_root, "a fact retracted after an interrupted submit")
    hidden = cli("forget", memory, "--soft", "--json")
    assert hidden.rc == 0, hidden.err
    assert json.loads(hidden.out)["copies"] == [str(outbox_file)]
    assert "status: retracted" in target.read_text() and "status: retracted" in outbox_file.read_text()


def test_a_hard_forget_keeps_every_copy_when_one_cannot_go(cli: Any, git_repo: Path, data_root: Path) -> None:
    """All copies or none: an unreadable second copy stops the forget before any file goes."""
    memory, outbox_file, target = interrupted(cli, git_repo, data_root, "a draft whose repository copy is damaged")
    assert cli("list").rc == 0  # the index sees both copies
    outbox_file.write_bytes(b"---\nnot: [closed\n---\nbroken\n")
    result = cli("forget", memory)
    assert result.rc == 1 and "cannot be read" in result.err and "nothing was deleted" in result.err
    assert target.exists() and outbox_file.exists()


@pytest.mark.parametrize("edit", ["secret", "personal", "private", "published"])
def test_a_leftover_repo_copy_is_checked_as_a_draft_is(cli: Any, git_repo: Path, data_root: Path, edit: str) -> None:
    """The repo copy an interrupted submit left is committed by the re-run: edited by hand
    meanwhile, it gets the secret scan, the personal/private rule and the review state a
    submit writes, like any draft — libgit2 runs no hook that would catch it."""
    memory = draft(cli, "the staging db lives on host db-stage-2")
    text = next(data_root.rglob(f"{memory}.md")).read_text().replace("review_state: draft", "review_state: proposed")
    text = {"secret": text.replace("tags: []", "tags:\n- ghp_aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5"),
            "personal": text.replace("scope: project", "scope: personal"),
            "private": text.replace("visibility: internal", "visibility: private"),
            "published": text.replace("review_state: proposed", "review_state: published")}[edit]  # fmt: skip
    target = git_repo / ".ai" / "open-memex" / f"{memory}.md"
    target.parent.mkdir(parents=True)
    target.write_text(text)
    head = git("rev-parse", "HEAD", cwd=git_repo)
    result = cli("submit", memory)
    assert result.rc == 1 and "nothing was submitted" in result.err, result.out
    assert {"secret": "possible secret", "personal": "a personal memory", "private": "visibility: private",
            "published": "is published, which no review step"}[edit] in result.err  # fmt: skip
    assert git("rev-parse", "HEAD", cwd=git_repo) == head and target.read_text() == text


def test_a_leftover_repo_copy_promoted_by_review_is_still_committed(cli: Any, git_repo: Path, data_root: Path) -> None:
    """Review may move the copy an interrupted submit left (promote: approved): that is no
    hand edit, and the re-run commits it as it is."""
    memory = draft(cli, "the deploy job needs the VPN")
    text = next(data_root.rglob(f"{memory}.md")).read_text().replace("review_state: draft", "review_state: proposed")
    target = git_repo / ".ai" / "open-memex" / f"{memory}.md"
    target.parent.mkdir(parents=True)
    target.write_text(text)
    assert cli("promote", memory, "--by", "bo").rc == 0
    assert "review_state: approved" in target.read_text()
    result = cli("submit", memory)
    assert result.rc == 0, result.err
    assert "review_state: approved" in git("show", f"HEAD:.ai/open-memex/{memory}.md", cwd=git_repo)


def test_rerun_never_rewinds_review_progress(cli: Any, git_repo: Path, data_root: Path) -> None:
    memory = draft(cli, "review progress is never undone")
    outbox_copy = next(data_root.rglob(f"{memory}.md")).read_text()
    assert cli("submit", memory).rc == 0
    assert cli("promote", memory, "--by", "bo").rc == 0
    git("commit", "-q", "-am", "approve", cwd=git_repo)
    leftover = data_root / "memories" / json.loads(cli("where", "--json").out)["project"] / f"{memory}.md"
    leftover.write_text(outbox_copy)  # an outbox copy that survived somehow
    head = git("rev-parse", "HEAD", cwd=git_repo)
    result = cli("submit", memory)
    assert result.rc == 0 and "already in the repository" in result.out
    assert git("rev-parse", "HEAD", cwd=git_repo) == head
    assert "review_state: approved" in (git_repo / ".ai" / "open-memex" / f"{memory}.md").read_text()
    assert not leftover.exists()


def test_missing_identity_writes_nothing(cli: Any, git_repo: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"):
        monkeypatch.delenv(var, raising=False)
    empty = tmp_path / "empty-gitconfig"
    empty.write_text("")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(empty))
    memory = draft(cli, "who am I")
    result = cli("submit", memory)
    assert result.rc == 1 and "git does not know who you are" in result.err
    assert not (git_repo / ".ai").exists()


def test_invalid_branch_name(cli: Any, git_repo: Path) -> None:
    result = cli("submit", draft(cli, "branch names are checked"), "--branch", "a..b")
    assert result.rc == 2 and "not a valid branch name" in result.err
    assert not (git_repo / ".ai").exists()


def supersede_submitted(cli: Any, git_repo: Path) -> tuple[str, str, Path, Path]:
    """A committed repository memory A, superseded: B written into the folder, A rewritten."""
    old = draft(cli, "the cache layer keeps entries for ten minutes")
    assert cli("submit", old).rc == 0
    result = cli("supersede", old, "the cache layer keeps entries for five minutes")
    assert result.rc == 0, result.err
    new = next(m for m in ID.findall(result.out) if m != old)
    folder = git_repo / ".ai" / "open-memex"
    return old, new, folder / f"{old}.md", folder / f"{new}.md"


def test_submit_after_supersede_commits_the_replacement_and_the_pointer(cli: Any, git_repo: Path) -> None:
    """`supersede` of a committed memory writes its replacement into the repository folder
    and the pointer into the old file; `submit <new>` answered "already in the repository …
    nothing new to commit" and left both uncommitted (review 50, item 8)."""
    old, new, _, new_file = supersede_submitted(cli, git_repo)
    head = git("rev-parse", "HEAD", cwd=git_repo).strip()
    result = cli("submit", new)
    assert result.rc == 0, result.err
    assert f"committed {new} (in the repository folder, never committed)" in result.out
    assert f"committed {old} (superseded by {new})" in result.out and "next: open-memex push" in result.out
    assert git("rev-parse", "HEAD~1", cwd=git_repo).strip() == head
    files = git("show", "--name-only", "--format=", "HEAD", cwd=git_repo).split()
    assert sorted(files) == sorted([f".ai/open-memex/{old}.md", f".ai/open-memex/{new}.md"])
    assert git("status", "--porcelain", cwd=git_repo).strip() == ""
    assert git("show", f"HEAD:.ai/open-memex/{new}.md", cwd=git_repo) == new_file.read_text()
    assert f"superseded_by: {new}" in git("show", f"HEAD:.ai/open-memex/{old}.md", cwd=git_repo)
    assert cli("check").rc == 0
    again = cli("submit", new, "--json")  # committed and unchanged: already there
    assert again.rc == 0 and json.loads(again.out)["already"] == [new] and json.loads(again.out)["commit"] is None
    assert git("rev-parse", "HEAD~1", cwd=git_repo).strip() == head


def test_the_command_check_names_for_a_missing_replacement_commits_it(cli: Any, git_repo: Path) -> None:
    """After `git commit -a` (the pointer committed, the replacement left out) `check` names
    `submit <new>` as the fix: it must commit the file."""
    _, new, _, _ = supersede_submitted(cli, git_repo)
    git("commit", "-qam", "the pointer only", cwd=git_repo)
    broken = cli("check")
    assert broken.rc == 1 and f"submit {new}" in broken.out + broken.err
    result = cli("submit", new)
    assert result.rc == 0, result.err
    assert git("show", "--name-only", "--format=", "HEAD", cwd=git_repo).split() == [f".ai/open-memex/{new}.md"]
    assert git("status", "--porcelain", cwd=git_repo).strip() == ""
    assert cli("check").rc == 0


@pytest.mark.parametrize("change", ["edited", "staged"])
def test_submit_after_supersede_never_commits_the_users_change_to_the_old_file(cli: Any, git_repo: Path,
                                                                              change: str) -> None:  # fmt: skip
    """The replaced memory joins the commit only when its sole change is the supersede pointer
    and nothing else of it is staged; a change of the user's stays theirs, and is named."""
    old, new, old_file, _ = supersede_submitted(cli, git_repo)
    if change == "edited":
        old_file.write_text(old_file.read_text().replace("ten minutes", "ten minutes (hand note)"))
    else:
        text = old_file.read_text()
        old_file.write_text(text.replace("ten minutes", "twelve minutes"))
        git("add", str(old_file), cwd=git_repo)
        old_file.write_text(text)
    left = old_file.read_text()
    result = cli("submit", new)
    assert result.rc == 0, result.err
    assert f"(which {new} replaces) has changes besides its supersede pointer" in result.err
    assert git("show", "--name-only", "--format=", "HEAD", cwd=git_repo).split() == [f".ai/open-memex/{new}.md"]
    assert old_file.read_text() == left
    assert git("diff", "--cached", "--name-only", cwd=git_repo).strip() == ("" if change == "edited" else f".ai/open-memex/{old}.md")


@pytest.mark.parametrize("edit", ["secret", "private", "published"])
def test_a_repository_copy_never_committed_is_checked_as_a_draft_is(cli: Any, git_repo: Path, edit: str) -> None:
    _, new, old_file, new_file = supersede_submitted(cli, git_repo)
    text = new_file.read_text()
    new_file.write_text({"secret": text.replace("tags: []", "tags:\n- ghp_" + "aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5"),
                         "private": text.replace("visibility: internal", "visibility: private"),
                         "published": text.replace("review_state: proposed", "review_state: published")}[edit])  # fmt: skip
    head = git("rev-parse", "HEAD", cwd=git_repo)
    result = cli("submit", new)
    assert result.rc == 1 and "nothing was submitted" in result.err, result.out
    assert {"secret": "possible secret", "private": "visibility: private",
            "published": "is published, which no review step"}[edit] in result.err  # fmt: skip
    assert git("rev-parse", "HEAD", cwd=git_repo) == head
    assert git("status", "--porcelain", cwd=git_repo).split("\n")[0].strip() == f"M .ai/open-memex/{old_file.name}"


def test_submitting_the_superseded_memory_names_its_uncommitted_replacement(cli: Any, git_repo: Path) -> None:
    old, new, _, _ = supersede_submitted(cli, git_repo)
    result = cli("submit", old)
    assert result.rc == 0, result.err
    assert f"committed {old} (superseded by {new})" in result.out
    assert f"submit it too: open-memex submit {new}" in result.err
    assert git("show", "--name-only", "--format=", "HEAD", cwd=git_repo).split() == [f".ai/open-memex/{old}.md"]
    assert cli("submit", new).rc == 0 and cli("check").rc == 0


def test_submit_commits_a_repository_memory_changed_since_its_commit(cli: Any, git_repo: Path) -> None:
    """HEAD holds the memory, but not as it is now (a `promote` on the review branch): the named
    memory is committed as it is, after the checks a draft gets."""
    memory = draft(cli, "the deploy job needs the VPN")
    assert cli("submit", memory).rc == 0
    assert cli("promote", memory, "--by", "bo").rc == 0
    result = cli("submit", memory)
    assert result.rc == 0, result.err
    assert f"committed {memory} (in the repository folder, changed since its last commit)" in result.out
    assert "review_state: approved" in git("show", f"HEAD:.ai/open-memex/{memory}.md", cwd=git_repo)
    assert git("status", "--porcelain", cwd=git_repo).strip() == ""


def test_submit_refuses_an_approved_memory_edited_in_place(cli: Any, git_repo: Path, data_root: Path) -> None:
    """`check` refuses a reviewed memory's text changed in place (reviewed-edit); submit
    committed it as "changed since its last commit", still approved, for check to fail."""
    memory = draft(cli, "Payments retries need idempotency keys")
    assert cli("submit", memory).rc == 0
    assert cli("promote", memory, "--by", "lead").rc == 0
    path = git_repo / ".ai" / "open-memex" / f"{memory}.md"
    git("commit", "-q", "-am", "approved", cwd=git_repo)
    head = git("rev-parse", "HEAD", cwd=git_repo)
    path.write_text(path.read_text().replace("need idempotency keys", "never need idempotency keys"))
    result = cli("submit", memory)
    assert result.rc != 0 and "changed in place" in result.err and "nothing was submitted" in result.err
    assert "--resubmit" in result.err
    assert git("rev-parse", "HEAD", cwd=git_repo) == head


def test_a_memory_named_twice_is_submitted_and_reported_once(cli: Any, git_repo: Path) -> None:
    memory = draft(cli, "a draft named twice on one submit")
    result = cli("submit", memory, memory[:12], "--json")
    assert result.rc == 0, result.err
    assert [m["id"] for m in json.loads(result.out)["submitted"]] == [memory]


def test_a_supersede_killed_in_the_repository_is_neither_forked_nor_committed_half(cli: Any, git_repo: Path) -> None:
    """Killed after writing the replacement B and before pointing the committed A at it (the
    repository file is not rewritten on read): a second supersede of A wrote a second active
    replacement, and `submit B` committed B alone, a one-sided chain `check` then failed."""
    old, new, old_file, _ = supersede_submitted(cli, git_repo)
    old_file.write_text(git("show", f"HEAD:.ai/open-memex/{old}.md", cwd=git_repo))  # as if killed before this write
    again = cli("supersede", old, "the cache layer keeps entries for one minute")
    assert again.rc != 0 and f"already has a replacement, {new}" in again.err
    assert len(list((git_repo / ".ai" / "open-memex").glob("*.md"))) == 2
    head = git("rev-parse", "HEAD", cwd=git_repo)
    result = cli("submit", new)
    assert result.rc != 0 and "does not say so" in result.err and f"superseded_by: {new}" in result.err
    assert git("rev-parse", "HEAD", cwd=git_repo) == head
    doctor = json.loads(cli("doctor", "--json").out)  # it said "every chain has one head": the index's view
    chains = next(c for c in doctor["checks"] if c["name"] == "supersede chains")
    assert not chains["ok"] and f"{old}'s file in the repository does not say superseded_by {new}" in chains["detail"]


def test_forget_of_an_interrupted_submit_says_what_it_did(cli: Any, git_repo: Path, data_root: Path) -> None:
    """It warned "exists in 2 places; acting on <repository copy>" and then deleted both, and
    asked to commit the deletion of a file git never tracked."""
    memory, outbox_file, _ = interrupted(cli, git_repo, data_root, "a fact whose submit was interrupted, then forgotten")
    gone = cli("forget", memory)
    assert gone.rc == 0 and gone.out.strip() == f"deleted {memory}"
    assert f"its other copy went too: {outbox_file}" in gone.err
    assert "places" not in gone.err and "commit the deletion" not in gone.err
    assert git("status", "--porcelain", cwd=git_repo).strip() == ""
