"""``sync-status`` (D26, D31): outbox drafts, in-repo review states, uncommitted memory
files and the last index sync — what an agent summarises before asking what to share."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .. import freshness, index
from ..context import Context
from ..ids import format_time
from ..model import REVIEW_STATES


@dataclass
class Item:
    id: str
    review_state: str
    status: str
    title: str

    def to_json(self) -> dict[str, str]:
        return {"id": self.id, "review_state": self.review_state, "status": self.status, "title": self.title}


@dataclass
class SyncStatus:
    project_name: str
    project_key: str
    last_sync: dict[str, Any] | None
    outbox: list[Item] = field(default_factory=list)
    repo_dir: str | None = None
    in_repo: list[Item] = field(default_factory=list)
    uncommitted: list[tuple[str, str]] = field(default_factory=list)
    branch: str | None = None
    repair: str | None = None  # makes the index match a submit commit whose refresh is owed

    def counts(self) -> dict[str, int]:
        out = {state: 0 for state in REVIEW_STATES}
        for item in self.in_repo:
            out[item.review_state] = out.get(item.review_state, 0) + 1
        return {k: v for k, v in out.items() if v}

    def next_steps(self, cap: int | None = None) -> list[str]:
        steps = []
        if self.outbox and self.repo_dir:
            ids = [i.id for i in self.outbox if i.review_state != "proposed"]
            shown = ids if cap is None else ids[:cap]
            more = f" (and {len(ids) - len(shown)} more: open-memex sync-status)" if len(shown) < len(ids) else ""
            steps.append("open-memex submit " + " ".join(shown) + more)
        states = {state for _, state in self.uncommitted}
        if "conflicted" in states:
            steps.append("open-memex resolve — then edit the conflicted memory files and `git add` them")
        if self.repair:
            steps.append(f"{self.repair} — a submit committed these files but could not update git's index")
        if states - {"conflicted", STALE}:
            steps.append("commit the memory files above (or `git restore` them)")
        return steps

    def to_json(self, cap: int | None = None) -> dict[str, Any]:
        """The document; ``cap`` (the agent-facing form) keeps that many entries per list and
        says how many there are (5,000 drafts made a 1 MB tool result)."""
        def first(items: list[Any]) -> list[Any]:
            return items if cap is None else items[:cap]

        doc: dict[str, Any] = {
            "project": {"name": self.project_name, "key": self.project_key, "branch": self.branch},
            "last_sync": self.last_sync,
            "outbox": [i.to_json() for i in first(self.outbox)],
            "repo": None if self.repo_dir is None else {
                "dir": self.repo_dir, "counts": self.counts(), "memories": [i.to_json() for i in first(self.in_repo)],
            },
            "uncommitted": [{"path": p, "status": s} for p, s in first(self.uncommitted)],
            "repair": self.repair,
            "next": self.next_steps(cap),
        }  # fmt: skip
        if cap is not None:
            doc["totals"] = {"outbox": len(self.outbox), "repo": len(self.in_repo), "uncommitted": len(self.uncommitted)}
        return doc


def sync_status(ctx: Context) -> SyncStatus:
    folders = ctx.folders("project")
    last = index.last_sync(ctx.conn, [f.path for f in folders])  # the one before this look
    freshness.sync(ctx, "project")
    status = SyncStatus(
        ctx.project.name,
        ctx.project.key,
        None if last is None else {
            "at": format_time(last["at"]), "kind": last["kind"], "added": last["added"],
            "updated": last["updated"], "removed": last["removed"], "scanned": last["scanned"],
        },
    )
    for folder in folders:
        rows = ctx.conn.execute(
            "SELECT id, review_state, status, content FROM memories WHERE dir = ? ORDER BY created_at, id",
            (str(folder.path),),
        ).fetchall()
        items = [Item(r[0], r[1], r[2], " ".join(r[3].split())[:80]) for r in rows]
        if folder.location == "outbox":
            status.outbox = [i for i in items if i.status in ("active", "deprecated")]
        else:
            status.repo_dir = str(folder.path)
            status.in_repo = items
    if ctx.repo_dir is not None:
        status.repo_dir = str(ctx.repo_dir)
        status.uncommitted, status.branch, status.repair = _uncommitted(ctx)
    return status


STALE = "index stale"


def _uncommitted(ctx: Context) -> tuple[list[tuple[str, str]], str | None, str | None]:
    import pygit2

    from .repo import open_repo
    from .submit import repair_command, stale_in_index

    gitrepo = open_repo(ctx)
    stale = set(stale_in_index(gitrepo) or [])
    prefix = gitrepo.memory_rel + "/"
    flags = pygit2.enums.FileStatus
    names = [(flags.WT_NEW, "untracked"), (flags.WT_MODIFIED, "modified"), (flags.WT_DELETED, "deleted"),
             (flags.INDEX_NEW, "staged new"), (flags.INDEX_MODIFIED, "staged"), (flags.INDEX_DELETED, "staged deletion"),
             (flags.CONFLICTED, "conflicted")]  # fmt: skip
    out: list[tuple[str, str]] = []
    for path, bits in sorted(gitrepo.repo.status().items()):
        if not path.startswith(prefix):
            continue
        label = STALE if path in stale else next((name for flag, name in names if bits & flag), None)
        if label:
            out.append((path, label))
    return out, gitrepo.branch, repair_command(gitrepo, sorted(stale)) if stale else None


def render(status: SyncStatus, cap: int | None = None) -> str:
    """People's text; ``cap`` limits each section (the agent-facing form caps at 20)."""
    lines = [f"project: {status.project_name} ({status.project_key})"]
    if status.last_sync:
        s = status.last_sync
        lines.append(f"last sync: {s['at']} ({s['kind']}) — +{s['added']} ~{s['updated']} -{s['removed']} (scanned {s['scanned']})")
    else:
        lines.append("last sync: never")
    lines.append(f"outbox (local drafts, not in the repo yet): {len(status.outbox)}")
    lines.extend(_items(status.outbox, cap))
    if status.repo_dir is None:
        lines.append("repo: (not in a git repository — project memories stay in the outbox)")
    else:
        counts = ", ".join(f"{n} {state}" for state, n in status.counts().items())
        lines.append(f"repo {status.repo_dir}: {len(status.in_repo)}" + (f" ({counts})" if counts else ""))
        lines.extend(_items(status.in_repo, cap))
        if status.uncommitted:
            lines.append(f"uncommitted memory files: {len(status.uncommitted)}")
            listed = status.uncommitted if cap is None else status.uncommitted[:cap]
            lines.extend(f"  {state:<16} {path}" for path, state in listed)
            if len(listed) < len(status.uncommitted):
                lines.append(f"  … and {len(status.uncommitted) - len(listed)} more (full list: open-memex sync-status)")
    for step in status.next_steps(cap):
        lines.append(f"next: {step}")
    return "\n".join(lines)


def _items(items: list[Item], cap: int | None) -> list[str]:
    shown = items if cap is None else items[:cap]
    lines = [f"  {i.id}  [{i.review_state}] {i.title}" for i in shown]
    if cap is not None and len(items) > cap:
        lines.append(f"  … and {len(items) - cap} more (full list: open-memex sync-status)")
    return lines


def outbox_count(ctx: Context, synced: bool = False) -> int:
    """Drafts waiting in this project's outbox (D53): what the MCP handshake and every
    mutating tool result report, so the agent is told instead of polling. Counts what
    ``sync-status`` lists as the outbox; ``synced``: the caller has just synced it."""
    folder = ctx.folder_for_key(ctx.project.key)
    if not synced:
        freshness.sync_folders(ctx, [folder])
    row = ctx.conn.execute(
        "SELECT COUNT(*) FROM memories WHERE dir = ? AND status IN ('active', 'deprecated')", (str(folder.path),)
    ).fetchone()
    return int(row[0])
