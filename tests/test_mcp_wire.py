"""Screening of the MCP server's stdin lines (openmemex.server.wire): what the SDK would drop
without an answer is mended or answered. The whole path over a real pipe is in
test_mcp_server.test_every_request_over_the_wire_gets_an_answer."""

from __future__ import annotations

import json

from openmemex.server.wire import INVALID_REQUEST, PARSE_ERROR, screen

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
                       ("[1, 2]", INVALID_REQUEST), ("42", INVALID_REQUEST)):  # fmt: skip
        fate = screen(line)
        assert fate.forward is None and fate.reply is not None
        assert fate.reply["id"] is None and fate.reply["error"]["code"] == code
    for quiet in ('{"jsonrpc": "2.0", "method": "notifications/x", "params": 5}',  # a notification: nothing waits
                  '{"jsonrpc": "2.0", "id": 4, "result": 1, "error": 2}',  # a broken response: never answered
                  '{"jsonrpc": "2.0", "id": [1], "method": 5}',  # no usable id, no valid method
                  "   \n"):  # fmt: skip
        fate = screen(quiet)
        assert fate.forward is None and fate.reply is None
    assert screen("   \n").warning == ""


def test_warnings_never_repeat_the_line() -> None:
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    for line in (f'{{"id": 1, "method": "{secret}"}}', f"not json {secret}", CALL % f'"{secret} \\ud800"'):
        fate = screen(line)
        assert fate.warning and secret not in fate.warning
