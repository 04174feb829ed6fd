"""Loopback git servers for tests (notes/git-and-pygit2.md §3). Nothing listens beyond
127.0.0.1 and everything shuts down when the ``with`` block ends.

- ``smart_http_server(repos, token)``: dulwich's smart-HTTP WSGI app (fetch and push), with
  HTTP Basic auth whose password must equal ``token``; runs no server hooks.
- ``git_daemon(base_path)``: ``git daemon`` with receive-pack enabled; runs server hooks, so
  it is the server to use for pre-receive rejections over a network protocol.
- ``bare_remote(path)`` / ``install_pre_receive(bare, message)``: server-side repositories.
"""

from __future__ import annotations

import base64
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

StartResponse = Callable[..., Any]
WSGIApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


def bare_remote(path: Path) -> Path:
    """An empty bare repository whose default branch is ``main``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(path)], check=True, capture_output=True)
    return path


def install_pre_receive(bare: Path, message: str) -> Path:
    """A pre-receive hook that prints ``message`` on stderr and refuses every push."""
    hooks = bare / "hooks"
    hooks.mkdir(exist_ok=True)
    hook = hooks / "pre-receive"
    hook.write_text(
        "#!/bin/sh\ncat >&2 <<'OPEN_MEMEX_HOOK_MESSAGE'\n"
        f"{message}\nOPEN_MEMEX_HOOK_MESSAGE\nexit 1\n"
    )
    hook.chmod(0o755)
    return hook


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _buffered(inner: WSGIApp) -> WSGIApp:
    """Collect the whole response and set Content-Length: libgit2 hangs up on dulwich's
    streamed HTTP/1.0 responses ("could not read refs from remote repository")."""

    def app(environ: dict[str, Any], start_response: StartResponse) -> list[bytes]:
        captured: dict[str, Any] = {}
        written: list[bytes] = []

        def capture(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Callable[[bytes], None]:
            captured["status"], captured["headers"] = status, headers
            return written.append

        result = inner(environ, capture)
        try:
            for piece in result:  # dulwich both yields and calls write(): keep them in order
                written.append(piece)
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()
        body = b"".join(written)
        headers = [(k, v) for k, v in captured["headers"] if k.lower() != "content-length"]
        start_response(captured["status"], [*headers, ("Content-Length", str(len(body)))])
        return [body]

    return app


def _basic_auth(inner: WSGIApp, token: str) -> WSGIApp:
    """401 + WWW-Authenticate unless the Basic-auth password equals ``token`` (any user,
    as GitHub accepts ``x-access-token:<token>``)."""

    def app(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        header = environ.get("HTTP_AUTHORIZATION", "")
        if header.startswith("Basic "):
            try:
                _user, _, password = base64.b64decode(header[6:]).decode().partition(":")
            except (ValueError, UnicodeDecodeError):
                password = ""
            if password == token:
                return inner(environ, start_response)
        start_response(
            "401 Unauthorized",
            [("WWW-Authenticate", 'Basic realm="open-memex test"'), ("Content-Length", "0")],
        )
        return [b""]

    return app


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def smart_http_server(repos: dict[str, Path], token: str | None = None) -> Iterator[str]:
    """Serve bare repositories over smart HTTP on 127.0.0.1; yields the base URL
    (``http://127.0.0.1:PORT``), so ``repos={"o/r.git": bare}`` is at ``{base}/o/r.git``."""
    from dulwich.repo import Repo
    from dulwich.server import DictBackend
    from dulwich.web import make_wsgi_chain

    opened = {"/" + name.strip("/"): Repo(str(path)) for name, path in repos.items()}
    try:
        backend = DictBackend({name.encode(): repo for name, repo in opened.items()})
        app: WSGIApp = _buffered(make_wsgi_chain(backend))
        if token is not None:
            app = _basic_auth(app, token)
        httpd: WSGIServer = make_server("127.0.0.1", 0, app, handler_class=_QuietHandler)
        thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{httpd.server_port}"
        finally:
            httpd.shutdown()
            thread.join(timeout=10)
            httpd.server_close()
    finally:
        for repo in opened.values():
            repo.close()


@contextmanager
def git_daemon(base_path: Path, *, timeout: float = 10.0) -> Iterator[str]:
    """``git daemon`` serving every repository under ``base_path`` (fetch and push) on
    127.0.0.1; yields ``git://127.0.0.1:PORT/``. Server hooks run as they would on a host."""
    git = shutil.which("git")
    if git is None:
        raise RuntimeError("git_daemon needs a git executable")
    base = base_path.resolve()
    port = free_port()
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(
            [git, "daemon", "--reuseaddr", f"--base-path={base}", "--export-all",
             "--enable=receive-pack", "--listen=127.0.0.1", f"--port={port}", str(base)],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=dict(os.environ),
        )  # fmt: skip
        try:
            _wait_for_port(port, proc, log, timeout)
            yield f"git://127.0.0.1:{port}/"
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _wait_for_port(port: int, proc: subprocess.Popen[bytes], log: Any, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            log.seek(0)
            raise RuntimeError(f"git daemon exited with {proc.returncode}: {log.read().decode(errors='replace')}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError(f"git daemon did not listen on 127.0.0.1:{port} within {timeout} s")
