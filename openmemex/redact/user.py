"""The user's own redaction settings: extra patterns, an allowlist and the inline marker.

``redactPatterns`` (config) are extra regexes to mask. ``redactAllowlist`` (config) holds
values that must never be masked: each entry is an exact value or a regex that matches
the whole value. A line containing ``open-memex:allow`` is exempt: the way to keep a
deliberate false positive (an example key in a how-to note) without weakening a rule.

``UserRules`` is what ``Config.redact_patterns`` returns: a tuple of the patterns that also
carries the allowlist, so every caller that passes the config's patterns to ``redact`` or
``find_secrets`` honours the allowlist without a second argument.

The user's regexes run under a time limit (``USER_TIMEOUT_S``): one that backtracks without
end (``(a|aa)+$``) on some text would hang every write, and a hook until its host kills it.
``re`` cannot be stopped mid-match, so they are run by the ``regex`` package, which takes a
``timeout``; a pattern past it stops the command with one line naming it (``PatternTimeout``)
— never skipped, which would let the secret it masks through. Our own rules stay on ``re``.
``regex`` is imported only when the user has such entries: every command's start-up pays
nothing for it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from typing import Any

from openmemex.errors import MemexError
from openmemex.lazyre import LazyPattern

ALLOW_MARKER = "open-memex:allow"

# Honest patterns take well under 0.5 s on a 2 MB text (a 64-character class over a text with
# 20,000 matches: 0.3 s); a hook has 10 s in all. Measured per call, so per pattern and text.
USER_TIMEOUT_S = 2.0


class PatternTimeout(MemexError):
    """A ``redactPatterns``/``redactAllowlist`` entry ran past ``USER_TIMEOUT_S``."""


def timed_out(key: str, pattern: str, size: int) -> PatternTimeout:
    """The one line for a pattern that ran out of time: which, on what, and how to fix it."""
    shown = pattern if len(pattern) <= 80 else pattern[:79] + "…"
    return PatternTimeout(
        f"the {key} entry {shown!r} ran longer than {USER_TIMEOUT_S:g} s on a {size:,}-character text (it "
        "backtracks without end, e.g. a repeat inside a repeat such as (a|aa)+) — the command stopped; simplify "
        f"it or take it out: `open-memex config get {key}`, then `open-memex config set {key} '[…]'` without it"
    )


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
    # an entry that is not a regular expression is an exact value only
    regexes = [(entry, rx) for entry in entries if (rx := compile_user(entry)) is not None]

    def allowed(value: str) -> bool:
        if value in exact:
            return True
        for entry, rx in regexes:
            try:
                if rx.fullmatch(value, timeout=USER_TIMEOUT_S):
                    return True
            except TimeoutError:
                raise timed_out("redactAllowlist", entry, len(value)) from None
        return False

    return allowed


@lru_cache(maxsize=256)
def compile_user(pattern: str) -> Any:
    """A user's regex as the ``regex`` package compiles it (matching takes a ``timeout``), or
    None when it is no regular expression. A pattern ``re`` reads means what ``re`` says."""
    import regex

    try:
        return regex.compile(as_re_reads(pattern), regex.V0)
    except (regex.error, OverflowError, RecursionError, ValueError, TypeError):
        return None


def pattern_problem(pattern: str) -> str | None:
    """Why ``pattern`` cannot be a user regex (None: it can) — ``config set``'s check."""
    import regex

    try:
        regex.compile(as_re_reads(pattern), regex.V0)
    except (regex.error, OverflowError, RecursionError, ValueError, TypeError) as exc:
        return str(exc)
    return None


# re's reading of a brace: a repeat only in exactly these forms; any other "{" is a literal
_RE_REPEAT = LazyPattern(r"\{[0-9]*(?:,[0-9]*)?\}")  # compiled on first use, not at every import


def as_re_reads(pattern: str) -> str:
    """``pattern`` spelt so that ``regex`` (VERSION0, ``re``'s syntax) reads it as ``re``
    does, so a pattern that worked before still works and matches what it matched. Where
    they part: a brace ``re`` takes for a literal ``{`` (``a{e<=1}``, ``{ 1}`` in verbose
    mode) is fuzzy matching or a repeat to ``regex``, and ``a{e<=1}+`` an error there; such
    a brace is escaped. (``[[:alpha:]]`` stays a POSIX class, as its author meant; ``re``
    read a set of ``[:alph`` and a ``]``.) A pattern ``re`` refuses is ``regex``'s alone
    (``\\p{L}``) and left as it is."""
    if "{" not in pattern:
        return pattern
    import warnings

    with warnings.catch_warnings():  # "possible nested set": a note for authors, not for a check
        warnings.simplefilter("ignore")
        try:
            re.compile(pattern)
        except (re.error, OverflowError, RecursionError, ValueError):
            return pattern
    out: list[str] = []
    at, size = 0, len(pattern)
    while at < size:
        char = pattern[at]
        if char == "\\":
            end = at + 2
            if pattern.startswith("N{", at + 1):  # \N{EM DASH}: a name, not a brace
                close = pattern.find("}", at)
                end = size if close < 0 else close + 1
            out.append(pattern[at:end])
            at = end
            continue
        out.append("\\{" if char == "{" and (pattern[at + 1 : at + 2] == "}" or not _RE_REPEAT.match(pattern, at))
                   else char)  # fmt: skip
        at += 1
    return "".join(out)
