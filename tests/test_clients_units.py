"""The pieces under init: JSON/JSONC reading, the TOML text edits, paths per OS, the
write that notices an editor writing at the same time."""

from __future__ import annotations

import json
import sys
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest

from openmemex.clients import fileio, hookconf, jsonconf, registry, tomlconf, wiring
from openmemex.clients.entry import ServerEntry
from openmemex.clients.receipt import Receipt
from openmemex.clients.registry import plain_shape

OURS = plain_shape(ServerEntry("/opt/bin/open-memex", ("mcp",), {"OPEN_MEMEX_HOME": "/data/open-memex"}))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"url": "http://x//y", /* c */ "a": [1, 2,], // tail\n}', {"url": "http://x//y", "a": [1, 2]}),
        ('{"s": "a \\" // not a comment", "t": "/* nor this */",}', {"s": 'a " // not a comment', "t": "/* nor this */"}),
        ("// only a comment\n", {}),
        ("[1, 2]", None),
        ("{ broken", None),
    ],
)
def test_lenient_reading(text: str, expected: dict[str, object] | None) -> None:
    assert jsonconf.read_lenient(text) == expected


def test_an_empty_file_is_written_in_its_layout() -> None:
    doc, source = jsonconf.parse("\ufeff \r\n")
    assert doc == {} and source.layout.bom
    doc["a"] = {"b": [1, 2.5, "é"]}
    expected = '\ufeff{\n  "a": {\n    "b": [\n      1,\n      2.5,\n      "é"\n    ]\n  }\n}\n'
    assert jsonconf.edit(source, doc) == expected.replace("\n", "\r\n")  # its own line ending, even blank


ENTRY = ServerEntry("/opt/bin/open-memex", ("mcp",), {"OPEN_MEMEX_HOME": "/data/open-memex"})
CODEX_CLIENT = registry.get("codex")
HAND_WRITTEN = [
    # inline arrays and objects, number spellings, an escape: re-serialising changed each of them
    '{\n  "permissions": {"allow": ["Bash(ls:*)", "Read"], "deny": []},\n'
    '  "env": {"GREETING": "caf\\u00e9", "RETRY_MS": 1e3, "RATIO": 1.50}\n}\n',
    '\ufeff{\r\n\t"a": [1, 2.50],\r\n\t"mcpServers": {\r\n\t\t"other": {"command": "x"}\r\n\t},\r\n'
    '\t"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard"}]}]}\r\n}',
    '{"a":1E3,"mcp":{"other":{"command":["x"]}},"hooks":{"PreToolUse":[]}}',
    '{"title": "\\ud83d cut", "n": -0.0, "big": 12345678901234567890}\n',
    "{}",
]


@pytest.mark.parametrize("original", HAND_WRITTEN)
@pytest.mark.parametrize("client", ["cursor", "opencode", "zed"])
def test_json_add_then_remove_gives_the_original_bytes_back(client: str, original: str) -> None:
    """init + uninstall re-serialised the whole file: inline arrays reflowed, 1e3 became
    1000.0, 1.50 became 1.5, \\u00e9 became é. Only our entry's text goes in and out now."""
    added = wiring.add(registry.get(client), original, ENTRY, force=False)
    assert added.action == "added" and added.text is not None, added
    removed = wiring.remove(registry.get(client), added.text, entry=ENTRY, receipt=added.receipt)
    assert removed.action == "removed" and removed.text == original


@pytest.mark.parametrize("original", HAND_WRITTEN)
def test_json_hooks_add_then_remove_gives_the_original_bytes_back(original: str) -> None:
    added = hookconf.add(original, ENTRY, force=False)
    assert added.action == "added" and added.text is not None, added
    assert json.loads(added.text.removeprefix("\ufeff"))["hooks"]["Stop"][-1]["hooks"][0]["command"].endswith(" hook stop")
    removed = hookconf.remove(added.text, data_root="/data/open-memex", receipt=added.receipt)
    assert removed.action == "removed" and removed.text == original


def test_json_forced_entry_changes_only_its_own_values() -> None:
    text = ('{\n  "mcpServers": {\n    "open-memex": {"command": "/old/open-memex", "args": ["mcp"], "env": {}},\n'
            '    "other": {"command": "x", "timeout": 1.50}\n  },\n  "zoom": 1e3\n}\n')  # fmt: skip
    forced = wiring.add(registry.get("cursor"), text, ENTRY, force=True)
    assert forced.action == "updated" and forced.text is not None
    assert '    "other": {"command": "x", "timeout": 1.50}\n  },\n  "zoom": 1e3\n}\n' in forced.text
    assert json.loads(forced.text)["mcpServers"]["open-memex"] == registry.cursor_shape(ENTRY)
    assert forced.text.startswith('{\n  "mcpServers": {\n    "open-memex": {"command": "/opt/bin/open-memex", "args": ["mcp", ')


CODEX = """# top comment
model = "o3"

[mcp_servers.docs]  # the docs server
command = "docs-mcp"
args = [
  "--verbose",
]

# settings for profiles
[profiles.fast]
model = "mini"
"""


@pytest.mark.parametrize(
    "original",
    [
        CODEX,
        "",
        "model = 'x'",
        "[mcp_servers]\n",
        "[mcp_servers.a]\ncommand = 'a'\n\n\n",
        'mcp_servers = { a = { command = "x" } }\n',
        "[mcp_servers]\na.command = 'x'\n",
        'model = "o3"',  # no final newline: init + uninstall added one
        'model = "o3"\n\n\n',  # trailing blank lines: one was lost
        'model = "o3"\n\n',
        '# c\r\nmodel = "o3"\r\n',  # CRLF: init appended LF lines (mixed endings)
        'model = "o3"\r\n\r\n',
        'model = "o3"\r\n[x]\r\ny = 1',
        # a header line inside a multi-line string is text: taken for our table, uninstall went
        # through tomlkit, which dropped the empty [mcp_servers] and added blank lines
        'developer_instructions = """\nMemory server lives in\n[mcp_servers.open-memex]\n"""\n\n[mcp_servers]\n',
        'notes = """\n[mcp_servers.open-memex]\n"""',
        "notes = '''\n[mcp_servers.open-memex]\ncommand = \"x\"\n'''\n[mcp_servers]\n",
        'a = [\n  [1, 2],\n  "[mcp_servers.open-memex]",\n]\n\n[mcp_servers]\n',
    ],
)
def test_toml_add_then_remove_gives_the_original_back(original: str) -> None:
    added = tomlconf.add(original, OURS, force=False)
    assert added.action == "added" and added.text is not None
    data = tomllib.loads(added.text)
    assert data["mcp_servers"]["open-memex"] == OURS
    if "{" not in original and "a.command" not in original:
        assert added.text.startswith(original)  # appended: every byte before it kept
        newline = "\r\n" if "\r\n" in original else "\n"
        rest = added.text[len(original) :].replace(newline, "")
        assert "\n" not in rest and "\r" not in rest  # the file's own line ending, and only that
    removed = wiring.remove(CODEX_CLIENT, added.text, entry=ENTRY, receipt=added.receipt)
    assert removed.action == "removed"
    assert tomllib.loads(removed.text or "") == tomllib.loads(original)
    if "{" not in original and "a.command" not in original:
        assert removed.text == original  # byte for byte


def test_toml_our_table_in_the_middle_is_cut_cleanly() -> None:
    text = '[a]\nx = 1\n\n[mcp_servers.open-memex]\ncommand = "old"\n\n[mcp_servers.open-memex.env]\nK = "v"\n\n# about b\n[b]\ny = 2\n'
    removed = tomlconf.remove(text, owner=lambda found: None)
    assert removed.text == "[a]\nx = 1\n\n# about b\n[b]\ny = 2\n"


def test_toml_quoted_key_and_force() -> None:
    text = '[mcp_servers."open-memex"]\ncommand = "/old"\nargs = ["mcp"]\n\n[other]\nk = 1\n'
    kept = tomlconf.add(text, OURS, force=False)
    assert kept.action == "kept" and kept.text is None and "--force" in kept.detail
    forced = tomlconf.add(text, OURS, force=True)
    assert forced.action == "updated" and forced.text is not None
    assert tomllib.loads(forced.text) == {"mcp_servers": {"open-memex": OURS}, "other": {"k": 1}}
    assert forced.text.startswith("[other]\nk = 1\n")


def test_toml_that_is_only_ours_is_deleted_unless_it_had_content_before() -> None:
    added = tomlconf.add("", OURS, force=False)
    text = added.text or ""
    assert wiring.remove(CODEX_CLIENT, text, entry=ENTRY, receipt=replace(added.receipt or Receipt(), existed=False)).delete
    assert not wiring.remove(CODEX_CLIENT, text, entry=ENTRY, receipt=added.receipt).delete  # an empty file: kept, empty
    # no record of init's (an earlier version): only a file that is what init writes, without a .bak
    assert wiring.remove(CODEX_CLIENT, text, entry=ENTRY, had_backup=False).delete
    assert not wiring.remove(CODEX_CLIENT, text, entry=ENTRY, had_backup=True).delete


def test_toml_snippet_parses_to_the_shape() -> None:
    assert tomllib.loads(tomlconf.block(OURS)) == {"mcp_servers": {"open-memex": OURS}}
    odd = dict(OURS, env={"OPEN_MEMEX_HOME": 'C:\\Users\\me "quoted"'})
    assert tomllib.loads(tomlconf.block(odd))["mcp_servers"]["open-memex"] == odd


@pytest.mark.parametrize(
    ("platform", "vscode", "zed"),
    [
        ("linux", "{xdg}/Code/User/mcp.json", "{xdg}/zed/settings.json"),
        ("darwin", "{home}/Library/Application Support/Code/User/mcp.json", "{home}/.config/zed/settings.json"),
        ("win32", "{appdata}/Code/User/mcp.json", "{appdata}/Zed/settings.json"),
    ],
)
def test_user_paths_per_os(platform: str, vscode: str, zed: str, tmp_path: Path,
                           monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    home = Path.home()
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("APPDATA", str(tmp_path / "roaming"))
    monkeypatch.setattr(sys, "platform", platform)
    values = {"xdg": str(tmp_path / "xdg"), "home": str(home), "appdata": str(tmp_path / "roaming")}
    assert registry.get("vscode").user_path() == Path(vscode.format(**values))
    assert registry.get("zed").user_path() == Path(zed.format(**values))
    assert registry.get("cursor").user_path() == home / ".cursor" / "mcp.json"
    assert registry.get("visualstudio").user_path() == home / ".mcp.json"


def test_opencode_reads_an_existing_jsonc_and_codex_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = Path.home() / ".config" / "opencode"
    folder.mkdir(parents=True)
    assert registry.get("opencode").user_path() == folder / "opencode.json"
    (folder / "opencode.jsonc").write_text("{}")
    assert registry.get("opencode").user_path() == folder / "opencode.jsonc"
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    assert registry.get("codex").user_path() == tmp_path / "codex" / "config.toml"


def test_claude_config_dir_moves_claude_json_and_skills(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    claude = registry.get("claude")
    assert claude.user_path() == Path.home() / ".claude.json"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cc"))
    assert claude.user_path() == tmp_path / "cc" / ".claude.json"
    assert claude.skills_dir is not None and claude.skills_dir() == tmp_path / "cc" / "skills"


def test_our_args() -> None:
    from openmemex.clients.entry import is_our_args

    assert is_our_args(["mcp"]) and is_our_args(["-m", "openmemex", "mcp"])
    assert is_our_args(["mcp", "--project-dir", "${workspaceFolder}"])
    assert not is_our_args(["serve"]) and not is_our_args(["mcp", "--verbose"]) and not is_our_args("mcp")


def test_a_file_changed_while_we_write_is_decided_again(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text('{"a": 1}')
    calls = []

    def decide(snap: fileio.Snapshot) -> str:
        calls.append(snap.text)
        if len(calls) == 1:
            path.write_text('{"a": 1, "editor": "wrote this meanwhile"}')  # the editor's own write
        doc = json.loads(snap.text)
        doc["ours"] = True
        return json.dumps(doc)

    fileio.update(path, decide)
    assert json.loads(path.read_text()) == {"a": 1, "editor": "wrote this meanwhile", "ours": True}
    assert len(calls) == 2
