"""Git-flow hardening (issue 6, items 12–16), each checked with the real `git` CLI."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from openmemex.ids import new_ulid
from openmemex.memfile import serialize
from openmemex.model import Memory
from tests.conftest import git, run_process
from tests.helpers import merge_branches

MEMDIR = ".ai/open-memex"
# A real ULID that the plain scanner flags as `high-entropy-secret:id` (found by brute force
# over new_ulid(); about 1 id in 3,000 looks like this).
FLAGGED_ULID = "01M8NT07KSJQ3E9XDPFZ3H6BG2"


def draft(cli: Any, text: str) -> str:
    result = cli("add", text, "--json")
    assert result.rc == 0, result.err
    return str(json.loads(result.out)["id"])


def outbox(cli: Any, data_root: Path) -> Path:
    return data_root / "memories" / json.loads(cli("where", "--json").out)["project"]


def porcelain(repo: Path, *paths: str) -> str:
    return git("status", "--porcelain", "--", *paths, cwd=repo).strip()


def rc_of(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GIT_EDITOR": "true"}
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=env)


# ---------------------------------------------------------------------------------------------
# 12. a locked git index during submit


def test_locked_index_keeps_the_committed_files(cli: Any, git_repo: Path, data_root: Path) -> None:
    memory = draft(cli, "locked indexes never lose a submitted memory")
    outbox_file = outbox(cli, data_root) / f"{memory}.md"
    lock = git_repo / ".git" / "index.lock"
    lock.write_text("")
    result = cli("submit", memory)
    assert result.rc == 0, result.err
    sha = git("rev-parse", "HEAD", cwd=git_repo).strip()
    assert f"committed {sha[:8]}" in result.out
    paths = [f"{MEMDIR}/{memory}.md", f"{MEMDIR}/.gitattributes"]
    repair = f"git reset -q -- {' '.join(paths)}"
    assert "the git index could not be refreshed (locked by another git command)" in result.err
    assert repair in result.err
    # the commit holds the memory, the work tree still has it, the outbox copy is gone
    assert f"{MEMDIR}/{memory}.md" in git("log", "-1", "--name-only", "--format=", cwd=git_repo).split()
    assert (git_repo / MEMDIR / f"{memory}.md").exists()
    assert not outbox_file.exists()
    lock.unlink()
    git(*shlex.split(repair)[1:], cwd=git_repo)
    assert porcelain(git_repo, *paths) == ""
    git("fsck", "--strict", cwd=git_repo)


def test_locked_index_is_refreshed_by_the_next_submit(cli: Any, git_repo: Path) -> None:
    first = draft(cli, "the first memory, submitted under a lock")
    second = draft(cli, "the second memory, submitted later")
    lock = git_repo / ".git" / "index.lock"
    lock.write_text("")
    assert cli("submit", first).rc == 0
    lock.unlink()
    result = cli("submit", second)
    assert result.rc == 0, result.err
    assert git("status", "--porcelain", cwd=git_repo).strip() == ""
    tree = git("ls-tree", "-r", "--name-only", "HEAD", cwd=git_repo).split()
    assert f"{MEMDIR}/{first}.md" in tree and f"{MEMDIR}/{second}.md" in tree
    # a `git commit -a` now commits nothing that removes the memories
    assert rc_of("commit", "-a", "-m", "x", cwd=git_repo).returncode != 0


def test_locked_index_json_reports_it(cli: Any, git_repo: Path) -> None:
    memory = draft(cli, "json says the index was not refreshed")
    (git_repo / ".git" / "index.lock").write_text("")
    result = cli("submit", memory, "--json")
    assert result.rc == 0, result.err
    doc = json.loads(result.out)
    assert doc["index_refreshed"] is False and doc["repair"].startswith("git reset -q -- ")


def test_a_failed_commit_still_removes_what_it_wrote(cli: Any, git_repo: Path, data_root: Path) -> None:
    memory = draft(cli, "a locked branch means nothing was committed")
    (git_repo / ".git" / "refs" / "heads" / "main.lock").write_text("")
    result = cli("submit", memory)
    assert result.rc == 1 and "nothing was committed" in result.err
    assert not (git_repo / MEMDIR / f"{memory}.md").exists()
    assert (outbox(cli, data_root) / f"{memory}.md").exists()
    assert git("rev-list", "--count", "HEAD", cwd=git_repo).strip() == "1"


# ---------------------------------------------------------------------------------------------
# 13. the merge driver on files it cannot parse; labels


def _setup_driver(cli: Any, repo: Path) -> None:
    assert cli("setup").rc == 0
    git("add", MEMDIR, cwd=repo)
    git("commit", "-q", "-m", "driver", cwd=repo)


NOTE = "# Team notes\n\nline one\nline two\nline three\nline four\nline five\nline six\n"


def test_driver_text_merges_a_plain_note(cli: Any, git_repo: Path) -> None:
    _setup_driver(cli, git_repo)
    rel = f"{MEMDIR}/README.md"
    proc = merge_branches(git_repo, rel, NOTE, NOTE.replace("line one", "line ONE"), NOTE.replace("line six", "line SIX"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = (git_repo / rel).read_text()
    assert "line ONE" in text and "line SIX" in text and "<<<<<<<" not in text
    assert "not a memory file" in proc.stderr and "merged as plain text" in proc.stderr
    assert git("status", "--porcelain", cwd=git_repo).strip() == ""


def test_driver_text_conflict_keeps_both_sides_with_branch_labels(cli: Any, git_repo: Path) -> None:
    _setup_driver(cli, git_repo)
    rel = f"{MEMDIR}/README.md"
    proc = merge_branches(git_repo, rel, NOTE, NOTE.replace("line one", "ours said"), NOTE.replace("line one", "theirs said"))
    assert proc.returncode != 0
    text = (git_repo / rel).read_text()
    assert "<<<<<<< main\n" in text and ">>>>>>> feature\n" in text
    assert "ours said" in text and "theirs said" in text
    assert "README.md" not in text
    assert "conflict markers" in proc.stderr


def test_resolve_on_a_plain_note_says_it_is_no_memory_file(cli: Any, git_repo: Path) -> None:
    rel = f"{MEMDIR}/README.md"
    proc = merge_branches(git_repo, rel, NOTE, NOTE.replace("line one", "ours"), NOTE.replace("line one", "theirs"))
    assert proc.returncode != 0
    result = cli("resolve", rel)
    assert result.rc == 3
    assert result.err.strip().endswith(f"{rel} is not a memory file (no YAML frontmatter) — resolve it by hand "
                                       f"(edit the file, then `git add {rel}`)")  # fmt: skip


def _memory_text(repo: Path, memory_id: str, **changes: Any) -> str:
    from openmemex.context import Context

    with Context.load(repo) as ctx:
        key = ctx.project.key
    memory = Memory(
        id=memory_id, scope="project", scope_key=key, body="Cache TTL is 60s.", type="decision",
        visibility="internal", project_name="widgets", tags=["cache"], created_at="2026-01-01T00:00:00Z",
        updated_at="2026-01-01T00:00:00Z", review_state="proposed",
    )  # fmt: skip
    for key_, value in changes.items():
        setattr(memory, key_, value)
    return serialize(memory)


def test_driver_invalid_yaml_side_is_text_merged(cli: Any, git_repo: Path) -> None:
    _setup_driver(cli, git_repo)
    memory_id = new_ulid()
    rel = f"{MEMDIR}/{memory_id}.md"
    base = _memory_text(git_repo, memory_id)
    ours = base.replace("importance: normal", "importance: high")
    theirs = base.replace("tags: [cache]", "tags: [cache, ttl").replace("Cache TTL is 60s.", "Cache TTL is 30s.")
    assert theirs != base and "tags: [cache, ttl\n" in theirs
    proc = merge_branches(git_repo, rel, base, ours, theirs)
    # git's own text merge would be clean here: nothing of either side may be dropped
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = (git_repo / rel).read_text()
    assert "importance: high" in text and "tags: [cache, ttl\n" in text and "Cache TTL is 30s." in text
    assert "feature" in proc.stderr and "not a valid memory file" in proc.stderr and "invalid YAML" in proc.stderr


def test_resolve_names_the_invalid_side(cli: Any, git_repo: Path) -> None:
    memory_id = new_ulid()
    rel = f"{MEMDIR}/{memory_id}.md"
    base = _memory_text(git_repo, memory_id)
    ours = base.replace("tags: [cache]", "tags: [cache, ours]")
    theirs = base.replace("tags: [cache]", "tags: [cache, theirs")
    proc = merge_branches(git_repo, rel, base, ours, theirs)
    assert proc.returncode != 0
    result = cli("resolve", memory_id)
    assert result.rc == 3
    assert "theirs (being merged) is not a valid memory file: invalid YAML" in result.err
    assert "ours (HEAD)" not in result.err.split("is not a valid")[0]


def test_semantic_conflict_markers_use_branch_labels(cli: Any, git_repo: Path) -> None:
    _setup_driver(cli, git_repo)
    memory_id = new_ulid()
    rel = f"{MEMDIR}/{memory_id}.md"
    base = _memory_text(git_repo, memory_id)
    proc = merge_branches(git_repo, rel, base, base.replace("60s", "90s"), base.replace("60s", "30s"))
    assert proc.returncode != 0 and "semantic conflict" in proc.stderr
    text = (git_repo / rel).read_text()
    assert "<<<<<<< main\n" in text and ">>>>>>> feature\n" in text and "memory.md" not in text
    assert "(main vs feature)" in proc.stderr


def test_setup_command_passes_labels_and_old_form_still_works(cli: Any, git_repo: Path) -> None:
    assert cli("setup").rc == 0
    command = git("config", "merge.openmemex.driver", cwd=git_repo).strip()
    assert command.endswith("merge-driver %O %A %B %P --ours-label %X --theirs-label %Y")
    # a clone configured by an older setup keeps working (labels derived from the merge)
    old = command.split(" --ours-label")[0]
    git("config", "merge.openmemex.driver", old, cwd=git_repo)
    git("add", MEMDIR, cwd=git_repo)
    git("commit", "-q", "-m", "driver", cwd=git_repo)
    rel = f"{MEMDIR}/README.md"
    proc = merge_branches(git_repo, rel, NOTE, NOTE.replace("line two", "ours"), NOTE.replace("line two", "theirs"))
    assert proc.returncode != 0
    text = (git_repo / rel).read_text()
    assert "<<<<<<< main\n" in text and ">>>>>>> feature\n" in text
    # setup upgrades our own older command
    assert cli("setup").rc == 0
    assert git("config", "merge.openmemex.driver", cwd=git_repo).strip() == command


def test_driver_labels_in_a_rebase(cli: Any, git_repo: Path) -> None:
    """In a rebase, stage 2 (ours) is the upstream and stage 3 the branch being replayed."""
    _setup_driver(cli, git_repo)
    rel = f"{MEMDIR}/README.md"
    proc = merge_branches(git_repo, rel, NOTE, NOTE.replace("line two", "upstream said"), NOTE.replace("line two", "mine"))
    assert rc_of("merge", "--abort", cwd=git_repo).returncode == 0 and proc.returncode != 0
    git("switch", "-q", "feature", cwd=git_repo)
    rebase = rc_of("rebase", "main", cwd=git_repo)
    assert rebase.returncode != 0
    text = (git_repo / rel).read_text()
    assert "<<<<<<< upstream\n" in text and ">>>>>>> feature\n" in text
    assert "upstream said" in text and "mine" in text


@pytest.mark.parametrize(
    ("labels", "expected"),
    [(("HEAD", "topic"), ("HEAD", "topic")), (("%X", "%Y"), ("ours", "theirs")), (("", ""), ("ours", "theirs"))],
)
def test_driver_labels_from_newer_git(tmp_path: Path, labels: tuple[str, str], expected: tuple[str, str]) -> None:
    """git ≥ 2.44 substitutes %X/%Y; older git passes them literally (outside a repository:
    no branch names to derive, so the fallback is ours/theirs)."""
    sides = {}
    for name, text in (("base", NOTE), ("ours", NOTE.replace("line one", "A")), ("theirs", NOTE.replace("line one", "B"))):
        sides[name] = tmp_path / name
        sides[name].write_text(text)
    result = run_process("merge-driver", str(sides["base"]), str(sides["ours"]), str(sides["theirs"]), "notes.md",
                         "--ours-label", labels[0], "--theirs-label", labels[1], cwd=tmp_path)  # fmt: skip
    assert result.rc == 1, result.err
    text = sides["ours"].read_text()
    assert f"<<<<<<< {expected[0]}\n" in text and f">>>>>>> {expected[1]}\n" in text


# ---------------------------------------------------------------------------------------------
# 14. in-progress git operations


def _conflict_on(repo: Path, branch: str = "feature") -> None:
    """main and ``branch`` both change other.txt differently (not a memory file)."""
    (repo / "other.txt").write_text("base\n")
    git("add", "other.txt", cwd=repo)
    git("commit", "-q", "-m", "other base", cwd=repo)
    git("switch", "-q", "-c", branch, cwd=repo)
    (repo / "other.txt").write_text("theirs\n")
    git("commit", "-q", "-am", "theirs", cwd=repo)
    git("switch", "-q", "main", cwd=repo)
    (repo / "other.txt").write_text("ours\n")
    git("commit", "-q", "-am", "ours", cwd=repo)


def _start_rebase(repo: Path) -> None:
    _conflict_on(repo)
    git("switch", "-q", "feature", cwd=repo)
    assert rc_of("rebase", "main", cwd=repo).returncode != 0


def _start_merge(repo: Path) -> None:
    _conflict_on(repo)
    assert rc_of("merge", "feature", cwd=repo).returncode != 0


def _start_cherry_pick(repo: Path) -> None:
    _conflict_on(repo)
    assert rc_of("cherry-pick", "feature", cwd=repo).returncode != 0


def _start_revert(repo: Path) -> None:
    (repo / "other.txt").write_text("one\n")
    git("add", "other.txt", cwd=repo)
    git("commit", "-q", "-m", "one", cwd=repo)
    (repo / "other.txt").write_text("two\n")
    git("commit", "-q", "-am", "two", cwd=repo)
    assert rc_of("revert", "--no-edit", "HEAD~1", cwd=repo).returncode != 0


def _start_bisect(repo: Path) -> None:
    git("bisect", "start", cwd=repo)  # HEAD stays on main until good/bad are given


def _start_am(repo: Path) -> None:
    _conflict_on(repo)
    patch = git("format-patch", "-1", "--stdout", "feature", cwd=repo)
    proc = subprocess.run(["git", "am"], input=patch, cwd=repo, capture_output=True, text=True)
    assert proc.returncode != 0


OPERATIONS: dict[str, tuple[Callable[[Path], None], str]] = {
    "rebase": (_start_rebase, "a rebase is in progress — finish it (git rebase --continue) or abort it (git rebase --abort), then re-run"),
    "merge": (_start_merge, "a merge is in progress — finish it (git commit) or abort it (git merge --abort), then re-run"),
    "cherry-pick": (_start_cherry_pick, "a cherry-pick is in progress — finish it (git cherry-pick --continue) or abort it (git cherry-pick --abort), then re-run"),
    "revert": (_start_revert, "a revert is in progress — finish it (git revert --continue) or abort it (git revert --abort), then re-run"),
    "bisect": (_start_bisect, "a bisect is in progress — end it (git bisect reset), then re-run"),
    "am": (_start_am, "a `git am` is in progress — finish it (git am --continue) or abort it (git am --abort), then re-run"),
}  # fmt: skip


@pytest.mark.parametrize("operation", list(OPERATIONS))
def test_branch_is_refused_during_an_operation(cli: Any, git_repo: Path, operation: str) -> None:
    start, message = OPERATIONS[operation]
    memory = draft(cli, f"submitted during a {operation}")
    start(git_repo)
    head = (git_repo / ".git" / "HEAD").read_text()
    branches = git("branch", "--list", cwd=git_repo)
    result = cli("submit", memory, "--branch", "mem/x")
    assert result.rc == 1 and result.err.strip() == f"open-memex: error: {message}"
    assert (git_repo / ".git" / "HEAD").read_text() == head
    assert git("branch", "--list", cwd=git_repo) == branches
    assert not (git_repo / MEMDIR / f"{memory}.md").exists()


@pytest.mark.parametrize("operation", [op for op in OPERATIONS if op != "merge"])
def test_plain_submit_is_refused_during_an_operation(cli: Any, git_repo: Path, operation: str) -> None:
    start, message = OPERATIONS[operation]
    memory = draft(cli, f"plain submit during a {operation}")
    start(git_repo)
    head = git("rev-parse", "HEAD", cwd=git_repo)
    result = cli("submit", memory)
    assert result.rc == 1 and result.err.strip() == f"open-memex: error: {message}"
    assert git("rev-parse", "HEAD", cwd=git_repo) == head
    assert not (git_repo / MEMDIR / f"{memory}.md").exists()


def test_plain_submit_during_a_merge_commits_under_it(cli: Any, git_repo: Path) -> None:
    """The submit commit lands on the branch; the user's merge then concludes on top of it."""
    memory = draft(cli, "a memory submitted while a merge waits")
    _start_merge(git_repo)
    result = cli("submit", memory)
    assert result.rc == 0, result.err
    assert "a merge is in progress" in result.err  # said, not refused
    assert git("log", "-1", "--format=%s", cwd=git_repo).startswith("mem: submit 1 memory")
    status = git("status", "--porcelain", cwd=git_repo)
    assert "UU other.txt" in status and MEMDIR not in status
    (git_repo / "other.txt").write_text("resolved\n")
    git("add", "other.txt", cwd=git_repo)
    git("commit", "-q", "--no-edit", cwd=git_repo)
    parents = git("log", "-1", "--format=%P", cwd=git_repo).split()
    assert len(parents) == 2
    assert git("log", "-1", "--format=%s", parents[0], cwd=git_repo).startswith("mem: submit")
    assert f"{MEMDIR}/{memory}.md" in git("ls-tree", "-r", "--name-only", "HEAD", cwd=git_repo).split()
    assert git("status", "--porcelain", cwd=git_repo).strip() == ""
    git("fsck", "--strict", cwd=git_repo)


# ---------------------------------------------------------------------------------------------
# 15. generated fields are never secrets


def test_a_ulid_is_never_a_secret_even_under_a_secretish_key() -> None:
    """The rewritten scanner knows ULIDs (issue 9); the submit below still guards the
    generated fields, in case a rule ever flags one again."""
    from openmemex.redact import find_secrets

    assert find_secrets(f"id: {FLAGGED_ULID}\n") == []
    assert find_secrets(f"token: {FLAGGED_ULID}\n") == []


def _rename_draft(folder: Path, old: str, new: str, edit: Callable[[str], str] = lambda t: t) -> None:
    text = (folder / f"{old}.md").read_text().replace(old, new)
    (folder / f"{old}.md").unlink()
    (folder / f"{new}.md").write_text(edit(text))


def test_submit_accepts_an_id_the_scanner_would_flag(cli: Any, git_repo: Path, data_root: Path) -> None:
    memory = draft(cli, "a memory whose id looks random enough to be a secret")
    folder = outbox(cli, data_root)
    _rename_draft(folder, memory, FLAGGED_ULID,
                  lambda t: t.replace("supersedes: null", f"supersedes: {FLAGGED_ULID[:-1]}4"))  # fmt: skip
    result = cli("submit", FLAGGED_ULID)
    assert result.rc == 0, result.err
    assert f"{MEMDIR}/{FLAGGED_ULID}.md" in git("show", "--name-only", "--format=", "HEAD", cwd=git_repo).split()


@pytest.mark.parametrize(
    ("edit", "rule"),
    [
        (lambda t: t.replace("tags: []", "tags: [ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8]"), "github-pat"),
        (lambda t: t.rstrip("\n") + "\nthe key is AKIA" + "ABCDEFGHIJKLMNOP\n", "aws-access-key-id"),
        (lambda t: t.replace("review_note: null", "review_note: ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"), "github-pat"),
    ],
)  # fmt: skip
def test_real_secrets_next_to_a_flagged_id_are_still_caught(
    cli: Any, git_repo: Path, data_root: Path, edit: Callable[[str], str], rule: str
) -> None:  # fmt: skip
    memory = draft(cli, "a secret hides next to a random-looking id")
    _rename_draft(outbox(cli, data_root), memory, FLAGGED_ULID, edit)
    result = cli("submit", FLAGGED_ULID)
    assert result.rc == 1 and f"possible secret ({rule})" in result.err, result.err
    assert git("rev-list", "--count", "HEAD", cwd=git_repo).strip() == "1"


def test_find_secrets_in_memory_file_keeps_positions() -> None:
    from openmemex.redact import find_secrets, find_secrets_in_memory_file

    other = FLAGGED_ULID[:-1] + "4"
    text = (
        f"---\nid: {FLAGGED_ULID}\nsupersedes: '{other}'  # the old one\nsuperseded_by: null\n"
        f"derived_from: \"{other}\"\ncreated_at: \"2026-01-01T00:00:00Z\"\nupdated_at: 2026-01-01T00:00:00Z\n"
        "review_history:\n  - at: \"2026-01-01T00:00:00Z\"\n    by: ana\n"
        "  - {at: '2026-01-02T00:00:00Z', by: bo}\n"
        "---\n\nbody with token = ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8\n"
        f"and id: {FLAGGED_ULID} in the body is user text\n"
    )  # fmt: skip
    findings = find_secrets_in_memory_file(text)
    assert [f.rule for f in findings] == ["github-pat"]
    assert [f.line for f in findings] == [find_secrets(text)[-1].line] == [14]
    assert text[findings[0].start : findings[0].end].startswith("ghp_")
    # a value that is not what we generate is scanned even under a generated key
    hostile = "---\nsupersedes: ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8\n---\nbody\n"
    assert [f.rule for f in find_secrets_in_memory_file(hostile)] == ["github-pat"]
    # no frontmatter: scanned as it is
    assert find_secrets_in_memory_file(f"id: {FLAGGED_ULID}\n") == find_secrets(f"id: {FLAGGED_ULID}\n")


# ---------------------------------------------------------------------------------------------
# 16. messages, big submits, stray files


def test_rerun_that_commits_says_what_it_committed(cli: Any, git_repo: Path, data_root: Path) -> None:
    memory = draft(cli, "an interrupted submit, finished by the re-run")
    outbox_file = outbox(cli, data_root) / f"{memory}.md"
    target = git_repo / MEMDIR / f"{memory}.md"
    target.parent.mkdir(parents=True)
    target.write_text(outbox_file.read_text().replace("review_state: draft", "review_state: proposed"))
    result = cli("submit", memory)
    assert result.rc == 0, result.err
    sha = git("rev-parse", "HEAD", cwd=git_repo).strip()
    assert "nothing new to commit" not in result.out
    assert f"committed {memory} (left uncommitted by an interrupted submit)" in result.out
    assert f"committed {sha[:8]} on main" in result.out
    doc = json.loads(cli("sync-status", "--json").out)
    assert doc["outbox"] == []


def test_many_drafts_make_a_short_subject_and_list_ids_in_the_body(cli: Any, git_repo: Path, data_root: Path) -> None:
    first = draft(cli, "the first of many")
    folder = outbox(cli, data_root)
    template = (folder / f"{first}.md").read_text()
    ids = [first]
    for n in range(59):
        memory_id = new_ulid()
        (folder / f"{memory_id}.md").write_text(template.replace(first, memory_id).replace("the first of many", f"memory {n}"))
        ids.append(memory_id)
    result = cli("submit", *ids)
    assert result.rc == 0, result.err
    assert git("log", "-1", "--format=%s", cwd=git_repo).strip() == "mem: submit 60 memories for review"
    body = git("log", "-1", "--format=%b", cwd=git_repo).split()
    assert sorted(body) == sorted(ids)
    few = draft(cli, "a small submit keeps the ids in the subject")
    assert cli("submit", few).rc == 0
    assert git("log", "-1", "--format=%s", cwd=git_repo).strip() == f"mem: submit 1 memory for review ({few[:8]})"


def test_stray_temp_files_are_never_committed(cli: Any, git_repo: Path) -> None:
    memory = draft(cli, "kill -9 leaves temp files behind")
    folder = git_repo / MEMDIR
    folder.mkdir(parents=True)
    stray = [folder / f".{memory}.md.4242.deadbeef.tmp", folder / f".{new_ulid()}.md.1.00ff00ff.tmp", folder / "notes.txt"]
    for path in stray:
        path.write_text("half-written\n")
    result = cli("submit", memory)
    assert result.rc == 0, result.err
    committed = git("show", "--name-only", "--format=", "HEAD", cwd=git_repo).split()
    assert sorted(committed) == sorted([f"{MEMDIR}/{memory}.md", f"{MEMDIR}/.gitattributes"])
    status = git("status", "--porcelain", "--untracked-files=all", cwd=git_repo)
    # the store may sweep a stale temp file of its own; what is left stays untracked
    assert all(f"?? {MEMDIR}/{p.name}" in status or not p.exists() for p in stray)
    assert f"?? {MEMDIR}/notes.txt" in status
    assert re.search(r"^A ", status, re.M) is None  # nothing of ours left staged


def test_commit_paths_refuses_anything_but_memory_files(git_repo: Path) -> None:
    from openmemex.context import Context
    from openmemex.errors import MemexError
    from openmemex.git.repo import open_repo
    from openmemex.git.submit import commit_paths

    with Context.load(git_repo) as ctx:
        gitrepo = open_repo(ctx)
        for rel in (f"{MEMDIR}/.x.md.1.ab.tmp", "README.md", f"{MEMDIR}/sub/{new_ulid()}.md"):
            with pytest.raises(MemexError, match="only memory files"):
                commit_paths(gitrepo, [rel], "x")
    assert git("rev-list", "--count", "HEAD", cwd=git_repo).strip() == "1"
