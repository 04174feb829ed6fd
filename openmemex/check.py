"""``check``: the protocol's rules for memory files entering a shared repository (issue 9).

One function, :func:`check_memory_pr`, judges a set of changed memory files against their
base versions and the repository's other memory files; the CLI (``open-memex check``), the
pre-commit hook ``open-memex-check`` and CI all call it, whoever gathered the files
(``git/memory_pr.py`` reads them from git trees or the work tree). The frontmatter is judged
by ``memfile.parse_memory``, the one validation every reader uses (the shipped JSON Schema);
secrets by ``find_secrets_in_memory_file``, as submit does. Against a base, the review rules
judge what the change adds (a memory arriving approved or published, a reviewed memory
edited in place), since a file's own history is whatever its author typed. Every problem
names its fix.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from .memfile import MemoryFileError, parse_memory
from .model import Memory

# The review ladder's single steps (design §5, D25, D29): submit, local approval (propose
# --local-approve records draft → approved), approval, merge, rejection, resubmission.
STEPS = frozenset({("draft", "proposed"), ("draft", "approved"), ("proposed", "approved"), ("approved", "published"),
                   ("proposed", "rejected"), ("approved", "rejected"), ("rejected", "proposed")})  # fmt: skip
FIRST_STATES = ("draft", "proposed")  # what a history may start from nothing with
REVIEWED = ("approved", "published")
CHECKS = ("schema", "id-filename", "personal-in-repo", "private-in-repo", "secret", "review-transition",
          "review-history", "review-claim", "reviewed-edit", "supersede-chain", "duplicate-id")  # fmt: skip
PROMOTE = "record each review step with `open-memex promote {id}` (after a merged PR: `open-memex pr-status --apply`)"
# What a review vouches for: the memory's text and how agents use it, and (once published)
# who proposed and approved it. A reviewed memory keeps them; a new text is a supersede.
REVIEWED_FIELDS = ("body", "type", "role", "importance", "tags", "aliases")
PUBLISHED_FIELDS = (*REVIEWED_FIELDS, "proposed_by", "approved_by")
UNORDERED = ("tags", "aliases")
ENTER = ("let it enter as `proposed` (or `approved`, as `pr-status --apply` records the PR's approval before the "
         "merge); after the merge, `open-memex pr-status --apply` on its branch records published")


@dataclass(frozen=True)
class Problem:
    """One broken rule in one file, with the fix a person applies."""

    path: str
    line: int
    check: str
    message: str
    fix: str

    def text(self) -> str:
        return f"{self.path}:{self.line}: {self.check}: {self.message} — {self.fix}"

    def to_json(self) -> dict[str, object]:
        return {"path": self.path, "line": self.line, "check": self.check, "message": self.message, "fix": self.fix}


@dataclass
class Entry:
    """One memory file of the head side: its text and the fields chains and ids are judged by."""

    path: str
    text: str
    id: str | None
    supersedes: str | None = None
    superseded_by: str | None = None
    status: str | None = None
    memory: Memory | None = None  # set for the files being checked (fully parsed)


@dataclass
class CheckInput:
    """What a memory PR is: the files it adds or changes (head text), their base versions,
    the memory files it deletes, and every memory file on the head side.

    ``kind`` says what the base is, and so what a file the base lacks means: ``"pr"`` (the
    merge base of a pull request: the file arrives with this PR, whose own review and merge
    are still to come), ``"commit"`` (HEAD, for the commit being made: the file arrives with
    this commit) or ``"files"`` (no base: every file is judged on its own)."""

    changed: list[tuple[str, bytes]]
    base: Callable[[str], bytes | None] = lambda path: None
    universe: list[tuple[str, bytes]] = field(default_factory=list)
    deleted: list[tuple[str, bytes]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)  # found while gathering (the folder's shape)
    kind: str = "files"


def check_memory_pr(pr: CheckInput, user_patterns: Sequence[str] = ()) -> list[Problem]:
    """Every problem of ``pr``, in file order: per file the schema, id/file name, personal or
    private memories, secrets and the review ladder; across files supersede chains and ids."""
    problems: list[Problem] = list(pr.problems)
    heads: dict[str, Entry] = {path: light_entry(path, data) for path, data in pr.universe}
    touched: set[str] = set()
    # a file moved to another name (`git mv` to fix its name) keeps its base version
    moved = {gone.id: data for path, data in pr.deleted if (gone := light_entry(path, data)).id}
    for path, data in pr.changed:
        base = pr.base(path)
        arrives = pr.kind if base is None and pr.kind != "files" else None  # new with this PR or commit
        entry, found = _check_file(path, data, base, user_patterns, arrives, moved)
        problems += found
        heads[path] = entry
        if entry.id:
            touched.add(entry.id)
    for path, data in pr.deleted:
        gone = light_entry(path, data)
        if gone.id:
            touched.add(gone.id)
    changed_paths = {path for path, _ in pr.changed}
    problems += chain_problems(heads, touched)
    problems += duplicate_problems(heads, changed_paths)
    order = {path: n for n, (path, _) in enumerate(pr.changed)}
    problems.sort(key=lambda p: (order.get(p.path, len(order)), p.path, p.line))
    return problems


def _check_file(path: str, data: bytes, base: bytes | None, user_patterns: Sequence[str], arrives: str | None,
                moved: dict[str, bytes]) -> tuple[Entry, list[Problem]]:  # fmt: skip
    from .memfile import MAX_FILE_BYTES
    from .redact import find_secrets_in_memory_file

    if len(data) > MAX_FILE_BYTES:
        too_big = f"file too large ({len(data) / 1e6:.1f} MB > {MAX_FILE_BYTES // 2**20} MB limit)"
        return light_entry(path, data[:4096]), [Problem(path, 1, "schema", too_big, "a memory is a short note: split it or link to a document")]
    text = data.decode("utf-8", errors="replace")
    leaks = find_secrets_in_memory_file(text, user_patterns)
    problems = [
        Problem(path, leak.line, "secret", f"possible secret ({leak.rule}) at column {leak.col}: {_one_line(leak.masked(text))}",
                "remove the value (supersede the memory with it left out), or keep a deliberate example with "
                "open-memex:allow on its line; if it was ever pushed, rotate it — git history keeps it")
        for leak in leaks
    ]  # fmt: skip
    try:
        memory = parse_memory(data)
    except MemoryFileError as exc:
        entry = light_entry(path, data)
        reason = str(exc)
        for leak in leaks:  # a schema error quotes the bad value: never a secret in a CI log
            reason = reason.replace(leak.value(text), leak.masked(text))
        problems.insert(0, Problem(path, _error_line(text, reason), "schema", reason,
                                   "fix the frontmatter (docs/protocol.md lists every field; the JSON Schema ships in openmemex/schema)"))  # fmt: skip
        return entry, problems
    entry = Entry(path, text, memory.id, memory.supersedes, memory.superseded_by, memory.status, memory)
    stem = PurePosixPath(path).stem
    if memory.id != stem:
        problems.append(Problem(path, line_of(text, "id"), "id-filename", f"id {memory.id} does not match the file name {PurePosixPath(path).name}",
                                f"name the file {memory.id}.md (`git mv`; an id never changes), or give a different memory its own new id"))  # fmt: skip
    if memory.scope == "personal":
        problems.append(Problem(path, line_of(text, "scope"), "personal-in-repo",
                                "a personal memory is inside the repository (personal memories never leave the machine)",
                                f"take it out with `git rm --cached {path}`; to share it, `open-memex propose {memory.id} --to project`"))  # fmt: skip
    elif memory.visibility == "private":
        problems.append(Problem(path, line_of(text, "visibility"), "private-in-repo",
                                "a memory with visibility: private is inside the repository",
                                f"set `visibility: internal` if the team may read it, else `git rm --cached {path}`"))  # fmt: skip
    if base is None and memory.id in moved:
        base, arrives = moved[memory.id], None
    problems += review_problems(path, text, memory, _parsed_or_none(base), arrives)
    return entry, problems


def _parsed_or_none(data: bytes | None) -> Memory | None:
    if data is None:
        return None
    try:
        return parse_memory(data)
    except MemoryFileError:
        return None  # the base was broken: nothing to compare the history against


def history_leads_to(history: Sequence[Any]) -> Any:
    """Where a review history leads: the ``to`` of its last step, a note (``from`` equal to
    ``to``: a remark, not a step) counting only in a history of notes alone; None when empty.
    The state must be there (``check``), and a merge must not make it otherwise (``merge3``):
    two branches' histories interleave by time (D29), and a remark one reviewer made on the
    older state does not undo the step the other took."""
    steps = [e for e in history if isinstance(e, dict)]
    moves = [e for e in steps if e.get("from") != e.get("to")]
    last = moves or steps
    return last[-1].get("to") if last else None


def _first_not_kept(kept: list[Any], now: list[Any]) -> int | None:
    """The number of the first base entry ``now`` lacks, in order (None: all kept). Entries
    may stand between them: a merge interleaves two branches' histories by time (D29), so a
    remark one branch made before the other's approval reached it sits before that approval."""
    at = 0
    for number, entry in enumerate(kept, start=1):
        while at < len(now) and now[at] != entry:
            at += 1
        if at == len(now):
            return number
        at += 1
    return None


def review_problems(path: str, text: str, memory: Memory, base: Memory | None, arrives: str | None = None) -> list[Problem]:
    """The review ladder: every recorded step is one legal step, a reviewed state is recorded,
    the state is where the history's last step led, and the base's entries are all kept, in order.

    Against a base, what the change adds is judged too (the file alone cannot tell a real
    review from a typed one): a memory that ``arrives`` with this ``"pr"`` or ``"commit"``
    cannot be published already (publishing is its PR's merge, D32). It may arrive approved:
    ``pr-status --apply`` records the PR's approval on its branch before the merge, and the
    PR's reviewers see that line in the diff they approve (no file can prove a GitHub review;
    what the session-start hook trusts is the default branch, ``inject._Vetting``). A
    published memory takes no further step, and a reviewed one keeps what was reviewed
    (:func:`reviewed_edit_problems`)."""
    problems: list[Problem] = []
    history = [e for e in memory.review_history if isinstance(e, dict)]
    state = memory.review_state
    at_state, at_history = line_of(text, "review_state"), line_of(text, "review_history")
    fix = PROMOTE.format(id=memory.id)
    for number, step in enumerate(history, start=1):
        frm, to = step.get("from"), step.get("to")
        legal = (to in FIRST_STATES) if frm is None else (frm == to or (frm, to) in STEPS)
        if not legal:
            problems.append(Problem(path, at_history, "review-transition",
                                    f"review_history entry {number} records {frm or 'nothing'} → {to}, which skips the review ladder "
                                    "(draft → proposed → approved → published)", fix))  # fmt: skip
    if state in REVIEWED and not any(step.get("to") == state != step.get("from") for step in history):
        problems.append(Problem(path, at_state, "review-transition",
                                f"review_state is {state} but review_history records no step to {state} (a jump without review)", fix))  # fmt: skip
    elif (led := history_leads_to(history)) is not None and led != state:
        problems.append(Problem(path, at_state, "review-transition",
                                f"review_state is {state} but the last review_history step records → {led}", fix))  # fmt: skip
    if arrives is not None and state == "published":
        problems.append(Problem(path, at_state, "review-claim",
                                f"{memory.id} is new in this {'pull request' if arrives == 'pr' else 'commit'} but already "
                                "published: publishing is the merge of the PR that brings it (D32)", ENTER))  # fmt: skip
    if base is None:
        return problems
    kept = [_stated(e) for e in base.review_history if isinstance(e, dict)]
    now = [_stated(e) for e in history]
    gone = _first_not_kept(kept, now)
    if gone is not None:
        problems.append(Problem(path, at_history, "review-history",
                                f"review_history was rewritten: entry {gone} of the base version is missing, changed or out of order (the history only grows)",
                                "restore the base version's entries (`git show BASE:PATH`) in their order and only add new ones"))  # fmt: skip
    elif base.review_state != state and len(history) == len(kept) and not any(p.line == at_state for p in problems):
        problems.append(Problem(path, at_state, "review-transition",
                                f"review_state changed from {base.review_state} to {state} without a review_history entry", fix))  # fmt: skip
    elif base.review_state == "published" and len(history) > len(kept) and not problems:
        problems.append(Problem(path, at_history, "review-transition",
                                f"review_history gains entry {len(kept) + 1} after published, and published is terminal",
                                f"take the new entries out; to change the memory, `open-memex supersede {memory.id} \"…\"`"))  # fmt: skip
    return problems + reviewed_edit_problems(path, text, memory, base)


def reviewed_edit_problems(path: str, text: str, memory: Memory, base: Memory) -> list[Problem]:
    """A published memory's text, type, role, tags (and who proposed and approved it) never
    change in place, nor do an approved memory's while it stays approved: the review vouched
    for the base's version, and the file would carry the new one under that review. A new
    text is a supersede (the replacement is reviewed); an approved memory may also go back
    to review (reject, edit, resubmit)."""
    changed = reviewed_changes(base, memory)
    if not changed:
        return []
    where = _body_line(text) if changed[0] == "body" else line_of(text, changed[0])
    if base.review_state == "published":
        what, way = "published is terminal", f"supersede it instead: `open-memex supersede {memory.id} \"…\"` (the replacement is reviewed)"
    else:
        what = f"it is still {memory.review_state}, and its approval covered the old version"
        way = (f"or send it back to review: `open-memex promote {memory.id} --reject --note …`, edit, "
               f"then `open-memex promote {memory.id} --resubmit`")  # fmt: skip
    return [Problem(path, where, "reviewed-edit",
                    f"{', '.join(changed)} of {base.review_state} memory {memory.id} changed in place: {what}",
                    f"restore the base version (`git show BASE:{path}`); {way}")]  # fmt: skip


def reviewed_changes(base: Memory, memory: Memory) -> list[str]:
    """The fields ``base``'s review vouched for that ``memory`` carries changed under it: all
    of PUBLISHED_FIELDS once ``base`` is published, REVIEWED_FIELDS while an approved ``base``
    stays approved or becomes published. The one definition of what an approval covers, for
    ``check`` and for the merge (``merge3``), so neither lets a text ride on another's review."""
    names: tuple[str, ...]
    if base.review_state == "published":
        names = PUBLISHED_FIELDS
    elif base.review_state == "approved" and memory.review_state in REVIEWED:
        names = REVIEWED_FIELDS
    else:
        return []
    return [name for name in names if _compared(base, name) != _compared(memory, name)]


def _compared(memory: Memory, name: str) -> object:
    value = getattr(memory, name)
    return sorted(value) if name in UNORDERED else value


def _body_line(text: str) -> int:
    """The 1-based line of the body's first text (after the closing ``---``)."""
    front = _FRONT.match(text)
    if front is None:
        return 1
    rest = text[front.end() :]
    return text.count("\n", 0, front.end()) + 1 + rest.count("\n", 0, len(rest) - len(rest.lstrip()))


def _stated(entry: dict[str, Any]) -> dict[str, Any]:
    """An entry as it reads: a key written as null and a key left out say the same."""
    return {key: value for key, value in entry.items() if value is not None}


def chain_problems(heads: dict[str, Entry], touched: set[str]) -> list[Problem]:
    """Supersede chains around the changed memories: both pointers present, targets in the
    repository, one replacement per memory, no cycles."""
    by_id: dict[str, Entry] = {}
    for entry in heads.values():
        if entry.id and entry.id not in by_id:
            by_id[entry.id] = entry
    replacers: dict[str, list[Entry]] = {}
    for entry in heads.values():
        if entry.supersedes:
            replacers.setdefault(entry.supersedes, []).append(entry)
    problems: list[Problem] = []
    for entry in heads.values():
        if not entry.id or not ({entry.id, entry.supersedes, entry.superseded_by} & touched):
            continue
        problems += _pointer_problems(entry, by_id)
        if entry.status == "superseded" and not entry.superseded_by:
            problems.append(Problem(entry.path, line_of(entry.text, "status"), "supersede-chain",
                                    f"{entry.id} has status superseded but no superseded_by",
                                    "set superseded_by to the replacing memory's id, or `status: active` if nothing replaced it"))  # fmt: skip
    for target, group in sorted(replacers.items()):
        if len(group) < 2 or not ({target} | {e.id for e in group if e.id}) & touched:
            continue
        names = " and ".join(sorted(e.id or e.path for e in group))
        for entry in group:
            if entry.id in touched or target in touched:
                problems.append(Problem(entry.path, line_of(entry.text, "supersedes"), "supersede-chain",
                                        f"{target} is replaced twice (by {names})",
                                        "keep one replacement: take the other out, or supersede the newest version instead"))  # fmt: skip
    problems += _cycles(by_id, touched)
    return problems


def _pointer_problems(entry: Entry, by_id: dict[str, Entry]) -> list[Problem]:
    out: list[Problem] = []
    for key, back in (("supersedes", "superseded_by"), ("superseded_by", "supersedes")):
        target_id = getattr(entry, key)
        if not target_id:
            continue
        at = line_of(entry.text, key)
        if target_id == entry.id:
            out.append(Problem(entry.path, at, "supersede-chain", f"{entry.id} names itself in {key}", f"clear {key}"))
            continue
        target = by_id.get(target_id)
        if target is None:
            out.append(Problem(entry.path, at, "supersede-chain", f"{key}: {target_id} is not in the repository",
                               f"add {target_id}.md to this change (`git memex submit {target_id}`), or clear {key}"))  # fmt: skip
        elif getattr(target, back) != entry.id:
            has = getattr(target, back) or "nothing"
            out.append(Problem(entry.path, at, "supersede-chain",
                               f"{entry.id} says {key}: {target_id}, but {target.path} says {back}: {has}",
                               f"make the pointers agree: {back}: {entry.id} in {target.path}"
                               + (" (and status: superseded)" if back == "superseded_by" else "")))  # fmt: skip
    return out


def _cycles(by_id: dict[str, Entry], touched: set[str]) -> list[Problem]:
    out: list[Problem] = []
    reported: set[frozenset[str]] = set()
    for start in sorted(touched):
        seen: list[str] = []
        current = by_id.get(start)
        while current is not None and current.id and current.id not in seen:
            seen.append(current.id)
            current = by_id.get(current.superseded_by or "")
        if current is not None and current.id in seen:
            loop = frozenset(seen[seen.index(current.id) :])
            if loop not in reported and len(loop) > 1:
                reported.add(loop)
                entry = by_id[start]
                out.append(Problem(entry.path, line_of(entry.text, "superseded_by"), "supersede-chain",
                                   f"supersede chain loops: {' → '.join(sorted(loop))}", "break the loop: the newest memory has no superseded_by"))  # fmt: skip
    return out


def duplicate_problems(heads: dict[str, Entry], changed: set[str]) -> list[Problem]:
    """An id held by more than one memory file, reported on the changed files."""
    paths: dict[str, list[str]] = {}
    for entry in heads.values():
        if entry.id:
            paths.setdefault(entry.id, []).append(entry.path)
    problems: list[Problem] = []
    for path in sorted(changed):
        entry = heads[path]
        others = [p for p in paths.get(entry.id or "", []) if p != path]
        if entry.id and others:
            problems.append(Problem(path, line_of(entry.text, "id"), "duplicate-id",
                                    f"id {entry.id} is also in {', '.join(sorted(others))}",
                                    "keep one copy (`git rm` the other); a different memory needs its own new id"))  # fmt: skip
    return problems


# -- reading frontmatter cheaply -------------------------------------------------------------
_FRONT = re.compile(r"\A\ufeff?---[ \t]*\r?\n(.*?)^---[ \t]*\r?$", re.DOTALL | re.MULTILINE)
_FIELD = re.compile(r"^(id|supersedes|superseded_by|status)[ \t]*:[ \t]*(.*?)[ \t]*(?:#.*)?\r?$", re.MULTILINE)


def light_entry(path: str, data: bytes) -> Entry:
    """The chain fields of a file nobody changed, by a line scan (no YAML): a repository with
    thousands of memories is read in a blink, and a broken file cannot stop the check."""
    text = data.decode("utf-8", errors="replace")
    front = _FRONT.match(text)
    values: dict[str, str | None] = {}
    for match in _FIELD.finditer(front.group(1) if front else ""):
        raw = match.group(2).strip("'\"")
        values.setdefault(match.group(1), None if raw in ("", "null", "~", "Null", "NULL") else raw)
    return Entry(path, text, values.get("id"), values.get("supersedes"), values.get("superseded_by"), values.get("status"))


def line_of(text: str, key: str) -> int:
    """The 1-based line of a top-level frontmatter key (1 when absent)."""
    match = re.search(rf"^{re.escape(key)}[ \t]*:", text, re.MULTILINE)
    return text.count("\n", 0, match.start()) + 1 if match else 1


def _error_line(text: str, message: str) -> int:
    """Where a parse error points: a named field's line, or the YAML error's own line."""
    named = re.search(r"field '([A-Za-z_]+)", message)
    if named:
        return line_of(text, named.group(1))
    yaml_line = re.search(r"\(frontmatter line (\d+)\)", message)
    return int(yaml_line.group(1)) + 1 if yaml_line else 1


def _one_line(value: str) -> str:
    first = value.split("\n", 1)[0].rstrip("\r")
    return first[:48] + "…" if len(first) > 48 or len(first) < len(value) else first


def summary(problems: list[Problem]) -> dict[str, Any]:
    """Counts per check, for the JSON document and the closing line."""
    counts: dict[str, int] = {}
    for problem in problems:
        counts[problem.check] = counts.get(problem.check, 0) + 1
    return counts
