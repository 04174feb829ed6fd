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
import signal
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("open-memex.mcp")

_LONE = re.compile("[\ud800-\udfff]")  # json.loads joins a valid pair, so any left is alone
_JSON_SPACE = " \t\r\n"
PARSE_ERROR = -32700
INVALID_REQUEST = -32600


@dataclass
class Screened:
    """What to do with one line: forward it (possibly mended), answer it, or drop it."""

    forward: str | None = None
    reply: dict[str, Any] | None = None  # a JSON-RPC error response
    warning: str = ""
    asked: int | str | None = None  # the id of a forwarded request: the SDK owes it an answer
    withdrawn: int | str | None = None  # the id a forwarded notifications/cancelled releases


def _owed(message: Any) -> tuple[int | str | None, int | str | None]:
    """(the id a request waits on, the id a cancellation withdraws) of a message the SDK
    accepted, as a model or as the dict it was read from."""
    get = message.get if isinstance(message, dict) else lambda key, default=None: getattr(message, key, default)
    method, request_id, params = get("method"), get("id"), get("params")
    if method is None:
        return None, None
    if request_id is not None and _usable_id(request_id):
        return request_id, None
    withdrawn = params.get("requestId") if method == "notifications/cancelled" and isinstance(params, dict) else None
    return None, withdrawn if _usable_id(withdrawn) else None


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
    text = line.strip(_JSON_SPACE)  # what JSON allows around a value, no more: the SDK reads the line as sent
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
        asked, withdrawn = _owed(accepted)
        return Screened(forward=line, asked=asked, withdrawn=withdrawn)
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
            asked, withdrawn = _owed(mended)
            return Screened(forward=again + "\n", warning=f"{named}: {count} lone UTF-16 surrogate(s) replaced by U+FFFD",
                            asked=asked, withdrawn=withdrawn)  # fmt: skip
    if not has_id:
        _, why = _problem(text, "JSONRPCNotification")
        return Screened(warning=f"an invalid JSON-RPC notification was dropped (nothing waits for an answer): {why}")
    return Screened(reply=_error(request_id, INVALID_REQUEST, f"Invalid Request: {why}"),
                    warning=f"{named}: invalid JSON-RPC ({why}), answered with Invalid Request")


class ScreenedLines:
    """The lines ``stdio_server`` reads, screened; answers go out once ``replies`` is set
    (the SDK's write stream exists only after the transport started reading).

    A daemon thread reads the descriptor (``os.read``: no buffered object whose lock a
    thread killed at exit could hold) and hands each line to the event loop. The SDK reads
    stdin on a worker thread that a cancellation must wait for, so Ctrl-C did nothing until
    the client closed stdin; a blocked read here holds up neither Ctrl-C nor the exit."""

    def __init__(self, fd: int) -> None:
        import anyio

        self._fd = fd
        self._ready = anyio.Event()
        self._replies: Any = None
        self._owed: Counter[str] = Counter()  # by str(id): the SDK takes "7" and 7 for one id
        self._done = False
        self._answered_at = time.monotonic()

    def attach(self, replies: Any) -> None:
        self._replies = replies
        self._ready.set()

    def answered(self, request_id: Any) -> None:
        """The SDK wrote the answer to ``request_id`` (``Answers``)."""
        self._answered_at = time.monotonic()
        key = str(request_id)
        if self._owed.get(key):
            self._owed[key] -= 1
            if not self._owed[key]:
                del self._owed[key]

    def __aiter__(self) -> AsyncIterator[str]:
        return self._screened()

    async def _screened(self) -> AsyncIterator[str]:
        import anyio
        send, receive = anyio.create_memory_object_stream[str](16)
        token = anyio.lowlevel.current_token()
        threading.Thread(target=self._pump, args=(send, token), name="open-memex-stdin", daemon=True).start()
        try:
            async for line in self._lines(receive):
                yield line
        finally:
            self._done = True
        # End of input ends the session, and the SDK cancels what is still running: the
        # requests already read are answered first (``printf … | open-memex mcp`` gets its
        # answers), for a while at most, as a client that closed stdin is shutting down.
        with anyio.move_on_after(EOF_GRACE):
            while self._owed:
                await anyio.sleep(0.005)

    async def _lines(self, receive: Any) -> AsyncIterator[str]:
        import anyio
        from mcp.shared.message import SessionMessage
        from mcp_types import jsonrpc_message_adapter

        async with receive:
            async for line in receive:
                fate = screen(line)
                if fate.warning:
                    log.warning("%s", fate.warning)
                if fate.reply is not None:
                    await self._ready.wait()
                    answer = jsonrpc_message_adapter.validate_python(fate.reply, by_name=False)
                    await self._replies.send(SessionMessage(answer))
                if fate.forward is not None:
                    if fate.asked is not None:
                        # backpressure: the SDK starts a task for every request it reads, so a
                        # client that writes without reading the answers grew the server without
                        # bound (765 MB in 20 s); past MAX_IN_FLIGHT unanswered requests, stdin
                        # waits, and the client's own writes block
                        while self._owed.total() >= MAX_IN_FLIGHT:
                            if time.monotonic() - self._answered_at > STALLED:
                                # nothing answered for that long: whatever is owed may never be
                                # (a request the SDK drops unanswered); forget it rather than stop
                                # reading for good — a client that does not read gets 64 more
                                log.warning("%d requests unanswered for %.0f s; reading on", self._owed.total(), STALLED)
                                self._owed.clear()
                                self._answered_at = time.monotonic()
                                break
                            await anyio.sleep(0.002)
                        self._owed[str(fate.asked)] += 1
                    if fate.withdrawn is not None:
                        self.answered(fate.withdrawn)  # the spec: a cancelled request is never answered
                    yield fate.forward

    def _pump(self, send: Any, token: Any) -> None:
        """The reader thread: each line to the event loop, then the end of input. It hands
        lines over without a coroutine (``send_nowait``, waiting while the buffer is full)
        and stops once the reading side is gone: a server shutting down (Ctrl-C) gets no
        traceback or "never awaited" warning from here."""
        import anyio

        try:
            for line in lines_of(_chunks(self._fd)):
                while not self._done:
                    try:
                        anyio.from_thread.run_sync(send.send_nowait, line, token=token)
                        break
                    except anyio.WouldBlock:
                        time.sleep(0.001)
                if self._done:
                    return
        except BaseException:  # the loop is gone or the stream closed: nobody reads any more
            return
        finally:
            with suppress(BaseException):
                anyio.from_thread.run_sync(send.close, token=token)


EOF_GRACE = 10.0  # seconds the requests read before end of input may take to be answered
MAX_IN_FLIGHT = 64  # requests read and not yet answered (the SDK's worker threads are 40)
STALLED = 30.0  # seconds without any answer after which the owed requests are given up on


class Answers:
    """The SDK's write stream, noting each answer it carries (``ScreenedLines.answered``)."""

    def __init__(self, stream: Any, lines: ScreenedLines) -> None:
        self._stream = stream
        self._lines = lines

    async def send(self, item: Any) -> None:
        await self._stream.send(item)
        message = getattr(item, "message", None)
        if type(message).__name__ in ("JSONRPCResponse", "JSONRPCError"):
            self._lines.answered(getattr(message, "id", None))

    async def __aenter__(self) -> Answers:
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> Any:
        return await self._stream.__aexit__(*exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def lines_of(chunks: Iterable[bytes]) -> Iterator[str]:
    """Text lines as the transport reads them: only a line feed ends one (a bare CR is JSON
    whitespace), bytes that are not UTF-8 become U+FFFD, a last line may lack its newline.
    Linear in the line's length, however many reads it takes."""
    parts: list[bytes] = []
    for chunk in chunks:
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            parts.append(chunk[start:end])
            yield b"".join(parts).decode("utf-8", errors="replace") + "\n"
            parts = []
            start = end + 1
        if start < len(chunk):
            parts.append(chunk[start:])
    if parts:
        yield b"".join(parts).decode("utf-8", errors="replace")


def _chunks(fd: int) -> Iterator[bytes]:
    while True:
        try:
            chunk = os.read(fd, 65536)
        except InterruptedError:
            continue
        except OSError:
            return
        if not chunk:
            return
        yield chunk


def claim_stdin() -> tuple[int, Callable[[], None]]:
    """The protocol's stdin on a private descriptor while fd 0 reads the null device (a
    child process that read its stdin would otherwise eat requests), and the function that
    puts it back. Where descriptors cannot be moved, stdin is served in place."""
    try:
        import fcntl

        private = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    except (ImportError, OSError):
        return 0, lambda: None
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        try:
            os.dup2(null, 0)
        finally:
            os.close(null)
    except OSError:
        os.close(private)
        return 0, lambda: None

    def restore() -> None:
        with suppress(OSError):
            os.dup2(private, 0)

    # never closed: the reader thread may still block on it after the transport ends
    return private, restore


async def serve_stdio(server: Any) -> None:
    """``MCPServer.run_stdio_async`` with stdin screened (the SDK reads what we pass), and
    Ctrl-C turned into a clean ``KeyboardInterrupt`` (the CLI's exit 130): cancelling a
    session with requests in flight makes the SDK's own tasks fail on their closed streams
    (``BrokenResourceError``), which read as a crash (exit 70) before."""
    import anyio

    fd, restore = claim_stdin()
    interrupted = False
    try:
        async with anyio.create_task_group() as guard:

            async def watch() -> None:
                nonlocal interrupted
                try:
                    with anyio.open_signal_receiver(signal.SIGINT) as signals:
                        async for _ in signals:  # the first Ctrl-C; a second reaches Python's own handler
                            interrupted = True
                            guard.cancel_scope.cancel()
                            return
                except (NotImplementedError, RuntimeError, ValueError):  # Windows, or not the main thread
                    return  # Python's own handling

            guard.start_soon(watch)
            try:
                await _session(server, fd)
            finally:
                guard.cancel_scope.cancel()
    except BaseException:
        if interrupted:
            raise KeyboardInterrupt from None
        raise
    finally:
        restore()
    if interrupted:
        raise KeyboardInterrupt


async def _session(server: Any, fd: int) -> None:
    from mcp.server.stdio import stdio_server

    lines = ScreenedLines(fd)
    async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]
        lines.attach(write_stream)
        low = server._lowlevel_server
        await low.run(read_stream, Answers(write_stream, lines), low.create_initialization_options())
