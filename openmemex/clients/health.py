"""Doctor's view of the wiring: for each client config that names open-memex, will the
editor be able to start it, and against this data root?"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from . import fileio, jsonconf, wiring
from .entry import is_our_args, same_data_root
from .registry import CLIENTS, Client, project_root


def doctor_checks() -> list[tuple[str, bool, str]]:
    """(name, ok, detail) per wired client config, user level and this project's.

    A config we cannot read (JSONC we do not parse, not UTF-8) is a note: ok is True and the
    detail starts with "note:". A leftover ``my-o-memory`` entry fails (F30).
    """
    from ..paths import data_root

    root = data_root()
    project = project_root()
    checks: list[tuple[str, bool, str]] = []
    seen: set[tuple[str, Path]] = set()
    for level in ("user", "project"):
        for client in CLIENTS:
            path = client.path(level, project)
            if path is None or (client.id, path) in seen or not path.is_file():
                continue
            seen.add((client.id, path))
            name = f"mcp {client.id}" + (" (project)" if level == "project" else "")
            checks += _check_file(client, path, name, root)
    return checks


def _check_file(client: Client, path: Path, name: str, root: Path) -> list[tuple[str, bool, str]]:
    shown = wiring.display(path)
    try:
        text = fileio.read(path).text
    except (OSError, UnicodeDecodeError) as exc:
        return [(name, True, f"note: could not read {shown} ({exc}) — check it by hand")]
    results: list[tuple[str, bool, str]] = []
    if client.fmt == "json" and jsonconf.read_lenient(text) is None:
        return [(name, True, f"note: {shown} is neither JSON nor JSONC we can read — check it by hand")]
    if wiring.has_legacy(client, text):
        results.append((f"legacy my-o-memory ({client.id})", False,
                        f"{shown} still starts the pre-rename my-o-memory server (a second data root) — "
                        "run `open-memex init` to sweep it"))  # fmt: skip
    entry = wiring.entry_in(client, text)
    if entry is not None:
        results.append((name, *_judge(client, entry, shown, root)))
    return results


def _judge(client: Client, entry: dict[str, Any], shown: str, root: Path) -> tuple[bool, str]:
    if client.id == "opencode":
        argv = entry.get("command")
        argv = argv if isinstance(argv, list) and argv else [argv]
        command, args, env = argv[0], list(argv[1:]), entry.get("environment")
    else:
        command, args, env = entry.get("command"), entry.get("args", []), entry.get("env")
    problems, notes = [], []
    if not isinstance(command, str) or not command:
        problems.append("no command")
    elif os.path.isabs(command):
        if not (os.path.isfile(command) and os.access(command, os.X_OK)):
            problems.append(f"{command} does not exist or is not executable")
    elif shutil.which(command):
        notes.append(f"{command} is found on this shell's PATH; an editor started from the desktop may not see it")
    else:
        problems.append(f"{command} is not an absolute path and is not on PATH")
    if not is_our_args(args):
        problems.append(f'args are {args!r}, expected ["mcp"]')
    home = env.get("OPEN_MEMEX_HOME") if isinstance(env, dict) else None
    if isinstance(home, str) and home and not same_data_root(os.path.expanduser(home), str(root)):  # a symlink is one root
        problems.append(f"OPEN_MEMEX_HOME is {home}, but this shell uses {root} (two data roots)")
    if client.id == "opencode" and entry.get("enabled") is False:
        notes.append("disabled in the config")
    if problems:
        return False, f"{shown}: {'; '.join(problems)} — run `open-memex init --force --client {client.id}`"
    return True, f"{shown}: {command} {' '.join(map(str, args))}" + "".join(f" ({note})" for note in notes)
