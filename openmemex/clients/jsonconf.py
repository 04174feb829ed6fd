"""Reading and writing JSON config files without destroying anything in them.

A config we rewrite must be plain JSON whose top level is an object (D47): comments,
trailing commas, duplicate keys, NaN, arrays and scalars mean "not ours to rewrite", and
the caller prints a paste-ready snippet instead. An empty or whitespace-only file is an
empty object (D49).

A rewrite is an edit of the text, not a new serialisation: callers change the document
``parse`` gave them, and ``edit`` puts into the original text only what differs — our
entry's text inserted (in the indentation and line endings of the object it joins) or cut
out with its comma. Everything else keeps its bytes: inline arrays, ``1e3``, ``1.50``,
``\\u00e9`` (a re-serialisation wrote them as ``1000.0``, ``1.5``, ``é`` and reflowed every
line). When the edited text does not parse back to exactly the caller's document, ``edit``
gives None and the caller leaves the file alone with a snippet.

An edit can also note what it put in (``Changes``: the members it inserted, the whitespace
inside each container that was empty until then) and put such whitespace back when a
container empties again (``restore``): init's record of what it changed, with which
uninstall gives back ``{ }`` or ``{\\r\\n}`` rather than ``{}`` (``receipt.py``).

``read_lenient`` reads JSONC (comments, trailing commas) for looking only — doctor and
uninstall use it to say what a file holds; nothing written ever comes from it.
"""

from __future__ import annotations

import gc
import json
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from ..jsonc import strip_jsonc

BOM = "\ufeff"
Key = tuple[str, ...]  # where a member sits: the object keys from the top (never through an array)
_BREAK = re.compile(r"\r\n|\n|\r")


class NotPlainJson(ValueError):
    """The text is not a plain JSON object; the message says why in a few words."""


@dataclass(frozen=True)
class Layout:
    """How the file was written: what a new file, or a value we insert, is written with."""

    indent: str = "  "
    newline: str = "\n"
    final_newline: bool = True
    bom: bool = False


@dataclass(frozen=True)
class Source:
    """The text a document was parsed from, and what each of its objects and arrays held
    then (by identity: callers change the document in place, so the original children of
    an object they changed are known only from here)."""

    text: str  # without the BOM
    layout: Layout
    held: dict[int, tuple[Any, list[Any]]]  # id(object or array) -> (it, its (key, value) pairs or items)


def parse(text: str) -> tuple[dict[str, Any], Source]:
    """A plain JSON object and where it came from, or NotPlainJson."""
    bom = text.startswith(BOM)
    body = text[1:] if bom else text
    first = _BREAK.search(body)  # the file's own line ending: that of its first line (a CR-only file too)
    newline = first.group(0) if first else "\n"
    if not body.strip():
        return {}, Source(body, Layout(newline=newline, bom=bom), {})
    held: dict[int, tuple[Any, list[Any]]] = {}
    with _collector_paused():
        doc = _load(body, held)
    match = re.search(r"[\r\n]([ \t]+)\S", body)
    layout = Layout(indent=match.group(1) if match else "  ", newline=newline,
                    final_newline=body.endswith(("\n", "\r")), bom=bom)  # fmt: skip
    return doc, Source(body, layout, held)


@dataclass
class Changes:
    """What an edit put into the text: the members it inserted into objects that were there
    (a new member's own members are not listed: they came with it), and the whitespace that
    was inside each container it made non-empty (``{ }``, ``[\\r\\n]``). Only places reached
    through object keys are noted; an array's items have no stable key."""

    made: list[Key]
    filled: dict[Key, str]


def edit(source: Source, doc: dict[str, Any], *, changes: Changes | None = None,
         restore: dict[Key, str] | None = None) -> str | None:  # fmt: skip
    """``source``'s text changed only where ``doc`` differs from what was parsed, or None when
    that cannot be done faithfully (the caller then leaves the file alone). ``changes``
    collects what went in; a container at a ``restore`` key that ends up empty is written
    with that whitespace inside (what it held before init filled it)."""
    if not source.text.strip():
        if changes is not None:
            changes.made.extend((key,) for key in doc)
        return dump(doc, source.layout)  # nothing of the user's to keep
    with _collector_paused():
        try:
            body = _Editor(source, changes, restore or {}).document(doc)
        except (ValueError, IndexError, KeyError, RecursionError):  # _CannotEdit, JSONDecodeError too
            return None
        try:  # the check: the new text holds exactly ``doc`` (the editor adds no key an object has)
            same = json.dumps(json.loads(body), ensure_ascii=False) == json.dumps(doc, ensure_ascii=False)
        except (ValueError, RecursionError):
            return None
    return (BOM if source.layout.bom else "") + body if same else None


def dump(doc: dict[str, Any], layout: Layout) -> str:
    """``doc`` as a new text in ``layout`` (a file that was empty: nothing of it to keep)."""
    text = json.dumps(doc, indent=layout.indent, ensure_ascii=False)
    if layout.final_newline:
        text += "\n"
    if layout.newline != "\n":
        text = text.replace("\n", layout.newline)
    return (BOM if layout.bom else "") + text


def read_lenient(text: str) -> dict[str, Any] | None:
    """JSON or JSONC as an object, for looking only; None when it is neither."""
    body = text.removeprefix(BOM)
    try:
        doc = json.loads(body.strip() or "{}")  # what parse refuses to rewrite (a twin key, NaN) is read as JSON reads it
    except (ValueError, RecursionError):
        try:
            doc = json.loads(strip_jsonc(body).strip() or "{}")
        except (ValueError, RecursionError):
            return None
    return doc if isinstance(doc, dict) else None


def _load(body: str, held: dict[int, tuple[Any, list[Any]]] | None = None) -> dict[str, Any]:
    """The plain JSON object in ``body``; with ``held``, what each object and array held."""
    hook = _no_duplicates if held is None else _Holder(held)
    try:
        doc = json.loads(body, object_pairs_hook=hook, parse_constant=_no_constants, parse_float=_finite)
    except NotPlainJson:
        raise
    except RecursionError:
        raise NotPlainJson("nested too deeply to rewrite safely") from None
    except json.JSONDecodeError as exc:
        hint = " (comments or trailing commas?)" if _looks_like_jsonc(body) else ""
        raise NotPlainJson(f"not plain JSON: {exc.msg} at line {exc.lineno}{hint}") from None
    except ValueError as exc:  # an integer past Python's digit limit, …
        why = f"a number longer than {sys.get_int_max_str_digits()} digits" if "integer string" in str(exc) else str(exc)
        raise NotPlainJson(f"cannot be read faithfully: {why}") from None
    if not isinstance(doc, dict):
        raise NotPlainJson(f"the top level is a JSON {_kind(doc)}, not an object")
    return doc


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Parsed JSON is a tree (no reference cycles to collect), and a large one (an 18 MB
    ``~/.claude.json``: 400,000 objects) set off full collections over and over: 2 s of a
    2.4 s parse went to them."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


class _Holder:
    """The parse's object hook that also records each object's pairs and each array's items
    as read (an array is recorded when the object holding it is built, so it is complete)."""

    def __init__(self, held: dict[int, tuple[Any, list[Any]]]) -> None:
        self.held = held

    def __call__(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        doc = _no_duplicates(pairs)
        self.held[id(doc)] = (doc, pairs)
        if list in map(type, doc.values()):  # a large file is mostly objects without arrays: checked in C
            for value in doc.values():
                if type(value) is list:
                    self._hold(value)
        return doc

    def _hold(self, items: list[Any]) -> None:
        stack = [items]
        while stack:
            node = stack.pop()
            self.held[id(node)] = (node, list(node))
            if list in map(type, node):
                stack.extend(item for item in node if type(item) is list)


class _CannotEdit(ValueError):
    """The text does not have the shape its parse promised; leave the file alone."""


@dataclass(frozen=True)
class _Item:
    """One member of an object (``key``) or item of an array (key None), where it sits."""

    key: str | None
    start: int  # the key's opening quote, or the item's first character
    key_end: int  # just past the key's closing quote (start, for an item)
    value_start: int
    end: int  # just past the value
    value: Any


class _Editor:
    """Builds the new text of an object or array from the old one: old members kept as
    their own text (edited inside when they changed), new ones written in the container's
    style (one per line at its indentation, or inline when it is all on one line)."""

    def __init__(self, source: Source, changes: Changes | None, restore: dict[Key, str]) -> None:
        self.text = source.text
        self.held = source.held
        self.unit = source.layout.indent
        self.newline = source.layout.newline
        self.scan = json.JSONDecoder().raw_decode
        self.changes = changes
        self.restore = restore

    def document(self, doc: dict[str, Any]) -> str:
        start = _skip(self.text, 0)
        end = len(self.text.rstrip(" \t\n\r"))  # one value in whitespace: parse checked it
        body = self._container(start, end, doc, doc, outer_multi=True, outer_colon=": ", path=())
        return self.text[:start] + body + self.text[end:]

    def _container(self, start: int, end: int, old: Any, new: Any, *, outer_multi: bool, outer_colon: str,
                   path: Key | None) -> str:  # fmt: skip
        text = self.text
        items, close = self._items(start)
        entry = self.held.get(id(old))
        if entry is None or entry[0] is not old or len(entry[1]) != len(items):
            raise _CannotEdit("the parse and the text disagree")
        before = entry[1]
        is_object = text[start] == "{"
        if is_object and [key for key, _ in before] != [item.key for item in items]:
            raise _CannotEdit("the parse and the text disagree")
        multi = _breaks(text[start:end]) if items else outer_multi
        inner = self._inner_indent(start, items, close) if multi else ""
        colon = outer_colon  # an empty object writes as its parent does (minified files: ":" and ",")
        if is_object and items:
            found = text[items[0].key_end : items[0].value_start]
            colon = found if found.strip() == ":" and not _breaks(found) else ": "

        pieces: list[tuple[int | None, str]] = []
        for index, key, value in self._plan(items, before, new, is_object):
            if index is None:
                head = json.dumps(key, ensure_ascii=False) + colon if is_object else ""
                pieces.append((None, head + self._write(value, multi, inner, colon)))
                if self.changes is not None and path is not None and key is not None:
                    self.changes.made.append((*path, key))
                continue
            item = items[index]
            was = before[index][1] if is_object else before[index]
            head = text[item.start : item.value_start]
            if type(item.value) is type(value) and item.value == value:
                pieces.append((index, text[item.start : item.end]))
            elif isinstance(value, dict | list) and type(was) is type(value) and type(item.value) is type(value):
                where = (*path, key) if path is not None and key is not None else None
                inside = self._container(item.value_start, item.end, was, value, outer_multi=multi,
                                         outer_colon=colon, path=where)  # fmt: skip
                pieces.append((index, head + inside))
            else:
                pieces.append((index, head + self._write(value, multi, inner, colon)))
        if not items and pieces and path is not None and self.changes is not None and start + 1 < close:
            self.changes.filled[path] = text[start + 1 : close]
        if not pieces and path is not None and path in self.restore:
            return text[start] + self.restore[path] + text[close]
        return text[start] + self._join(pieces, items, close, multi, inner, start, colon) + text[close]

    def _plan(self, items: list[_Item], before: list[Any], new: Any,
              is_object: bool) -> list[tuple[int | None, str | None, Any]]:  # fmt: skip
        """For each new member: the old one it is (None: a new one). Object members are
        matched by key; array items by identity in order (a kept item is the very object
        parsed), or a scalar by type and value."""
        if is_object:
            where = {item.key: i for i, item in enumerate(items)}
            return [(where.get(key), key, value) for key, value in new.items()]
        plan: list[tuple[int | None, str | None, Any]] = []
        at = 0
        for value in new:
            found = next((i for i in range(at, len(before)) if _same_item(before[i], value)), None)
            if found is not None:
                at = found + 1
            plan.append((found, None, value))
        return plan

    def _join(self, pieces: list[tuple[int | None, str]], items: list[_Item], close: int,
              multi: bool, inner: str, start: int, colon: str) -> str:  # fmt: skip
        if not pieces:
            return ""
        text = self.text
        seps = [text[items[i].end : items[i + 1].start] for i in range(len(items) - 1)]
        if items:
            leading, trailing = text[start + 1 : items[0].start], text[items[-1].end : close]
        elif multi:
            leading, trailing = self.newline + inner, self.newline + self._line_indent(start)
        else:
            leading = trailing = ""
        if seps:
            default = seps[-1]
        elif multi:
            default = "," + (leading if _breaks(leading) else self.newline + inner)
        else:
            default = "," + (leading or _space(colon))
        out = [leading, pieces[0][1]]
        for (was, _), (now, piece) in pairwise(pieces):
            if was is not None and was < len(seps):
                sep = seps[was]  # what followed it: the same text when the next one is kept too
            elif now is not None and 0 < now <= len(seps):
                sep = seps[now - 1]
            else:
                sep = default
            out += [sep, piece]
        out.append(trailing)
        return "".join(out)

    def _write(self, value: Any, multi: bool, inner: str, colon: str) -> str:
        if not multi:
            return json.dumps(value, ensure_ascii=False, separators=("," + _space(colon), colon))
        text = json.dumps(value, ensure_ascii=False, indent=self.unit, separators=(",", colon))
        return text.replace("\n", self.newline + inner)

    def _items(self, start: int) -> tuple[list[_Item], int]:
        """The members of the object or array opening at ``start``, and where it closes."""
        text = self.text
        closer = "}" if text[start] == "{" else "]"
        at = _skip(text, start + 1)
        items: list[_Item] = []
        if text[at] == closer:
            return items, at
        while True:
            begin, key = at, None
            if closer == "}":
                if text[at] != '"':
                    raise _CannotEdit("a key was expected")
                key, at = self.scan(text, at)
                key_end = at
                at = _skip(text, at)
                if text[at] != ":":
                    raise _CannotEdit("a colon was expected")
                at = _skip(text, at + 1)
            else:
                key_end = at
            value, end = self.scan(text, at)
            items.append(_Item(key, begin, key_end, at, end, value))
            at = _skip(text, end)
            if text[at] == ",":
                at = _skip(text, at + 1)
            elif text[at] == closer:
                return items, at
            else:
                raise _CannotEdit("a comma was expected")

    def _line_indent(self, at: int) -> str:
        line = self.text[max(self.text.rfind("\n", 0, at), self.text.rfind("\r", 0, at)) + 1 : at]
        return line[: len(line) - len(line.lstrip(" \t"))]

    def _inner_indent(self, start: int, items: list[_Item], close: int) -> str:
        """The indentation of this container's members: as its members have it, else one
        step past the line it opens on."""
        gaps = [self.text[start + 1 : items[0].start]] if items else []
        gaps += [self.text[a.end : b.start] for a, b in pairwise(items)]
        for gap in gaps:
            if _breaks(gap):
                return _BREAK.split(gap)[-1]
        return self._line_indent(start) + self.unit


def _breaks(text: str) -> bool:
    """Whether ``text`` holds a line break of any kind (LF, CRLF, or a lone CR)."""
    return "\n" in text or "\r" in text


def _space(colon: str) -> str:
    """The space after an inline comma: none in a file written without one after its colons."""
    return "" if colon == ":" else " "


def _skip(text: str, at: int) -> int:
    """Past the JSON whitespace at ``at``."""
    while at < len(text) and text[at] in " \t\n\r":
        at += 1
    return at


def _same_item(old: Any, new: Any) -> bool:
    if isinstance(new, dict | list):
        return old is new
    return type(old) is type(new) and old == new


def _looks_like_jsonc(text: str) -> bool:
    stripped = strip_jsonc(text)
    if stripped == text:
        return False
    try:
        json.loads(stripped)
    except ValueError:
        return False
    return True


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A rewrite would silently drop all but the last of a duplicated key."""
    doc = dict(pairs)
    if len(doc) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise NotPlainJson(f"the key {key!r} appears twice")
            seen.add(key)
    return doc


def _finite(text: str) -> float:
    """A number past float's range (1e400) reads as infinity, which JSON cannot hold: the
    check that an edit kept the document would compare a value that is not JSON."""
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise NotPlainJson(f"the number {text} is out of range for a faithful rewrite")
    return value


def _no_constants(name: str) -> Any:
    raise NotPlainJson(f"{name} is not JSON")


def _kind(value: object) -> str:
    return {list: "array", str: "string", bool: "boolean", type(None): "null"}.get(type(value), "number")
