"""What a surface repeats of its caller's input — the id an error names, the query a
search answers, a hook's output quoted in a refusal — is masked like a memory's text: the
caller's words may hold a secret, and an agent's transcript travels to its model provider.
The ids open-memex generates stay readable (about one ULID in 3,000 looks random enough to
the scanner), and an echo is cut to a length (a 3 MB id made a 3 MB error)."""

from __future__ import annotations

import re

ULID = re.compile(r"(?<![0-9A-Za-z])[0-7][0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{25}(?![0-9A-Za-z])")
ECHO_LIMIT = 2000
NO_CUT = 1 << 62  # what a surface returns is its own size limits' business; only echoes are cut


def masked(text: str, limit: int = ECHO_LIMIT) -> str:
    """``text`` with every secret the scanner finds masked (first 4 characters kept), then
    cut to ``limit`` characters."""
    from .redact import find_secrets
    from .redact.masking import apply_masks

    ids = [m.span() for m in ULID.finditer(text)]
    spans = [(f.start, f.end) for f in find_secrets(text)
             if not any(a <= f.start and f.end <= b for a, b in ids)]  # fmt: skip
    if spans:
        text = apply_masks(text, spans)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def for_transcript(text: str) -> str:
    """Memory text on its way into an agent's transcript (an MCP result, the session-start
    block): masked again and made terminal-safe (``terminal.safe``), never cut. Text is masked
    when written, but a file edited by hand or pulled from a teammate can hold a token the
    write path never saw, and raw ESC/OSC 8/bidi characters that would show in the host's
    terminal as something else. One function for every surface that hands memory text to an
    agent."""
    from .terminal import safe

    return safe(masked(text, limit=NO_CUT))
