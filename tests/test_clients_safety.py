"""init / uninstall against hostile files and interrupted runs (review rev66): repository
symlinks, concurrent inits, folders that were there before init, an unwritable data root,
temporary files and backups (their mode, a kill -9 mid-write), a data root reached through
a symlink, hand-written hooks, the Copilot instructions' last byte. Real files in the
test's HOME, the real CLI, byte-for-byte checks."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from openmemex.clients import doctor_checks
from openmemex.locks import scope_lock
from tests.clientcases import home, ours
from tests.conftest import git, run_process


def _actions(result: Any, kind: str | None = None) -> list[dict[str, Any]]:
    return [a for a in json.loads(result.out)["actions"] if kind is None or a["kind"] == kind]


def _tree(root: Path) -> dict[str, bytes | None]:
    """Every path under ``root`` (links not followed): a file's bytes, None for a folder,
    ``->target`` for a link."""
    found: dict[str, bytes | None] = {}
    for path in sorted(root.rglob("*")):
        name = str(path.relative_to(root))
        if path.is_symlink():
            found[name] = b"->" + os.fsencode(os.readlink(path))
        elif path.is_dir():
            found[name] = None
        else:
            found[name] = path.read_bytes()
    return found


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cloned repository, outside HOME; the test's cwd."""
    folder = tmp_path / "clone"
    folder.mkdir()
    git("init", "-q", cwd=folder)
    monkeypatch.chdir(folder)
    return folder


# -- 1. a project's symlinks never lead init out of the repository -------------------------


def test_project_init_refuses_symlinks_leading_out_of_the_repository(cli: Any, repo: Path) -> None:
    """A repository shipping ``.mcp.json.open-memex.bak -> ~/.bash_profile`` got its
    ``.mcp.json`` copied into ``~/.bash_profile`` (the backup followed the dangling link),
    and ``.cursor/mcp.json -> ~/.not-yet-there/deep/file`` made init create folders and a
    file in the user's home."""
    mcp = b'{"x": "$(id > /tmp/pwned)"}\n'
    (repo / ".mcp.json").write_bytes(mcp)
    (repo / ".mcp.json.open-memex.bak").symlink_to(home() / ".bash_profile")
    (repo / ".cursor").mkdir()
    (repo / ".cursor" / "mcp.json").symlink_to(home() / ".not-yet-there" / "deep" / "file")
    (home() / "elsewhere").mkdir()
    (repo / ".vscode").symlink_to(home() / "elsewhere")  # a folder on the way
    before_home, before_repo = _tree(home()), _tree(repo)
    result = cli("init", "--project", "--client", "claude", "--client", "cursor", "--client", "vscode", "--json")
    assert result.rc == 1
    actions = {a["client"]: a for a in _actions(result, "mcp")}
    assert {client: a["action"] for client, a in actions.items()} == {"claude": "failed", "cursor": "failed",
                                                                      "vscode": "failed"}  # fmt: skip
    for action in actions.values():
        assert "out of the repository" in action["detail"] and "\n" not in action["detail"]
    assert ".mcp.json.open-memex.bak beside it" in actions["claude"]["detail"]
    assert _tree(home()) == before_home and _tree(repo) == before_repo


def test_project_symlinks_inside_the_repository_are_followed(cli: Any, repo: Path) -> None:
    (repo / "config").mkdir()
    target = repo / "config" / "mcp.json"
    target.write_text('{"mcpServers": {}}\n')
    (repo / ".mcp.json").symlink_to(Path("config") / "mcp.json")
    assert cli("init", "--project", "--client", "claude").rc == 0
    assert (repo / ".mcp.json").is_symlink() and ours("claude", target)
    assert (repo / "config" / "mcp.json.open-memex.bak").read_text() == '{"mcpServers": {}}\n'


def test_project_uninstall_refuses_a_file_that_leads_out_of_the_repository(cli: Any, repo: Path) -> None:
    outside = home() / "dotfiles" / "mcp.json"
    outside.parent.mkdir()
    assert cli("init", "--project", "--client", "claude").rc == 0
    (repo / ".mcp.json").rename(outside)  # the user's own file, with our entry, now linked in
    (repo / ".mcp.json").symlink_to(outside)
    before = outside.read_bytes()
    result = cli("uninstall", "--project", "--client", "claude", "--json")
    assert [(a["action"], "out of the repository" in a["detail"]) for a in _actions(result, "mcp")] == [("failed", True)]
    assert outside.read_bytes() == before


def test_a_backup_is_never_written_through_a_link(cli: Any) -> None:
    """A user-level file whose backup name is a dangling link: the link stays as it is and
    nothing is created where it points (the copy followed it)."""
    path = home() / ".cursor" / "mcp.json"
    path.parent.mkdir()
    path.write_text('{"a": 1}\n')
    bak = path.with_name("mcp.json.open-memex.bak")
    bak.symlink_to(home() / "nowhere")
    assert cli("init", "--client", "cursor").rc == 0
    assert ours("cursor", path)
    assert bak.is_symlink() and not (home() / "nowhere").exists()


# -- 2. two inits at once lose nothing -----------------------------------------------------

_DRIVER = r"""
import contextlib, sys
from pathlib import Path
import openmemex.clients.marker as m
flags = Path(sys.argv[1])
read = m.read_files
def read_files(*args, **kwargs):
    (flags / "read").touch()
    return read(*args, **kwargs)
m.read_files = read_files
if hasattr(m, "locked"):
    locked = m.locked
    @contextlib.contextmanager
    def announced():
        (flags / "locking").touch()
        with locked():
            yield
    m.locked = announced
from openmemex.cli.app import main
sys.argv = ["open-memex", *sys.argv[2:]]
main()
"""


def test_init_merges_its_record_under_the_lock(tmp_path: Path, data_root: Path) -> None:
    """Another init writes the record between this one's read and write: its part must
    survive. (The record was read, merged and written back without a lock: one init's
    part was lost, and uninstall could no longer give that file back.)"""
    flags = tmp_path / "flags"
    flags.mkdir()
    data_root.mkdir()
    record = {"version": "0", "at": "x", "clients": ["cursor"], "declined": False,
              "files": {str(home() / ".cursor" / "mcp.json"): {"existed": True, "blank": None, "filled": [],
                                                              "parts": {"cursor mcp": [["mcpServers"]]}}}}  # fmt: skip
    with scope_lock(data_root, ["init"]):
        proc = subprocess.Popen([sys.executable, "-c", _DRIVER, str(flags), "init", "--client", "windsurf"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
        while not ((flags / "read").exists() or (flags / "locking").exists()):
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.01)
        (data_root / ".init.json").write_text(json.dumps(record))  # the other init's record
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, out + err
    marker = json.loads((data_root / ".init.json").read_text())
    assert marker["clients"] == ["cursor", "windsurf"]
    assert set(marker["files"]) == {str(home() / ".cursor" / "mcp.json"),
                                    str(home() / ".codeium" / "windsurf" / "mcp_config.json")}  # fmt: skip


def test_concurrent_inits_record_everything_and_uninstall_gives_it_all_back(data_root: Path) -> None:
    clients = ["claude", "codex", "cursor", "vscode", "opencode", "windsurf", "zed", "visualstudio"]
    original = b'{\n  "theme": 1\n}\n'
    for name in (".cursor/mcp.json", ".config/Code/User/mcp.json", ".codeium/windsurf/mcp_config.json", ".mcp.json"):
        (home() / name).parent.mkdir(parents=True, exist_ok=True)
        (home() / name).write_bytes(original)
    before = _tree(home())
    procs = [subprocess.Popen([sys.executable, "-c", "from openmemex.cli.app import main; main()", "init", "--client",
                               client, "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for client in clients]  # fmt: skip
    results = [proc.communicate(timeout=120) for proc in procs]
    assert [proc.returncode for proc in procs] == [0] * len(clients), results
    marker = json.loads((data_root / ".init.json").read_text())
    assert sorted(marker["clients"]) == sorted(clients)
    assert not [name for name in os.listdir(data_root) if name.endswith(".tmp")]
    assert run_process("uninstall", "--yes").rc == 0
    after = {name: data for name, data in _tree(home()).items() if not name.endswith(".open-memex.bak")}
    assert after == before


# -- 3. uninstall removes only the folders init created -------------------------------------


def test_uninstall_keeps_the_empty_folders_that_were_there_before_init(cli: Any) -> None:
    """An agent's installer leaves ``~/.codex`` or ``~/.claude/skills`` empty: uninstall took
    them for folders init had made."""
    for folder in (".claude/skills", ".codex", ".cursor", ".agents/skills", ".config/opencode"):
        (home() / folder).mkdir(parents=True)
    before = _tree(home())
    assert cli("init", "--client", "claude", "--client", "codex", "--client", "cursor", "--client", "opencode").rc == 0
    assert (home() / ".cursor" / "skills").is_dir()  # made by init
    assert cli("uninstall", "--yes").rc == 0
    assert _tree(home()) == before


def test_without_a_record_of_folders_uninstall_removes_none(cli: Any, data_root: Path) -> None:
    assert cli("init", "--client", "windsurf", "--client", "cursor").rc == 0
    marker = json.loads((data_root / ".init.json").read_text())
    assert str(home() / ".codeium" / "windsurf") in marker["folders"]
    del marker["folders"]  # an earlier version's record
    (data_root / ".init.json").write_text(json.dumps(marker))
    assert cli("uninstall", "--yes").rc == 0
    assert not (home() / ".codeium" / "windsurf" / "mcp_config.json").exists()
    assert (home() / ".codeium" / "windsurf").is_dir() and (home() / ".cursor" / "skills").is_dir()


# -- 4. an unwritable data root: nothing is touched -----------------------------------------


@pytest.mark.parametrize("blocked", ["data root under a file", "record is a folder"])
def test_an_unwritable_record_stops_init_before_any_file_is_touched(cli: Any, tmp_path: Path, blocked: str,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """init edited every agent's config, then could not write the record of what it had
    changed: a later uninstall could not give the files back."""
    (home() / ".claude.json").write_text('{\n  "numStartups": 3\n}\n')
    if blocked == "data root under a file":
        (tmp_path / "file").write_text("")
        monkeypatch.setenv("OPEN_MEMEX_HOME", str(tmp_path / "file" / "data"))
    else:
        (tmp_path / "data" / ".init.json").mkdir(parents=True)
    before = _tree(home())
    result = cli("init", "--client", "claude", "--client", "codex", "--client", "cursor")
    assert result.rc == 1 and result.out == ""
    assert result.err.startswith("open-memex: error: cannot write ") and "nothing was changed" in result.err
    assert result.err.count("\n") == 1
    assert _tree(home()) == before


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0 or not Path("/usr/bin/setpriv").exists(),
                    reason="needs root and setpriv to drop the override of file modes")  # fmt: skip
def test_a_read_only_data_root_stops_init_before_any_file_is_touched(tmp_path: Path) -> None:
    (home() / ".claude.json").write_text('{\n  "numStartups": 3\n}\n')
    (tmp_path / "ro").mkdir()
    (tmp_path / "ro").chmod(0o555)
    before = _tree(home())
    proc = subprocess.run(["/usr/bin/setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner",
                           "--inh-caps=-all", sys.executable, "-c", "from openmemex.cli.app import main; main()",
                           "init", "--client", "claude"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "OPEN_MEMEX_HOME": str(tmp_path / "ro" / "data")})  # fmt: skip
    assert proc.returncode == 1 and "nothing was changed" in proc.stderr, proc.stdout + proc.stderr
    assert _tree(home()) == before


# -- 5. temporary files and backups are never readable by others ----------------------------


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="names an open file through /proc")
def test_temp_files_and_backups_are_owner_only_while_they_fill(cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The temporary copy was created 0644 and chmodded only after the whole config (its
    tokens included) was in it; the backup copy had the same window."""
    path = home() / ".claude.json"
    secret = '{"mcpServers": {"gh": {"command": "gh", "env": {"GITHUB_TOKEN": "ghp_SECRET"}}}}\n'
    path.write_text(secret)
    path.chmod(0o640)
    seen: list[tuple[int, bool]] = []
    real_fsync = os.fsync

    def spy(fd: int) -> None:
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode):
            held = Path(os.readlink(f"/proc/self/fd/{fd}")).read_bytes()  # the descriptor may be write-only
            seen.append((stat.S_IMODE(st.st_mode), b"ghp_SECRET" in held))
        real_fsync(fd)

    old = os.umask(0o022)
    try:
        monkeypatch.setattr(os, "fsync", spy)
        assert cli("init", "--client", "claude").rc == 0
    finally:
        os.umask(old)
    holding = [mode for mode, has in seen if has]
    assert len(holding) >= 2 and all(mode == 0o600 for mode in holding), seen  # the config and its backup
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    bak = path.with_name(".claude.json.open-memex.bak")
    assert bak.read_text() == secret and stat.S_IMODE(bak.stat().st_mode) == 0o640


# -- 6. and 7. a run killed mid-write leaves nothing behind for good -------------------------


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_stale_temp_files_of_dead_runs_are_removed_by_the_next_run(cli: Any) -> None:
    """A kill -9 mid-write left ``..claude.json.open-memex-<pid>.tmp`` (a full copy of the
    config, tokens included) beside the config for good."""
    path = home() / ".claude.json"
    path.write_text('{"a": 1}\n')
    dead = _dead_pid()
    stale = [home() / f"..claude.json.open-memex-{dead}.tmp",  # an earlier version's name
             home() / f"..claude.json.open-memex-{dead}-0a1b2c3d.tmp",
             home() / f"..claude.json.open-memex.bak.open-memex-{dead}-0a1b2c3d.tmp"]  # fmt: skip
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        busy = home() / f"..claude.json.open-memex-{live.pid}-0a1b2c3d.tmp"  # a run still writing
        other = home() / f".notes.json.open-memex-{dead}-0a1b2c3d.tmp"  # beside another file: not this run's
        for tmp in [*stale, busy, other]:
            tmp.write_text("token")
        assert cli("init", "--client", "claude").rc == 0
        assert [tmp.exists() for tmp in stale] == [False] * 3
        assert busy.exists() and other.exists()
    finally:
        live.kill()
        live.wait()
    again = home() / f"..claude.json.open-memex-{_dead_pid()}-00000000.tmp"
    again.write_text("token")
    assert cli("uninstall", "--client", "claude").rc == 0
    assert not again.exists()


_KILLED = r"""
import os, signal, sys
from pathlib import Path
what = sys.argv[1]

def kill_in(fd):
    name = os.readlink(f"/proc/self/fd/{fd}")
    return (".open-memex.bak" in name) if what == "backup" else name.endswith(".tmp") and ".bak" not in name

real_write, real_fsync, real_sendfile = os.write, os.fsync, os.sendfile
def write(fd, data):
    if kill_in(fd):
        real_write(fd, bytes(data[: max(1, len(data) // 2)]))
        os.kill(os.getpid(), signal.SIGKILL)
    return real_write(fd, data)
def fsync(fd):
    real_fsync(fd)
    if kill_in(fd):
        os.kill(os.getpid(), signal.SIGKILL)
def sendfile(out_fd, in_fd, offset, count):  # what the backup's copy used: half of it, then the kill
    if kill_in(out_fd):
        real_sendfile(out_fd, in_fd, offset, max(1, os.fstat(in_fd).st_size // 2))
        os.kill(os.getpid(), signal.SIGKILL)
    return real_sendfile(out_fd, in_fd, offset, count)
os.write, os.sendfile = write, sendfile
if what == "config":
    os.fsync = fsync
from openmemex.cli.app import main
sys.argv = ["open-memex", "init", "--client", "claude"]
main()
"""


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="names an open file through /proc")
@pytest.mark.parametrize("what", ["config", "backup"])
def test_a_run_killed_mid_write_leaves_the_config_whole_and_nothing_stale(what: str) -> None:
    """kill -9 mid-write: the config is intact, the backup is whole or absent (it was copied
    in place: a truncated backup no later run replaced), and the next run leaves no
    temporary file behind."""
    path = home() / ".claude.json"
    original = json.dumps({"projects": {f"/p/{i}": {"history": ["x" * 80] * 5} for i in range(800)}}, indent=2) + "\n"
    path.write_text(original)
    path.chmod(0o600)
    proc = subprocess.run([sys.executable, "-c", _KILLED, what], capture_output=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert path.read_text() == original
    bak = home() / ".claude.json.open-memex.bak"
    assert not bak.exists() or bak.read_text() == original
    assert run_process("init", "--client", "claude").rc == 0
    assert bak.read_text() == original
    assert run_process("uninstall", "--client", "claude", "--yes").rc == 0
    assert path.read_text() == original
    assert not [p.name for p in home().iterdir() if p.name.endswith(".tmp")]


# -- 8. a data root reached through a symlink is one data root ------------------------------


@pytest.mark.parametrize("client", ["claude", "codex", "opencode"])
def test_a_data_root_reached_through_a_symlink_is_the_same_setup(cli: Any, tmp_path: Path, client: str,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """doctor compared the spelling (FAIL: "two data roots … run init --force") and init
    called the entry different, while uninstall took it for its own."""
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    monkeypatch.setenv("OPEN_MEMEX_HOME", str(real))
    assert cli("init", "--client", client).rc == 0
    monkeypatch.setenv("OPEN_MEMEX_HOME", str(tmp_path / "link"))
    before = _tree(home())
    again = cli("init", "--client", client, "--json")
    kinds = {a["kind"]: (a["action"], a["detail"]) for a in _actions(again)}
    assert kinds["mcp"] == ("kept", "already wired"), again.out
    if client in ("claude", "codex"):
        assert kinds["hooks"] == ("kept", "hooks already installed"), again.out
    assert _tree(home()) == before
    checks = [(ok, detail) for name, ok, detail in doctor_checks() if name == f"mcp {client}"]
    assert len(checks) == 1 and checks[0][0] and "two data roots" not in checks[0][1], checks
    result = cli("uninstall", "--client", client, "--global", "--json")
    assert [a["action"] for a in _actions(result, "mcp")] == ["removed"]


# -- 9. hooks: what init reports and what uninstall takes are what it put in ------------------


HAND_WIRED = '{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "open-memex hook stop"}]}]}}'


def test_a_hand_written_hook_is_reported_and_left_to_the_user(cli: Any) -> None:
    """A hand-written, unpinned ``open-memex hook stop``: init reported all three events
    added (without the --force hint), and uninstall deleted that hook too, leaving
    ``"Stop": []``."""
    path = home() / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(HAND_WIRED)
    result = cli("init", "--client", "claude", "--json")
    (hooks,) = _actions(result, "hooks")
    assert hooks["action"] == "added"
    assert hooks["detail"] == ("hooks SessionStart, UserPromptSubmit; a different open-memex hook is there for "
                               "Stop — kept; rerun with --force to replace it")  # fmt: skip
    doc = json.loads(path.read_text())
    assert doc["hooks"]["Stop"] == json.loads(HAND_WIRED)["hooks"]["Stop"]
    result = cli("uninstall", "--client", "claude", "--json")
    (hooks,) = _actions(result, "hooks")
    assert hooks["action"] == "removed" and "did not put in (Stop)" in hooks["detail"], result.out
    assert path.read_text() == HAND_WIRED
    result = cli("uninstall", "--yes", "--json")  # the record still says init put in no Stop hook
    assert [(a["action"], "did not put in (Stop)" in a["detail"]) for a in _actions(result, "hooks")] == [("kept", True)]
    assert path.read_text() == HAND_WIRED


def test_a_hook_replaced_with_force_is_reported_and_taken_out(cli: Any) -> None:
    path = home() / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(HAND_WIRED)
    result = cli("init", "--client", "claude", "--force", "--json")
    (hooks,) = _actions(result, "hooks")
    assert hooks["detail"] == "hooks SessionStart, UserPromptSubmit; hooks Stop replaced (--force)"
    assert cli("uninstall", "--client", "claude").rc == 0
    assert json.loads(path.read_text()) == {"hooks": {"Stop": []}}  # theirs went with --force; its list stays


# -- 10. the Copilot instructions come back byte for byte -----------------------------------


@pytest.mark.parametrize("text", ["# Mine", "# Mine\n", "# Mine\n\n", "# Mine\r\n", "", "  \n", None])
def test_copilot_instructions_come_back_byte_for_byte(cli: Any, text: str | None) -> None:
    path = home() / ".copilot" / "copilot-instructions.md"
    path.parent.mkdir()
    if text is not None:
        path.write_bytes(text.encode())
    assert cli("init", "--client", "vscode").rc == 0
    assert "<!-- /open-memex -->" in path.read_text()
    assert cli("init", "--client", "vscode").rc == 0  # a refresh keeps the layout too
    assert cli("uninstall", "--client", "vscode").rc == 0
    if text is None:
        assert not path.exists()
    else:
        assert path.read_bytes() == text.encode()


# -- a read-only config ------------------------------------------------------------------------


def test_a_read_only_config_is_rewritten_and_said_so(cli: Any) -> None:
    path = home() / ".claude.json"
    path.write_text('{"a": 1}\n')
    path.chmod(0o444)
    result = cli("init", "--client", "claude", "--json")
    (mcp,) = _actions(result, "mcp")
    assert mcp["action"] == "added" and "read-only" in mcp["detail"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o444
