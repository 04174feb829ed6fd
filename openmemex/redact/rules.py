"""Built-in secret rules for the write-path redactor (D14).

Every memory write masks what these rules find, so each rule has to be specific enough not to
mangle ordinary notes. Token rules carry a boundary guard (the character before the prefix is
not ``[A-Za-z0-9_-]``) so words such as "task-management" never look like an ``sk-`` key.
The guard is a look-behind placed *after* the literal prefix: a pattern that starts with a
literal lets ``re`` skip ahead quickly, which keeps a 2 KB write well under a millisecond.
All patterns are ASCII-only and compiled once, at import.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

ENTROPY_RULE_PREFIX = "high-entropy-secret:"
"""Entropy findings are reported as this prefix followed by the assignment's name."""

ENTROPY_THRESHOLD = 4.5
"""Minimum Shannon entropy (bits per character) of a high-entropy value."""

ENTROPY_MIN_LENGTH = 24
GENERIC_RULE_ID = "generic-secret-assignment"


@dataclass(frozen=True)
class Rule:
    """A regex rule; ``group`` selects the part that is masked (0 = whole match)."""

    id: str
    pattern: re.Pattern[str]
    group: int = 0
    accept: Callable[[str], bool] | None = None


@dataclass(frozen=True)
class NamedRule:
    """A ``name = value`` rule: fires when ``name`` fully matches; only the value is masked."""

    id: str
    name: re.Pattern[str]
    accept: Callable[[str], bool]


def _has_digit(value: str) -> bool:
    """Random tokens practically always contain a digit; identifiers and prose often do not."""
    return any("0" <= ch <= "9" for ch in value)


def _not_one_char(value: str) -> bool:
    """``password: aaaa…`` is a placeholder, not a secret."""
    return len(set(value)) > 1


def _token(
    rule_id: str, prefix: str, width: int, body: str, accept: Callable[[str], bool] | None = None
) -> Rule:
    """A prefixed token, masked whole; ``width`` is the prefix length for the boundary guard."""
    guard = rf"(?<![A-Za-z0-9_-].{{{width}}})"
    return Rule(rule_id, re.compile(prefix + guard + body), 0, accept)


_AWS_SECRET_VALUE = re.compile(r"[A-Za-z0-9/+=]{40}")

# Regex rules. Order only breaks ties between equal spans: specific before generic.
RULES: tuple[Rule, ...] = (
    Rule(
        "private-key-block",
        re.compile(
            r"-----BEGIN[ A-Z0-9]*PRIVATE KEY[ A-Z0-9]*-----"
            r"(?:.*?-----END[ A-Z0-9]*PRIVATE KEY[ A-Z0-9]*-----|.*)",
            re.DOTALL,
        ),
    ),
    _token("anthropic-api-key", "sk-ant-", 7, r"[A-Za-z0-9_-]{20,}"),
    _token("openai-admin-key", "sk-admin-", 9, r"[A-Za-z0-9_-]{20,}"),
    _token("openai-key", "sk-", 3, r"[A-Za-z0-9_-]{20,}"),
    _token("openai-session-key", "sm_", 3, r"[A-Za-z0-9_-]{20,}", _has_digit),
    _token("github-pat", "ghp_", 4, r"[A-Za-z0-9]{30,}"),
    _token("github-oauth-token", "gho_", 4, r"[A-Za-z0-9]{30,}"),
    _token("github-user-token", "ghu_", 4, r"[A-Za-z0-9]{30,}"),
    _token("github-app-token", "ghs_", 4, r"[A-Za-z0-9]{30,}"),
    _token("github-refresh-token", "ghr_", 4, r"[A-Za-z0-9]{30,}"),
    _token("github-fine-grained-pat", "github_pat_", 11, r"[A-Za-z0-9_]{40,}"),
    _token("aws-access-key-id", "(?:AKIA|ASIA)", 4, r"[0-9A-Z]{16}(?![A-Za-z0-9])"),
    _token("slack-token", "xox[baprs]-", 5, r"[A-Za-z0-9-]{10,}"),
    _token("google-api-key", "AIza", 4, r"[0-9A-Za-z_-]{30,}"),
    _token("npm-token", "npm_", 4, r"[A-Za-z0-9]{30,}"),
    _token("gitlab-pat", "glpat-", 6, r"[A-Za-z0-9_-]{20,}"),
    _token("stripe-secret-key", "sk_(?:live|test|prod)_", 8, r"[A-Za-z0-9]{20,}"),
    _token("stripe-restricted-key", "rk_(?:live|test|prod)_", 8, r"[A-Za-z0-9]{20,}"),
    _token("stripe-webhook-secret", "whsec_", 6, r"[A-Za-z0-9+/=]{20,}"),
    _token("jwt", "eyJ", 3, r"[A-Za-z0-9_-]{7,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"),
    Rule(
        "bearer-token",
        re.compile(r"(?i:bearer)(?<![A-Za-z0-9](?i:bearer))[ \t]+([A-Za-z0-9_\-./+=~]{20,})"),
        1,
        _has_digit,
    ),
    # scheme://user:password@host: only the password is masked.
    Rule("url-credentials", re.compile(r"://[^\s:/@]+:([^\s/@]+)@"), 1),
)

# Assignment rules, checked on the name in front of each ASSIGNMENT match.
NAMED_RULES: tuple[NamedRule, ...] = (
    NamedRule(
        "aws-secret-access-key",
        re.compile(r"(?:.*[^A-Za-z0-9])?aws[_-]?secret[_-]?access[_-]?key", re.IGNORECASE),
        lambda value: _AWS_SECRET_VALUE.fullmatch(value) is not None,
    ),
    NamedRule(
        GENERIC_RULE_ID,
        re.compile(
            r".*(?:api[_-]?key|secret(?:[_-]?key)?|passw(?:or)?d"
            r"|(?:auth|access|refresh)[_-]?token|token)",
            re.IGNORECASE,
        ),
        _not_one_char,
    ),
)

RULE_IDS: tuple[str, ...] = tuple(rule.id for rule in RULES) + tuple(r.id for r in NAMED_RULES)
"""Every built-in rule id (entropy findings use ``ENTROPY_RULE_PREFIX`` + name instead)."""

# The operator and value of ``name = value`` / ``name: value`` (the name is read backwards by
# the engine). The value is 16+ chars of [A-Za-z0-9_-./+=], optionally quoted, and may not end
# with '.', which ends a sentence. Starting at the operator keeps the scan fast.
ASSIGNMENT = re.compile(r"""(?::=|[:=])[ \t]*["']?([A-Za-z0-9_\-./+=]{15,}[A-Za-z0-9_\-/+=])""")
NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.")

# Entropy heuristic: the name (2-64 identifier chars, '-' allowed inside) and digest guards.
ENTROPY_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{1,63}")
ENTROPY_NAME_STOPWORDS = frozenset(
    {"hash", "digest", "checksum", "integrity", "sha", "sha1", "sha256", "sha512", "md5",
     "etag", "commit", "rev", "revision", "uuid", "guid"}
)  # fmt: skip
HEX_DIGEST = re.compile(r"[0-9A-Fa-f]+")
