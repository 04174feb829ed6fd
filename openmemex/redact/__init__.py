"""Secret redaction applied on every memory write (D14): mask in place, never refuse."""

from __future__ import annotations

from openmemex.redact.engine import (
    Finding,
    RedactResult,
    find_secrets,
    find_secrets_in_memory_file,
    mask_value,
    redact,
)
from openmemex.redact.rules import RULE_IDS

__all__ = ["RULE_IDS", "Finding", "RedactResult", "find_secrets", "find_secrets_in_memory_file", "mask_value", "redact"]
