"""The fast paths' command-line reader: plain command lines only, anything else is None.

``entry.py`` answers the hot commands (``scan`` / ``check`` for pre-commit, ``search`` /
``list`` / ``show`` / ``where`` for agents and people) without cyclopts and rich. It may only
do so where it reads the command line exactly as cyclopts would; so this reader accepts a
narrow form — known options given once, ``--opt value`` or ``--opt=value``, flags without a
value, positionals not starting with ``-`` (or after ``--``) — and returns None for
everything else (help, the version, an unknown or repeated option, a missing value, a flag
given a value, too many or too few positionals, an argument that is not valid UTF-8), so the
full CLI parses it and its help and errors read as everywhere else. After ``--`` every
argument is a positional, ``--help`` too: pre-commit hooks end their entry with ``--``, and
a committed file named ``--help`` is a file to scan (cyclopts reads it the same way).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .tip import HELP_FLAGS


class Spec:
    """One command's plain form: ``flags`` map an option to (parameter, value), ``options``
    map one to (parameter, conversion — None when the value is not plain); ``positionals``
    is how many positional arguments (min, max; max None for any number). A plain class, not
    a dataclass: building one costs an ``exec`` at import, on every fast start."""

    __slots__ = ("flags", "options", "positionals")

    def __init__(self, flags: Mapping[str, tuple[str, Any]] | None = None,
                 options: Mapping[str, tuple[str, Callable[[str], Any | None]]] | None = None,
                 positionals: tuple[int, int | None] = (0, 0)) -> None:  # fmt: skip
        self.flags = flags or {}
        self.options = options or {}
        self.positionals = positionals


def text(value: str) -> str:
    return value


def count(value: str) -> int | None:
    """A plain decimal count; signs, other bases and decimals (which cyclopts also accepts,
    ``0x10``, ``3.7``) are left to it."""
    return int(value) if value.isascii() and value.isdigit() else None


def parse(tokens: list[str], spec: Spec) -> tuple[list[str], dict[str, Any]] | None:
    """``(positionals, {parameter: value})`` for a plain command line, else None."""
    options = tokens[: tokens.index("--")] if "--" in tokens else tokens
    if not HELP_FLAGS.isdisjoint(options) or not all(map(_utf8, tokens)):
        return None  # help or the version before ``--``, undecodable bytes: the full CLI answers
    positionals: list[str] = []
    values: dict[str, Any] = {}
    rest = False
    stream = iter(tokens)
    for token in stream:
        if rest or not token.startswith("-"):
            positionals.append(token)
            continue
        if token == "--":
            rest = True
            continue
        name, eq, value = token.partition("=")
        if name in spec.flags and not eq:
            key, flag = spec.flags[name]
            if key in values:
                return None
            values[key] = flag
            continue
        if name not in spec.options:
            return None
        key, convert = spec.options[name]
        if key in values:
            return None
        if not eq:
            following = next(stream, None)
            if following is None or following.startswith("-"):
                return None
            value = following
        converted = convert(value)
        if converted is None:
            return None
        values[key] = converted
    least, most = spec.positionals
    if len(positionals) < least or (most is not None and len(positionals) > most):
        return None
    return positionals, values


def _utf8(token: str) -> bool:
    """False for a lone surrogate, which is how Python hands over undecodable argv bytes."""
    if token.isascii():
        return True
    try:
        token.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
