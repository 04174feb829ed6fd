"""Text that is safe to print on a terminal (issue 6, item 6).

A memory is text someone else may have written (a teammate's pull, a hand edit, an agent):
ESC/CSI/OSC sequences in it would retitle the terminal, clear the screen or hide lines, and
bidi overrides would make it read differently from what it is. Every human-text print goes
through :func:`safe`, which turns such characters into visible escapes. JSON output goes
through :func:`json_text`: ``json.dumps`` escapes C0 controls only, so the others (C1's CSI
U+009B, bidi overrides) become ``\\uXXXX`` escapes too — the same string to a program
reading it, inert on a terminal.

Only ``re`` is imported: this module sits on every CLI path and in the core's warnings.
"""

from __future__ import annotations

import re

__all__ = ["UNSAFE", "json_text", "safe", "safe_line"]

# C0 controls except \t and \n, DEL, C1 controls; bidi embeddings/overrides (U+202A–U+202E)
# and isolates (U+2066–U+2069), the Trojan Source set; lone surrogates (undecodable bytes
# smuggled in through surrogateescape), which a UTF-8 stream refuses to encode.
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
# what a line may not hold besides: \n and the Unicode line/paragraph separators (\r, VT, FF
# and NEL U+0085 are in UNSAFE already)
LINE_BREAKS = re.compile("[\n\u2028\u2029]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def safe(text: str) -> str:
    """``text`` with every terminal-control character shown as a visible escape.

    ESC → ``\\x1b``, BEL → ``\\x07``, CR → ``\\x0d``, U+202E → ``\\u202e``; ``\\n`` and ``\\t``
    are kept, and a literal backslash stays as it is. Text without such characters is
    returned unchanged (one regex scan, no copy).
    """
    if UNSAFE.search(text) is None:
        return text
    return UNSAFE.sub(_escape, text)


def safe_line(text: str) -> str:
    """:func:`safe`, and every line break shown as an escape too (``\\n`` → ``\\x0a``, U+2028 →
    ``\\u2028``): for output read one record per line — ``path:line: …`` findings, which a CI
    log or a runner (GitHub Actions' ``::error`` commands) splits on line breaks, so a file
    name holding one could otherwise start a line of its own choosing."""
    return LINE_BREAKS.sub(_escape, safe(text))


def json_text(document: object, **options: object) -> str:
    """``json.dumps(document, ensure_ascii=False, **options)`` with every ``UNSAFE``
    character left by it written as a JSON ``\\uXXXX`` escape: equal JSON, safe to print."""
    import json

    text = json.dumps(document, ensure_ascii=False, **options)  # type: ignore[arg-type]
    if UNSAFE.search(text) is None:
        return text
    return UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
