"""Environment variables that would point open-memex or git at something other than a
benchmark's temp store; every benchmark script unsets them (one list, not one per script)."""

from __future__ import annotations

ISOLATE_ENV = (
    "OPEN_MEMEX_CONFIG",
    "MY_O_MEMORY_HOME",
    "MY_O_MEMORY_CONFIG",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_CONFIG_GLOBAL",
    "XDG_DATA_HOME",
)
