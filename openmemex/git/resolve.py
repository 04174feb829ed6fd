"""``resolve`` and the git merge driver: one merge function (``merge3``) for both.

``resolve`` reads index stages 1/2/3 of a conflicted memory file after a real ``git merge``
or ``git rebase``, writes the merged file and stages it with ``index.add`` (which clears the
stages, so ``git commit`` concludes the merge; never ``del conflicts[path]``, never
``state_cleanup()`` — notes/git-and-pygit2.md §2.5). A semantic conflict leaves the file
untouched and exits 3.

The merge driver never leaves a file with only our side: a side it cannot parse (a plain
Markdown note in the memory folder, invalid YAML) falls back to git's usual line-level
3-way merge, conflict markers included, and only then reports (issue 6, item 13); so does
any failure of the field-level merge itself, and a semantic conflict whose line merge
would be clean gets both whole sides between markers (that clean text is what was refused). Markers
carry the real side names: ``%X``/``%Y`` when git passes them (git ≥ 2.44), else HEAD's
branch and the merged branch from ``GITHEAD_<sha>`` (set by ``git merge``) or MERGE_MSG.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .. import freshness, store
from ..context import Context
from ..errors import ConflictError, MemexError, UsageError
from ..memfile import MAX_FILE_BYTES, MemoryFileError, parse_memory, serialize
from ..merge3 import TOO_DEEP, MergeOutcome, TextMerge, merge_memories
from ..model import Memory
from .objects import blob_data
from .repo import GitRepo, check_memory_folder, open_repo

if TYPE_CHECKING:
    import pygit2

DRIVER_NAME = "openmemex"
NO_FRONTMATTER = "no YAML frontmatter"  # memfile's reason for a file that is no memory file at all
ATTRIBUTE_LINE = f"*.md merge={DRIVER_NAME}"


def side_labels(repo: pygit2.Repository) -> tuple[str, str]:
    """In a rebase, stage 2 is the upstream and stage 3 the commit being replayed."""
    import pygit2

    state = repo.state()
    rebasing = state in (pygit2.enums.RepositoryState.REBASE, pygit2.enums.RepositoryState.REBASE_INTERACTIVE,
                         pygit2.enums.RepositoryState.REBASE_MERGE)  # fmt: skip
    if rebasing:
        return ("upstream (being rebased onto)", "your commit (being replayed)")
    return ("ours (HEAD)", "theirs (being merged)")


def conflicted_memory_files(gitrepo: GitRepo) -> list[str]:
    conflicts = gitrepo.repo.index.conflicts
    if conflicts is None:
        return []
    prefix = gitrepo.memory_rel + "/"
    paths: set[str] = set()
    for ancestor, ours, theirs in conflicts:
        for entry in (ancestor, ours, theirs):
            if entry is not None and entry.path.startswith(prefix) and entry.path.endswith(".md"):
                paths.add(entry.path)
    return sorted(paths)


def text_merger(repo: pygit2.Repository) -> TextMerge:
    """libgit2's line-level merge for bodies both sides changed; None when it conflicts."""
    import pygit2

    def merge(base: str, ours: str, theirs: str) -> str | None:
        entries = [
            pygit2.IndexEntry("body.md", repo.create_blob(text.encode("utf-8")), pygit2.enums.FileMode.BLOB)
            for text in (base, ours, theirs)
        ]
        result = repo.merge_file_from_index(entries[0], entries[1], entries[2])
        if isinstance(result, str) or not result.automergeable:
            return None
        return str(result.contents)

    return merge


@dataclass
class ResolveReport:
    path: str
    outcome: MergeOutcome
    labels: tuple[str, str]
    auto: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        return {"path": self.path, "resolved": self.outcome.clean, "auto_merged": self.auto,
                "conflicts": self.outcome.conflicts, "labels": list(self.labels)}  # fmt: skip

    def lines(self) -> list[str]:
        """The outcome for every surface (each adds who decides what next)."""
        if self.outcome.clean:
            merged = f"  auto-merged: {', '.join(self.auto)}" if self.auto else ""
            return [f"resolved {self.path}{merged}"]
        return [f"{self.path}: semantic conflict — left untouched ({self.labels[0]} vs {self.labels[1]}):",
                *(f"  {c}" for c in self.outcome.conflicts)]  # fmt: skip


def _stage_blobs(gitrepo: GitRepo, rel: str) -> tuple[bytes | None, bytes | None, bytes | None]:
    conflicts = gitrepo.repo.index.conflicts
    if conflicts is None:
        raise MemexError(f"{rel} is not conflicted — nothing to resolve (`open-memex resolve` lists conflicts)")
    try:
        ancestor, ours, theirs = conflicts[rel]
    except KeyError:
        raise MemexError(f"{rel} is not conflicted — nothing to resolve (`open-memex resolve` lists conflicts)") from None

    def data(entry: pygit2.IndexEntry | None) -> bytes | None:
        return None if entry is None else blob_data(gitrepo.repo, entry.id, rel, " (a side of the conflict)")

    return data(ancestor), data(ours), data(theirs)


def _target_path(gitrepo: GitRepo, target: str) -> str:
    candidate = Path(target)
    if candidate.suffix != ".md" and "/" not in target:
        return gitrepo.memory_path(target)
    absolute = candidate if candidate.is_absolute() else (Path.cwd() / candidate)
    try:
        return gitrepo.rel(absolute)
    except ValueError:
        raise UsageError(f"{target} is not inside the repository") from None


def resolve(ctx: Context, target: str) -> ResolveReport:
    gitrepo = open_repo(ctx)
    rel = _target_path(gitrepo, target)
    base_b, ours_b, theirs_b = _stage_blobs(gitrepo, rel)
    labels = side_labels(gitrepo.repo)
    if ours_b is None or theirs_b is None:
        side = labels[0] if ours_b is None else labels[1]
        raise ConflictError(f"{rel}: deleted on {side} and changed on the other side — decide with git (git rm or git add)")
    sides = (("the common ancestor", base_b), (labels[0], ours_b), (labels[1], theirs_b))
    try:  # a value nested past Python's recursion limit: the user's to merge, not a crash
        parsed, invalid = _parse_sides(sides)
        if invalid:
            why = _why_invalid(rel, invalid, sum(1 for _, data in sides if data is not None and data.strip()))
            raise ConflictError(f"{why} — resolve it by hand (edit the file, then `git add {rel}`)")
        base, ours, theirs = parsed
        assert ours is not None and theirs is not None
        outcome = merge_memories(base, ours, theirs, text_merger(gitrepo.repo), labels, (base_b, ours_b, theirs_b))
        text, unreadable = _readable(outcome.merged) if outcome.merged is not None else ("", None)
    except RecursionError:
        raise ConflictError(f"{rel}: {TOO_DEEP} (edit the file, then `git add {rel}`)") from None
    report = ResolveReport(rel, outcome, labels, outcome.auto)
    if not outcome.clean:
        return report
    assert outcome.merged is not None
    if unreadable is not None:
        raise ConflictError(f"{rel}: the merge is not a file a reader accepts: {unreadable} — resolve it by hand, "
                            f"then `git add {rel}`")  # fmt: skip
    path = gitrepo.workdir / rel
    store.write_atomic(path, text)
    import pygit2

    idx = gitrepo.repo.index
    idx.read(False)
    try:
        idx.add(rel)
        idx.write()
    except (pygit2.GitError, OSError) as exc:
        raise MemexError(f"merged {rel} but could not stage it ({exc}) — run `git add {rel}`") from None
    freshness.sync(ctx, "project", kind="request")
    return report


def _parse_sides(sides: tuple[tuple[str, bytes | None], ...]) -> tuple[list[Memory | None], list[str]]:
    """Parse each side; for each one that fails: "<side> is not a valid memory file: <why>".
    A side over the size every reader refuses is refused here too: merged in, it would be
    staged as a file `show` cannot read and `check` fails."""
    parsed: list[Memory | None] = []
    invalid: list[str] = []
    for name, data in sides:
        if data is not None and len(data) > MAX_FILE_BYTES:
            parsed.append(None)
            invalid.append(f"{name} is too large ({len(data) / 1e6:.1f} MB > {MAX_FILE_BYTES // 2**20} MB limit)")
            continue
        try:
            parsed.append(parse_memory(data) if data is not None and data.strip() else None)
        except MemoryFileError as exc:
            parsed.append(None)
            invalid.append(f"{name} is not a valid memory file: {exc}")
    return parsed, invalid


def _why_invalid(path: str, invalid: list[str], present: int) -> str:
    """One line: a file that is no memory file at all, or which sides are invalid and why."""
    if len(invalid) == present and all(NO_FRONTMATTER in reason for reason in invalid):
        return f"{path} is not a memory file (no YAML frontmatter)"
    return f"{path}: " + "; ".join(invalid)


def _given(label: str | None) -> str | None:
    """A label git substituted (git ≥ 2.44); older git passes ``%X`` literally."""
    if label is None or not label.strip() or re.fullmatch(r"%[A-Za-z]", label.strip()):
        return None
    return label.strip()


def _read(path: Path) -> str | None:
    try:
        return path.read_text("utf-8", errors="replace").strip()
    except OSError:
        return None


def driver_labels(repo: pygit2.Repository | None, ours: str | None = None, theirs: str | None = None) -> tuple[str, str]:
    """The names for the two sides of a merge-driver run, best first: what git passed
    (``%X``/``%Y``), what the repository says (HEAD's branch; in a rebase the branch being
    replayed; the branch ``git merge`` names in ``GITHEAD_<sha>`` or MERGE_MSG), else
    "ours"/"theirs"."""
    ours_label, theirs_label = _given(ours), _given(theirs)
    if ours_label and theirs_label:
        return ours_label, theirs_label
    derived_ours: str | None = None
    derived_theirs: str | None = None
    if repo is not None:
        git_dir = Path(repo.path)
        rebase_dir = next((git_dir / d for d in ("rebase-merge", "rebase-apply") if (git_dir / d).is_dir()), None)
        if rebase_dir is not None:  # stage 2 is the upstream, stage 3 the commit being replayed
            derived_ours = "upstream"
            head_name = _read(rebase_dir / "head-name")
            if head_name and head_name != "detached HEAD":
                derived_theirs = head_name.removeprefix("refs/heads/")
        else:
            try:
                if not repo.head_is_detached:
                    derived_ours = str(repo.head.shorthand)
            except Exception:  # unborn or unreadable HEAD: fall back below
                derived_ours = None
            heads = [value for key, value in os.environ.items() if key.startswith("GITHEAD_") and value.strip()]
            if len(heads) == 1 and "\n" not in heads[0]:
                derived_theirs = heads[0].strip()
            else:
                message = _read(git_dir / "MERGE_MSG") or ""
                found = re.match(r"Merge (?:remote-tracking )?branch '([^']+)'", message)
                derived_theirs = found.group(1) if found else None
    return ours_label or derived_ours or "ours", theirs_label or derived_theirs or "theirs"


def _role(role: str, label: str) -> str:
    return role if label == role else f"{role} ({label})"


def _driver_repo() -> pygit2.Repository | None:
    try:
        import pygit2

        return pygit2.Repository(str(Path.cwd()))
    except Exception:  # run outside a repository (by hand): merge in a scratch object store
        return None


def merge_text(repo: pygit2.Repository | None, base: bytes, ours: bytes, theirs: bytes,
               labels: tuple[str, str]) -> tuple[bool, bytes | None]:  # fmt: skip
    """git's line-level 3-way merge (libgit2): (clean, merged bytes with conflict markers
    labelled ``labels``); (False, None) when there is no text to write (e.g. binary sides).
    pygit2 hands the result back as UTF-8 text, so sides that are not UTF-8 (a teammate's
    Latin-1 edit) go through Latin-1, which maps every byte to one character and back: the
    lines, and so the merge, are git's own, and every byte of both sides is kept."""
    import pygit2

    utf8 = True
    try:
        for side in (base, ours, theirs):
            side.decode("utf-8")
    except UnicodeDecodeError:
        utf8 = False

    def wrap(data: bytes) -> bytes:
        return data if utf8 else data.decode("latin-1").encode("utf-8")

    def unwrap(text: str) -> bytes:
        return text.encode("utf-8") if utf8 else text.encode("latin-1")

    def run(target: pygit2.Repository) -> tuple[bool, bytes | None]:
        # libgit2 labels the markers with the entries' paths, so the paths carry the side names
        names = ("base", *(label if utf8 else label.encode("utf-8").decode("latin-1") for label in labels))
        entries = [
            pygit2.IndexEntry(name, target.create_blob(wrap(data)), pygit2.enums.FileMode.BLOB)
            for name, data in zip(names, (base, ours, theirs), strict=True)
        ]
        result = target.merge_file_from_index(entries[0], entries[1], entries[2])
        if isinstance(result, str):
            return False, unwrap(result)
        contents = result.contents
        return bool(result.automergeable), None if contents is None else unwrap(str(contents))

    try:
        if repo is not None:
            return run(repo)
        with tempfile.TemporaryDirectory(prefix="open-memex-merge-") as scratch:
            return run(pygit2.init_repository(scratch, bare=True))
    except (pygit2.GitError, OSError, UnicodeDecodeError, ValueError):
        return False, None


def merge_driver(base_path: str, ours_path: str, theirs_path: str, path: str,
                 ours_label: str | None = None, theirs_label: str | None = None) -> int:  # fmt: skip
    """``git merge-file``-style driver: writes the result to OURS; 0 clean, 1 conflict."""
    try:
        base_b = Path(base_path).read_bytes()
        ours_b = Path(ours_path).read_bytes()
        theirs_b = Path(theirs_path).read_bytes()
    except OSError as exc:
        sys.stderr.write(f"open-memex merge-driver: cannot read a side of {path}: {exc}\n")
        return 1
    repo = _driver_repo()
    labels = driver_labels(repo, ours_label, theirs_label)
    sides = (("the common ancestor", base_b), (_role("ours", labels[0]), ours_b), (_role("theirs", labels[1]), theirs_b))
    data = (base_b, ours_b, theirs_b)
    try:  # a crash here would leave OURS unmarked and git would stage it: theirs silently lost
        parsed, invalid = _parse_sides(sides)
        if invalid:
            return _text_fallback(repo, path, ours_path, data, labels, invalid)
        base, ours, theirs = parsed
        assert ours is not None and theirs is not None
        merger = text_merger(repo) if repo is not None else None  # without one, bodies need one side unchanged
        outcome = merge_memories(base, ours, theirs, merger, labels, data)
        text, unreadable = _readable(outcome.merged) if outcome.merged is not None else ("", None)
    except Exception as exc:
        sys.stderr.write(f"open-memex: {path}: cannot be merged field by field ({type(exc).__name__}: "
                         f"{str(exc)[:200]}) — both sides are left in the file; edit it, then `git add` it\n")  # fmt: skip
        return _leave_conflict(repo, ours_path, data, labels)
    if not outcome.clean:
        sys.stderr.write(f"open-memex: {path}: semantic conflict ({labels[0]} vs {labels[1]}) — "
                         + "; ".join(outcome.conflicts) + "\n")  # fmt: skip
        sys.stderr.write("  run `open-memex resolve` to see it again, then edit the file and `git add` it\n")
        return _leave_conflict(repo, ours_path, data, labels)
    if unreadable is not None:
        sys.stderr.write(f"open-memex: {path}: the merge is not a file a reader accepts: {unreadable} — edit the "
                         "file, then `git add` it\n")  # fmt: skip
        return _leave_conflict(repo, ours_path, data, labels)
    store.write_atomic(Path(ours_path), text)
    return 0


def _leave_conflict(repo: pygit2.Repository | None, ours_path: str, data: tuple[bytes, bytes, bytes],
                    labels: tuple[str, str]) -> int:  # fmt: skip
    """Write git's conflict markers to OURS (exit 1), so neither side is lost from view. When
    the line merge is clean (the sides changed different lines, e.g. an approval and a new
    text) that clean text is exactly what was refused, so both whole sides are written
    between markers instead: nothing a `git add` would take for a decided merge."""
    _, ours_b, theirs_b = data
    clean, marked = merge_text(repo, *data, labels)
    if clean or marked is None:
        newline = b"\r\n" if b"\r\n" in ours_b else b"\n"

        def side(text: bytes) -> bytes:
            return text if not text or text.endswith(b"\n") else text + newline

        left, right = (label.encode("utf-8", errors="replace") for label in labels)
        marked = (b"<<<<<<< " + left + newline + side(ours_b) + b"=======" + newline + side(theirs_b)
                  + b">>>>>>> " + right + newline)  # fmt: skip
    store.write_atomic(Path(ours_path), marked)
    return 1


def _readable(merged: Memory) -> tuple[str, str | None]:
    """The merged file's text, and why a reader would refuse it (the write path's own rule,
    ``store.render``): each side may fit while their merge does not (two bodies, unioned
    lists), and a line-merged body may hold conflict markers."""
    try:
        return store.render(merged), None
    except MemexError as exc:
        return serialize(merged), str(exc)


def _text_fallback(repo: pygit2.Repository | None, path: str, ours_path: str, data: tuple[bytes, bytes, bytes],
                   labels: tuple[str, str], invalid: list[str]) -> int:  # fmt: skip
    """A side is not a memory file: merge the text as git would, write it, then say so."""
    base_b, ours_b, theirs_b = data
    why = _why_invalid(path, invalid, sum(1 for side in data if side.strip()))
    clean, merged = merge_text(repo, base_b, ours_b, theirs_b, labels)
    if merged is None:
        sys.stderr.write(f"open-memex merge-driver: {why}; it cannot be merged as text either — "
                         "decide with git (git checkout --ours/--theirs, then git add)\n")  # fmt: skip
        return 1
    store.write_atomic(Path(ours_path), merged)
    if clean:
        sys.stderr.write(f"open-memex merge-driver: {why}; merged as plain text\n")
        return 0
    sys.stderr.write(f"open-memex merge-driver: {why}; merged as plain text with conflict markers "
                     f"({labels[0]} vs {labels[1]}) — edit the file, then `git add` it\n")  # fmt: skip
    return 1


@dataclass
class SetupReport:
    attributes: Path
    attributes_changed: bool
    driver_set: bool
    driver_kept: str | None  # a foreign driver we refused to replace


def driver_command() -> str:
    """What ``setup`` configures. ``%X``/``%Y`` (the side names) are substituted by git ≥ 2.44
    and passed literally by older git, which the driver then ignores; the older form without
    them (``merge-driver %O %A %B %P``) keeps working."""
    return f"{shlex.quote(sys.executable)} -m openmemex merge-driver %O %A %B %P --ours-label %X --theirs-label %Y"


def setup_merge_driver(ctx: Context) -> SetupReport:
    """Idempotently write ``<memoryDir>/.gitattributes`` (``*.md merge=openmemex``) and the
    per-clone ``merge.openmemex.driver``; a driver someone else configured is left alone."""
    gitrepo = open_repo(ctx)
    check_memory_folder(gitrepo, committing=False)  # nothing is committed: a linked folder is fine
    attributes = gitrepo.memory_dir / ".gitattributes"
    try:  # bytes: a file of the user's in another encoding keeps every byte of it
        data = attributes.read_bytes() if attributes.exists() else b""
    except OSError as exc:
        raise MemexError(f"cannot read {attributes} ({exc.strerror or exc}) — make it readable, then re-run setup") from None
    lines = data.splitlines()
    missing = [line for line in ("*.md text eol=lf", ATTRIBUTE_LINE) if line.encode() not in (x.strip() for x in lines)]
    changed = bool(missing)
    if changed:
        newline = b"\r\n" if b"\r\n" in data else b"\n"
        start = data if not data or data.endswith((b"\n", b"\r")) else data + newline
        attributes.parent.mkdir(parents=True, exist_ok=True)
        store.write_atomic(attributes, start + b"".join(line.encode() + newline for line in missing))
    config = gitrepo.repo.config
    key = f"merge.{DRIVER_NAME}.driver"
    wanted = driver_command()
    try:
        current: str | None = str(config[key])
    except KeyError:
        current = None
    kept = None
    driver_set = False
    if current is None:
        config[key] = wanted
        config[f"merge.{DRIVER_NAME}.name"] = "open-memex field-level memory merge"
        driver_set = True
    elif "openmemex" not in current and "git-memex" not in current and "open-memex" not in current:
        kept = str(current)
    elif current != wanted:
        config[key] = wanted
        driver_set = True
    return SetupReport(attributes, changed, driver_set, kept)
