"""Secret detection and in-place masking for every memory write (D14).

D14: a write that contains a secret is not refused. The secret is masked in place (first 4
characters kept, the rest ``x``, same length) and ``<private>…</private>`` becomes ``[REDACTED]``,
so the stored Markdown never holds the raw value while the note stays readable.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from openmemex.redact.rules import (
    ASSIGNMENT,
    ENTROPY_MIN_LENGTH,
    ENTROPY_NAME,
    ENTROPY_NAME_STOPWORDS,
    ENTROPY_RULE_PREFIX,
    ENTROPY_THRESHOLD,
    HEX_DIGEST,
    NAME_CHARS,
    NAMED_RULES,
    RULES,
)

PRIVATE_REPLACEMENT = "[REDACTED]"
# A closed pair, or an unclosed opening tag that swallows the rest of the text.
_PRIVATE = re.compile(r"<private\s*>(?:.*?</private\s*>|.*)", re.IGNORECASE | re.DOTALL)
_NAME_SPLIT = re.compile(r"[_\-.]")
_KEEP = 4


@dataclass(frozen=True)
class Finding:
    """A detected secret; ``start:end`` is what gets masked (for ``name = value``: the value)."""

    rule: str
    start: int
    end: int
    line: int


@dataclass(frozen=True)
class RedactResult:
    """The text as it must be stored, plus what happened to it (callers show a notice, D14)."""

    text: str
    rules: tuple[str, ...]
    private_spans: int

    @property
    def masked(self) -> bool:
        """True when a secret was masked; ``<private>`` spans alone do not count."""
        return bool(self.rules)


def mask_value(value: str) -> str:
    """Keep the first 4 characters and turn the rest into ``x`` (D14).

    Line breaks are kept, so a masked PEM block leaves the file's line numbers unchanged.
    Values of 4 characters or fewer become all ``x``.
    """
    head, tail = ("", value) if len(value) <= _KEEP else (value[:_KEEP], value[_KEEP:])
    return head + "".join(ch if ch in "\r\n" else "x" for ch in tail)


def _already_masked(value: str) -> bool:
    """Masking would change nothing: the value is our own output or an ``xxxx`` placeholder."""
    return mask_value(value) == value


def _entropy(value: str) -> float:
    """Shannon entropy in bits per character."""
    size = len(value)
    counts: dict[str, int] = {}
    for ch in value:
        counts[ch] = counts.get(ch, 0) + 1
    return -sum(n / size * math.log2(n / size) for n in counts.values())


@lru_cache(maxsize=256)
def _compile_user(pattern: str) -> re.Pattern[str] | None:
    """User ``redactPatterns`` come from config; a broken one must never break a write."""
    try:
        return re.compile(pattern)
    except (re.error, OverflowError, RecursionError, ValueError):
        return None


def _in_url(text: str, start: int) -> bool:
    """True when the assignment at ``start`` sits inside a URL (e.g. a query string)."""
    token_start = max(text.rfind(" ", 0, start), text.rfind("\n", 0, start),
                      text.rfind("\t", 0, start))  # fmt: skip
    return "://" in text[token_start + 1 : start]


def _name_before(text: str, end: int) -> str:
    """The name in front of an assignment operator: ``name["']?[ \t]*`` read backwards."""
    i = end
    while i > 0 and text[i - 1] in " \t":
        i -= 1
    if i > 0 and text[i - 1] in "\"'":
        i -= 1
    stop, floor = i, max(0, i - 128)
    while i > floor and text[i - 1] in NAME_CHARS:
        i -= 1
    return text[i:stop]


def _is_random(name: str, value: str, text: str, start: int) -> bool:
    """The entropy heuristic: a long, random-looking value that is not a digest or a URL."""
    if len(value) < ENTROPY_MIN_LENGTH or HEX_DIGEST.fullmatch(value):
        return False
    if any(part in ENTROPY_NAME_STOPWORDS for part in _NAME_SPLIT.split(name.lower())):
        return False
    return _entropy(value) >= ENTROPY_THRESHOLD and not _in_url(text, start)


def _assignment_spans(text: str, first_priority: int) -> list[tuple[int, int, int, str]]:
    """Named rules (AWS secret, generic) and the entropy heuristic over ``name = value``."""
    spans: list[tuple[int, int, int, str]] = []
    entropy_priority = first_priority + len(NAMED_RULES) + 1  # after user patterns
    for m in ASSIGNMENT.finditer(text):
        value = m.group(1)
        if value.startswith("//") or _already_masked(value):
            continue  # "https://…" is a URL, not an assignment
        name = _name_before(text, m.start())
        if not name:
            continue
        start, end = m.span(1)
        for offset, rule in enumerate(NAMED_RULES):
            if rule.name.fullmatch(name) and rule.accept(value):
                spans.append((start, end, first_priority + offset, rule.id))
                break
        else:
            short = name.rsplit(".", 1)[-1].lstrip("-")
            if ENTROPY_NAME.fullmatch(short) and _is_random(short, value, text, start):
                spans.append((start, end, entropy_priority, ENTROPY_RULE_PREFIX + short))
    return spans


def find_secrets(text: str, user_patterns: Sequence[str] = ()) -> list[Finding]:
    """Detect secrets (no ``<private>`` handling): sorted by start, non-overlapping.

    Overlaps keep the earliest-starting, then the longest span; equal spans prefer a built-in
    rule over a user pattern over the entropy heuristic. A span that is already masked is not
    reported, so redacting redacted text is a no-op.
    """
    # (start, end, priority, rule id)
    spans: list[tuple[int, int, int, str]] = []
    for priority, rule in enumerate(RULES):
        for m in rule.pattern.finditer(text):
            value = m.group(rule.group)
            if _already_masked(value) or (rule.accept is not None and not rule.accept(value)):
                continue
            start, end = m.span(rule.group)
            spans.append((start, end, priority, rule.id))
    spans.extend(_assignment_spans(text, len(RULES)))
    user_priority = len(RULES) + len(NAMED_RULES)
    for pattern in user_patterns:
        compiled = _compile_user(pattern)
        if compiled is None:
            continue
        for m in compiled.finditer(text):
            if m.end() > m.start() and not _already_masked(m.group()):
                spans.append((m.start(), m.end(), user_priority, pattern))
    if not spans:
        return []

    spans.sort(key=lambda span: (span[0], span[0] - span[1], span[2]))
    findings: list[Finding] = []
    covered = 0
    line, line_pos = 1, 0
    for start, end, _, rule_id in spans:
        if start < covered:
            continue
        line += text.count("\n", line_pos, start)
        line_pos = start
        findings.append(Finding(rule_id, start, end, line))
        covered = end
    return findings


def _strip_private(text: str) -> tuple[str, int]:
    """Replace ``<private>`` spans first, so secrets inside them are never reported."""
    if "<" not in text:
        return text, 0
    return _PRIVATE.subn(PRIVATE_REPLACEMENT, text)


def redact(text: str, user_patterns: Sequence[str] = ()) -> RedactResult:
    """Return the text as it must be stored: private spans replaced, secrets masked (D14)."""
    cleaned, private_spans = _strip_private(text)
    findings = find_secrets(cleaned, user_patterns)
    if not findings:
        return RedactResult(cleaned, (), private_spans)
    parts: list[str] = []
    pos = 0
    for f in findings:
        parts.append(cleaned[pos : f.start])
        parts.append(mask_value(cleaned[f.start : f.end]))
        pos = f.end
    parts.append(cleaned[pos:])
    rules = tuple(dict.fromkeys(f.rule for f in findings))
    return RedactResult("".join(parts), rules, private_spans)


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


def find_secrets_in_memory_file(text: str, user_patterns: Sequence[str] = ()) -> list[Finding]:
    """Scan a whole memory file for secrets, never flagging the values open-memex generated.

    The one scanner for committed memory files (submit, the pre-commit hook, ``check``): the
    generated values are replaced by spaces first, so every finding keeps the line, column
    and offsets of the original text. A file without frontmatter is scanned as it is.
    """
    return find_secrets(_blank(text, generated_value_spans(text)), user_patterns)
