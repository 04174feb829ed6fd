"""Reading a file out of git objects (``git/objects.py``): every shape a tree entry takes, and
a real partial clone (``git clone --filter=blob:none``), whose missing blobs git fetches on
demand and libgit2 cannot: each reader names the git command that fetches them, and that
command works."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pygit2
import pytest

from openmemex.git.objects import MissingObject, blob_data, file_at
from tests.conftest import git
from tests.test_check import prs


def _shapes(tmp_path: Path) -> pygit2.Repository:
    """A commit holding a file, an executable, a symbolic link, a folder and a submodule."""
    repo = tmp_path / "shapes"
    (repo / "d").mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=repo)
    (repo / "d" / "a.md").write_text("hello\n")
    (repo / "run.sh").write_text("#!/bin/sh\n")
    (repo / "run.sh").chmod(0o755)
    os.symlink("a.md", repo / "d" / "link.md")
    git("add", ".", cwd=repo)
    git("commit", "-q", "-m", "files", cwd=repo)
    head = git("rev-parse", "HEAD", cwd=repo).strip()
    git("update-index", "--add", "--cacheinfo", f"160000,{head},sub", cwd=repo)
    git("commit", "-q", "-m", "a submodule", cwd=repo)
    return pygit2.Repository(str(repo))


def test_file_at_tells_each_shape_of_entry(tmp_path: Path) -> None:
    repo = _shapes(tmp_path)
    tree = repo.head.peel(pygit2.Tree)
    found = file_at(tree, "d/a.md")
    assert found is not None and (found.data, found.mode) == (b"hello\n", pygit2.enums.FileMode.BLOB)
    assert str(found.id) == git("rev-parse", "HEAD:d/a.md", cwd=Path(repo.workdir)).strip()
    executable = file_at(tree, "run.sh")
    assert executable is not None and executable.mode == pygit2.enums.FileMode.BLOB_EXECUTABLE
    link = file_at(tree, "d/link.md")
    assert link is not None and (link.data, link.mode) == (b"a.md", pygit2.enums.FileMode.LINK)
    for absent in ("d", "sub", "nope.md", "d/a.md/x", "d/../run.sh", "", "/d/a.md", "d//a.md"):
        assert file_at(tree, absent) is None, absent
    assert file_at(None, "d/a.md") is None


@pytest.fixture
def partial_clone(tmp_path: Path) -> Path:
    """The "clean" memory PR, cloned with ``--filter=blob:none`` over file://: the checkout
    fetched HEAD's blobs, not the base versions of the memory files the PR changes."""
    source = Path(prs.build("clean", tmp_path / "source"))
    git("config", "uploadpack.allowFilter", "true", cwd=source)
    clone = tmp_path / "clone"
    git("clone", "-q", "--filter=blob:none", source.as_uri(), str(clone), cwd=tmp_path)
    return clone


def _missing_in(clone: Path) -> tuple[str, str]:
    """A memory file the PR changed whose base version this clone lacks: (path, blob id)."""
    base = git("merge-base", "origin/main", "HEAD", cwd=clone).strip()
    changed = git("diff", "--name-only", "--no-renames", "--diff-filter=M", base, "HEAD", cwd=clone).split()
    lacking = git("rev-list", "--objects", "--missing=print", base, cwd=clone).split()
    for rel in changed:
        oid = git("ls-tree", "--object-only", base, rel, cwd=clone).strip()
        if f"?{oid}" in lacking:
            return rel, oid
    raise AssertionError("the partial clone holds every base version: the fixture no longer tests anything")


def test_a_blob_the_clone_lacks_is_named_with_the_fetch(partial_clone: Path) -> None:
    rel, oid = _missing_in(partial_clone)
    repo = pygit2.Repository(str(partial_clone))
    base = repo.revparse_single(git("merge-base", "origin/main", "HEAD", cwd=partial_clone).strip())
    with pytest.raises(MissingObject) as raised:
        file_at(base.peel(pygit2.Tree), rel, " in the base")
    assert raised.value.rel == rel and f"{rel} in the base: this clone does not hold that version" in str(raised.value)
    assert f"git cat-file -p {oid} >/dev/null" in str(raised.value)
    with pytest.raises(MissingObject):
        blob_data(repo, pygit2.Oid(hex=oid), rel)
    subprocess.run(f"git cat-file -p {oid} >/dev/null", shell=True, cwd=partial_clone, check=True)  # the named fix
    found = file_at(pygit2.Repository(str(partial_clone)).revparse_single(str(base.id)).peel(pygit2.Tree), rel)
    assert found is not None and found.data == git("show", f"{oid}", cwd=partial_clone).encode()


def _clone(tmp_path: Path, *options: str) -> Path:
    source = Path(prs.build("clean", tmp_path / "source"))
    git("config", "uploadpack.allowFilter", "true", cwd=source)
    clone = tmp_path / "clone"
    git("clone", "-q", *options, source.as_uri(), str(clone), cwd=tmp_path)
    return clone


@pytest.mark.parametrize("options", [("--filter=blob:none",), ("--filter=tree:0",), ("--filter=blob:none", "--sparse")],
                         ids=["blob-none", "tree-0", "sparse"])  # fmt: skip
def test_check_base_in_a_partial_clone_names_one_fetch_for_all(tmp_path: Path, options: tuple[str, ...]) -> None:
    """A CI checkout with a filter: one line naming the command that fetches every version
    check --base reads (not a raw object id and a traceback); after it, the check runs. A
    sparse clone whose cone leaves the memory folder out lacks HEAD's files too; a tree:0
    clone lacks the folders themselves."""
    partial_clone = _clone(tmp_path, *options)
    run = [sys.executable, "-m", "openmemex", "check", "--base", "origin/main"]
    proc = subprocess.run(run, cwd=partial_clone, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and proc.stdout == "", proc.stdout + proc.stderr
    (line,) = proc.stderr.splitlines()
    assert "this clone does not hold that version (a partial clone" in line and "Traceback" not in line
    command = line.split("run `", 1)[1].split("`", 1)[0]
    assert command.startswith("git diff ") and command.endswith(" HEAD -- .ai/open-memex >/dev/null && git archive "
                                                                "HEAD .ai/open-memex >/dev/null")  # fmt: skip
    subprocess.run(command, shell=True, cwd=partial_clone, check=True)
    proc = subprocess.run(run, cwd=partial_clone, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _damage(repo: Path, rel: str) -> str:
    """Overwrite HEAD's loose object of ``rel`` with bytes that do not inflate; its id."""
    oid = git("rev-parse", f"HEAD:{rel}", cwd=repo).strip()
    obj = repo / ".git" / "objects" / oid[:2] / oid[2:]
    obj.chmod(0o644)
    obj.write_bytes(b"damaged")
    return oid


def test_a_damaged_object_is_named_as_such(tmp_path: Path) -> None:
    repo = _shapes(tmp_path)
    oid = _damage(Path(repo.workdir), "d/a.md")
    from openmemex.git.objects import DamagedObject

    fresh = pygit2.Repository(repo.workdir)
    with pytest.raises(DamagedObject, match=r"d/a\.md in HEAD: git's copy of it cannot be read .*`git fsck`"):
        file_at(fresh.head.peel(pygit2.Tree), "d/a.md", " in HEAD")
    with pytest.raises(DamagedObject):
        blob_data(fresh, pygit2.Oid(hex=oid), "d/a.md")


def test_the_session_start_hook_keeps_its_context_past_a_damaged_object(git_repo: Path) -> None:
    """One approved instruction whose committed copy is damaged counts as not vetted (withheld,
    as any instruction the default branch does not vouch for); the others still reach the agent."""
    import json

    from openmemex.context import Context
    from openmemex.memfile import serialize
    from openmemex.model import Memory

    with Context.load(git_repo) as ctx:
        key = ctx.project.key
    history = [{"at": "2026-01-02T00:00:00Z", "by": "bob", "from": "draft", "to": "proposed", "note": None},
               {"at": "2026-01-03T00:00:00Z", "by": "alice", "from": "proposed", "to": "approved", "note": None}]  # fmt: skip
    folder = git_repo / ".ai" / "open-memex"
    folder.mkdir(parents=True)
    rels = []
    for n, body in enumerate(["Always run migrations with --lock-timeout 5s.", "The deploy script is ops/deploy.sh."]):
        memory_id = f"01J00000000000000000000DM{n}"
        memory = Memory(id=memory_id, scope="project", scope_key=key, body=body, type="decision", visibility="internal",
                        project_name="widgets", role="instruction", tags=["deploy"], created_at="2026-01-01T00:00:00Z",
                        updated_at="2026-01-01T00:00:00Z", review_state="approved", proposed_by="bob",
                        approved_by="alice", review_history=history)  # fmt: skip
        (folder / f"{memory_id}.md").write_text(serialize(memory))
        rels.append(f".ai/open-memex/{memory_id}.md")
    git("add", "-A", cwd=git_repo)
    git("commit", "-q", "-m", "memories", cwd=git_repo)
    _damage(git_repo, rels[1])
    payload = json.dumps({"session_id": "s1", "cwd": str(git_repo), "hook_event_name": "SessionStart", "source": "startup"})
    proc = subprocess.run([sys.executable, "-m", "openmemex", "hook", "session-start"], cwd=git_repo, input=payload,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0 and "internal error" not in proc.stderr, proc.stderr
    context = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "--lock-timeout 5s" in context and "ops/deploy.sh" not in context, context


def test_a_commit_in_a_sparse_partial_clone_is_not_held_up(tmp_path: Path) -> None:
    """The pre-commit check reads the memory folder as the index holds it; outside the sparse
    cone its blobs were never fetched. The new memory is checked, the commit goes through."""
    clone = _clone(tmp_path, "--filter=blob:none", "--sparse")
    git("sparse-checkout", "set", "no-such-folder", cwd=clone)
    rel = ".ai/open-memex/01J0000000000000000000SPA1.md"
    (clone / rel).parent.mkdir(parents=True, exist_ok=True)
    (clone / rel).write_text(prs.memory("01J0000000000000000000SPA1", "Sparse clones keep the memory folder out.",
                                        state="proposed", history=[("draft", "proposed", "alice")]))  # fmt: skip
    git("add", "--sparse", rel, cwd=clone)
    proc = subprocess.run([sys.executable, "-m", "openmemex", "check", rel], cwd=clone, capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_damaged_root_tree_names_git_fsck(git_repo: Path, cli: object) -> None:
    """HEAD's root tree overwritten with bytes that do not inflate: the commands that read it
    say so in one line naming ``git fsck`` (which names the object), not a generic pointer to
    ``git status``; the local commands go on."""
    assert cli("add", "a fact kept while the repository is damaged").rc == 0  # type: ignore[operator]
    git("commit", "-q", "--allow-empty", "-m", "a commit whose tree is then damaged", cwd=git_repo)
    oid = git("rev-parse", "HEAD^{tree}", cwd=git_repo).strip()
    obj = git_repo / ".git" / "objects" / oid[:2] / oid[2:]
    obj.chmod(0o644)
    obj.write_bytes(b"damaged")
    for command in (["check"], ["sync-status"]):
        result = cli(*command)  # type: ignore[operator]
        assert result.rc == 1 and "Traceback" not in result.err, result.err
        assert "an object of the repository is damaged or missing: `git fsck` names it" in result.err, result.err
    assert "while the repository is damaged" in cli("search", "fact kept").out  # type: ignore[operator]
