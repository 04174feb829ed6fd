"""Agent-facing commands: the MCP server (imported only when it runs: the SDK costs ~0.8 s)."""

from __future__ import annotations

import sys

from .output import out


def mcp(*, print_config: str | None = None, project_dir: str | None = None) -> int:
    """Run the MCP server on stdio (what an editor launches), or print a client's config.

    stdout carries only the protocol; diagnostics go to stderr.

    Parameters
    ----------
    print_config
        Print the config snippet for this client instead of serving: vscode, cursor,
        claude, codex, opencode, windsurf, zed or visualstudio.
    project_dir
        The project this session works in (default: the folder the client starts the
        server in). For clients that start servers outside the workspace, e.g.
        "${workspaceFolder}" in VS Code or Cursor.
    """
    if print_config is not None:
        from ..clients import config_snippet

        out(config_snippet(print_config))
        return 0
    from pathlib import Path

    from ..errors import UsageError
    from ..server.app import serve

    where = None
    if project_dir is not None:
        where = Path(project_dir).expanduser()
        if not where.is_dir():
            raise UsageError(f"--project-dir {project_dir!r} is not a folder — pass the project's folder, "
                             "or leave it out to use the folder the server starts in")  # fmt: skip
    if sys.stdin is None or sys.stdin.isatty():
        sys.stderr.write("open-memex mcp: speaking MCP on stdio (an editor launches this; Ctrl-C to stop)\n")
    return serve(where)
