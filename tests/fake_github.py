"""A small fake of GitHub's REST API on 127.0.0.1, for PyGithub reached through ``base_url``.

Serves, for one or more repositories (JSON shapes as GitHub sends them, trimmed to the
fields PyGithub reads):

* ``GET /repos/{o}/{r}`` (with ``fork`` and ``parent``: pr-status asks it when the remote has no PR)
* ``GET /repos/{o}/{r}/pulls?state=open|closed|all&head=owner:branch`` (newest first)
* ``GET /repos/{o}/{r}/pulls/{n}``
* ``GET /repos/{o}/{r}/pulls/{n}/reviews``
* ``GET /repos/{o}/{r}/pulls/{n}/files``

Every path is served both at the root (``base_url``, like api.github.com) and under
``/api/v3`` (``enterprise_url``, like GitHub Enterprise Server); ``url`` fields point back
at the fake with the prefix the request used, because PyGithub follows them. Lists are
paginated (``per_page``/``page``, ``Link: rel="next"``) with ``page_size`` as the default.
A request without ``Authorization: token <token>`` (or ``Bearer``) gets 401 "Bad
credentials". Every request lands in ``requests``. A pull's ``head_sha`` is its ``head.sha``
and the ``commit_id`` of each review that names none.

    with FakeGitHub(token="t") as fake:
        fake.add_pull("acme", "widgets", head="feature", reviews=[FakeReview("alice", "APPROVED")])
        ... Github(auth=Auth.Token("t"), base_url=fake.base_url, retry=None) ...
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

ENTERPRISE_PREFIX = "/api/v3"
_T0 = "2026-09-01T09:00:00Z"
_DOCS = "https://docs.github.com/rest"


@dataclass
class FakeReview:
    login: str
    state: str  # APPROVED | CHANGES_REQUESTED | COMMENTED | DISMISSED | PENDING
    submitted_at: str | None = None  # filled in order when omitted (except PENDING)
    body: str = ""
    commit_id: str | None = None  # the commit reviewed; None: the pull's head_sha


@dataclass
class FakeFile:
    filename: str
    status: str = "added"  # added | modified | removed | renamed


@dataclass
class FakePull:
    owner: str
    repo: str
    number: int
    head: str  # branch name on the head repository
    head_owner: str
    state: str = "open"
    merged_at: str | None = None
    merged_by: str | None = None
    created_at: str = _T0
    head_sha: str = "a" * 40  # the PR's head commit (``head.sha``)
    author: str = "dev"
    base: str = "main"
    reviews: list[FakeReview] = field(default_factory=list)
    files: list[FakeFile] = field(default_factory=list)


@dataclass
class LoggedRequest:
    method: str
    path: str  # without the query string, with any /api/v3 prefix
    query: dict[str, list[str]]
    authorization: str | None
    status: int = 0


class FakeGitHub:
    def __init__(self, token: str = "ghp_test_token", page_size: int = 30) -> None:
        self.token = token
        self.page_size = page_size
        self.pulls: list[FakePull] = []
        self.repos: set[tuple[str, str]] = set()
        self.parents: dict[tuple[str, str], tuple[str, str]] = {}
        self.requests: list[LoggedRequest] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- scenario ------------------------------------------------------------------------
    def add_repo(self, owner: str, repo: str, *, parent: tuple[str, str] | None = None) -> None:
        """A repository that exists (add_pull adds its own); unknown ones answer 404.
        ``parent``: the repository this one is a fork of (GitHub's ``fork``/``parent``)."""
        self.repos.add((owner.lower(), repo.lower()))
        if parent is not None:
            self.parents[(owner.lower(), repo.lower())] = parent
            self.add_repo(*parent)

    def add_pull(self, owner: str, repo: str, head: str, *, number: int | None = None,
                 head_owner: str | None = None, state: str = "open", merged_at: str | None = None,
                 merged_by: str | None = None, created_at: str = _T0, head_sha: str = "a" * 40,
                 reviews: list[FakeReview] | None = None,
                 files: list[FakeFile | str] | None = None) -> FakePull:  # fmt: skip
        if number is None:
            number = max((p.number for p in self.pulls), default=0) + 1
        if merged_at is not None:
            state = "closed"
        pull = FakePull(
            owner, repo, number, head, head_owner or owner, state, merged_at, merged_by, created_at,
            head_sha, reviews=list(reviews or []),
            files=[FakeFile(f) if isinstance(f, str) else f for f in files or []],
        )  # fmt: skip
        self.pulls.append(pull)
        self.add_repo(owner, repo)
        return pull

    def paths(self) -> list[str]:
        with self._lock:
            return [r.path for r in self.requests]

    # -- lifecycle -----------------------------------------------------------------------
    @property
    def port(self) -> int:
        assert self._server is not None, "use FakeGitHub as a context manager"
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def enterprise_url(self) -> str:
        return self.base_url + ENTERPRISE_PREFIX

    def __enter__(self) -> FakeGitHub:
        fake = self

        class Handler(_Handler):
            owner = fake

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-github", daemon=True
        )
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:  # fmt: skip
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    # -- payloads ------------------------------------------------------------------------
    def _pull_json(self, base: str, pull: FakePull, full: bool) -> dict[str, Any]:
        api = f"{base}/repos/{pull.owner}/{pull.repo}"
        url = f"{api}/pulls/{pull.number}"
        body: dict[str, Any] = {
            "id": 1000 + pull.number,
            "number": pull.number,
            "state": pull.state,
            "title": f"memories from {pull.head}",
            "url": url,
            "html_url": f"{base}/{pull.owner}/{pull.repo}/pull/{pull.number}",
            "issue_url": f"{api}/issues/{pull.number}",
            "commits_url": f"{url}/commits",
            "review_comments_url": f"{url}/comments",
            "user": _user(base, pull.author),
            "head": {"ref": pull.head, "label": f"{pull.head_owner}:{pull.head}", "sha": pull.head_sha,
                     "user": _user(base, pull.head_owner)},
            "base": {"ref": pull.base, "label": f"{pull.owner}:{pull.base}", "sha": "b" * 40,
                     "user": _user(base, pull.owner)},
            "created_at": pull.created_at,
            "updated_at": pull.merged_at or pull.created_at,
            "closed_at": pull.merged_at if pull.state == "closed" else None,
            "merged_at": pull.merged_at,
            "draft": False,
        }  # fmt: skip
        if full:  # only the single-PR payload carries these (PyGithub completes lazily)
            body.update(
                merged=pull.merged_at is not None,
                merged_by=_user(base, pull.merged_by) if pull.merged_by else None,
                mergeable=True,
                changed_files=len(pull.files),
            )
        return body

    def _reviews_json(self, base: str, pull: FakePull) -> list[dict[str, Any]]:
        out = []
        for i, review in enumerate(pull.reviews, start=1):
            submitted = review.submitted_at
            if submitted is None and review.state != "PENDING":
                submitted = f"2026-09-01T{10 + i // 60:02d}:{i % 60:02d}:00Z"
            out.append({
                "id": pull.number * 100 + i,
                "user": _user(base, review.login),
                "body": review.body,
                "state": review.state,
                "html_url": f"{base}/{pull.owner}/{pull.repo}/pull/{pull.number}#pullrequestreview-{i}",
                "pull_request_url": f"{base}/repos/{pull.owner}/{pull.repo}/pulls/{pull.number}",
                "submitted_at": submitted,
                "commit_id": pull.head_sha if review.commit_id is None else review.commit_id,
            })  # fmt: skip
        return out

    def _files_json(self, base: str, pull: FakePull) -> list[dict[str, Any]]:
        return [
            {"sha": "c" * 40, "filename": f.filename, "status": f.status, "additions": 1,
             "deletions": 0, "changes": 1,
             "contents_url": f"{base}/repos/{pull.owner}/{pull.repo}/contents/{f.filename}?ref={pull.head_sha}"}
            for f in pull.files
        ]  # fmt: skip

    def respond(self, base: str, path: str,
                query: dict[str, list[str]]) -> tuple[int, Any, dict[str, str]]:  # fmt: skip
        """(status, JSON body, extra headers) for one GET of ``path`` (prefix removed);
        ``base`` is where the request came in, used for every ``url`` in the payload."""
        parts = [p for p in path.split("/") if p]
        if len(parts) < 3 or parts[0] != "repos":
            return 404, _not_found(), {}
        owner, repo, rest = parts[1], parts[2], parts[3:]
        if (owner.lower(), repo.lower()) not in self.repos:
            return 404, _not_found(), {}
        pulls = [p for p in self.pulls if p.owner.lower() == owner.lower() and p.repo.lower() == repo.lower()]
        if not rest:
            body = _repo_json(base, owner, repo)
            parent = self.parents.get((owner.lower(), repo.lower()))
            body["fork"] = parent is not None
            if parent is not None:
                body["parent"] = _repo_json(base, *parent)
                root = parent
                while (up := self.parents.get((root[0].lower(), root[1].lower()))) is not None:
                    root = up
                body["source"] = _repo_json(base, *root)
            return 200, body, {}
        if rest == ["pulls"]:
            state = (query.get("state") or ["open"])[0]
            head: str | None = query["head"][0] if query.get("head") else None
            chosen = [
                p for p in pulls
                if (state == "all" or p.state == state)
                and (head is None or f"{p.head_owner}:{p.head}".lower() == head.lower()
                     or (":" not in head and p.head == head))
            ]  # fmt: skip
            chosen.sort(key=lambda p: (p.created_at, p.number), reverse=True)
            items = [self._pull_json(base, p, full=False) for p in chosen]
            return self._page(base, path, query, items)
        if len(rest) >= 2 and rest[0] == "pulls" and rest[1].isdigit():
            found = [p for p in pulls if p.number == int(rest[1])]
            if not found:
                return 404, _not_found(), {}
            pull = found[0]
            if len(rest) == 2:
                return 200, self._pull_json(base, pull, full=True), {}
            if rest[2:] == ["reviews"]:
                return self._page(base, path, query, self._reviews_json(base, pull))
            if rest[2:] == ["files"]:
                return self._page(base, path, query, self._files_json(base, pull))
        return 404, _not_found(), {}

    def _page(self, base: str, path: str, query: dict[str, list[str]],
              items: list[dict[str, Any]]) -> tuple[int, Any, dict[str, str]]:  # fmt: skip
        per_page = int((query.get("per_page") or [str(self.page_size)])[0])
        per_page = min(per_page, self.page_size) or self.page_size
        page = int((query.get("page") or ["1"])[0])
        chunk = items[(page - 1) * per_page : page * per_page]
        headers: dict[str, str] = {}
        if page * per_page < len(items):
            nxt = {k: v[0] for k, v in query.items()}
            nxt.update(page=str(page + 1), per_page=str(per_page))
            headers["Link"] = f'<{base}{path}?{urlencode(nxt)}>; rel="next"'
        return 200, chunk, headers


def _repo_json(base: str, owner: str, repo: str) -> dict[str, Any]:
    return {"id": 1, "name": repo, "full_name": f"{owner}/{repo}", "owner": _user(base, owner),
            "url": f"{base}/repos/{owner}/{repo}", "private": True, "fork": False}  # fmt: skip


def _user(base: str, login: str) -> dict[str, Any]:
    return {"login": login, "id": sum(map(ord, login)), "type": "User", "url": f"{base}/users/{login}"}


def _not_found() -> dict[str, str]:
    return {"message": "Not Found", "documentation_url": _DOCS}


class _Handler(BaseHTTPRequestHandler):
    owner: FakeGitHub  # set on the per-server subclass
    server_version = "FakeGitHub/1.0"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        fake = self.owner
        split = urlsplit(self.path)
        path, query = split.path, parse_qs(split.query)
        prefix = ENTERPRISE_PREFIX if path == ENTERPRISE_PREFIX or path.startswith(ENTERPRISE_PREFIX + "/") else ""
        inner = path[len(prefix):] or "/"
        base = f"http://127.0.0.1:{fake.port}{prefix}"
        auth = self.headers.get("Authorization")
        entry = LoggedRequest("GET", path, query, auth)
        with fake._lock:
            fake.requests.append(entry)
        status: int
        body: Any
        headers: dict[str, str]
        if auth not in (f"token {fake.token}", f"Bearer {fake.token}"):
            status, body, headers = 401, {"message": "Bad credentials", "documentation_url": _DOCS}, {}
        else:
            status, body, headers = fake.respond(base, inner, query)
        entry.status = status
        data = json.dumps(body).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:  # pr-status never writes; make an accidental write loud
        with self.owner._lock:
            self.owner.requests.append(LoggedRequest("POST", self.path, {}, self.headers.get("Authorization"), 405))
        data = b'{"message":"the fake GitHub is read-only"}'
        self.send_response(405)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_PATCH = do_PUT = do_DELETE = do_POST
