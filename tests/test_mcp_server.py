"""The MCP server (issue 7): a real MCP client drives ``open-memex mcp`` over stdio.

The subprocess tests spawn the server exactly as an editor does (the `mcp` package's stdio
client, the server's own OPEN_MEMEX_HOME in ``env``); the in-process tests use the SDK's
``Client`` on the same server object for the many small cases.
"""

from __future__ import annotations

import importlib.util
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any

import pytest

from openmemex.server.app import build
from openmemex.server.calls import Session
from openmemex.server.names import TOOL_NAMES
from tests.conftest import git, run_process
from tests.fake_github import FakeGitHub, FakeReview

pytestmark = pytest.mark.anyio

SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
TOKEN = "ghp_fake_test_token_123"
BRANCH = "memex/submit-1"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def server_params(cwd: Path, data_root: Path, extra: dict[str, str] | None = None) -> Any:
    from mcp import StdioServerParameters

    env = {"OPEN_MEMEX_HOME": str(data_root), "HOME": os.environ["HOME"],
           "GIT_CONFIG_GLOBAL": os.environ["GIT_CONFIG_GLOBAL"], "GIT_CONFIG_NOSYSTEM": "1", **(extra or {})}  # fmt: skip
    return StdioServerParameters(command=sys.executable, args=["-m", "openmemex", "mcp"], env=env, cwd=str(cwd))


@asynccontextmanager
async def stdio_session(cwd: Path, data_root: Path, extra: dict[str, str] | None = None) -> AsyncIterator[Any]:
    from mcp import ClientSession, stdio_client

    # the server's stderr goes to a real file (pytest's captured stderr has no descriptor)
    with tempfile.TemporaryFile("w+", encoding="utf-8") as errlog:
        async with stdio_client(server_params(cwd, data_root, extra), errlog=errlog) as (read, write), \
                ClientSession(read, write) as session:
            yield session


@asynccontextmanager
async def in_process(cwd: Path | None = None, watch: bool = True) -> AsyncIterator[Any]:
    from mcp import Client

    session = Session.start(cwd, watch=watch)
    try:
        async with Client(build(session)) as client:
            yield client
    finally:
        session.close()


def text(result: Any) -> str:
    return "\n".join(c.text for c in result.content)


def every_file_text(*roots: Path) -> str:
    chunks = []
    for root in roots:
        for path in root.rglob("*.md"):
            chunks.append(path.read_text(encoding="utf-8", errors="replace"))
    return "\n".join(chunks)


# -- the whole chain over stdio ------------------------------------------------------------
async def test_full_chain_over_stdio(git_repo: Path, data_root: Path, cli: Any) -> None:
    git("switch", "-q", "-c", BRANCH, cwd=git_repo)
    with FakeGitHub(token=TOKEN) as fake:
        assert cli("config", "set", "github.apiUrl", fake.base_url).rc == 0
        seen: list[str] = []
        async with stdio_session(git_repo, data_root, {"GH_TOKEN": TOKEN}) as s:
            init = await s.initialize()
            assert "memory_status" in (init.instructions or "")
            assert init.server_info.name == "open-memex"
            tools = (await s.list_tools()).tools
            assert sorted(t.name for t in tools) == sorted(TOOL_NAMES) and len(tools) == 11

            async def call(name: str, args: dict[str, Any]) -> Any:
                result = await s.call_tool(name, args)
                assert not result.is_error, f"{name}: {text(result)}"
                seen.append(text(result) + json.dumps(result.structured_content))
                return result

            added = await call("memory_add", {"content": f"Deploys run on Fridays; the CI token is {SECRET}",
                                              "type": "decision", "tags": ["deploy"]})  # fmt: skip
            first = added.structured_content["id"]
            assert added.structured_content["masked"], "the token must be reported masked"
            assert "Secret masked" in text(added)

            found = await call("memory_search", {"query": "friday deploys"})
            assert [h["id"] for h in found.structured_content["hits"]] == [first]

            listed = await call("memory_list", {})
            assert f"id={first}" in text(listed) and "source=tool" in text(listed)

            replaced = await call("memory_supersede", {"id": first, "content": "Deploys run on Thursdays now."})
            second = replaced.structured_content["id"]
            assert second != first and f"Replaced {first} with {second}" in text(replaced)

            personal = await call("memory_add", {"content": "I like small focused commits", "scope": "personal",
                                                 "type": "preference"})  # fmt: skip
            mine = personal.structured_content["id"]
            proposed = await call("memory_propose", {"ids": [mine]})
            copy = proposed.structured_content["proposed"][0]["id"]

            submitted = await call("memory_submit", {"ids": [second, copy]})
            assert {x["id"] for x in submitted.structured_content["submitted"]} == {second, copy}
            committed = git("show", "--name-only", "--format=%s", "HEAD", cwd=git_repo)
            assert f".ai/open-memex/{second}.md" in committed and f".ai/open-memex/{copy}.md" in committed

            promoted = await call("memory_promote", {"id": copy})
            assert "proposed → approved" in text(promoted)

            resolved = await call("memory_resolve", {})
            assert "(no conflicted memory files)" in text(resolved)

            fake.add_pull("acme", "widgets", BRANCH, reviews=[FakeReview("alice", "APPROVED")],
                          files=[f".ai/open-memex/{second}.md"],
                          head_sha=git("rev-parse", "HEAD", cwd=git_repo).strip())  # fmt: skip
            report = await call("memory_pr_status", {})
            assert report.structured_content["pr"]["number"] == 1
            assert any(m["id"] == second and m["to"] == "approved" for m in report.structured_content["memories"])

            forgotten = await call("memory_forget", {"id": mine})
            assert f"Deleted {mine}" in text(forgotten)
            again = await s.call_tool("memory_search", {"query": "small focused commits", "scope": "personal"})
            assert again.structured_content["hits"] == []
    # the secret was masked before it was written: nowhere raw, in no result and no file
    assert SECRET not in "\n".join(seen)
    assert SECRET not in every_file_text(data_root, git_repo)
    assert SECRET[:4] in every_file_text(git_repo / ".ai" / "open-memex", data_root)


# -- stdout carries only the protocol --------------------------------------------------------
def test_stdout_is_only_json_rpc(git_repo: Path, data_root: Path) -> None:
    """A raw session, read frame by frame: every stdout line is one JSON-RPC message, also
    while the core warns (a broken teammate file), fails (unknown id, bad enum) and writes."""
    broken = git_repo / ".ai" / "open-memex"
    broken.mkdir(parents=True)
    (broken / "01BROKEN0000000000000000AA.md").write_text("---\nid: [unclosed\n---\nbody\n")
    env = {**os.environ, "OPEN_MEMEX_HOME": str(data_root)}
    proc = subprocess.Popen([sys.executable, "-m", "openmemex", "mcp"], cwd=git_repo, env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    lines: list[bytes] = []

    def send(message: dict[str, Any]) -> None:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(message).encode() + b"\n")
        proc.stdin.flush()

    def reply(number: int) -> dict[str, Any]:
        assert proc.stdout is not None
        while True:
            line = proc.stdout.readline()
            assert line, "the server closed stdout early: " + (proc.stderr.read().decode() if proc.stderr else "")
            lines.append(line)
            message = json.loads(line)
            if message.get("id") == number:
                return dict(message)

    try:
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}})
        assert "memory_status" in reply(1)["result"]["instructions"]
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        assert len(reply(2)["result"]["tools"]) == 11
        calls = [("memory_add", {"content": "raw wire check: the staging DB is slow on Mondays"}),
                 ("memory_search", {"query": "staging slow"}),
                 ("memory_search", {"query": "x", "type": "decisions"}),
                 ("memory_forget", {"id": "01NOSUCHMEMORY00000000000Z"}),
                 ("memory_list", {"scope": "both", "include": "all"}),
                 ("memory_status", {})]  # fmt: skip
        results = []
        for number, (name, args) in enumerate(calls, start=3):
            send({"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": {"name": name, "arguments": args}})
            results.append(reply(number)["result"])
        assert not results[0]["isError"] and not results[1]["isError"]
        assert results[2]["isError"] and "decision" in results[2]["content"][0]["text"]
        assert results[3]["isError"] and "open-memex error:" in results[3]["content"][0]["text"]
        assert "note: skipped" in results[1]["content"][0]["text"] or "note: skipped" in results[0]["content"][0]["text"]
    finally:
        rest, err = proc.communicate(timeout=30)  # closes stdin: the server ends on EOF
    lines.extend(rest.splitlines(keepends=True))
    assert lines
    for line in lines:
        message = json.loads(line)
        assert message["jsonrpc"] == "2.0"
    assert b"skipped" in err  # the warning went to stderr as well, never to stdout
    assert proc.returncode == 0


def test_every_request_over_the_wire_gets_an_answer(git_repo: Path, data_root: Path) -> None:
    """The SDK drops a line it cannot validate without a reply (the client waits for its
    timeout): a lone surrogate escape is mended and the call runs, a broken request is
    answered under its id, a line that is not JSON with id null, and the server goes on."""
    env = {**os.environ, "OPEN_MEMEX_HOME": str(data_root)}
    proc = subprocess.Popen([sys.executable, "-m", "openmemex", "mcp"], cwd=git_repo, env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None

    def send(raw: str) -> None:
        assert proc.stdin is not None
        proc.stdin.write(raw.encode() + b"\n")
        proc.stdin.flush()

    answers: queue.Queue[bytes] = queue.Queue()
    reader = threading.Thread(target=lambda: [answers.put(line) for line in proc.stdout or ()], daemon=True)
    reader.start()

    def answer() -> dict[str, Any]:
        try:
            line = answers.get(timeout=30)  # the old transport never answered: fail, do not hang
        except queue.Empty:
            proc.kill()
            raise AssertionError("no answer within 30 s") from None
        return dict(json.loads(line))

    try:
        send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}))
        assert answer()["id"] == 1
        send('{"jsonrpc": "2.0", "method": "notifications/initialized"}')
        if sys.platform == "linux":  # no child can read the protocol: fd 0 is the null device while serving
            assert os.readlink(f"/proc/{proc.pid}/fd/0") == os.devnull
        # JSON.stringify of a string cut inside an emoji: valid JSON the SDK's parser refuses
        send('{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"memory_add","arguments":'
             '{"content":"rho: the cache warms in 3 minutes \\ud83d","scope":"personal"}}}')
        added = answer()
        assert added["id"] == 2 and not added["result"]["isError"], added
        saved = next(data_root.glob(f"memories/*/{added['result']['structuredContent']['id']}.md"))
        assert "warms in 3 minutes \ufffd" in saved.read_bytes().decode("utf-8")
        send('{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"memory_status"')  # cut short
        assert answer() == {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": ANY_TEXT}}
        send('{"id": 4, "method": "tools/list", "note": "' + SECRET + '"}')  # no "jsonrpc": "2.0"
        broken = answer()
        assert broken["id"] == 4 and broken["error"]["code"] == -32600
        send('{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"memory_search","arguments":'
             '{"query":"cache warms \\udc00","scope":"personal"}}}')
        found = answer()
        assert found["id"] == 5 and [h["id"] for h in found["result"]["structuredContent"]["hits"]] == [saved.stem]
        send('{"jsonrpc":"2.0",\r"id":6,"method":"ping"}')  # a bare CR is JSON whitespace, not a line end
        assert answer() == {"jsonrpc": "2.0", "id": 6, "result": {}}
        send('{"jsonrpc":"2.0","id":"r\\ud83d","method":"ping"}')  # an id no answer can carry: the SDK died on it
        assert answer()["id"] is None
        send('{"jsonrpc":"2.0","id":7,"method":"ping"}')
        assert answer() == {"jsonrpc": "2.0", "id": 7, "result": {}}
    finally:
        proc.stdin.close()  # the server ends on EOF
        proc.wait(timeout=30)
    err = proc.stderr.read() if proc.stderr else b""
    reader.join(timeout=5)
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()
    assert answers.empty() and proc.returncode == 0
    warnings = err.decode()
    assert "request 2: 1 lone UTF-16 surrogate(s) replaced" in warnings and "request 4: invalid" in warnings
    assert SECRET not in warnings and "Traceback" not in warnings


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("busy", [False, True], ids=["idle", "requests in flight"])
def test_ctrl_c_stops_the_server_while_the_client_keeps_stdin_open(git_repo: Path, data_root: Path,
                                                                   busy: bool) -> None:  # fmt: skip
    """The SDK read stdin on a worker thread a cancellation waits for: Ctrl-C did nothing
    until the client closed stdin. Now it ends the server at once, exit 130 (docs/cli.md),
    also with requests in flight (the SDK's tasks then failed on closed streams: exit 70)."""
    import signal
    import time

    env = {**os.environ, "OPEN_MEMEX_HOME": str(data_root)}
    proc = subprocess.Popen([sys.executable, "-m", "openmemex", "mcp"], cwd=git_repo, env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    try:
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}).encode()
            + b"\n")  # fmt: skip
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 1
        if busy:
            proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n' + b"".join(
                json.dumps({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": "memory_add",
                            "arguments": {"content": f"tau {n}: in flight at Ctrl-C", "scope": "personal"}}}).encode()
                + b"\n" for n in range(2, 40)))  # fmt: skip
            proc.stdin.flush()
            time.sleep(0.05)
        else:
            time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 130  # stdin is still open
        assert "internal error" not in proc.stderr.read().decode()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            pipe.close()


def test_requests_piped_in_are_all_answered_before_the_end(git_repo: Path, data_root: Path) -> None:
    """End of input ends the session and the SDK cancels what still runs: the requests read
    before it are answered first (``printf … | open-memex mcp``), then the server exits 0."""
    requests = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}},
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "memory_add", "arguments": {
                    "content": "sigma: piped in and saved before the end of input", "scope": "personal"}}},
                {"jsonrpc": "2.0", "id": 4, "method": "ping"}]  # fmt: skip
    piped = "".join(json.dumps(r) + "\n" for r in requests).encode() + b'{"jsonrpc":"2.0","id":5,"method":"ping"}'
    env = {**os.environ, "OPEN_MEMEX_HOME": str(data_root)}
    done = subprocess.run([sys.executable, "-m", "openmemex", "mcp"], cwd=git_repo, env=env, input=piped,
                          capture_output=True, timeout=60, check=False)  # fmt: skip
    answers = {json.loads(line)["id"]: json.loads(line) for line in done.stdout.splitlines()}
    assert sorted(answers) == [1, 2, 3, 4, 5] and done.returncode == 0, done.stderr.decode()
    assert all("result" in a for a in answers.values()), answers[3]
    assert len(answers[2]["result"]["tools"]) == 11 and not answers[3]["result"]["isError"]


@pytest.mark.skipif(sys.platform != "linux", reason="FIONREAD on a pipe")
def test_a_client_that_does_not_read_answers_is_held_back(git_repo: Path, data_root: Path) -> None:
    """The SDK starts a task per request it reads: a client writing without reading grew the
    server without bound. Past MAX_IN_FLIGHT unanswered requests the server stops reading
    stdin (what it took stops growing); once the client reads, every request is answered."""
    import fcntl
    import struct
    import termios
    import time

    env = {**os.environ, "OPEN_MEMEX_HOME": str(data_root)}
    proc = subprocess.Popen([sys.executable, "-m", "openmemex", "mcp"], cwd=git_repo, env=env, bufsize=0,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    fd, stdout = proc.stdin.fileno(), proc.stdout
    count = 20_000  # ~850 KB of pings: far more than the pipes and the in-flight cap hold
    sent = [0]

    def write() -> None:
        lines = [json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}
                 ).encode() + b"\n", b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n',
                 *(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % n for n in range(1, count + 1))]  # fmt: skip
        with suppress(BrokenPipeError):
            for line in lines:
                os.write(fd, line)
                sent[0] += len(line)

    def taken() -> int:  # what the server has read from its stdin so far
        unread = struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]
        return int(sent[0] - unread)

    def unread_answers() -> int:
        return int(struct.unpack("i", fcntl.ioctl(stdout.fileno(), termios.FIONREAD, b"\0\0\0\0"))[0])

    # The server reads stdin 64 KB (~1,500 pings) at a time and answers each chunk before it
    # takes the next, which on a loaded machine can take longer than a second: "it stopped
    # reading" is only true once its answers fill the pipe to us and what it took then stays
    # put for a while (after that it can take at most the 64 in flight and one more chunk).
    capacity = fcntl.fcntl(stdout.fileno(), fcntl.F_GETPIPE_SZ)
    writer = threading.Thread(target=write, daemon=True)
    try:
        writer.start()
        before, still_since = -1, time.monotonic()
        deadline = time.monotonic() + 120  # a loaded machine starts the server slowly
        while time.monotonic() < deadline:
            time.sleep(0.25)
            now = taken()
            assert proc.poll() is None, "the server exited"
            if now != before or unread_answers() < capacity - 4096:
                before, still_since = now, time.monotonic()
            elif time.monotonic() - still_since >= 3:
                break  # its answers fill the pipe and it has stopped reading
        time.sleep(2)
        assert taken() == before < 300_000, (before, taken())  # held back, not reading on
        answered = {json.loads(stdout.readline())["id"] for _ in range(count + 1)}
        assert answered == set(range(count + 1))
        writer.join(timeout=30)
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        writer.join(timeout=30)  # its write fails on the closed pipe; then its file can be closed
        proc.stdin.close()
        stdout.close()


class _AnyText(str):
    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and bool(other)

    __hash__ = str.__hash__


ANY_TEXT = _AnyText()


# -- concurrency: threads in the server plus a second process --------------------------------
def _stress_audit() -> Any:
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "stress.py"
    spec = importlib.util.spec_from_file_location("omx_stress_audit", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    sys.path.insert(0, str(path.parent))  # its sibling `isolation` module
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(path.parent))
    return module


async def test_concurrent_calls_and_a_second_process(git_repo: Path, data_root: Path, cli: Any) -> None:
    import anyio

    base = cli("add", "The shared chain starts here: builds use cache v1", "--json")
    chain_start = json.loads(base.out)["id"]
    stop = threading.Event()
    other: list[str] = []

    def second_process() -> None:
        n = 0
        while not stop.is_set() and n < 12:
            r = run_process("add", f"second process fact number {n} about widgets", "--json", cwd=git_repo)
            assert r.rc == 0, r.err
            other.append(json.loads(r.out)["id"])
            n += 1

    writer = threading.Thread(target=second_process)
    writer.start()
    outcomes: dict[str, Any] = {}
    try:
        async with stdio_session(git_repo, data_root) as s:
            await s.initialize()

            async def one(key: str, name: str, args: dict[str, Any]) -> None:
                outcomes[key] = await s.call_tool(name, args)

            async with anyio.create_task_group() as group:
                for i in range(12):
                    group.start_soon(one, f"add{i}", "memory_add", {"content": f"server fact {i}: queue depth limit {i}"})
                for i in range(4):  # the same text four times at once: one file, three "exists"
                    group.start_soon(one, f"same{i}", "memory_add", {"content": "identical text from four calls"})
                for i in range(3):  # one supersede wins, the others are told who replaced it
                    group.start_soon(one, f"sup{i}", "memory_supersede",
                                     {"id": chain_start, "content": f"builds use cache v{i + 2}"})
                for i in range(6):
                    group.start_soon(one, f"search{i}", "memory_search", {"query": "queue depth"})
            stop.set()
            await anyio.to_thread.run_sync(writer.join)
            final = await s.call_tool("memory_search", {"query": "second process fact widgets", "limit": 50})
    finally:
        stop.set()
        writer.join()
    for key, result in outcomes.items():
        if key.startswith(("add", "same", "search")):
            assert not result.is_error, f"{key}: {text(result)}"
    sames = [outcomes[f"same{i}"].structured_content for i in range(4)]
    assert sorted(x["status"] for x in sames) == ["exists", "exists", "exists", "saved"]
    assert len({x["id"] for x in sames}) == 1
    wins = [outcomes[f"sup{i}"] for i in range(3) if not outcomes[f"sup{i}"].is_error]
    assert len(wins) == 1, [text(outcomes[f"sup{i}"]) for i in range(3)]
    # every memory the other process saved is found by the server right after
    hits = {h["id"] for h in final.structured_content["hits"]}
    assert set(other) <= hits
    stress = _stress_audit()
    with_index = run_process("search", "anything", cwd=git_repo)  # one more read: the index in step
    assert with_index.rc == 0
    report = stress.audit(stress.memory_folders(data_root, git_repo / ".ai" / "open-memex"),
                          data_root / "index.db", data_root / "logs" / "crash.log")  # fmt: skip
    assert report.clean, report.examples
    assert report.files == 1 + 12 + 1 + 1 + len(other)


# -- in-process: schema, errors, notes -------------------------------------------------------
async def test_schema_refuses_bad_input_before_any_code_runs(git_repo: Path) -> None:
    async with in_process() as c:
        bad_type = await c.call_tool("memory_search", {"query": "x", "type": "decisions"})
        assert bad_type.is_error and "'decision'" in text(bad_type)
        empty = await c.call_tool("memory_add", {"content": ""})
        assert empty.is_error
        bad_limit = await c.call_tool("memory_list", {"limit": 1000})
        assert bad_limit.is_error
        tools = (await c.list_tools()).tools
    by_name = {t.name: t for t in tools}
    schema = by_name["memory_add"].input_schema
    assert {"content", "type", "scope", "tags"} <= set(schema["properties"])
    assert schema["required"] == ["content"]
    assert "decision" in schema["properties"]["type"]["enum"]
    ann = {t.name: t.annotations for t in tools}
    assert all(ann[n].read_only_hint for n in ("memory_search", "memory_list", "memory_status"))
    assert ann["memory_forget"].destructive_hint is True
    assert ann["memory_pr_status"].read_only_hint is False and ann["memory_pr_status"].open_world_hint is True
    assert all(a is not None and a.open_world_hint is not None for a in ann.values())
    size = len(json.dumps([t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in tools],
                          separators=(",", ":")))  # fmt: skip
    assert size <= 10 * 1024, f"tools/list is {size} bytes"


async def test_errors_name_the_next_step(git_repo: Path) -> None:
    async with in_process() as c:
        missing = await c.call_tool("memory_forget", {"id": "01NOSUCHMEMORY00000000000Z"})
        assert missing.is_error
        assert text(missing).startswith("open-memex error: ") and "Traceback" not in text(missing)
        personal = await c.call_tool("memory_add", {"content": "I work mornings", "scope": "personal"})
        pid = personal.structured_content["id"]
        wrong = await c.call_tool("memory_submit", {"ids": [pid]})
        assert wrong.is_error and "propose" in text(wrong)


TOKEN = "ghp_" + "A1b2C3d4" * 4 + "E5f6"  # a GitHub token's shape, built so no file holds one


async def test_bad_arguments_are_one_masked_line(git_repo: Path) -> None:
    """The SDK's answer was pydantic's dump: four lines, a URL, and the rejected value (a
    token in ``tags`` came back whole); a misspelled argument was dropped and the memory
    saved without it."""
    async with in_process() as c:
        wrong_type = await c.call_tool("memory_add", {"content": "x marks the spot", "tags": f"deploy {TOKEN}"})
        unknown = await c.call_tool("memory_add", {"content": "we chose postgres", "kind": "decision", "tag": ["db"]})
        no_tool = await c.call_tool("memory_addd\x1b[2J", {"content": "x"})
        listed = await c.call_tool("memory_list", {})
    for result in (wrong_type, unknown, no_tool):
        said = text(result)
        assert result.is_error and said.startswith("open-memex error: ") and "\n" not in said, said
        assert TOKEN not in said and "pydantic" not in said and "\x1b" not in said
    assert "invalid arguments for memory_add: tags: Input should be a valid list" in text(wrong_type)
    assert "unknown argument(s) kind, tag — the tool takes content, type" in text(unknown)
    assert "unknown tool" in text(no_tool)
    assert "postgres" not in text(listed)  # nothing was saved by the refused call


async def test_what_a_tool_repeats_of_its_input_is_masked_and_cut(git_repo: Path) -> None:
    async with in_process() as c:
        query = await c.call_tool("memory_search", {"query": f"where is {TOKEN} used " + "word " * 2_000})
        missing = await c.call_tool("memory_forget", {"id": f"{TOKEN} " + "9" * 30_000})
    assert not query.is_error
    assert TOKEN not in text(query) and TOKEN not in json.dumps(query.structured_content)
    assert len(text(query)) < 2_000 and len(json.dumps(query.structured_content)) < 2_000
    assert missing.is_error and TOKEN not in text(missing) and len(text(missing)) < 2_200


async def test_a_token_put_in_a_file_by_hand_never_reaches_the_agent(git_repo: Path, data_root: Path) -> None:
    """The write path masks; a file edited by hand (or pulled) is masked again on its way out."""
    async with in_process() as c:
        added = await c.call_tool("memory_add", {"content": "the staging deploy uses the bot account"})
        memory_id = added.structured_content["id"]
        path = Path(added.structured_content["path"])
        path.write_text(path.read_text().replace("bot account", f"bot account with {TOKEN}"))
        found = await c.call_tool("memory_search", {"query": "staging deploy"})
        listed = await c.call_tool("memory_list", {})
    for result in (found, listed):
        shown = text(result) + json.dumps(result.structured_content)
        assert TOKEN not in shown and TOKEN[:4] + "x" * 36 in shown, shown
        assert memory_id in shown  # ids are never taken for secrets
    assert TOKEN in path.read_text()  # the file is the user's: reads never change it


async def test_a_token_only_the_users_pattern_knows_is_masked_on_the_way_out(git_repo: Path, data_root: Path,
                                                                           cli: Any) -> None:  # fmt: skip
    """The user's `redactPatterns` mask a write; a file edited by hand is masked with them again
    on its way to the agent, text and structured content alike — not with the built-in rules
    alone."""
    assert cli("config", "set", "redactPatterns", '["ACME-[0-9]{6}"]').rc == 0
    async with in_process() as c:
        added = await c.call_tool("memory_add", {"content": "the staging deploy uses the bot account"})
        path = Path(added.structured_content["path"])
        path.write_text(path.read_text().replace("bot account", "bot account, badge ACME-314159"))
        found = await c.call_tool("memory_search", {"query": "staging deploy"})
        shown = await c.call_tool("memory_list", {})
    for result in (found, shown):
        seen = text(result) + json.dumps(result.structured_content)
        assert "ACME-314159" not in seen and "ACMExxxxxxx" in seen, seen


async def test_a_users_pattern_that_never_finishes_is_one_line_not_a_crash(git_repo: Path, data_root: Path,
                                                                          cli: Any) -> None:  # fmt: skip
    """Masking an answer runs the user's patterns under their time limit: one past it makes
    the call one clear error naming it, never a hung server or a traceback."""
    async with in_process() as c:
        added = await c.call_tool("memory_add", {"content": "the staging deploy uses the bot account"})
        path = Path(added.structured_content["path"])
        path.write_text(path.read_text().replace("bot account", "bot account " + "a" * 40 + "!"))
        assert cli("config", "set", "redactPatterns", '["(a|aa)+$"]').rc == 0
        found = await c.call_tool("memory_search", {"query": "staging deploy"})
    assert found.is_error and "redactPatterns" in text(found) and "Traceback" not in text(found), text(found)


async def test_status_is_capped_for_the_agent(git_repo: Path) -> None:
    async with in_process() as c:
        for i in range(25):
            assert not (await c.call_tool("memory_add", {"content": f"draft number {i} about topic {i * 7}"})).is_error
        status = await c.call_tool("memory_status", {})
    doc = status.structured_content
    assert len(doc["outbox"]) == 20 and doc["totals"]["outbox"] == 25
    assert doc["next"][0].endswith("(and 5 more: open-memex sync-status)")
    assert "(and 5 more: open-memex sync-status)" in text(status)


async def test_outbox_note_only_when_drafts_wait(git_repo: Path) -> None:
    async with in_process() as c:
        personal = await c.call_tool("memory_add", {"content": "I prefer dark themes", "scope": "personal"})
        assert "draft(s) waiting" not in text(personal)
        project = await c.call_tool("memory_add", {"content": "The API gateway times out after 29 seconds"})
        assert "[open-memex: 1 draft(s) waiting in the project outbox" in text(project)
        search = await c.call_tool("memory_search", {"query": "gateway"})
        assert "draft(s) waiting" not in text(search)  # reads stay quiet (D53)


async def test_handshake_counts_waiting_drafts(git_repo: Path, cli: Any) -> None:
    async with in_process() as c:
        assert "draft(s) are waiting" not in (c.instructions or "")
    cli("add", "a waiting draft about logging levels")
    async with in_process() as c:
        assert "Right now 1 draft(s) are waiting" in (c.instructions or "")


async def test_turn_echo_guard_refuses_a_reworded_capture(git_repo: Path, cli: Any) -> None:
    stored = cli("add", "remember the staging database resets every night at 2am", "--source", "keyword", "--json")
    stored_id = json.loads(stored.out)["id"]
    async with in_process() as c:
        echo = await c.call_tool("memory_add", {"content": "The staging database resets every night at 2am."})
        assert not echo.is_error
        assert echo.structured_content["status"] == "refused"
        assert stored_id in text(echo) and "memory_supersede" in text(echo)
        new = await c.call_tool("memory_add", {"content": "Feature flags live in LaunchDarkly, project web"})
        assert new.structured_content["status"] == "saved"


async def test_turn_echo_guard_keeps_a_different_fact(git_repo: Path, cli: Any) -> None:
    """D73 guards the hook's captures against the agent's restatement, nothing more: the
    agent's own source=user saves are not captures, and a fact the capture does not hold
    (overlap 0.56) is saved — the guard would tell the agent it was already stored."""
    async with in_process() as c:
        first = await c.call_tool("memory_add", {"content": "We deploy the backend service on Fridays", "source": "user"})
        other = await c.call_tool("memory_add", {"content": "We deploy the frontend service on Mondays", "source": "user"})
        assert first.structured_content["status"] == "saved"
        assert other.structured_content["status"] == "saved", text(other)
    captured = cli("add", "we deploy the billing service on Tuesdays", "--source", "keyword", "--json")
    captured_id = json.loads(captured.out)["id"]
    async with in_process() as c:
        different = await c.call_tool("memory_add", {"content": "We deploy the search service on Thursdays"})
        assert different.structured_content["status"] == "saved", text(different)
        again = await c.call_tool("memory_add", {"content": "The team deploys the billing service on Tuesdays."})
        assert again.structured_content["status"] == "refused" and captured_id in text(again)


async def test_terminal_escapes_in_memories_are_shown_not_sent(git_repo: Path) -> None:
    async with in_process() as c:
        await c.call_tool("memory_add", {"content": "colour \x1b[31mred\x1b[0m alert text"})
        found = await c.call_tool("memory_search", {"query": "alert"})
    assert "\x1b" not in text(found) and "\\x1b" in text(found)


# -- freshness without a stat scan per call --------------------------------------------------
def _watch(session: Session) -> Any:
    assert session.watch is not None, "inotify is available on Linux"
    return session.watch


@pytest.fixture
def linux_only() -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("the folder watcher uses inotify (other systems keep the stat scan)")


async def test_clean_calls_scan_nothing_and_see_every_change(git_repo: Path, data_root: Path, cli: Any,
                                                             linux_only: None) -> None:  # fmt: skip
    from mcp import Client

    session = Session.start()
    watch = _watch(session)
    try:
        async with Client(build(session)) as c:
            await c.call_tool("memory_add", {"content": "alpha note about retries"})
            await c.call_tool("memory_search", {"query": "alpha"})
            full_before = watch.counters["full"]
            for _ in range(5):
                await c.call_tool("memory_search", {"query": "alpha"})
            assert watch.counters["full"] == full_before, "no full scan when nothing changed"
            assert watch.counters["clean"] > 0
            # another process writes: seen at once, by looking at that file only
            other = json.loads(cli("add", "beta note from the CLI about caching", "--json").out)["id"]
            files_before = watch.counters["files"]
            hit = await c.call_tool("memory_search", {"query": "beta caching"})
            assert [h["id"] for h in hit.structured_content["hits"]] == [other]
            assert watch.counters["full"] == full_before and watch.counters["files"] > files_before
            # a hand edit that keeps size and mtime is still an event
            path = next((data_root / "memories").rglob(f"{other}.md"))
            before = path.stat()
            body = path.read_text()
            path.write_text(body.replace("caching", "hashing"))
            os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
            assert path.stat().st_size == before.st_size
            edited = await c.call_tool("memory_search", {"query": "hashing"})
            assert [h["id"] for h in edited.structured_content["hits"]] == [other]
            # deleted by hand
            path.unlink()
            gone = await c.call_tool("memory_search", {"query": "hashing"})
            assert gone.structured_content["hits"] == []
    finally:
        session.close()


async def test_index_deleted_or_damaged_under_a_running_server(git_repo: Path, data_root: Path, cli: Any,
                                                               linux_only: None) -> None:  # fmt: skip
    """Scenario 64: delete index.db, and the server still finds what another process wrote."""
    async with in_process() as c:
        saved = await c.call_tool("memory_add", {"content": "gamma: the cron runs hourly"})
        gid = saved.structured_content["id"]
        (data_root / "index.db").unlink()
        for suffix in ("-wal", "-shm"):
            (data_root / f"index.db{suffix}").unlink(missing_ok=True)
        other = json.loads(cli("add", "delta: logs rotate daily", "--json").out)["id"]
        found = await c.call_tool("memory_search", {"query": "gamma cron"})
        assert [h["id"] for h in found.structured_content["hits"]] == [gid]
        found = await c.call_tool("memory_search", {"query": "delta logs rotate"})
        assert [h["id"] for h in found.structured_content["hits"]] == [other]
        # damaged in place: moved aside, rebuilt, answered
        db = data_root / "index.db"
        with db.open("r+b") as fh:
            fh.seek(4096)
            fh.write(b"\xff" * 8192)
        found = await c.call_tool("memory_search", {"query": "gamma cron"})
        assert not found.is_error, text(found)
        assert [h["id"] for h in found.structured_content["hits"]] == [gid]


async def test_branch_switch_is_noticed(git_repo: Path, linux_only: None) -> None:
    memdir = git_repo / ".ai" / "open-memex"
    async with in_process() as c:
        added = await c.call_tool("memory_add", {"content": "epsilon: feature branches are squash-merged"})
        mid = added.structured_content["id"]
        git("switch", "-q", "-c", "topic", cwd=git_repo)
        submitted = await c.call_tool("memory_submit", {"ids": [mid]})
        assert not submitted.is_error, text(submitted)
        assert (memdir / f"{mid}.md").exists()
        found = await c.call_tool("memory_search", {"query": "squash merged"})
        assert [h["id"] for h in found.structured_content["hits"]] == [mid]
        git("switch", "-q", "main", cwd=git_repo)  # the memory is not on main
        assert not (memdir / f"{mid}.md").exists()
        found = await c.call_tool("memory_search", {"query": "squash merged"})
        assert found.structured_content["hits"] == []
        git("switch", "-q", "topic", cwd=git_repo)
        found = await c.call_tool("memory_search", {"query": "squash merged"})
        assert [h["id"] for h in found.structured_content["hits"]] == [mid]


async def test_queue_overflow_falls_back_to_a_full_check(git_repo: Path, data_root: Path, cli: Any,
                                                         linux_only: None) -> None:  # fmt: skip
    from mcp import Client

    from openmemex.folderwatch import IN_Q_OVERFLOW

    session = Session.start()
    watch = _watch(session)
    try:
        async with Client(build(session)) as c:
            await c.call_tool("memory_search", {"query": "anything"})
            full = watch.counters["full"]
            watch._event(-1, IN_Q_OVERFLOW, b"")  # what the kernel sends when its queue overflowed
            other = json.loads(cli("add", "zeta: overflow drill", "--json").out)["id"]
            found = await c.call_tool("memory_search", {"query": "overflow drill"})
            assert [h["id"] for h in found.structured_content["hits"]] == [other]
            assert watch.counters["full"] > full
    finally:
        session.close()


async def test_without_a_watcher_the_stat_scan_keeps_reads_fresh(git_repo: Path, cli: Any) -> None:
    async with in_process(watch=False) as c:
        await c.call_tool("memory_search", {"query": "x"})
        other = json.loads(cli("add", "eta: without inotify", "--json").out)["id"]
        found = await c.call_tool("memory_search", {"query": "without inotify"})
        assert [h["id"] for h in found.structured_content["hits"]] == [other]


@pytest.fixture(autouse=True)
def _no_token(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """pr-status must only see the token a test hands the server."""
    for var in ("GH_TOKEN", "GITHUB_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    yield


def test_doctor_runs_a_live_handshake(git_repo: Path, cli: Any) -> None:
    result = cli("doctor", "--json")
    checks = {c["name"]: c for c in json.loads(result.out)["checks"]}
    assert checks["mcp handshake"]["ok"], checks["mcp handshake"]
    assert checks["mcp handshake"]["detail"].startswith("11 tools listed")
    assert checks["yaml"]["ok"]


async def test_hostile_inputs_are_one_line_errors(git_repo: Path, data_root: Path) -> None:
    async with in_process() as c:
        lone = await c.call_tool("memory_add", {"content": "bad \ud800 surrogate"})  # JSON allows "\\ud800"
        assert lone.is_error and "unicode" in text(lone).lower()  # refused by the schema
        saved = await c.call_tool("memory_add", {"content": "theta: the release train leaves on Tuesdays"})
        (git_repo / ".git" / "index.lock").write_text("")  # another git command is running
        locked = await c.call_tool("memory_submit", {"ids": [saved.structured_content["id"]]})
        # the commit is made without the index; refreshing it is owed, and the result says how
        assert not locked.is_error, text(locked)
        assert "could not be refreshed" in text(locked) and "Traceback" not in text(locked)
        (git_repo / ".git" / "index.lock").unlink()
        again = await c.call_tool("memory_submit", {"ids": [saved.structured_content["id"]]})  # pays what is owed
        assert not again.is_error, text(again)
    assert git("status", "--porcelain", cwd=git_repo) == ""
    assert list(data_root.glob("logs/crash.log")) == []


async def test_data_root_removed_under_a_running_server(git_repo: Path, data_root: Path, cli: Any) -> None:
    import shutil

    async with in_process() as c:
        await c.call_tool("memory_add", {"content": "iota: to be wiped", "scope": "personal"})
        shutil.rmtree(data_root)
        other = json.loads(cli("add", "kappa: written after the wipe", "--scope", "personal", "--json").out)["id"]
        found = await c.call_tool("memory_search", {"query": "wiped after", "scope": "personal"})
        assert [h["id"] for h in found.structured_content["hits"]] == [other]
        again = await c.call_tool("memory_add", {"content": "lambda: saved by the server after the wipe"})
        assert again.structured_content["status"] == "saved"


async def test_project_dir_binds_the_session_to_a_workspace(git_repo: Path, data_root: Path, tmp_path: Path) -> None:
    """Editors that start servers in the home folder pass --project-dir ${workspaceFolder}."""
    from mcp import ClientSession, StdioServerParameters, stdio_client

    elsewhere = tmp_path / "home-like"
    elsewhere.mkdir()
    params = server_params(elsewhere, data_root)
    params = StdioServerParameters(command=params.command, args=[*params.args, "--project-dir", str(git_repo)],
                                   env=params.env, cwd=str(elsewhere))  # fmt: skip
    with tempfile.TemporaryFile("w+", encoding="utf-8") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as s:
            init = await s.initialize()
            assert f"widgets ({git_repo})" in (init.instructions or "")
            saved = await s.call_tool("memory_add", {"content": "mu: bound to the workspace, not the start folder"})
    assert saved.structured_content["scope_key"].startswith("project__widgets__")
    bad = run_process("mcp", "--project-dir", str(tmp_path / "missing"), cwd=elsewhere)
    assert bad.rc == 2 and bad.err.count("\n") == 1 and "--project-dir" in bad.err


async def test_an_unexpanded_workspace_variable_falls_back_to_the_start_folder(git_repo: Path, data_root: Path) -> None:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = server_params(git_repo, data_root)
    params = StdioServerParameters(command=params.command, args=[*params.args, "--project-dir", "${workspaceFolder}"],
                                   env=params.env, cwd=str(git_repo))  # fmt: skip
    with tempfile.TemporaryFile("w+", encoding="utf-8") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as s:
            init = await s.initialize()
        errlog.seek(0)
        assert "was not expanded" in errlog.read()
    assert f"widgets ({git_repo})" in (init.instructions or "")


def test_a_command_that_wrote_is_never_run_again(git_repo: Path) -> None:
    """Damage found after a write is reported, not answered by re-running the command."""
    import sqlite3

    from openmemex.context import Context
    from openmemex.errors import IndexDamaged, MemexError

    for wrote, expected in ((False, IndexDamaged), (True, MemexError)):
        ctx = Context.load()
        with pytest.raises(MemexError) as info, ctx:
            ctx.wrote = wrote
            raise sqlite3.DatabaseError("database disk image is malformed")
        assert type(info.value) is expected


async def test_damage_after_a_promote_does_not_promote_twice(git_repo: Path, data_root: Path, cli: Any) -> None:
    import sqlite3

    from openmemex.context import Context
    from openmemex.ids import now_rfc3339
    from openmemex.model import Memory
    from openmemex.store import save

    mid = json.loads(cli("add", "we deploy the zebra service on fridays", "--json").out)["id"]
    assert cli("submit", mid).rc == 0
    with Context.load() as ctx:
        key, outbox = ctx.project.key, ctx.outbox_dir
    stamp = now_rfc3339()
    for i in range(1500):  # enough outbox rows that the post-write count reads many index pages
        save(Memory(id=f"01J{i:023d}", scope="project", scope_key=key, body=f"draft {i} padding text for pages",
                    created_at=stamp, updated_at=stamp, visibility="internal"), outbox)  # fmt: skip
    db = data_root / "index.db"
    async with in_process() as c:
        await c.call_tool("memory_list", {"limit": 1})
        conn = sqlite3.connect(db)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        for name in ("memories_dir_updated", "memories_dir_status"):  # what the outbox count reads
            leaves = [p for (p,) in conn.execute(
                "SELECT pageno FROM dbstat WHERE name=? AND pagetype='leaf' ORDER BY path", (name,))]
            with db.open("r+b") as fh:
                fh.seek((leaves[len(leaves) // 2] - 1) * page_size + 8)
                fh.write(b"\xff" * 64)
        conn.close()
        await c.call_tool("memory_promote", {"id": mid})
    stored = (git_repo / ".ai" / "open-memex" / f"{mid}.md").read_text()
    assert "review_state: approved" in stored and stored.count("to: approved") == 1
    assert "published" not in stored
    assert list(data_root.glob("index.db.corrupt-*")), "the damage was never reached"


async def test_reindex_by_another_process_is_noticed(git_repo: Path, tmp_path: Path, cli: Any,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    mid = json.loads(cli("add", "nu: the repo copy survives a foreign reindex", "--json").out)["id"]
    assert cli("submit", mid).rc == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    async with in_process(git_repo) as c:
        found = await c.call_tool("memory_search", {"query": "foreign reindex"})
        assert [h["id"] for h in found.structured_content["hits"]] == [mid]
        with monkeypatch.context() as m:
            m.chdir(elsewhere)  # its reindex rebuilds every row but re-reads only its own folders
            assert cli("reindex").rc == 0
        for _ in range(2):
            found = await c.call_tool("memory_search", {"query": "foreign reindex"})
            assert [h["id"] for h in found.structured_content["hits"]] == [mid]


async def test_a_folder_swapped_under_its_path_is_noticed(git_repo: Path, tmp_path: Path, linux_only: None) -> None:
    """Watches follow inodes: a retargeted symlink or a re-created ancestor is a new folder."""
    from openmemex.ids import new_ulid
    from tests.helpers import write_example

    a, b = tmp_path / "a", tmp_path / "b"
    first, second = new_ulid(), new_ulid()
    write_example(a, first, "\nGiraffe marker one.")
    write_example(b, second, "\nGiraffe marker two.")
    (git_repo / ".ai").mkdir()
    link = git_repo / ".ai" / "open-memex"
    link.symlink_to(a)
    async with in_process(git_repo) as c:
        found = await c.call_tool("memory_search", {"query": "giraffe marker"})
        assert [h["id"] for h in found.structured_content["hits"]] == [first]
        link.unlink()
        link.symlink_to(b)
        found = await c.call_tool("memory_search", {"query": "giraffe marker"})
        assert [h["id"] for h in found.structured_content["hits"]] == [second]
        # the whole work tree moved away and a fresh clone put in its place
        git_repo.rename(tmp_path / "repo.old")
        git("init", "-q", "-b", "main", str(git_repo), cwd=tmp_path)
        git("remote", "add", "origin", "git@github.com:acme/widgets.git", cwd=git_repo)
        third = new_ulid()
        write_example(git_repo / ".ai" / "open-memex", third, "\nGiraffe marker three.")
        found = await c.call_tool("memory_search", {"query": "giraffe marker"})
        assert [h["id"] for h in found.structured_content["hits"]] == [third]


async def test_memory_add_defines_an_alias_search_follows(git_repo: Path) -> None:
    """D81 through the tool: a name saved with its meaning is found by either."""
    async with in_process() as c:
        saved = await c.call_tool("memory_add", {"content": "Refunds go through the payment service provider's API.",
                                                 "alias": "PSP", "target": "payment service provider"})  # fmt: skip
        assert not saved.is_error, text(saved)
        found = await c.call_tool("memory_search", {"query": "PSP refunds"})
        assert saved.structured_content["id"] in [h["id"] for h in found.structured_content["hits"]]
        half = await c.call_tool("memory_add", {"content": "An alias without its meaning", "alias": "XYZ"})
        assert half.is_error and "target" in text(half)
        fixed = await c.call_tool("memory_supersede", {"id": saved.structured_content["id"],
                                                       "content": "Refunds go through the payments gateway's API.",
                                                       "alias": "PSP", "target": "payments gateway"})  # fmt: skip
        assert not fixed.is_error, text(fixed)
        other = await c.call_tool("memory_add", {"content": "Payments gateway timeouts are retried twice."})
        shown = await c.call_tool("memory_search", {"query": "PSP"})  # the other is reached through the new pair
        assert [h.get("alias_round") for h in shown.structured_content["hits"]
                if h["id"] == other.structured_content["id"]] == ["PSP → payments gateway"]  # fmt: skip
