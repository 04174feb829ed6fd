"""Agent-facing commands: the MCP server (imported only when it runs: the SDK costs ~0.8 s)."""

from __future__ import annotations

import sys

from .output import out


def mcp(*, print_config: str | None = None) -> int:
    """Run the MCP server on stdio (what an editor launches), or print a client's config.

    stdout carries only the protocol; diagnostics go to stderr.

    Parameters
    ----------
    print_config
        Print the config snippet for this client instead of serving: vscode, cursor,
        claude, codex, opencode, windsurf, zed or visualstudio.
    """
    if print_config is not None:
        from ..clients import config_snippet

        out(config_snippet(print_config))
        return 0
    from ..server.app import serve

    if sys.stdin is None or sys.stdin.isatty():
        sys.stderr.write("open-memex mcp: speaking MCP on stdio (an editor launches this; Ctrl-C to stop)\n")
    return serve()
