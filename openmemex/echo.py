"""What a surface repeats of its caller's input — the id an error names, the query a
search answers, a hook's output quoted in a refusal — is masked like a memory's text: the
caller's words may hold a secret, and an agent's transcript travels to its model provider.
The ids open-memex generates stay readable (about one ULID in 3,000 looks random enough to
the scanner), and an echo is cut to a length (a 3 MB id made a 3 MB error)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

ULID = re.compile(r"(?<![0-9A-Za-z])[0-7][0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{25}(?![0-9A-Za-z])")
ECHO_LIMIT = 2000
NO_CUT = 1 << 62  # what a surface returns is its own size limits' business; only echoes are cut


def masked(text: str, limit: int = ECHO_LIMIT, rules: Sequence[str] = ()) -> str:
    """``text`` with every secret the scanner finds masked (first 4 characters kept), then
    cut to ``limit`` characters. ``rules``: the user's ``redactPatterns`` (a ``UserRules``
    brings ``redactAllowlist`` along), as the write path applies them."""
    from .redact import find_secrets
    from .redact.masking import apply_masks

    ids = [m.span() for m in ULID.finditer(text)]
    spans = [(f.start, f.end) for f in find_secrets(text, rules)
             if not any(a <= f.start and f.end <= b for a, b in ids)]  # fmt: skip
    if spans:
        text = apply_masks(text, spans)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def for_transcript(text: str, memo: CleanMemo | None = None, rules: Sequence[str] = ()) -> str:
    """Memory text on its way into an agent's transcript (an MCP result, the session-start
    block): masked again and made terminal-safe (``terminal.safe``), never cut. Text is masked
    when written, but a file edited by hand or pulled from a teammate can hold a token the
    write path never saw, and raw ESC/OSC 8/bidi characters that would show in the host's
    terminal as something else. One function for every surface that hands memory text to an
    agent. ``memo``: texts already found clean need no scan (``CleanMemo``, which holds its own
    rules); ``rules``: the user's ``redactPatterns`` (``Config.redact_patterns``), so a token
    only the user's pattern knows is masked here as on a write."""
    from .terminal import safe

    return safe(memo.masked(text) if memo is not None else masked(text, limit=NO_CUT, rules=rules))


MEMO_FILE = "clean-texts.json"
MEMO_VERSION = 1
MEMO_KEEP = 4096  # digests kept: the texts of a few hundred session starts


class CleanMemo:
    """Digests of texts the scanner found nothing in, kept in the data root between
    processes. Every session start hands the same memory texts to the agent, and loading
    the scanner (importing and compiling its rules) cost more than the rest of the hook; a
    text whose digest is here is the very text the same rules found clean, so it is shown
    without a scan. The digests count only under the rules that judged them
    (``codestamp``: the package's and the scanner's files, Python's version and Unicode
    tables), so an upgrade, another Python or an edited rule scans every text again. A damaged or unwritable file only costs the scan."""

    def __init__(self, path: Path, rules: Sequence[str] = ()) -> None:
        self._path = path
        self._user = rules
        self._rules = _rules_stamp(rules)
        self._kept: list[str] = []
        self._known: set[str] = set()
        self._used: dict[str, None] = {}
        self._new = False
        import json

        try:
            data = json.loads(path.read_text("utf-8"))
        except (OSError, ValueError, RecursionError):
            return
        if isinstance(data, dict) and data.get("v") == MEMO_VERSION and data.get("rules") == self._rules:
            kept = data.get("clean")
            if isinstance(kept, list):
                self._kept = [d for d in kept if isinstance(d, str)]
        self._known = set(self._kept)

    def masked(self, text: str) -> str:
        """``masked(text)`` uncut, without the scan when ``text`` is known clean."""
        digest = _digest(text)
        if digest in self._known:
            self._used[digest] = None
            return text
        shown = masked(text, limit=NO_CUT, rules=self._user)
        if shown == text:
            self._used[digest] = None
            self._new = True
        return shown

    def save(self) -> None:
        """Keep this run's clean texts first, then the older ones (best effort)."""
        if not self._new:
            return
        import json

        from .store import write_cache

        kept = list(self._used) + [d for d in self._kept if d not in self._used]
        write_cache(self._path, json.dumps({"v": MEMO_VERSION, "rules": self._rules, "clean": kept[:MEMO_KEEP]}))


def _digest(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _rules_stamp(rules: Sequence[str] = ()) -> str:
    """What the scanner's verdicts depend on: this process's code and runtime (``codestamp``:
    the scanner's files and this one, Python's version and Unicode tables), and the user's
    patterns and allowlist."""
    import hashlib
    import json

    from .codestamp import STAMP

    allow = list(getattr(rules, "allowlist", ()) or ())
    user = json.dumps([list(rules), allow], ensure_ascii=False) if rules or allow else ""
    return STAMP if not user else hashlib.sha256(f"{STAMP}\0{user}".encode()).hexdigest()[:16]
