"""Credentials in URLs and HTTP auth: ``scheme://user:password@host`` (only the password is
masked, the user may be empty: ``redis://:pass@host``), Sentry DSNs, ``Authorization:``
headers, bare ``Bearer``/``Basic`` values and ``curl -u user:password``."""

from __future__ import annotations

import base64
import binascii
import re
import urllib.parse

from openmemex.redact import allow
from openmemex.redact.findings import GENERIC_TIER, SPECIFIC, Candidate

# A pasted password may hold a raw ? or # (not percent-encoded): the last @ before the host ends it.
_URL = re.compile(r"""(?P<scheme>[A-Za-z][A-Za-z0-9+.-]{0,30})://(?P<ui>[^\s/"'`<>()\[\]]+)@(?P<host>[^\s/?#"'`<>@:]+)(?P<rest>[^\s"'`<>]*)""")
_SENTRY_HOST = re.compile(r"(?:[\w-]+\.)*(?:ingest\.)?(?:[\w-]+\.)?sentry\.io|sentry\.[\w.-]+|[\w.-]*sentry[\w.-]*")
_HEX32 = re.compile(r"[a-f0-9]{32}")
_HEADER = re.compile(
    r"""(?i)(?<![\w-])(?:proxy-)?authorization["']?[ \t]*[:=][ \t]*["']?
    (?:(?P<scheme>bearer|basic|token|bot|digest|apikey|api-key|sso-key|hmac|aws4-hmac-sha256|negotiate|ntlm|key|jwt|otp)[ \t]+)?
    (?P<v>[^\s"',;]{1,2000})""",
    re.VERBOSE,
)
_BEARER = re.compile(r"(?i)(?<![\w-])bearer[ \t]+(?P<v>[A-Za-z0-9._~+/-]{16,2000}=*)")
_BASIC = re.compile(r"(?i)(?<![\w-])basic[ \t]+(?P<v>[A-Za-z0-9+/]{8,400}={0,2})(?![A-Za-z0-9+/=])")
_CURL_USER = re.compile(r"""(?<![\w-])(?:-u|--user|--proxy-user)(?:[ \t]+|=)(?P<q>["']?)(?P<user>[^\s:"'`]*):(?P<pw>[^\s"'`]+)(?P=q)""")
# Passwords that documentation and local dev setups use on purpose (tiger: Oracle's demo
# account scott/tiger, all over SQLAlchemy's docs).
_DEFAULT_PASSWORDS = frozenset({"password", "pass", "passwd", "pwd", "secret", "changeme", "postgres", "root",
                                "admin", "guest", "test", "user", "example", "mysql", "redis", "sa", "default",
                                "tiger"})  # fmt: skip

URL = "url-credentials"
SENTRY = "sentry-dsn"
HEADER = "authorization-header"
BEARER = "bearer-token"
BASIC = "basic-auth"
CURL = "curl-basic-auth"


def _real_password(password: str, user: str, *, encoded: bool = True) -> bool:
    if not password or password.lower() in _DEFAULT_PASSWORDS or password == user or "," in user:
        return False  # … or a list of hosts: https://a.com:123,b:c@d.com
    plain = urllib.parse.unquote(password) if encoded else password
    if allow.is_prose(plain) and not allow.word_password(plain, quoted=False):
        return False  # org:repo@sha, jo%40email.com:a%20secret@host: words from a doc
    # … but the place says "password", so one made of words is one: app:blueberry@db
    return not allow.is_placeholder(password) and not password.startswith(("$", "%", "{"))


def url_window(text: str, low: str, start: int, end: int, out: list[Candidate]) -> None:
    """``scheme://user:password@host``: the password; a DSN's key; a bare token as user."""
    if text.find("@", start, end) < 0:
        return
    for m in _URL.finditer(text, start, end):
        ui_start = m.start("ui")
        userinfo = m.group("ui")
        user, colon, password = userinfo.partition(":")
        if colon:
            if _real_password(password, user):
                pw_start = ui_start + len(user) + 1
                out.append((pw_start, pw_start + len(password), GENERIC_TIER, URL))
            continue
        if _HEX32.fullmatch(user) and (_SENTRY_HOST.fullmatch(m.group("host")) or m.group("rest").lstrip("/").isdigit()):
            out.append((ui_start, ui_start + len(user), SPECIFIC, SENTRY))
        elif len(user) >= 20 and allow.looks_random(user, 20, 3.5) and not allow.is_placeholder(user) \
                and not allow.is_hex(user):  # fmt: skip
            out.append((ui_start, ui_start + len(user), GENERIC_TIER, URL))


def _b64_credentials(value: str) -> bool:
    """``Basic`` values are base64 of ``user:password``."""
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    return b":" in decoded and all(32 <= b < 127 for b in decoded)


def _token_like(value: str) -> bool:
    if allow.is_reference(value) or allow.is_pattern(value) or allow.identifier(value.rstrip("})];,")):
        return False  # code: 'Authorization': v4auth_header
    return len(value) >= 8 and not allow.is_placeholder(value) and not value.startswith(("$", "%", "{", "<")) \
        and (any(ch.isdigit() for ch in value) or allow.looks_random(value, 16, 3.0))  # fmt: skip


def header_window(text: str, low: str, start: int, end: int, out: list[Candidate]) -> None:
    """``Authorization: <scheme> <value>``, and ``Bearer``/``Basic`` values on their own."""
    segment = low[start:end]
    if "authorization" in segment:
        for m in _HEADER.finditer(text, start, end):
            scheme = (m.group("scheme") or "").lower()
            value = m.group("v").rstrip(".,)")
            if scheme in ("digest", "aws4-hmac-sha256") or not _token_like(value):
                continue
            if scheme == "basic" and not _b64_credentials(value):
                continue
            out.append((m.start("v"), m.start("v") + len(value), GENERIC_TIER, HEADER))
    if "bearer" in segment:
        for m in _BEARER.finditer(text, start, end):
            value = m.group("v")
            if any(ch.isdigit() for ch in value) and any(ch.isalpha() for ch in value) and _token_like(value):
                out.append((m.start("v"), m.end("v"), GENERIC_TIER, BEARER))
    if "basic" in segment:
        for m in _BASIC.finditer(text, start, end):
            if _b64_credentials(m.group("v")):
                out.append((m.start("v"), m.end("v"), GENERIC_TIER, BASIC))


def curl_window(text: str, low: str, start: int, end: int, out: list[Candidate]) -> None:
    """``curl -u user:password``: the password."""
    for m in _CURL_USER.finditer(text, start, end):
        password = m.group("pw")
        if _real_password(password, m.group("user"), encoded=False):
            out.append((m.start("pw"), m.end("pw"), GENERIC_TIER, CURL))
