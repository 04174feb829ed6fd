"""What each client's config looks like, written down independently of openmemex.clients
(so the tests check the product against the notes, not against itself)."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path
from typing import Any

CLIENTS = ("vscode", "cursor", "claude", "codex", "opencode", "windsurf", "zed", "visualstudio")
JSON_CLIENTS = tuple(c for c in CLIENTS if c != "codex")
SECTION = {
    "vscode": "servers", "cursor": "mcpServers", "claude": "mcpServers", "codex": "mcp_servers",
    "opencode": "mcp", "windsurf": "mcpServers", "zed": "context_servers", "visualstudio": "servers",
}  # fmt: skip
USER_PATH = {  # relative to HOME, on Linux with XDG_CONFIG_HOME=$HOME/.config (conftest)
    "vscode": ".config/Code/User/mcp.json", "cursor": ".cursor/mcp.json", "claude": ".claude.json",
    "codex": ".codex/config.toml", "opencode": ".config/opencode/opencode.json",
    "windsurf": ".codeium/windsurf/mcp_config.json", "zed": ".config/zed/settings.json",
    "visualstudio": ".mcp.json",
}  # fmt: skip
PROJECT_PATH = {
    "vscode": ".vscode/mcp.json", "cursor": ".cursor/mcp.json", "claude": ".mcp.json",
    "codex": ".codex/config.toml", "opencode": "opencode.json", "zed": ".zed/settings.json",
    "visualstudio": ".mcp.json",
}  # fmt: skip
SKILLS = {
    "vscode": ".copilot/skills", "cursor": ".cursor/skills", "claude": ".claude/skills",
    "codex": ".agents/skills", "opencode": ".config/opencode/skills",
}  # fmt: skip

OTHER = {"command": "npx", "args": ["-y", "@acme/other-server"], "env": {"TOKEN": "${env:TOKEN}", "É": "ü"}}
OTHER_TOML = """# Codex settings — hand written
model = "o3"  # my favourite

[mcp_servers.other]
command = "npx"
args = ["-y", "@acme/other-server"]

[mcp_servers.other.env]
TOKEN = "abc"

# profiles below
[profiles.fast]
model = "gpt-fast"
"""


def home() -> Path:
    """The test's own HOME (conftest's ``hermetic`` sets it)."""
    return Path(os.environ["HOME"])


def user_file(client: str, home: Path) -> Path:
    return home / USER_PATH[client]


def load(client: str, path: Path) -> dict[str, Any]:
    text = path.read_text(encoding="utf-8")
    return tomllib.loads(text) if client == "codex" else json.loads(text)


def ours(client: str, path: Path) -> dict[str, Any] | None:
    section = load(client, path).get(SECTION[client]) or {}
    return section.get("open-memex")


def with_others(client: str) -> str:
    """A config holding another server and unrelated settings."""
    if client == "codex":
        return OTHER_TOML
    other = {"type": "local", "command": ["npx", "x"]} if client == "opencode" else OTHER
    doc: dict[str, Any] = {"theme": "dark", SECTION[client]: {"other": other}, "nested": {"a": [1, 2.5, "é", None]}}
    if client == "opencode":
        doc = {"$schema": "https://opencode.ai/config.json", **doc}
    return json.dumps(doc, indent=4) + "\n"


def assert_entry(client: str, entry: dict[str, Any] | None, data_root: Path) -> None:
    """The entry has the client's shape, an absolute runnable command, args mcp, the root."""
    assert entry is not None, "no open-memex entry"
    if client == "opencode":
        assert entry["type"] == "local" and entry["enabled"] is True
        exe, args, env = entry["command"][0], entry["command"][1:], entry["environment"]
    else:
        exe, args, env = entry["command"], entry["args"], entry["env"]
        if client in ("vscode", "claude", "visualstudio"):
            assert entry["type"] == "stdio"
        else:
            assert "type" not in entry
    assert os.path.isabs(exe) and os.path.isfile(exe) and os.access(exe, os.X_OK), exe
    if client in ("vscode", "cursor"):  # editors that expand ${workspaceFolder} bind the project
        assert args[-2:] == ["--project-dir", "${workspaceFolder}"]
        args = args[:-2]
    assert args in (["mcp"], ["-m", "openmemex", "mcp"])
    assert env == {"OPEN_MEMEX_HOME": str(data_root)}
