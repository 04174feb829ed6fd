"""Screening of the MCP server's stdin lines (openmemex.server.wire): what the SDK would drop
without an answer is mended or answered. The whole path over a real pipe is in
test_mcp_server.test_every_request_over_the_wire_gets_an_answer."""

from __future__ import annotations

import json
from typing import Any

from openmemex.server.wire import INVALID_REQUEST, PARSE_ERROR, lines_of, screen

CALL = '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"memory_search","arguments":{"query":%s}}}'


def test_a_valid_line_passes_untouched() -> None:
    line = CALL % '"deploy \\ud83d\\ude00 ok"' + "\n"  # a surrogate pair is one valid character
    fate = screen(line)
    assert fate.forward == line and fate.reply is None and fate.warning == ""


def test_a_lone_surrogate_becomes_a_replacement_character() -> None:
    for lone in ('"cut \\ud83d"', '"\\udc00 low first"', '"\\ud83d\\ud83d two highs"'):
        fate = screen(CALL % lone)
        assert fate.reply is None and fate.forward is not None
        query = json.loads(fate.forward)["params"]["arguments"]["query"]
        assert "\ufffd" in query and not any(0xD800 <= ord(c) <= 0xDFFF for c in query)
        assert fate.warning.startswith("request 7:")
    keyed = screen('{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x","arguments":{"\\ud800k":1}}}')
    assert keyed.forward is not None and "\ufffdk" in json.loads(keyed.forward)["params"]["arguments"]


def test_an_invalid_request_is_answered_under_its_id() -> None:
    for line, request_id in (('{"id": 10, "method": "tools/list"}', 10),
                             ('{"jsonrpc": "2.0", "id": "x1", "method": "tools/call", "params": [1]}', "x1"),
                             ('{"jsonrpc": "1.0", "id": 3, "method": "ping"}', 3)):  # fmt: skip
        fate = screen(line)
        assert fate.forward is None and fate.reply is not None
        assert fate.reply["id"] == request_id and fate.reply["error"]["code"] == INVALID_REQUEST


def test_what_is_no_request_gets_null_or_nothing() -> None:
    for line, code in (("hello", PARSE_ERROR), ('{"jsonrpc":"2.0","id":9,"method":"ping"', PARSE_ERROR),
                       ("[1, 2]", INVALID_REQUEST), ("42", INVALID_REQUEST),
                       ('{"jsonrpc": "2.0", "id": [1], "method": 5}', INVALID_REQUEST)):  # fmt: skip
        fate = screen(line)
        assert fate.forward is None and fate.reply is not None
        assert fate.reply["id"] is None and fate.reply["error"]["code"] == code
        written(fate.reply)
    for quiet in ('{"jsonrpc": "2.0", "method": "notifications/x", "params": 5}',  # a notification: nothing waits
                  '{"jsonrpc": "2.0", "id": 4, "result": 1, "error": 2}',  # a broken response: never answered
                  "   \n"):  # fmt: skip
        fate = screen(quiet)
        assert fate.forward is None and fate.reply is None
    assert screen("   \n").warning == ""


def test_warnings_never_repeat_the_line() -> None:
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    for line in (f'{{"id": 1, "method": "{secret}"}}', f"not json {secret}", CALL % f'"{secret} \\ud800"'):
        fate = screen(line)
        assert fate.warning and secret not in fate.warning


def written(reply: dict[str, Any]) -> str:
    """The reply as the SDK's stdout writer serializes it (it must not raise: a reply it
    cannot write ends the server)."""
    from mcp_types import jsonrpc_message_adapter

    message = jsonrpc_message_adapter.validate_python(reply, by_name=False)
    return str(message.model_dump_json(by_alias=True, exclude_unset=True))


def test_an_id_that_cannot_come_back_is_answered_with_null() -> None:
    """A request whose id is no integer or string (the SDK takes it for a notification and
    answers nothing), or a string the answer cannot carry (a lone surrogate: the SDK cannot
    write it, and a mended id would match no request), gets Invalid Request with id null."""
    for request_id in ("1.5", "true", "null", '{"a": 1}', '"\\ud83d"', '"r\\ud83d"'):
        for method in ('"ping"', '"tools/list"', "5"):
            fate = screen(f'{{"jsonrpc": "2.0", "id": {request_id}, "method": {method}}}')
            assert fate.forward is None and fate.reply is not None, (request_id, method)
            assert fate.reply["id"] is None and fate.reply["error"]["code"] == INVALID_REQUEST
            assert json.loads(written(fate.reply))["id"] is None


def test_a_request_without_a_method_is_answered_under_its_id() -> None:
    for line, request_id in (('{"jsonrpc": "2.0", "id": 11}', 11), ('{"jsonrpc": "2.0", "id": "x", "params": {}}', "x")):
        fate = screen(line)
        assert fate.reply is not None and fate.reply["id"] == request_id
        assert fate.reply["error"]["code"] == INVALID_REQUEST and "method" in fate.reply["error"]["message"]


def test_nesting_too_deep_is_answered_not_fatal() -> None:
    fate = screen("[" * 100_000)
    assert fate.reply is not None and fate.reply["error"]["code"] == PARSE_ERROR and fate.reply["id"] is None
    for depth in (300, 500, 5_000):
        deep = "[" * depth + "\"\\ud83d\"" + "]" * depth
        fate = screen(CALL.replace('{"query":%s}', '{"query": "x", "deep": %s}') % deep)
        assert fate.reply is not None, depth
        if depth < 1_000:  # read by Python, refused by the SDK: answered under its id
            assert fate.reply["id"] == 7 and fate.reply["error"]["code"] == INVALID_REQUEST
            assert "recursion" in fate.reply["error"]["message"], fate.reply
        else:  # past what Python reads: no id to answer under
            assert fate.reply["id"] is None and fate.reply["error"]["message"] == "Parse error: nested too deeply"


def test_a_string_id_in_a_warning_is_masked_and_short() -> None:
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    for request_id in (secret, "x" * 5_000, "esc\\u001b[31m"):
        fate = screen(json.dumps({"jsonrpc": "2.0", "id": json.loads(f'"{request_id}"'), "method": "ping", "params": 3}))
        assert fate.reply is not None and secret not in fate.warning and len(fate.warning) < 300
        assert "\x1b" not in fate.warning


def test_lines_as_the_transport_reads_them() -> None:
    """Only a line feed ends a line; a chunk may end inside a character; bytes that are not
    UTF-8 become U+FFFD; the last line may lack its newline."""
    data = '{"a":\r1}\r\n{"b":"é€😀"}\n\n'.encode() + b'{"c":"\xff"}\nlast'
    expected = ['{"a":\r1}\r\n', '{"b":"é€😀"}\n', "\n", '{"c":"\ufffd"}\n', "last"]
    for size in (1, 2, 3, 7, len(data)):
        chunks = [data[i : i + size] for i in range(0, len(data), size)]
        assert list(lines_of(chunks)) == expected, size
    assert list(lines_of([])) == [] and list(lines_of([b"", b"x\n"])) == ["x\n"]


def test_what_the_sdk_owes_an_answer() -> None:
    """A forwarded request is owed an answer (the server waits for it at end of input); a
    cancellation withdraws one (the spec: a cancelled request is never answered)."""
    request = screen(CALL % '"x"')
    assert (request.asked, request.withdrawn) == (7, None)
    cancel = screen('{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"r1"}}')
    assert cancel.forward is not None and (cancel.asked, cancel.withdrawn) == (None, "r1")
    mended = screen('{"jsonrpc":"2.0","id":"m","method":"ping","params":{"a":"\\ud800"}}')
    assert mended.forward is not None and mended.asked == "m"
    for quiet in ('{"jsonrpc":"2.0","method":"notifications/initialized"}', '{"jsonrpc":"2.0","id":3,"result":{}}'):
        fate = screen(quiet)
        assert fate.forward is not None and (fate.asked, fate.withdrawn) == (None, None)


def test_only_json_whitespace_is_taken_off_a_line() -> None:
    """A form feed or a no-break space after the JSON is no JSON whitespace: the SDK refuses
    the line as sent, so it is answered here (it was forwarded, dropped, and waited for)."""
    for pad in ("\x0c", "\xa0", "\u2028"):
        fate = screen('{"jsonrpc":"2.0","id":5,"method":"ping"}' + pad + "\n")
        assert fate.forward is None and fate.reply is not None and fate.reply["error"]["code"] == PARSE_ERROR
    assert screen(' \t{"jsonrpc":"2.0","id":5,"method":"ping"}\r\n').forward is not None


def test_an_answer_settles_the_id_as_the_sdk_compares_ids() -> None:
    """The SDK takes "7" and 7 for one id: a cancellation or an answer under either settles it."""
    from openmemex.server.wire import ScreenedLines

    async def check() -> None:
        lines = ScreenedLines(-1)
        lines._owed.update({"7": 1, "x": 2})
        lines.answered(7)
        lines.answered("x")
        assert dict(lines._owed) == {"x": 1}

    import anyio

    anyio.run(check)


def test_the_in_flight_cap_waits_for_answers_and_gives_up_on_a_stall(monkeypatch: Any) -> None:
    """Past MAX_IN_FLIGHT owed requests a line waits for an answer; when nothing is answered
    for STALLED seconds the owed requests are forgotten (one the SDK never answers must not
    stop the server reading for good)."""
    import anyio

    from openmemex.server import wire

    monkeypatch.setattr(wire, "STALLED", 0.6)

    screen(CALL % '"warm"')  # the first screen imports the SDK's types (a few hundred ms)

    async def check() -> None:
        lines = wire.ScreenedLines(-1)
        lines._owed.update({str(n): 1 for n in range(wire.MAX_IN_FLIGHT)})
        send, receive = anyio.create_memory_object_stream[str](4)
        await send.send('{"jsonrpc":"2.0","id":"new","method":"ping"}\n')
        await send.send('{"jsonrpc":"2.0","id":"later","method":"ping"}\n')
        read: list[str] = []

        async def consume() -> None:
            async for line in lines._lines(receive):
                read.append(line)

        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            await anyio.sleep(0.1)
            assert read == []  # at the cap, answers due: nothing more is read
            lines.answered(0)  # an answer goes out: one more may be read
            await anyio.sleep(0.1)
            assert len(read) == 1 and '"new"' in read[0]
            with anyio.fail_after(5):  # nothing answered for STALLED: the owed are given up on
                while len(read) < 2:
                    await anyio.sleep(0.01)
            assert dict(lines._owed) == {"later": 1}
            tg.cancel_scope.cancel()
        await send.aclose()

    anyio.run(check)
