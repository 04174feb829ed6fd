"""Running one tool call against the store, the same way for every tool.

Tools run on the SDK's worker threads, several at once. Each call gets its own
``Context`` (its own SQLite connection; ≈ 0.5 ms), so config edits and a newly added
``origin`` are seen without a restart, and the core's cross-process scope locks do the
rest — the server adds no lock of its own. One ``FolderWatch`` is shared: it tells every
call which files changed since the index last looked, instead of a stat scan per call.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from ..context import Context
from ..errors import IndexDamaged, MemexError, repository_refused
from ..folderwatch import FolderWatch
from ..terminal import safe

T = TypeVar("T")
log = logging.getLogger("open-memex.mcp")


class ToolFailure(Exception):
    """A call that failed in a way the agent can act on; the text names the next step."""


class Session:
    """What the server knows across calls: where it runs and the folder watcher."""

    def __init__(self, cwd: Path, watch: FolderWatch | None) -> None:
        self.cwd = cwd
        self.watch = watch

    @classmethod
    def start(cls, cwd: Path | None = None, watch: bool = True) -> Session:
        from ..paths import data_root

        here = (cwd or Path.cwd()).absolute()
        return cls(here, FolderWatch.start(data_root()) if watch else None)

    def close(self) -> None:
        if self.watch is not None:
            self.watch.close()

    def context(self, warnings: list[str]) -> Context:
        def warn(message: str) -> None:
            warnings.append(message)
            sys.stderr.write(f"open-memex: {safe(message)}\n")

        ctx = Context.load(cwd=self.cwd, warn=warn)
        ctx.watch = self.watch
        return ctx

    def run(self, work: Callable[[Context], T]) -> tuple[T, list[str]]:
        """``work(ctx)`` with a damaged index rebuilt and the call made once more (the core
        raises ``IndexDamaged`` only when nothing was written yet); a user-fixable failure
        becomes ``ToolFailure`` with its one line; our own bugs go to the crash log."""
        warnings: list[str] = []
        for attempt in (0, 1):
            try:
                with self.context(warnings) as ctx:
                    return work(ctx), warnings
            except IndexDamaged:
                if attempt:
                    raise ToolFailure("the index was damaged twice in a row; run `open-memex doctor`") from None
            except MemexError as exc:
                raise ToolFailure(str(exc)) from None
            except Exception as exc:
                refused = repository_refused(exc)
                if refused is not None:
                    raise ToolFailure(refused) from None
                from ..crashlog import summary

                line = summary(exc)
                log.error("%s", line)
                raise ToolFailure(line) from None
        raise AssertionError("unreachable")
