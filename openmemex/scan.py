"""``scan``: the secret scanner as a gate over files, folders or the staged index (issue 9).

The pre-commit hook ``open-memex-secrets``, a native ``.git/hooks/pre-commit`` running
``scan --staged`` and CI all come through here, so a leaked token is reported the same way
everywhere: ``path:line:col rule-id`` and the value masked the protocol's way. Memory files
(under the repository's ``memoryDir``) go through ``find_secrets_in_memory_file``, so the ids
and times open-memex generates are never findings; every other file through ``find_secrets``.
Paths matching the user's ``scanExclude`` globs are left out in every mode and listed as
excluded, so a gate says what it did not look at.

The hook must start in well under 0.1 s, so this module imports only ``os`` at load time; the
scanner is imported when there is a file to scan, pygit2 only for ``--staged``
(``git/staged.py``).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import UsageError

if TYPE_CHECKING:
    from .config import Config
    from .globs import Excluder
    from .redact import Finding

MAX_BYTES = 5 * 1024 * 1024
"""Larger files are not scanned: lockfiles and dumps of that size are not where memories or
hand-written credentials live, and they would dominate a commit's wait. Inside a folder that
is a note; a file named or staged for a gate fails the run (``ScanReport.unscanned``)."""
_BINARY_PROBE = 8000  # git's heuristic: a NUL byte in the first 8,000 bytes means binary
SKIP_DIRS = frozenset({".git"})
# UTF-32 before UTF-16: FF FE 00 00 starts with UTF-16's little-endian mark
_BOMS = ((b"\xff\xfe\x00\x00", "utf-32-le"), (b"\x00\x00\xfe\xff", "utf-32-be"),
         (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be"))  # fmt: skip
# A binary file's text as ``strings`` sees it: printable ASCII, tabs and line breaks kept in
# place, every other byte a blank — offsets, lines and columns stay those of the bytes.
_PRINTABLE = bytes(b if 32 <= b < 127 or b in (9, 10, 13) else 32 for b in range(256))


@dataclass(frozen=True)
class Leak:
    """One finding as every output format shows it; ``masked`` is the whole masked value
    (a PEM body spans lines; ``shown`` is its one-line form)."""

    path: str
    line: int
    col: int
    rule: str
    masked: str

    @property
    def shown(self) -> str:
        first = self.masked.split("\n", 1)[0].split("\r", 1)[0]  # CR LF, or a lone CR
        return first[:48] + "…" if len(first) > 48 or len(first) < len(self.masked) else first


@dataclass
class ScanReport:
    """What a scan found and what it looked at."""

    leaks: list[Leak] = field(default_factory=list)
    files: int = 0
    bytes: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, why): large, binary — inside a folder
    unscanned: list[tuple[str, str]] = field(default_factory=list)  # (path, why): named or staged, yet not scanned
    unreadable: list[tuple[str, str]] = field(default_factory=list)  # (path, OS reason)
    excluded: list[tuple[str, str]] = field(default_factory=list)  # (path, the scanExclude pattern)
    note: str | None = None  # why nothing was scanned, when that is worth saying

    @property
    def leaked_files(self) -> int:
        return len({leak.path for leak in self.leaks})

    def to_json(self) -> dict[str, object]:
        """``scan --format json`` (docs/cli.md)."""
        return {
            "findings": [{"path": k.path, "line": k.line, "col": k.col, "rule": k.rule, "masked": k.masked} for k in self.leaks],
            "files": self.files,
            "bytes": self.bytes,
            "skipped": [{"path": p, "reason": r} for p, r in self.skipped],
            "unscanned": [{"path": p, "reason": r} for p, r in self.unscanned],
            "unreadable": [{"path": p, "reason": r} for p, r in self.unreadable],
            "excluded": [{"path": p, "pattern": r} for p, r in self.excluded],
        }


class Scanner:
    """Feeds file contents to the scanner and collects ``Leak``s; the rules (and the user's
    ``redactPatterns``/``redactAllowlist``) are loaded on the first file."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.report = ScanReport()
        self._find: tuple[Callable[..., list[Finding]], Callable[..., list[Finding]]] | None = None
        self._patterns = config.redact_patterns  # built once: the allowlist matcher is cached by it
        self.excluder = _excluder(config)

    def excluded(self, shown: str, relative: str, folder: bool = False) -> bool:
        """Whether ``scanExclude`` leaves the path out (``relative``: to the repository's top);
        an excluded one is listed in the report, never passed over in silence."""
        pattern = self.excluder.match(relative, folder=folder) if self.excluder is not None else None
        if pattern is None:
            return False
        self.report.excluded.append((shown, pattern))
        return True

    def add(self, shown: str, data: bytes, memory: bool, gate: bool) -> None:
        """Scan one file. ``gate``: it was named or staged, so the run must not pass it unseen —
        a binary one is scanned for the text in it, an oversized one fails the run; inside a
        folder (vendored blobs, images) both are skipped."""
        if self.too_large(shown, len(data), gate):
            return
        text = _decode(data)
        if text is None:
            if not gate:
                self.report.skipped.append((shown, "binary"))
                return
            text, memory = data.translate(_PRINTABLE).decode("ascii"), False
        if self._find is None:
            from .redact import find_secrets, find_secrets_in_memory_file

            self._find = (find_secrets, find_secrets_in_memory_file)
        self.report.files += 1
        self.report.bytes += len(data)
        finder = self._find[1] if memory else self._find[0]
        for found in finder(text, self._patterns):
            self.report.leaks.append(Leak(shown, found.line, found.col, found.rule, found.masked(text)))

    def too_large(self, shown: str, size: int, gate: bool) -> bool:
        """Whether the file is too large to scan — its size from ``stat`` or the index entry,
        known before reading it (or the bytes read, for a file that grew); a gate's file fails
        the run, one inside a folder is a note."""
        if size <= MAX_BYTES:
            return False
        why = f"larger than {MAX_BYTES // 2**20} MB ({size / 1e6:.1f} MB)"
        (self.report.unscanned if gate else self.report.skipped).append((shown, why))
        return True


def _decode(data: bytes) -> str | None:
    """The file's text, or None for a binary file. UTF-8 (undecodable bytes replaced) unless a
    byte-order mark says UTF-16 or UTF-32 — PowerShell 5's ``>`` and Windows tools write
    UTF-16, whose NUL bytes would otherwise read as binary — or the NULs fall only on every
    other byte (ASCII text in UTF-16 without a mark)."""
    for bom, codec in _BOMS:
        if data.startswith(bom):
            return data[len(bom) :].decode(codec, errors="replace")
    probe = data[:_BINARY_PROBE]
    if b"\x00" not in probe:
        return data.decode("utf-8", errors="replace")
    even, odd = probe[0::2].count(0), probe[1::2].count(0)
    if odd * 3 >= len(probe) // 2 and even * 50 <= odd:
        return data.decode("utf-16-le", errors="replace")
    if even * 3 >= len(probe) // 2 and odd * 50 <= even:
        return data.decode("utf-16-be", errors="replace")
    return None


def _excluder(config: Config) -> Excluder | None:
    """The compiled ``scanExclude`` globs, or None when there are none (the usual case: the
    glob module is not even imported)."""
    patterns = config.scan_exclude
    if not patterns:
        return None
    from .globs import Excluder

    return Excluder(patterns)


def load_config() -> Config:
    """The user's config: ``memoryDir``, ``redactPatterns``, ``redactAllowlist`` and ``scanExclude`` apply."""
    from .config import load_config as load
    from .paths import config_path, data_root

    return load(config_path(data_root()))


def work_tree(cwd: Path) -> Path | None:
    """The work tree of the repository around ``cwd``, or None outside one."""
    from .gitinfo import discover

    info = discover(cwd)
    return None if info is None else info.workdir


def memory_dir(cwd: Path, config: Config) -> Path | None:
    """``<work tree>/<memoryDir>`` of the repository around ``cwd``, or None outside one."""
    top = work_tree(cwd)
    return None if top is None else top / config.memory_dir


def scan_paths(paths: list[str], config: Config, cwd: Path) -> ScanReport:
    """Scan files and folders (folders recurse; ``.git``, symlinks, binary and very large
    files in them are skipped). No paths: the current repository's memory dir. A named file
    is a gate's: it is scanned whatever it holds, or the run fails (``Scanner.add``)."""
    scanner = Scanner(config)
    top = work_tree(cwd)
    memdir = None if top is None else top / config.memory_dir
    if not paths:
        if memdir is None:
            raise UsageError(f"{cwd} is not inside a git repository — pass the files or folders to scan: open-memex scan PATH…")
        if not memdir.is_dir():
            shown = os.path.relpath(memdir, cwd)
            scanner.report.note = f"no memory folder {shown} here — nothing to scan (name files or folders: open-memex scan PATH…)"
            return scanner.report
        paths = [os.path.relpath(memdir, cwd)]
    prefix = os.path.join(os.path.abspath(memdir), "") if memdir is not None else None
    # globs are relative to the repository's top (as in .gitignore), else to where scan runs
    base = os.path.abspath(top if top is not None else cwd)

    seen: set[str] = set()

    def pruned(shown: str, full: str, folder: bool) -> bool:
        if scanner.excluder is None:
            return False
        if full in seen:
            return True  # named twice, or named and inside a folder named: listed once
        if not scanner.excluded(shown, os.path.relpath(full, base), folder):
            return False
        seen.add(full)
        return True

    for shown, full, size, named in _expand(paths, pruned):
        if full in seen:
            continue
        seen.add(full)
        if size is not None and scanner.too_large(shown, size, named):
            continue
        try:
            data = _read(full, size)
        except OSError as exc:
            scanner.report.unreadable.append((shown, exc.strerror or str(exc)))
            continue
        if size is None and len(data) > MAX_BYTES:  # a pipe: how much more it held is unknown
            scanner.report.unscanned.append((shown, f"larger than {MAX_BYTES // 2**20} MB"))
            continue
        scanner.add(shown, data, prefix is not None and full.startswith(prefix), named)
    return scanner.report


def _read(path: str, size: int | None) -> bytes:
    """The file's bytes with one read call when its size is known (twice as fast as a
    buffered ``open().read()`` over thousands of small files); a file that grew meanwhile
    is read to its end. A pipe or a device (``size`` None) is read to its end, but never
    past ``MAX_BYTES`` + 1 bytes: enough to tell that it is too large."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    try:
        data = os.read(fd, MAX_BYTES + 1 if size is None else size + 1)
        if size is not None and len(data) <= size:
            return data
        parts, total = [data], len(data)
        while (size is not None or total <= MAX_BYTES) and (chunk := os.read(fd, 1 << 20)):
            parts.append(chunk)
            total += len(chunk)
        return b"".join(parts)
    finally:
        os.close(fd)


def _expand(paths: list[str], pruned: Callable[[str, str, bool], bool]) -> Iterator[tuple[str, str, int | None, bool]]:
    """(shown path, absolute path, size, named) of every file named or inside a folder,
    less what ``pruned`` (``scanExclude``) leaves out — an excluded folder is not walked. A
    named pipe or device (``<(…)``, ``/dev/stdin``, a FIFO) is read like a file, its size
    unknown (None); a socket is refused — nothing named may pass unread."""
    for given in paths:
        try:
            info = os.stat(given)
        except FileNotFoundError:
            raise UsageError(f"no such file or folder: {given} — check the path") from None
        except OSError as exc:
            raise UsageError(f"cannot open {given}: {exc.strerror} — check the path") from None
        if pruned(given, os.path.abspath(given), stat.S_ISDIR(info.st_mode)):
            continue
        if stat.S_ISDIR(info.st_mode):
            for shown, full, size in _walk(given, pruned):
                yield shown, full, size, False
        elif stat.S_ISREG(info.st_mode):
            yield given, os.path.abspath(given), info.st_size, True
        elif stat.S_ISFIFO(info.st_mode) or stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode):
            yield given, os.path.abspath(given), None, True
        else:
            raise UsageError(f"cannot scan {given}: not a file, folder, pipe or device — name what to scan")


def _walk(folder: str, pruned: Callable[[str, str, bool], bool]) -> Iterator[tuple[str, str, int]]:
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        if entry.is_symlink():
            continue  # git stores a link, not the file it points to; and no loops
        shown = entry.path[2:] if entry.path.startswith("./") and folder == "." else entry.path
        try:
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in SKIP_DIRS and not pruned(shown, os.path.abspath(entry.path), True):
                    yield from _walk(shown, pruned)
            elif entry.is_file(follow_symlinks=False) and not pruned(shown, full := os.path.abspath(entry.path), False):
                yield shown, full, entry.stat(follow_symlinks=False).st_size
        except OSError:
            continue


def scan_staged(paths: list[str], config: Config, cwd: Path) -> ScanReport:
    """Scan what the next commit would add or change: blobs of the index named by
    ``GIT_INDEX_FILE`` (else the repository's own) that differ from HEAD. The index is only
    read — never written. ``paths`` (files or folders) narrow it down."""
    from .git.staged import staged_entries

    scanner = Scanner(config)
    staged = staged_entries(cwd, paths)
    memory_prefix = config.memory_dir.strip("/") + "/"
    for entry in staged.entries:
        if scanner.excluded(entry.path, entry.path) or scanner.too_large(entry.path, entry.size, True):
            continue
        scanner.add(entry.path, staged.read(entry), entry.path.startswith(memory_prefix), True)
    return scanner.report
