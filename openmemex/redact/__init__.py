"""Secret redaction applied on every memory write (D14): mask in place, never refuse.

The same scanner serves the write path (``redact``), submit (``find_secrets_in_memory_file``)
and bulk scans (``find_secrets``). Rules are compiled on first use, so importing this
package is cheap.
"""

from __future__ import annotations

from openmemex.redact.assign import ENTROPY_RULE_PREFIX
from openmemex.redact.engine import PRIVATE_REPLACEMENT, find_secrets, redact, rule_ids
from openmemex.redact.findings import Finding, RedactResult
from openmemex.redact.masking import is_masked, mask_value
from openmemex.redact.memfile import find_secrets_in_memory_file, generated_value_spans
from openmemex.redact.user import ALLOW_MARKER, UserRules

RULE_IDS: tuple[str, ...] = rule_ids()
"""Every built-in rule id (weak-name findings use ``ENTROPY_RULE_PREFIX`` + name instead)."""

__all__ = [
    "ALLOW_MARKER",
    "ENTROPY_RULE_PREFIX",
    "PRIVATE_REPLACEMENT",
    "RULE_IDS",
    "Finding",
    "RedactResult",
    "UserRules",
    "find_secrets",
    "find_secrets_in_memory_file",
    "generated_value_spans",
    "is_masked",
    "mask_value",
    "redact",
]
