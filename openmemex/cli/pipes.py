"""The output streams' failures, for the full CLI and the fast paths alike: ending quietly
when stdout's reader goes away (``… | head``), one line when the disk behind it is full, and
no crash on a terminal that cannot show a character. Only the standard library's
already-loaded modules, so the fast paths can share it."""

from __future__ import annotations

import codecs
import contextlib
import errno
import os
import sys

FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def prepare_streams() -> None:
    """A character the encoding cannot carry (``PYTHONIOENCODING=ascii``, a latin-1
    locale) is a backslash escape on stderr and on a terminal — a person reads those. On a
    pipe or a file it stays an error (``encoding_refused``): an export must not come out
    silently altered."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is None or (stream is sys.stdout and not _isatty(stream)):
            continue
        with contextlib.suppress(ValueError, OSError):  # a closed or unusual stream: leave it
            reconfigure(errors="backslashreplace")


def _codec(name: str) -> str:
    try:
        return codecs.lookup(name).name
    except LookupError:
        return name


def _isatty(stream: object) -> bool:
    try:
        return bool(stream.isatty())  # type: ignore[attr-defined]
    except (ValueError, OSError, AttributeError):
        return False


def encoding_refused(exc: BaseException) -> int | None:
    """stdout (a pipe or a file) cannot carry the text in its encoding: one line naming the
    fix, exit 1, nothing half-written passed off as complete. Not for a lone surrogate: no
    encoding or locale carries one, so blaming the output's would name a fix that does not
    work — every output path escapes them (``terminal.safe``, ``json_text``, SARIF's URIs)."""
    encoding = str(getattr(sys.stdout, "encoding", "") or "")
    if not isinstance(exc, UnicodeEncodeError) or not encoding or _codec(exc.encoding) != _codec(encoding):
        return None
    if all("\ud800" <= ch <= "\udfff" for ch in exc.object[exc.start : exc.end]):
        return None  # a lone surrogate (undecodable bytes, a file name) fits no encoding: our bug, not the output's
    sys.stderr.write(f"open-memex: error: the output's encoding ({encoding}) cannot carry this text — "
                     "set PYTHONIOENCODING=utf-8 or use a UTF-8 locale\n")  # fmt: skip
    output_closed()
    return 1


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


def finish(code: int) -> int:
    """Flush stdout while a closed pipe or a full disk can still be told apart from a bug
    (the last write of every command, full CLI and fast paths alike)."""
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
    except BrokenPipeError:
        code = output_closed()
    except OSError as exc:
        full = disk_full(exc)
        if full is None:
            raise
        code = full
    return code
