"""resolve and the merge driver, with conflicts made by a real `git merge` / `git rebase`."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from openmemex.context import Context
from openmemex.ids import new_ulid
from openmemex.memfile import parse_memory, serialize
from openmemex.model import Memory
from tests.conftest import git

MEMDIR = ".ai/open-memex"


def _memory(repo: Path, **changes: Any) -> Memory:
    with Context.load(repo) as ctx:
        key = ctx.project.key
    memory = Memory(
        id=changes.pop("id"), scope="project", scope_key=key, body=changes.pop("body", "Cache TTL is 60s.\n\nSecond paragraph stays."),
        type="decision", visibility="internal", project_name="widgets", tags=["cache", "ttl"],
        created_at="2026-01-01T00:00:00Z", updated_at="2026-01-01T00:00:00Z", review_state="proposed",
        review_history=[{"at": "2026-01-01T00:00:00Z", "by": "ana", "from": "draft", "to": "proposed", "note": None}],
    )  # fmt: skip
    for key_, value in changes.items():
        setattr(memory, key_, value)
    return memory


def _write(repo: Path, memory: Memory, message: str) -> None:
    path = repo / MEMDIR / f"{memory.id}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(serialize(memory))
    git("add", MEMDIR, cwd=repo)
    git("commit", "-q", "-m", message, cwd=repo)


def _edit(repo: Path, memory_id: str, message: str, **changes: Any) -> None:
    path = repo / MEMDIR / f"{memory_id}.md"
    memory = parse_memory(path.read_bytes())
    for key, value in changes.items():
        setattr(memory, key, value)
    path.write_text(serialize(memory))
    git("commit", "-q", "-am", message, cwd=repo)


def conflict(repo: Path, ours: dict[str, Any], theirs: dict[str, Any], base: dict[str, Any] | None = None) -> str:
    """Commit a memory on main, change it on a branch (theirs) and on main (ours), merge."""
    memory_id = new_ulid()
    _write(repo, _memory(repo, id=memory_id, **(base or {})), "base")
    git("switch", "-q", "-c", "feature", cwd=repo)
    _edit(repo, memory_id, "theirs", **theirs)
    git("switch", "-q", "main", cwd=repo)
    _edit(repo, memory_id, "ours", **ours)
    proc = subprocess.run(["git", "merge", "feature"], cwd=repo, capture_output=True, text=True)
    assert proc.returncode != 0 and "CONFLICT" in proc.stdout, proc.stdout + proc.stderr
    return memory_id


def merged(repo: Path, memory_id: str) -> Memory:
    return parse_memory((repo / MEMDIR / f"{memory_id}.md").read_bytes())


def resolved_ok(cli: Any, repo: Path, memory_id: str) -> Memory:
    listing = cli("resolve")
    assert f"{MEMDIR}/{memory_id}.md" in listing.out
    result = cli("resolve", f"{MEMDIR}/{memory_id}.md")
    assert result.rc == 0, result.err
    assert result.out.startswith(f"resolved {MEMDIR}/{memory_id}.md")
    assert cli("resolve").out.strip() == "(no conflicted memory files)"
    git("commit", "-q", "--no-edit", cwd=repo)
    assert len(git("log", "-1", "--format=%P", cwd=repo).split()) == 2  # a real merge commit
    assert git("status", "--porcelain", cwd=repo).strip() == ""
    git("fsck", cwd=repo)
    return merged(repo, memory_id)


def test_no_conflicts(cli: Any, git_repo: Path) -> None:
    assert cli("resolve").out.strip() == "(no conflicted memory files)"


def test_tags_union(cli: Any, git_repo: Path) -> None:
    memory_id = conflict(git_repo, ours={"tags": ["cache", "ttl", "redis"]}, theirs={"tags": ["cache", "ttl", "cdn"]})
    assert resolved_ok(cli, git_repo, memory_id).tags == ["cache", "ttl", "redis", "cdn"]


def test_disjoint_scalars_merge(cli: Any, git_repo: Path) -> None:
    memory_id = conflict(git_repo, ours={"importance": "high"}, theirs={"status": "deprecated"})
    memory = resolved_ok(cli, git_repo, memory_id)
    assert (memory.importance, memory.status) == ("high", "deprecated")


def test_updated_at_takes_latest(cli: Any, git_repo: Path) -> None:
    memory_id = conflict(git_repo, ours={"updated_at": "2026-03-01T00:00:00Z", "tags": ["a"]},
                         theirs={"updated_at": "2026-05-01T00:00:00Z", "tags": ["b"]})  # fmt: skip
    assert resolved_ok(cli, git_repo, memory_id).updated_at == "2026-05-01T00:00:00Z"


def test_review_history_union_and_rejection_kept(cli: Any, git_repo: Path) -> None:
    base_entry = {"at": "2026-01-01T00:00:00Z", "by": "ana", "from": "draft", "to": "proposed", "note": None}
    approve = {"at": "2026-02-01T00:00:00Z", "by": "bo", "from": "proposed", "to": "approved", "note": None}
    reject = {"at": "2026-02-02T00:00:00Z", "by": "cy", "from": "proposed", "to": "rejected", "note": "wrong TTL"}
    memory_id = conflict(
        git_repo,
        ours={"review_state": "approved", "approved_by": "bo", "review_history": [base_entry, approve]},
        theirs={"review_state": "rejected", "review_note": "wrong TTL", "review_history": [base_entry, reject]},
    )
    memory = resolved_ok(cli, git_repo, memory_id)
    assert memory.review_state == "rejected"  # never silently drops a rejection
    assert memory.review_history == [base_entry, approve, reject]
    assert memory.review_note == "wrong TTL"


def test_review_state_keeps_the_further_step(cli: Any, git_repo: Path) -> None:
    # no covered field changes on either side: an approval never covers the other side's edit
    memory_id = conflict(git_repo, ours={"review_state": "approved"}, theirs={"review_state": "published"})
    assert resolved_ok(cli, git_repo, memory_id).review_state == "published"


def test_body_from_the_only_side_that_changed_it(cli: Any, git_repo: Path) -> None:
    memory_id = conflict(git_repo, ours={"body": "Cache TTL is 90s.\n\nSecond paragraph stays.", "tags": ["a"]},
                         theirs={"tags": ["b"]})  # fmt: skip
    assert resolved_ok(cli, git_repo, memory_id).body.startswith("Cache TTL is 90s.")


def test_body_both_changed_cleanly_merges(cli: Any, git_repo: Path) -> None:
    base_body = "Line one.\n\nline two\nline three\nline four\nline five\n\nLast line."
    memory_id = conflict(
        git_repo, base={"body": base_body},
        ours={"body": base_body.replace("Line one.", "Line ONE."), "tags": ["a"]},
        theirs={"body": base_body.replace("Last line.", "Last LINE."), "tags": ["b"]},
    )  # fmt: skip
    body = resolved_ok(cli, git_repo, memory_id).body
    assert body.startswith("Line ONE.") and body.endswith("Last LINE.")


def test_semantic_body_conflict_exits_3_and_leaves_file(cli: Any, git_repo: Path) -> None:
    memory_id = conflict(git_repo, ours={"body": "Cache TTL is 90s."}, theirs={"body": "Cache TTL is 30s."})
    path = git_repo / MEMDIR / f"{memory_id}.md"
    before = path.read_bytes()
    result = cli("resolve", memory_id)
    assert result.rc == 3
    assert "semantic conflict" in result.err and "body: both sides changed the text differently" in result.err
    assert path.read_bytes() == before
    assert f"{MEMDIR}/{memory_id}.md" in cli("resolve").out  # still conflicted


def test_identity_must_agree(cli: Any, git_repo: Path) -> None:
    memory_id = conflict(git_repo, ours={"scope_key": "project__other__0123456789ab"},
                         theirs={"scope_key": "project__third__ba9876543210"})  # fmt: skip
    result = cli("resolve", memory_id)
    assert result.rc == 3 and "identity must agree" in result.err


def test_scalar_conflict_is_semantic(cli: Any, git_repo: Path) -> None:
    memory_id = conflict(git_repo, ours={"status": "deprecated"}, theirs={"status": "archived"})
    result = cli("resolve", memory_id)
    assert result.rc == 3 and "status:" in result.err


def test_rebase_time_conflict(cli: Any, git_repo: Path) -> None:
    memory_id = new_ulid()
    _write(git_repo, _memory(git_repo, id=memory_id), "base")
    git("switch", "-q", "-c", "feature", cwd=git_repo)
    _edit(git_repo, memory_id, "feature tags", tags=["cache", "ttl", "mine"])
    git("switch", "-q", "main", cwd=git_repo)
    _edit(git_repo, memory_id, "main tags", tags=["cache", "ttl", "upstream"])
    git("switch", "-q", "feature", cwd=git_repo)
    proc = subprocess.run(["git", "rebase", "main"], cwd=git_repo, capture_output=True, text=True)
    assert proc.returncode != 0
    result = cli("resolve", memory_id)
    assert result.rc == 0, result.err
    assert merged(git_repo, memory_id).tags == ["cache", "ttl", "upstream", "mine"]
    env = {**os.environ, "GIT_EDITOR": "true"}
    subprocess.run(["git", "rebase", "--continue"], cwd=git_repo, check=True, env=env, capture_output=True)
    assert git("status", "--porcelain", cwd=git_repo).strip() == ""


def test_merge_labels_outside_a_rebase(git_repo: Path) -> None:
    import pygit2

    from openmemex.git.resolve import side_labels

    repo = pygit2.Repository(str(git_repo))
    assert side_labels(repo) == ("ours (HEAD)", "theirs (being merged)")


@pytest.mark.parametrize("with_driver", [True, False])
def test_merge_driver_in_git_merge(cli: Any, git_repo: Path, with_driver: bool) -> None:
    if with_driver:
        result = cli("setup")
        assert result.rc == 0 and "merge.openmemex.driver configured" in result.out
        git("add", MEMDIR, cwd=git_repo)
        git("commit", "-q", "-m", "driver", cwd=git_repo)
        assert cli("setup").out.count("already configured") == 1  # idempotent
    memory_id = new_ulid()
    _write(git_repo, _memory(git_repo, id=memory_id), "base")
    git("switch", "-q", "-c", "feature", cwd=git_repo)
    _edit(git_repo, memory_id, "theirs", status="deprecated")
    git("switch", "-q", "main", cwd=git_repo)
    _edit(git_repo, memory_id, "ours", importance="high")
    proc = subprocess.run(["git", "merge", "--no-edit", "feature"], cwd=git_repo, capture_output=True, text=True)
    if with_driver:
        assert proc.returncode == 0, proc.stdout + proc.stderr
        memory = merged(git_repo, memory_id)
        assert (memory.importance, memory.status) == ("high", "deprecated")
        assert git("status", "--porcelain", cwd=git_repo).strip() == ""
    else:
        assert proc.returncode != 0


def test_setup_keeps_a_foreign_driver(cli: Any, git_repo: Path) -> None:
    git("config", "merge.openmemex.driver", "my-own-tool %O %A %B", cwd=git_repo)
    result = cli("setup")
    assert result.rc == 0 and "left unchanged" in result.err
    assert git("config", "merge.openmemex.driver", cwd=git_repo).strip() == "my-own-tool %O %A %B"


def test_merge_driver_conflict_leaves_markers_and_resolve_still_works(cli: Any, git_repo: Path) -> None:
    assert cli("setup").rc == 0
    git("add", MEMDIR, cwd=git_repo)
    git("commit", "-q", "-m", "driver", cwd=git_repo)
    memory_id = new_ulid()
    _write(git_repo, _memory(git_repo, id=memory_id), "base")
    git("switch", "-q", "-c", "feature", cwd=git_repo)
    _edit(git_repo, memory_id, "theirs", body="Cache TTL is 30s.")
    git("switch", "-q", "main", cwd=git_repo)
    _edit(git_repo, memory_id, "ours", body="Cache TTL is 90s.")
    proc = subprocess.run(["git", "merge", "feature"], cwd=git_repo, capture_output=True, text=True)
    assert proc.returncode != 0 and "semantic conflict" in proc.stderr
    text = (git_repo / MEMDIR / f"{memory_id}.md").read_text()
    assert "<<<<<<<" in text and "Cache TTL is 90s." in text and "Cache TTL is 30s." in text
    result = cli("resolve", memory_id)
    assert result.rc == 3  # stages 1/2/3 are still there: the same semantic conflict is reported


def test_rebase_labels_in_a_rebase(cli: Any, git_repo: Path) -> None:
    import pygit2

    from openmemex.git.resolve import side_labels

    memory_id = new_ulid()
    _write(git_repo, _memory(git_repo, id=memory_id), "base")
    git("switch", "-q", "-c", "feature", cwd=git_repo)
    _edit(git_repo, memory_id, "feature", body="mine")
    git("switch", "-q", "main", cwd=git_repo)
    _edit(git_repo, memory_id, "main", body="upstream")
    git("switch", "-q", "feature", cwd=git_repo)
    assert subprocess.run(["git", "rebase", "main"], cwd=git_repo, capture_output=True).returncode != 0
    labels = side_labels(pygit2.Repository(str(git_repo)))
    assert labels == ("upstream (being rebased onto)", "your commit (being replayed)")
    result = cli("resolve", memory_id)
    assert result.rc == 3 and "upstream (being rebased onto)" in result.err


_BASE = "Cache TTL is 60s.\n\nSecond paragraph stays.\n"
_CHUNK = ("z" * 99 + "\n") * 11_000  # 1.1 MB
OVER_THE_LIMIT = {
    # their side grew past the 2 MB every reader refuses while both changed the tags
    "one side": ({"tags": ["cache", "ttl", "ours"]},
                 {"tags": ["cache", "ttl", "theirs"], "body": _BASE + "\n" + ("y" * 99 + "\n") * 25_000},
                 "is too large (2.5 MB > 2 MB limit)"),
    # each side fits (1.1 MB), their field-level merge does not (2.2 MB)
    "the merge": ({"tags": ["cache", "ours"], "body": _CHUNK + "\n" + _BASE},
                  {"tags": ["cache", "theirs"], "body": _BASE + "\n" + _CHUNK},
                  "2 MB every reader accepts"),
}  # fmt: skip


@pytest.mark.parametrize("case", OVER_THE_LIMIT)
def test_a_merge_over_the_size_limit_is_never_staged(cli: Any, git_repo: Path, case: str) -> None:
    """`resolve` must not write and stage a file `show` cannot read and `check` fails."""
    ours, theirs, message = OVER_THE_LIMIT[case]
    memory_id = conflict(git_repo, base={"body": _BASE}, ours=ours, theirs=theirs)
    path = git_repo / MEMDIR / f"{memory_id}.md"
    before = path.read_bytes()
    result = cli("resolve", memory_id)
    assert result.rc == 3 and message in result.err, result.err
    assert path.read_bytes() == before
    assert f"{MEMDIR}/{memory_id}.md" in cli("resolve").out  # still conflicted, nothing staged
