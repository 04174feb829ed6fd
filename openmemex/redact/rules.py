"""Rule types shared by the provider tables.

Two kinds of provider rule, both keyed by lower-case keywords that the prefilter finds first:

* ``TokenRule``: a token that gives itself away by its shape (``ghp_…``, ``AKIA…``,
  ``xoxb-…``). The regex runs only at the places where one of its keywords occurs, so a
  hundred such rules cost one pass over the text, not a hundred.
* ``ContextRule``: a value that is only recognisable next to its provider's name
  (``DATADOG_API_KEY=<32 hex>``). It is checked on the ``name = value`` pairs and prose
  statements the generic parser already found, never on free text.

Patterns are kept as source strings and compiled on first use (``engine.index``), so
importing this package costs no regex compilation on the CLI's or a hook's start-up path.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

# Boundaries around a token. Before it: no token character (so ``task-`` never starts an
# ``sk-`` key). After it: no character of the token alphabet, but sentence punctuation
# (``.``, ``,``, ``)``) is fine, unlike gitleaks' closing class.
LEFT = r"(?<![A-Za-z0-9_-])"
# A distinctive prefix may also follow ``_`` or ``-``: names glue a token to themselves
# (``GH_TOKEN_ghp_…``, ``aws-key-AKIA…``, a file ``deploy-glpat-….txt``). A short or
# generic one (``sk-``, ``key-``, ``api-`` before a hash or a UUID) keeps ``LEFT``: after
# ``_``/``-`` it is far more often part of a name (``cache-key-<md5>``, ``svc-api-<uuid>``).
GLUED = r"(?<![A-Za-z0-9])"
RIGHT = r"(?![A-Za-z0-9_-])"
RIGHT_ALNUM = r"(?![A-Za-z0-9])"

UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"


@dataclass(frozen=True)
class TokenRule:
    """A provider token found by its own shape; group ``s`` of ``pattern`` is the secret.

    ``back`` is how far before the keyword the match may start: 0 means the token begins
    with its keyword; otherwise a short window around the keyword is searched.
    """

    id: str
    family: str
    keywords: tuple[str, ...]
    pattern: str
    back: int = 0
    entropy: float = 0.0
    check: Callable[[str], bool] | None = None
    boundary: bool = True
    """The keyword starts a token, so the prefilter looks for it only after a boundary."""


@dataclass(frozen=True)
class ContextRule:
    """A provider secret recognised by the name it is assigned to.

    ``names`` are lower-case substrings; the name (or the prose phrase before "is") must
    contain one of them and, when ``also`` is set, one of those too. ``value`` must match
    the whole value.
    """

    id: str
    family: str
    names: tuple[str, ...]
    value: str
    also: tuple[str, ...] = ()
    entropy: float = 0.0


def token(rule_id: str, family: str, prefix: str, body: str, *, keywords: tuple[str, ...] | None = None,
          entropy: float = 0.0, right: str = RIGHT, check: Callable[[str], bool] | None = None,
          glued: bool | None = None, glued_when: str = "") -> TokenRule:  # fmt: skip
    """A token that starts with ``prefix`` (a literal unless ``keywords`` are given).
    ``glued``: found after ``_`` or ``-`` too (``GLUED``), and before them when the body
    holds neither; by default when every keyword has four characters or more.
    ``glued_when``: glued only when the token starts so (``sk-proj-`` but not ``sk-``).
    A glued match must look random past its keyword (``engine.random_past_keyword``)."""
    literal = keywords is None
    source = re.escape(prefix) if literal else prefix
    words = (prefix.lower(),) if keywords is None else keywords
    if glued is None:
        glued = min(len(w) for w in words) >= 4
    left = GLUED if glued else LEFT
    if glued_when:
        left = f"(?:{GLUED}(?={glued_when})|{LEFT})"
    if (glued or glued_when) and right == RIGHT and not _admits_separator(body):
        right = RIGHT_ALNUM  # the body cannot run on into a _ or - after it: a name may
    return TokenRule(rule_id, family, words, f"{left}(?P<s>{source}{body}){right}", 0, entropy, check, True)


_CLASS = re.compile(r"\[(?:\\.|[^\]])*\]")


def _admits_separator(body: str) -> bool:
    """Whether ``body`` can hold a ``_`` or ``-`` (in a character class or as a literal)."""
    if "_" in _CLASS.sub("", body) or "-" in _CLASS.sub("", body):
        return True
    return any(re.fullmatch(c, "_") or re.fullmatch(c, "-") for c in _CLASS.findall(body))


def inner(rule_id: str, family: str, keywords: tuple[str, ...], pattern: str, back: int, *,
          entropy: float = 0.0, check: Callable[[str], bool] | None = None, boundary: bool = False) -> TokenRule:  # fmt: skip
    """A secret found next to or around its keyword (``AccountKey=…``, ``…Q~…``, ``…NRAL``):
    matched at the keyword, or searched in a window that starts ``back`` characters before
    it. ``boundary``: the keyword itself starts a token (``AccountKey=`` after ``;``)."""
    return TokenRule(rule_id, family, keywords, pattern, back, entropy, check, boundary)


def context(rule_id: str, family: str, names: tuple[str, ...], value: str, *, also: tuple[str, ...] = (),
            entropy: float = 0.0) -> ContextRule:  # fmt: skip
    """A value recognised by its provider's name nearby."""
    return ContextRule(rule_id, family, names, value, also, entropy)
