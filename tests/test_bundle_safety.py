"""Import safety (D63): every crafted bundle is refused whole, with one clear line, and
nothing is written — not in the store, not outside it."""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest

from openmemex import bundle as bundle_module
from openmemex.ids import new_ulid
from tests.bundles import (
    entry,
    file_member,
    honest,
    manifest,
    member_bytes,
    project_text,
    sparse_member,
    write,
    write_raw,
)
from tests.helpers import personal_text

IGNORED = ("index.db", "locks", "logs")  # the index and lock files are not memories


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() or p.is_symlink()}


@pytest.fixture
def refused(cli: Any, tmp_path: Path, data_root: Path) -> Any:
    """Import a bundle and check: exit 1, one `bundle rejected` line naming ``reason``,
    and no file anywhere under the test's folder except the bundle and the index."""

    def check(path: Path, reason: str) -> None:
        cli("list")  # create the index first, so only the import's writes would differ
        before = _files(tmp_path)
        result = cli("import", str(path))
        assert result.rc == 1, (result.out, result.err)
        assert result.out == ""
        lines = result.err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("open-memex: error: bundle rejected: "), result.err
        assert reason in lines[0], lines[0]
        assert "nothing was imported" in lines[0] and "Traceback" not in result.err
        after = {f for f in _files(tmp_path) - before if not f.startswith(tuple(f"data/{i}" for i in IGNORED))}
        assert after == set(), after
        assert not list((data_root / "memories").rglob("*.md")) if (data_root / "memories").exists() else True

    return check


def _personal(memory_id: str | None = None) -> tuple[str, bytes]:
    memory_id = memory_id or new_ulid()
    return memory_id, personal_text(memory_id, "a memory riding along").encode()


def _with_manifest(members: list[tuple[tarfile.TarInfo, bytes | None]], entries: list[dict[str, Any]]) -> list[tuple[tarfile.TarInfo, bytes | None]]:
    return [*members, file_member("manifest.json", manifest(entries))]


@pytest.mark.parametrize("name", ["../outside.md", "memories/personal/../../../outside.md"])
def test_dotdot_path(refused: Any, tmp_path: Path, name: str) -> None:
    memory_id, data = _personal()
    path = write(tmp_path / "b.tar.gz", _with_manifest([file_member(name, data)], [entry("personal", memory_id, data)]))
    refused(path, "points outside the bundle")
    assert not (tmp_path / "outside.md").exists()


def test_absolute_path(refused: Any, tmp_path: Path) -> None:
    memory_id, data = _personal()
    target = tmp_path / "abs" / f"{memory_id}.md"
    path = write(tmp_path / "b.tar.gz", _with_manifest([file_member(str(target), data)], [entry("personal", memory_id, data)]))
    refused(path, "has an absolute path")
    assert not target.exists()


@pytest.mark.parametrize("linkname", ["/etc/passwd", "../../../outside.md", "manifest.json"])
def test_symlink(refused: Any, tmp_path: Path, linkname: str) -> None:
    memory_id, data = _personal()
    link = tarfile.TarInfo(f"memories/personal/{memory_id}.md")
    link.type, link.linkname = tarfile.SYMTYPE, linkname
    path = write(tmp_path / "b.tar.gz", _with_manifest([(link, None)], [entry("personal", memory_id, data)]))
    refused(path, "is a symlink")


def test_hardlink(refused: Any, tmp_path: Path) -> None:
    memory_id, data = _personal()
    link = tarfile.TarInfo(f"memories/personal/{memory_id}.md")
    link.type, link.linkname = tarfile.LNKTYPE, "manifest.json"  # inside the bundle: tarfile's filter would allow it
    path = write(tmp_path / "b.tar.gz", [file_member("manifest.json", manifest([entry("personal", memory_id, data)])), (link, None)])
    refused(path, "is a hardlink")


@pytest.mark.parametrize("kind", [tarfile.CHRTYPE, tarfile.BLKTYPE, tarfile.FIFOTYPE])
def test_device_or_special_file(refused: Any, tmp_path: Path, kind: bytes) -> None:
    memory_id, data = _personal()
    device = tarfile.TarInfo(f"memories/personal/{memory_id}.md")
    device.type, device.devmajor, device.devminor = kind, 1, 3  # /dev/null's numbers
    path = write(tmp_path / "b.tar.gz", _with_manifest([(device, None)], [entry("personal", memory_id, data)]))
    refused(path, "is a device or special file")


def test_manifest_lies_about_a_checksum(refused: Any, tmp_path: Path) -> None:
    memory_id, data = _personal()
    lying = entry("personal", memory_id, data)
    lying["sha256"] = entry("personal", memory_id, data.replace(b"riding", b"hiding"))["sha256"]
    path = write(tmp_path / "b.tar.gz", _with_manifest([file_member(f"memories/personal/{memory_id}.md", data)], [lying]))
    refused(path, "does not match its size and sha256 in the manifest")


def test_manifest_lies_about_a_size(refused: Any, tmp_path: Path) -> None:
    memory_id, data = _personal()
    lying = {**entry("personal", memory_id, data), "bytes": len(data) + 1}
    path = write(tmp_path / "b.tar.gz", _with_manifest([file_member(f"memories/personal/{memory_id}.md", data)], [lying]))
    refused(path, "does not match its size and sha256")


def test_manifest_lies_about_its_count(refused: Any, tmp_path: Path) -> None:
    memory_id, data = _personal()
    doc = manifest([entry("personal", memory_id, data)]).replace(b'"memories": 1', b'"memories": 7')
    path = write(tmp_path / "b.tar.gz", [file_member(f"memories/personal/{memory_id}.md", data), file_member("manifest.json", doc)])
    refused(path, "the manifest counts 7 memories but lists 1")


def test_manifest_lists_a_file_the_bundle_lacks(refused: Any, tmp_path: Path) -> None:
    memory_id, data = _personal()
    path = write(tmp_path / "b.tar.gz", _with_manifest([], [entry("personal", memory_id, data)]))
    refused(path, "which the bundle does not hold")


def test_file_not_in_the_manifest(refused: Any, tmp_path: Path) -> None:
    memory_id, data = _personal()
    path = write(tmp_path / "b.tar.gz", _with_manifest([file_member(f"memories/personal/{memory_id}.md", data)], []))
    refused(path, f"memories/personal/{memory_id}.md is not listed in the manifest")


def test_file_holds_another_id_than_its_name(refused: Any, tmp_path: Path) -> None:
    named, (_, data) = new_ulid(), _personal()
    path = write(tmp_path / "b.tar.gz", _with_manifest([file_member(f"memories/personal/{named}.md", data)],
                                                       [entry("personal", named, data)]))  # fmt: skip
    refused(path, "not what the manifest says")


def test_decompression_bomb_one_huge_member(refused: Any, tmp_path: Path) -> None:
    memory_id = new_ulid()
    data = b"\0" * (3 * 2**20)  # 3 MiB of zeros: a few KiB compressed
    path = write(tmp_path / "b.tar.gz", _with_manifest([file_member(f"memories/personal/{memory_id}.md", data)],
                                                       [entry("personal", memory_id, data)]))  # fmt: skip
    assert path.stat().st_size < 64 * 1024
    refused(path, "over the 2 MiB limit")


def test_decompression_bomb_many_members(refused: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Many members under the per-file limit that together unpack to far more than a
    bundle of this size can honestly hold (limits scaled down to keep the test fast)."""
    monkeypatch.setattr(bundle_module, "BOMB_FLOOR", 2**20)
    members, entries = [], []
    for _ in range(40):
        memory_id = new_ulid()
        data = b"x" * (128 * 1024)
        members.append(file_member(f"memories/personal/{memory_id}.md", data))
        entries.append(entry("personal", memory_id, data))
    path = write(tmp_path / "b.tar.gz", _with_manifest(members, entries))
    refused(path, "a decompression bomb")


@pytest.mark.parametrize("kind", ["0.0", "0.1", "1.0", "gnu"])
def test_sparse_member(refused: Any, tmp_path: Path, kind: str) -> None:
    """A sparse member's holes are made up by tarfile, never read from the archive: each
    passed as a regular file under the size limit while the budget on bytes read saw a
    few dozen, so a 14 KB bundle held 1 GB in memory. Refused whatever its format."""
    name = f"memories/personal/{new_ulid()}.md"
    parts = [sparse_member(name, 2 * 2**20, kind) for _ in range(1 if kind == "gnu" else 3)]
    path = write_raw(tmp_path / "b.tar.gz", [*parts, member_bytes("manifest.json", manifest([]))])
    refused(path, f'entry "{name}" is a sparse file; bundles hold regular files only')


def test_the_budget_counts_bytes_held_not_only_bytes_read(refused: Any, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """Behind the refusal of sparse members: what is extracted into memory is charged to
    the budget too, so a member that unpacks to more than it reads cannot pass it (the
    sparse check switched off, limits scaled down to keep the test fast)."""
    monkeypatch.setattr(tarfile.TarInfo, "issparse", lambda self: False)
    monkeypatch.setattr(bundle_module, "BOMB_FLOOR", 2**20)
    parts = [sparse_member(f"memories/personal/{new_ulid()}.md", 2**19, "0.1") for _ in range(3)]
    path = write_raw(tmp_path / "b.tar.gz", [*parts, member_bytes("manifest.json", manifest([]))])
    assert path.stat().st_size < 2**12
    refused(path, "it unpacks to more than 1 MiB (a decompression bomb?)")


def test_global_extended_header(refused: Any, tmp_path: Path) -> None:
    """tarfile copies a global pax header into every member after it, and kept them all:
    a few KB of members after one 2 MB global header held gigabytes, beyond any budget."""
    memory_id, data = _personal()
    path = tmp_path / "b.tar.gz"
    members = _with_manifest([file_member(f"memories/personal/{memory_id}.md", data)], [entry("personal", memory_id, data)])
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT, pax_headers={"comment": "from elsewhere"}) as tar:
        for info, content in members:
            tar.addfile(info, io.BytesIO(content or b""))
    refused(path, "it holds a global extended (pax) header; bundles hold plain entries only")


@pytest.mark.parametrize(("counts", "reason"), [
    ({"memories": 1, "personal": 5, "project": 7}, "the manifest counts 5 personal memories but lists 1"),
    ({"memories": 1, "personal": 1, "project": 1}, "the manifest counts 1 project memories but lists 0"),
    ({"memories": True, "personal": 1, "project": 0}, "the manifest counts true memories but lists 1"),
    ({"memories": 1, "personal": True}, "the manifest counts true personal memories but lists 1"),
    ({"memories": 1.0}, "the manifest counts 1.0 memories but lists 1"),
    ({"memories": "1"}, "the manifest counts a string memories but lists 1"),
    ({"memories": None}, "the manifest counts null memories but lists 1"),
    ([1], "manifest.json's counts is not a JSON object"),
])  # fmt: skip
def test_every_count_adds_up(refused: Any, tmp_path: Path, counts: object, reason: str) -> None:
    """Only counts.memories was compared, and with ``==`` (``true`` passed for 1): every
    count export writes is checked, personal and project by the memories' scope."""
    memory_id, data = _personal()
    doc = json.loads(manifest([entry("personal", memory_id, data)]))
    doc["counts"] = counts
    path = write(tmp_path / "b.tar.gz", [file_member(f"memories/personal/{memory_id}.md", data),
                                         file_member("manifest.json", json.dumps(doc).encode())])  # fmt: skip
    refused(path, reason)


def test_counts_that_add_up_are_imported(cli: Any, tmp_path: Path) -> None:
    path, _ = honest(tmp_path / "b.tar.gz")
    with tarfile.open(path) as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar if m.isfile()}  # type: ignore[union-attr]
    doc = json.loads(members.pop("manifest.json"))
    doc["counts"] = {"memories": 2, "personal": 1, "project": 1}
    write(path, [*(file_member(n, d) for n, d in members.items()), file_member("manifest.json", json.dumps(doc).encode())])
    result = cli("import", str(path))
    assert result.rc == 0 and result.out.startswith("imported 2"), result.out + result.err


def test_duplicate_entry(refused: Any, tmp_path: Path) -> None:
    memory_id, data = _personal()
    name = f"memories/personal/{memory_id}.md"
    path = write(tmp_path / "b.tar.gz", _with_manifest([file_member(name, data), file_member(name, data + b"\nmore\n")],
                                                       [entry("personal", memory_id, data)]))  # fmt: skip
    refused(path, f"it holds {name} twice")


def test_duplicate_id_across_scopes(refused: Any, tmp_path: Path) -> None:
    memory_id, data = _personal()
    other = project_text(memory_id).encode()
    members = [file_member(f"memories/personal/{memory_id}.md", data), file_member(f"memories/project/{memory_id}.md", other)]
    path = write(tmp_path / "b.tar.gz", _with_manifest(members, [entry("personal", memory_id, data), entry("project", memory_id, other)]))
    refused(path, f"the manifest lists {memory_id} twice")


def test_manifest_entry_pointing_outside(refused: Any, tmp_path: Path) -> None:
    """Scenario 78: a manifest entry naming ``../outside.md`` is rejected and never lands."""
    memory_id, data = _personal()
    lying = {**entry("personal", memory_id, data), "file": "../outside.md"}
    path = write(tmp_path / "b.tar.gz", _with_manifest([file_member(f"memories/personal/{memory_id}.md", data)], [lying]))
    refused(path, 'manifest entry "../outside.md" points outside the bundle')
    assert not (tmp_path / "outside.md").exists() and not (tmp_path.parent / "outside.md").exists()


def test_unexpected_entry_name(refused: Any, tmp_path: Path) -> None:
    memory_id, data = _personal()
    path = write(tmp_path / "b.tar.gz", _with_manifest([file_member("notes/hello.sh", b"echo hi\n")], [entry("personal", memory_id, data)]))
    refused(path, 'unexpected entry "notes/hello.sh"')


def test_no_manifest(refused: Any, tmp_path: Path) -> None:
    memory_id, data = _personal()
    path = write(tmp_path / "b.tar.gz", [file_member(f"memories/personal/{memory_id}.md", data)])
    refused(path, "no manifest.json")


def test_wrong_format(refused: Any, tmp_path: Path) -> None:
    doc = manifest([]).replace(b"open-memex-export/1", b"open-memex-export/9")
    path = write(tmp_path / "b.tar.gz", [file_member("manifest.json", doc)])
    refused(path, 'unsupported format "open-memex-export/9"')


def test_manifest_not_json(refused: Any, tmp_path: Path) -> None:
    path = write(tmp_path / "b.tar.gz", [file_member("manifest.json", b"[" * 100_000)])
    refused(path, "manifest.json is not valid JSON")


@pytest.mark.parametrize("kind", ["text", "gzip-text", "empty", "random", "truncated"])
def test_not_a_tar(refused: Any, tmp_path: Path, kind: str) -> None:
    path = tmp_path / "b.tar.gz"
    if kind == "text":
        path.write_text("just some notes\n" * 100)
    elif kind == "gzip-text":
        path.write_bytes(gzip.compress(b"#!/bin/sh\nrm -rf ~\n" * 50))
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "random":
        path.write_bytes(bytes(range(256)) * 40)
    else:
        honest(path)
        path.write_bytes(path.read_bytes()[:-40])
    reason = {"text": "not a .tar.gz archive", "random": "not a .tar.gz archive", "empty": "not a .tar.gz archive"}
    refused(path, reason.get(kind, "a damaged or truncated archive"))


def test_a_folder_or_a_missing_file_is_named(cli: Any, tmp_path: Path) -> None:
    gone = cli("import", str(tmp_path / "nope.tar.gz"))
    assert gone.rc == 1 and "bundle not found" in gone.err
    folder = cli("import", str(tmp_path))
    assert folder.rc == 1 and "is not a file" in folder.err
