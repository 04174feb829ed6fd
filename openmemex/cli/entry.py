"""The console scripts' entry point: the hot commands take paths that skip the CLI framework.

``open-memex hook …`` runs on every prompt of every agent session, ``scan`` / ``check`` on
every commit (the pre-commit hooks), and ``search`` / ``list`` / ``show`` / ``where`` are what
agents and people ask all day, so none of them may pay for cyclopts and rich (≈ 100 ms)
before it can answer (issue 11). Every other command line — including ``--help``, ``-h``
and anything ``shared.fast`` / ``reads.fast`` does not recognise — goes to the full CLI
unchanged, and so does every command line when ``OPEN_MEMEX_NO_FASTPATH`` is set (the tests
run both ways and compare).
"""

from __future__ import annotations

import os
import sys

from .pipes import prepare_streams

_READS = frozenset({"search", "list", "show", "where"})


def _hook(argv: list[str]) -> int | None:
    if not argv or os.environ.get("OPEN_MEMEX_NO_FASTPATH"):
        return None
    if len(argv) == 2 and argv[0] == "hook" and not argv[1].startswith("-"):
        from ..hooks import run

        return run(argv[1])
    if argv[0] in ("scan", "check"):
        from .shared import fast

        return fast(argv)
    if argv[0] in _READS:
        from .reads import fast as read

        return read(argv)
    return None


def main() -> None:
    """``open-memex …`` and ``git memex …`` alike (git runs the latter from the user's own
    folder, so nothing differs once we are started). Ctrl-C while the modules load (the full
    CLI's take a tenth of a second and more) ends as it does later: one line, exit 130."""
    try:
        prepare_streams()
        code = _hook(sys.argv[1:])
        if code is None:
            from .app import main as full

            full()
            return
    except KeyboardInterrupt:
        sys.stderr.write("open-memex: interrupted\n")
        code = 130
    sys.exit(code)


git_main = main  # the git-memex console script
