"""Wiring open-memex into coding agents: Claude Code, Codex, Cursor, VS Code, opencode,
Windsurf, Zed and Visual Studio (SPEC §4 items 17–18, D46–D51, D54, F28, F30).

The public surface is small and cheap to import (the CLI's first-run tip imports
``marker`` on every interactive run); everything else loads when called:

- ``config_snippet(client_id)`` — what ``init`` would merge for that client, paste-ready
  (``open-memex mcp --print-config CLIENT``);
- ``doctor_checks()`` — (name, ok, detail) per wired client config;
- ``CLIENT_IDS`` — the ids ``--client`` accepts.

Nothing here imports mcp, pygit2 or github.
"""

from __future__ import annotations

CLIENT_IDS = ("vscode", "cursor", "claude", "codex", "opencode", "windsurf", "zed", "visualstudio")


def config_snippet(client_id: str) -> str:
    """The config ``init`` would merge for ``client_id``, as a paste-ready document.

    JSON clients get a pure JSON document (no comment: ``.claude.json``, Cursor and
    Windsurf files must be strict JSON); Codex gets TOML whose first line is a comment
    naming the file. Raises ``UsageError`` (one line naming the valid ids) for an
    unknown client.
    """
    from .entry import server_entry
    from .registry import get
    from .setup import snippet

    return snippet(get(client_id), server_entry())


def doctor_checks() -> list[tuple[str, bool, str]]:
    """Per wired client config: the command starts (absolute, executable), args are
    ``["mcp"]``, the data root is this one. Unreadable JSONC is a note (ok, "note: …")."""
    from .health import doctor_checks as checks

    return checks()
