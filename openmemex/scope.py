"""Scope identity (design §4, D71): which project the current folder belongs to.

The project key is ``project__<name>__<12 hex of sha256(seed)>``; the seed is the
normalized ``origin`` URL, else the lower-cased folder, so the same repository gets the
same key on every machine — and the same key the TypeScript open-memex computes.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from .gitinfo import RepoInfo, discover
from .model import PERSONAL_KEY


@dataclass(frozen=True)
class ProjectScope:
    key: str
    name: str
    root: Path  # the work tree root, or the folder when not in a repository
    repo: RepoInfo | None
    seed: str


def normalize_remote(url: str) -> str:
    """The TS rule (trim, drop ``.git``, scp and ``ssh://git@`` → https, lower-case), plus
    trailing slashes dropped first so ``…/repo/`` and ``…/repo`` are one project."""
    text = url.strip().rstrip("/")
    text = re.sub(r"\.git$", "", text, flags=re.IGNORECASE)
    text = re.sub(r"^git@([^:/]+):", r"https://\1/", text)
    text = re.sub(r"^ssh://git@", "https://", text)
    return text.lower()


def sanitize_name(name: str) -> str:
    cleaned = re.sub(r"[^a-zA-Z0-9._-]", "-", name)[:40]
    return cleaned or "project"


def seed_bytes(seed: str) -> bytes:
    """The seed as hashed: UTF-8, the bytes every existing key was made from. A folder name
    that is not UTF-8 (``caf\xe9`` in latin-1) reaches us with lone surrogates (Python's
    surrogateescape): those stand for the name's own bytes again, as ``os.fsencode`` gives
    them; any other lone surrogate (a hook's JSON ``cwd``, a Windows name) is kept as is."""
    try:
        return seed.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return seed.encode("utf-8", "surrogatepass")


def key_from_seed(seed: str, name: str) -> str:
    digest = hashlib.sha256(seed_bytes(seed)).hexdigest()[:12]
    return f"project__{sanitize_name(name)}__{digest}"


def scope_for_remote(url: str) -> tuple[str, str, str]:
    """(key, name, seed) for a remote URL."""
    norm = normalize_remote(url)
    match = re.search(r"/([^/]+)$", norm)
    name = match.group(1) if match else "workspace"
    return key_from_seed(norm, name), name, norm


def scope_for_folder(folder: Path) -> tuple[str, str, str]:
    resolved = str(folder.absolute())
    parts = [p for p in re.split(r"[\\/]+", resolved) if p and not re.fullmatch(r"[A-Za-z]:", p)]
    # a name that is not UTF-8 is shown and stored with U+FFFD (its key is the same: both
    # sanitize to "-"); the seed keeps the path's own bytes (``seed_bytes``)
    name = displayable(parts[-1]) if parts else "workspace"
    seed = resolved.lower()
    return key_from_seed(seed, name), name, seed


def displayable(name: str) -> str:
    """``name`` as it can be shown and stored as UTF-8: undecodable bytes become U+FFFD."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return seed_bytes(name).decode("utf-8", "replace")
    return name


def resolve_project(cwd: Path) -> ProjectScope:
    repo = discover(cwd)
    if repo is not None:
        url = repo.origin_url()
        if url:
            key, name, seed = scope_for_remote(url)
        else:
            key, name, seed = scope_for_folder(repo.workdir)
        return ProjectScope(key, name, repo.workdir, repo, seed)
    key, name, seed = scope_for_folder(cwd)
    return ProjectScope(key, name, cwd.absolute(), None, seed)


def is_project_key(key: str) -> bool:
    return re.fullmatch(r"project__[A-Za-z0-9._-]{1,40}__[0-9a-f]{12}", key) is not None


def is_scope_key(key: str) -> bool:
    return key == PERSONAL_KEY or is_project_key(key)
