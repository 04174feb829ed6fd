"""The one server entry every client config carries: how an editor starts ``open-memex mcp``.

Editors launch MCP servers without the user's shell: GUI apps do not inherit PATH, and
client env whitelists drop XDG_DATA_HOME and friends. So the command is an absolute path
and the data root travels explicitly as ``OPEN_MEMEX_HOME`` (notes §5).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path

SERVER_NAME = "open-memex"
LEGACY_NAME = "my-o-memory"  # the pre-rename server key: swept wherever we touch a file (F30)
EXE_NAME = "open-memex"
SERVE_ARGS = ("mcp",)
MODULE_ARGS = ("-m", "openmemex", "mcp")  # the fallback when no console script exists
EXE_PATTERN = re.compile(r"(?:^|.*[/\\])open-memex(?:\.exe)?$")  # our console script, wherever installed


@dataclass(frozen=True)
class ServerEntry:
    """Command, arguments and environment of the stdio server, before a client shapes it."""

    command: str
    args: tuple[str, ...] = SERVE_ARGS
    env: dict[str, str] = field(default_factory=dict)

    @property
    def argv(self) -> list[str]:
        return [self.command, *self.args]


def server_entry() -> ServerEntry:
    """The entry ``init`` writes: this installation's executable, ``mcp``, the data root."""
    from ..paths import data_root

    env = {"OPEN_MEMEX_HOME": str(data_root())}
    exe = find_executable()
    if exe is None:
        return ServerEntry(command=str(Path(sys.executable).absolute()), args=MODULE_ARGS, env=env)
    return ServerEntry(command=exe, args=SERVE_ARGS, env=env)


def find_executable() -> str | None:
    """The absolute path of the ``open-memex`` console script, or None.

    The script installed with the running interpreter comes first: it is the installation
    that ran init. A PATH hit can be another install, or a version-manager shim (pyenv,
    asdf) whose target depends on the directory the editor launches it from.
    """
    names = [EXE_NAME + ".exe", EXE_NAME] if sys.platform == "win32" else [EXE_NAME]
    folders = [Path(sys.executable).parent]
    scripts = sysconfig.get_path("scripts")
    if scripts:
        folders.append(Path(scripts))
    for folder in folders:
        for name in names:
            candidate = folder / name
            if _runnable(candidate):
                return str(candidate.absolute())
    found = shutil.which(EXE_NAME)
    return os.path.abspath(found) if found else None


def same_data_root(a: str, b: str) -> bool:
    """Two spellings of one data root (a symlink, a trailing slash) are the same setup."""
    return os.path.realpath(a) == os.path.realpath(b)


def _runnable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def is_our_args(args: object) -> bool:
    """Whether a config's args start our server: ``mcp`` (or ``-m openmemex mcp``), optionally
    followed by ``--project-dir DIR`` (docs/mcp.md suggests it for VS Code and Cursor)."""
    if not isinstance(args, list):
        return False
    for head in (SERVE_ARGS, MODULE_ARGS):
        if tuple(args[: len(head)]) == head:
            rest = args[len(head) :]
            return not rest or (len(rest) == 2 and rest[0] == "--project-dir" and isinstance(rest[1], str))
    return False


def runs_our_server(command: object, args: object) -> bool:
    """Whether a config's command and args start ``open-memex mcp``: our console script from
    any install (one that moved leaves its old path behind) or a Python with ``-m openmemex``."""
    if not (isinstance(command, str) and is_our_args(args)):
        return False
    assert isinstance(args, list)
    return EXE_PATTERN.match(command) is not None or tuple(args[:2]) == MODULE_ARGS[:2]
