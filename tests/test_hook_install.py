"""init/uninstall for the Claude Code and Codex hooks (issue 8): merged into each host's
own file in a temp HOME, never clobbering what the user had."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from openmemex.clients.hookconf import EVENTS, document, event_of

ROOT = Path(__file__).resolve().parent.parent


def settings(home: Path) -> Path:
    return home / ".claude" / "settings.json"


def codex_hooks(home: Path) -> Path:
    return home / ".codex" / "hooks.json"


def ours(doc: dict[str, Any]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for name, groups in doc.get("hooks", {}).items():
        for group in groups:
            for handler in group.get("hooks", []):
                if event_of(handler):
                    found.setdefault(name, []).append(handler["command"])
    return found


def test_init_installs_hooks_for_claude_and_codex(cli: Any, tmp_path: Path, data_root: Path) -> None:
    home = tmp_path / "home"
    result = cli("init", "--client", "claude", "--client", "codex", "--yes", "--json")
    assert result.rc == 0, result.err
    actions = json.loads(result.out)["actions"]
    kinds = {(a["client"], a["kind"]): a["action"] for a in actions}
    assert kinds[("claude", "hooks")] == "added" and kinds[("codex", "hooks")] == "added"
    for path in (settings(home), codex_hooks(home)):
        doc = json.loads(path.read_text())
        found = ours(doc)
        assert set(found) == {name for name, _, _ in EVENTS}
        for commands in found.values():
            assert len(commands) == 1
            assert f"OPEN_MEMEX_HOME={data_root}" in commands[0]
            assert Path(commands[0].split()[1]).is_absolute()
    again = cli("init", "--client", "claude", "--client", "codex", "--yes", "--json")
    kinds = {(a["client"], a["kind"]): a["action"] for a in json.loads(again.out)["actions"]}
    assert kinds[("claude", "hooks")] == "kept" and kinds[("codex", "hooks")] == "kept"


def test_existing_settings_and_hooks_are_kept(cli: Any, tmp_path: Path) -> None:
    path = settings(tmp_path / "home")
    path.parent.mkdir(parents=True)
    theirs = {"model": "opus", "permissions": {"allow": ["Bash(npm test)"]},
              "hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "~/bin/lint-prompt"}]}],
                        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard"}]}]}}  # fmt: skip
    path.write_text(json.dumps(theirs, indent=4) + "\n")
    assert cli("init", "--client", "claude", "--yes").rc == 0
    doc = json.loads(path.read_text())
    assert doc["model"] == "opus" and doc["permissions"] == theirs["permissions"]
    assert doc["hooks"]["PreToolUse"] == theirs["hooks"]["PreToolUse"]
    assert doc["hooks"]["UserPromptSubmit"][0] == theirs["hooks"]["UserPromptSubmit"][0]
    assert len(ours(doc)["UserPromptSubmit"]) == 1
    assert path.read_text().startswith('{\n    "model"')  # the file's own indentation
    assert cli("uninstall", "--client", "claude", "--yes").rc == 0
    assert json.loads(path.read_text()) == theirs


def test_a_different_hook_of_ours_is_kept_unless_forced(cli: Any, tmp_path: Path) -> None:
    path = codex_hooks(tmp_path / "home")
    path.parent.mkdir(parents=True)
    old = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "/old/bin/open-memex hook stop"}]}]}}
    path.write_text(json.dumps(old))
    result = cli("init", "--client", "codex", "--yes", "--json")
    hook_action = next(a for a in json.loads(result.out)["actions"] if a["kind"] == "hooks")
    assert hook_action["action"] == "added"  # the two missing events
    assert ours(json.loads(path.read_text()))["Stop"] == ["/old/bin/open-memex hook stop"]
    assert cli("init", "--client", "codex", "--yes", "--force").rc == 0
    assert ours(json.loads(path.read_text()))["Stop"][0] != "/old/bin/open-memex hook stop"


def test_jsonc_settings_are_left_untouched_with_a_snippet(cli: Any, tmp_path: Path, data_root: Path) -> None:
    path = settings(tmp_path / "home")
    path.parent.mkdir(parents=True)
    text = '{\n  // my settings\n  "model": "opus",\n}\n'
    path.write_text(text)
    result = cli("init", "--client", "claude", "--yes", "--json")
    action = next(a for a in json.loads(result.out)["actions"] if a["kind"] == "hooks")
    assert action["action"] == "manual" and "UserPromptSubmit" in action["snippet"]
    assert path.read_text() == text
    # the snippet is what init merges: pinned to this data root like the MCP entry (it was
    # not, so pasting it gave hooks that a rerun of init called "a different hook")
    snippet = json.loads(action["snippet"])
    assert set(ours(snippet)) == {name for name, _, _ in EVENTS}
    for commands in ours(snippet).values():
        assert commands[0].startswith(f"OPEN_MEMEX_HOME={data_root} ")
    path.write_text(action["snippet"])  # pasted as told
    again = cli("init", "--client", "claude", "--yes", "--json")
    action = next(a for a in json.loads(again.out)["actions"] if a["kind"] == "hooks")
    assert (action["action"], action["detail"]) == ("kept", "hooks already installed")
    assert path.read_text() == json.dumps(snippet, indent=2)


def test_init_then_uninstall_gives_hand_written_settings_back_byte_for_byte(cli: Any, tmp_path: Path) -> None:
    """Both re-serialised settings.json: inline arrays and objects reflowed, ``1e3`` became
    ``1000.0``, ``1.50`` became ``1.5``, ``\\u00e9`` became ``é``."""
    path = settings(tmp_path / "home")
    path.parent.mkdir(parents=True)
    text = ('{\n  "permissions": {"allow": ["Bash(ls:*)", "Read"], "deny": []},\n'
            '  "env": {"GREETING": "caf\\u00e9", "RETRY_MS": 1e3, "RATIO": 1.50}\n}\n')  # fmt: skip
    path.write_text(text)
    assert cli("init", "--client", "claude", "--yes").rc == 0
    after = path.read_text()
    assert after.startswith(text[: text.rindex("}")].rstrip("\n") + ',\n  "hooks": {\n    "SessionStart": [\n')
    assert set(ours(json.loads(after))) == {name for name, _, _ in EVENTS}
    assert cli("uninstall", "--client", "claude", "--yes").rc == 0
    assert path.read_text() == text


def test_uninstall_keeps_the_hooks_and_skill_of_another_data_root(cli: Any, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """Uninstall with data root B kept A's MCP entry ("another data root") but deleted A's
    hooks — and settings.json with them — and the skill A still uses."""
    home = tmp_path / "home"
    root_a, root_b = tmp_path / "dataA", tmp_path / "dataB"
    path = settings(home)
    path.parent.mkdir(parents=True)
    path.write_text('{\n  "model": "opus"\n}\n')
    monkeypatch.setenv("OPEN_MEMEX_HOME", str(root_a))
    assert cli("init", "--client", "claude", "--yes").rc == 0
    with_a = path.read_text()
    skill = home / ".claude" / "skills" / "open-memex" / "SKILL.md"
    assert skill.exists()
    monkeypatch.setenv("OPEN_MEMEX_HOME", str(root_b))
    assert cli("init", "--client", "claude", "--yes").rc == 0
    result = cli("uninstall", "--client", "claude", "--yes", "--json")
    actions = {a["kind"]: a for a in json.loads(result.out)["actions"]}
    assert actions["mcp"]["action"] == "kept"
    assert actions["hooks"]["action"] == "kept" and str(root_a) in actions["hooks"]["detail"]
    assert actions["skill"]["action"] == "kept" and str(root_a) in actions["skill"]["detail"]
    assert path.read_text() == with_a and skill.exists()
    # B's own hooks beside A's: only B's go
    doc = json.loads(with_a)
    doc["hooks"]["Stop"].append({"hooks": [{"type": "command", "command": f"OPEN_MEMEX_HOME={root_b} open-memex hook stop"}]})
    path.write_text(json.dumps(doc, indent=2) + "\n")
    result = cli("uninstall", "--client", "claude", "--yes", "--json")
    hooks = next(a for a in json.loads(result.out)["actions"] if a["kind"] == "hooks")
    assert hooks["action"] == "removed" and str(root_a) in hooks["detail"]
    assert path.read_text() == with_a
    monkeypatch.setenv("OPEN_MEMEX_HOME", str(root_a))
    assert cli("uninstall", "--client", "claude", "--yes").rc == 0
    assert path.read_text() == '{\n  "model": "opus"\n}\n' and not skill.exists()


def test_codex_with_hooks_turned_off_is_told(cli: Any, tmp_path: Path) -> None:
    config = tmp_path / "home" / ".codex" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("[features]\ncodex_hooks = false\n")
    result = cli("init", "--client", "codex", "--yes", "--json")
    action = next(a for a in json.loads(result.out)["actions"] if a["kind"] == "hooks")
    assert "codex_hooks = false" in action["detail"]
    assert "codex_hooks = false" in config.read_text()  # the user's choice is not flipped


def test_uninstall_deletes_a_file_that_held_only_our_hooks(cli: Any, tmp_path: Path, data_root: Path) -> None:
    assert cli("add", "a memory that must survive uninstall").rc == 0
    assert cli("init", "--client", "codex", "--yes").rc == 0
    assert codex_hooks(tmp_path / "home").exists()
    assert cli("uninstall", "--client", "codex", "--yes").rc == 0
    assert not codex_hooks(tmp_path / "home").exists()
    assert "01M" in cli("search", "survive").out  # the memory is still found


def test_project_level_writes_no_hooks(cli: Any, git_repo: Path, tmp_path: Path) -> None:
    assert cli("init", "--client", "claude", "--project", "--yes").rc == 0
    assert not (git_repo / ".claude" / "settings.json").exists()
    assert not settings(tmp_path / "home").exists()


def test_shipped_hook_files_match_what_init_writes() -> None:
    expected = document("open-memex")
    for path in (ROOT / "hooks" / "claude-code" / "settings.json", ROOT / "hooks" / "codex" / "hooks.json"):
        assert json.loads(path.read_text()) == expected, path
