"""init / uninstall against hostile files and interrupted runs (review rev66): repository
symlinks, concurrent inits, folders that were there before init, an unwritable data root,
temporary files and backups (their mode, a kill -9 mid-write), a data root reached through
a symlink, hand-written hooks, the Copilot instructions' last byte. Real files in the
test's HOME, the real CLI, byte-for-byte checks."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from openmemex.clients import doctor_checks
from tests.clientcases import home


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
