"""Codex's ``config.toml``: our ``[mcp_servers.open-memex]`` table in and out, byte-exact
everywhere else.

Adding appends our two tables at the end of the file after one blank line, in the file's
own line ending (a CRLF file got LF lines), ending without a newline when the file did;
removing cuts exactly their lines and that blank line, and when ours were the last lines
the file ends as they did. So comments, key order and blank lines of everything else
stay as the user wrote them, and init followed by uninstall gives the original bytes back
(a missing final newline used to be added, and trailing blank lines to lose one). A
header is only a line that starts outside a multi-line string or array: a
``[mcp_servers.open-memex]`` line inside a multi-line string is the user's text (taken
for our table, it sent uninstall to tomlkit, which dropped an empty ``[mcp_servers]``).
Every result is parsed again and compared with what it must hold; a layout the text edit
cannot handle (our table written as dotted keys or inline) goes through tomlkit, and if
that cannot give the right document either, the file is left alone with a snippet (D47).
"""

from __future__ import annotations

import copy
import re
import tomllib
from collections.abc import Callable
from typing import Any

from .entry import LEGACY_NAME, SERVER_NAME
from .receipt import Receipt
from .verdict import FORCE_HINT, LEGACY_NOTE, Verdict, matches

SECTION = "mcp_servers"
_HEADER = re.compile(r"""^[ \t]*\[\[?[ \t]*((?:"[^"\n]*"|'[^'\n]*'|[^\[\]"'#\n])+?)[ \t]*\]\]?[ \t]*(?:#.*)?\r?\n?$""")
_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def block(shape: dict[str, Any]) -> str:
    """Our two tables as TOML text, exactly as ``codex mcp add`` lays them out."""
    import tomlkit

    lines = [f"[{SECTION}.{SERVER_NAME}]"]
    env = shape.get("env") or {}
    for key, value in shape.items():
        if key != "env":
            lines.append(f"{_key(key)} = {tomlkit.item(value).as_string()}")
    if env:
        lines += ["", f"[{SECTION}.{SERVER_NAME}.env]"]
        lines += [f"{_key(key)} = {tomlkit.item(value).as_string()}" for key, value in env.items()]
    return "\n".join(lines) + "\n"


def _key(key: str) -> str:
    return key if _BARE_KEY.match(key) else '"' + key.replace("\\", "\\\\").replace('"', '\\"') + '"'


def add(text: str, ours: dict[str, Any], *, force: bool) -> Verdict:
    data, problem = _load(text)
    if problem:
        return Verdict("manual", f"left untouched: {problem}")
    servers = data.get(SECTION, {})
    legacy = LEGACY_NAME in servers
    current = servers.get(SERVER_NAME)
    where = f"{SECTION}.{SERVER_NAME}"
    extra = f"; {LEGACY_NOTE}" if legacy else ""
    if current is None:
        action, detail, replace = "added", where + extra, True
    elif matches(current, ours):
        action, detail, replace = ("updated", f"already wired; {LEGACY_NOTE}", False) if legacy else ("kept", "already wired", False)
    elif force:
        action, detail, replace = "updated", f"{where} replaced (--force){extra}", True
    else:
        action, detail, replace = "kept", FORCE_HINT + extra, False
    if not (replace or legacy):
        return Verdict(action, detail)
    expected = copy.deepcopy(data)
    expected_servers = expected.setdefault(SECTION, {})
    expected_servers.pop(LEGACY_NAME, None)
    drop = [LEGACY_NAME] + ([SERVER_NAME] if replace and current is not None else [])
    if replace:
        expected_servers[SERVER_NAME] = copy.deepcopy(ours)
    new = _edit(text, drop, ours if replace else None, expected)
    if new is None:
        return Verdict("manual", f"left untouched: could not edit [{SECTION}] safely in this layout")
    return Verdict(action, detail, new, receipt=Receipt(blank=text if not text.strip() else None))


def remove(text: str, *, owner: Callable[[object], str | None], receipt: Receipt | None = None,
           had_backup: bool = True) -> Verdict:  # fmt: skip
    """Cut out our tables when ``owner`` finds the entry ours (None), else keep it with its
    reason; a file init created and that holds nothing else goes, one that held only
    whitespace gets it back."""
    by_hand = f"remove [{SECTION}.{SERVER_NAME}] by hand"
    data, problem = _load(text)
    if problem:
        if unreadable_with_ours(text):
            return Verdict("manual", f"left untouched ({problem}): if it holds an {SERVER_NAME} entry, {by_hand}")
        return Verdict("absent", f"left untouched: {problem}")
    servers = data.get(SECTION, {})
    why = owner(servers[SERVER_NAME]) if SERVER_NAME in servers else None
    removed, legacy = SERVER_NAME in servers and why is None, LEGACY_NAME in servers
    if not (removed or legacy):
        return Verdict("kept", why) if why else Verdict("absent", "no open-memex entry")
    drop = [name for name, gone in ((SERVER_NAME, removed), (LEGACY_NAME, legacy)) if gone]
    expected = copy.deepcopy(data)
    for name in drop:
        del expected[SECTION][name]
    new = _edit(text, drop, None, expected)
    if new is None:
        return Verdict("manual", f"left untouched: {by_hand}")
    if receipt is None:  # no record of init's: a file byte for byte as init writes a new one is one it made
        made = not had_backup and removed and not legacy and text == block(servers[SERVER_NAME])
        receipt = Receipt(existed=False, blank="") if made else Receipt()
    detail = "; ".join(p for p in (f"{SECTION}.{SERVER_NAME}" if removed else "", LEGACY_NOTE if legacy else "",
                                   why or "") if p)  # fmt: skip
    if new.strip() or receipt.blank is None:
        return Verdict("removed", detail, new)
    return Verdict("removed", detail, new, delete=True) if not receipt.existed else Verdict("removed", detail, receipt.blank)


def unreadable_with_ours(text: str) -> bool:
    """A file tomllib cannot read (nested too deeply, a number too long) that names our
    table: uninstall cannot tell whether it is there, so it says so."""
    return _load(text)[1] != "" and SERVER_NAME in text


def entry_in(text: str) -> dict[str, Any] | None:
    data, problem = _load(text)
    found = None if problem else data.get(SECTION, {}).get(SERVER_NAME)
    return found if isinstance(found, dict) else None


def has_legacy(text: str) -> bool:
    data, problem = _load(text)
    return not problem and LEGACY_NAME in data.get(SECTION, {})


def _load(text: str) -> tuple[dict[str, Any], str]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        return {}, f"not valid TOML ({exc})"
    except (RecursionError, ValueError) as exc:  # nested too deeply, a number too long
        return {}, f"cannot be read safely ({type(exc).__name__})"
    if not isinstance(data.get(SECTION, {}), dict):
        return {}, f"{SECTION} is not a table"
    return data, ""


def _edit(text: str, drop: list[str], ours: dict[str, Any] | None, expected: dict[str, Any]) -> str | None:
    """``text`` without the ``drop`` tables and with ``ours`` appended, if the result parses
    to ``expected``; else the same through tomlkit; else None."""
    new = text
    for name in drop:
        new = _cut(new, name)
    if ours is not None:
        new = _append(new, block(ours))
    if _holds(new, expected):
        return new
    fallback = _edit_tomlkit(text, drop, ours)
    return fallback if fallback is not None and _holds(fallback, expected) else None


def _append(text: str, addition: str) -> str:
    """``addition`` after one blank line, so that ``_cut`` can give ``text`` back exactly: the
    blank line is always one more (a file ending in blank lines keeps them all), and a
    file without a final newline keeps none at the end."""
    if not text.strip():
        return addition
    newline = _newline(text)
    addition = addition.replace("\n", newline)
    if text.endswith("\n"):
        return text + newline + addition
    return text + newline + newline + addition.removesuffix(newline)


def _newline(text: str) -> str:
    """The file's own line ending: that of its first line."""
    first = text.find("\n")
    return "\r\n" if first > 0 and text[first - 1] == "\r" else "\n"


def _holds(text: str, expected: dict[str, Any]) -> bool:
    try:
        got = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return False
    return _normal(got) == _normal(expected)


def _normal(data: dict[str, Any]) -> dict[str, Any]:
    """An empty ``mcp_servers`` and no ``mcp_servers`` are the same document here."""
    if data.get(SECTION) == {}:
        data = {k: v for k, v in data.items() if k != SECTION}
    return data


def _cut(text: str, name: str) -> str:
    """``text`` without the ``[mcp_servers.<name>]`` table and its sub-tables, and without
    the blank line that separated them (a comment before the next table stays with it)."""
    lines = text.splitlines(keepends=True)
    total = len(lines)
    headers = [(i, m.group(1)) for i in _header_lines(lines) if (m := _HEADER.match(lines[i]))]
    drop = [False] * total
    for index, (start, key) in enumerate(headers):
        if not _is_table_of(key, name) or lines[start].lstrip().startswith("[["):
            continue
        end = headers[index + 1][0] if index + 1 < len(headers) else total
        while end > start + 1 and _blank_or_comment(lines[end - 1]):
            end -= 1
        if all(not line.strip() for line in lines[end:]):
            end = total
        for i in range(start, end):
            drop[i] = True
    if not any(drop):
        return text
    # blank lines between two dropped tables go too; then one blank line before each run
    dropped_at = [i for i in range(total) if drop[i]]
    for i in range(dropped_at[0], dropped_at[-1]):
        if not drop[i] and not lines[i].strip() and _between_drops(drop, lines, i):
            drop[i] = True
    i = 0
    while i < total:
        if drop[i]:
            j = i
            while j < total and drop[j]:
                j += 1
            if i > 0 and not drop[i - 1] and not lines[i - 1].strip() and (j == total or not lines[j].strip()):
                drop[i - 1] = True
            elif i == 0 and j < total and not lines[j].strip():
                drop[j] = True
            i = j
        else:
            i += 1
    kept = "".join(line for line, gone in zip(lines, drop, strict=True) if not gone)
    if drop[-1] and not text.endswith("\n"):
        # the file's last line was ours and had no newline: the new last line has none either
        kept = kept[:-2] if kept.endswith("\r\n") else kept.removesuffix("\n")
    return kept


def _header_lines(lines: list[str]) -> list[int]:
    """The lines that can be table headers: those starting outside a multi-line string
    (``\"\"\"…\"\"\"``, ``'''…'''``) and outside a multi-line array, first thing on the line
    a ``[``. Strings and comments on other lines are skipped as TOML reads them."""
    found: list[int] = []
    closer = ""  # the multi-line string we are in, if any
    depth = 0  # open [ and { of a value
    for number, line in enumerate(lines):
        if not closer and depth == 0 and line.lstrip(" \t").startswith("["):
            found.append(number)
            continue
        at = 0
        while at < len(line):
            if closer:
                end = line.find(closer, at) if closer == "'''" else _basic_end(line, at)
                if end < 0:
                    break
                at = end + 3
                while at < len(line) and line[at] == closer[0] and at < end + 5:  # up to two quotes of content
                    at += 1
                closer = ""
                continue
            char = line[at]
            if char == "#":
                break
            if line.startswith(('"""', "'''"), at):
                closer, at = line[at : at + 3], at + 3
            elif char == '"':
                at = _basic_end(line, at + 1, single=True) + 1 or len(line)
            elif char == "'":
                at = (line.find("'", at + 1) + 1) or len(line)
            else:
                depth += (char in "[{") - (char in "]}")
                at += 1
    return found


def _basic_end(line: str, at: int, *, single: bool = False) -> int:
    """Where a basic string's closing quote(s) start (backslash escapes skipped), or -1."""
    while at < len(line):
        if line[at] == "\\":
            at += 2
        elif line.startswith('"' if single else '"""', at):
            return at
        else:
            at += 1
    return -1


def _between_drops(drop: list[bool], lines: list[str], i: int) -> bool:
    before = next((drop[j] for j in range(i - 1, -1, -1) if lines[j].strip()), False)
    after = next((drop[j] for j in range(i + 1, len(lines)) if lines[j].strip()), False)
    return before and after


def _blank_or_comment(line: str) -> bool:
    stripped = line.strip()
    return not stripped or stripped.startswith("#")


def _is_table_of(key: str, name: str) -> bool:
    parts = _split_key(key)
    return len(parts) >= 2 and parts[0] == SECTION and parts[1] == name


def _split_key(key: str) -> list[str]:
    parts = re.findall(r"""\s*("(?:[^"\\]|\\.)*"|'[^']*'|[A-Za-z0-9_-]+)\s*(?:\.|$)""", key)
    return [p[1:-1] if p[:1] in "\"'" else p for p in parts]


def _edit_tomlkit(text: str, drop: list[str], ours: dict[str, Any] | None) -> str | None:
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    try:
        doc = tomlkit.parse(text)
        servers = doc.get(SECTION)
        if servers is None:
            if ours is None:
                return text
            servers = tomlkit.table(is_super_table=True)
            doc.add(SECTION, servers)
        for name in drop:
            if name in servers:
                del servers[name]
        if ours is not None:
            servers[SERVER_NAME] = ours
        return doc.as_string()  # an emptied [mcp_servers] stays: its header may be the user's
    except (TOMLKitError, TypeError, ValueError, KeyError):
        return None
