"""init / uninstall for every client (SPEC §4 item 18, D46–D49, D54, F30): the real CLI in
the hermetic temp HOME of conftest, every file checked after it ran."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests.clientcases import (
    CLIENTS,
    JSON_CLIENTS,
    SECTION,
    SKILLS,
    assert_entry,
    home,
    load,
    ours,
    user_file,
    with_others,
)


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``root`` with its bytes and mtime."""
    return {str(p): (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(root.rglob("*")) if p.is_file()}


def init(cli: Any, client: str, *more: str) -> Any:
    return cli("init", "--client", client, *more)


@pytest.mark.parametrize("client", CLIENTS)
def test_fresh_file(cli: Any, client: str, data_root: Path) -> None:
    result = init(cli, client)
    assert result.rc == 0, result.err
    path = user_file(client, home())
    assert_entry(client, ours(client, path), data_root)
    assert f"added    {client}" in result.out
    assert result.out.rstrip().endswith(
        'Next step: `open-memex add "standup is at 9:30"` — then ask your agent what it remembers.'
    )
    assert (data_root / ".init.json").is_file()
    if client in SKILLS:
        skill = home() / SKILLS[client] / "open-memex" / "SKILL.md"
        assert skill.read_text().startswith("---\nname: open-memex\ndescription: ")


@pytest.mark.parametrize("client", CLIENTS)
def test_other_servers_and_keys_are_kept(cli: Any, client: str, data_root: Path) -> None:
    path = user_file(client, home())
    path.parent.mkdir(parents=True, exist_ok=True)
    original = with_others(client)
    path.write_text(original, encoding="utf-8")
    before = load(client, path)
    assert init(cli, client).rc == 0
    after = load(client, path)
    assert_entry(client, after[SECTION[client]].pop("open-memex"), data_root)
    assert after == before  # every other value identical, and no key lost or added
    if client == "codex":
        assert path.read_text().startswith(original)  # comments and layout byte-for-byte
    else:
        assert list(json.loads(path.read_text())) == list(json.loads(original))  # key order kept
        assert path.read_text().startswith('{\n    "')  # the file's own 4-space indent
    backup = path.with_name(path.name + ".open-memex.bak")
    assert backup.read_text() == original


@pytest.mark.parametrize("client", JSON_CLIENTS)
def test_jsonc_file_is_left_untouched_with_a_snippet(cli: Any, client: str) -> None:
    path = user_file(client, home())
    path.parent.mkdir(parents=True, exist_ok=True)
    text = f'{{\n  // my settings\n  "{SECTION[client]}": {{\n    "other": {{"command": "x"}},\n  }},\n}}\n'
    path.write_text(text)
    result = init(cli, client)
    assert result.rc == 0
    assert path.read_text() == text
    assert not path.with_name(path.name + ".open-memex.bak").exists()
    assert f"manual   {client}" in result.out and "comments or trailing commas" in result.out
    assert f"add this to ~/{path.relative_to(home()).as_posix()} yourself:" in result.out
    lines = [line[6:] for line in result.out.split("yourself:\n", 1)[1].splitlines() if line.startswith("      ")]
    assert_entry(client, json.loads("\n".join(lines))[SECTION[client]]["open-memex"], Path(os.environ["OPEN_MEMEX_HOME"]))


@pytest.mark.parametrize("client", JSON_CLIENTS)
@pytest.mark.parametrize("content", ["[1, 2]", '"text"', "{\"a\": 1, \"a\": 2}", "{\"a\": NaN}"])
def test_a_file_that_is_not_a_json_object_is_untouched(cli: Any, client: str, content: str) -> None:
    path = user_file(client, home())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)
    result = init(cli, client, "--json")
    assert result.rc == 0
    assert path.read_text() == content
    action = next(a for a in json.loads(result.out)["actions"] if a["kind"] == "mcp")
    assert action["action"] == "manual" and json.loads(action["snippet"])


def test_codex_toml_that_does_not_parse_is_untouched(cli: Any) -> None:
    path = user_file("codex", home())
    path.parent.mkdir(parents=True)
    path.write_text("model = \n[broken")
    result = init(cli, "codex")
    assert path.read_text() == "model = \n[broken"
    assert "manual   codex" in result.out and "# ~/.codex/config.toml" in result.out


@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize("content", ["", "  \n\t\n"])
def test_an_empty_file_is_an_empty_config(cli: Any, client: str, content: str, data_root: Path) -> None:
    path = user_file(client, home())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)
    assert init(cli, client).rc == 0
    assert_entry(client, ours(client, path), data_root)
    assert not path.with_name(path.name + ".open-memex.bak").exists()  # nothing to back up


@pytest.mark.parametrize("client", CLIENTS)
def test_a_different_entry_is_kept_unless_forced(cli: Any, client: str, data_root: Path) -> None:
    path = user_file(client, home())
    path.parent.mkdir(parents=True, exist_ok=True)
    if client == "codex":
        stale = OLD_TOML
    else:
        entry = {"type": "local", "command": ["/old/open-memex", "mcp"]} if client == "opencode" else {"command": "/old/open-memex", "args": ["mcp"]}
        stale = json.dumps({SECTION[client]: {"open-memex": entry, "other": {"command": "x"}}}, indent=2)
    path.write_text(stale)
    result = init(cli, client)
    assert result.rc == 0
    assert path.read_text() == stale
    assert "kept     " in result.out and "rerun with --force" in result.out
    result = init(cli, client, "--force")
    assert result.rc == 0 and "updated  " in result.out
    assert_entry(client, ours(client, path), data_root)
    assert load(client, path)[SECTION[client]]["other"]["command"] == "x"


OLD_TOML = """[mcp_servers.open-memex]
command = "/old/open-memex"
args = ["mcp"]

[mcp_servers.other]
command = "x"
"""


@pytest.mark.parametrize("client", CLIENTS)
def test_a_second_run_changes_no_byte(cli: Any, client: str, data_root: Path) -> None:
    path = user_file(client, home())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(with_others(client))
    assert init(cli, client).rc == 0
    before = snapshot(home()) | snapshot(data_root)
    result = init(cli, client)
    assert result.rc == 0
    assert snapshot(home()) | snapshot(data_root) == before
    assert "added" not in result.out and "updated" not in result.out
    assert "already wired" in result.out


@pytest.mark.parametrize("client", CLIENTS)
def test_uninstall_keeps_other_servers_and_every_memory(cli: Any, client: str, data_root: Path) -> None:
    saved = cli("add", "Payments retries need idempotency keys", "--scope", "personal", "--json")
    memory_id = json.loads(saved.out)["id"]
    path = user_file(client, home())
    path.parent.mkdir(parents=True, exist_ok=True)
    original = with_others(client)
    path.write_text(original)
    assert init(cli, client).rc == 0
    memories = snapshot(data_root / "memories")
    result = cli("uninstall", "--client", client)
    assert result.rc == 0, result.err
    assert f"removed  {client}" in result.out
    assert ours(client, path) is None
    assert load(client, path) == (tomllib.loads(original) if client == "codex" else json.loads(original))
    if client == "codex":
        assert path.read_text() == original  # byte-for-byte, comments and all
    assert snapshot(data_root / "memories") == memories
    hits = json.loads(cli("search", "idempotency", "--json").out)["hits"]
    assert [hit["id"] for hit in hits] == [memory_id]
    if client in SKILLS:  # our skill goes, and the skills folder with it once empty (init made it)
        assert not (home() / SKILLS[client]).exists()
        assert path.exists()  # the config, which holds the user's other servers, stays
    assert not (data_root / ".init.json").exists()


@pytest.mark.parametrize("client", CLIENTS)
def test_legacy_my_o_memory_entry_is_swept(cli: Any, client: str, data_root: Path) -> None:
    path = user_file(client, home())
    path.parent.mkdir(parents=True, exist_ok=True)
    if client == "codex":
        path.write_text('[mcp_servers.my-o-memory]\ncommand = "npx"\nargs = ["my-o-memory"]\n\n[x]\ny = 1\n')
    else:
        legacy: dict[str, Any] = {SECTION[client]: {"my-o-memory": {"command": "npx"}}}
        if client == "opencode":
            legacy["plugin"] = ["my-o-memory@0.4.0", "other-plugin"]
        path.write_text(json.dumps(legacy))
    result = init(cli, client)
    assert "removed the legacy my-o-memory entry" in result.out
    doc = load(client, path)
    assert "my-o-memory" not in doc[SECTION[client]]
    assert_entry(client, doc[SECTION[client]]["open-memex"], data_root)
    if client == "opencode":
        assert doc["plugin"] == ["other-plugin"]


def test_claude_json_keeps_every_unrelated_key(cli: Any, data_root: Path) -> None:
    path = home() / ".claude.json"
    doc: dict[str, Any] = {
        "numStartups": 412, "installMethod": "npm", "autoUpdates": True, "theme": "dark",
        "tipsHistory": {f"tip-{i}": i for i in range(200)},
        "projects": {f"/home/u/p{i}": {"allowedTools": [], "history": [{"display": f"fix bug {i} — ✓"}],
                                        "mcpServers": {}, "lastCost": 0.125 * i} for i in range(50)},
        "oauthAccount": {"emailAddress": "u@example.com", "organizationUuid": "0f9c"},
        "cachedChangelog": "# 2.1\n* “quotes” and \\ backslashes\n", "bigNumber": 12345678901234567890,
        "mcpServers": {"github": {"type": "stdio", "command": "gh-mcp", "args": [], "env": {}}},
        "userID": "a" * 64, "empty": {}, "list": [], "null": None, "float": 1.5,
    }  # fmt: skip
    text = json.dumps(doc, indent=2, ensure_ascii=False)
    path.write_text(text)
    os.chmod(path, 0o600)
    assert init(cli, "claude").rc == 0
    after = json.loads(path.read_text())
    assert_entry("claude", after["mcpServers"].pop("open-memex"), data_root)
    assert after == doc and list(after) == list(doc)
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert cli("uninstall", "--client", "claude").rc == 0
    assert path.read_text() == text  # the same bytes as before init


HAND_WRITTEN = """{
  "theme": "dark",
  "ui": {"panels": ["files", "chat"], "zoom": 1.50, "retryMs": 1e3},
  "greeting": "caf\\u00e9",
  "%s": {
    "other": {"command": "npx", "args": ["-y", "@acme/other-server"]}
  }
}
"""


@pytest.mark.parametrize("client", JSON_CLIENTS)
def test_init_then_uninstall_gives_a_hand_written_file_back_byte_for_byte(cli: Any, client: str, data_root: Path) -> None:
    """Both re-serialised the whole file: inline arrays and objects reflowed one value per
    line, ``1e3`` became ``1000.0``, ``1.50`` became ``1.5``, ``\\u00e9`` became ``é``."""
    path = user_file(client, home())
    path.parent.mkdir(parents=True, exist_ok=True)
    text = HAND_WRITTEN % SECTION[client]
    path.write_text(text)
    assert init(cli, client).rc == 0
    after = path.read_text()
    assert_entry(client, ours(client, path), data_root)
    assert after.startswith(text.split('    "other"')[0])  # every line before our entry, byte for byte
    assert '    "other": {"command": "npx", "args": ["-y", "@acme/other-server"]},\n' in after
    assert cli("uninstall", "--client", client, "--yes").rc == 0
    assert path.read_text() == text
