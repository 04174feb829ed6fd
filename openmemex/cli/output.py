"""Writing results: people's text and --json documents to stdout, notices to stderr.

Every human-text line goes through :func:`out` or :func:`note`, which pass it through
``terminal.safe``: stored text never reaches a terminal with its control characters raw
(issue 6, item 6). ``emit_json`` is left alone — JSON escapes control characters itself.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from ..terminal import safe

if TYPE_CHECKING:
    from ..context import Context
    from .params import Count as Count
    from .params import Flag as Flag
    from .params import Text as Text


def __getattr__(name: str) -> Any:
    """``Count``, ``Flag`` and ``Text`` (``params.py``), imported when a command module first asks for
    them: the read commands' fast path prints through this module without cyclopts."""
    if name not in ("Count", "Flag", "Text"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import params

    return getattr(params, name)


def open_context() -> Context:
    """The command's Context, with a progress bar for large first reads on a terminal."""
    from ..context import Context
    from .progress import Progress

    ctx = Context.load(warn=warn)
    ctx.progress = Progress("indexing memory files").update
    return ctx


def warn(message: str) -> None:
    """The core's warning, made terminal-safe (a warning may quote a file's content)."""
    from ..index import warn_stderr

    warn_stderr(safe(message))


def out(text: str = "") -> None:
    """One line of people's text on stdout, control characters shown as escapes. Our own
    signs (``→``, ``—``, ``…``) become ASCII where stdout's encoding cannot carry them (an
    ASCII or Latin-1 locale on a pipe), so a command that has made its change does not then
    fail on its own confirmation; text a memory holds still refuses (``pipes``)."""
    sys.stdout.write(fitted(safe(text) + "\n", sys.stdout))


_OUR_SIGNS = str.maketrans({"→": "->", "—": "--", "…": "...", "×": "x", "✓": "ok", "✗": "x"})


def fitted(text: str, stream: object) -> str:
    encoding = getattr(stream, "encoding", None)
    if not encoding:
        return text
    try:
        text.encode(encoding)
    except UnicodeEncodeError:
        return text.translate(_OUR_SIGNS)
    except LookupError:
        pass
    return text


def note(text: str) -> None:
    """One notice on stderr, control characters shown as escapes."""
    sys.stderr.write(safe(text) + "\n")


def out_exact(text: str) -> None:
    """``text`` exactly as given when stdout is a file or pipe; terminal-safe on a terminal."""
    sys.stdout.write(safe(text) if sys.stdout.isatty() else text)


def emit_json(document: Any) -> None:
    """Exactly one JSON document on stdout (SPEC §6)."""
    from ..terminal import json_text  # json is loaded only for --json: a text run never loads it

    sys.stdout.write(json_text(document, indent=2, default=str) + "\n")


def split_list(value: str | None, seps: str = ",") -> list[str]:
    if not value:
        return []
    items = [value]
    for sep in seps:
        items = [part for item in items for part in item.split(sep)]
    return [item.strip() for item in items if item.strip()]
