"""Private keys and signed tokens: PEM blocks of every kind, PuTTY keys, age keys, JWTs.

A PEM block is masked as its whole body (header and footer stay readable, so a reader
still sees that a key was there): multi-line, indented, or JSON-escaped on one line
(``"-----BEGIN PRIVATE KEY-----\\nMIIE…\\n-----END PRIVATE KEY-----\\n"`` in a GCP
service-account file). A block cut off before its END line is masked as far as its
base64 lines go, not to the end of the note.
"""

from __future__ import annotations

import base64
import binascii
import re

from openmemex.redact.findings import SPECIFIC, Candidate
from openmemex.redact.masking import is_masked
from openmemex.redact.rules import RIGHT, TokenRule, token

PEM = "private-key-block"
PUTTY = "putty-private-key"

_BEGIN = re.compile(r"-----BEGIN[ A-Z0-9_-]{0,40}PRIVATE KEY(?: BLOCK)?-----|---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----")
_END = re.compile(r"-----END[ A-Z0-9_-]{0,40}PRIVATE KEY(?: BLOCK)?-----|---- END SSH2 ENCRYPTED PRIVATE KEY ----")
_MAX_BODY = 40_000
# The body of a cut-off block: header lines (Proc-Type, DEK-Info, Version, Comment …), then
# base64 lines; or, JSON-escaped, base64 and \n escapes on one line.
_HEADERS = re.compile(r"(?:[ \t]*(?:\r?\n|\\n))*(?:[ \t]*[A-Za-z][\w-]*:[^\n\\]*(?:\r?\n|\\n))*(?:[ \t]*(?:\r?\n|\\n))*")
_B64_LINES = re.compile(r"(?:[ \t]*[A-Za-z0-9+/=]{4,}[ \t]*(?:\r?\n|\\[nr]|$))+", re.MULTILINE)
_EDGE = " \t\r\n"
_PUTTY = re.compile(r"Private-Lines:[ \t]*(?P<n>\d{1,4})[ \t]*\r?\n")


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    """Shrink ``start:end`` past blanks and ``\\n`` escapes, so the 4 characters kept by the
    mask are the key's own."""
    while start < end:
        if text[start] in _EDGE:
            start += 1
        elif text.startswith(("\\n", "\\r"), start):
            start += 2
        else:
            break
    while end > start:
        if text[end - 1] in _EDGE or text[end - 1] == '"':
            end -= 1
        elif end - start >= 2 and text[end - 2 : end] in ("\\n", "\\r"):
            end -= 2
        else:
            break
    return start, end


def _key_material(body: str) -> bool:
    """Base64 (with header lines and line breaks), long enough to be a key, not yet masked;
    a BEGIN line quoted in code or docs is followed by something else."""
    if len(body) < 32 or is_masked(body):
        return False
    b64 = sum(ch.isalnum() or ch in "+/=" for ch in body.replace("\\n", ""))
    return b64 >= 0.8 * len(body.replace("\\n", ""))


def pem_block(text: str, low: str, pos: int, out: list[Candidate]) -> None:
    """A PEM private key whose header starts at ``pos``: its body."""
    head = _BEGIN.match(text, pos)
    if head is None:
        return
    body_start = head.end()
    limit = min(len(text), body_start + _MAX_BODY)
    tail = _END.search(text, body_start, limit)
    again = _BEGIN.search(text, body_start, tail.start() if tail else limit)
    if tail is not None and again is None:
        start, end = _trim(text, body_start, tail.start())
    else:
        headers = _HEADERS.match(text, body_start)
        lines_at = headers.end() if headers else body_start
        lines = _B64_LINES.match(text, lines_at)
        if lines is None:
            return
        start, end = _trim(text, body_start, lines.end())
    if _key_material(text[start:end]):
        out.append((start, end, SPECIFIC, PEM))


def putty_block(text: str, low: str, pos: int, out: list[Candidate]) -> None:
    """A PuTTY key file: the ``Private-Lines`` that follow."""
    m = _PUTTY.search(text, pos, min(len(text), pos + 20_000))
    if m is None:
        return
    stop = m.end()
    for _ in range(int(m.group("n"))):
        nl = text.find("\n", stop)
        stop = len(text) if nl < 0 else nl + 1
    start, end = _trim(text, m.end(), stop)
    if _key_material(text[start:end]):
        out.append((start, end, SPECIFIC, PUTTY))


def _jwt_header(value: str) -> bool:
    """A JWT's first part is base64url JSON naming its algorithm; base64 of any other JSON
    (cursors, flags) is not a JWT."""
    head = value.split(".", 1)[0]
    try:
        decoded = base64.urlsafe_b64decode(head + "=" * (-len(head) % 4))
    except (binascii.Error, ValueError):
        return False
    return decoded.startswith(b"{") and b'"alg"' in decoded


RULES: tuple[TokenRule, ...] = (
    token("age-secret-key", "keys", "AGE-SECRET-KEY-1", "[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}", entropy=3.5),
    token("jwt", "keys", "eyJ", r"[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}", entropy=3.0,
          right=RIGHT, check=_jwt_header),
)
BLOCK_KEYWORDS = {"-----begin": pem_block, "---- begin ssh2": pem_block, "putty-user-key-file-": putty_block}
