"""Scanning whole memory files: the values open-memex generates itself are never secrets.

Submit, the pre-commit hook and ``check`` scan committed memory files with this one
function, so a random-looking ULID in ``id:`` can never block a commit (issue 6, item 15).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from openmemex.redact.engine import find_secrets
from openmemex.redact.findings import Finding

# Frontmatter fields that open-memex generates itself (ids and timestamps): a user cannot edit
# them, and a random-looking ULID trips the entropy heuristic about once in 3,000 ids (issue 6,
# item 15). Their values are blanked before a whole memory file is scanned — but only values
# shaped like what we generate, so a real secret pasted into one of these fields is still found.
GENERATED_ID_FIELDS = ("id", "supersedes", "superseded_by", "derived_from")
GENERATED_TIME_FIELDS = ("created_at", "updated_at")
_ULID = r"[0-7][0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{25}"
_TIMESTAMP = r"\d{4}-\d\d-\d\d[Tt ]\d\d:\d\d:\d\d(?:\.\d+)?(?:[Zz]|[+-]\d\d:?\d\d)?"


def _field(keys: str, value: str) -> re.Pattern[str]:
    """``key: value`` with the value optionally quoted and followed by a comment, a flow
    separator or the end of the line; group ``value`` is the bare value."""
    return re.compile(
        rf"""(?:{keys})[ \t]*:[ \t]*(?P<q>["']?)(?P<value>{value})(?P=q)(?=[ \t]*(?:#|$|[,}}\]]))""", re.MULTILINE
    )


_GENERATED = (
    _field("^(?:" + "|".join(GENERATED_ID_FIELDS) + ")", _ULID),
    _field("^(?:" + "|".join(GENERATED_TIME_FIELDS) + ")", _TIMESTAMP),
)
_HISTORY_AT = _field(r"(?:^|(?<=[\s{,-]))at", _TIMESTAMP)
_FRONTMATTER = re.compile(r"\A(?:\ufeff)?---[ \t]*\r?\n(.*?)^---[ \t]*\r?$", re.DOTALL | re.MULTILINE)
_TOP_KEY = re.compile(r"^[^\s#-][^:\n]*:", re.MULTILINE)


def _blank(text: str, spans: list[tuple[int, int]]) -> str:
    if not spans:
        return text
    chars = list(text)
    for start, end in spans:
        chars[start:end] = " " * (end - start)
    return "".join(chars)


def generated_value_spans(text: str) -> list[tuple[int, int]]:
    """Where the generated values of a memory file's frontmatter are (see ``GENERATED_*``):
    ``id``/``supersedes``/``superseded_by``/``derived_from`` holding a ULID, ``created_at``/
    ``updated_at`` and the ``at`` of ``review_history`` entries holding an RFC 3339 time."""
    front = _FRONTMATTER.match(text)
    if front is None:
        return []
    start, end = front.span(1)
    block = text[start:end]
    spans = [(start + m.start("value"), start + m.end("value")) for rx in _GENERATED for m in rx.finditer(block)]
    history = re.search(r"^review_history[ \t]*:", block, re.MULTILINE)
    if history is not None:
        following = _TOP_KEY.search(block, history.end())
        stop = following.start() if following is not None else len(block)
        region = block[history.end() : stop]
        offset = start + history.end()
        spans += [(offset + m.start("value"), offset + m.end("value")) for m in _HISTORY_AT.finditer(region)]
    return spans


def find_secrets_in_memory_file(text: str, user_patterns: Sequence[str] = (), *,
                                allowlist: Sequence[str] = ()) -> list[Finding]:  # fmt: skip
    """Scan a whole memory file for secrets, never flagging the values open-memex generated.

    The one scanner for committed memory files (submit, the pre-commit hook, ``check``): the
    generated values are replaced by spaces first, so every finding keeps the line, column
    and offsets of the original text. A file without frontmatter is scanned as it is.
    """
    return find_secrets(_blank(text, generated_value_spans(text)), user_patterns, allowlist=allowlist)
