"""Agent-facing commands: the MCP server (imported only when it runs: the SDK costs ~0.8 s)."""

from __future__ import annotations

import sys
from typing import Annotated

from cyclopts import Parameter

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
    if project_dir is not None and "${" in project_dir:
        # the editor did not expand its variable: serve the folder it started us in
        sys.stderr.write(f"open-memex mcp: --project-dir {project_dir!r} was not expanded by the client; "
                         "using the folder the server started in\n")  # fmt: skip
        project_dir = None
    if project_dir is not None:
        where = Path(project_dir).expanduser()
        if not where.is_dir():
            raise UsageError(f"--project-dir {project_dir!r} is not a folder — pass the project's folder, "
                             "or leave it out to use the folder the server starts in")  # fmt: skip
    if sys.stdin is None or sys.stdin.isatty():
        sys.stderr.write("open-memex mcp: speaking MCP on stdio (an editor launches this; Ctrl-C to stop)\n")
    return serve(where)


def hook(event: str, /) -> int:
    """Run an agent-host hook (Claude Code, Codex): the event's JSON on stdin, the host's JSON on stdout.

    session-start injects the memories relevant to where the session starts (within the
    injectTokens budget); user-prompt saves keyword captures ("remember that …") and tells
    the agent they are stored; stop tells you what was saved during the turn. Installed by
    `open-memex init --client claude|codex`. A hook never fails the session: problems are
    one line on stderr and exit 0.

    Parameters
    ----------
    event
        session-start, user-prompt or stop.
    """
    from ..hooks import run

    return run(event)


def capture(text: str, /, *, dry_run: Annotated[bool, Parameter(negative="")] = False) -> int:
    """Show what keyword capture would save from TEXT (needs --dry-run).

    Triggers: remember / note / don't forget that / TIL / save this:, and 记住 / 记一下 /
    别忘了： / 帮我们记 (project), remember for me / help me remember / 记住我 / 帮我记 /
    替我记 / 我觉得 / 我喜欢 (personal). Narration ("remind me to", 记得) never triggers.

    Parameters
    ----------
    text
        A user message, as typed.
    dry_run
        Only show the captures and the matches that were dropped (and why).
    """
    from ..capture import scan, shown
    from ..errors import UsageError

    if not dry_run:
        raise UsageError("capture only previews: add --dry-run (captures happen in the user-prompt hook)")
    found = scan(text)
    from ..context import Context
    from ..write import clean

    ctx = Context.load()
    for hit in found.hits:
        stored = clean(ctx, hit.body)
        out(f"- pattern: {hit.pattern}")
        out(f"  scope: {'personal (forced by pattern)' if hit.personal else 'current project'}")
        out(f"  secret hit: {'yes (' + ', '.join(stored.rules) + ') — will be masked' if stored.rules else 'no'}")
        out(f"  body: {stored.text[:160]}")
    for drop in (shown(ctx, d) for d in found.dropped):
        why = f"is {len(drop.body)} chars (floor: 3)" if drop.reason == "too-short" else "is over 2000 chars"
        out(f"! matched but NOT captured: body \"{drop.body}\" {why} — pattern {drop.pattern}")
    if not found.hits and not found.dropped:
        out("no keyword triggers - nothing would be captured.")
    return 0
