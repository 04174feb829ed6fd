"""A minimal progress bar on stderr for long work; silent when stderr is not a terminal."""

from __future__ import annotations

import sys
import time
from types import TracebackType


class Progress:
    def __init__(self, label: str) -> None:
        self.label = label
        self.enabled = sys.stderr.isatty()
        self._last = 0.0
        self._shown = False

    def update(self, done: int, total: int) -> None:
        if not self.enabled or total <= 0:
            return
        now = time.monotonic()
        if done < total and now - self._last < 0.1:
            return
        self._last = now
        width = 30
        filled = int(width * done / total)
        sys.stderr.write(f"\r{self.label} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
        if done >= total:
            sys.stderr.write("\n")
            self._shown = False
        else:
            self._shown = True
        sys.stderr.flush()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        if self._shown:
            sys.stderr.write("\n")
