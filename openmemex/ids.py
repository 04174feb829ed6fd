"""ULID ids and RFC 3339 times: the only id scheme and time format of protocol v0.2."""

from __future__ import annotations

import math
import os
import threading
import time
from datetime import UTC, date, datetime

CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_lock = threading.Lock()
_last_ms = -1
_last_rand = 0


def new_ulid(now_ms: int | None = None) -> str:
    """A 26-char ULID; monotonic within this process so ids sort in creation order."""
    global _last_ms, _last_rand
    ms = int(time.time() * 1000) if now_ms is None else now_ms
    with _lock:
        if ms == _last_ms:
            rand = (_last_rand + 1) & ((1 << 80) - 1)
        else:
            rand = int.from_bytes(os.urandom(10), "big")
        _last_ms, _last_rand = ms, rand
    value = (ms << 80) | rand
    chars = []
    for _ in range(26):
        chars.append(CROCKFORD[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def is_ulid(text: str) -> bool:
    return len(text) == 26 and all(c in CROCKFORD for c in text.upper()) and text[0] in "01234567"


def ulid_time_ms(ulid: str) -> int:
    value = 0
    for c in ulid[:10].upper():
        value = value * 32 + CROCKFORD.index(c)
    return value


def now_rfc3339() -> str:
    return format_time(time.time())


def format_time(epoch_seconds: float) -> str:
    """RFC 3339 in UTC with a ``Z``; milliseconds only when present."""
    dt = datetime.fromtimestamp(epoch_seconds, tz=UTC)
    if dt.microsecond:
        return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(value: object) -> float | None:
    """Epoch seconds from an RFC 3339 string, a YAML datetime/date, or epoch ms/s (v1 files)."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, datetime):
        dt = value if value.tzinfo else value.replace(tzinfo=UTC)
        return dt.timestamp()
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC).timestamp()
    if isinstance(value, int | float):
        seconds = value / 1000.0 if value > 10_000_000_000 else float(value)
        return seconds if math.isfinite(seconds) and 0 <= seconds < 253402300800 else None
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        if text.isdigit():
            return parse_time(int(text))
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            dt = datetime.fromisoformat(text)
        except ValueError:
            return None
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=UTC)
        return max(dt.timestamp(), 0.0)
    return None


def normalize_time(value: object) -> str | None:
    """Coerce a hand-edited time into the canonical RFC 3339 string, or None."""
    seconds = parse_time(value)
    return None if seconds is None else format_time(seconds)
