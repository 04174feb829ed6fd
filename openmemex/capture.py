"""Keyword capture (design §8, D65–D67): "remember that …" in the user's own message is
saved without the model having to decide.

Rules, each from a decision:
- A trigger is a statement *to the store*, never narration: "remind me to …", 记得…,
  bare 别忘了带伞 and "don't forget the wifi password" are not triggers; the two ambiguous
  forms need a marker (别忘了：…, "don't forget: …", "don't forget that …") (D67).
- 我 routes to personal, 我们 to the project; personal patterns go first and a personal
  match claims its line even when its body is rejected, so 记住我：OK never falls through
  to the project pattern as "我：OK" (D65, D67).
- The 帮/替 family takes the full verb phrase: 记 + 住|录 (never followed by a verb
  continuation such as 得/着) + optional 一下, or a bare 记 followed by a separator — so
  帮我记一下这个配置 captures and 帮我记得带伞 cannot produce mid-word garbage (D66, D67).
- Bodies under 3 or over 2000 characters are dropped, and the drop is reported, never
  silent (D67). Lines are scanned one at a time; each pattern fires once per message.
  A sentence's closing punctuation is not part of the body.

Precision over recall: a false trigger writes state nobody reviewed, a missed one costs a
sentence. So pasted material is not read: lines inside ``` fences and indented lines
(tool output, logs: pip's "  note: …", rustc's "note: …" are usually pasted so) are
skipped; "TIL" counts only in capitals ("til the build passes" is not a lesson);
"remember me …" is about a login box; and a 我觉得/我喜欢 line that addresses the agent
(你/您: "我觉得这个方案不好，你再想想") is talk, not a preference to store. Only ``re`` is
imported: this runs on every prompt.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .context import Context

MIN_BODY = 3
MAX_BODY = 2000
SEP = r"[:：,，]"

# (name, pattern, keep the whole line as the body). Group "body" is the memory.
_PERSONAL: tuple[tuple[str, str, bool], ...] = (
    ("remember-for-me", rf"remember\s+for\s+me(?:\s+that)?(?:\s*{SEP}\s*|\s+)(?P<body>.+)", False),
    ("help-me-remember", rf"help\s+me\s+remember(?:\s+that)?(?:\s*{SEP}\s*|\s+)(?P<body>.+)", False),
    ("记住（个人）", rf"(?:请)?记住(?:（个人）|\(个人\))\s*{SEP}?\s*(?P<body>.+)", False),
    ("记住我", rf"(?:请)?记住我(?!们)\s*{SEP}?\s*(?P<body>.+)", False),
    ("帮我记/替我记", rf"(?:请)?(?:帮|替)我(?!们)记(?:(?:住|录)(?![得着])(?:一下)?\s*{SEP}?|一下\s*{SEP}?|\s*{SEP})\s*(?P<body>.+)", False),
    ("我觉得", r"(?P<body>我觉得.+)", True),
    ("我喜欢", r"(?P<body>我喜欢.+)", True),
)  # fmt: skip

_PROJECT: tuple[tuple[str, str, bool], ...] = (
    ("remember", rf"(?:please\s+)?remember(?!\s+(?:for\s+)?me\b)(?:\s*{SEP}\s*|\s+)(?:that\s+|to\s+)?(?P<body>.+)", False),
    ("note", rf"(?:please\s+)?note(?:\s+that)?(?:\s*{SEP}\s*|\s+)(?P<body>.+)", False),
    ("don't-forget", rf"(?:don'?t|do\s+not)\s+forget(?:\s+that\s+|\s*{SEP}\s*)(?P<body>.+)", False),
    ("til", rf"(?-i:TIL)(?:\s*{SEP}\s*|\s+)(?P<body>.+)", False),
    # "save this file and …" is an instruction about a file: a separator is required (D67)
    ("save-this", rf"save\s+(?:this\s*{SEP}|to\s+memory(?:\s*{SEP}|\s))\s*(?P<body>.+)", False),
    ("记住", rf"(?:请)?记住(?!我(?!们)|（个人）|\(个人\))\s*{SEP}?\s*(?P<body>.+)", False),
    ("记一下", rf"(?:请)?记(?:录)?一下\s*{SEP}?\s*(?P<body>.+)", False),
    ("别忘了", rf"别忘了\s*{SEP}\s*(?P<body>.+)", False),
    ("帮我们记", rf"(?:请)?帮我们记(?:(?:住|录)(?![得着])(?:一下)?\s*{SEP}?|一下\s*{SEP}?|\s*{SEP})\s*(?P<body>.+)", False),
    ("我们认为", r"(?P<body>我们认为.+)", True),
    ("我们决定", r"(?P<body>我们决定.+)", True),
)  # fmt: skip

# Cheap gate before any regex: a prompt without one of these cannot trigger (the hook's
# fast path returns on it without opening the index).
TRIGGER_WORDS = ("remember", "note", "forget", "til", "save", "记", "别忘了", "我们认为", "我们决定", "我觉得", "我喜欢")


def _compile(rules: tuple[tuple[str, str, bool], ...]) -> tuple[tuple[str, re.Pattern[str]], ...]:
    return tuple((name, re.compile(rf"^\s*{pattern}$", re.IGNORECASE)) for name, pattern, _ in rules)


_STATEMENTS = frozenset(name for name, _, whole in _PERSONAL + _PROJECT if whole)
PERSONAL = _compile(_PERSONAL)
PROJECT = _compile(_PROJECT)
_TRAILING = re.compile(r"[\s.!?。！？]+$")


@dataclass(frozen=True)
class Hit:
    pattern: str
    body: str
    personal: bool  # forced to the personal scope by the pattern (我)


@dataclass(frozen=True)
class Drop:
    pattern: str
    body: str
    reason: str  # too-short | too-long | refused
    why: str = ""  # the write path's refusal, for "refused"

    def told(self) -> str:
        """Why nothing was saved, as the hook says it."""
        if self.reason == "too-short":
            return f"{len(self.body)} characters (at least {MIN_BODY} needed)"
        if self.reason == "too-long":
            return f"too long ({MAX_BODY} at most)"
        return f"refused: {self.why}"


@dataclass
class Scan:
    hits: list[Hit] = field(default_factory=list)
    dropped: list[Drop] = field(default_factory=list)


def may_trigger(text: str) -> bool:
    """False when no trigger word occurs at all: the common case, decided in microseconds."""
    lowered = text.lower()
    return any(word in lowered for word in TRIGGER_WORDS)


def scan(text: str) -> Scan:
    """The captures one user message makes, and the matches dropped with their reason."""
    result = Scan()
    if not may_trigger(text):
        return result
    fired: set[str] = set()
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if fenced or not line.strip() or line.startswith(("  ", "\t")):
            continue
        claimed = False
        for rules, personal in ((PERSONAL, True), (PROJECT, False)):
            for name, pattern in rules:
                if name in fired:
                    continue
                match = pattern.match(line)
                if match is None:
                    continue
                fired.add(name)
                claimed = True
                body = _TRAILING.sub("", match.group("body").strip())
                if name in _STATEMENTS and ("你" in body or "您" in body):
                    break  # said to the agent, not a preference to keep
                if len(body) < MIN_BODY:
                    result.dropped.append(Drop(name, body, "too-short"))
                elif len(body) > MAX_BODY:
                    result.dropped.append(Drop(name, body, "too-long"))  # shown cut, after redaction (``shown``)
                else:
                    result.hits.append(Hit(name, body, personal))
                break
            if claimed:
                break
    return result


@dataclass
class Captured:
    id: str
    scope: str
    status: str  # saved | exists
    body: str  # as stored: redacted
    pattern: str
    masked: list[str] = field(default_factory=list)


def capture(ctx: Context, found: Scan) -> tuple[list[Captured], list[Drop]]:
    """Save what ``scan`` found, through the one write path (redaction, dedup, locks):
    type fact, tag ``keyword``, source ``keyword`` — the mark the turn-echo guard (D73)
    looks for when the agent tries to save the same sentence right after."""
    from .errors import UsageError
    from .write import add_memory, clean

    saved: list[Captured] = []
    refused: list[Drop] = []
    for hit in found.hits:
        try:
            result = add_memory(ctx, hit.body, scope="personal" if hit.personal else "project", type="fact",
                                tags=["keyword"], source="keyword")  # fmt: skip
        except UsageError as exc:  # this line's text (a NUL, a conflict marker …): the others still count
            refused.append(Drop(hit.pattern, hit.body, "refused", str(exc)))
            continue
        body = result.memory.body if result.memory is not None else clean(ctx, hit.body).text
        saved.append(Captured(result.id, result.scope, result.status, body, hit.pattern, result.masked))
    return saved, [shown(ctx, drop) for drop in [*found.dropped, *refused]]


def shown(ctx: Context, drop: Drop) -> Drop:
    """A dropped match as it may be shown: redacted first (a secret in it is masked as a
    saved one is), then cut to 80 characters when it was too long."""
    from .write import clean

    text = clean(ctx, drop.body).text
    return Drop(drop.pattern, text if drop.reason == "too-short" else text[:80], drop.reason, drop.why)
