"""Everything a command needs to know about where it runs, resolved once.

A ``Context`` answers: which data root, which config, which project (and its outbox and
in-repo folder), and which folders a scope name covers. Every surface builds one and
hands it to the core functions.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from . import index, paths, store
from .config import Config, load_config
from .errors import IndexDamaged, IndexReplaced, MemexError, UsageError
from .index import Folder, Warn, warn_stderr
from .locks import WAIT_S, scope_lock
from .model import PERSONAL_KEY, RESERVED_SCOPES
from .scope import ProjectScope, resolve_project

if TYPE_CHECKING:
    from .folderwatch import FolderWatch

SEARCH_SCOPES = ("project", "personal", "both", "all")
WRITE_SCOPES = ("project", "personal")


@dataclass
class Context:
    root: Path
    config: Config
    project: ProjectScope
    cwd: Path
    warn: Warn = warn_stderr
    progress: Callable[[int, int], None] | None = None  # set by interactive surfaces
    watch: FolderWatch | None = None  # set by long-running surfaces (the MCP server)
    wrote: bool = False  # a memory file changed under this context: never run the command again
    lock_wait_s: float = WAIT_S  # how long a write waits for another process's lock (hooks: less)
    told: set[str] = field(default_factory=set, repr=False)  # warnings said once per command (a copy's id)
    _changes_at: int = field(default_factory=store.changes, repr=False)
    _conn: sqlite3.Connection | None = field(default=None, repr=False)
    _db_ino: int | None = field(default=None, repr=False)

    @classmethod
    def load(cls, cwd: Path | None = None, warn: Warn = warn_stderr) -> Context:
        root = paths.data_root()
        here = (cwd or Path.cwd()).absolute()
        return cls(root, load_config(paths.config_path(root), warn), resolve_project(here), here, warn)

    # -- folders -------------------------------------------------------------------------
    @property
    def personal_dir(self) -> Path:
        return paths.scope_dir(self.root, PERSONAL_KEY)

    @property
    def outbox_dir(self) -> Path:
        return paths.scope_dir(self.root, self.project.key)

    @property
    def repo_dir(self) -> Path | None:
        """``<work tree>/<memoryDir>`` when inside a git repository (read-only for the core).
        None, said once, when the work tree's path is not UTF-8 (``caf\xe9`` in latin-1): the
        index keeps paths as UTF-8 text, so that folder's memories cannot be indexed, while the
        personal ones and the project's outbox (in the data root) still work."""
        if self.project.repo is None:
            return None
        folder = self.project.root / self.config.memory_dir
        try:
            str(folder).encode("utf-8")
        except UnicodeEncodeError:
            if "repo path" not in self.told:
                self.told.add("repo path")
                shown = os.fsencode(self.project.root).decode("utf-8", "backslashreplace")
                self.warn(f"the repository's path {shown} is not UTF-8, so its shared "
                          f"memories ({self.config.memory_dir}) are left out — rename the folder, or work in it "
                          "through a symbolic link whose path is UTF-8")  # fmt: skip
            return None
        return folder

    def folder_for_key(self, key: str) -> Folder:
        location = "personal" if key == PERSONAL_KEY else "outbox"
        return Folder(paths.scope_dir(self.root, key), location, key)

    def folders(self, scope: str) -> list[Folder]:
        if scope not in SEARCH_SCOPES:
            raise UsageError(f"unknown scope {scope!r} — use one of: {', '.join(SEARCH_SCOPES)}")
        personal = Folder(self.personal_dir, "personal", PERSONAL_KEY)
        project = [Folder(self.outbox_dir, "outbox", self.project.key)]
        if self.repo_dir is not None:
            project.append(Folder(self.repo_dir, "repo", self.project.key))
        if scope == "personal":
            return [personal]
        if scope == "project":
            return project
        if scope == "both":
            return [personal, *project]
        every = [self.folder_for_key(key) for key in self.scope_keys_on_disk()]
        keys = {f.path for f in every}
        every.extend(f for f in [personal, *project] if f.path not in keys)
        return every

    def scope_keys_on_disk(self) -> list[str]:
        base = paths.memories_root(self.root)
        try:
            return sorted(e.name for e in os.scandir(base) if e.is_dir(follow_symlinks=False))
        except FileNotFoundError:
            return []

    def write_folder(self, scope: str) -> Folder:
        """Where a new memory of ``scope`` is written: personal dir or the project outbox (D26)."""
        if scope in RESERVED_SCOPES or scope == "org":
            raise UsageError(f"scope {scope!r} is reserved and cannot be written — use project or personal")
        if scope == "personal":
            return Folder(self.personal_dir, "personal", PERSONAL_KEY)
        if scope == "project":
            return Folder(self.outbox_dir, "outbox", self.project.key)
        raise UsageError(f"unknown scope {scope!r} — use project or personal")

    # -- locks ---------------------------------------------------------------------------
    def lock(self, *keys: str) -> AbstractContextManager[None]:
        """The cross-process write lock of these scope keys (see ``locks``)."""
        return scope_lock(self.root, keys, self.lock_wait_s)

    # -- index ---------------------------------------------------------------------------
    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            db_path = paths.index_path(self.root)
            self._conn = index.connect(db_path, warn=self.warn)
            try:  # before anything reads the file: damage found from here on is in *this* file
                self._db_ino = os.stat(db_path).st_ino
            except OSError:
                self._db_ino = None
            from . import expansions  # D80: rows are written with this data root's map

            expansions.attach_config(self._conn, self.config.values)
        return self._conn

    def recover_index(self) -> None:
        """The index file is damaged: have it moved aside (unless another process already
        did) and reconnect; the next reconcile rebuilds it from the files."""
        ours = self._db_ino
        self.close()
        index.recover(paths.index_path(self.root), ours, self.warn)
        if self.watch is not None:
            self.watch.forget_all()  # the new index knows nothing the watcher saw
        _ = self.conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> Context:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:  # fmt: skip
        if isinstance(exc, IndexReplaced):
            self.close()
            if self.wrote or store.changes() != self._changes_at:  # as below: never repeat a change
                raise MemexError(
                    "the change was saved, but another open-memex rebuilt the index meanwhile "
                    "— check the result with `open-memex list`"
                ) from exc
            return  # the surfaces run the command once more, on a fresh connection
        if exc is not None and index.is_corrupt(exc):
            self.recover_index()
            self.close()
            if self.wrote or store.changes() != self._changes_at:
                # the change landed before the damage showed: repeating the command would
                # repeat the change (promote twice, supersede twice), so it is only reported
                raise MemexError(
                    "the change was saved, but the index was damaged afterwards and has been rebuilt "
                    "— check the result with `open-memex list`"
                ) from exc
            raise IndexDamaged(
                "the index was damaged and has been moved aside; run the command again"
            ) from exc
        self.close()
