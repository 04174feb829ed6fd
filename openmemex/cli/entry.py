"""The console scripts' entry point: hooks take a path that skips the CLI framework.

``open-memex hook …`` runs on every prompt of every agent session, and ``scan`` / ``check``
on every commit (the pre-commit hooks), so they must not pay for cyclopts and rich
(≈ 100 ms) before they can answer. Every other command line — including ``hook --help``,
``scan --help`` and anything ``shared.fast`` does not recognise — goes to the full CLI
unchanged.
"""

from __future__ import annotations

import sys


def _hook(argv: list[str]) -> int | None:
    if len(argv) == 2 and argv[0] == "hook" and not argv[1].startswith("-"):
        from ..hooks import run

        return run(argv[1])
    if argv and argv[0] in ("scan", "check"):
        from .shared import fast

        return fast(argv)
    return None


def main() -> None:
    code = _hook(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    from .app import main as full

    full()


def git_main() -> None:
    code = _hook(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    from .app import git_main as full

    full()
