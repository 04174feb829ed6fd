"""The output streams' failures, for the full CLI and the fast paths alike: ending quietly
when stdout's reader goes away (``… | head``), one line when the disk behind it is full, and
no crash on a terminal that cannot show a character. Only ``errno``, ``os`` and ``sys``, so
the fast paths can share it."""

from __future__ import annotations

import contextlib
import errno
import os
import sys

FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def prepare_streams() -> None:
    """A character the terminal's encoding cannot show (``PYTHONIOENCODING=ascii``, a C
    locale) is written as a backslash escape instead of ending the command in a traceback."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(ValueError, OSError):  # a closed or unusual stream: leave it
                reconfigure(errors="backslashreplace")


def disk_full(exc: BaseException) -> int | None:
    """A write failed because the disk (or quota) behind it is full — stdout sent to a full
    disk, or a memory file that cannot be written: one line and exit 1, not a crash."""
    if not isinstance(exc, OSError) or exc.errno not in FULL:
        return None
    sys.stderr.write(f"open-memex: error: {exc.strerror or 'no space left'} — free some space, or send the output elsewhere\n")
    output_closed()
    return 1

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
