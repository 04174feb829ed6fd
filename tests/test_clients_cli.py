"""init / uninstall flows around the per-client matrix: detection, the terminal rule,
project level, skills, Copilot instructions, print-config, doctor, the first-run tip."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from openmemex.clients import config_snippet, doctor_checks
from tests.clientcases import (
    CLIENTS,
    PROJECT_PATH,
    SECTION,
    SKILLS,
    assert_entry,
    home,
    ours,
    user_file,
)
from tests.conftest import git
from tests.helpers import drain_pty


def files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


@pytest.fixture
def fake_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A PATH holding only fake client executables (and nothing else to detect)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    return bin_dir


def fake_exe(bin_dir: Path, name: str) -> None:
    exe = bin_dir / name
    exe.write_text("#!/bin/sh\nexit 0\n")
    exe.chmod(0o755)


# -- choosing clients -----------------------------------------------------------------------


def test_auto_detect_wires_what_is_installed(cli: Any, fake_path: Path, data_root: Path) -> None:
    fake_exe(fake_path, "claude")
    fake_exe(fake_path, "codex")
    (home() / ".cursor").mkdir()
    (home() / ".codeium" / "windsurf").mkdir(parents=True)
    (Path.cwd() / "App.sln").write_text("")
    result = cli("init", "--yes", "--json")
    assert result.rc == 0, result.err
    doc = json.loads(result.out)
    assert doc["clients"] == ["cursor", "claude", "codex", "windsurf", "visualstudio"]
    for client in doc["clients"]:
        assert_entry(client, ours(client, user_file(client, home())), data_root)
    assert not (home() / ".config" / "Code").exists() and not (home() / ".config" / "zed").exists()


def test_auto_detect_without_a_terminal_asks_for_yes_and_writes_nothing(cli: Any, fake_path: Path,
                                                                        data_root: Path) -> None:  # fmt: skip
    fake_exe(fake_path, "opencode")
    (home() / ".claude").mkdir()
    before = files(home())
    result = cli("init")
    assert result.rc == 2
    assert result.out == ""
    assert result.err == (
        "open-memex: error: found Claude Code (claude), opencode (opencode); not a terminal, so nothing was "
        "written — pass --yes to go ahead, or pick with `open-memex init --client ID`\n"
    )
    assert files(home()) == before and not data_root.exists()


def test_nothing_detected_is_one_line(cli: Any, fake_path: Path) -> None:
    result = cli("init", "--yes")
    assert result.rc == 1
    assert result.err.startswith("open-memex: error: found no coding agent on this machine — name one:")
    assert result.err.count("\n") == 1


def test_unknown_client_is_a_usage_error(cli: Any) -> None:
    result = cli("init", "--client", "emacs")
    assert result.rc == 2
    assert result.err == (
        "open-memex: error: unknown client 'emacs' — use one of: vscode, cursor, claude, codex, opencode, "
        "windsurf, zed, visualstudio\n"
    )
    assert cli("init", "--project", "--global", "--client", "claude").rc == 2


def test_init_on_a_terminal_asks_once(cli: Any, fake_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      data_root: Path) -> None:  # fmt: skip
    import io

    fake_exe(fake_path, "cursor")

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stdin", Tty("n\n"))
    monkeypatch.setattr(sys, "stderr", Tty())
    assert cli("init").rc == 0
    assert not (home() / ".cursor" / "mcp.json").exists()
    assert json.loads((data_root / ".init.json").read_text())["declined"] is True  # asked once: no tip
    assert "Wire open-memex into Cursor (cursor)? [Y/n] " in sys.stderr.getvalue()
    monkeypatch.setattr(sys, "stdin", Tty("\n"))
    assert cli("init").rc == 0
    assert ours("cursor", home() / ".cursor" / "mcp.json")
    assert json.loads((data_root / ".init.json").read_text())["declined"] is False


# -- project level ------------------------------------------------------------------------------


@pytest.mark.parametrize("client", sorted(PROJECT_PATH))
def test_project_level_writes_at_the_repository_root(cli: Any, client: str, git_repo: Path,
                                                     data_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    sub = git_repo / "src" / "deep"
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)
    result = cli("init", "--client", client, "--project")
    assert result.rc == 0, result.err
    path = git_repo / PROJECT_PATH[client]
    assert_entry(client, ours(client, path), data_root)
    assert not (home() / ".copilot").exists() and not any((home() / d).exists() for d in SKILLS.values())
    assert cli("uninstall", "--client", client, "--project").rc == 0
    assert not path.exists()  # it held only our entry, and we created it
    assert git("status", "--porcelain", cwd=git_repo) == ""


def test_windsurf_has_no_project_level(cli: Any) -> None:
    result = cli("init", "--client", "windsurf", "--project")
    assert result.rc == 0
    assert "skipped  windsurf" in result.out and "reads only its user-level config" in result.out


def test_visual_studio_and_claude_share_the_repo_root_mcp_json(cli: Any, git_repo: Path, data_root: Path) -> None:
    (git_repo / "App.sln").write_text("")
    assert cli("init", "--client", "claude", "--client", "visualstudio", "--project").rc == 0
    doc = json.loads((git_repo / ".mcp.json").read_text())
    assert_entry("claude", doc["mcpServers"]["open-memex"], data_root)
    assert_entry("visualstudio", doc["servers"]["open-memex"], data_root)
    # Visual Studio alone later: its own key goes, Claude Code's stays
    assert cli("uninstall", "--client", "visualstudio", "--project").rc == 0
    doc = json.loads((git_repo / ".mcp.json").read_text())
    assert "servers" not in doc and doc["mcpServers"]["open-memex"]


def test_uninstall_without_a_level_cleans_both(cli: Any, git_repo: Path) -> None:
    assert cli("init", "--client", "cursor").rc == 0
    assert cli("init", "--client", "cursor", "--project").rc == 0
    result = cli("uninstall", "--yes")
    assert result.rc == 0
    assert not (home() / ".cursor" / "mcp.json").exists()  # both held only our entry
    assert not (git_repo / ".cursor" / "mcp.json").exists()
    assert "Memory data was not touched" in result.out


def test_uninstall_without_a_terminal_or_yes_writes_nothing(cli: Any, data_root: Path) -> None:
    assert cli("init", "--client", "zed").rc == 0
    before = files(home())
    result = cli("uninstall")
    assert result.rc == 2 and "pass --yes" in result.err
    assert files(home()) == before


def test_uninstall_of_a_jsonc_file_leaves_it_with_a_hint(cli: Any, data_root: Path) -> None:
    path = home() / ".config" / "zed" / "settings.json"
    path.parent.mkdir(parents=True)
    entry = json.dumps({"command": "/x/open-memex", "args": ["mcp"], "env": {"OPEN_MEMEX_HOME": str(data_root)}})
    text = f'// Zed settings\n{{\n  "context_servers": {{\n    "open-memex": {entry},\n  }},\n}}\n'
    path.write_text(text)
    result = cli("uninstall", "--client", "zed", "--json")
    action = json.loads(result.out)["actions"][0]
    assert action["action"] == "manual" and 'remove "open-memex" from "context_servers" by hand' in action["detail"]
    assert path.read_text() == text


def test_marker_stays_while_another_client_is_wired(cli: Any, data_root: Path) -> None:
    assert cli("init", "--client", "cursor", "--client", "claude").rc == 0
    assert cli("uninstall", "--client", "cursor").rc == 0
    assert (data_root / ".init.json").exists()
    assert cli("uninstall", "--client", "claude").rc == 0
    assert not (data_root / ".init.json").exists()


# -- files: symlinks, modes, backups, layout -------------------------------------------------


def test_a_symlinked_config_is_written_through_the_link(cli: Any, tmp_path: Path) -> None:
    target = tmp_path / "dotfiles" / "mcp.json"
    target.parent.mkdir()
    target.write_text('{"mcpServers": {}}')
    link = home() / ".cursor" / "mcp.json"
    link.parent.mkdir()
    link.symlink_to(target)
    assert cli("init", "--client", "cursor").rc == 0
    assert link.is_symlink() and ours("cursor", target)


@pytest.mark.parametrize("linked", ["file", "folder"])
@pytest.mark.parametrize("before", [None, ""])
def test_uninstall_never_deletes_a_config_reached_through_a_symlink(cli: Any, linked: str, before: str | None) -> None:
    """A linked config that held only our entry: uninstall deleted the link's target (the
    user's tracked dotfile, leaving a dangling link) and removed the dotfiles folders above
    it. The target stays, without our entry, and so do the link and the folders: empty as
    it was, or ``{}`` when init created it."""
    dotfiles = home() / "dotfiles" / "cursor"
    dotfiles.mkdir(parents=True)
    target = dotfiles / "mcp.json"
    if before is not None:
        target.write_text(before)  # a tracked, empty dotfile
    if linked == "file":
        (home() / ".cursor").mkdir()
        (home() / ".cursor" / "mcp.json").symlink_to(Path("..") / "dotfiles" / "cursor" / "mcp.json")
    else:
        (home() / ".cursor").symlink_to(dotfiles)  # GNU stow folds whole folders
    assert cli("init", "--client", "cursor", "--yes").rc == 0
    assert ours("cursor", target)
    result = cli("uninstall", "--client", "cursor", "--yes", "--json")
    action = _action(result)
    assert action["action"] == "removed", result.out
    if before is None:
        assert "reached through a symlink" in action["detail"], result.out
        assert json.loads(target.read_text()) == {}
    else:
        assert target.read_text() == before
    assert not target.with_name("mcp.json.open-memex.bak").exists()  # it would hold only ours
    assert (home() / ".cursor" / "mcp.json").resolve() == target.resolve()
    assert (home() / ".cursor" / "mcp.json").is_symlink() or (home() / ".cursor").is_symlink()


def test_backup_is_made_once_and_mode_kept(cli: Any) -> None:
    path = home() / ".cursor" / "mcp.json"
    path.parent.mkdir()
    path.write_text('{"mcpServers": {"a": {"command": "a"}}}')
    path.chmod(0o640)
    assert cli("init", "--client", "cursor").rc == 0
    backup = path.with_name("mcp.json.open-memex.bak")
    assert backup.read_text() == '{"mcpServers": {"a": {"command": "a"}}}'
    assert path.stat().st_mode & 0o777 == 0o640
    assert cli("uninstall", "--client", "cursor").rc == 0
    assert cli("init", "--client", "cursor").rc == 0
    assert backup.read_text() == '{"mcpServers": {"a": {"command": "a"}}}'  # the pre-open-memex state
    assert not list(path.parent.glob("*.tmp"))


def test_bom_and_crlf_survive(cli: Any) -> None:
    path = home() / ".cursor" / "mcp.json"
    path.parent.mkdir()
    path.write_bytes('\ufeff{\r\n\t"mcpServers": {}\r\n}\r\n'.encode())
    assert cli("init", "--client", "cursor").rc == 0
    data = path.read_bytes()
    assert data.startswith('\ufeff{\r\n\t"mcpServers"'.encode()) and data.endswith(b"}\r\n")
    assert b"\n" not in data.replace(b"\r\n", b"")


def test_the_entry_falls_back_to_python_dash_m(cli: Any, monkeypatch: pytest.MonkeyPatch, data_root: Path) -> None:
    import openmemex.clients.entry as entry

    monkeypatch.setattr(entry, "find_executable", lambda: None)
    assert cli("init", "--client", "claude").rc == 0
    got = ours("claude", home() / ".claude.json")
    assert got is not None and got["args"] == ["-m", "openmemex", "mcp"]
    assert got["command"] == str(Path(sys.executable).absolute())
    proc = subprocess.run([got["command"], "-m", "openmemex", "--version"], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip()


# -- skills and instructions -----------------------------------------------------------------


def test_a_skill_the_user_changed_is_kept_unless_forced(cli: Any) -> None:
    assert cli("init", "--client", "claude").rc == 0
    skill = home() / ".claude" / "skills" / "open-memex" / "SKILL.md"
    skill.write_text(skill.read_text() + "\nMy own rule.\n")
    result = cli("init", "--client", "claude")
    assert "My own rule." in skill.read_text() and "rerun with --force" in result.out
    result = cli("uninstall", "--client", "claude")
    assert skill.exists() and "remove it by hand" in result.out
    result = cli("init", "--client", "claude", "--force")
    assert "replaced (--force); yours is in SKILL.md.open-memex.bak" in result.out
    assert "My own rule." not in skill.read_text()
    backup = skill.with_name("SKILL.md.open-memex.bak")
    assert "My own rule." in backup.read_text()
    assert cli("uninstall", "--client", "claude").rc == 0
    assert not skill.exists() and backup.exists()  # the user's own text is never deleted
    backup.unlink()
    assert cli("init", "--client", "claude").rc == 0
    assert cli("uninstall", "--client", "claude").rc == 0
    assert not skill.parent.exists()


def test_an_older_skill_of_ours_is_refreshed(cli: Any) -> None:
    import hashlib

    assert cli("init", "--client", "codex").rc == 0
    folder = home() / ".agents" / "skills" / "open-memex"
    old = b"---\nname: open-memex\ndescription: an older text\n---\n"
    (folder / "SKILL.md").write_bytes(old)
    (folder / ".open-memex.json").write_text(json.dumps({"sha256": hashlib.sha256(old).hexdigest()}))
    result = cli("init", "--client", "codex")
    assert "updated  codex         skill" in result.out and "refreshed to this version" in result.out
    assert (folder / "SKILL.md").read_bytes() != old
    assert sorted(p.name for p in folder.iterdir()) == [".open-memex.json", "SKILL.md"]  # no backup of our own text


def test_a_skill_we_did_not_write_is_never_removed(cli: Any) -> None:
    folder = home() / ".cursor" / "skills" / "open-memex"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: open-memex\ndescription: mine\n---\n")
    assert "rerun with --force" in cli("init", "--client", "cursor").out
    assert cli("uninstall", "--client", "cursor").rc == 0
    assert (folder / "SKILL.md").read_text().endswith("description: mine\n---\n")


def test_skill_text_names_the_tools_and_the_cli() -> None:
    import yaml

    from openmemex.clients.entry import server_entry
    from openmemex.clients.extras import skill_text

    text = skill_text(server_entry())
    meta = yaml.safe_load(text.split("---\n")[1])
    assert meta["name"] == "open-memex" and len(meta["description"]) < 1024
    for needle in ("memory_search", "memory_add", "memory_submit", "open-memex search", "never leave",
                   "Search before you ask", "re-derivable from the code"):  # fmt: skip
        assert needle.lower() in text.lower(), needle
    assert "{command}" not in text


def test_copilot_instructions_are_a_removable_section(cli: Any) -> None:
    path = home() / ".copilot" / "copilot-instructions.md"
    path.parent.mkdir()
    path.write_text("# My rules\n\nAlways answer in English.\n")
    assert cli("init", "--client", "vscode", "--client", "visualstudio").rc == 0
    text = path.read_text()
    assert text.startswith("# My rules\n\nAlways answer in English.\n\n<!-- open-memex -->\n")
    assert text.endswith("<!-- /open-memex -->\n") and text.count("<!-- open-memex -->") == 1
    assert "Ignore this section when the `open-memex` MCP server is not available." in text
    assert cli("uninstall", "--client", "vscode").rc == 0
    assert path.read_text() == "# My rules\n\nAlways answer in English.\n"
    assert cli("init", "--client", "vscode").rc == 0
    # the user deleted our end marker and wrote rules of their own below: where ours ends is
    # unknown, so neither uninstall nor init touches the file (they said "manual")
    mine = path.read_text().replace("<!-- /open-memex -->\n", "") + "\nNever push on fridays.\n"
    path.write_text(mine)
    for args in (("uninstall", "--client", "vscode", "--json"), ("init", "--client", "vscode", "--json")):
        result = cli(*args)
        actions = [a for a in json.loads(result.out)["actions"] if a["kind"] == "instructions"]
        assert [a["action"] for a in actions] == ["manual"] and "end marker" in actions[0]["detail"], result.out
        assert path.read_text() == mine


# -- print-config ------------------------------------------------------------------------------


@pytest.mark.parametrize("client", CLIENTS)
def test_print_config_is_what_init_merges(cli: Any, client: str, data_root: Path) -> None:
    result = cli("mcp", "--print-config", client)
    assert result.rc == 0, result.err
    assert result.out == config_snippet(client) + "\n"
    if client == "codex":
        assert result.out.startswith("# ~/.codex/config.toml\n")
        doc = tomllib.loads(result.out)
    else:
        doc = json.loads(result.out)
    assert list(doc) == [SECTION[client]]
    assert_entry(client, doc[SECTION[client]]["open-memex"], data_root)
    assert cli("init", "--client", client).rc == 0
    assert ours(client, user_file(client, home())) == doc[SECTION[client]]["open-memex"]


def test_print_config_for_an_unknown_client(cli: Any) -> None:
    result = cli("mcp", "--print-config", "emacs")
    assert result.rc == 2 and result.out == ""
    assert result.err.startswith("open-memex: error: unknown client 'emacs' — use one of: vscode,")
    assert result.err.count("\n") == 1


# -- doctor ---------------------------------------------------------------------------------------


def test_doctor_checks_each_wired_client(cli: Any, data_root: Path) -> None:
    assert doctor_checks() == []
    assert cli("init", "--client", "claude", "--client", "opencode", "--client", "codex").rc == 0
    checks = {name: (ok, detail) for name, ok, detail in doctor_checks()}
    assert set(checks) == {"mcp claude", "mcp opencode", "mcp codex"}
    assert all(ok for ok, _ in checks.values()), checks
    # a moved executable and wrong args fail, naming the fix
    path = home() / ".claude.json"
    doc = json.loads(path.read_text())
    doc["mcpServers"]["open-memex"].update(command="/nowhere/open-memex", args=["serve"])
    path.write_text(json.dumps(doc))
    ok, detail = next((ok, d) for n, ok, d in doctor_checks() if n == "mcp claude")
    assert not ok and "/nowhere/open-memex does not exist" in detail and 'expected ["mcp"]' in detail
    assert "open-memex init --force --client claude" in detail


def test_doctor_notes_jsonc_and_fails_legacy(cli: Any) -> None:
    zed = home() / ".config" / "zed" / "settings.json"
    zed.parent.mkdir(parents=True)
    zed.write_text('{ /* c */ "context_servers": {"my-o-memory": {"command": "npx"}}, }')
    vscode = home() / ".config" / "Code" / "User" / "mcp.json"
    vscode.parent.mkdir(parents=True)
    vscode.write_text("{ oops")
    names = {name: (ok, detail) for name, ok, detail in doctor_checks()}
    assert names["legacy my-o-memory (zed)"][0] is False
    assert names["mcp vscode"][0] is True and names["mcp vscode"][1].startswith("note:")


# -- the first-run tip (F28) ---------------------------------------------------------------------

TIP = "open-memex: tip: run `open-memex init` to wire your coding agents (Claude Code, Codex, Cursor, VS Code, …)"


def test_tip_predicate(monkeypatch: pytest.MonkeyPatch, data_root: Path) -> None:
    import io

    from openmemex.cli.app import first_run_tip

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert first_run_tip(["list"]) is None  # pytest's stderr is not a terminal
    monkeypatch.setattr(sys, "stderr", Tty())
    assert first_run_tip(["list"]) == TIP
    assert first_run_tip([]) == TIP
    for argv in (["init"], ["uninstall", "--yes"], ["mcp"], ["merge-driver", "a", "b", "c", "d"],
                 ["--help"], ["add", "-h"], ["--version"], ["-V"]):  # fmt: skip
        assert first_run_tip(argv) is None, argv
    data_root.mkdir()
    (data_root / ".init.json").write_text("{}")
    assert first_run_tip(["list"]) is None


def _in_pty(*args: str) -> tuple[int, str, str]:
    """Run the CLI with stderr on a pseudo-terminal (stdout a pipe): what a person sees."""
    main, child = pty.openpty()
    proc = subprocess.run([sys.executable, "-c", "from openmemex.cli.app import main; main()", *args],
                          stdout=subprocess.PIPE, stderr=child, stdin=subprocess.DEVNULL, timeout=120)  # fmt: skip
    os.close(child)
    return proc.returncode, proc.stdout.decode(), drain_pty(main).decode().replace("\r\n", "\n")


def test_tip_on_a_terminal_until_init_ran(data_root: Path) -> None:
    rc, out, err = _in_pty("scopes")
    assert rc == 0 and err == TIP + "\n" and "tip" not in out
    assert _in_pty("--version")[2] == ""
    assert _in_pty("mcp", "--print-config", "cursor")[2] == ""
    rc, _, err = _in_pty("init", "--client", "cursor")
    assert rc == 0 and err == ""
    assert _in_pty("scopes")[2] == ""


def test_no_tip_without_a_terminal(data_root: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", "from openmemex.cli.app import main; main()", "scopes"],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0 and proc.stderr == ""
    assert not (data_root / ".init.json").exists()


def test_a_file_that_cannot_be_written_is_one_failed_line(cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (home() / ".cursor").write_text("a file where a folder should be")
    result = cli("init", "--client", "cursor", "--client", "claude")
    assert result.rc == 1 and "Traceback" not in result.err
    assert "failed   cursor" in result.out and "check the folder's permissions" in result.out
    assert ours("claude", home() / ".claude.json")  # the others are still wired
    blocked = tmp_path / "blocked"
    blocked.write_text("")
    monkeypatch.setenv("OPEN_MEMEX_HOME", str(blocked / "data"))
    before = (home() / ".claude.json").read_bytes()
    result = cli("init", "--client", "claude", "--force")  # the data root cannot hold the record: nothing is touched
    assert result.rc == 1 and result.out == "" and "nothing was changed" in result.err
    assert (home() / ".claude.json").read_bytes() == before


# -- hostile configs (review helper-22) ----------------------------------------------------


def _action(result: Any, kind: str = "mcp") -> dict[str, Any]:
    return next(a for a in json.loads(result.out)["actions"] if a["kind"] == kind)  # type: ignore[no-any-return]


def test_a_config_that_is_a_device_or_fifo_is_never_replaced_nor_waited_on(cli: Any, tmp_path: Path) -> None:
    """A config linked to a device (as to /dev/null, to discard it) was replaced by a regular
    file, and deleted by uninstall; a FIFO made both wait forever."""
    folder = home() / ".cursor"
    folder.mkdir(parents=True)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (folder / "mcp.json").symlink_to(fifo)
    for args in (("init", "--client", "cursor", "--json"), ("uninstall", "--client", "cursor", "--json")):
        result = cli(*args)
        action = _action(result)
        assert action["action"] == "failed" and "not a regular file" in action["detail"], result.out
        assert fifo.is_fifo() and (folder / "mcp.json").is_symlink()


def test_uninstall_keeps_an_entry_of_another_data_root_and_its_file(cli: Any, data_root: Path) -> None:
    """init said "a different entry — kept" for it; uninstall deleted it, and the file with it."""
    path = home() / ".cursor" / "mcp.json"
    path.parent.mkdir(parents=True)
    text = json.dumps({"mcpServers": {"open-memex": {"command": "/opt/other/open-memex", "args": ["mcp"],
                                                     "env": {"OPEN_MEMEX_HOME": "/srv/team-root"}}}}, indent=2) + "\n"  # fmt: skip
    path.write_text(text)
    assert _action(cli("init", "--client", "cursor", "--json"))["action"] == "kept"
    action = _action(cli("uninstall", "--client", "cursor", "--json"))
    assert action["action"] == "kept" and "/srv/team-root" in action["detail"]
    assert path.read_text() == text


@pytest.mark.parametrize("case", ["huge number", "deep nesting"])
def test_a_config_json_cannot_rewrite_faithfully_is_left_whole(cli: Any, case: str) -> None:
    """1e400 was rewritten as Infinity (not JSON); 2000 levels deep was exit 70 for every
    client."""
    path = home() / ".cursor" / "mcp.json"
    path.parent.mkdir(parents=True)
    text = {"huge number": '{"limit": 1e400}\n', "deep nesting": '{"a": ' + "[" * 2000 + "]" * 2000 + "}\n"}[case]
    path.write_text(text)
    result = cli("init", "--client", "cursor", "--client", "zed", "--json")
    assert "internal error" not in result.err and "Traceback" not in result.err, result.err
    actions = {a["client"]: a for a in json.loads(result.out)["actions"] if a["kind"] == "mcp"}
    assert actions["cursor"]["action"] in ("manual", "failed"), actions
    assert actions["zed"]["action"] == "added"  # the other clients are still wired
    assert path.read_text() == text
    assert "internal error" not in cli("uninstall", "--yes").err


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="chown to another user needs root")
def test_a_rewrite_as_root_keeps_the_files_owner(cli: Any) -> None:
    path = home() / ".cursor" / "mcp.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"mcpServers": {}}\n')
    os.chown(path, 65534, 65534)
    path.chmod(0o600)
    assert _action(cli("init", "--client", "cursor", "--json"))["action"] == "added"
    st = path.stat()
    assert (st.st_uid, st.st_gid, st.st_mode & 0o777) == (65534, 65534, 0o600)


def test_uninstall_takes_the_folders_init_made_for_a_config_it_deletes(cli: Any) -> None:
    """Folders init created for a config and uninstall left behind made a later plain `init`
    take them for installed agents (Windsurf has no skills folder of ours: nothing is left)."""
    assert cli("init", "--client", "windsurf").rc == 0
    assert (home() / ".codeium" / "windsurf").is_dir()
    assert cli("uninstall", "--client", "windsurf", "--yes").rc == 0
    assert not (home() / ".codeium").exists()
    (home() / ".codeium" / "windsurf").mkdir(parents=True)
    (home() / ".codeium" / "windsurf" / "user_settings.pb").write_text("x")  # anything else there stays
    assert cli("init", "--client", "windsurf").rc == 0 and cli("uninstall", "--client", "windsurf", "--yes").rc == 0
    assert (home() / ".codeium" / "windsurf" / "user_settings.pb").exists()


def test_uninstall_project_never_removes_the_projects_own_folders(cli: Any, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """A new project under HOME, `init --project` then `uninstall --project`: the pruning
    of empty folders took the project folder and its parent with it."""
    project = home() / "work" / "newproj"
    project.mkdir(parents=True)
    git("init", "-q", cwd=project)
    monkeypatch.chdir(project)
    assert cli("init", "--project", "--client", "claude", "--client", "cursor", "--client", "vscode").rc == 0
    assert cli("uninstall", "--project", "--yes").rc == 0
    assert project.is_dir() and (project / ".git").is_dir()


def test_a_lone_surrogate_escape_in_a_config_is_kept_as_written(cli: Any) -> None:
    """A lone surrogate escape (a string cut mid-emoji) stopped the whole run, then was a
    `failed` line: the file was re-serialised, and a lone surrogate is not UTF-8. The file
    is edited as text now, so the escape stays exactly as it was written."""
    path = home() / ".cursor" / "mcp.json"
    path.parent.mkdir(parents=True)
    text = '{"title": "\\ud83d cut"}\n'
    path.write_text(text)
    result = cli("init", "--client", "cursor", "--client", "windsurf", "--json")
    assert "internal error" not in result.err and "Traceback" not in result.err, result.err
    actions = {a["client"]: a["action"] for a in json.loads(result.out)["actions"] if a["kind"] == "mcp"}
    assert actions == {"cursor": "added", "windsurf": "added"}, result.out
    assert path.read_text().startswith('{"title": "\\ud83d cut", "mcpServers": {"open-memex": ')
    result = cli("uninstall", "--client", "cursor", "--client", "windsurf", "--json")
    actions = {a["client"]: a["action"] for a in json.loads(result.out)["actions"] if a["kind"] == "mcp"}
    assert actions == {"cursor": "removed", "windsurf": "removed"}, result.out + result.err
    assert path.read_text() == text


def test_uninstall_removes_our_entry_whatever_the_spelling_of_the_data_root(cli: Any, tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    real = tmp_path / "root"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    monkeypatch.setenv("OPEN_MEMEX_HOME", str(tmp_path / "link"))
    assert cli("init", "--client", "cursor").rc == 0
    monkeypatch.setenv("OPEN_MEMEX_HOME", str(real))
    result = cli("uninstall", "--client", "cursor", "--json")
    assert _action(result)["action"] == "removed", result.out


@pytest.mark.parametrize("case", ["json integer too long", "toml nested too deep"])
def test_configs_python_cannot_read_whole_are_left_with_a_line(cli: Any, case: str) -> None:
    client, path, text = {
        "json integer too long": ("cursor", home() / ".cursor" / "mcp.json", '{"n": ' + "9" * 5000 + "}\n"),
        "toml nested too deep": ("codex", home() / ".codex" / "config.toml", "x = " + "[" * 3000 + "]" * 3000 + "\n"),
    }[case]
    path.parent.mkdir(parents=True)
    path.write_text(text)
    for args in (("init", "--client", client, "--json"), ("uninstall", "--client", client, "--json"), ("doctor",)):
        result = cli(*args)
        assert "internal error" not in result.err and "Traceback" not in result.err, (args, result.err)
    assert path.read_text() == text


def test_after_uninstall_a_plain_init_finds_no_agent_it_had_wired(cli: Any, fake_path: Path) -> None:
    """Empty skills folders left by uninstall made a later plain init find Cursor, Claude
    Code and opencode on a machine without them."""
    assert "found no coding agent" in cli("init", "--yes").err
    assert cli("init", "--client", "cursor", "--client", "claude", "--client", "opencode", "--yes").rc == 0
    assert cli("uninstall", "--yes").rc == 0
    again = cli("init", "--yes")
    assert again.rc == 1 and "found no coding agent" in again.err, again.out


# -- what uninstall takes out: only what init put in (review rev42) --------------------------


def _ours_for(data_root: Path, **extra: Any) -> dict[str, Any]:
    """An entry of ours for this data root, as a user pastes it from the snippet."""
    return {"command": "/opt/bin/open-memex", "args": ["mcp"], "env": {"OPEN_MEMEX_HOME": str(data_root)}, **extra}


def test_uninstall_keeps_what_init_called_a_different_entry_and_files_it_never_wrote(cli: Any, data_root: Path) -> None:
    """init said "a different open-memex entry — kept" for a docker command and for
    "disabled"; uninstall deleted both, and the file holding the second (and ~/.codeium
    with it). A file the user wrote holding only our entry was deleted too."""
    cursor, windsurf, claude = home() / ".cursor" / "mcp.json", home() / ".codeium" / "windsurf" / "mcp_config.json", home() / ".claude.json"
    cursor.parent.mkdir(parents=True)
    windsurf.parent.mkdir(parents=True)
    texts = {
        cursor: '{"mcpServers": {"open-memex": {"command": "docker", "args": ["run", "-i", "ghcr.io/me/open-memex", "mcp"]}, '
                '"gh": {"command": "gh-mcp"}}}\n',
        windsurf: '{"mcpServers": {"open-memex": "disabled"}}\n',
        claude: json.dumps({"mcpServers": {"open-memex": {"type": "stdio", **_ours_for(data_root)}}}, indent=4) + "\n",
    }  # fmt: skip
    for path, text in texts.items():
        path.write_text(text)
    result = cli("init", "--client", "cursor,windsurf,claude", "--json")
    assert {a["client"]: a["action"] for a in json.loads(result.out)["actions"] if a["kind"] == "mcp"} == {
        "cursor": "kept", "windsurf": "kept", "claude": "kept"}  # fmt: skip
    result = cli("uninstall", "--client", "cursor,windsurf,claude", "--json")
    actions = {a["client"]: a for a in json.loads(result.out)["actions"] if a["kind"] == "mcp"}
    for client in ("cursor", "windsurf"):
        assert actions[client]["action"] == "kept" and "not one init writes" in actions[client]["detail"], result.out
    assert cursor.read_text() == texts[cursor] and windsurf.read_text() == texts[windsurf]
    assert actions["claude"]["action"] == "removed"  # ours, so it goes; the file init never wrote stays
    assert json.loads(claude.read_text()) == {"mcpServers": {}}


def test_visual_studio_mirror_entry_goes_with_uninstall(cli: Any, data_root: Path) -> None:
    """init wrote servers.open-memex and its mcpServers mirror; uninstall took only the first,
    and nothing saw the mirror afterwards (uninstall said "absent", doctor was silent)."""
    path = home() / ".mcp.json"
    text = '{\n  "mcpServers": {\n    "gh": {"command": "gh-mcp"}\n  }\n}\n'
    path.write_text(text)
    assert "servers.open-memex + mcpServers.open-memex" in cli("init", "--client", "visualstudio").out
    result = cli("uninstall", "--yes", "--json")
    action = _action(result)
    assert action["action"] == "removed" and "mcpServers.open-memex" in action["detail"], result.out
    assert path.read_text() == text
    # what the old uninstall left behind: the mirror alone, found and taken out now
    path.write_text(json.dumps({"mcpServers": {"gh": {"command": "gh-mcp"}, "open-memex": {"type": "stdio", **_ours_for(data_root)}}}))
    assert [name for name, _, _ in doctor_checks()] == ["mcp visualstudio"]
    result = cli("uninstall", "--yes", "--json")
    assert json.loads(result.out)["clients"] == ["visualstudio"] and _action(result)["action"] == "removed"
    assert json.loads(path.read_text()) == {"mcpServers": {"gh": {"command": "gh-mcp"}}}


@pytest.mark.parametrize("case", ["deep nesting", "long integer"])
def test_uninstall_of_a_file_no_parser_reads_that_holds_ours_says_manual(cli: Any, data_root: Path, case: str) -> None:
    """Such a file (init said "manual"; the user pasted the snippet) made uninstall say
    "absent", exit 0 and remove the marker, with our entry still in it."""
    path = home() / ".cursor" / "mcp.json"
    path.parent.mkdir(parents=True)
    filler = "[" * 1200 + "]" * 1200 if case == "deep nesting" else "9" * 5000
    text = '{"x": ' + filler + ', "mcpServers": ' + json.dumps({"open-memex": _ours_for(data_root)}) + "}\n"
    path.write_text(text)
    assert cli("init", "--client", "cursor").rc == 0
    result = cli("uninstall", "--yes", "--json")
    action = _action(result)
    assert action["action"] == "manual" and 'remove "open-memex" from "mcpServers" by hand' in action["detail"], result.out
    assert path.read_text() == text
    assert (data_root / ".init.json").exists()  # something of ours is still wired


def test_an_empty_section_the_user_had_survives_uninstall(cli: Any) -> None:
    """"mcpServers": {}, "mcp": {} and "Stop": [] were the user's; uninstall deleted them,
    and — once the .bak was gone — deleted a whole file that held {"mcpServers": {}}."""
    files = {
        home() / ".claude.json": '{"numStartups":3,"mcpServers":{},"projects":{}}\n',
        home() / ".config" / "opencode" / "opencode.json": '{\n  "$schema": "https://opencode.ai/config.json",\n  "mcp": {}\n}\n',
        home() / ".claude" / "settings.json": '{\n  "hooks": {\n    "Stop": []\n  }\n}\n',
    }  # fmt: skip
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert cli("init", "--client", "claude,opencode", "--yes").rc == 0
    assert cli("uninstall", "--yes").rc == 0
    for path, text in files.items():
        assert path.read_text() == text, path
    path = home() / ".claude.json"
    path.write_text('{"mcpServers": {}}\n')
    assert cli("init", "--client", "claude").rc == 0
    path.with_name(".claude.json.open-memex.bak").unlink()
    assert cli("uninstall", "--client", "claude", "--yes").rc == 0
    assert path.read_text() == '{"mcpServers": {}}\n'


def test_empty_objects_and_blank_files_come_back_byte_for_byte(cli: Any) -> None:
    """{ } came back as {}, {\\r\\n} as {}, a BOM and a newline as a BOM and {}."""
    files = {
        home() / ".cursor" / "mcp.json": b"{ }",
        home() / ".codeium" / "windsurf" / "mcp_config.json": b"{\r\n}\r\n",
        home() / ".claude" / "settings.json": b"{\n}\n",
        home() / ".claude.json": b"\xef\xbb\xbf\n",
        home() / ".config" / "zed" / "settings.json": b"{\r}\r",
    }  # fmt: skip
    for path, data in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    assert cli("init", "--client", "cursor,windsurf,claude,zed", "--yes").rc == 0
    zed = (home() / ".config" / "zed" / "settings.json").read_bytes()
    assert b"\r" in zed and b"\n" not in zed  # a CR-only file gets CR lines
    assert cli("uninstall", "--yes").rc == 0
    for path, data in files.items():
        assert path.read_bytes() == data, path


def test_a_null_entry_is_the_users(cli: Any) -> None:
    """"open-memex": null was overwritten without --force ("added"), then deleted by uninstall."""
    path = home() / ".cursor" / "mcp.json"
    path.parent.mkdir(parents=True)
    text = '{\n  "mcpServers": {\n    "open-memex": null,\n    "gh": {"command": "gh-mcp"}\n  }\n}\n'
    path.write_text(text)
    action = _action(cli("init", "--client", "cursor", "--json"))
    assert action["action"] == "kept" and "rerun with --force" in action["detail"]
    assert _action(cli("uninstall", "--client", "cursor", "--json"))["action"] == "kept"
    assert path.read_text() == text
    assert _action(cli("init", "--client", "cursor", "--force", "--json"))["action"] == "updated"
    assert _action(cli("uninstall", "--client", "cursor", "--json"))["action"] == "removed"
    assert json.loads(path.read_text()) == {"mcpServers": {"gh": {"command": "gh-mcp"}}}


def test_a_data_root_whose_path_is_not_utf8_is_named(cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The config file was blamed ("holds text that cannot be written back as UTF-8") and no
    snippet or next step was given."""
    monkeypatch.setenv("OPEN_MEMEX_HOME", os.fsdecode(bytes(tmp_path) + b"/donn\xe9es"))
    path = home() / ".cursor" / "mcp.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"a": 1}\n')
    result = cli("init", "--client", "cursor")
    assert result.rc == 1 and result.out == ""
    assert result.err == (f"open-memex: error: the data root's path {tmp_path}/donn\\xe9es is not UTF-8, so it cannot be "
                          "written into the agents' config files (UTF-8 text) — point OPEN_MEMEX_HOME at a folder whose "
                          "path is UTF-8 (a symlink to this one will do), and run init again\n")  # fmt: skip
    assert path.read_text() == '{"a": 1}\n'


def test_uninstall_takes_the_copilot_folder_init_made(cli: Any) -> None:
    """The instructions file went after the skills folder was pruned: ~/.copilot stayed, empty."""
    assert cli("init", "--client", "vscode").rc == 0
    assert (home() / ".copilot" / "copilot-instructions.md").exists()
    assert cli("uninstall", "--yes").rc == 0
    assert not (home() / ".copilot").exists()


def test_init_force_over_another_data_roots_entry_takes_over_what_it_made(cli: Any, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """A data root moved: init --force with the new one replaces the old entry and hooks, and
    uninstall with it undoes what the old root's init made (the files it created go)."""
    monkeypatch.setenv("OPEN_MEMEX_HOME", str(tmp_path / "old"))
    assert cli("init", "--client", "cursor,claude").rc == 0
    monkeypatch.setenv("OPEN_MEMEX_HOME", str(tmp_path / "new"))
    assert cli("init", "--client", "cursor,claude", "--force").rc == 0
    result = cli("uninstall", "--yes", "--json")
    assert {a["action"] for a in json.loads(result.out)["actions"]} == {"removed"}, result.out
    for name in (".cursor/mcp.json", ".claude.json", ".claude/settings.json"):
        assert not (home() / name).exists(), name


def test_visual_studio_takes_the_mirror_it_wrote_in_a_shared_mcp_json(cli: Any, git_repo: Path) -> None:
    """In a repo-root .mcp.json (Claude Code's file too) the mirror goes when Visual Studio's
    init wrote it; Claude Code's own entry stays (test_visual_studio_and_claude_share_…)."""
    (git_repo / "App.sln").write_text("")
    path = git_repo / ".mcp.json"
    text = '{\n  "mcpServers": {\n    "gh": {"command": "gh-mcp"}\n  }\n}\n'
    path.write_text(text)
    assert cli("init", "--client", "visualstudio", "--project").rc == 0
    assert "open-memex" in json.loads(path.read_text())["mcpServers"]
    assert cli("uninstall", "--client", "visualstudio", "--project").rc == 0
    assert path.read_text() == text
