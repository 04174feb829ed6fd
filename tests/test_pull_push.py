"""pull (fetch + fast-forward only) and push, over both transport backends, checked with git."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import git
from tests.gitservers import bare_remote, git_daemon, install_pre_receive

BACKENDS = ["git", "pygit2"]


def clone(url: str, dest: Path) -> Path:
    subprocess.run(["git", "clone", "-q", url, str(dest)], check=True, capture_output=True)
    return dest


def commit_file(repo: Path, name: str, text: str, message: str = "change") -> str:
    path = repo / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    git("add", name, cwd=repo)
    git("commit", "-q", "-m", message, cwd=repo)
    return git("rev-parse", "HEAD", cwd=repo).strip()


@pytest.fixture
def team(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Path]:
    """A bare remote with one commit and two clones; cwd is the first clone."""
    remote = bare_remote(tmp_path / "remote.git")
    seed = tmp_path / "seed"
    seed.mkdir()
    git("init", "-q", "-b", "main", cwd=seed)
    commit_file(seed, "README.md", "hello\n", "initial")
    commit_file(seed, "notes.txt", "line\n", "notes")
    git("push", "-q", str(remote), "main", cwd=seed)
    alice = clone(f"file://{remote}", tmp_path / "alice")
    bob = clone(f"file://{remote}", tmp_path / "bob")
    monkeypatch.chdir(alice)
    return remote, alice, bob


def use(cli: Any, backend: str) -> None:
    assert cli("config", "set", "sync.transport", backend).rc == 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_up_to_date(cli: Any, team: tuple[Path, Path, Path], backend: str) -> None:
    use(cli, backend)
    result = cli("pull")
    assert result.rc == 0 and result.out.startswith("already up to date: main")


@pytest.mark.parametrize("backend", BACKENDS)
def test_fast_forward_keeps_local_work(cli: Any, team: tuple[Path, Path, Path], backend: str) -> None:
    _, alice, bob = team
    use(cli, backend)
    new = commit_file(bob, ".ai/open-memex/01M8MKWK0600T1RZG1FH1S8A9F.md", "x\n", "memory")
    commit_file(bob, "README.md", "hello again\n", "readme")
    new = git("rev-parse", "HEAD", cwd=bob).strip()
    git("push", "-q", "origin", "main", cwd=bob)
    old = git("rev-parse", "HEAD", cwd=alice).strip()
    (alice / "notes.txt").write_text("line\nmy unstaged edit\n")
    (alice / "staged.txt").write_text("staged\n")
    git("add", "staged.txt", cwd=alice)
    (alice / "untracked.txt").write_text("untracked\n")
    result = cli("pull")
    assert result.rc == 0, result.err
    assert result.out.startswith(f"pulled main from origin: {old[:8]}..{new[:8]} (fast-forward)")
    assert "files changed: 2 (1 memory files)" in result.out
    assert git("rev-parse", "HEAD", cwd=alice).strip() == new
    assert (alice / "README.md").read_text() == "hello again\n"
    status = git("status", "--porcelain", cwd=alice)
    assert " M notes.txt" in status and "A  staged.txt" in status and "?? untracked.txt" in status
    assert "pull: Fast-forward" in git("reflog", "-1", "main", cwd=alice)
    git("fsck", cwd=alice)


@pytest.mark.parametrize("backend", BACKENDS)
def test_diverged_is_refused(cli: Any, team: tuple[Path, Path, Path], backend: str) -> None:
    _, alice, bob = team
    use(cli, backend)
    commit_file(bob, "b.txt", "bob\n")
    git("push", "-q", "origin", "main", cwd=bob)
    mine = commit_file(alice, "a.txt", "alice\n")
    result = cli("pull")
    assert result.rc == 1
    assert "diverged (1 ahead, 1 behind)" in result.err and "nothing was changed" in result.err
    assert git("rev-parse", "HEAD", cwd=alice).strip() == mine
    assert not (alice / "b.txt").exists()
    assert git("status", "--porcelain", cwd=alice).strip() == ""


@pytest.mark.parametrize("backend", BACKENDS)
def test_local_edit_in_the_way_is_refused(cli: Any, team: tuple[Path, Path, Path], backend: str) -> None:
    _, alice, bob = team
    use(cli, backend)
    commit_file(bob, "notes.txt", "line\nfrom bob\n")
    git("push", "-q", "origin", "main", cwd=bob)
    before = git("rev-parse", "HEAD", cwd=alice).strip()
    (alice / "notes.txt").write_text("line\nmine, uncommitted\n")
    result = cli("pull")
    assert result.rc == 1 and "would be overwritten" in result.err and "nothing was changed" in result.err
    assert git("rev-parse", "HEAD", cwd=alice).strip() == before
    assert (alice / "notes.txt").read_text() == "line\nmine, uncommitted\n"


@pytest.mark.parametrize("backend", BACKENDS)
def test_untracked_file_in_the_way_is_refused(cli: Any, team: tuple[Path, Path, Path], backend: str) -> None:
    _, alice, bob = team
    use(cli, backend)
    commit_file(bob, "new.txt", "from bob\n")
    git("push", "-q", "origin", "main", cwd=bob)
    (alice / "new.txt").write_text("my own untracked file\n")
    before = git("rev-parse", "HEAD", cwd=alice).strip()
    result = cli("pull")
    assert result.rc == 1 and "nothing was changed" in result.err
    assert git("rev-parse", "HEAD", cwd=alice).strip() == before
    assert (alice / "new.txt").read_text() == "my own untracked file\n"


def test_detached_head_and_no_upstream(cli: Any, team: tuple[Path, Path, Path]) -> None:
    _, alice, _ = team
    git("checkout", "-q", "--detach", cwd=alice)
    result = cli("pull")
    assert result.rc == 1 and "HEAD is detached" in result.err
    git("switch", "-q", "-c", "topic", cwd=alice)
    result = cli("pull")
    assert result.rc == 1 and "has no upstream" in result.err


@pytest.mark.parametrize("backend", BACKENDS)
def test_push_sets_upstream_then_pull_in_teammate(cli: Any, team: tuple[Path, Path, Path], backend: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    remote, alice, bob = team
    use(cli, backend)
    git("switch", "-q", "-c", "mem/share", cwd=alice)
    sha = commit_file(alice, "shared.txt", "hi\n")
    result = cli("push")
    assert result.rc == 0, result.err
    assert result.out.startswith(f"pushed mem/share to origin @ {sha[:8]} (upstream set to origin/mem/share)")
    assert git("--git-dir", str(remote), "rev-parse", "refs/heads/mem/share", cwd=alice).strip() == sha
    assert git("rev-parse", "--abbrev-ref", "mem/share@{upstream}", cwd=alice).strip() == "origin/mem/share"
    commit_file(alice, "shared.txt", "hi again\n")
    assert cli("push").rc == 0
    git("fetch", "-q", cwd=bob)
    git("switch", "-q", "mem/share", cwd=bob)
    monkeypatch.chdir(bob)
    assert cli("pull").out.startswith("already up to date")


def test_push_rejected_by_pre_receive_hook_git_backend(cli: Any, team: tuple[Path, Path, Path]) -> None:
    remote, alice, _ = team
    use(cli, "git")
    install_pre_receive(remote, "memory PRs need a ticket number")
    before = git("--git-dir", str(remote), "rev-parse", "main", cwd=alice).strip()
    commit_file(alice, "x.txt", "x\n")
    result = cli("push")
    assert result.rc == 1 and "memory PRs need a ticket number" in result.err
    assert git("--git-dir", str(remote), "rev-parse", "main", cwd=alice).strip() == before


def test_push_rejected_by_pre_receive_hook_pygit2_backend(cli: Any, team: tuple[Path, Path, Path], tmp_path: Path) -> None:
    remote, alice, _ = team
    use(cli, "pygit2")
    install_pre_receive(remote, "memory PRs need a ticket number")
    before = git("--git-dir", str(remote), "rev-parse", "main", cwd=alice).strip()
    with git_daemon(tmp_path) as base:
        git("remote", "set-url", "origin", f"{base}remote.git", cwd=alice)
        commit_file(alice, "x.txt", "x\n")
        result = cli("push")
    assert result.rc == 1 and "memory PRs need a ticket number" in result.err
    assert git("--git-dir", str(remote), "rev-parse", "main", cwd=alice).strip() == before


@pytest.mark.parametrize("backend", BACKENDS)
def test_pull_and_push_over_smart_http_with_token(cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  backend: str) -> None:  # fmt: skip
    """A real smart-HTTP server (dulwich) on 127.0.0.1 that wants a token; the token comes
    from the user's git credential helper, for both backends."""
    import os
    import shutil

    from tests.gitservers import smart_http_server

    token = "ghp_" + "T0k3n" * 7
    gitconfig = tmp_path / "gitconfig"
    shutil.copy(os.environ["GIT_CONFIG_GLOBAL"], gitconfig)
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(gitconfig))
    remote = bare_remote(tmp_path / "remote.git")
    seed = tmp_path / "seed"
    seed.mkdir()
    git("init", "-q", "-b", "main", cwd=seed)
    commit_file(seed, "README.md", "hello\n", "initial")
    git("push", "-q", str(remote), "main", cwd=seed)
    alice = clone(str(remote), tmp_path / "alice")
    with smart_http_server({"acme/widgets.git": remote}, token=token) as base:
        store = tmp_path / "credentials"
        git("config", "--file", str(gitconfig), f"credential.{base}.helper", f"store --file={store}", cwd=tmp_path)
        proto, _, host = base.partition("://")
        subprocess.run(["git", "credential", "approve"], check=True, capture_output=True, text=True,
                       input=f"protocol={proto}\nhost={host}\nusername=x-access-token\npassword={token}\n\n")  # fmt: skip
        git("remote", "set-url", "origin", f"{base}/acme/widgets.git", cwd=alice)
        monkeypatch.chdir(alice)
        use(cli, backend)
        new = commit_file(seed, "notes.md", "from seed\n")
        git("push", "-q", str(remote), "main", cwd=seed)
        pulled = cli("pull")
        assert pulled.rc == 0, pulled.err
        assert git("rev-parse", "HEAD", cwd=alice).strip() == new
        mine = commit_file(alice, "mine.md", "from alice\n")
        pushed = cli("push")
        assert pushed.rc == 0, pushed.err
        assert git("--git-dir", str(remote), "rev-parse", "main", cwd=alice).strip() == mine
        store.write_text(store.read_text().replace(token, "ghp_wrong"))
        commit_file(alice, "more.md", "more\n")
        refused = cli("push")
        assert refused.rc == 1 and "uthentication" in refused.err


def test_staged_change_in_the_way_is_refused(cli: Any, team: tuple[Path, Path, Path]) -> None:
    _, alice, bob = team
    commit_file(bob, "notes.txt", "line\nfrom bob\n")
    git("push", "-q", "origin", "main", cwd=bob)
    (alice / "notes.txt").write_text("staged by alice\n")
    git("add", "notes.txt", cwd=alice)
    (alice / "notes.txt").write_text("line\n")  # work tree back to HEAD; the index differs
    before = git("rev-parse", "HEAD", cwd=alice).strip()
    result = cli("pull")
    assert result.rc == 1 and "staged changes to notes.txt" in result.err
    assert git("rev-parse", "HEAD", cwd=alice).strip() == before
    assert git("show", ":notes.txt", cwd=alice) == "staged by alice\n"


def test_push_refuses_an_upstream_with_another_name(cli: Any, team: tuple[Path, Path, Path]) -> None:
    remote, alice, _ = team
    git("switch", "-q", "-c", "feat", "origin/main", cwd=alice)
    commit_file(alice, "f.txt", "feature\n")
    before = git("--git-dir", str(remote), "rev-parse", "main", cwd=alice).strip()
    result = cli("push")
    assert result.rc == 1 and "another name" in result.err and "git push -u origin feat" in result.err
    assert git("--git-dir", str(remote), "rev-parse", "main", cwd=alice).strip() == before


def test_pull_refuses_a_locked_index_and_an_unfinished_merge_before_touching_a_file(
        cli: Any, team: tuple[Path, Path, Path]) -> None:  # fmt: skip
    """libgit2 writes the work tree first and fails on the index lock only after: the pull
    must refuse up front, as `git pull --ff-only` does — and so during a merge or
    cherry-pick not concluded (the fast-forward would move what an abort rewinds to)."""
    _, alice, bob = team
    old = git("rev-parse", "HEAD", cwd=alice).strip()
    commit_file(bob, "README.md", "hello from bob\n")
    commit_file(bob, "added.txt", "new\n")
    git("push", "-q", "origin", "main", cwd=bob)
    lock = alice / ".git" / "index.lock"
    lock.touch()
    result = cli("pull")
    assert result.rc == 1 and "index.lock exists" in result.err and "nothing was changed" in result.err
    assert git("status", "--porcelain", cwd=alice) == "" and (alice / "README.md").read_text() == "hello\n"
    assert git("rev-parse", "HEAD", cwd=alice).strip() == old
    lock.unlink()
    git("switch", "-qc", "feature", cwd=alice)
    commit_file(alice, "feature.txt", "f\n")
    git("switch", "-q", "main", cwd=alice)
    git("merge", "--no-ff", "--no-commit", "feature", cwd=alice)
    result = cli("pull")
    assert result.rc == 1 and "a merge is in progress" in result.err and "git merge --abort" in result.err
    assert git("rev-parse", "HEAD", cwd=alice).strip() == old and (alice / ".git" / "MERGE_HEAD").exists()
    git("merge", "--abort", cwd=alice)
    assert cli("pull").rc == 0 and (alice / "added.txt").exists()


def test_a_checkout_that_fails_midway_puts_the_files_back(cli: Any, team: tuple[Path, Path, Path],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """Another git command taking the index lock after the check, while the checkout runs:
    the files it already wrote are put back as HEAD has them, and only then is 'nothing
    was changed' said."""
    from openmemex.git import pull as pull_module

    _, alice, bob = team
    commit_file(alice, "mine.txt", "mine\n")
    git("push", "-q", "origin", "main", cwd=alice)
    git("pull", "-q", "--ff-only", cwd=bob)
    commit_file(bob, "README.md", "hello from bob\n")
    commit_file(bob, "added.txt", "new\n")
    commit_file(bob, "mine.txt", "theirs\n")
    git("rm", "-q", "notes.txt", cwd=bob)
    git("commit", "-qm", "drop notes", cwd=bob)
    git("push", "-q", "origin", "main", cwd=bob)
    (alice / "mine.txt").write_text("theirs\n")  # the user's own unstaged edit, equal to the upstream's: theirs to keep
    checked = pull_module._refuse_busy

    def then_locked(gitrepo: Any) -> None:
        checked(gitrepo)
        (alice / ".git" / "index.lock").touch()  # taken between the check and the checkout

    with monkeypatch.context() as patch:
        patch.setattr(pull_module, "_refuse_busy", then_locked)
        result = cli("pull")
    assert result.rc == 1 and "the fast-forward failed" in result.err and "nothing was changed" in result.err
    (alice / ".git" / "index.lock").unlink()
    assert git("status", "--porcelain", "--untracked-files=all", cwd=alice) == " M mine.txt\n"  # theirs: kept
    assert (alice / "README.md").read_text() == "hello\n" and (alice / "notes.txt").read_text() == "line\n"
    assert (alice / "mine.txt").read_text() == "theirs\n"
    git("checkout", "--", "mine.txt", cwd=alice)
    assert cli("pull").rc == 0 and (alice / "added.txt").read_text() == "new\n" and not (alice / "notes.txt").exists()


@pytest.mark.parametrize("backend", BACKENDS)
def test_pull_into_a_clone_of_an_empty_repository(cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  backend: str) -> None:  # fmt: skip
    """Cloned while the team repository was empty; a teammate then pushes the first commit:
    the unborn branch has its upstream in config, and the pull checks the commit out."""
    remote = bare_remote(tmp_path / "remote.git")
    early = clone(f"file://{remote}", tmp_path / "early")
    mate = clone(f"file://{remote}", tmp_path / "mate")
    monkeypatch.chdir(early)
    use(cli, backend)
    result = cli("pull")
    assert result.rc == 0 and "no commits on origin yet" in result.out, result.err
    if git("branch", "--show-current", cwd=mate).strip() != "main":
        git("switch", "-qc", "main", cwd=mate)
    first = commit_file(mate, "README.md", "first\n", "first")
    git("push", "-q", "origin", "main", cwd=mate)
    result = cli("pull")
    assert result.rc == 0, result.err
    assert f"{first[:8]} (its first commit)" in result.out
    assert git("rev-parse", "HEAD", cwd=early).strip() == first and git("status", "--porcelain", cwd=early) == ""
    assert cli("pull").out.startswith("already up to date: main at")


@pytest.mark.parametrize("where", ["hooks", "hooksPath"])
def test_pygit2_push_never_goes_past_a_pre_push_hook(cli: Any, team: tuple[Path, Path, Path], where: str) -> None:
    """libgit2 runs no hooks: with the team's pre-push check in place (in .git/hooks or
    core.hooksPath), the in-process backend refuses and names the git backend, which runs it."""
    remote, alice, _ = team
    folder = alice / ".git" / "hooks" if where == "hooks" else alice / "tools" / "githooks"
    folder.mkdir(parents=True, exist_ok=True)
    hook = folder / "pre-push"
    hook.write_text('#!/bin/sh\necho "pre-push: tests must pass first" >&2\nexit 1\n')
    hook.chmod(0o755)
    if where == "hooksPath":
        git("config", "core.hooksPath", "tools/githooks", cwd=alice)
    commit_file(alice, "README.md", "changed\n")
    before = git("rev-parse", "main", cwd=remote)
    use(cli, "pygit2")
    result = cli("push")
    assert result.rc == 1 and "pre-push hook" in result.err and "sync.transport git" in result.err, result.err
    assert git("rev-parse", "main", cwd=remote) == before
    use(cli, "git")
    refused = cli("push")
    assert refused.rc == 1 and "tests must pass first" in refused.err
    assert git("rev-parse", "main", cwd=remote) == before


def test_pull_follows_the_remotes_own_fetch_refspec(cli: Any, team: tuple[Path, Path, Path]) -> None:
    """The upstream's remote-tracking ref is where the remote's fetch refspec files it, not
    always refs/remotes/<remote>/<branch>."""
    _, alice, bob = team
    git("config", "remote.origin.fetch", "+refs/heads/*:refs/remotes/origin/team/*", cwd=alice)
    new = commit_file(bob, "notes.txt", "from bob\n")
    git("push", "-q", "origin", "main", cwd=bob)
    result = cli("pull")
    assert result.rc == 0, result.err
    assert git("rev-parse", "HEAD", cwd=alice).strip() == new
    assert git("rev-parse", "refs/remotes/origin/team/main", cwd=alice).strip() == new


@pytest.mark.parametrize("setting", ["no destination", "negative", "local", "url"])
def test_pull_refuses_an_upstream_it_cannot_follow_with_the_reason(cli: Any, team: tuple[Path, Path, Path],
                                                                   setting: str) -> None:  # fmt: skip
    """A fetch refspec without a destination or one that excludes the branch fetches no
    remote-tracking ref to fast-forward to (a negative one made pull say "up to date" while
    the remote was ahead); a branch tracking a local branch or a URL names `git pull`."""
    remote, alice, bob = team
    commit_file(bob, "notes.txt", "from bob\n")
    git("push", "-q", "origin", "main", cwd=bob)
    old = git("rev-parse", "HEAD", cwd=alice).strip()
    if setting == "no destination":
        git("config", "--replace-all", "remote.origin.fetch", "refs/heads/main", cwd=alice)
    elif setting == "negative":
        git("config", "--replace-all", "remote.origin.fetch", "^refs/heads/main", cwd=alice)
        git("config", "--add", "remote.origin.fetch", "+refs/heads/*:refs/remotes/origin/*", cwd=alice)
    elif setting == "local":
        git("config", "branch.main.remote", ".", cwd=alice)
    else:
        git("config", "branch.main.remote", str(remote), cwd=alice)
    result = cli("pull")
    assert result.rc == 1 and "nothing was changed" in result.err and "internal error" not in result.err, result.err
    expected = {"no destination": "fetch refspecs do not fetch refs/heads/main", "negative": "do not fetch",
                "local": "tracks a local branch", "url": "rather than a named remote"}[setting]  # fmt: skip
    assert expected in result.err
    assert git("rev-parse", "HEAD", cwd=alice).strip() == old


def test_push_goes_where_git_push_would(cli: Any, team: tuple[Path, Path, Path], tmp_path: Path) -> None:
    """remote.pushDefault (a fork workflow) wins over the upstream's remote; a remote whose
    push refspec sends branches elsewhere (Gerrit's refs/for/) is left to git; with no
    upstream and no origin there is no destination (open-memex picked the first remote)."""
    remote, alice, _ = team
    fork = bare_remote(tmp_path / "fork.git")
    git("remote", "add", "fork", f"file://{fork}", cwd=alice)
    git("config", "remote.pushDefault", "fork", cwd=alice)
    before = git("rev-parse", "main", cwd=remote).strip()
    head = commit_file(alice, "mine.txt", "mine\n")
    result = cli("push")
    assert result.rc == 0, result.err
    assert git("rev-parse", "main", cwd=fork).strip() == head
    assert git("rev-parse", "main", cwd=remote).strip() == before  # the team's repository is untouched
    git("config", "--unset", "remote.pushDefault", cwd=alice)
    git("config", "remote.origin.push", "refs/heads/main:refs/for/main", cwd=alice)
    result = cli("push")
    assert result.rc == 1 and "remote.origin.push is configured" in result.err and "git push origin" in result.err
    assert git("rev-parse", "main", cwd=remote).strip() == before
    git("config", "--unset", "remote.origin.push", cwd=alice)
    git("switch", "-q", "-c", "topic", cwd=alice)
    git("remote", "rename", "origin", "company", cwd=alice)
    result = cli("push")
    assert result.rc == 1 and "no push destination for topic" in result.err
    assert "topic" not in git("branch", "-r", cwd=alice)


def test_pull_leaves_filtered_files_to_git(cli: Any, team: tuple[Path, Path, Path]) -> None:
    """libgit2 runs no smudge filter (Git LFS's way): such a pull is git's to do."""
    _, alice, bob = team
    commit_file(bob, ".gitattributes", "*.dat filter=up\n", "attributes")
    commit_file(bob, "asset.dat", "payload data\n", "asset")
    git("push", "-q", "origin", "main", cwd=bob)
    git("config", "filter.up.smudge", "tr a-z A-Z", cwd=alice)
    git("config", "filter.up.clean", "tr A-Z a-z", cwd=alice)
    head = git("rev-parse", "HEAD", cwd=alice).strip()
    result = cli("pull")
    assert result.rc == 1
    assert "asset.dat, which git converts with the up filter" in result.err and "git pull --ff-only" in result.err
    assert git("rev-parse", "HEAD", cwd=alice).strip() == head and not (alice / "asset.dat").exists()
    git("pull", "-q", "--ff-only", cwd=alice)
    assert (alice / "asset.dat").read_text() == "PAYLOAD DATA\n"


def test_pygit2_never_writes_past_a_local_remotes_receive_hook(cli: Any, team: tuple[Path, Path, Path]) -> None:
    """libgit2 pushes to a local repository by writing its files: the hook never runs."""
    remote, alice, _ = team
    use(cli, "pygit2")
    install_pre_receive(remote, "main is protected")
    before = git("--git-dir", str(remote), "rev-parse", "main", cwd=alice).strip()
    commit_file(alice, "x.txt", "x\n")
    result = cli("push")
    assert result.rc == 1 and "local repository with a pre-receive hook" in result.err
    assert "sync.transport git" in result.err
    assert git("--git-dir", str(remote), "rev-parse", "main", cwd=alice).strip() == before


def test_pygit2_refuses_a_shallow_fetch_from_a_local_remote(cli: Any, team: tuple[Path, Path, Path],
                                                           tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    remote, _, bob = team
    shallow = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{remote}", str(shallow)], check=True)
    monkeypatch.chdir(shallow)
    use(cli, "pygit2")
    commit_file(bob, "more.txt", "more\n")
    git("push", "-q", "origin", "main", cwd=bob)
    result = cli("pull")
    assert result.rc == 1 and "this clone is shallow" in result.err
    assert (shallow / ".git" / "shallow").exists()
    git("log", "--oneline", cwd=shallow)
    git("fsck", cwd=shallow)
