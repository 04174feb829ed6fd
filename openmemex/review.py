"""The review ladder (design §5, D25, D29, D64): propose, promote, reject, resubmit.

``draft → proposed → approved → published``; ``rejected`` from proposed or approved, back to
``proposed`` only by resubmitting. Every transition appends to ``review_history``; nothing is
ever removed from it. Transitions on in-repo files are working-tree edits: committing and
pushing them stays the user's call.
"""

from __future__ import annotations

import getpass
import os
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import freshness, store
from .context import Context
from .errors import LifecycleError, MemexError, UsageError
from .gitinfo import config_value
from .ids import new_ulid, now_rfc3339
from .index import Folder
from .lookup import locate, locked
from .memfile import MemoryFileError, read_memory
from .model import Memory
from .terminal import UNSAFE
from .text import check_text

LADDER = ("draft", "proposed", "approved", "published")


def history_entry(frm: str | None, to: str, by: str | None, note: str | None = None,
                  at: str | None = None) -> dict[str, Any]:  # fmt: skip
    return {"at": at or now_rfc3339(), "by": by, "from": frm, "to": to, "note": note}


def default_reviewer(ctx: Context) -> str:
    """git's idea of who you are: ``GIT_AUTHOR_NAME``, ``user.name`` (repository, then
    global config), else the OS user."""
    if os.environ.get("GIT_AUTHOR_NAME"):
        return os.environ["GIT_AUTHOR_NAME"]
    name = config_value("user", "name", ctx.project.repo.git_dir if ctx.project.repo else None)
    if name:
        return name
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def reviewer(ctx: Context, by: str | None) -> str:
    """The name a review step records (``by``, else ``default_reviewer``), as it may go into
    a file the user is told to commit: one line — ``review_history`` is a line per step, and a
    line break in the name would forge a step of its own — and masked as review notes are
    (D14), so a token pasted as the name never reaches the team's repository."""
    from .write import clean

    if by is None:  # git's config or the environment: made one line rather than refused
        name = " ".join("".join(" " if _breaks_line(c) else c for c in default_reviewer(ctx)).split()) or "unknown"
    else:
        check_text(by, "the reviewer name (by)")
        if any(_breaks_line(c) for c in by):
            raise UsageError("the reviewer name (by) holds a line break or control character — give the name on one line")
        name = " ".join(by.split())
        if not name:
            raise UsageError("the reviewer name (by) is empty — give a name, or leave it out to use git's user.name")
    return clean(ctx, name).text


def _breaks_line(char: str) -> bool:
    """A control, line or paragraph separator, or a bidi control (``terminal.UNSAFE``)."""
    return unicodedata.category(char) in ("Cc", "Zl", "Zp") or UNSAFE.match(char) is not None


@dataclass
class Transition:
    memory: Memory
    old: str
    new: str
    in_repo: bool

    def to_json(self) -> dict[str, object]:
        return {"id": self.memory.id, "old": self.old, "new": self.new, "in_repo": self.in_repo,
                "path": str(self.memory.path), "review_history": self.memory.review_history}  # fmt: skip

    def lines(self) -> list[str]:
        """``promote ID: a → b`` and the history, for every surface that shows a transition."""
        out = [f"promote {self.memory.id}: {self.old} → {self.new}"]
        for entry in self.memory.review_history:
            # one line per step, whatever a hand-edited file holds: a line break in a name or
            # a note would show as a step of its own
            by, note = (" ".join(str(entry.get(k) or "").split()) for k in ("by", "note"))
            out.append(f"  {entry.get('at')}  {by}: {entry.get('from')} → {entry.get('to')}"
                       + (f"  ({note})" if note else ""))  # fmt: skip
        return out


def promote(ctx: Context, memory_id: str, *, reject: bool = False, resubmit: bool = False,
            note: str | None = None, by: str | None = None) -> Transition:  # fmt: skip
    """One step up the ladder, or a rejection (note required), or a resubmission."""
    if reject and resubmit:
        raise UsageError("--reject and --resubmit cannot be combined")
    if reject and not (note and note.strip()):
        raise UsageError("a rejection needs a reason: add --note \"why\"")
    who = reviewer(ctx, by)
    with locked(ctx, memory_id) as (memory, folder):
        return _promote_locked(ctx, memory, folder, reject=reject, resubmit=resubmit, note=note, who=who)


def _promote_locked(ctx: Context, memory: Memory, folder: Folder, *, reject: bool, resubmit: bool,
                    note: str | None, who: str) -> Transition:  # fmt: skip
    if memory.scope == "personal":
        raise LifecycleError(
            f"{memory.id} is personal and never reviewed — copy it to the project with `open-memex propose {memory.id} --to project`"
        )
    old = memory.review_state
    if reject:
        if old not in ("proposed", "approved"):
            raise LifecycleError(f"only proposed or approved memories can be rejected ({memory.id} is {old})")
        new = "rejected"
    elif resubmit:
        if old != "rejected":
            raise LifecycleError(f"only rejected memories can be resubmitted ({memory.id} is {old})")
        new = "proposed"
    elif old == "draft":
        raise LifecycleError(f"{memory.id} is still a draft — submit it for review first: open-memex submit {memory.id}")
    elif old == "rejected":
        raise LifecycleError(f"{memory.id} was rejected — revise it and use --resubmit, or keep it as a record")
    elif old == "published":
        raise LifecycleError(f"{memory.id} is published (terminal state); supersede it to change it")
    else:
        new = LADDER[LADDER.index(old) + 1]
    if note:
        from .write import clean

        note = clean(ctx, note).text  # review notes travel with the file: same redaction (D14)
    apply_transition(memory, new, who, note)
    store.save(memory, folder.path)
    freshness.record(ctx, [(memory, folder)])
    return Transition(memory, old, new, folder.location == "repo")


def apply_transition(memory: Memory, new: str, by: str, note: str | None = None) -> None:
    """Set the state and its provenance fields, and append the history entry (D29)."""
    old = memory.review_state
    stamp = now_rfc3339()
    memory.review_state = new
    memory.updated_at = stamp
    if new == "approved":
        memory.approved_by = by
    if new == "proposed" and not memory.proposed_by:
        memory.proposed_by = by
    if note is not None:
        memory.review_note = note
    memory.review_history = [*memory.review_history, history_entry(old, new, by, note, stamp)]


@dataclass
class Proposal:
    source: str
    copy: Memory
    already: bool = False  # an active project memory with this text existed: nothing written

    def to_json(self) -> dict[str, object]:
        return {"source": self.source, "id": self.copy.id, "review_state": self.copy.review_state,
                "path": str(self.copy.path), "already": self.already}  # fmt: skip

    def line(self) -> str:
        if self.already:
            return f"already proposed: {self.source} → {self.copy.id}  [{self.copy.review_state}] (not copied again)"
        return f"proposed {self.source} → {self.copy.id}  [{self.copy.review_state}] (outbox draft)"


def propose(ctx: Context, ids: list[str], to: str = "project", local_approve: bool = False,
            by: str | None = None) -> list[Proposal]:  # fmt: skip
    """Copy personal memories into the project outbox (new ids, ``derived_from``,
    ``visibility: internal``). All-or-nothing: every id is checked before anything is
    written (D25, D64)."""
    if to != "project":
        raise UsageError(f"--to {to!r} is not supported — memories can only be proposed --to project")
    if not ids:
        raise UsageError("name at least one memory id to propose")
    sources: list[Memory] = []
    for memory_id in ids:
        memory, _ = locate(ctx, memory_id)
        if memory.scope != "personal":
            raise LifecycleError(f"{memory.id} is already a project memory; use `open-memex submit {memory.id}`")
        if memory.status not in ("active", "deprecated"):
            raise LifecycleError(f"{memory.id} is {memory.status}; only current memories can be proposed")
        sources.append(memory)
    who = reviewer(ctx, by)
    folder = ctx.write_folder("project")
    with ctx.lock(folder.scope_key or ""):
        return _write_proposals(ctx, sources, folder, who, local_approve)


def _write_proposals(ctx: Context, sources: list[Memory], folder: Folder, who: str,
                     local_approve: bool) -> list[Proposal]:  # fmt: skip
    from .text import normalize_ws
    from .write import clean_all, exact_duplicate

    freshness.sync(ctx, "project")
    dirs = [str(f.path) for f in ctx.folders("project")]
    out: list[Proposal] = []
    written: list[tuple[Memory, Folder]] = []
    # the write path's barrier, as for any new text, and for every source before anything is
    # written (all-or-nothing): a personal file edited by hand may hold a secret or a
    # <private> span that must not reach the team's outbox
    cleaned = [clean_all(ctx, source.body, source.tags, source.aliases)[0] for source in sources]
    made: dict[str, Memory] = {}  # normalised cleaned text -> the copy this call wrote (not indexed yet)
    for source, (body, tags, aliases) in zip(sources, cleaned, strict=True):
        twin = made.get(normalize_ws(body))
        if twin is not None:  # the same id twice, or two texts that mask alike
            out.append(Proposal(source.id, twin, already=True))
            continue
        # proposed before (or the same text saved there): idempotent — the copy holds the
        # cleaned text, which the raw one matches too unless the rules masked something
        existing = exact_duplicate(ctx, body, dirs) or exact_duplicate(ctx, source.body, dirs)
        if existing is not None:
            try:
                out.append(Proposal(source.id, read_memory(Path(existing[1]), ctx.project.key), already=True))
                continue
            except MemoryFileError:
                pass
        stamp = now_rfc3339()
        copy = Memory(
            id=new_ulid(), scope="project", scope_key=ctx.project.key, body=body, type=source.type,
            visibility="internal", project_name=ctx.project.name, role=source.role,
            importance=source.importance, tags=tags, aliases=aliases,
            source=source.source, created_at=stamp, updated_at=stamp, derived_from=source.id,
            proposed_by=who,
        )  # fmt: skip
        copy.review_history = [history_entry(None, "draft", who, "proposed from a personal memory", stamp)]
        if local_approve:
            apply_transition(copy, "approved", who, "approved locally (--local-approve)")
        try:
            store.save(copy, folder.path)
        except MemexError:
            for done, _ in written:  # all-or-nothing: take back the copies already written
                if done.path is not None:
                    done.path.unlink(missing_ok=True)
            raise
        written.append((copy, folder))
        made[normalize_ws(body)] = copy
        out.append(Proposal(source.id, copy))
    freshness.record(ctx, written)
    return out
