"""What reaches the SDK from stdin: every request a client sends gets an answer.

The SDK's stdio transport drops a line it cannot validate without a reply, so the client
that sent it waits until its own timeout (minutes, for an agent's tool call). Lines come to
``screen`` first:

- a lone UTF-16 surrogate escape (``"\\ud83d"``: JavaScript's ``JSON.stringify`` writes one
  for a string cut in the middle of an emoji) is valid JSON that the SDK's parser refuses;
  it becomes U+FFFD, as the SDK already does with bytes that are not UTF-8, and the request
  goes on;
- a request that still is not valid JSON-RPC is answered with JSON-RPC's Invalid Request
  error under its own id; a line that is not JSON at all with Parse error (id null, as the
  JSON-RPC spec says); an invalid notification or response is only logged (nothing waits
  for it).

Replies go through the SDK's write stream, never straight to stdout (two writers would tear
frames). Logs name what was wrong, never the line's content (it may hold a secret).
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import suppress
from dataclasses import dataclass
from io import TextIOWrapper
from typing import Any, BinaryIO

log = logging.getLogger("open-memex.mcp")

_LONE = re.compile("[\ud800-\udfff]")  # json.loads joins a valid pair, so any left is alone
PARSE_ERROR = -32700
INVALID_REQUEST = -32600


@dataclass
class Screened:
    """What to do with one line: forward it (possibly mended), answer it, or drop it."""

    forward: str | None = None
    reply: dict[str, Any] | None = None  # a JSON-RPC error response
    warning: str = ""


def _mended(value: Any) -> tuple[Any, int]:
    """``value`` with each lone surrogate in its strings and keys replaced by U+FFFD."""
    if isinstance(value, str):
        return _LONE.subn("\ufffd", value)
    if isinstance(value, list):
        items = [_mended(v) for v in value]
        return [v for v, _ in items], sum(n for _, n in items)
    if isinstance(value, dict):
        count = 0
        out: dict[str, Any] = {}
        for key, item in value.items():
            new_key, n_key = _mended(key)
            new_item, n_item = _mended(item)
            out[new_key] = new_item
            count += n_key + n_item
        return out, count
    return value, 0


def _valid(text: str) -> bool:
    from mcp_types import jsonrpc_message_adapter
    from pydantic import ValidationError

    try:
        jsonrpc_message_adapter.validate_json(text, by_name=False)
    except ValidationError:
        return False
    return True


def _error(request_id: int | str | None, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def _request_id(message: Any) -> int | str | None:
    found = message.get("id") if isinstance(message, dict) else None
    return found if isinstance(found, (int, str)) and not isinstance(found, bool) else None


def screen(line: str) -> Screened:
    """Decide one stdin line's fate (the module docstring says which)."""
    text = line.strip()
    if not text:
        return Screened()
    if _valid(text):
        return Screened(forward=line)
    try:
        message = json.loads(text)
    except ValueError as exc:
        return Screened(reply=_error(None, PARSE_ERROR, f"Parse error: {exc.args[0] if exc.args else exc}"),
                        warning=f"a line of {len(text)} characters that is not JSON was answered with a parse error")  # fmt: skip
    request_id = _request_id(message)
    kind = "notification" if isinstance(message, dict) and "method" in message else "message"
    named = f"request {json.dumps(request_id)}" if request_id is not None else f"a {kind}"
    mended, count = _mended(message)
    if count:
        again = json.dumps(mended, ensure_ascii=False)
        if _valid(again):
            return Screened(forward=again + "\n",
                            warning=f"{named}: {count} lone UTF-16 surrogate(s) replaced by U+FFFD")  # fmt: skip
    if not isinstance(message, dict) or "method" not in message:
        if isinstance(message, dict) and ("result" in message or "error" in message):
            return Screened(warning=f"{named}: an invalid JSON-RPC response was dropped")
        return Screened(reply=_error(None, INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message"),
                        warning="a JSON value that is no JSON-RPC message was answered with Invalid Request")  # fmt: skip
    if request_id is None:
        return Screened(warning="an invalid JSON-RPC notification was dropped (nothing waits for an answer)")
    why = 'Invalid Request: not a valid JSON-RPC 2.0 request (it needs "jsonrpc": "2.0", a string method and object params)'
    return Screened(reply=_error(request_id, INVALID_REQUEST, why),
                    warning=f"{named}: invalid JSON-RPC, answered with Invalid Request")  # fmt: skip


class ScreenedLines:
    """The lines ``stdio_server`` reads, screened; answers go out once ``replies`` is set
    (the SDK's write stream exists only after the transport started reading)."""

    def __init__(self, lines: Any) -> None:
        import anyio

        self._lines = lines
        self._ready = anyio.Event()
        self._replies: Any = None

    def attach(self, replies: Any) -> None:
        self._replies = replies
        self._ready.set()

    def __aiter__(self) -> AsyncIterator[str]:
        return self._screened()

    async def _screened(self) -> AsyncIterator[str]:
        from mcp.shared.message import SessionMessage
        from mcp_types import jsonrpc_message_adapter

        async for line in self._lines:
            fate = screen(line)
            if fate.warning:
                log.warning("%s", fate.warning)
            if fate.reply is not None:
                await self._ready.wait()
                answer = jsonrpc_message_adapter.validate_python(fate.reply, by_name=False)
                await self._replies.send(SessionMessage(answer))
            if fate.forward is not None:
                yield fate.forward


def claim_stdin() -> tuple[BinaryIO, Callable[[], None]]:
    """The protocol's stdin on a private descriptor while fd 0 reads the null device (a
    child process that read its stdin would otherwise eat requests), and the function that
    puts it back. Where descriptors cannot be moved, stdin is served in place."""
    try:
        import fcntl

        private = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    except (ImportError, OSError):
        return sys.stdin.buffer, lambda: None
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        try:
            os.dup2(null, 0)
        finally:
            os.close(null)
    except OSError:
        os.close(private)
        return sys.stdin.buffer, lambda: None

    def restore() -> None:
        with suppress(OSError):
            os.dup2(private, 0)

    # closefd=False: a reader thread may still block on it after the transport ends
    return os.fdopen(private, "rb", closefd=False), restore


async def serve_stdio(server: Any) -> None:
    """``MCPServer.run_stdio_async`` with stdin screened (the SDK reads what we pass)."""
    import anyio
    from mcp.server.stdio import stdio_server

    raw, restore = claim_stdin()
    try:
        lines = ScreenedLines(anyio.wrap_file(TextIOWrapper(raw, encoding="utf-8", errors="replace")))
        async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]
            lines.attach(write_stream)
            low = server._lowlevel_server
            await low.run(read_stream, write_stream, low.create_initialization_options())
    finally:
        restore()
