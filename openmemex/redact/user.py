"""The user's own redaction settings: extra patterns, an allowlist and the inline marker.

``redactPatterns`` (config) are extra regexes to mask. ``redactAllowlist`` (config) holds
values that must never be masked: each entry is an exact value or a regex that matches
the whole value. A line containing ``open-memex:allow`` is exempt: the way to keep a
deliberate false positive (an example key in a how-to note) without weakening a rule.

``UserRules`` is what ``Config.redact_patterns`` returns: a tuple of the patterns that also
carries the allowlist, so every caller that passes the config's patterns to ``redact`` or
``find_secrets`` honours the allowlist without a second argument.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache

ALLOW_MARKER = "open-memex:allow"


class UserRules(tuple[str, ...]):
    """Extra patterns (the tuple itself) plus ``allowlist`` entries."""

    allowlist: tuple[str, ...]

    def __new__(cls, patterns: Iterable[str] = (), allowlist: Iterable[str] = ()) -> UserRules:
        self = super().__new__(cls, tuple(patterns))
        self.allowlist = tuple(allowlist)
        return self

    @staticmethod
    def split(user_patterns: Sequence[str], allowlist: Sequence[str]) -> tuple[Sequence[str], tuple[str, ...]]:
        """Patterns and the combined allowlist of an argument pair of ``find_secrets``."""
        carried = user_patterns.allowlist if isinstance(user_patterns, UserRules) else ()
        return user_patterns, tuple(carried) + tuple(allowlist)

    @staticmethod
    def matcher(entries: tuple[str, ...]) -> Callable[[str], bool] | None:
        """A predicate telling whether a secret value is allowlisted, or None for no entries;
        built once per allowlist, so a bulk scan pays for it once."""
        return _matcher(entries) if entries else None


@lru_cache(maxsize=32)
def _matcher(entries: tuple[str, ...]) -> Callable[[str], bool]:
    exact = frozenset(entries)
    regexes = [rx for rx in map(_compile, entries) if rx is not None]

    def allowed(value: str) -> bool:
        return value in exact or any(rx.fullmatch(value) for rx in regexes)

    return allowed


@lru_cache(maxsize=256)
def _compile(entry: str) -> re.Pattern[str] | None:
    """An allowlist entry as a regex; an entry that is not one is an exact value only."""
    try:
        return re.compile(entry)
    except (re.error, OverflowError, RecursionError, ValueError):
        return None
