"""Fetch and push through both transport backends against real repositories and loopback
servers (file paths, file://, dulwich smart HTTP with a token, git daemon with hooks);
every outcome is checked with the git CLI."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from openmemex.errors import UsageError
from openmemex.git.transport import (
    PushRejected,
    PushResult,
    Transport,
    TransportError,
    get_transport,
)
from tests.conftest import git
from tests.gitservers import (
    bare_remote,
    free_port,
    git_daemon,
    install_pre_receive,
    smart_http_server,
)

BACKENDS = ("git", "pygit2")
TOKEN = "ghp_looPbackT0ken"
HOOK_MESSAGE = "memex: direct pushes to main are blocked\nmemex: open a pull request instead"


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """Loopback servers only: a proxy from the environment must not intercept them."""
    for var in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture(params=BACKENDS)
def transport(request: pytest.FixtureRequest) -> Transport:
    return get_transport(request.param)


@pytest.fixture
def gitconfig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's own copy of the hermetic global git config (safe to add helpers to)."""
    path = tmp_path / "gitconfig"
    shutil.copyfile(os.environ["GIT_CONFIG_GLOBAL"], path)
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(path))
    return path


def commit(repo: Path, name: str, text: str) -> str:
    (repo / name).write_text(text)
    git("add", name, cwd=repo)
    git("commit", "-q", "-m", f"{name}: {text.strip()}", cwd=repo)
    return rev(repo, "HEAD")


def rev(repo: Path, ref: str) -> str:
    return git("rev-parse", "--verify", ref, cwd=repo).strip()


def remote_rev(bare: Path, ref: str) -> str | None:
    proc = subprocess.run(["git", "--git-dir", str(bare), "rev-parse", "--verify", "--quiet", ref],
                          capture_output=True, text=True)  # fmt: skip
    return proc.stdout.strip() or None


def make_world(root: Path, origin_url: str | None = None) -> tuple[Path, Path, Path]:
    """A bare remote with one commit on main, a teammate's clone (``seed``) and ours
    (``mine``, whose origin is ``origin_url`` when given)."""
    bare = bare_remote(root / "srv" / "r.git")
    seed = root / "seed"
    git("clone", "-q", str(bare), str(seed), cwd=root)
    commit(seed, "a.md", "one\n")
    git("push", "-q", "origin", "main", cwd=seed)
    mine = root / "mine"
    git("clone", "-q", str(bare), str(mine), cwd=root)
    if origin_url is not None:
        git("remote", "set-url", "origin", origin_url, cwd=mine)
    return bare, seed, mine


def store_credential(gitconfig: Path, base_url: str, store: Path, password: str) -> None:
    """Configure the `store` helper for ``base_url`` and save a credential in it."""
    git("config", "--file", str(gitconfig), f"credential.{base_url}.helper", f"store --file={store}", cwd=store.parent)
    proto, _, host = base_url.partition("://")
    subprocess.run(["git", "credential", "approve"], check=True, capture_output=True, text=True,
                   input=f"protocol={proto}\nhost={host}\nusername=x-access-token\npassword={password}\n\n")  # fmt: skip
    assert password in store.read_text()


# -- fetch ----------------------------------------------------------------------------------


def test_fetch_over_file_url_updates_remote_tracking_ref(transport: Transport, tmp_path: Path) -> None:
    bare, seed, mine = make_world(tmp_path, origin_url=(tmp_path / "srv" / "r.git").as_uri())
    before = rev(mine, "refs/heads/main")
    new = commit(seed, "b.md", "two\n")
    git("push", "-q", "origin", "main", cwd=seed)

    transport.fetch(mine, "origin")

    assert rev(mine, "refs/remotes/origin/main") == new == remote_rev(bare, "refs/heads/main")
    assert rev(mine, "refs/heads/main") == before  # fetch never moves the local branch


def test_fetch_ignores_git_dir_of_the_caller(
    transport: Transport, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Inside a git hook GIT_DIR / GIT_INDEX_FILE / GIT_WORK_TREE name the *caller's* repo."""
    _bare, seed, mine = make_world(tmp_path)
    new = commit(seed, "b.md", "two\n")
    git("push", "-q", "origin", "main", cwd=seed)
    monkeypatch.setenv("GIT_DIR", str(seed / ".git"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(seed / ".git" / "index"))
    monkeypatch.setenv("GIT_WORK_TREE", str(seed))

    transport.fetch(mine, "origin")

    monkeypatch.delenv("GIT_DIR")
    monkeypatch.delenv("GIT_INDEX_FILE")
    monkeypatch.delenv("GIT_WORK_TREE")
    assert rev(mine, "refs/remotes/origin/main") == new


def test_fetch_from_unknown_remote_names_git_remote(transport: Transport, tmp_path: Path) -> None:
    _bare, _seed, mine = make_world(tmp_path)
    with pytest.raises(TransportError, match=r"nosuch.*`git remote"):
        transport.fetch(mine, "nosuch")


def test_fetch_from_a_closed_port_names_the_network(transport: Transport, tmp_path: Path) -> None:
    _bare, _seed, mine = make_world(tmp_path, origin_url=f"http://127.0.0.1:{free_port()}/o/r.git")
    with pytest.raises(TransportError) as caught:
        transport.fetch(mine, "origin")
    message = str(caught.value)
    assert message.startswith("fetch from 'origin' failed: ")
    assert "check your network connection" in message
    assert "\n" not in message


@pytest.mark.parametrize("backend", BACKENDS)
def test_fetch_times_out(backend: str, tmp_path: Path) -> None:
    """A server that accepts the connection and never answers ends in a clean timeout."""
    from openmemex.git.transport_git import GitTransport
    from openmemex.git.transport_pygit2 import Pygit2Transport

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        # http: the git backend's remote helper (a grandchild) must be ended too
        _bare, _seed, mine = make_world(tmp_path, origin_url=f"http://127.0.0.1:{silent.getsockname()[1]}/r.git")
        chosen: Transport = GitTransport(timeout=1) if backend == "git" else Pygit2Transport(timeout=1)
        saved = _libgit2_timeouts() if backend == "pygit2" else None
        started = time.monotonic()
        try:
            with pytest.raises(TransportError, match="timed out"):
                chosen.fetch(mine, "origin")
        finally:
            if saved is not None:  # libgit2's timeouts are process-wide
                _libgit2_timeouts(saved)
        assert time.monotonic() - started < 10


def _libgit2_timeouts(restore: tuple[int, int] | None = None) -> tuple[int, int]:
    import pygit2
    from pygit2.enums import Option

    if restore is not None:
        pygit2.option(Option.SET_SERVER_CONNECT_TIMEOUT, restore[0])
        pygit2.option(Option.SET_SERVER_TIMEOUT, restore[1])
    return pygit2.option(Option.GET_SERVER_CONNECT_TIMEOUT), pygit2.option(Option.GET_SERVER_TIMEOUT)


# -- push -----------------------------------------------------------------------------------


def test_push_new_branch_then_fast_forward(transport: Transport, tmp_path: Path) -> None:
    bare, _seed, mine = make_world(tmp_path)
    git("switch", "-q", "-c", "memex/submit-1", cwd=mine)
    branch_tip = commit(mine, "m.md", "memory\n")

    result = transport.push(mine, "origin", "refs/heads/memex/submit-1", "refs/heads/memex/submit-1")

    assert result == PushResult("origin", "refs/heads/memex/submit-1", "refs/heads/memex/submit-1", branch_tip)
    assert remote_rev(bare, "refs/heads/memex/submit-1") == branch_tip

    git("switch", "-q", "main", cwd=mine)
    main_tip = commit(mine, "n.md", "next\n")
    result = transport.push(mine, "origin", "main", "main")  # bare names mean branches

    assert result == PushResult("origin", "refs/heads/main", "refs/heads/main", main_tip)
    assert remote_rev(bare, "refs/heads/main") == main_tip
    assert rev(mine, "refs/remotes/origin/main") == main_tip  # tracking ref follows the push


def test_push_when_remote_is_up_to_date_succeeds(transport: Transport, tmp_path: Path) -> None:
    bare, _seed, mine = make_world(tmp_path)
    tip = rev(mine, "HEAD")
    assert transport.push(mine, "origin", "main", "main").new_target == tip == remote_rev(bare, "main")


@pytest.mark.parametrize("fetched", [False, True], ids=["behind", "diverged"])
def test_non_fast_forward_push_is_rejected(transport: Transport, tmp_path: Path, fetched: bool) -> None:
    bare, seed, mine = make_world(tmp_path)
    theirs = commit(seed, "b.md", "theirs\n")
    git("push", "-q", "origin", "main", cwd=seed)
    if fetched:
        git("fetch", "-q", "origin", cwd=mine)
    commit(mine, "c.md", "mine\n")

    with pytest.raises(PushRejected) as caught:
        transport.push(mine, "origin", "refs/heads/main", "refs/heads/main")

    message = str(caught.value)
    reason = "fetch first" if transport.name == "git" and not fetched else "non-fast-forward"
    assert message == (
        "push to 'origin' rejected: the remote's refs/heads/main has commits that your "
        f"refs/heads/main does not have ({reason}) — run `git memex pull` first, then push again"
    )
    assert remote_rev(bare, "refs/heads/main") == theirs


@pytest.mark.parametrize(
    ("backend", "server"),
    [("git", "path"), ("git", "git-daemon"), ("pygit2", "git-daemon")],
)
def test_push_refused_by_pre_receive_hook(backend: str, server: str, tmp_path: Path) -> None:
    """libgit2's local transport runs no hooks, so the pygit2 case goes through git daemon."""
    bare, _seed, mine = make_world(tmp_path)
    before = remote_rev(bare, "refs/heads/main")
    install_pre_receive(bare, HOOK_MESSAGE)
    commit(mine, "c.md", "mine\n")
    transport = get_transport(backend)

    def attempt() -> str:
        with pytest.raises(PushRejected) as caught:
            transport.push(mine, "origin", "refs/heads/main", "refs/heads/main")
        return str(caught.value)

    if server == "path":
        message = attempt()
    else:
        with git_daemon(tmp_path / "srv") as base:
            git("remote", "set-url", "origin", f"{base}r.git", cwd=mine)
            message = attempt()

    assert message == (
        "push to 'origin' rejected by the server for refs/heads/main (pre-receive hook declined): "
        "memex: direct pushes to main are blocked / memex: open a pull request instead — do what "
        "the server's message asks (a protected branch takes changes through a pull request: "
        "push to another branch), then push again"
    )
    assert remote_rev(bare, "refs/heads/main") == before


def test_push_never_forces(transport: Transport, tmp_path: Path) -> None:
    _bare, _seed, mine = make_world(tmp_path)
    with pytest.raises(UsageError, match="never force-pushes"):
        transport.push(mine, "origin", "+refs/heads/main", "refs/heads/main")
    with pytest.raises(UsageError):
        transport.push(mine, "origin", "refs/heads/main:refs/heads/x", "refs/heads/x")
    with pytest.raises(UsageError):
        transport.push(mine, "--upload-pack=touch /tmp/x", "main", "main")


def test_push_of_missing_ref_names_it(transport: Transport, tmp_path: Path) -> None:
    _bare, _seed, mine = make_world(tmp_path)
    with pytest.raises(TransportError, match=r"cannot push refs/heads/nope: no such ref"):
        transport.push(mine, "origin", "nope", "nope")


# -- smart HTTP with a token ------------------------------------------------------------------


@pytest.fixture
def http_world(tmp_path: Path, gitconfig: Path) -> Iterator[tuple[Path, Path, Path, str, Path]]:
    """(bare, seed, mine, base URL, credential store file) with mine's origin on smart HTTP."""
    bare, seed, mine = make_world(tmp_path)
    with smart_http_server({"o/r.git": bare}, token=TOKEN) as base:
        git("remote", "set-url", "origin", f"{base}/o/r.git", cwd=mine)
        yield bare, seed, mine, base, tmp_path / "credentials"


def test_http_fetch_and_push_with_token_from_credential_helper(
    transport: Transport, http_world: tuple[Path, Path, Path, str, Path], gitconfig: Path
) -> None:
    bare, seed, mine, base, store = http_world
    store_credential(gitconfig, base, store, TOKEN)
    new = commit(seed, "b.md", "two\n")
    git("push", "-q", "origin", "main", cwd=seed)

    transport.fetch(mine, "origin")
    assert rev(mine, "refs/remotes/origin/main") == new

    git("switch", "-q", "-c", "memex/submit-2", cwd=mine)
    tip = commit(mine, "m.md", "memory\n")
    result = transport.push(mine, "origin", "refs/heads/memex/submit-2", "refs/heads/memex/submit-2")
    assert result.new_target == tip == remote_rev(bare, "refs/heads/memex/submit-2")
    assert TOKEN in store.read_text()  # approved, not erased


def test_http_wrong_token_is_an_authentication_error(
    transport: Transport, http_world: tuple[Path, Path, Path, str, Path], gitconfig: Path
) -> None:
    _bare, _seed, mine, base, store = http_world
    store_credential(gitconfig, base, store, "ghp_wrong")
    with pytest.raises(TransportError) as caught:
        transport.fetch(mine, "origin")
    message = str(caught.value)
    assert "authentication" in message.lower()
    assert "ghp_wrong" not in message
    assert "\n" not in message
    assert store.read_text() == ""  # the refused credential was rejected in the helper


def test_http_without_any_credential(
    transport: Transport, http_world: tuple[Path, Path, Path, str, Path]
) -> None:
    _bare, _seed, mine, _base, _store = http_world
    with pytest.raises(TransportError, match=r"(?i)authentication|credentials") as caught:
        transport.fetch(mine, "origin")
    if transport.name == "git":  # stdin is no terminal here, so git must not prompt
        assert "terminal prompts disabled" in str(caught.value)


def test_pygit2_gives_up_after_the_retry_cap(
    http_world: tuple[Path, Path, Path, str, Path], gitconfig: Path, tmp_path: Path
) -> None:
    """A helper that keeps offering new wrong passwords gets 3 tries, not libgit2's 15."""
    _bare, _seed, mine, base, _store = http_world
    log = tmp_path / "helper.log"
    helper = tmp_path / "helper.sh"
    helper.write_text(
        f'#!/bin/sh\necho "$1" >> {log}\n'
        f'if [ "$1" = get ]; then echo username=x; echo "password=wrong-$(wc -l < {log})"; fi\n'
    )
    helper.chmod(0o755)
    git("config", "--file", str(gitconfig), f"credential.{base}.helper", str(helper), cwd=tmp_path)
    started = time.monotonic()

    with pytest.raises(TransportError) as caught:
        get_transport("pygit2").fetch(mine, "origin")

    assert "authentication to 127.0.0.1:" in str(caught.value)
    assert "failed after 3 attempts" in str(caught.value)
    calls = log.read_text().split()
    assert calls.count("get") == 3
    assert calls.count("erase") == 3  # every refused answer was rejected
    assert time.monotonic() - started < 10


# -- pygit2 callbacks, called directly ----------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "env", "expected"),
    [
        ("https://github.com/acme/widgets.git", {"GH_TOKEN": "gh1", "GITHUB_TOKEN": "gh2"}, "gh1"),
        ("https://github.com/acme/widgets.git", {"GITHUB_TOKEN": "gh2"}, "gh2"),
        ("https://x-access-token@GitHub.com:443/acme/widgets", {"GH_TOKEN": "gh1"}, "gh1"),
        ("https://acme.ghe.com/o/r.git", {"GH_TOKEN": "gh1"}, "gh1"),
        ("https://ghe.example.com/o/r.git", {"GH_HOST": "ghe.example.com", "GH_ENTERPRISE_TOKEN": "ent", "GH_TOKEN": "gh1"}, "ent"),
        ("https://ghe.example.com/o/r.git", {"GH_HOST": "ghe.example.com", "GH_TOKEN": "gh1"}, "gh1"),
        ("https://ghe.example.com/o/r.git", {"GH_TOKEN": "gh1"}, None),  # not a known GitHub host
        ("http://github.com/acme/widgets.git", {"GH_TOKEN": "gh1"}, None),  # never over plain HTTP
        ("https://gitlab.com/acme/widgets.git", {"GH_TOKEN": "gh1"}, None),
        ("https://github.com/acme/widgets.git", {}, None),
    ],
)
def test_github_token_selection(
    url: str, env: dict[str, str], expected: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from openmemex.git.transport_pygit2 import github_token

    for var in ("GH_TOKEN", "GITHUB_TOKEN", "GH_HOST", "GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    for var, value in env.items():
        monkeypatch.setenv(var, value)
    assert github_token(url) == expected


def test_credentials_callback_offers_the_github_token_first(monkeypatch: pytest.MonkeyPatch) -> None:
    import pygit2
    from pygit2.enums import CredentialType

    from openmemex.git.transport_pygit2 import Callbacks

    monkeypatch.setenv("GH_TOKEN", "ghp_fromenv")
    monkeypatch.setenv("PATH", "")  # no git: no credential helpers to fall back on
    url = "https://github.com/acme/widgets.git"
    callbacks = Callbacks(url)

    first = callbacks.credentials(url, None, CredentialType.USERPASS_PLAINTEXT)
    assert isinstance(first, pygit2.UserPass)
    assert first.credential_tuple == ("x-access-token", "ghp_fromenv")
    with pytest.raises(TransportError, match=r"authentication to github\.com failed: no working credential"):
        callbacks.credentials(url, None, CredentialType.USERPASS_PLAINTEXT)  # the token was refused


def test_credentials_callback_uses_ssh_agent(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import pygit2
    from pygit2.enums import CredentialType

    from openmemex.git.transport_pygit2 import Callbacks

    url = "ssh://git@example.com/acme/widgets.git"
    monkeypatch.setenv("SSH_AUTH_SOCK", str(tmp_path / "agent.sock"))
    answer = Callbacks(url).credentials(url, "git", CredentialType.SSH_KEY | CredentialType.SSH_CUSTOM)
    assert isinstance(answer, pygit2.KeypairFromAgent)
    assert answer.credential_tuple == ("git", None, None, None)

    monkeypatch.delenv("SSH_AUTH_SOCK")  # no agent and no key files in the test HOME
    with pytest.raises(TransportError, match=r"SSH authentication to example.com failed — load your key"):
        Callbacks(url).credentials(url, "git", CredentialType.SSH_KEY)


def test_certificate_check_trusts_only_verified_hosts() -> None:
    from openmemex.git.transport_pygit2 import Callbacks

    callbacks = Callbacks("ssh://git@example.com/o/r.git")
    assert callbacks.certificate_check(None, False, b"example.com") is False
    assert callbacks.certificate_check(None, True, b"example.com") is True


# -- choosing a backend -------------------------------------------------------------------------


def test_auto_picks_git_when_git_is_on_path() -> None:
    assert get_transport("auto").name == "git"
    assert get_transport().name == "git"
    assert get_transport("git").name == "git"
    assert get_transport("pygit2").name == "pygit2"


def test_auto_picks_pygit2_without_git(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    assert get_transport("auto").name == "pygit2"


def test_git_backend_without_git_names_the_fix(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _bare, _seed, mine = make_world(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    with pytest.raises(TransportError, match=r"no `git` executable on PATH .* sync\.transport pygit2"):
        get_transport("git").fetch(mine, "origin")


def test_unknown_setting_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match=r"unknown sync.transport 'nope' — use auto, git or pygit2") as caught:
        get_transport("nope")
    assert caught.value.exit_code == 2


def test_importing_transport_does_not_import_pygit2() -> None:
    code = (
        "import sys, openmemex.git.transport as t\n"
        "assert 'pygit2' not in sys.modules, 'import'\n"
        "t.get_transport('git')\n"
        "assert 'pygit2' not in sys.modules, 'git backend'\n"
        "t.get_transport('pygit2')\n"
        "assert 'pygit2' in sys.modules\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


# -- git backend: condensing git's output -------------------------------------------------------


def test_condensed_git_errors_are_one_readable_line() -> None:
    from openmemex.git.transport_git import _condense, _rejections

    stderr = (
        "fatal: 'nosuch' does not appear to be a git repository\n"
        "fatal: Could not read from remote repository.\n\n"
        "Please make sure you have the correct access rights\nand the repository exists.\n"
    )
    assert _condense(stderr) == "'nosuch' does not appear to be a git repository"
    stderr = (
        "remote: Enumerating objects: 3, done.        \n"
        "remote: memex: blocked        \n"
        "To git://127.0.0.1:9/r.git\n"
        "error: failed to push some refs to 'git://127.0.0.1:9/r.git'\n"
        "hint: Updates were rejected because the remote contains work that you do\n"
    )
    assert _condense(stderr) == "remote: memex: blocked"
    porcelain = (
        "To ../bare.git\n"
        "!\trefs/heads/main:refs/heads/main\t[rejected] (fetch first)\n"
        "!\trefs/heads/main:refs/heads/other\t[remote rejected] (pre-receive hook declined)\n"
        "Done\n"
    )
    assert _rejections(porcelain) == [
        ("refs/heads/main", "rejected", "fetch first"),
        ("refs/heads/other", "remote rejected", "pre-receive hook declined"),
    ]


def test_messages_never_show_a_token_from_a_url() -> None:
    from openmemex.git.transport import failure

    error = failure("fetch from", "origin", "unable to access 'https://x:ghp_secret@host/r.git/': 403", "x")
    assert "ghp_secret" not in str(error)
    assert "https://x:***@host/r.git/" in str(error)
    assert "check your credentials" in str(error)
