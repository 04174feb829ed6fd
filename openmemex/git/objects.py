"""One file's bytes out of git's objects: at a path of a commit's tree, or by an index
entry's id. The one place that tells "no file there" (a missing path, a folder, a
submodule, a path libgit2 refuses) from "this clone does not hold that content": a partial
clone (``--filter=blob:none``) leaves blobs out, which git fetches when a command reads
them and libgit2 cannot, so a reader names the way to have git fetch them rather than
taking the file for absent or stopping on a raw object id."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import MemexError

if TYPE_CHECKING:
    import pygit2


class UnreadableObject(MemexError):
    """The tree names a file whose content cannot be read here."""


class DamagedObject(UnreadableObject):
    def __init__(self, rel: str, where: str, error: object) -> None:
        super().__init__(f"{rel}{where}: git's copy of it cannot be read ({error}) — check the repository with "
                         "`git fsck`")  # fmt: skip


class MissingObject(UnreadableObject):
    """The tree names a file whose content is not in this clone; ``fix`` is how git fetches it."""

    def __init__(self, rel: str, where: str, fix: str) -> None:
        self.rel, self.where = rel, where
        super().__init__(f"{rel}{where}: this clone does not hold that version (a partial clone: git "
                         f"fetches what it lacks when it reads it, libgit2 cannot) — {fix}, or clone without "
                         "--filter; then run this again")  # fmt: skip


@dataclass(frozen=True)
class TreeFile:
    data: bytes
    mode: int  # git's file mode: a regular file, an executable one, or a symbolic link
    id: pygit2.Oid


def missing(rel: str, oid: object | None, where: str = "") -> MissingObject:
    fetch = f"run `git cat-file -p {oid} >/dev/null` so git fetches it" if oid is not None else \
        "have git read it (`git show` of that commit) so it fetches it"  # fmt: skip
    return MissingObject(rel, where, fetch)


def file_at(tree: pygit2.Tree | None, rel: str, where: str = "") -> TreeFile | None:
    """``rel`` in ``tree`` (a regular file or a symbolic link's target path); None when the
    tree holds no file there. Raises :class:`MissingObject` when it names one this clone
    lacks, :class:`DamagedObject` when git's copy of it is damaged; ``where`` ends their
    message's subject (" in commit 1a2b3c4d")."""
    import pygit2

    if tree is None:
        return None
    try:
        found = tree[rel]
    except KeyError as exc:
        if isinstance(exc, pygit2.GitError):  # NotFoundError: a folder on the way is not in the clone
            raise missing(rel, None, where) from None
        return None
    except (ValueError, pygit2.GitError):  # a path libgit2 refuses to look up
        return None
    if not isinstance(found, pygit2.Blob):  # a folder, or a submodule's commit
        return None
    try:
        data = found.data
    except KeyError:  # NotFoundError (both a GitError and a KeyError)
        raise missing(rel, found.id, where) from None
    except pygit2.GitError as exc:  # a damaged object (a loose object that will not inflate)
        raise DamagedObject(rel, where, exc) from None
    return TreeFile(bytes(data), int(found.filemode), found.id)


def blob_data(repo: pygit2.Repository, oid: pygit2.Oid, rel: str, where: str = "") -> bytes:
    """The content of blob ``oid`` (the file ``rel``, for the message). Raises
    :class:`MissingObject` when this clone lacks it, :class:`DamagedObject` when git's copy is damaged."""
    import pygit2

    try:
        return bytes(repo.odb.read(oid)[1])
    except KeyError:
        raise missing(rel, oid, where) from None
    except pygit2.GitError as exc:
        raise DamagedObject(rel, where, exc) from None
