"""``owner/repo`` and the REST API root of a GitHub remote, from its URL (pure, stdlib only).

Feed it pygit2's ``Remote.url`` (``url.<base>.insteadOf`` already applied). Handles the
scp form (``git@host:owner/repo.git``), ``ssh://`` (user, port), ``http(s)://`` (userinfo),
``git://`` and ``git+ssh://``, with or without a trailing ``.git`` or ``/``. Local paths,
``file://`` URLs and hosts known not to be GitHub give ``None``.

API roots: ``github.com`` (also ``ssh.github.com``, ``www.github.com``) →
``https://api.github.com``; GitHub Enterprise Cloud with data residency
(``<tenant>.ghe.com``) → ``https://api.<tenant>.ghe.com``; any other host is taken for
GitHub Enterprise Server → ``https://<host>/api/v3``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

GITHUB_HOST = "github.com"
GITHUB_API = "https://api.github.com"
_GITHUB_ALIASES = frozenset({"github.com", "www.github.com", "ssh.github.com"})
# Well-known hosts that are not GitHub: a clear "not a GitHub remote" beats a 404 later.
_NOT_GITHUB = frozenset(
    {"gitlab.com", "bitbucket.org", "codeberg.org", "gitee.com", "dev.azure.com",
     "ssh.dev.azure.com", "vs-ssh.visualstudio.com", "git.sr.ht", "sourceforge.net"}
)  # fmt: skip
_SCHEMES = frozenset({"https", "http", "ssh", "git", "git+ssh", "ssh+git"})
# scp-like syntax: [user@]host:path, where no '/' comes before the first ':' (git's rule).
_SCP = re.compile(r"^(?:[^@/:]+@)?(?P<host>[^@/:\[\]]+|\[[^\]]+\]):(?P<path>.*)$")
_NAME_PART = re.compile(r"^[A-Za-z0-9_.\-]+$")


@dataclass(frozen=True)
class RemoteRepo:
    owner: str
    name: str
    host: str  # lower-case host name, without port; ssh.github.com is reported as github.com
    api_url: str  # REST root without a trailing slash

    @property
    def slug(self) -> str:
        return f"{self.owner}/{self.name}"

    @property
    def is_github_com(self) -> bool:
        return self.host == GITHUB_HOST


def api_url_for(host: str, scheme: str = "https", port: int | None = None) -> str:
    """The REST root for a GitHub host (see the module docstring)."""
    host = host.lower()
    if host in _GITHUB_ALIASES:
        return GITHUB_API
    if host.endswith(".ghe.com"):
        return f"https://api.{host}"
    netloc = f"{host}:{port}" if port else host
    return f"{scheme}://{netloc}/api/v3"


def parse_remote(url: str) -> RemoteRepo | None:
    """``RemoteRepo`` for a GitHub(-like) remote URL, else ``None``."""
    text = url.strip()
    if not text:
        return None
    scheme = "https"
    port: int | None = None
    if "://" in text:
        try:
            parts = urlsplit(text)
            parsed_port = parts.port
        except ValueError:
            return None
        if parts.scheme.lower() not in _SCHEMES or not parts.hostname:
            return None
        host, path = parts.hostname, parts.path
        if parts.scheme.lower() in ("http", "https"):
            scheme, port = parts.scheme.lower(), parsed_port
    else:
        match = _SCP.match(text)
        if match is None:
            return None
        host, path = match["host"].strip("[]"), match["path"]
        if len(host) == 1:  # "C:/src/repo" is a Windows path, not host "C"
            return None
    host = host.lower().rstrip(".")
    if host in _NOT_GITHUB:
        return None
    segments = [s for s in path.strip().strip("/").split("/") if s]
    if len(segments) != 2:
        return None
    owner, name = segments[0], re.sub(r"\.git$", "", segments[1], flags=re.IGNORECASE)
    if not name or not _NAME_PART.match(owner) or not _NAME_PART.match(name) or owner.startswith("~"):
        return None
    if host in _GITHUB_ALIASES:
        host = GITHUB_HOST
    return RemoteRepo(owner, name, host, api_url_for(host, scheme, port))


def redact_url(url: str) -> str:
    """An http(s) URL without its ``user:password@`` part (it may hold a token), safe to show."""
    return re.sub(r"^(https?://)[^/@]*@", r"\1", url.strip(), flags=re.IGNORECASE)
