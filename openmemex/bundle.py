"""The export bundle (design §9, D63): a ``.tar.gz`` of memory files plus ``manifest.json``
(``open-memex-export/1``), and the one reader allowed to open one.

A bundle comes from anywhere, so reading trusts nothing in it: nothing is extracted —
members are read into memory, never onto disk — and the whole bundle is refused, before
anything is written, when it holds a path that is absolute or climbs out (``../``), a
symlink or hardlink, a device or other special file, a sparse file, a global extended
header, an unexpected name, the same name twice, a member over the size limits, more
decompressed bytes than a bundle of its size can honestly hold (a decompression bomb:
counted both as read from the archive and as held in memory), or a manifest that
disagrees with the files (missing or extra files, wrong sizes, checksums or counts, wrong
ids). ``tarfile``'s ``data`` filter runs on every member as a second line behind these
checks.
"""

from __future__ import annotations

import gzip
import hashlib
import itertools
import json
import os
import re
import stat
import tarfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from .errors import MemexError
from .memfile import MAX_FILE_BYTES

FORMAT = "open-memex-export/1"
MANIFEST = "manifest.json"
SCOPES = ("personal", "project")
MEMBER = re.compile(r"^memories/(personal|project)/([0-7][0-9A-HJKMNP-TV-Z]{25})\.md$")
DIRS = {"memories", "memories/personal", "memories/project"}
MAX_MANIFEST_BYTES = 64 * 2**20
MAX_MEMBERS = 500_000
MAX_TOTAL_BYTES = 2 * 2**30  # decompressed, whatever the bundle's size
BOMB_FLOOR = 64 * 2**20  # decompressed bytes any bundle may use…
BOMB_RATIO = 100  # …beyond which it may use this many times its compressed size
NEXT_STEP = "nothing was imported; make a new bundle with `open-memex export` on the machine it came from"


class BundleError(MemexError):
    """The bundle is not one ``open-memex export`` wrote, or was altered; nothing imported."""


def rejected(reason: str) -> BundleError:
    return BundleError(f"bundle rejected: {reason} — {NEXT_STEP}")


def member_name(scope: str, memory_id: str) -> str:
    return f"memories/{scope}/{memory_id}.md"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass
class BundleFile:
    """One memory file of a checked bundle: its manifest entry agrees with its bytes."""

    name: str
    scope: str
    id: str
    data: bytes


@dataclass
class Bundle:
    manifest: dict[str, Any]
    files: list[BundleFile]


class _Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


class _Budget:
    """A read-only stream that refuses to deliver more than ``limit`` bytes in total, and
    the count of member bytes held in memory, under the same limit: what is read from the
    archive and what is extracted can differ (``tarfile`` makes up a sparse file's holes
    without reading them), and the bomb is whichever is larger."""

    def __init__(self, raw: _Readable, limit: int) -> None:
        self.raw = raw
        self.limit = limit
        self.used = 0
        self.held = 0

    def read(self, size: int = -1) -> bytes:
        data = self.raw.read(size)
        self.used += len(data)
        if self.used > self.limit:
            raise self.bomb()
        return data

    def hold(self, size: int) -> None:
        """Count ``size`` more bytes kept in memory; refused past the limit."""
        self.held += size
        if self.held > self.limit:
            raise self.bomb()

    def bomb(self) -> BundleError:
        return rejected(f"it unpacks to more than {self.limit // 2**20} MiB (a decompression bomb?)")


def read_bundle(path: Path, staging: Path) -> Bundle:
    """The checked contents of the bundle at ``path``; ``staging`` is only the imaginary
    destination ``tarfile``'s data filter judges member names against (nothing is
    written there)."""
    try:
        # O_NONBLOCK: opening a FIFO for reading would wait for a writer forever; a regular
        # file ignores the flag, and anything else is refused by the fstat below
        handle = os.fdopen(os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)), "rb")
    except FileNotFoundError:
        raise MemexError(f"bundle not found: {path} — give the .tar.gz that `open-memex export` wrote") from None
    except IsADirectoryError:
        raise MemexError(f"{path} is not a file — give the .tar.gz that `open-memex export` wrote") from None
    except OSError as exc:
        raise MemexError(f"cannot read {path} ({exc.strerror}) — check the file and its permissions") from None
    with handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise MemexError(f"{path} is not a file — give the .tar.gz that `open-memex export` wrote")
        magic = handle.read(2)
        handle.seek(0)
        raw: _Readable = gzip.GzipFile(fileobj=handle, mode="rb") if magic == b"\x1f\x8b" else handle
        budget = _Budget(raw, min(MAX_TOTAL_BYTES, max(BOMB_FLOOR, BOMB_RATIO * info.st_size)))
        try:
            members = _read_members(budget, staging)
        except BundleError:
            raise
        except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile, OSError, ValueError) as exc:
            kind = "a damaged or truncated archive" if magic == b"\x1f\x8b" else "not a .tar.gz archive"
            raise rejected(f"{path.name} is {kind} ({type(exc).__name__})") from None
    return _check_manifest(members)


def _read_members(stream: _Budget, staging: Path) -> dict[str, bytes]:
    members: dict[str, bytes] = {}
    with tarfile.open(fileobj=stream, mode="r|") as tar:  # type: ignore[call-overload]
        for count in itertools.count(1):
            member = tar.next()
            # tarfile keeps every header it read, each with its own copy of the global
            # extended header: memory no budget counts (a few KB of headers after one
            # large global header made gigabytes); none is needed once judged
            tar.members.clear()
            if tar.pax_headers:
                raise rejected("it holds a global extended (pax) header; bundles hold plain entries only")
            if member is None:
                break
            if count > MAX_MEMBERS:
                raise rejected(f"it holds more than {MAX_MEMBERS} entries")
            name = _check_member(member, staging)
            if name is None:
                continue  # one of the three folders
            if name in members:
                raise rejected(f"it holds {name} twice")
            limit = MAX_MANIFEST_BYTES if name == MANIFEST else MAX_FILE_BYTES
            if member.size > limit:
                raise rejected(f"{name} is {member.size} bytes, over the {limit // 2**20} MiB limit")
            extracted = tar.extractfile(member)
            if extracted is None:
                raise rejected(f"{name} is not a regular file")
            data = extracted.read(limit + 1)
            stream.hold(len(data))
            if len(data) != member.size:
                raise rejected(f"{name} is truncated")
            members[name] = data
    return members


def _check_member(member: tarfile.TarInfo, staging: Path) -> str | None:
    """The member's name when it is a file we expect, None for an expected folder; any
    other member refuses the bundle."""
    name = member.name
    shown = json.dumps(name, ensure_ascii=True)
    if name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", name):
        raise rejected(f"entry {shown} has an absolute path")
    if ".." in re.split(r"[\\/]", name):
        raise rejected(f"entry {shown} points outside the bundle")
    if member.issym() or member.islnk():
        kind = "symlink" if member.issym() else "hardlink"
        raise rejected(f"entry {shown} is a {kind} (to {json.dumps(member.linkname, ensure_ascii=True)}); bundles hold regular files only")
    if member.ischr() or member.isblk() or member.isfifo() or member.isdev():
        raise rejected(f"entry {shown} is a device or special file")
    if member.issparse() or member.type == tarfile.GNUTYPE_SPARSE:
        # its holes are made up by tarfile, never read from the archive: a few bytes that
        # unpack to megabytes each, past the budget on what is read
        raise rejected(f"entry {shown} is a sparse file; bundles hold regular files only")
    try:
        tarfile.data_filter(member, str(staging))
    except tarfile.FilterError as exc:
        raise rejected(f"entry {shown} is unsafe ({exc})") from None
    if member.isdir():
        if name.rstrip("/") in DIRS:
            return None
        raise rejected(f"unexpected folder {shown}")
    if member.type not in (tarfile.REGTYPE, tarfile.AREGTYPE):
        raise rejected(f"entry {shown} is not a regular file")
    if name != MANIFEST and not MEMBER.match(name):
        raise rejected(f"unexpected entry {shown} (bundles hold manifest.json and memories/<scope>/<id>.md)")
    return name


def _check_manifest(members: dict[str, bytes]) -> Bundle:
    data = members.pop(MANIFEST, None)
    if data is None:
        raise rejected("no manifest.json — not a bundle made by `open-memex export`")
    try:
        manifest = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise rejected("manifest.json is not valid JSON") from None
    if not isinstance(manifest, dict):
        raise rejected("manifest.json is not a JSON object")
    if manifest.get("format") != FORMAT:
        raise rejected(f"unsupported format {json.dumps(manifest.get('format'))} (this open-memex reads {FORMAT})")
    entries = manifest.get("memories")
    if not isinstance(entries, list):
        raise rejected("manifest.json has no list of memories")
    counts = manifest.get("counts", {})
    if not isinstance(counts, dict):
        raise rejected("manifest.json's counts is not a JSON object")
    _check_count(counts, "memories", "memories", len(entries))
    files: list[BundleFile] = []
    seen: set[str] = set()
    for entry in entries:
        files.append(_check_entry(entry, members, seen))
    for scope in SCOPES:
        _check_count(counts, scope, f"{scope} memories", sum(1 for f in files if f.scope == scope))
    extra = sorted(set(members) - seen)
    if extra:
        raise rejected(f"{extra[0]} is not listed in the manifest")
    return Bundle(manifest, files)


def _check_count(counts: dict[str, Any], key: str, what: str, listed: int) -> None:
    """Each count export writes must be the number of files it counts, as a JSON integer:
    ``true`` is not 1, nor is ``1.0`` (a count that does not add up means an altered or
    hand-made manifest). A count left out is not checked."""
    if key not in counts:
        return
    count = counts[key]
    if type(count) is not int or count != listed:
        shown = (json.dumps(count) if count is None or isinstance(count, (int, float))
                 else "a string" if isinstance(count, str) else "a list" if isinstance(count, list) else "an object")  # fmt: skip
        raise rejected(f"the manifest counts {shown} {what} but lists {listed}")


def _check_entry(entry: object, members: dict[str, bytes], seen: set[str]) -> BundleFile:
    if not isinstance(entry, dict):
        raise rejected("a manifest entry is not a JSON object")
    name, scope, memory_id = entry.get("file"), entry.get("scope"), entry.get("id")
    shown = json.dumps(name, ensure_ascii=True)
    if not isinstance(name, str) or not isinstance(scope, str) or not isinstance(memory_id, str):
        raise rejected(f"manifest entry {shown} lacks its file, scope or id")
    if name.startswith(("/", "\\")) or ".." in re.split(r"[\\/]", name):
        raise rejected(f"manifest entry {shown} points outside the bundle")
    if scope not in SCOPES or name != member_name(scope, memory_id):
        raise rejected(f"manifest entry {shown} does not name memories/<scope>/<id>.md for its scope and id")
    if name in seen or any(member_name(other, memory_id) in seen for other in SCOPES):
        raise rejected(f"the manifest lists {memory_id} twice")
    seen.add(name)
    data = members.get(name)
    if data is None:
        raise rejected(f"the manifest lists {name}, which the bundle does not hold")
    if entry.get("bytes") != len(data) or entry.get("sha256") != sha256(data):
        raise rejected(f"{name} does not match its size and sha256 in the manifest (damaged or altered)")
    return BundleFile(name, scope, memory_id, data)
