"""The one-line nudge towards ``init`` (F28), shared by the full CLI and the fast paths.

Only ``sys`` and the marker's path: the read commands' fast path shows it too, without cyclopts.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

PROG = "open-memex"
HELP_FLAGS = frozenset({"--help", "-h", "--version", "-V"})
# init and uninstall are the remedy; mcp and merge-driver are run by programs, not people
_NO_TIP = frozenset({"init", "uninstall", "mcp", "merge-driver", "hook", "scan", "check"})
TIP = f"{PROG}: tip: run `{PROG} init` to wire your coding agents (Claude Code, Codex, Cursor, VS Code, …)"


def first_run_tip(argv: Sequence[str]) -> str | None:
    """The tip's line, or None.

    Shown only to a person: stderr must be a terminal, so scripts, hooks and the MCP server
    stay quiet. Never for help or the version, nor for the commands in ``_NO_TIP``. Costs
    one stat of ``<data root>/.init.json`` (D50), which init writes and uninstall removes.
    """
    if (argv and argv[0] in _NO_TIP) or not HELP_FLAGS.isdisjoint(argv):
        return None
    try:
        if sys.stderr is None or not sys.stderr.isatty():
            return None
        from ..clients.marker import marker_path

        return None if marker_path().exists() else TIP
    except (OSError, ValueError):
        return None
