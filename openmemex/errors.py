"""One exception tree for every surface.

Surfaces map these to their own idiom: the CLI prints one line on stderr and exits with
``exit_code``; the MCP server turns them into ``isError`` results naming the next tool.
Anything that is not a ``MemexError`` is our bug and may show a traceback in the log.
"""

from __future__ import annotations


class MemexError(Exception):
    """A problem the user can fix; the message names the next step."""

    exit_code = 1


class UsageError(MemexError):
    """The command was called wrongly (bad value, conflicting options)."""

    exit_code = 2


class NotFoundError(MemexError):
    """No memory with the given id in the searched scopes."""


class LifecycleError(MemexError):
    """A status or chain transition that the lifecycle rules refuse (design §3.3, D64)."""


class StoreBusyError(MemexError):
    """SQLite stayed locked past busy_timeout; the file write already landed (D57)."""


class ConflictError(MemexError):
    """Resolve found a semantic conflict it must not decide (design principle 5)."""

    exit_code = 3


class IndexDamaged(MemexError):
    """The index file was damaged mid-command and has been moved aside to be rebuilt.
    Surfaces run the command once more; nothing had been written when this is raised."""


class IndexReplaced(IndexDamaged):
    """Another open-memex rebuilt the index (another version or other text rules) after
    this connection opened: nothing was written to it; run the command again."""


def repository_refused(exc: BaseException) -> str | None:
    """libgit2 refusing the repository's state (corrupt HEAD, locked refs, …): the user's
    to fix, so every surface answers with one line instead of a crash report. An object git
    cannot read (a damaged or missing tree or commit) names ``git fsck``, which says which."""
    if type(exc).__module__.split(".")[0] not in ("pygit2", "_pygit2"):
        return None
    text = str(exc)
    if any(sign in text.lower() for sign in _DAMAGED):
        return f"git: {text} — an object of the repository is damaged or missing: `git fsck` names it"
    return f"git: {text} — check the repository with `git status`"


# libgit2's words for an object it cannot read (partial clones are named earlier: git/objects.py)
_DAMAGED = ("failed to inflate", "corrupt", "failed to parse", "can not be successfully peeled", "no match for id",
            "object not found", "invalid object")  # fmt: skip
