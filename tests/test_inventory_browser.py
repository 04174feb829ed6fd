"""The HTML inventory in a real headless Chromium (Debian's ``chromium``; ``.ci/run``
installs it), driven over the DevTools protocol on a pipe: the page renders the memories,
a ``<script>`` in a memory stays text, our own hashed script runs (the filter works), the
browser requests nothing but the page — even a request forced from the console is
blocked by the CSP and never reaches a loopback server — and light and dark screenshots
are saved as test artifacts in the test's tmp folder."""

from __future__ import annotations

import base64
import contextlib
import fcntl
import http.server
import json
import os
import queue
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

TIMEOUT_S = 30.0


def _high(fd: int) -> int:
    """``fd`` moved above the low numbers, so putting the pipe ends on 3 and 4 in the child
    can never overwrite one of them (a test process may well have 3 and 4 free)."""
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 64)
    os.close(fd)
    return moved


class DevTools:
    """Just enough of the Chrome DevTools protocol over ``--remote-debugging-pipe``
    (fd 3 carries commands in, fd 4 replies and events out, NUL-separated JSON)."""

    def __init__(self, chromium: str, profile: Path) -> None:
        to_r, self._to_w = (_high(fd) for fd in os.pipe())
        self._from_r, from_w = (_high(fd) for fd in os.pipe())
        args = ["--headless=new", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe", f"--user-data-dir={profile}",
                "--no-first-run", "--no-default-browser-check", "--disable-extensions", "--disable-sync",
                "--disable-background-networking", "--disable-component-update", "--disable-default-apps",
                "--metrics-recording-only", "--mute-audio", "about:blank"]  # fmt: skip
        # a tiny trampoline moves our pipe ends to the descriptor numbers Chromium expects
        # (Debian's /bin/sh cannot redirect descriptors above 9)
        trampoline = ("import os, sys; r, w = int(sys.argv[1]), int(sys.argv[2]); os.dup2(r, 3); os.dup2(w, 4); "
                      "os.close(r); os.close(w); os.execv(sys.argv[3], sys.argv[3:])")  # fmt: skip
        self.log = profile.parent / "chromium.log"
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen([sys.executable, "-c", trampoline, str(to_r), str(from_w), chromium, *args],
                                         pass_fds=(to_r, from_w),
                                         stdout=log, stderr=log)  # fmt: skip
        os.close(to_r)
        os.close(from_w)
        self._messages: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.events: list[dict[str, Any]] = []
        self._next = 0
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.session: str | None = None

    def _read(self) -> None:
        buffer = b""
        while True:
            chunk = os.read(self._from_r, 1 << 16)
            if not chunk:
                self._messages.put(None)
                return
            buffer += chunk
            while b"\0" in buffer:
                raw, buffer = buffer.split(b"\0", 1)
                self._messages.put(json.loads(raw))

    def call(self, method: str, params: dict[str, Any] | None = None, session: bool = True) -> dict[str, Any]:
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if session and self.session is not None:
            message["sessionId"] = self.session
        os.write(self._to_w, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            reply = self._messages.get(timeout=max(deadline - time.monotonic(), 0.01))
            if reply is None:
                raise RuntimeError(f"chromium closed the DevTools pipe; its log: {self.log}")
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply.get("result", {})
                return result
            self.events.append(reply)

    def wait_for(self, method: str) -> dict[str, Any]:
        deadline = time.monotonic() + TIMEOUT_S
        for event in self.events:
            if event.get("method") == method:
                return event
        while True:
            event = self._messages.get(timeout=max(deadline - time.monotonic(), 0.01))
            if event is None:
                raise RuntimeError("chromium closed the DevTools pipe")
            self.events.append(event)
            if event.get("method") == method:
                return event

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, path: Path) -> None:
        metrics = self.call("Page.getLayoutMetrics")["cssContentSize"]
        clip = {"x": 0, "y": 0, "width": metrics["width"], "height": min(metrics["height"], 4000), "scale": 1}
        shot = self.call("Page.captureScreenshot", {"format": "png", "clip": clip, "captureBeyondViewport": True})
        path.write_bytes(base64.b64decode(shot["data"]))

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.call("Browser.close", session=False)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_w)
        self._reader.join(timeout=5)
        os.close(self._from_r)


@pytest.fixture
def hits() -> Iterator[tuple[str, list[str]]]:
    """A loopback HTTP server that records every request it gets (there must be none)."""
    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path)
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_html_inventory_in_headless_chromium(cli: Any, data_root: Path, tmp_path: Path, hits: tuple[str, list[str]]) -> None:
    chromium = shutil.which("chromium")
    assert chromium is not None, "Debian's chromium is required: apt-get install -y chromium (.ci/run installs it)"
    base, seen = hits
    texts = [
        "We deploy on Fridays only after the smoke suite passes",
        f'hostile <script>window.pwned = 1; fetch("{base}/script")</script> stays text',
        f'<img src="{base}/img"> <link rel="stylesheet" href="{base}/css"> <iframe src="{base}/frame"></iframe>',
        "数据库备份每天凌晨两点运行",
    ]
    for text in texts:
        assert cli("add", text).rc == 0
    assert cli("add", "I read diffs in a dark terminal", "--scope", "personal", "--type", "preference").rc == 0
    old = json.loads(cli("add", "the cache lives in redis 6", "--json").out)["id"]
    assert cli("supersede", old, "the cache lives in redis 7").rc == 0
    assert cli("inventory", "--format", "html").rc == 0
    page = data_root / "inventory.html"

    browser = DevTools(chromium, tmp_path / "profile")
    try:
        target = browser.call("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        browser.session = browser.call("Target.attachToTarget", {"targetId": target, "flatten": True}, session=False)["sessionId"]
        for domain in ("Page", "Network", "Runtime"):
            browser.call(f"{domain}.enable")
        browser.call("Page.addScriptToEvaluateOnNewDocument", {"source": (
            "window.__csp = []; document.addEventListener('securitypolicyviolation', "
            "function (e) { window.__csp.push(e.violatedDirective + ' ' + e.blockedURI); });")})  # fmt: skip
        browser.call("Emulation.setDeviceMetricsOverride", {"width": 1000, "height": 1200, "deviceScaleFactor": 1, "mobile": False})
        browser.call("Page.navigate", {"url": page.as_uri()})
        browser.wait_for("Page.loadEventFired")

        assert browser.evaluate("document.title") == "What open-memex remembers"
        assert browser.evaluate("document.querySelectorAll('.entry').length") == 7  # 6 current + 1 superseded
        body = browser.evaluate("document.body.innerText")
        for text in texts[:1] + texts[3:]:
            assert text in body
        assert '<script>window.pwned = 1; fetch("' in body and '<img src="' in body  # shown as text
        assert browser.evaluate("typeof window.pwned") == "undefined"
        assert browser.evaluate("document.scripts.length") == 1 and browser.evaluate("document.images.length") == 0
        assert browser.evaluate("window.__csp") == []  # our own style and script are allowed by their hashes
        assert browser.evaluate("document.getElementById('filter').hidden") is False  # the script ran
        assert browser.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(253, 253, 251)"
        browser.screenshot(tmp_path / "inventory.png")

        shown = browser.evaluate(
            "(function () { var f = document.getElementById('filter'); f.value = 'redis'; "
            "f.dispatchEvent(new Event('input')); "
            "return Array.prototype.filter.call(document.querySelectorAll('.entry'), function (e) { return !e.hidden; }).length; })()"
        )
        assert shown == 2  # the current version and the folded old one
        assert browser.evaluate("document.getElementById('filter-status').textContent") == "2 of 7 memories match"
        browser.evaluate("document.getElementById('filter').value = ''; document.getElementById('filter').dispatchEvent(new Event('input'))")

        browser.call("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "dark"}]})
        assert browser.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(21, 23, 27)"
        browser.screenshot(tmp_path / "inventory-dark.png")

        requests = [e["params"]["request"]["url"] for e in browser.events if e.get("method") == "Network.requestWillBeSent"]
        assert requests == [page.as_uri()]  # the page itself, and nothing else

        # defence in depth: even a request made from the console is blocked by the page's CSP
        browser.evaluate(f"var probe = new Image(); probe.src = '{base}/probe'; document.body.appendChild(probe); 1")
        failed = browser.wait_for("Network.loadingFailed")["params"]
        assert failed.get("blockedReason") == "csp", failed
        assert any(v.startswith("img-src") for v in browser.evaluate("window.__csp"))
    finally:
        browser.close()
    assert seen == []  # the loopback server never heard from the page
    for name in ("inventory.png", "inventory-dark.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    print(f"screenshots: {tmp_path / 'inventory.png'} {tmp_path / 'inventory-dark.png'}")
