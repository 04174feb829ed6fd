"""init and uninstall: wire open-memex into coding agents, and take it out again.

The rules live in ``openmemex.clients``; this module picks the clients, asks once on a
terminal (never hangs a script: no terminal and no --yes is a usage error), and prints
one line per file touched.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

from cyclopts import Parameter

from .output import Flag, emit_json, note, out

if TYPE_CHECKING:
    from ..clients.registry import Client
    from ..clients.setup import Action

Global = Annotated[bool, Parameter(name="--global", negative="")]
Clients = Annotated[list[str] | None, Parameter(name="--client", consume_multiple=False, negative="")]
NEXT_STEP = 'Next step: `open-memex add "standup is at 9:30"` — then ask your agent what it remembers.'
KINDS = {"mcp": "MCP server", "hooks": "hooks", "skill": "skill", "instructions": "instructions", "marker": "first-run marker"}


def init(*, client: Clients = None, project: Flag = False, global_: Global = False, force: Flag = False,
         yes: Flag = False, json: Flag = False) -> int:  # fmt: skip
    """Wire open-memex into your coding agents.

    Adds the open-memex MCP server to each client's config (merged, never clobbered: other
    servers and settings stay), installs the open-memex agent skill, and adds a memory
    section to your Copilot instructions. Without --client it wires every client it finds
    installed and asks once on a terminal. Config files with comments (JSONC) are left
    untouched and the snippet to paste is printed. Safe to run again. With --project, the
    skill and the instructions (user-level by design) are not written.

    Parameters
    ----------
    client
        Only this client (repeatable): vscode, cursor, claude, codex, opencode, windsurf, zed, visualstudio.
    project
        Write this project's config files (.vscode/mcp.json, .mcp.json, …), not your user-level ones.
    global_
        Write your user-level config files (the default).
    force
        Replace an open-memex entry that differs from this one, and a skill you changed.
    yes
        Do not ask: wire every client found.
    json
        Print one JSON document of the actions.
    """
    from ..clients import fileio, marker, receipt, registry, setup
    from ..errors import MemexError, UsageError

    if project and global_:
        raise UsageError("--project and --global exclude each other — pick one")
    level = "project" if project else "user"
    root = registry.project_root()
    if client:
        chosen = _named(client)
    else:
        chosen = [c for c in registry.CLIENTS if c.detect(root)]
        if not chosen:
            raise MemexError("found no coding agent on this machine — name one: open-memex init --client claude "
                             f"(clients: {', '.join(registry.CLIENT_IDS)})")  # fmt: skip
        if not yes and not _ask(chosen, "Wire open-memex into", "init"):
            with contextlib.suppress(OSError, MemexError):
                marker.write_marker([], declined=True)
            note("nothing changed; the tip will not be shown again — run `open-memex init` any time")
            return 0
    # the record of what init changes must be writable before any other program's file is
    # touched, and is read, merged and written back under the lock (two inits at once)
    marker.check_writable()
    with marker.locked():
        with fileio.noting_folders() as made:
            actions = setup.init(chosen, level=level, project=root, force=force)
        failed = any(a.action == "failed" for a in actions)
        had = marker.read_files()
        files = dict(had)
        had_folders = marker.read_folders()
        folders = (had_folders or set()) | {str(folder) for folder in made} if made else had_folders
        for action in actions:
            if action.receipt is not None and action.path is not None:
                receipt.note(files, action.path, action.part, action.receipt)
                for other in action.adopt:  # what that data root's init made here is this one's to undo now
                    receipt.adopt(files, action.path, action.part, marker.read_files(Path(other)))
        if not failed or files != had or made:  # what init changed is recorded even when a file failed
            path = marker.marker_path()
            existed = path.exists()
            try:
                if marker.write_marker([c.id for c in chosen], files=files, folders=folders):
                    actions.append(setup.Action("", "marker", path, "updated" if existed else "added"))
            except OSError as exc:
                failed = True
                actions.append(setup.Action("", "marker", path, "failed", f"{exc.strerror or exc} — check the data root"))
    if json:
        emit_json({"command": "init", "level": level, "clients": [c.id for c in chosen],
                   "actions": [a.to_json() for a in actions], "ok": not failed, "next_step": NEXT_STEP})  # fmt: skip
        return 1 if failed else 0
    _print(actions)
    if any(a.action in ("added", "updated") and a.kind == "mcp" for a in actions):
        out("Restart (or reload) the agents above so they start the server.")
    out(NEXT_STEP)
    return 1 if failed else 0


def uninstall(*, client: Clients = None, project: Flag = False, global_: Global = False, yes: Flag = False,
              json: Flag = False) -> int:  # fmt: skip
    """Remove what init wrote; memory data is never touched.

    Takes the open-memex entry init writes for this data root (and a legacy my-o-memory
    one) out of each client's config, and only what init added with it: an entry init
    called different stays, and so do sections, files and folders that were there before init.
    Removes the skill init installed (not one you changed) and the Copilot memory section.
    Without --project or --global it cleans both levels. Without --client it cleans every
    client that has something of ours, and asks once on a terminal.

    Parameters
    ----------
    client
        Only this client (repeatable): vscode, cursor, claude, codex, opencode, windsurf, zed, visualstudio.
    project
        Only this project's config files.
    global_
        Only user-level files (configs, skills, instructions).
    yes
        Do not ask.
    json
        Print one JSON document of the actions.
    """
    from ..clients import marker, registry, setup
    from ..errors import UsageError

    if project and global_:
        raise UsageError("--project and --global exclude each other — pick one")
    levels = ["project"] if project else ["user"] if global_ else ["user", "project"]
    root = registry.project_root()
    if client:
        chosen = _named(client)
    else:
        chosen = setup.wired_clients(root)
        if chosen and not yes and not _ask(chosen, "Remove open-memex from", "uninstall"):
            note("nothing changed")
            return 0
    # with a record to settle, it must be writable before any file is touched (as for init),
    # and it is read and written back under the lock; without one there is nothing to lock
    recorded = marker.marker_path().exists()
    if recorded:
        marker.check_writable()
    with marker.locked() if recorded else contextlib.nullcontext():
        files = marker.read_files()
        folders = marker.read_folders()
        actions = setup.uninstall(chosen, levels=levels, project=root, files=files, folders=folders)
        failed = any(a.action == "failed" for a in actions)
        left = any(a.action == "manual" for a in actions)  # ours may still be in a file we could not edit
        path = marker.marker_path()
        try:
            if not (failed or left) and "user" in levels and not setup.wired_clients(root):
                if marker.remove_marker():
                    actions.append(setup.Action("", "marker", path, "removed"))
            else:
                marker.save_files(files, None if folders is None else {f for f in folders if Path(f).is_dir()})
        except OSError as exc:
            failed = True
            actions.append(setup.Action("", "marker", path, "failed", f"{exc.strerror or exc} — check the data root"))
    if json:
        emit_json({"command": "uninstall", "levels": levels, "clients": [c.id for c in chosen],
                   "actions": [a.to_json() for a in actions], "ok": not failed})  # fmt: skip
        return 1 if failed else 0
    if not actions:
        out("nothing of open-memex found in any client config")
    _print(actions)
    if actions:
        out("Memory data was not touched (`open-memex where` shows it).")
    return 1 if failed else 0


def _named(ids: list[str]) -> list[Client]:
    from ..clients import registry

    chosen: list[Client] = []
    for client_id in ids:
        for part in client_id.split(","):
            found = registry.get(part)
            if found not in chosen:
                chosen.append(found)
    return chosen


def _ask(chosen: list[Client], question: str, command: str) -> bool:
    """One confirmation on a terminal; without one, a usage error naming the way out."""
    from ..errors import UsageError

    names = ", ".join(f"{c.label} ({c.id})" for c in chosen)
    if not (_isatty(sys.stdin) and _isatty(sys.stderr)):
        raise UsageError(f"found {names}; not a terminal, so nothing was written — "
                         f"pass --yes to go ahead, or pick with `open-memex {command} --client ID`")  # fmt: skip
    sys.stderr.write(f"{question} {names}? [Y/n] ")
    sys.stderr.flush()
    answer = sys.stdin.readline()
    return answer != "" and answer.strip().lower() in ("", "y", "yes")


def _isatty(stream: object) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False


def _print(actions: list[Action]) -> None:
    from ..clients.wiring import display

    for action in actions:
        where = display(action.path) if action.path else "-"
        level = " (project)" if action.level == "project" else ""
        line = f"  {action.action:<8} {action.client or '-':<13} {KINDS[action.kind] + level:<22} {where}"
        out(line + (f" — {action.detail}" if action.detail else ""))
        if action.snippet:
            out(f"    add this to {where} yourself:")
            for snippet_line in action.snippet.splitlines():
                out("      " + snippet_line)
