"""Ending quietly when stdout's reader goes away (``… | head``), for the full CLI and the
fast paths alike; only ``os`` and ``sys``, so the fast paths can share it."""

from __future__ import annotations

import os
import sys

EXIT_PIPE = 141  # 128 + SIGPIPE: what git and a shell pipeline report for a closed reader


def output_closed() -> int:
    """stdout's reader went away: stop quietly, as git does. stdout is pointed at the null
    device so the interpreter's last flush cannot fail a second time."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, sys.stdout.fileno())
        finally:
            os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass  # not a real file descriptor (in-process runs): nothing left to flush into a pipe
    return EXIT_PIPE
