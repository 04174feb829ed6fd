"""The review ladder: propose, promote, reject, resubmit (scenarios 21, 65, 66, 68)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

ID = re.compile(r"\b[0-7][0-9A-HJKMNP-TV-Z]{25}\b")


def _id(result: Any) -> str:
    assert result.rc == 0, result.err
    return ID.findall(result.out)[-1]


def test_propose_copies_into_outbox(cli: Any, git_repo: Path) -> None:
    personal = _id(cli("add", "prefer squash merges for small fixes", "--scope", "personal"))
    result = cli("propose", personal, "--to", "project")
    copy = _id(result)
    assert result.out.startswith(f"proposed {personal} → {copy}  [draft]")
    shown = json.loads(cli("show", copy, "--json").out)
    assert shown["visibility"] == "internal" and shown["derived_from"] == personal
    assert shown["scope"] == "project" and shown["location"] == "outbox"
    assert shown["review_history"][0]["to"] == "draft" and shown["proposed_by"] == "Test User"
    assert json.loads(cli("show", personal, "--json").out)["visibility"] == "private"  # original untouched
    assert copy in cli("sync-status").out


def test_propose_all_or_nothing(cli: Any, git_repo: Path, data_root: Path) -> None:
    personal = _id(cli("add", "a personal fact", "--scope", "personal"))
    result = cli("propose", personal, "01ZZZZZZZZZZZZZZZZZZZZZZZZ", "--to", "project")
    assert result.rc == 1
    outbox = [p for p in data_root.rglob("*.md") if "personal" not in str(p)]
    assert outbox == []
    assert cli("propose", personal, "--to", "org").rc == 2


def test_local_approve(cli: Any, git_repo: Path) -> None:
    personal = _id(cli("add", "solo dev decision", "--scope", "personal"))
    copy = _id(cli("propose", personal, "--to", "project", "--local-approve"))
    shown = json.loads(cli("show", copy, "--json").out)
    assert shown["review_state"] == "approved" and shown["approved_by"] == "Test User"
    assert cli("submit", copy).out.startswith(f"submitted {copy} [approved]")


def test_promote_ladder_and_history(cli: Any, git_repo: Path) -> None:
    draft = _id(cli("add", "the payments queue is FIFO"))
    refused = cli("promote", draft)
    assert refused.rc == 1 and "still a draft" in refused.err
    cli("submit", draft)
    assert cli("promote", draft, "--by", "bo").out.startswith(f"promote {draft}: proposed → approved")
    published = cli("promote", draft)
    assert published.out.startswith(f"promote {draft}: approved → published")
    text = (git_repo / ".ai" / "open-memex" / f"{draft}.md").read_text()
    assert "review_state: published" in text and "approved_by: bo" in text
    history = json.loads(cli("show", draft, "--json").out)["review_history"]
    assert [(h["from"], h["to"]) for h in history] == [("draft", "proposed"), ("proposed", "approved"), ("approved", "published")]
    terminal = cli("promote", draft)
    assert terminal.rc == 1 and "terminal" in terminal.err


def test_reject_needs_note_and_resubmit(cli: Any, git_repo: Path) -> None:
    memory = _id(cli("add", "retry every request three times"))
    cli("submit", memory)
    assert cli("promote", memory, "--reject").rc == 2
    rejected = cli("promote", memory, "--reject", "--note", "only idempotent requests")
    assert rejected.out.startswith(f"promote {memory}: proposed → rejected")
    assert cli("promote", memory).rc == 1
    again = cli("promote", memory, "--resubmit", "--note", "scoped to GETs")
    assert again.out.startswith(f"promote {memory}: rejected → proposed")
    shown = json.loads(cli("show", memory, "--json").out)
    assert shown["review_note"] == "scoped to GETs" and len(shown["review_history"]) == 3


def test_superseding_published_re_enters_review(cli: Any, git_repo: Path) -> None:
    memory = _id(cli("add", "deploy window is 9-11"))
    cli("submit", memory)
    cli("promote", memory)
    cli("promote", memory)
    new = _id(cli("supersede", memory, "deploy window is 10-12"))
    shown = json.loads(cli("show", new, "--json").out)
    assert shown["review_state"] == "proposed" and shown["location"] == "repo"
    assert cli("promote", new).out.startswith(f"promote {new}: proposed → approved")


def test_personal_memories_are_never_reviewed(cli: Any, git_repo: Path) -> None:
    personal = _id(cli("add", "mine only", "--scope", "personal"))
    result = cli("promote", personal)
    assert result.rc == 1 and "personal" in result.err


def test_the_reviewer_name_is_one_masked_line(cli: Any, git_repo: Path) -> None:
    """``--by`` goes into a file the user is told to commit: a token pasted there is masked as
    a note is, and a line break (which would show as a review step of its own) is refused."""
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    memory = _id(cli("add", "the reviewer name is kept on one line"))
    assert cli("submit", memory).rc == 0
    path = git_repo / ".ai" / "open-memex" / f"{memory}.md"
    before = path.read_text()
    forged = cli("promote", memory, "--reject", "--note", "n", "--by", "eve\nT: proposed → approved  (forged)")
    assert forged.rc == 2 and "the reviewer name (by) holds a line break" in forged.err
    assert path.read_text() == before
    result = cli("promote", memory, "--by", f"  eve   {token} ")
    assert result.rc == 0, result.err
    assert token not in result.out and token not in path.read_text()
    assert "approved_by: \"eve ghp_" in path.read_text()
    assert json.loads(cli("show", memory, "--json").out)["review_history"][-1]["by"].startswith("eve ghp_")
    personal = _id(cli("add", "a personal fact proposed by someone", "--scope", "personal"))
    proposed = cli("propose", personal, "--to", "project", "--by", f"bo {token}")
    assert proposed.rc == 0 and token not in json.dumps(json.loads(cli("show", _id(proposed), "--json").out))
