"""Crafting export bundles by hand, honest or hostile (import-safety tests)."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
from pathlib import Path
from typing import Any

from openmemex.ids import new_ulid
from tests.helpers import personal_text

FORMAT = "open-memex-export/1"


def project_text(memory_id: str, body: str = "a project fact from another machine", **fields: str) -> str:
    values = {"status": "active", "review_state": "draft", "type": "decision", "role": "knowledge", **fields}
    return (
        f"---\nid: {memory_id}\nschema_version: 2\nscope: project\nscope_key: project__elsewhere__0123456789ab\n"
        f"visibility: internal\nproject_name: elsewhere\ntype: {values['type']}\nrole: {values['role']}\n"
        f"importance: normal\nstatus: {values['status']}\ntags: [imported]\nsource: user\n"
        f'created_at: "2026-09-01T10:00:00Z"\nupdated_at: "2026-09-01T10:00:00Z"\n'
        f"review_state: {values['review_state']}\n---\n\n{body}\n"
    )


def entry(scope: str, memory_id: str, data: bytes) -> dict[str, Any]:
    return {"id": memory_id, "scope": scope, "scope_key": "personal" if scope == "personal" else "project__x__0123456789ab",
            "file": f"memories/{scope}/{memory_id}.md", "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}  # fmt: skip


def manifest(entries: list[dict[str, Any]]) -> bytes:
    doc = {"format": FORMAT, "exported_at": "2026-10-01T00:00:00Z", "include_private": True,
           "counts": {"memories": len(entries)}, "memories": entries}  # fmt: skip
    return json.dumps(doc).encode()


def file_member(name: str, data: bytes) -> tuple[tarfile.TarInfo, bytes | None]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o644
    return info, data


def write(path: Path, members: list[tuple[tarfile.TarInfo, bytes | None]], gz: bool = True) -> Path:
    """A tar(.gz) of exactly these members, in this order (no checks of ours in the way)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz" if gz else "w", format=tarfile.PAX_FORMAT) as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    path.write_bytes(buffer.getvalue())
    return path


def honest(path: Path, files: list[tuple[str, str, str]] | None = None) -> tuple[Path, list[str]]:
    """A valid bundle of ``(scope, id, text)`` files (default: one personal, one project)."""
    if files is None:
        a, b = new_ulid(), new_ulid()
        files = [("personal", a, personal_text(a, "tea without sugar, always")), ("project", b, project_text(b))]
    members = [file_member(f"memories/{scope}/{memory_id}.md", text.encode()) for scope, memory_id, text in files]
    entries = [entry(scope, memory_id, text.encode()) for scope, memory_id, text in files]
    write(path, [*members, file_member("manifest.json", manifest(entries))])
    return path, [memory_id for _, memory_id, _ in files]


def _pax(pairs: list[tuple[str, str]]) -> bytes:
    """PAX extended-header records; a record's length counts its own digits."""
    out = b""
    for key, value in pairs:
        body = f" {key}={value}\n".encode()
        length = len(body) + 1
        while len(str(length)) + len(body) != length:
            length += 1
        out += str(length).encode() + body
    return out


def _block(data: bytes) -> bytes:
    return data + b"\0" * (-len(data) % tarfile.BLOCKSIZE)


def sparse_member(name: str, realsize: int, kind: str) -> bytes:
    """The raw tar bytes of one sparse member that unpacks to ``realsize`` bytes, one of
    them stored: ``tarfile`` makes up the hole without reading anything. ``kind`` is the
    GNU PAX sparse format (``0.0``, ``0.1``, ``1.0``) or ``gnu`` (the old ``S`` type)."""
    if kind == "gnu":
        info = tarfile.TarInfo(name)
        info.type, info.size, info.mode = tarfile.GNUTYPE_SPARSE, 0, 0o644
        return info.tobuf(format=tarfile.GNU_FORMAT)
    stored = b"A"
    if kind == "0.0":
        pairs = [("GNU.sparse.size", str(realsize)), ("GNU.sparse.numblocks", "1"),
                 ("GNU.sparse.offset", str(realsize - 1)), ("GNU.sparse.numbytes", "1")]  # fmt: skip
        body_name = name
    elif kind == "0.1":
        pairs = [("GNU.sparse.map", f"{realsize - 1},1"), ("GNU.sparse.name", name), ("GNU.sparse.realsize", str(realsize))]
        body_name = "GNUSparseFile.0/x"
    else:
        pairs = [("GNU.sparse.major", "1"), ("GNU.sparse.minor", "0"), ("GNU.sparse.name", name),
                 ("GNU.sparse.realsize", str(realsize))]  # fmt: skip
        body_name = "GNUSparseFile.0/x"
        stored = _block(f"1\n{realsize - 1}\n1\n".encode()) + stored
    records = _pax(pairs)
    header = tarfile.TarInfo("PaxHeaders/x")
    header.type, header.size = tarfile.XHDTYPE, len(records)
    body = tarfile.TarInfo(body_name)
    body.type, body.size, body.mode = tarfile.REGTYPE, len(stored), 0o644
    return (header.tobuf(format=tarfile.USTAR_FORMAT) + _block(records)
            + body.tobuf(format=tarfile.USTAR_FORMAT) + _block(stored))  # fmt: skip


def write_raw(path: Path, parts: list[bytes]) -> Path:
    """A tar.gz of these raw member bytes (from ``sparse_member`` or ``member_bytes``) and the end blocks."""
    path.write_bytes(gzip.compress(b"".join(parts) + b"\0" * (2 * tarfile.BLOCKSIZE)))
    return path


def member_bytes(name: str, data: bytes) -> bytes:
    """The raw tar bytes of one regular member."""
    info, _ = file_member(name, data)
    return info.tobuf(format=tarfile.PAX_FORMAT) + _block(data)
