"""Where things live: the data root and the files under it (SPEC §3)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from .model import PERSONAL_KEY

__all__ = ["PERSONAL_KEY"]
DEFAULT_MEMORY_DIR = ".ai/open-memex"


def data_root() -> Path:
    """``OPEN_MEMEX_HOME`` > legacy ``MY_O_MEMORY_HOME`` > the platform data dir (D62)."""
    for var in ("OPEN_MEMEX_HOME", "MY_O_MEMORY_HOME"):
        value = os.environ.get(var)
        if value:
            return Path(value).expanduser().absolute()
    if sys.platform == "win32" and os.environ.get("APPDATA"):
        return Path(os.environ["APPDATA"]) / "open-memex"
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg) if xdg else Path.home() / ".local" / "share"
    return (base / "open-memex").absolute()


def data_root_source() -> str:
    for var in ("OPEN_MEMEX_HOME", "MY_O_MEMORY_HOME"):
        if os.environ.get(var):
            return var
    return "default"


def memories_root(root: Path) -> Path:
    return root / "memories"


def scope_dir(root: Path, scope_key: str) -> Path:
    """Personal memories and each project's outbox: ``memories/<scope_key>/``."""
    return memories_root(root) / scope_key


def index_path(root: Path) -> Path:
    return root / "index.db"


def config_path(root: Path) -> Path:
    override = os.environ.get("OPEN_MEMEX_CONFIG") or os.environ.get("MY_O_MEMORY_CONFIG")
    return Path(override).expanduser() if override else root / "config.json"


def manpath() -> Path:
    """The folder holding git-memex.1, for MANPATH (``where`` and ``doctor`` name it)."""
    return Path(__file__).resolve().parent / "man"
