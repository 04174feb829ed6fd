"""The frontmatter our writers emit, read without a YAML library (issue 11, item 4).

PyYAML's C loader parses in C but resolves and builds every value in Python, which was
most of what a cold index build spends per file. Frontmatter written by ``memfile`` (or by
the TypeScript original) is a flat list of ``key: value`` lines: plain words, JSON-quoted
strings, ``null``/``true``/``false``, small integers, flow lists of strings, and
``review_history``'s list of small mappings. ``load`` reads exactly that subset and
returns what ``yaml.load`` with the safe loader returns for it; for anything else — a
comment, another quoting style, a YAML 1.1 word such as ``yes``, an anchor, odd spacing —
it returns None and the caller uses libyaml, so hand-edited and hostile files are judged
as before. ``tests/test_memfile.py`` compares the two on generated input.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

_KEY = r"[A-Za-z_][A-Za-z0-9_]{0,63}"  # longer keys go to libyaml (its simple keys end at 1024)
_LINE = re.compile(rf"({_KEY}): (.+)\Z")
_EMPTY = re.compile(rf"({_KEY}):\Z")
_ITEM_FIRST = re.compile(rf"  - ({_KEY}): (.+)\Z")
_ITEM_MORE = re.compile(rf"    ({_KEY}): (.+)\Z")
# A word YAML 1.1 reads as a string: no indicator first, no space, ':' or '#', not a
# number, date or boolean (those start with a digit, a sign or a dot, or are listed below).
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-/@+]*\Z")
# An id (ULID, upper case): digits first, but with a letter it is no YAML number (0x and
# 0b are lower case); all digits, libyaml decides.
_ULID = re.compile(r"[0-7][0-9A-HJKMNP-TV-Z]{25}\Z")
_SPECIAL_WORDS = frozenset(["yes", "no", "true", "false", "on", "off", "null", "y", "n"])
# A JSON string as json.dumps writes it: the escapes YAML's double quotes read the same way
# (no \/ or surrogate escapes, no raw control characters).
_QUOTED = re.compile(r'"(?:[^"\\\x00-\x1f]|\\["\\bfnrt]|\\u(?![dD][89a-fA-F])[0-9a-fA-F]{4})*"\Z')
_ITEM = re.compile(r'("(?:[^"\\\x00-\x1f]|\\["\\bfnrt]|\\u(?![dD][89a-fA-F])[0-9a-fA-F]{4})*"|[A-Za-z_][A-Za-z0-9_.\-/@+]*)(, |\]\Z)')
_INT = re.compile(r"(0|[1-9][0-9]{0,17})\Z")
# What YAML refuses or reads as a line break (PyYAML's reader), and a BOM: libyaml decides.
_UNUSUAL_CLASS = "[^\x0a\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]"


@functools.cache
def _unusual() -> re.Pattern[str]:
    """Compiled on first parse, not at import: the class costs ~5 ms to compile, and a warm
    read (the CLI's fast path) parses no file."""
    return re.compile(_UNUSUAL_CLASS)
_MISSING = object()
# Whole ``key: value`` lines already read, with their scalar value: most lines of a store's
# files are the same few ("status: active", "supersedes: null"), and a cold build reads
# every file. A list is kept as a tuple and handed out as a new list each time (a caller
# may change it); the memo is emptied when full, and long lines (a title, a unique hash)
# are never kept, so a long-lived server holds at most _SEEN_MAX short lines.
_SEEN: dict[str, tuple[str, Any]] = {}
_SEEN_MAX = 4096
_SEEN_LINE_MAX = 200


def load(text: str) -> dict[str, Any] | None:
    """``yaml.load(text, CSafeLoader)`` for the subset above, or None (not in the subset)."""
    if not text or _unusual().search(text):
        return None
    out: dict[str, Any] = {}
    lines = text.split("\n")
    count = len(lines)
    remembered = _SEEN.get
    i = 0
    while i < count:
        line = lines[i]
        i += 1
        if not line:  # blank lines (the text starts and ends with one) say nothing
            continue
        seen = remembered(line)
        if seen is not None:  # a remembered key is never one of _SPECIAL_WORDS (checked below)
            key, value = seen
            if key in out:
                return None
            out[key] = list(value) if type(value) is tuple else value
            continue
        match = _LINE.match(line)
        if match is not None:
            key, value = match.group(1), _value(match.group(2))
            if value is not _MISSING and key.lower() not in _SPECIAL_WORDS and len(line) <= _SEEN_LINE_MAX:
                if len(_SEEN) >= _SEEN_MAX:
                    _SEEN.clear()
                _SEEN[line] = (key, tuple(value) if type(value) is list else value)
        else:
            match = _EMPTY.match(line)
            if match is None:
                return None
            key = match.group(1)
            value, i = _mappings(lines, i)
        if value is _MISSING or key in out or key.lower() in _SPECIAL_WORDS:
            return None
        out[key] = value
    return out or None


def _value(text: str) -> Any:
    """One value, or ``_MISSING`` when it is not one of the forms above."""
    if _QUOTED.match(text):
        return json.loads(text)
    if _PLAIN.match(text):
        if text.lower() in _SPECIAL_WORDS:
            return None if text == "null" else (True if text == "true" else False if text == "false" else _MISSING)
        return text
    if _ULID.match(text) and not text.isdigit():
        return text
    if text[0] == "[":
        return _list(text)
    if _INT.match(text):
        return int(text)
    return _MISSING


def _list(text: str) -> Any:
    """``[a, "b c"]``: strings only, separated by ", " exactly as the writers do."""
    if text == "[]":
        return []
    items: list[str] = []
    at = 1
    while at < len(text):
        match = _ITEM.match(text, at)
        if match is None:
            return _MISSING
        item = match.group(1)
        if item[0] == '"':
            items.append(json.loads(item))
        elif item.lower() in _SPECIAL_WORDS:
            return _MISSING
        else:
            items.append(item)
        at = match.end()
    return items if text.endswith("]") and at == len(text) else _MISSING


def _mappings(lines: list[str], i: int) -> tuple[Any, int]:
    """A key with no value followed by ``  - k: v`` / ``    k: v`` lines: a list of
    mappings (``review_history``). Anything else after such a key is not ours."""
    entries: list[dict[str, Any]] = []
    while i < len(lines):
        first = _ITEM_FIRST.match(lines[i])
        more = None if first is not None else _ITEM_MORE.match(lines[i])
        if first is None and (more is None or not entries):
            break
        match = first if first is not None else more
        assert match is not None
        key, value = match.group(1), _value(match.group(2))
        if first is not None:
            entries.append({})
        if value is _MISSING or key in entries[-1] or key.lower() in _SPECIAL_WORDS:
            return _MISSING, i
        entries[-1][key] = value
        i += 1
    return (entries if entries else _MISSING), i
