"""What the scanner reports and what the write path stores."""

from __future__ import annotations

from dataclasses import dataclass

from openmemex.redact.masking import mask_value

Candidate = tuple[int, int, int, str]
"""What a rule found, before allowlists and overlaps: (start, end, tier, rule id)."""

SPECIFIC, USER, GENERIC_TIER = 0, 1, 2
"""Tiers, in the order overlaps are settled: provider rules, the user's patterns, generic rules."""


@dataclass(frozen=True)
class Finding:
    """A detected secret. ``start:end`` is exactly what gets masked: the secret group only
    (for ``name = value`` the value, for a URL the password, for a PEM block its body).

    ``line`` and ``col`` are 1-based and count characters, so a ``scan`` command can print
    ``path:line:col rule-id`` without re-reading the text.
    """

    rule: str
    start: int
    end: int
    line: int
    col: int = 1

    def value(self, text: str) -> str:
        """The raw secret inside ``text`` (the text this finding was made from)."""
        return text[self.start : self.end]

    def masked(self, text: str) -> str:
        """The secret as it may be shown to a person: masked the protocol's way."""
        return mask_value(text[self.start : self.end])


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
