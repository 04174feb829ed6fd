"""What reaches the SDK from stdin: every request a client sends gets an answer.

The SDK's stdio transport drops a line it cannot validate without a reply, so the client
that sent it waits until its own timeout (minutes, for an agent's tool call). Lines come to
``screen`` first:

- a lone UTF-16 surrogate escape (``"\\ud83d"``: JavaScript's ``JSON.stringify`` writes one
  for a string cut in the middle of an emoji) is valid JSON that the SDK's parser refuses;
  it becomes U+FFFD, as the SDK already does with bytes that are not UTF-8, and the request
  goes on;
- a request that still is not valid JSON-RPC is answered with JSON-RPC's Invalid Request
  error under its own id; one whose id no answer can carry (not an integer or a string, or
  a string with a lone surrogate) under id null, as is a line that is not JSON at all
  (Parse error); an invalid notification or response is only logged (nothing waits for it).
- only a line feed ends a line (a bare CR is JSON whitespace).

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


def _problem(text: str, kind: str = "JSONRPCRequest") -> tuple[Any, str]:
    """(the SDK's message, "") when the SDK accepts ``text``, else (None, why not): the
    first reason pydantic gives for a message of ``kind``, without the input."""
    from mcp_types import jsonrpc_message_adapter
    from pydantic import ValidationError

    try:
        return jsonrpc_message_adapter.validate_json(text, by_name=False), ""
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_input=False, include_context=False)
        mine = [e for e in errors if e["loc"][:1] == (kind,)] or errors
        first = mine[0] if mine else {"loc": (), "msg": "not a JSON-RPC 2.0 message"}
        where = ".".join(str(part) for part in first["loc"][1:])
        return None, _cut(f"{where}: {first['msg']}" if where else str(first["msg"]))


def _cut(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _error(request_id: int | str | None, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def _usable_id(value: Any) -> bool:
    """An id the answer can carry back: an integer or a string that is valid Unicode (the
    SDK cannot write a lone surrogate, and a mended id would match no request)."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, str) and _LONE.search(value) is None)


def _bad_id() -> Screened:
    return Screened(reply=_error(None, INVALID_REQUEST, BAD_ID),
                    warning="a request whose id is no string or integer was answered with Invalid Request")


BAD_ID = "Invalid Request: the id must be an integer or a string of valid Unicode"


def _shown(request_id: Any) -> str:
    """The id as a log line may show it: masked if it looks like a secret, cut, escaped."""
    if isinstance(request_id, int):
        return str(request_id)
    from ..redact import redact
    from ..terminal import safe

    return safe(json.dumps(_cut(redact(request_id).text, 40), ensure_ascii=False))


def _parsed(text: str) -> tuple[Any, str]:
    """(the JSON value, "") or (None, why it is not JSON)."""
    try:
        return json.loads(text), ""
    except RecursionError:
        return None, "nested too deeply"
    except ValueError as exc:
        return None, str(exc.args[0] if exc.args else exc)


def screen(line: str) -> Screened:
    """Decide one stdin line's fate (the module docstring says which)."""
    text = line.strip()
    if not text:
        return Screened()
    accepted, why = _problem(text)
    if accepted is not None:
        # the SDK takes a request whose id is no string or integer for a notification (it
        # ignores the id), so nothing would answer it
        if type(accepted).__name__ == "JSONRPCNotification" and '"id"' in text:
            message, _ = _parsed(text)
            if isinstance(message, dict) and "id" in message:
                return _bad_id()
        return Screened(forward=line)
    message, not_json = _parsed(text)
    if not_json:
        return Screened(reply=_error(None, PARSE_ERROR, f"Parse error: {not_json}"),
                        warning=f"a line of {len(text)} characters JSON could not read ({_cut(not_json, 80)}) was answered with a parse error")  # fmt: skip
    if not isinstance(message, dict):
        return Screened(reply=_error(None, INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message"),
                        warning="a JSON value that is no JSON-RPC message was answered with Invalid Request")  # fmt: skip
    if "method" not in message and ("result" in message or "error" in message):
        return Screened(warning="an invalid JSON-RPC response was dropped (nothing waits for an answer)")
    has_id = "id" in message
    request_id = message.get("id")
    if has_id and not _usable_id(request_id):
        return _bad_id()
    named = f"request {_shown(request_id)}" if has_id else "a notification"
    try:
        mended, count = _mended(message)
    except RecursionError:
        mended, count = message, 0
    if count:
        again = json.dumps(mended, ensure_ascii=False)
        accepted, why = _problem(again)
        if accepted is not None:
            return Screened(forward=again + "\n", warning=f"{named}: {count} lone UTF-16 surrogate(s) replaced by U+FFFD")
    if not has_id:
        _, why = _problem(text, "JSONRPCNotification")
        return Screened(warning=f"an invalid JSON-RPC notification was dropped (nothing waits for an answer): {why}")
    return Screened(reply=_error(request_id, INVALID_REQUEST, f"Invalid Request: {why}"),
                    warning=f"{named}: invalid JSON-RPC ({why}), answered with Invalid Request")


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
        # newline="\n": a bare CR is JSON whitespace, not the end of a message
        text = TextIOWrapper(raw, encoding="utf-8", errors="replace", newline="\n")
        lines = ScreenedLines(anyio.wrap_file(text))
        async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]
            lines.attach(write_stream)
            low = server._lowlevel_server
            await low.run(read_stream, write_stream, low.create_initialization_options())
    finally:
        restore()
