"""Regular expressions compiled on first use.

CPython compiles a character class over the CJK blocks slowly (``_optimize_charset``): a
few such module-level patterns cost a hook's session start or ``open-memex list`` several
milliseconds at import, though most such processes never use them. ``LazyPattern`` pays
that at the first match instead, and costs nothing after it.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from typing import Any

# re.Pattern's methods a LazyPattern hands over to the compiled pattern once it has one.
_METHODS = ("search", "match", "fullmatch", "sub", "subn", "findall", "finditer", "split")


class LazyPattern:
    """``re.compile(pattern, flags)`` deferred to the first call of one of its methods.

    ``pattern`` and ``flags`` (the flags given, as ``re.compile`` got them: the compiled
    pattern's ``flags`` add inline and default ones) are read without compiling. The first
    call compiles and puts the compiled pattern's bound methods on the instance, so later
    calls go straight to ``re`` with no Python frame in between. Two threads may both
    compile on a first call at once: each gets an equal pattern, which is harmless.
    """

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        self.flags = flags
        self._compiled: re.Pattern[str] | None = None

    def __repr__(self) -> str:
        return f"LazyPattern({self.pattern!r}, {self.flags!r})"

    @property
    def is_compiled(self) -> bool:
        """Whether a method has been used (or ``compiled`` read): what the tests check."""
        return self._compiled is not None

    @property
    def compiled(self) -> re.Pattern[str]:
        """The compiled pattern, compiled now if not yet."""
        compiled = self._compiled
        if compiled is None:
            compiled = re.compile(self.pattern, self.flags)
            # instance attributes shadow the methods below (plain functions, not data
            # descriptors): every later call is the C method itself
            self.__dict__.update({name: getattr(compiled, name) for name in _METHODS})
            self._compiled = compiled
        return compiled

    def search(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled.search(string, pos, endpos)

    def match(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled.match(string, pos, endpos)

    def fullmatch(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled.fullmatch(string, pos, endpos)

    def sub(self, repl: str | Callable[[re.Match[str]], str], string: str, count: int = 0) -> str:
        return self.compiled.sub(repl, string, count)

    def subn(self, repl: str | Callable[[re.Match[str]], str], string: str, count: int = 0) -> tuple[str, int]:
        return self.compiled.subn(repl, string, count)

    def findall(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> list[Any]:
        """As ``re.Pattern.findall`` (typed as typeshed types it: strings or tuples of them,
        by how many groups the pattern has)."""
        return self.compiled.findall(string, pos, endpos)

    def finditer(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> Iterator[re.Match[str]]:
        return self.compiled.finditer(string, pos, endpos)

    def split(self, string: str, maxsplit: int = 0) -> list[str | Any]:
        """As ``re.Pattern.split`` (a group that took no part in a match gives None; typed
        as typeshed types it)."""
        return self.compiled.split(string, maxsplit)
