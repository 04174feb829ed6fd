"""Reading and writing JSON config files without destroying anything in them.

A config we rewrite must be plain JSON whose top level is an object (D47): comments,
trailing commas, duplicate keys, NaN, arrays and scalars mean "not ours to rewrite", and
the caller prints a paste-ready snippet instead. An empty or whitespace-only file is an
empty object (D49). A rewrite keeps the file's indentation, line endings, BOM and final
newline; key order is kept by the parser.

``read_lenient`` reads JSONC (comments, trailing commas) for looking only — doctor and
uninstall use it to say what a file holds; nothing written ever comes from it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ..jsonc import strip_jsonc

BOM = "\ufeff"


class NotPlainJson(ValueError):
    """The text is not a plain JSON object; the message says why in a few words."""


@dataclass(frozen=True)
class Layout:
    """How the file was written, so a rewrite looks like the original."""

    indent: str = "  "
    newline: str = "\n"
    final_newline: bool = True
    bom: bool = False


def parse(text: str) -> tuple[dict[str, Any], Layout]:
    """A plain JSON object and its layout, or NotPlainJson."""
    bom = text.startswith(BOM)
    body = text[1:] if bom else text
    if not body.strip():
        return {}, Layout(bom=bom)
    try:
        doc = json.loads(body, object_pairs_hook=_no_duplicates, parse_constant=_no_constants, parse_float=_finite)
    except NotPlainJson:
        raise
    except RecursionError:
        raise NotPlainJson("nested too deeply to rewrite safely") from None
    except json.JSONDecodeError as exc:
        hint = " (comments or trailing commas?)" if _looks_like_jsonc(body) else ""
        raise NotPlainJson(f"not plain JSON: {exc.msg} at line {exc.lineno}{hint}") from None
    except ValueError as exc:  # an integer past Python's digit limit, …
        raise NotPlainJson(f"cannot be read faithfully ({exc})") from None
    if not isinstance(doc, dict):
        raise NotPlainJson(f"the top level is a JSON {_kind(doc)}, not an object")
    match = re.search(r"\n([ \t]+)\S", body)
    newline = "\r\n" if "\r\n" in body else "\n"
    return doc, Layout(indent=match.group(1) if match else "  ", newline=newline,
                       final_newline=body.endswith("\n"), bom=bom)  # fmt: skip


def dump(doc: dict[str, Any], layout: Layout) -> str:
    """``doc`` as text in the file's own layout."""
    text = json.dumps(doc, indent=layout.indent, ensure_ascii=False)
    if layout.final_newline:
        text += "\n"
    if layout.newline != "\n":
        text = text.replace("\n", layout.newline)
    return (BOM if layout.bom else "") + text


def read_lenient(text: str) -> dict[str, Any] | None:
    """JSON or JSONC as an object, for looking only; None when it is neither."""
    try:
        return parse(text)[0]
    except NotPlainJson:
        pass
    try:
        doc = json.loads(strip_jsonc(text.removeprefix(BOM)).strip() or "{}")
    except (ValueError, RecursionError):
        return None
    return doc if isinstance(doc, dict) else None


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
    doc: dict[str, Any] = {}
    for key, value in pairs:
        if key in doc:
            raise NotPlainJson(f"the key {key!r} appears twice")
        doc[key] = value
    return doc


def _finite(text: str) -> float:
    """A number past float's range (1e400) would be rewritten as ``Infinity``, which is not JSON."""
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise NotPlainJson(f"the number {text} is out of range for a faithful rewrite")
    return value


def _no_constants(name: str) -> Any:
    raise NotPlainJson(f"{name} is not JSON")


def _kind(value: object) -> str:
    return {list: "array", str: "string", bool: "boolean", type(None): "null"}.get(type(value), "number")
