"""Moving memories between scope keys (design §9: explicit, never automatic; D63)."""

from __future__ import annotations

from dataclasses import dataclass, field

from . import freshness, store
from .context import Context
from .errors import UsageError
from .ids import parse_time
from .memfile import MemoryFileError, read_memory
from .model import PERSONAL_KEY, default_visibility
from .scope import is_scope_key

STRATEGIES = ("skip", "newer", "overwrite")


@dataclass
class MigrateReport:
    source: str
    target: str
    moved: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # identical at the target
    conflicts: list[str] = field(default_factory=list)
    dry_run: bool = False


def resolve_key(ctx: Context, key: str) -> str:
    if key == "project":
        return ctx.project.key
    if key in ("personal", "user"):
        return PERSONAL_KEY
    if not is_scope_key(key):
        raise UsageError(f"{key!r} is not a scope key — see `open-memex scopes`")
    return key


def migrate(ctx: Context, source: str, target: str | None = None, dry_run: bool = False,
            on_conflict: str = "skip") -> MigrateReport:  # fmt: skip
    """Move every memory file from ``source``'s folder to ``target``'s, rewriting
    ``scope_key``, ``scope`` and ``visibility`` with it."""
    if on_conflict not in STRATEGIES:
        raise UsageError(f"unknown --on-conflict {on_conflict!r} — use one of: {', '.join(STRATEGIES)}")
    src = resolve_key(ctx, source)
    dst = resolve_key(ctx, target or "project")
    if src == dst:
        raise UsageError(f"--from and --to are the same scope ({src}); nothing to move")
    with ctx.lock(src, dst):
        return _migrate_locked(ctx, src, dst, dry_run, on_conflict)


def _migrate_locked(ctx: Context, src: str, dst: str, dry_run: bool, on_conflict: str) -> MigrateReport:
    src_folder, dst_folder = ctx.folder_for_key(src), ctx.folder_for_key(dst)
    files = store.memory_files(src_folder.path)
    if not files and not src_folder.path.is_dir():
        raise UsageError(f"no memories under {src} — see `open-memex scopes`")
    report = MigrateReport(src, dst, dry_run=dry_run)
    scope = "personal" if dst == PERSONAL_KEY else "project"
    name = ctx.project.name if dst == ctx.project.key else dst.split("__")[1] if "__" in dst else ""
    for path in files:
        try:
            memory = read_memory(path, src)
        except MemoryFileError as exc:
            ctx.warn(f"skipped {path}: {exc}")
            continue
        target_path = dst_folder.path / path.name
        if target_path.exists():
            try:
                existing = read_memory(target_path, dst)
            except MemoryFileError:
                existing = None
            same = existing is not None and all(
                getattr(existing, f) == getattr(memory, f)
                for f in ("body", "status", "review_state", "review_history", "superseded_by", "supersedes")
            )
            if same:
                report.skipped.append(memory.id)
                if not dry_run:
                    store.delete(path)
                continue
            # an unreadable file there (a typo by hand) is someone's text, never older than ours
            newer = existing is not None and (parse_time(memory.updated_at) or 0) > (parse_time(existing.updated_at) or 0)
            if on_conflict == "skip" or (on_conflict == "newer" and not newer):
                report.conflicts.append(memory.id)
                continue
        report.moved.append(memory.id)
        if dry_run:
            continue
        # a project memory marked private stays private (a personal one is private by default:
        # moved into a project it takes the project's default, as documented)
        kept_private = memory.scope == "project" and memory.visibility == "private"
        memory.scope_key = dst
        memory.scope = scope
        if not kept_private:
            memory.visibility = default_visibility(scope)
        if scope == "project":
            memory.project_name = name
        store.save(memory, dst_folder.path)
        store.delete(path)
    if not dry_run:
        freshness.sync_folders(ctx, [src_folder, dst_folder], kind="cli")
    return report
