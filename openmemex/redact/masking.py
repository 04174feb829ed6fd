"""The protocol's mask (D14): first 4 characters of the secret kept, the rest ``x``.

The length is kept so offsets, columns and line numbers of everything after a masked secret
stay where they were; line breaks are kept so a masked PEM body keeps its line count.
"""

from __future__ import annotations

from collections.abc import Iterable

KEEP = 4
"""How many leading characters of a secret stay readable."""

_KEPT_IN_TAIL = frozenset("\r\n")


def mask_value(value: str) -> str:
    """Keep the first 4 characters and turn the rest into ``x`` (D14).

    Values of 4 characters or fewer become all ``x``; line breaks are kept.
    """
    head, tail = ("", value) if len(value) <= KEEP else (value[:KEEP], value[KEEP:])
    return head + "".join(ch if ch in _KEPT_IN_TAIL else "x" for ch in tail)


def is_masked(value: str) -> bool:
    """True when masking would change nothing: our own output, or an ``xxxx`` placeholder.

    This is what makes redaction idempotent: a masked value is never reported again.
    """
    if len(value) <= KEEP:
        return value.strip("x\r\n") == ""
    return value[KEEP:].strip("x\r\n") == ""


def apply_masks(text: str, spans: Iterable[tuple[int, int]]) -> str:
    """``text`` with every ``(start, end)`` span masked; spans are sorted and disjoint."""
    parts: list[str] = []
    pos = 0
    for start, end in spans:
        parts.append(text[pos:start])
        parts.append(mask_value(text[start:end]))
        pos = end
    parts.append(text[pos:])
    return "".join(parts)
