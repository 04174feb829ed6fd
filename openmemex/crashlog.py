"""Where our own bugs go: the traceback into ``<data root>/logs/crash.log``, one line to
the user (every surface: CLI, MCP server, hooks)."""

from __future__ import annotations

import traceback
from pathlib import Path


def write(exc: BaseException) -> Path | None:
    """Append the traceback; the log's path, or None when it cannot be written."""
    from .paths import data_root

    log = data_root() / "logs" / "crash.log"
    try:
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("a", encoding="utf-8", errors="backslashreplace") as fh:
            fh.write("".join(traceback.format_exception(exc)) + "\n")
    except OSError:
        return None
    return log


def summary(exc: BaseException) -> str:
    """The one line a user sees for a bug of ours."""
    log = write(exc)
    where = f"; details in {log}" if log is not None else ""
    return f"internal error: {type(exc).__name__}: {exc}{where}"
