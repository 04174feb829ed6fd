"""``open-memex export``: take memories to another machine or application (design §9).

Markdown is the truth, so a bundle is the memory files themselves plus a manifest
(``bundle.FORMAT``) with counts and a sha256 per file. Private memories stay behind
unless ``--all`` (D40) — and personal ones are private by default, so a full personal
migration is ``--scope both --all``. A bundle holding personal memories is never written
inside a git work tree unless asked (the inventory's guard). The archive is written to a
temporary name and renamed, so a failed export leaves no half bundle.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tarfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from . import __version__, freshness
from .bundle import FORMAT, MANIFEST, member_name, sha256
from .context import Context
from .errors import MemexError, UsageError
from .ids import format_time
from .index import placeholders, split_tags
from .inventory import check_out_path
from .memfile import MAX_FILE_BYTES
from .model import TYPES

EXPORT_SCOPES = ("project", "personal", "both")


@dataclass
class ExportResult:
    path: Path
    exported: int
    personal: int
    project: int
    skipped_private: int
    unreadable: list[str]
    include_private: bool

    def to_json(self) -> dict[str, object]:
        return {"path": str(self.path), "format": FORMAT, "exported": self.exported, "personal": self.personal,
                "project": self.project, "skipped_private": self.skipped_private,
                "unreadable": self.unreadable, "include_private": self.include_private}  # fmt: skip


def default_name(now: float) -> str:
    return f"open-memex-export-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime(now))}.tar.gz"


def export_bundle(
    ctx: Context, out: str | None = None, *, scope: str = "project", type: str | None = None, tag: str | None = None,
    include_private: bool = False, allow_personal: bool = False, progress: Callable[[int, int], None] | None = None,
) -> ExportResult:  # fmt: skip
    if scope not in EXPORT_SCOPES:
        raise UsageError(f"unknown scope {scope!r} — use one of: {', '.join(EXPORT_SCOPES)}")
    if type is not None and type not in TYPES:
        raise UsageError(f"unknown type {type!r} — use one of: {', '.join(TYPES)}")
    freshness.sync(ctx, scope)
    folders = ctx.folders(scope)
    dirs = [str(f.path) for f in folders]
    where, params = f"dir IN ({placeholders(dirs)})", list(dirs)
    if type is not None:
        where += " AND type = ?"
        params.append(type)
    rows = ctx.conn.execute(
        f"SELECT id, scope, scope_key, type, status, visibility, tags, file_path FROM memories WHERE {where} "
        "ORDER BY location = 'repo' DESC, id",
        params,
    ).fetchall()
    chosen: dict[str, tuple[str, str, str, str, str]] = {}  # id -> (scope, key, type, status, path); repo copy first
    skipped_private = 0
    for row in rows:
        if row["id"] in chosen or (tag is not None and tag not in split_tags(row["tags"])):
            continue
        if row["visibility"] == "private" and not include_private:
            skipped_private += 1
            continue
        chosen[row["id"]] = (row["scope"], row["scope_key"], row["type"], row["status"], row["file_path"])
    now = time.time()
    personal = sum(1 for v in chosen.values() if v[0] == "personal")
    path = check_out_path(out or default_name(now), ctx.cwd, personal > 0, allow_personal, "the bundle", "-o")
    header = {"include_private": include_private, "filters": {"scope": scope, "type": type, "tag": tag},
              "skipped_private": skipped_private}  # fmt: skip
    entries, unreadable = _write(path, chosen, header, progress, now)
    mine = sum(1 for e in entries if e["scope"] == "personal")
    return ExportResult(path, len(entries), mine, len(entries) - mine, skipped_private, unreadable, include_private)


def _write(path: Path, chosen: dict[str, tuple[str, str, str, str, str]], header: dict[str, object],
           progress: Callable[[int, int], None] | None, now: float) -> tuple[list[dict[str, object]], list[str]]:  # fmt: skip
    """Files first, the manifest last (it needs every checksum); one read per file, so the
    checksum is of exactly the bytes in the archive."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    entries: list[dict[str, object]] = []
    unreadable: list[str] = []
    try:
        with tarfile.open(tmp, "w:gz", compresslevel=6, format=tarfile.PAX_FORMAT) as tar:
            for number, (memory_id, (scope, key, type, status, file_path)) in enumerate(sorted(chosen.items()), start=1):
                if progress is not None:
                    progress(number, len(chosen))
                try:
                    data = _read(Path(file_path))
                except OSError:
                    unreadable.append(memory_id)  # removed or changed under us since the index saw it
                    continue
                name = member_name(scope, memory_id)
                _add(tar, name, data, now)
                entries.append({"id": memory_id, "scope": scope, "scope_key": key, "type": type, "status": status,
                                "file": name, "bytes": len(data), "sha256": sha256(data)})  # fmt: skip
            mine = sum(1 for e in entries if e["scope"] == "personal")
            manifest = {
                "format": FORMAT,
                "exported_at": format_time(now),
                "open_memex_version": __version__,
                **header,
                "counts": {"memories": len(entries), "personal": mine, "project": len(entries) - mine},
                "memories": entries,
            }
            _add(tar, MANIFEST, json.dumps(manifest, ensure_ascii=False, indent=2).encode("utf-8"), now)
        with open(tmp, "rb+") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise MemexError(f"cannot write {path} ({exc.strerror}) — nothing was exported; pick a writable place with -o") from None
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    return entries, unreadable


def _read(path: Path) -> bytes:
    with open(path, "rb") as handle:
        data = handle.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise OSError(f"{path} grew past the size limit")
    return data


def _add(tar: tarfile.TarFile, name: str, data: bytes, now: float) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = int(now)
    info.mode = 0o644
    info.uname = info.gname = ""
    tar.addfile(info, io.BytesIO(data))
