"""The pieces under init: JSON/JSONC reading, the TOML text edits, paths per OS, the
write that notices an editor writing at the same time."""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path

import pytest

from openmemex.clients import fileio, jsonconf, registry, tomlconf
from openmemex.clients.entry import ServerEntry
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


def test_plain_json_layout_round_trip() -> None:
    text = '{\n\t"a": {\n\t\t"b": [1, 2.5, "é"]\n\t}\n}'
    doc, layout = jsonconf.parse(text)
    assert layout.indent == "\t" and not layout.final_newline
    assert jsonconf.dump(doc, layout) == '{\n\t"a": {\n\t\t"b": [\n\t\t\t1,\n\t\t\t2.5,\n\t\t\t"é"\n\t\t]\n\t}\n}'


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
    ],
)
def test_toml_add_then_remove_gives_the_original_back(original: str) -> None:
    added = tomlconf.add(original, OURS, force=False)
    assert added.action == "added" and added.text is not None
    data = tomllib.loads(added.text)
    assert data["mcp_servers"]["open-memex"] == OURS
    if "{" not in original and "a.command" not in original:
        assert added.text.startswith(original)  # appended: every byte before it kept
    removed = tomlconf.remove(added.text, had_backup=True)
    assert removed.action == "removed"
    assert tomllib.loads(removed.text or "") == tomllib.loads(original)
    if "{" not in original and "a.command" not in original:
        assert (removed.text or "").rstrip("\n") == original.rstrip("\n")


def test_toml_our_table_in_the_middle_is_cut_cleanly() -> None:
    text = '[a]\nx = 1\n\n[mcp_servers.open-memex]\ncommand = "old"\n\n[mcp_servers.open-memex.env]\nK = "v"\n\n# about b\n[b]\ny = 2\n'
    removed = tomlconf.remove(text, had_backup=True)
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
    text = tomlconf.add("", OURS, force=False).text or ""
    assert tomlconf.remove(text, had_backup=False).delete
    assert not tomlconf.remove(text, had_backup=True).delete


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
