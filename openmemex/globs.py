"""Gitignore-style path globs: ``scanExclude`` (config), the paths ``scan`` leaves out.

A gate that fails on a file it cannot read (a dump over 5 MB, ``scan.MAX_BYTES``) needs a
way to leave one legitimate file out without ``--no-verify`` on the whole commit; the
people who write ``.gitignore`` files already know this syntax, so the setting speaks it
(the subset that makes sense for a list of exclusions):

* ``*`` and ``?`` match within one path segment, ``[a-z]`` / ``[!a-z]`` a character class,
  ``\\`` escapes the next character;
* a pattern without a ``/`` (``*.sql``, ``fixtures``) matches a name at any depth; one with a
  ``/`` at its start or in its middle (``/dump.sql``, ``data/*.sql``) is anchored at the
  repository's top (outside one, the current folder);
* a trailing ``/`` (``vendor/``) matches folders only; a matched folder excludes everything
  in it;
* ``**/`` at the start matches in every folder, ``/**`` at the end everything inside,
  ``/**/`` zero or more folders.

Negation (``!keep.sql``) is refused rather than half-supported: in a list that only removes
files from a security gate, "exclude all but" is a pattern better written as what it
excludes. Compiled with :mod:`re` only, so a hook that loads it stays fast.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Glob:
    """One compiled pattern; ``pattern`` is kept as written, for the report."""

    pattern: str
    regex: re.Pattern[str]
    folders_only: bool


def check_pattern(pattern: str) -> str:
    """The pattern, or ``ValueError`` naming what is wrong with it (``config set`` and a
    hand-edited config report it)."""
    if not pattern.strip():
        raise ValueError("an empty pattern matches nothing — remove it")
    if pattern.startswith("!"):
        raise ValueError(f"{pattern!r}: negation (!) is not supported — list only the paths to exclude")
    if pattern.startswith("#"):
        raise ValueError(f"{pattern!r}: starts with # (a comment in .gitignore) — write \\\\# for a name starting with #")
    if pattern.strip("/") == "":
        raise ValueError(f"{pattern!r} would exclude everything — name the files or folders to leave out")
    compile_glob(pattern)
    return pattern


def compile_glob(pattern: str) -> Glob:
    """Translate one gitignore-style pattern into a regex over ``/``-separated relative paths."""
    text = pattern.strip()
    folders_only = text.endswith("/")
    body = text.rstrip("/")
    anchored = "/" in body
    segments = body.lstrip("/").split("/")
    out = "" if anchored else "(?:.*/)?"
    for i, segment in enumerate(segments):
        last = i == len(segments) - 1
        if segment == "**":
            out += ".+" if last else "(?:.*/)?"
            continue
        out += _segment(segment) + ("" if last else "/")
    return Glob(pattern, re.compile(out, re.DOTALL), folders_only)


def _segment(segment: str) -> str:
    """One path segment's regex: ``*``, ``?``, ``[...]`` and ``\\`` escapes."""
    out, i = [], 0
    while i < len(segment):
        ch = segment[i]
        if ch == "\\" and i + 1 < len(segment):
            out.append(re.escape(segment[i + 1]))
            i += 2
            continue
        if ch == "*":
            while i + 1 < len(segment) and segment[i + 1] == "*":
                i += 1  # a ** inside a segment is a *
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[" and (close := _class_end(segment, i)) > 0:
            inner = segment[i + 1 : close]
            negate = inner[:1] in ("!", "^")
            inner = inner[1:] if negate else inner
            out.append("[" + ("^/" if negate else "") + inner.replace("\\", "\\\\").replace("[", "\\[") + "]")
            i = close
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


def _class_end(segment: str, start: int) -> int:
    """Where the character class opened at ``start`` closes, or -1 (then ``[`` is literal)."""
    i = start + 1
    if i < len(segment) and segment[i] in "!^":
        i += 1
    if i < len(segment) and segment[i] == "]":
        i += 1  # []] and [!]]: a ] first in the class is a member
    close = segment.find("]", i)
    return close


class Excluder:
    """The user's ``scanExclude`` globs, asked about one path at a time."""

    def __init__(self, patterns: list[str]) -> None:
        self.globs = tuple(compile_glob(p) for p in patterns)

    def __bool__(self) -> bool:
        return bool(self.globs)

    def match(self, path: str, *, folder: bool = False) -> str | None:
        """The first pattern that excludes ``path`` (relative, ``/``-separated), or None.
        A pattern excludes a path when it matches the path or a folder the path is in."""
        parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
        for glob in self.globs:
            for depth in range(1, len(parts) + 1):
                is_folder = depth < len(parts) or folder
                if glob.folders_only and not is_folder:
                    continue
                if glob.regex.fullmatch("/".join(parts[:depth])):
                    return glob.pattern
        return None
