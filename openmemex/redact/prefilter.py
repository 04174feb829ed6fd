"""The keyword prefilter: a few cheap passes over the lower-cased text find every place
worth a look, so a hundred rules cost about as much as three.

gitleaks and trufflehog run an Aho-Corasick automaton over all rule keywords and start a
rule only where one of its keywords occurs. The standard library has no Aho-Corasick; a
regex that is a *trie* of the keywords does the same job, but ``re`` tries a trie's
alternatives at every position (~35 ns a character here). So the keywords are split by
where they can occur, and each group gets the cheapest pass that finds it:

* **boundary** keywords begin a provider token (``ghp_``, ``akia``, ``xoxb-``): their trie
  is searched as ``[^a-z0-9](?=<16 token characters>)(?:trie)``, which ``re`` skips
  through with a character-class test at all other positions (~8 ns a character), and
  which never stops at ordinary words, since every provider token is 16 characters or more;
* **symbol** keywords begin with a rarer character (``-----begin``, ``://``, ``_mmk``,
  ``.atlasv1.``): their trie's first-character class is rare, so it is nearly free;
* **words** occur anywhere, inside names too (``key`` in ``DD_API_KEY``): found with
  ``str.find``, which runs at memory speed;
* **credential words** (``password``, ``token``, ``key`` …) are everywhere in code, and
  almost always *used* there (``get_token(``, ``key.encode()``), not given a value: each
  gets its own regex, the word as a literal prefix (``re`` scans for it at ``str.find``
  speed) and a lookahead for what must follow a name that is given a value — an
  operator and a value, or a prose "is"/"for". Only those places reach Python.

A trie reports the longest keyword at each position, so a keyword also fires the triggers
of its prefixes (``sk_live_`` fires ``sk_`` and ``sk``). Each keyword maps to *triggers*: a
provider token rule to try right there, a handler to read from there (a PEM key, the name
and value around a credential word), or a line handler (URL credentials, auth headers)
to run once over the line around it.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from openmemex.redact.findings import Candidate
from openmemex.redact.rules import TokenRule

AtHandler = Callable[[str, str, int, list[Candidate]], None]
"""Reads from a keyword's position: (text, lower-cased text, position, out)."""
LineHandler = Callable[[str, str, int, int, list[Candidate]], None]
"""Reads a window of text around a keyword: (text, lower-cased text, start, end, out)."""

# Where a keyword is looked for.
BOUNDARY, SYMBOL, WORD, CREDENTIAL = "boundary", "symbol", "word", "credential"
# Keywords of the line handlers, with what must follow them for the handler to find anything.
FOLLOWS = {
    "authorization": r"""(?=["']?[ \t]*[:=][ \t]*["']?(?:[a-z0-9-]{2,20}[ \t]+)?[a-z0-9._~+/=-]{8})""",
    "bearer": r"[ \t]+(?=[a-z0-9._~+/-]{16})",
    "basic": r"[ \t]+(?=[a-z0-9+/]{8})",
    "curl": r"(?=[^\n]*[ \t](?:-u|--user|--proxy-user)[ \t=])",
    # userinfo before a host: scheme://user:password@host, https://token@host
    "://": r"(?=[^\s/@\"'`<>]{1,300}@)",
    # a command-line flag given a credential: --password hunter2, --token=…
    "--": r"(?=[a-z0-9-]{0,40}(?:pass|pw|secret|token|key|auth|cred)[a-z0-9-]{0,40}(?:=|[ \t]+[^\s-]))",
    # a netrc line: machine HOST login USER password PASS
    "machine": r"(?=[ \t][^\n]*[ \t]passw(?:or)?d[ \t]+\S)",
}
# What follows a credential word given a value: the rest of the name, then an operator and
# a value of 4+ characters (or a typed annotation, a table cell, an XML element, a NuGet
# value attribute), or a prose word. Lower-case text, so no case folding.
_GIVEN = r"""(?=[a-z0-9_.-]{0,60}(?:
      ["'`*\])]{0,3}[ \t]*(?:::?=|:(?![:/])|=(?![=>~])|=>|\?=|：)[ \t]*{VALUE}
    | ["'`*\])]{0,3}[ \t]*:[ \t]*[a-z_][\w.\[\], |]{0,40}?[ \t]+=(?![=>~])[ \t]*{VALUE}
    | [ \t]*\|
    | [ \t]+(?:for|of|on|to|in|at|from|is|was|are|became|set|changed|reset|updated|now)[ \t]
    | >[^<\n]{5}
    | "[ \t]+value="
    | [ \t]*(?:是|为|：)
))"""
_SHORTEST = {"key": 8}  # a weak word: what it names is machine-made, never a short password


def _given(word: str) -> str:
    """The lookahead for a credential word: values of 5+ characters (8+ after ``key``)."""
    n = _SHORTEST.get(word, 5)
    # an unquoted value that starts like code (os.environ…, getenv(…, env[…) is a reference
    value = rf"""(?:["'`][^"'`\n]{{{n}}}|(?![a-z_$]{{1,25}}(?:\.[a-z_]|\(|\[))[^\s"'`,;<>|()]{{{n}}})"""
    guard = {"auth": "(?!or)", "pat": "(?![a-z0-9])"}.get(word, "")  # not author, not path or pattern
    return guard + _GIVEN.replace("{VALUE}", value)


# What follows a boundary keyword: a provider token is at least 16 characters long.
_LONG_TOKEN = r"(?=[a-z0-9][a-z0-9_.~+/=:$%-]{15})"


@dataclass
class TokenTrigger:
    """Try a provider token rule at the keyword. The rule's regex is compiled the first
    time one of its keywords is seen: most texts never need most rules."""

    rule: TokenRule
    _regex: re.Pattern[str] | None = None

    @property
    def regex(self) -> re.Pattern[str]:
        if self._regex is None:
            self._regex = re.compile(self.rule.pattern)
        return self._regex


@dataclass(frozen=True)
class AtTrigger:
    """Read on from the keyword (a PEM key, the name and value around a credential word)."""

    handler: AtHandler


@dataclass(frozen=True)
class LineTrigger:
    """Run once over the line around the keyword (URL credentials, auth headers)."""

    handler: LineHandler


Trigger = TokenTrigger | AtTrigger | LineTrigger


@dataclass
class KeywordIndex:
    """Keywords → triggers, and the passes that find the keywords."""

    boundary: re.Pattern[str]
    boundary_at_start: re.Pattern[str]
    """The boundary trie for position 0, where no boundary character precedes."""
    symbol: re.Pattern[str] | None
    words: tuple[str, ...]
    credentials: tuple[tuple[str, str], ...]
    """The credential words and filtered keywords, each with its regex source."""
    _compiled: dict[str, re.Pattern[str]] = field(default_factory=dict)
    triggers: dict[str, dict[str, tuple[Trigger, ...]]] = field(default_factory=dict)
    """Per pass (``BOUNDARY`` …), keyword → what it fires."""

    def hits(self, low: str) -> Iterator[tuple[int, tuple[Trigger, ...]]]:
        """Every keyword position in ``low`` with what it triggers; each position once per
        pass (the longest keyword there)."""
        boundary = self.triggers.get(BOUNDARY, {})
        m = self.boundary_at_start.match(low)
        if m is not None:
            yield 0, boundary[m.group()]
        search = self.boundary.search
        pos = 0
        while (m := search(low, pos)) is not None:
            at = m.start() + 1
            yield at, boundary[m.group()[1:]]
            pos = at
        if self.symbol is not None:
            symbol = self.triggers[SYMBOL]
            search = self.symbol.search
            pos = 0
            while (m := search(low, pos)) is not None:
                at = m.start()
                yield at, symbol[m.group()]
                pos = at + 1
        find = low.find
        for word in self.words:
            fired = self.triggers[WORD][word]
            at = find(word)
            while at >= 0:
                yield at, fired
                at = find(word, at + 1)
        ascii_only = low.isascii()  # O(1): a flag CPython keeps on every string
        credential = self.triggers.get(CREDENTIAL, {})
        for word, source in self.credentials:
            # ``in`` first: cheaper than starting a regex scan, and most words are absent
            if (ascii_only and not word.isascii()) or word not in low:
                continue
            rx = self._compiled.get(word)
            if rx is None:
                rx = self._compiled[word] = re.compile(source, re.VERBOSE)
            fired = credential[word]
            for m in rx.finditer(low):
                yield m.start(), fired


def trie_regex(keywords: Iterable[str]) -> str:
    """A regex matching any of ``keywords``, longest first at each position."""
    root: dict[str, dict[str, object]] = {}
    for word in keywords:
        node = root
        for ch in word:
            node = node.setdefault(ch, {})  # type: ignore[assignment]
        node[""] = {}

    def emit(node: dict[str, dict[str, object]]) -> str:
        ends = "" in node
        branches = [re.escape(ch) + emit(child) for ch, child in sorted(node.items()) if ch]  # type: ignore[arg-type]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        return f"(?:{body})?" if ends else body

    return emit(root)


def build(entries: Iterable[tuple[str, str, Trigger]]) -> KeywordIndex:
    """Index ``(keyword, where, trigger)`` entries. A keyword may be looked for in two ways
    (``pat`` starts an Airtable token and ends ``GITHUB_PAT``); each pass fires its own."""
    own: dict[tuple[str, str], list[Trigger]] = defaultdict(list)
    for word, group, trigger in entries:
        if word != word.lower() or not word:
            raise ValueError(f"keywords are lower-case and non-empty: {word!r}")
        own[group, word].append(trigger)
    triggers: dict[str, dict[str, tuple[Trigger, ...]]] = defaultdict(dict)
    for (group, word), mine in own.items():
        # prefixes found by the same trie at the same position
        inherited = [t for (g, other), ts in own.items()
                     if g == group != WORD and other != word and word.startswith(other) for t in ts]  # fmt: skip
        triggers[group][word] = tuple(mine + inherited)
    boundary = trie_regex(triggers[BOUNDARY])
    symbols = list(triggers[SYMBOL])
    return KeywordIndex(
        boundary=re.compile(f"[^a-z0-9]{_LONG_TOKEN}(?:{boundary})"),  # after _ or - too: rules.GLUED
        boundary_at_start=re.compile(f"{_LONG_TOKEN}(?:{boundary})"),
        symbol=re.compile(trie_regex(symbols)) if symbols else None,
        words=tuple(triggers[WORD]),
        credentials=tuple((w, re.escape(w) + (FOLLOWS.get(w) or _given(w))) for w in triggers[CREDENTIAL]),
        triggers=dict(triggers),
    )


def group_of(keyword: str, boundary_token: bool) -> str:
    """Where a keyword is looked for: at the start of a long token (provider tokens), by
    its rare first character, or anywhere."""
    if not keyword[0].isalnum():
        return SYMBOL
    return BOUNDARY if boundary_token else WORD
