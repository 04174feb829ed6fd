"""The repository layer: opening the user's repository with pygit2, refusing the shapes
libgit2 cannot handle (notes/git-and-pygit2.md §0.5, §2.10) with the way out named."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from ..context import Context
from ..errors import MemexError
from ..gitinfo import config_value, read_config_value

if TYPE_CHECKING:
    import pygit2

GITATTRIBUTES = "*.md text eol=lf\n"


class UnsupportedRepository(MemexError):
    """A repository libgit2 cannot safely work on."""


@dataclass
class GitRepo:
    repo: pygit2.Repository
    workdir: Path
    memory_rel: str  # posix path of the memory dir inside the work tree

    @property
    def memory_dir(self) -> Path:
        return self.workdir / self.memory_rel

    def rel(self, path: Path) -> str:
        return path.absolute().relative_to(self.workdir).as_posix()

    def memory_path(self, memory_id: str) -> str:
        return f"{self.memory_rel}/{memory_id}.md"

    @property
    def branch(self) -> str | None:
        """The current branch's short name; None when HEAD is detached."""
        if self.repo.head_is_detached:
            return None
        if self.repo.head_is_unborn:
            target = self.repo.references["HEAD"].target
            return str(target).removeprefix("refs/heads/")
        return str(self.repo.head.shorthand)

    def signature(self, role: str = "AUTHOR") -> pygit2.Signature:
        """Who commits, as git decides it: ``GIT_<ROLE>_NAME/EMAIL``, then ``user.name`` /
        ``user.email`` (libgit2 ignores ``GIT_CONFIG_GLOBAL``, so that file is read too)."""
        import pygit2

        name = os.environ.get(f"GIT_{role}_NAME") or self._config("name")
        email = os.environ.get(f"GIT_{role}_EMAIL") or self._config("email")
        if not name or not email:
            raise MemexError(
                "git does not know who you are — run `git config --global user.name \"Your Name\"` "
                "and `git config --global user.email you@example.com`"
            )
        return pygit2.Signature(name, email)

    def _config(self, key: str) -> str | None:
        return self.config_value("user", key)

    def config_value(self, section: str, key: str) -> str | None:
        """A config value with git's own precedence (see ``gitinfo.config_files``)."""
        return config_value(section, key, Path(self.repo.path))


def _check_supported(common_dir: Path, git_dir: Path) -> None:
    config = common_dir / "config"
    if (read_config_value(config, "extensions", None, "objectformat") or "").lower() == "sha256":
        raise UnsupportedRepository(
            "this repository uses SHA-256 object ids, which libgit2 cannot open yet — "
            "use plain `git` for memory files here (`open-memex` read commands still work)"
        )
    try:
        config_text = config.read_text("utf-8", errors="replace")
    except OSError:
        config_text = ""
    promisor = re.search(r"^\s*promisor\s*=\s*true\s*$", config_text, re.I | re.M) is not None
    if promisor or read_config_value(config, "extensions", None, "partialclone"):
        raise UnsupportedRepository(
            "this is a partial clone (missing blobs are never fetched by libgit2) — "
            "run `git fetch --refetch` (or clone without --filter) first"
        )
    sparse = [read_config_value(path, "core", None, "sparsecheckout") for path in (config, git_dir / "config.worktree")]
    if any((value or "").lower() == "true" for value in sparse):
        raise UnsupportedRepository(
            "sparse checkout is enabled; libgit2 would write excluded files — "
            "run `git sparse-checkout disable` or use plain `git` for memory files"
        )
    split = (read_config_value(config, "core", None, "splitindex") or "").lower() == "true"
    if split or any(git_dir.glob("sharedindex.*")):
        raise UnsupportedRepository(
            "this repository uses a split index — run `git update-index --no-split-index` first"
        )
    if (read_config_value(config, "index", None, "sparse") or "").lower() == "true":
        raise UnsupportedRepository("this repository uses a sparse index — run `git sparse-checkout disable` first")


def open_repo(ctx: Context) -> GitRepo:
    """The repository of the current folder, or a one-line refusal naming what to do."""
    info = ctx.project.repo
    if info is None:
        raise MemexError(
            f"{ctx.cwd} is not inside a git repository — run this in your project's clone "
            "(project memories stay in the local outbox until then)"
        )
    _check_supported(info.common_dir, info.git_dir)
    import pygit2

    try:
        repo = pygit2.Repository(str(info.workdir))
    except pygit2.GitError as exc:
        raise UnsupportedRepository(f"cannot open the repository at {info.workdir}: {exc}") from None
    if repo.is_bare or repo.workdir is None:
        raise MemexError("this is a bare repository — run this in a clone with a work tree")
    workdir = Path(repo.workdir).absolute()
    return GitRepo(repo, workdir, ctx.config.memory_dir.strip("/"))


def check_memory_folder(gitrepo: GitRepo, committing: bool = True) -> None:
    """Every part of ``<memoryDir>`` that exists is a folder. A file in the way cannot hold
    memories. For a commit (``committing``) each part must also be a real folder: open-memex
    commits files at their own paths, so through a symbolic link its commit would replace
    the link the team committed with a folder (a change to a file it did not write); writing
    through one (``setup``'s .gitattributes) is harmless. Refused before anything is
    written, with the way out."""
    path = gitrepo.workdir
    for part in PurePosixPath(gitrepo.memory_rel).parts:
        path = path / part
        rel = gitrepo.rel(path)
        if committing and path.is_symlink():
            real = os.path.realpath(path)
            inside = Path(real).is_relative_to(gitrepo.workdir) and Path(real) != gitrepo.workdir
            where = (f"use the folder it points to instead (`open-memex config set memoryDir "
                     f"{Path(real).relative_to(gitrepo.workdir).as_posix()}`, for every repository)") if inside else \
                "make it a real folder in the repository"  # fmt: skip
            raise MemexError(f"{rel} is a symbolic link; open-memex commits memory files only into a real folder "
                             f"(a commit through the link would replace it) — {where}; nothing was written")  # fmt: skip
        if not path.exists():
            return
        if not path.is_dir():
            raise MemexError(f"{rel} is a file where open-memex keeps memory files — move it away, or choose "
                             "another folder with `open-memex config set memoryDir <folder>`; nothing was written")  # fmt: skip


def ensure_gitattributes(gitrepo: GitRepo) -> Path | None:
    """``<memoryDir>/.gitattributes`` keeps memory files LF on every platform; returns the
    path when it was created (so the caller commits it with its own files)."""
    check_memory_folder(gitrepo)
    path = gitrepo.memory_dir / ".gitattributes"
    if path.exists():
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(GITATTRIBUTES, encoding="utf-8")
    return path
