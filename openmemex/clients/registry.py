"""The clients init knows: where each reads its MCP config, and the shape it reads there.

Every path and shape here was checked against the client's docs, and for Claude Code,
Codex and opencode against the real CLI (notes/mcp-cli-frontmatter.md §5). One server
entry (``entry.py``) goes in; each client only places it in its own shape.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import UsageError
from .entry import ServerEntry


def home() -> Path:
    return Path.home()


def xdg_config() -> Path:
    value = os.environ.get("XDG_CONFIG_HOME")
    return Path(value) if value and os.path.isabs(value) else home() / ".config"


def appdata() -> Path:
    value = os.environ.get("APPDATA")
    return Path(value) if value else home() / "AppData" / "Roaming"


def codex_home() -> Path:
    value = os.environ.get("CODEX_HOME")
    return Path(value) if value else home() / ".codex"


def claude_dir() -> Path:
    """Claude Code's own folder; ``CLAUDE_CONFIG_DIR`` moves it, ``.claude.json`` included
    (checked with the real CLI: ``claude mcp add --scope user`` writes there)."""
    value = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(value) if value else home() / ".claude"


def claude_user_config() -> Path:
    value = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(value) / ".claude.json" if value else home() / ".claude.json"


def vscode_user_dir() -> Path:
    """VS Code's user profile folder (``MCP: Open User Configuration`` opens mcp.json there)."""
    if sys.platform == "win32":
        return appdata() / "Code" / "User"
    if sys.platform == "darwin":
        return home() / "Library" / "Application Support" / "Code" / "User"
    return xdg_config() / "Code" / "User"


def zed_config_dir() -> Path:
    if sys.platform == "win32":
        return appdata() / "Zed"
    if sys.platform == "darwin":
        return home() / ".config" / "zed"
    return xdg_config() / "zed"


def _prefer_existing(*candidates: Path) -> Path:
    """The first candidate that exists (opencode reads opencode.json or opencode.jsonc)."""
    return next((path for path in candidates if path.exists()), candidates[0])


# --- shapes: the server entry as each client wants it ---------------------------------------


def stdio_shape(entry: ServerEntry) -> dict[str, Any]:
    """VS Code, Visual Studio and Claude Code: ``type`` is required (VS Code) or written by
    ``claude mcp add`` itself."""
    return {"type": "stdio", "command": entry.command, "args": list(entry.args), "env": dict(entry.env)}


def plain_shape(entry: ServerEntry) -> dict[str, Any]:
    """Cursor, Windsurf, Zed and Codex: command, args, env."""
    return {"command": entry.command, "args": list(entry.args), "env": dict(entry.env)}


WORKSPACE_ARGS = ("--project-dir", "${workspaceFolder}")


def vscode_shape(entry: ServerEntry) -> dict[str, Any]:
    """VS Code (and Cursor below) may start a user-level server outside the workspace; both
    expand ``${workspaceFolder}`` in args, which binds the session to the open project.
    An editor that leaves it unexpanded gets the start folder (the server says so)."""
    return {**stdio_shape(entry), "args": [*entry.args, *WORKSPACE_ARGS]}


def cursor_shape(entry: ServerEntry) -> dict[str, Any]:
    return {**plain_shape(entry), "args": [*entry.args, *WORKSPACE_ARGS]}


def opencode_shape(entry: ServerEntry) -> dict[str, Any]:
    """opencode: one command array, ``environment``; ``type: stdio`` + args is a hard error."""
    return {"type": "local", "command": entry.argv, "environment": dict(entry.env), "enabled": True}


@dataclass(frozen=True)
class Client:
    """One client: its config files, the key holding MCP servers, its entry shape."""

    id: str
    label: str
    section: str
    shape: Callable[[ServerEntry], dict[str, Any]]
    user_path: Callable[[], Path]
    project_path: Callable[[Path], Path] | None
    detect: Callable[[Path], bool]
    fmt: str = "json"
    mirror: str | None = None  # also write into this section when the file already has it
    skills_dir: Callable[[], Path] | None = None
    copilot: bool = False  # gets the Copilot instructions section (D22)
    project_note: str = ""

    def path(self, level: str, project: Path) -> Path | None:
        if level == "user":
            return self.user_path()
        return self.project_path(project) if self.project_path else None


def _on_path(*names: str) -> bool:
    return any(shutil.which(name) for name in names)


def _solution_dir(project: Path) -> Path:
    """Visual Studio reads ``.mcp.json`` beside the solution: the folder with the .sln."""
    cwd = Path.cwd()
    return cwd if has_solution(cwd) else project


def has_solution(folder: Path) -> bool:
    try:
        return any(p.suffix in (".sln", ".slnx") for p in folder.iterdir())
    except OSError:
        return False


CLIENTS: tuple[Client, ...] = (
    Client(
        "vscode", "VS Code", "servers", vscode_shape,
        user_path=lambda: vscode_user_dir() / "mcp.json",
        project_path=lambda root: root / ".vscode" / "mcp.json",
        detect=lambda _: _on_path("code") or vscode_user_dir().is_dir(),
        skills_dir=lambda: home() / ".copilot" / "skills", copilot=True,
    ),
    Client(
        "cursor", "Cursor", "mcpServers", cursor_shape,
        user_path=lambda: home() / ".cursor" / "mcp.json",
        project_path=lambda root: root / ".cursor" / "mcp.json",
        detect=lambda _: _on_path("cursor") or (home() / ".cursor").is_dir(),
        skills_dir=lambda: home() / ".cursor" / "skills",
    ),
    Client(
        "claude", "Claude Code", "mcpServers", stdio_shape,
        user_path=claude_user_config,
        project_path=lambda root: root / ".mcp.json",
        detect=lambda _: _on_path("claude") or claude_dir().is_dir() or claude_user_config().is_file(),
        skills_dir=lambda: claude_dir() / "skills",
        project_note="Claude Code asks each user to approve a project server once",
    ),
    Client(
        "codex", "Codex", "mcp_servers", plain_shape, fmt="toml",
        user_path=lambda: codex_home() / "config.toml",
        project_path=lambda root: root / ".codex" / "config.toml",
        detect=lambda _: _on_path("codex") or codex_home().is_dir(),
        skills_dir=lambda: home() / ".agents" / "skills",
        project_note="Codex reads a project's .codex/config.toml only once you trust the project",
    ),
    Client(
        "opencode", "opencode", "mcp", opencode_shape,
        user_path=lambda: _prefer_existing(xdg_config() / "opencode" / "opencode.json",
                                           xdg_config() / "opencode" / "opencode.jsonc"),
        project_path=lambda root: _prefer_existing(root / "opencode.json", root / "opencode.jsonc"),
        detect=lambda _: _on_path("opencode") or (xdg_config() / "opencode").is_dir(),
        skills_dir=lambda: xdg_config() / "opencode" / "skills",
    ),
    Client(
        "windsurf", "Windsurf", "mcpServers", plain_shape,
        user_path=lambda: home() / ".codeium" / "windsurf" / "mcp_config.json",
        project_path=None,
        detect=lambda _: (home() / ".codeium" / "windsurf").is_dir(),
    ),
    Client(
        "zed", "Zed", "context_servers", plain_shape,
        user_path=lambda: zed_config_dir() / "settings.json",
        project_path=lambda root: root / ".zed" / "settings.json",
        detect=lambda _: _on_path("zed", "zeditor") or zed_config_dir().is_dir(),
    ),
    Client(
        "visualstudio", "Visual Studio", "servers", stdio_shape, mirror="mcpServers",
        user_path=lambda: home() / ".mcp.json",
        project_path=lambda root: _solution_dir(root) / ".mcp.json",
        detect=lambda root: has_solution(Path.cwd()) or has_solution(root),
        copilot=True,
    ),
)  # fmt: skip

BY_ID = {client.id: client for client in CLIENTS}
CLIENT_IDS = tuple(BY_ID)


def get(client_id: str) -> Client:
    """The client named ``client_id``; a one-line usage error naming the valid ids."""
    client = BY_ID.get(client_id.strip().lower())
    if client is None:
        raise UsageError(f"unknown client {client_id!r} — use one of: {', '.join(CLIENT_IDS)}")
    return client


def project_root(start: Path | None = None) -> Path:
    """The folder project-level configs belong in: the git worktree root, else the cwd.

    Found by walking up for ``.git`` (a folder, or a file in a linked worktree); no git
    library is loaded for it.
    """
    here = (start or Path.cwd()).absolute()
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return folder
    return here
