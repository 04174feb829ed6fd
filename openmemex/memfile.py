"""Reading and writing one memory file without losing what we do not own.

A rewrite keeps every untouched frontmatter line byte-for-byte (unknown fields, comments,
hand-chosen quoting) and re-emits only the keys whose values changed. YAML is loaded with
libyaml's safe loader; anchors/aliases are refused outright because anything that walks an
alias bomb explodes (notes/mcp-cli-frontmatter.md §4).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import fastyaml, model
from .ids import normalize_time
from .model import Memory
from .schema import validate

if TYPE_CHECKING:
    import yaml


@cache
def _loader() -> type[Any]:
    """PyYAML's C loader, imported on the first file actually parsed: a read that finds
    every file unchanged (the hook, a warm search) never pays for yaml or frontmatter."""
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@cache
def _boundary() -> re.Pattern[str]:
    """python-frontmatter's YAML fence (``---``), so files split exactly as it splits them."""
    from frontmatter.default_handlers import YAMLHandler

    return YAMLHandler.FM_BOUNDARY


MAX_FILE_BYTES = 2 * 1024 * 1024
# How deep frontmatter collections may nest, the top-level mapping counting as 1. The model's
# deepest field is review_history (mapping > list > mapping: 3); unknown fields get room to
# spare. Deeper YAML is a broken file: libyaml's composer recurses on the C stack and a
# 50,000-deep ``[[[…]]]`` (100 KB) kills the process, and our own walks over values
# (scrub, deepcopy, ==) recurse in Python.
MAX_YAML_DEPTH = 32
_KEY_LINE = re.compile(r"^([A-Za-z_][A-Za-z0-9_\-]*)[ \t]*:(?:[ \t]|$)")
_PLAIN = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-/@+]*$")
_NON_PRINTABLE_CLASS = "[^\x09\x0a\x0d\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]"


@cache
def _non_printable() -> re.Pattern[str]:
    """Compiled on first write, not at import (~5 ms): a read never needs it."""
    return re.compile(_NON_PRINTABLE_CLASS)

# YAML 1.2 readers (the TypeScript original's js-yaml) take these as numbers or booleans.
_YAML12_SPECIAL = re.compile(r"^[-+]?(\.\d+|\d[\d_]*(\.\d*)?)([eE][-+]?\d+)?$|^0o[0-7]+$|^0x[0-9a-fA-F]+$|^(true|false|null)$", re.I)


class MemoryFileError(Exception):
    """A file we cannot use as a memory; the message is the one-line quarantine reason."""


class MemoryFileGone(MemoryFileError, FileNotFoundError):
    """The file vanished between listing and reading (a concurrent forget or submit): the
    index drops it silently instead of quarantining it as unreadable (issue 6, item 10)."""


@dataclass
class RawFile:
    """The text a memory was read from, split so unchanged parts can be written back."""

    preamble: list[str]
    segments: list[tuple[str, list[str]]]  # (key, lines) in file order
    parsed: dict[str, Any]  # normalized values as read, to tell what changed
    body_text: str  # everything after the closing boundary line
    body: str  # the body as Memory sees it


def read_memory(path: Path | str, default_scope_key: str | None = None, keep_raw: bool = True) -> Memory:
    """Parse ``path``; raise MemoryFileError with a one-line reason when it is unusable.
    ``keep_raw=False`` (indexing): no record of the file's lines, so no faithful rewrite.
    A ``str`` path (indexing's loop over a folder's ``*.md`` names) leaves the memory's
    ``path`` None: making a Path is about 5 µs, a tenth of what a cold build spends a file."""
    try:
        with open(path, "rb") as fh:  # the open file's size: no second path lookup (issue 11)
            size = os.fstat(fh.fileno()).st_size
            if size > MAX_FILE_BYTES:
                raise MemoryFileError(
                    f"file too large ({size / 1e6:.1f} MB > {MAX_FILE_BYTES // 2**20} MB limit)"
                )
            data = fh.read()
    except FileNotFoundError:
        raise MemoryFileGone("the file was removed") from None
    except OSError as exc:
        raise MemoryFileError(f"cannot read: {exc.strerror}") from None
    memory = parse_memory(data, default_scope_key, keep_raw)
    if isinstance(path, str):
        name = os.path.basename(path)
        if not name.endswith(".md") or memory.id != name[:-3]:
            raise MemoryFileError(f"id {memory.id!r} does not match the file name {name!r}")
        return memory
    if memory.id != path.stem:
        raise MemoryFileError(f"id {memory.id!r} does not match the file name {path.name!r}")
    memory.path = path
    return memory


def parse_memory(data: bytes, default_scope_key: str | None = None, keep_raw: bool = True) -> Memory:
    if not data.strip():
        raise MemoryFileError("empty file")
    if b"\x00" in data:
        raise MemoryFileError("binary file (NUL bytes)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MemoryFileError(f"not valid UTF-8 (byte {exc.start})") from None
    text = text.removeprefix("\ufeff").replace("\r\n", "\n")
    if not _boundary().match(text):
        raise MemoryFileError("no YAML frontmatter (the file must start with '---')")
    parts = _boundary().split(text, 2)
    if len(parts) < 3:
        raise MemoryFileError("frontmatter is not closed by a '---' line")
    _, fm_text, rest = parts
    meta = _load_yaml(fm_text)
    raw_body = rest[1:] if rest.startswith("\n") else rest
    body = raw_body.strip("\n").rstrip()
    try:
        normalized = normalize_fields(meta, default_scope_key)
    except (ValueError, TypeError, OverflowError) as exc:
        raise MemoryFileError(f"invalid field value: {exc}") from None
    try:
        validate(normalized)
    except ValueError as exc:
        raise MemoryFileError(str(exc)) from None
    marker = conflict_marker_line(body)
    if marker is not None:
        raise MemoryFileError(
            f"unresolved git conflict markers (body line {marker}) — finish the merge: `open-memex resolve`"
        )
    memory = _to_memory(normalized, body)
    if keep_raw:
        memory.raw = _split_raw(fm_text, meta, normalized, raw_body, body)
    return memory


_FENCE = re.compile(r"^\s*(```|~~~)")


def conflict_marker_line(body: str) -> int | None:
    """The line of a git conflict (``<<<<<<< ``, ``=======``, ``>>>>>>> `` on lines of their
    own, in that order, outside code fences), or None. Such a file is mid-merge: reading it
    as a memory would show both sides as one text, and a write would bake them in. The
    write path refuses the same text, so reader and writer never disagree (issue 6)."""
    if "<<<<<<<" not in body:  # no start marker, no conflict: most bodies are one scan
        return None
    start: int | None = None
    middle = False
    fenced = False
    for number, line in enumerate(body.split("\n"), start=1):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        if line.startswith("<<<<<<< ") or line == "<<<<<<<":
            start, middle = number, False
        elif start is not None and line == "=======":
            middle = True
        elif start is not None and middle and (line.startswith(">>>>>>> ") or line == ">>>>>>>"):
            return start
    return None


def _load_yaml(fm_text: str) -> dict[str, Any]:
    """Every reader's one way from frontmatter text to values. ``fastyaml`` reads only flat
    lines and ``review_history`` (3 levels deep at most); anything else reaches libyaml
    only once anchors and nesting deeper than MAX_YAML_DEPTH are ruled out."""
    fast = fastyaml.load(fm_text)  # the layout our writers emit, read without libyaml
    if fast is not None:
        return fast
    import yaml

    anchors = "&" in fm_text or "*" in fm_text
    if anchors or _nesting_bound(fm_text) > MAX_YAML_DEPTH:
        _refuse_by_events(fm_text, anchors)
    try:
        meta = yaml.load(fm_text, Loader=_loader())
    except yaml.YAMLError as exc:
        raise MemoryFileError(f"invalid YAML: {_yaml_reason(exc)}") from None
    except (ValueError, KeyError, TypeError, OverflowError) as exc:  # e.g. 2026-02-30, !!int abc
        raise MemoryFileError(f"invalid YAML value: {exc}") from None
    if not isinstance(meta, dict):
        raise MemoryFileError("frontmatter is not a mapping of fields")
    return meta


def _refuse_by_events(fm_text: str, anchors: bool) -> None:
    """Raise MemoryFileError for nesting deeper than MAX_YAML_DEPTH (and, with ``anchors``,
    for an anchor or alias), read from libyaml's event stream: an iterative parse, which
    stops at the first level too deep, where composing the nodes would recurse."""
    import yaml

    depth = 0
    try:
        for event in yaml.parse(fm_text, Loader=_loader()):
            if anchors and (isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None)):
                raise MemoryFileError("YAML anchors/aliases are not allowed in frontmatter")
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_YAML_DEPTH:
                    mark = event.start_mark
                    where = f" (frontmatter line {mark.line + 1})" if mark is not None else ""
                    raise MemoryFileError(f"YAML nested deeper than the {MAX_YAML_DEPTH}-level limit{where}")
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    except yaml.YAMLError as exc:
        if "maximum nesting depth" in str(getattr(exc, "problem", "") or ""):  # PyYAML ≥ 6.0.4's libyaml has a limit
            mark = getattr(exc, "problem_mark", None)  # of its own, far above ours: the same broken file
            where = f" (frontmatter line {mark.line + 1})" if mark is not None else ""
            raise MemoryFileError(f"YAML nested deeper than the {MAX_YAML_DEPTH}-level limit{where}") from None
        raise MemoryFileError(f"invalid YAML: {_yaml_reason(exc)}") from None


@cache
def _nesting_patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """Compiled on the first file libyaml reads, not at import (a warm read parses none):
    the start of each line whose content may open a block collection past column 0 (its
    indentation, with the BOM libyaml skips there, and the ``-``/``?``/``:`` indicators that
    open it); one such indicator; the YAML line breaks other than LF (CR, NEL, LS, PS)."""
    return (re.compile(r"\n(?=[ \t\ufeff?:-])(\ufeff?[ \t]*(?:[-?:][ \t]+)*)"), re.compile(r"[-?:][ \t]+"),
            re.compile(r"\r\n?|[\x85\u2028\u2029]"))  # fmt: skip


def _nesting_bound(fm_text: str) -> int:
    """An upper bound on how deep the YAML's collections nest, from its characters alone:
    a few C-speed scans (~2 µs, against ~125 µs for libyaml's load), so only an unusual file
    is walked event by event. A flow collection needs its own ``[`` or ``{`` (and a ``[``
    entry may hold one implicit ``a: b`` mapping); a block collection starts at a column
    where a line's content may open, nested block collections sit at strictly increasing
    columns, and a mapping may hold a sequence at its own column: two per column. Brackets
    in quotes, indented text and comments only make the bound looser."""
    flow = 2 * fm_text.count("[") + fm_text.count("{")
    if flow > MAX_YAML_DEPTH:
        return flow
    line_lead, indicator, other_breaks = _nesting_patterns()
    text = "\n" + fm_text  # the first line is a line too
    if "\r" in text or "\x85" in text or "\u2028" in text or "\u2029" in text:
        text = other_breaks.sub("\n", text)
    columns = {0}  # every line that starts with anything else
    for lead in set(line_lead.findall(text)):
        start = len(lead) - len(lead.lstrip("\ufeff \t"))
        columns.add(start)
        columns.update(match.end() for match in indicator.finditer(lead, start))
    return flow + 2 * len(columns)


def _yaml_load(text: str) -> Any:
    import yaml

    return yaml.load(text, Loader=_loader())


def _yaml_reason(exc: yaml.YAMLError) -> str:
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    mark = getattr(exc, "problem_mark", None)
    where = f" (frontmatter line {mark.line + 1})" if mark is not None else ""
    return f"{problem}{where}"


def normalize_fields(meta: dict[str, Any], default_scope_key: str | None = None) -> dict[str, Any]:
    """Lenient reading of older or hand-edited files (design §13, §19): v1 names, epoch
    times, YAML-typed scalars. The result is what the JSON Schema judges."""
    out: dict[str, Any] = {str(k): v for k, v in meta.items()}
    if out.get("scope") == "user":  # v1 name of personal
        out["scope"] = "personal"
        if out.get("scope_key") in (None, "user"):
            out["scope_key"] = model.PERSONAL_KEY
    if out.get("type") == "instruction":
        out["type"] = "knowledge"
        out.setdefault("role", "instruction")
    if "priority" in out and "importance" not in out:
        prio = out.pop("priority")
        if isinstance(prio, int | float):
            out["importance"] = "low" if prio <= 3 else "high" if prio >= 8 else "normal"
    if default_scope_key and not out.get("scope_key"):
        out["scope_key"] = default_scope_key
    if not out.get("scope") and isinstance(out.get("scope_key"), str):
        out["scope"] = "personal" if out["scope_key"] == "personal" else "project"
    out.setdefault("schema_version", model.SCHEMA_VERSION)
    out.setdefault("type", "fact")
    out.setdefault("status", "active")
    for key in model.TIME_FIELDS:
        fixed = _canonical_time(out.get(key))
        if fixed is not None:
            out[key] = fixed
    if "updated_at" not in out and "created_at" in out:
        out["updated_at"] = out["created_at"]
    for key in ("id", "supersedes", "superseded_by", "derived_from", "proposed_by", "approved_by",
                "review_note", "project_name", "alias", "target"):  # fmt: skip
        value = out.get(key)
        if value is not None and not isinstance(value, str):
            out[key] = str(value)  # e.g. an all-digit name YAML read as int
    for key in ("tags", "aliases"):
        value = out.get(key)
        if value is None and key in out:
            out[key] = []
        elif isinstance(value, str):
            out[key] = model.normalize_tags(value)
        elif isinstance(value, list):
            out[key] = [str(v) for v in value if v is not None]
    if isinstance(out.get("aliases"), list):
        out["aliases"] = model.normalize_aliases(out["aliases"])
    history = out.get("review_history")
    if history is None and "review_history" in out:
        out["review_history"] = []
    elif isinstance(history, list):
        out["review_history"] = [_normalize_entry(e) for e in history]
    return out


# What ``normalize_time`` gives back unchanged (our writers' form): parsing and formatting
# it again is most of what reading the fields costs when building the index (issue 11).
_CANONICAL_TIME = re.compile(r"(19[7-9]\d|20\d\d)-\d\d-\d\dT\d\d:\d\d:\d\d(\.(?!000)\d{3})?Z\Z")


def _canonical_time(value: Any) -> str | None:
    if isinstance(value, str) and _CANONICAL_TIME.match(value):
        return value  # a date that does not exist (02-30) stays as written, as normalize_time leaves it
    return normalize_time(value)


def _normalize_entry(entry: Any) -> Any:
    if not isinstance(entry, dict):
        return entry
    fixed = {str(k): v for k, v in entry.items()}
    at = _canonical_time(fixed.get("at"))
    if at is not None:
        fixed["at"] = at
    return fixed


_KNOWN_FIELDS = frozenset(model.FIELD_ORDER)


def _to_memory(fields: dict[str, Any], body: str) -> Memory:
    known = {k: v for k, v in fields.items() if k in _KNOWN_FIELDS}
    extra = {k: v for k, v in fields.items() if k not in _KNOWN_FIELDS}
    scope = known["scope"]
    return Memory(
        id=known["id"],
        scope=scope,
        scope_key=known["scope_key"],
        body=body,
        type=known["type"],
        visibility=known.get("visibility") or model.default_visibility(scope),
        project_name=known.get("project_name") or "",
        role=known.get("role") or "knowledge",
        importance=known.get("importance") or "normal",
        status=known["status"],
        tags=list(known.get("tags") or []),
        aliases=list(known.get("aliases") or []),
        source=known.get("source") or "user",
        created_at=known["created_at"],
        updated_at=known["updated_at"],
        supersedes=known.get("supersedes"),
        superseded_by=known.get("superseded_by"),
        review_state=known.get("review_state") or "draft",
        proposed_by=known.get("proposed_by"),
        approved_by=known.get("approved_by"),
        derived_from=known.get("derived_from"),
        review_note=known.get("review_note"),
        review_history=list(known.get("review_history") or []),
        schema_version=known["schema_version"],
        alias=known.get("alias"),
        target=known.get("target"),
        extra=extra,
    )


def _split_raw(fm_text: str, meta: dict[str, Any], normalized: dict[str, Any], raw_body: str,
               body: str) -> RawFile | None:  # fmt: skip
    lines = fm_text.strip("\n").split("\n") if fm_text.strip() else []
    preamble: list[str] = []
    segments: list[tuple[str, list[str]]] = []
    for line in lines:
        match = _KEY_LINE.match(line)
        if match:
            segments.append((match.group(1), [line]))
        elif segments:
            segments[-1][1].append(line)
        else:
            preamble.append(line)
    keys = [k for k, _ in segments]
    if len(set(keys)) != len(keys) or set(keys) != {str(k) for k in meta}:
        return None  # unusual layout (quoted keys, duplicates): rewrite canonically instead
    # What each line "says", to tell later whether a value changed. Representation-only
    # normalization (an unquoted time) keeps the line; a semantic one (v1 ``scope: user``)
    # makes it differ, so the rewrite writes the current value.
    parsed: dict[str, Any] = {}
    for key in keys:
        value = normalized.get(key, meta.get(key))
        if key in ("scope", "scope_key", "type") and meta.get(key) != value:
            value = meta.get(key)
        parsed[key] = value
    return RawFile(preamble, segments, parsed, raw_body, body)


def serialize(memory: Memory) -> str:
    """The file text for ``memory``; unchanged lines of the file it was read from are kept."""
    fields = memory.fields()
    fields.update(memory.extra)
    raw: RawFile | None = memory.raw
    out: list[str] = ["---"]
    if raw is None:
        for key, value in fields.items():
            out.extend(emit_field(key, value))
    else:
        out.extend(raw.preamble)
        written: set[str] = set()
        for key, lines in raw.segments:
            if key not in fields:
                continue  # a field we dropped (e.g. aliases emptied)
            pending = _pending_before(key, fields, raw, written)
            for new_key in pending:
                out.extend(emit_field(new_key, fields[new_key]))
                written.add(new_key)
            if raw.parsed.get(key) == fields[key]:
                out.extend(lines)
            else:
                out.extend(emit_field(key, fields[key]))
                out.extend(line for line in lines[1:] if line.startswith("#"))  # own-line comments stay
            written.add(key)
        for key, value in fields.items():
            if key not in written:
                out.extend(emit_field(key, value))
    out.append("---")
    head = "\n".join(out) + "\n"
    if raw is not None and raw.body == memory.body:
        return head + "\n" + raw.body_text.rstrip("\n") + "\n"
    return head + "\n" + memory.body.strip("\n") + "\n"


def _pending_before(key: str, fields: dict[str, Any], raw: RawFile, written: set[str]) -> list[str]:
    """New canonical keys that belong before ``key`` in canonical order."""
    if key not in model.FIELD_ORDER:
        return []
    raw_keys = {k for k, _ in raw.segments}
    limit = model.FIELD_ORDER.index(key)
    return [
        k for k in model.FIELD_ORDER[:limit]
        if k in fields and k not in raw_keys and k not in written
    ]  # fmt: skip


def emit_field(key: str, value: Any) -> list[str]:
    if key == "review_history" and isinstance(value, list) and value and all(isinstance(e, dict) for e in value):
        lines = [f"{key}:"]
        for entry in value:
            first = True
            for k, v in entry.items():
                prefix = "  - " if first else "    "
                lines.append(f"{prefix}{k}: {emit_scalar(v, quote_time=k == 'at')}")
                first = False
        return lines
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [f"{key}: [{', '.join(emit_scalar(v) for v in value)}]"]
    if isinstance(value, list | dict):
        import yaml

        dumped = yaml.dump(value, Dumper=yaml.SafeDumper, default_flow_style=True, allow_unicode=True, width=10**9)
        return [f"{key}: {dumped.strip()}"]
    return [f"{key}: {emit_scalar(value, quote_time=key in model.TIME_FIELDS)}"]


_plain_cache: dict[str, bool] = {}


def emit_scalar(value: Any, quote_time: bool = False) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    text = str(value)
    if not quote_time and _is_plain(text):
        return text
    quoted = json.dumps(text, ensure_ascii=False)
    return _non_printable().sub(lambda m: f"\\u{ord(m.group()):04x}", quoted)


def _is_plain(text: str) -> bool:
    cached = _plain_cache.get(text)
    if cached is None:
        cached = bool(_PLAIN.match(text)) and not _YAML12_SPECIAL.match(text) and _yaml_load(text) == text
        if len(_plain_cache) < 4096:
            _plain_cache[text] = cached
    return cached
