"""``check`` (issue 9, item 5) on the memory-PR repositories of ``fixtures/repos/``: a clean
PR passes, each violation class fails with its own check name and fix, and the ``github``
format prints valid workflow annotations. The review and chain rules are also pinned one by
one on small in-memory inputs."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from openmemex.check import CheckInput, Entry, chain_problems, check_memory_pr, review_problems
from openmemex.memfile import parse_memory
from tests.conftest import git

ROOT = Path(__file__).resolve().parent.parent


def _fixtures() -> ModuleType:
    spec = importlib.util.spec_from_file_location("memory_prs", ROOT / "fixtures" / "repos" / "memory_prs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


prs = _fixtures()


@pytest.fixture
def pr_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> object:
    """``pr_repo("scenario")`` builds that memory-PR repository and makes it the cwd."""

    def build(scenario: str) -> Path:
        repo = prs.build(scenario, tmp_path / scenario)
        monkeypatch.chdir(repo)
        return Path(repo)

    return build


def test_a_clean_memory_pr_passes(cli: object, pr_repo: object, monkeypatch: pytest.MonkeyPatch) -> None:
    from openmemex.cli import shared

    pr_repo("clean")  # type: ignore[operator]
    result = cli("check", "--base", "main")  # type: ignore[operator]
    assert (result.rc, result.out, result.err) == (0, "", "")  # quiet unless a person is watching
    monkeypatch.setattr(shared, "_at_terminal", lambda: True)
    result = cli("check", "--base", "main")  # type: ignore[operator]
    assert re.fullmatch(r"open-memex: check passed: 4 memory files changed since [0-9a-f]{12}\n", result.err)
    assert cli("check").rc == 0  # type: ignore[operator]  (every memory file in HEAD)


# One test per violation class: the check that must fire and words its line must carry.
VIOLATIONS = {
    "schema": ("schema", 8, "field 'type' must be one of", "fix the frontmatter"),
    "id-filename": ("id-filename", 2, f"id {prs.NEW2} does not match the file name {prs.NEW}.md", f"name the file {prs.NEW2}.md"),
    "personal-in-repo": ("personal-in-repo", 4, "a personal memory is inside the repository", "git rm --cached"),
    "private-in-repo": ("private-in-repo", 6, "visibility: private is inside the repository", "visibility: internal"),
    "secret": ("secret", 31, "possible secret (github-pat) at column 38: ghp_xxxx", "rotate it"),
    "review-jump": ("review-transition", 18, "review_state is published but review_history records no step to published", "open-memex promote"),
    "review-unrecorded": ("review-transition", 18, "review_state is approved but review_history records no step to approved", "open-memex promote"),
    "review-history-rewritten": ("review-history", 23, "entry 1 of the base version is missing, changed or out of order", "in their order and only add new ones"),
    "chain-one-sided": ("supersede-chain", 16, f"says supersedes: {prs.REPLACED}, but .ai/open-memex/{prs.REPLACED}.md says superseded_by: nothing",
                        f"superseded_by: {prs.NEW}"),
    "chain-missing-target": ("supersede-chain", 16, "supersedes: 01J0000000000000000000GN01 is not in the repository", "or clear supersedes"),
    "chain-two-replacements": ("supersede-chain", 16, f"{prs.REPLACED} is replaced twice (by {prs.NEW} and {prs.NEW2})", "keep one replacement"),
    "duplicate-id": ("duplicate-id", 2, f"id {prs.PUBLISHED} is also in .ai/open-memex/{prs.PUBLISHED}.md", "keep one copy"),
    "published-edited": ("reviewed-edit", 41, f"body of published memory {prs.PUBLISHED} changed in place: published is terminal",
                         f"open-memex supersede {prs.PUBLISHED}"),
    "arrives-published": ("review-claim", 18, f"{prs.NEW} is new in this pull request but already published: publishing is the merge",
                          "pr-status --apply` on its branch"),
}  # fmt: skip


def test_an_approval_recorded_on_the_pr_branch_passes(cli: object, pr_repo: object) -> None:
    """The documented flow: the PR is approved, `pr-status --apply` writes approved on its
    branch, the commit is pushed, CI checks the PR. It failed with review-claim."""
    pr_repo("arrives-approved")  # type: ignore[operator]
    result = cli("check", "--base", "main")  # type: ignore[operator]
    assert result.rc == 0, result.out


@pytest.mark.parametrize("scenario", sorted(VIOLATIONS))
def test_each_violation_class_is_caught(cli: object, pr_repo: object, scenario: str) -> None:
    check_name, line, message, fix = VIOLATIONS[scenario]
    pr_repo(scenario)  # type: ignore[operator]
    result = cli("check", "--base", "main")  # type: ignore[operator]
    assert result.rc == 1
    ours = [row for row in result.out.splitlines() if f": {check_name}: " in row]
    assert ours, result.out
    assert any(f":{line}: {check_name}: " in row and message in row and " — " in row and fix in row.split(message, 1)[1] for row in ours), ours
    assert "open-memex: check failed:" in result.err
    assert "ghp_" not in result.out or "ghp_xxxxxxxxxxxx" in result.out  # a secret is shown masked only


def test_github_format_prints_valid_annotations(cli: object, pr_repo: object) -> None:
    pr_repo("chain-two-replacements")  # type: ignore[operator]
    result = cli("check", "--base", "main", "--format", "github")  # type: ignore[operator]
    lines = result.out.splitlines()
    assert result.rc == 1 and len(lines) == 3 and result.err == ""
    pattern = re.compile(r"^::error file=\.ai/open-memex/01J[0-9A-Z]{23}\.md,line=\d+,title=open-memex check%3A supersede-chain::[^\n]+ — [^\n]+$")
    assert all(pattern.match(line) for line in lines), lines


def test_json_format(cli: object, pr_repo: object) -> None:
    pr_repo("secret")  # type: ignore[operator]
    doc = json.loads(cli("check", "--base", "main", "--format", "json").out)  # type: ignore[operator]
    assert (doc["ok"], doc["mode"], doc["counts"]) == (False, "base", {"secret": 1})
    assert doc["checked"] == [f".ai/open-memex/{prs.NEW}.md"] and re.fullmatch(r"[0-9a-f]{40}", doc["base"])
    assert set(doc["problems"][0]) == {"path", "line", "check", "message", "fix"}


def test_only_the_changed_files_are_judged(cli: object, pr_repo: object) -> None:
    """A broken memory already on main is not this PR's problem; ``check`` without --base
    (every memory file in HEAD) does report it."""
    repo = pr_repo("clean")  # type: ignore[operator]
    git("switch", "-q", "main", cwd=repo)
    (repo / ".ai/open-memex/broken.md").write_text("---\nid: [\n---\n")
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "broken on main", cwd=repo)
    git("switch", "-q", "-c", "other-pr", cwd=repo)
    (repo / ".ai/open-memex" / f"{prs.NEW}.md").write_text(prs.memory(prs.NEW, "A fine note.", state="proposed", history=prs.SUBMIT))
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "a fine note", cwd=repo)
    assert cli("check", "--base", "main").rc == 0  # type: ignore[operator]
    everything = cli("check")  # type: ignore[operator]
    assert everything.rc == 1 and ".ai/open-memex/broken.md:" in everything.out and ": schema: invalid YAML" in everything.out


def test_paths_are_checked_on_disk_against_head(cli: object, pr_repo: object) -> None:
    """What the pre-commit hook does: the files as they will be committed, HEAD as the base."""
    repo = pr_repo("clean")  # type: ignore[operator]
    path = f".ai/open-memex/{prs.PUBLISHED}.md"
    assert cli("check", path).rc == 0  # type: ignore[operator]
    (repo / path).write_text(prs.memory(prs.PUBLISHED, "Money is stored in minor units (cents).", history=prs.REVIEWED[2:]))
    result = cli("check", path)  # type: ignore[operator]
    assert result.rc == 1 and f"{path}:23: review-history: review_history was rewritten" in result.out
    assert "(1 memory file given)" in result.err
    skipped = cli("check", ".ai/open-memex/../../README.md", "--format", "json")  # type: ignore[operator]
    assert json.loads(skipped.out)["checked"] == ["README.md"]  # named explicitly: judged as a memory file


def test_paths_judge_chains_against_what_the_commit_holds(cli: object, pr_repo: object) -> None:
    """The pre-commit hook is given the staged files; the replacement they point at must be
    in the commit too, not merely on disk (untracked, or unstaged with `git rm --cached`)."""
    repo = pr_repo("clean")  # type: ignore[operator]
    replaced, replacement = f".ai/open-memex/{prs.REPLACED}.md", f".ai/open-memex/{prs.NEW2}.md"
    assert cli("check", replaced).rc == 0  # type: ignore[operator]
    git("rm", "-q", "--cached", replacement, cwd=repo)
    assert (repo / replacement).exists()
    result = cli("check", replaced)  # type: ignore[operator]
    assert result.rc == 1 and f"superseded_by: {prs.NEW2} is not in the repository" in result.out, result.out
    git("add", replacement, cwd=repo)
    assert cli("check", replaced).rc == 0  # type: ignore[operator]


def test_deleting_a_memory_that_others_point_at_breaks_the_chain(cli: object, pr_repo: object) -> None:
    repo = pr_repo("clean")  # type: ignore[operator]
    git("rm", "-q", f".ai/open-memex/{prs.NEW2}.md", cwd=repo)
    git("commit", "-q", "-m", "drop the replacement", cwd=repo)
    result = cli("check", "--base", "main")  # type: ignore[operator]
    assert result.rc == 1
    assert f"superseded_by: {prs.NEW2} is not in the repository" in result.out


def test_usage_errors(cli: object, pr_repo: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pr_repo("clean")  # type: ignore[operator]
    unknown = cli("check", "--base", "origin/nope")  # type: ignore[operator]
    assert unknown.rc == 2
    assert unknown.err == ("open-memex: error: unknown --base 'origin/nope': no such commit here — in GitHub Actions "
                           "check out with `fetch-depth: 0`; elsewhere `git fetch origin <branch>`\n")  # fmt: skip
    monkeypatch.chdir(tmp_path)
    outside = cli("check")  # type: ignore[operator]
    assert outside.rc == 2 and "is not inside a git repository — run check in a clone, or name the memory files" in outside.err


def test_git_memex_check_runs_as_a_process(pr_repo: object) -> None:
    repo = pr_repo("review-jump")  # type: ignore[operator]
    proc = subprocess.run([sys.executable, "-c", "from openmemex.cli.entry import git_main; git_main()", "check", "--base", "main"],
                          cwd=repo, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert proc.returncode == 1 and ": review-transition: " in proc.stdout


# -- the rules, one by one -----------------------------------------------------------------------
def parsed(**kwargs: object) -> object:
    return parse_memory(prs.memory(prs.NEW, "text", **kwargs).encode())


@pytest.mark.parametrize(("state", "history"), [
    ("proposed", []),  # supersede: the replacement re-enters review with no entry yet (D64)
    ("approved", [(None, "draft", "alice"), ("draft", "approved", "alice")]),  # propose --local-approve
    ("approved", [("draft", "proposed", "a"), ("proposed", "approved", "b"), ("approved", "approved", "a")]),  # submit of an approved draft
    ("proposed", [("draft", "proposed", "a"), ("proposed", "rejected", "b"), ("rejected", "proposed", "a")]),  # resubmitted
    ("published", [("draft", "proposed", "a"), ("proposed", "approved", "b"), ("approved", "published", "b")]),  # pr-status --apply
    # a remark made on a branch that had not seen the approval, merged in by time (D29): no step
    ("approved", [("draft", "proposed", "a"), ("proposed", "approved", "b"), ("proposed", "proposed", "c")]),
])  # fmt: skip
def test_legal_review_histories_pass(state: str, history: list[tuple[str | None, str, str]]) -> None:
    memory = parsed(state=state, history=history)
    assert review_problems("m.md", "", memory, None) == []  # type: ignore[arg-type]


@pytest.mark.parametrize(("state", "history", "words"), [
    ("published", [("draft", "published", "a")], "records draft → published, which skips the review ladder"),
    ("published", [("draft", "proposed", "a"), ("proposed", "published", "b")], "records proposed → published"),
    ("approved", [("draft", "proposed", "a")], "review_state is approved but review_history records no step to approved"),
    ("proposed", [("draft", "proposed", "a"), ("proposed", "rejected", "b")], "the last review_history step records → rejected"),
    ("proposed", [(None, "approved", "a"), ("approved", "proposed", "a")], "records nothing → approved"),
    # a remark records no step: it cannot stand for the approval (a supersede replacement starts with none, D64)
    ("approved", [("approved", "approved", "mallory")], "review_history records no step to approved"),
    ("published", [("draft", "proposed", "a"), ("published", "published", "mallory")], "records no step to published"),
    # a remark after a real step does not hide it
    ("approved", [("draft", "proposed", "a"), ("proposed", "approved", "b"), ("approved", "rejected", "c"),
                  ("rejected", "rejected", "d")], "the last review_history step records → rejected"),
])  # fmt: skip
def test_illegal_review_histories_fail(state: str, history: list[tuple[str | None, str, str]], words: str) -> None:
    memory = parsed(state=state, history=history)
    problems = review_problems("m.md", "", memory, None)  # type: ignore[arg-type]
    assert any(words in p.message for p in problems), [p.message for p in problems]


def test_a_merge_may_interleave_entries_but_never_drop_or_reorder_the_bases() -> None:
    """Two branches' histories merge by time (D29): a remark one branch made before the other's
    approval reached it stands before that approval; the base's entries stay, in order."""
    import copy

    base = parsed(state="approved", history=[("draft", "proposed", "a"), ("proposed", "approved", "b")])
    proposed, approved = base.review_history  # type: ignore[attr-defined]
    remark = {"at": "2026-01-05T12:00:00Z", "by": "c", "from": "proposed", "to": "proposed", "note": "see PR #42"}
    merged = copy.deepcopy(base)
    merged.review_history = [proposed, remark, approved]  # type: ignore[attr-defined]
    assert review_problems("m.md", "", merged, base) == []  # type: ignore[arg-type]
    swapped = copy.deepcopy(base)
    swapped.review_history = [approved, proposed]  # type: ignore[attr-defined]
    (problem,) = [p for p in review_problems("m.md", "", swapped, base) if p.check == "review-history"]  # type: ignore[arg-type]
    assert "entry 2 of the base version is missing, changed or out of order" in problem.message


def test_history_append_only_against_the_base() -> None:
    base = parsed(state="proposed", history=[("draft", "proposed", "a")])
    appended = parsed(state="approved", history=[("draft", "proposed", "a"), ("proposed", "approved", "b")])
    assert review_problems("m.md", "", appended, base) == []  # type: ignore[arg-type]
    reworded = parsed(state="approved", history=[("draft", "proposed", "someone else"), ("proposed", "approved", "b")])
    (problem,) = review_problems("m.md", "", reworded, base)  # type: ignore[arg-type]
    assert problem.check == "review-history" and "entry 1 of the base version is missing, changed or out of order" in problem.message


def test_chain_loops_and_self_pointers() -> None:
    a, b = "01J0000000000000000000AAA1", "01J0000000000000000000BBB1"
    heads = {
        "a.md": Entry("a.md", "", a, supersedes=b, superseded_by=b, status="superseded"),
        "b.md": Entry("b.md", "", b, supersedes=a, superseded_by=a, status="superseded"),
        "c.md": Entry("c.md", "", "01J0000000000000000000CCC1", supersedes="01J0000000000000000000CCC1"),
    }
    messages = [p.message for p in chain_problems(heads, {a, "01J0000000000000000000CCC1"})]
    assert f"supersede chain loops: {a} → {b}" in messages
    assert "01J0000000000000000000CCC1 names itself in supersedes" in messages


def test_superseded_without_a_successor() -> None:
    text = prs.memory(prs.REPLACED, "old", status="superseded").encode()
    problems = check_memory_pr(CheckInput([(f".ai/open-memex/{prs.REPLACED}.md", text)]))
    assert [p.message for p in problems] == [f"{prs.REPLACED} has status superseded but no superseded_by"]


def test_the_fast_path_prints_exactly_what_the_full_cli_prints(cli: object, pr_repo: object, capsys: pytest.CaptureFixture[str]) -> None:
    from openmemex.cli import shared

    pr_repo("chain-two-replacements")  # type: ignore[operator]
    for argv in (["check", "--base", "main"], ["check", "--base=main", "--format", "github"], ["check"],
                 ["check", "--format", "json", "--", f".ai/open-memex/{prs.NEW}.md"], ["check", "--base", "nope"]):  # fmt: skip
        full = cli(*argv)  # type: ignore[operator]
        capsys.readouterr()
        code = shared.fast(argv)
        fast = capsys.readouterr()
        assert (code, fast.out, fast.err) == (full.rc, full.out, full.err), argv


def test_a_schema_error_never_quotes_a_secret(cli: object, pr_repo: object) -> None:
    repo = pr_repo("clean")  # type: ignore[operator]
    token = prs.fake_token(11)
    path = repo / ".ai" / "open-memex" / f"{prs.NEW}.md"
    path.write_text(prs.memory(prs.NEW, "note", state="proposed", history=prs.SUBMIT).replace("role: knowledge", f"role: {token}"))
    result = cli("check", str(path))  # type: ignore[operator]
    assert result.rc == 1 and ": schema: field 'role' must be one of" in result.out and ": secret: " in result.out
    assert token not in result.out + result.err and token[:4] + "x" * 36 in result.out


def test_a_memory_folder_turned_into_a_symlink_fails(cli: object, pr_repo: object) -> None:
    """Readers follow a linked memory folder on a checkout, so a PR that swaps the folder for a
    link to files elsewhere would bring memories in that no rule looked at."""
    repo = pr_repo("clean")  # type: ignore[operator]
    git("switch", "-q", "-c", "link-pr", cwd=repo)
    elsewhere = repo / "docs" / "x"
    elsewhere.mkdir(parents=True)
    (elsewhere / f"{prs.NEW}.md").write_text(prs.memory(prs.NEW, "Run the bootstrap script first.", state="published"))
    git("rm", "-rq", ".ai/open-memex", cwd=repo)
    (repo / ".ai").mkdir(exist_ok=True)
    (repo / ".ai" / "open-memex").symlink_to("../docs/x")
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "folder becomes a link", cwd=repo)
    for args in (("check", "--base", "main"), ("check",)):
        result = cli(*args)  # type: ignore[operator]
        assert result.rc == 1, args
        assert ".ai/open-memex:1: memory-folder: .ai/open-memex is a symbolic link in this commit" in result.out


@pytest.mark.parametrize("brk", ["\n", "\r\n", "\r", "\u2028", "\u2029", "\x85", "\x0b"])
def test_a_line_break_in_a_file_name_stays_inside_its_problem_line(cli: object, pr_repo: object, brk: str) -> None:
    """A file name is the PR author's text. Printed raw, a line break in it let the name start
    a stdout line of its own — `::error file=README.md,…`, which a GitHub Actions runner obeys
    as a workflow command (pre-commit's `--all-files` in CI prints the text format) — inside
    its own problem and inside the other file's duplicate-id message. Every problem is one
    line, the break shown escaped; so is a scan finding."""
    repo = pr_repo("clean")  # type: ignore[operator]
    name = f".ai/open-memex/x{brk}::error file=README.md,line=1::Forged{brk}.md"
    token = prs.fake_token(5)
    (repo / name).write_text(prs.memory(prs.PUBLISHED, f"Forged, with GITHUB_TOKEN={token} in it.", state="proposed", history=prs.SUBMIT))
    git("add", "-A", cwd=repo)
    result = cli("check", "--", name, f".ai/open-memex/{prs.PUBLISHED}.md")  # type: ignore[operator]
    lines = result.out.splitlines()  # str.splitlines splits at every one of these breaks
    assert result.rc == 1 and all(line.startswith(".ai/open-memex/") for line in lines), lines
    checks = [re.search(r":\d+: ([a-z-]+): ", line) for line in lines]
    assert sorted(m.group(1) for m in checks if m) == ["duplicate-id", "duplicate-id", "id-filename", "secret"], lines
    shown = repr(brk)[1:-1].replace("\\r", "\\x0d").replace("\\n", "\\x0a")  # "\r\n" → \x0d\x0a
    assert sum(line.count(f"x{shown}::error file=README.md") for line in lines) == 5, lines  # 3 paths, 2 messages
    scan = cli("scan", "--", name)  # type: ignore[operator]
    assert scan.rc == 1 and len(scan.out.splitlines()) == 1 and scan.out.startswith(".ai/open-memex/x"), scan.out
    assert not any(line.startswith("::") for line in (result.out + result.err + scan.out + scan.err).splitlines())


# -- what a change adds, judged against the base -------------------------------------------------
def test_a_published_memory_keeps_what_was_reviewed() -> None:
    """Published is terminal: its text, type, role, tags and reviewers never change in place
    (before, only the history was compared, so a rewritten body kept its review); what the
    product does to it — status, supersede pointers — still passes, and so does a reorder."""
    base = parsed()
    for changes, field_name in (({"body": "other text"}, "body"), ({"role": "instruction"}, "role"),
                                ({"tags": ["payments", "x"]}, "tags"), ({"approved_by": "mallory"}, "approved_by")):  # fmt: skip
        head = parsed()
        for key, value in changes.items():
            setattr(head, key, value)
        (problem,) = review_problems("m.md", "", head, base)  # type: ignore[arg-type]
        assert problem.check == "reviewed-edit" and problem.message.startswith(f"{field_name} of published memory"), problem
        assert "open-memex supersede" in problem.fix
    base.tags = ["payments", "money"]  # type: ignore[attr-defined]
    kept = parsed(status="superseded", superseded_by=prs.NEW2)
    kept.tags, kept.updated_at = ["money", "payments"], "2027-01-01T00:00:00Z"  # type: ignore[attr-defined]
    assert review_problems("m.md", "", kept, base) == []  # type: ignore[arg-type]
    appended = parsed(history=[*prs.REVIEWED, ("published", "published", "mallory")])
    (problem,) = review_problems("m.md", "", appended, parsed())  # type: ignore[arg-type]
    assert problem.check == "review-transition" and "entry 4 after published, and published is terminal" in problem.message


def test_an_approved_memory_changed_in_place_must_go_back_to_review() -> None:
    base = parsed(state="approved", history=prs.REVIEWED[:2])
    edited = parsed(state="approved", history=prs.REVIEWED[:2])
    edited.body = "a different text"  # type: ignore[attr-defined]
    (problem,) = review_problems("m.md", "", edited, base)  # type: ignore[arg-type]
    assert problem.check == "reviewed-edit" and "its approval covered the old version" in problem.message and "--resubmit" in problem.fix
    back = parsed(state="proposed", history=[*prs.REVIEWED[:2], ("approved", "rejected", "bob"), ("rejected", "proposed", "alice")])
    back.body = "a different text"  # type: ignore[attr-defined]
    assert review_problems("m.md", "", back, base) == []  # type: ignore[arg-type]  (rejected, revised, resubmitted)


@pytest.mark.parametrize(("state", "history", "arrives", "claimed"), [
    ("proposed", prs.SUBMIT, "pr", False),
    ("proposed", [], "pr", False),  # a supersede's replacement (D64)
    ("rejected", [*prs.SUBMIT, ("proposed", "rejected", "bob")], "pr", False),
    ("approved", prs.REVIEWED[:2], "pr", False),  # pr-status --apply records the PR's approval before the merge
    ("approved", [(None, "draft", "a"), ("draft", "approved", "a"), ("approved", "approved", "a")], "pr", False),
    ("approved", [(None, "draft", "a"), ("draft", "approved", "a"), ("approved", "approved", "a")], "commit", False),  # solo (D25)
    ("published", prs.REVIEWED, "commit", True),  # publishing is a merge
    ("published", prs.REVIEWED, "pr", True),
    ("published", prs.REVIEWED, None, False),  # no base (every file in HEAD): nothing arrives
])  # fmt: skip
def test_what_a_new_memory_may_arrive_as(state: str, history: list[tuple[str | None, str, str]], arrives: str | None, claimed: bool) -> None:
    problems = review_problems("m.md", "", parsed(state=state, history=history), None, arrives=arrives)  # type: ignore[arg-type]
    assert [p.check for p in problems] == (["review-claim"] if claimed else []), problems


def test_a_renamed_memory_keeps_its_base_version(cli: object, pr_repo: object) -> None:
    """`git mv` (the id-filename fix) is no arrival: the deleted name's version is the base."""
    repo = pr_repo("clean")  # type: ignore[operator]
    git("mv", f".ai/open-memex/{prs.PUBLISHED}.md", ".ai/open-memex/renamed.md", cwd=repo)
    git("commit", "-q", "-m", "rename", cwd=repo)
    result = cli("check", "--base", "main")  # type: ignore[operator]
    assert result.rc == 1 and [row.split(": ")[1] for row in result.out.splitlines()] == ["id-filename"], result.out


def test_the_normal_review_flows_pass_check(cli: object, git_repo: Path) -> None:
    """No false alarm on what the product writes: submit → PR; after the merge the approval
    and publication recorded (promote, as pr-status --apply does); then supersede, status
    and soft forget of published memories — against the merge base (CI) and HEAD (pre-commit)."""

    def new(text: str) -> str:
        return str(json.loads(cli("add", text, "--scope", "project", "--json").out)["id"])  # type: ignore[operator]

    def merge(branch: str) -> None:
        git("switch", "-q", "main", cwd=git_repo)
        git("merge", "-q", "--no-ff", branch, "-m", f"merge {branch}", cwd=git_repo)

    def passes(branch: str) -> None:
        git("add", "-A", cwd=git_repo)
        files = [str(p.relative_to(git_repo)) for p in sorted((git_repo / ".ai" / "open-memex").glob("*.md"))]
        commit = cli("check", *files)  # type: ignore[operator]  (the commit, as pre-commit checks it)
        assert commit.rc == 0, commit.out
        git("commit", "-q", "-m", branch, cwd=git_repo)
        result = cli("check", "--base", "main")  # type: ignore[operator]  (the PR, CI)
        assert result.rc == 0, result.out

    ids = [new(f"Fact number {n} about deploys.") for n in range(4)]
    git("switch", "-q", "-c", "submit", cwd=git_repo)
    assert cli("submit", *ids).rc == 0  # type: ignore[operator]
    assert cli("check", "--base", "main").rc == 0  # type: ignore[operator]
    merge("submit")
    git("switch", "-q", "-c", "record", cwd=git_repo)
    for mid in ids[:3]:
        assert cli("promote", mid, "--by", "bob").rc == cli("promote", mid, "--by", "bob").rc == 0  # type: ignore[operator]
    assert cli("promote", ids[3], "--by", "bob").rc == 0  # type: ignore[operator]
    passes("record")
    merge("record")
    git("switch", "-q", "-c", "change", cwd=git_repo)
    for args in (("supersede", ids[0], "Fact number 0 about deploys, revised."), ("status", ids[1], "deprecated"),
                 ("forget", ids[2], "--soft"), ("promote", ids[3], "--by", "bob")):  # fmt: skip
        assert cli(*args).rc == 0, args  # type: ignore[operator]
    passes("change")
