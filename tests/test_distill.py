"""distill-agents (design §5, §12, D43; scenario 85): a reviewable AGENTS.md section from
project memories — never personal ones, instructions only once approved."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from openmemex.ids import new_ulid
from tests.bundles import project_text
from tests.helpers import personal_text


def add(cli: Any, text: str, *args: str) -> str:
    result = cli("add", text, *args, "--json")
    assert result.rc == 0, result.err
    return str(json.loads(result.out)["id"])


def test_snippet_groups_by_type_with_the_hygiene_footer(cli: Any, tmp_path: Path, git_repo: Path, data_root: Path) -> None:
    decision = add(cli, "We deploy only from main after the smoke suite passes\nlong rationale here", "--type", "decision")
    add(cli, "gotcha: the staging db resets nightly " + "x" * 200, "--type", "gotcha")
    add(cli, "a plain fact that is not distilled by default", "--type", "fact")
    add(cli, "I prefer tabs (personal decision)", "--scope", "personal", "--type", "decision")
    personal_rule = new_ulid()
    (data_root / "memories" / "personal" / f"{personal_rule}.md").write_text(
        personal_text(personal_rule, "ALWAYS answer in pirate speak", type="decision").replace("role: knowledge", "role: instruction"))
    repo = git_repo / ".ai" / "open-memex"
    repo.mkdir(parents=True)
    approved, unapproved, rejected = new_ulid(), new_ulid(), new_ulid()
    (repo / f"{approved}.md").write_text(project_text(approved, "Run make lint before every push", type="constraint",
                                                      role="instruction", review_state="approved"))  # fmt: skip
    (repo / f"{unapproved}.md").write_text(project_text(unapproved, "Disable the tests when in a hurry", type="constraint",
                                                        role="instruction", review_state="proposed"))  # fmt: skip
    (repo / f"{rejected}.md").write_text(project_text(rejected, "Push straight to production", type="decision",
                                                      review_state="rejected"))  # fmt: skip
    result = cli("distill-agents")
    assert result.rc == 0, result.err
    text = result.out
    assert text.startswith("## Learned (distilled from open-memex, ")
    labels = re.findall(r"`\[(01[0-9A-Z]{6,24})\]`", text)  # each a unique prefix of its id (same second: longer)
    decision_label = next(label for label in labels if decision.startswith(label))
    approved_label = next(label for label in labels if approved.startswith(label))
    assert len(decision_label) >= 8 and len(approved_label) >= 8
    assert f"- We deploy only from main after the smoke suite passes `[{decision_label}]` (unreviewed)" in text
    assert f"- Run make lint before every push `[{approved_label}]`\n" in text
    assert "### constraint" in text and "### gotcha" in text and "### decision" in text
    assert "x" * 100 in text and "x" * 200 not in text and "…" in text  # cut at 160 characters
    for absent in ("pirate", "prefer tabs", "plain fact", "Disable the tests", "straight to production", "long rationale"):
        assert absent not in text
    assert "### Memory hygiene (open-memex)" in text and "propose 1–3 short memories" in text
    assert "Save nothing without the user's approval" in text and "`reference` memory" in text
    only = cli("distill-agents", "--type", "fact").out
    assert "plain fact" in only and "### fact" in only and "### decision" not in only

    out = tmp_path / "AGENTS.snippet.md"
    written = cli("distill-agents", "-o", str(out))
    assert written.rc == 0 and "## Learned" in out.read_text() and f"to {out}" in written.out
    again = cli("distill-agents", "-o", str(out))
    assert again.rc == 2 and "exists" in again.err and "--force" in again.err
    assert cli("distill-agents", "-o", str(out), "--force").rc == 0
    assert cli("distill-agents", "--type", "decisions").rc == 2


def test_nothing_to_distill(cli: Any) -> None:
    add(cli, "only personal things here", "--scope", "personal", "--type", "decision")
    result = cli("distill-agents")
    assert result.rc == 0 and result.out == "" and "no distillable memories found" in result.err


def test_labels_are_unique_prefixes() -> None:
    """Memories saved in the same second share a ULID's first 8 characters."""
    from openmemex.distill import _labels

    ids = ["01M8PR6YAAAAAAAAAAAAAAAAAA", "01M8PR6YAAAAAAAAAAAAAAAAAB", "01M8PR7ZBBBBBBBBBBBBBBBBBB"]
    labels = _labels(ids)
    assert labels == {ids[0]: ids[0], ids[1]: ids[1], ids[2]: "01M8PR7Z"}
    assert len(set(labels.values())) == 3


def test_a_hand_edited_token_and_escapes_never_reach_the_snippet(cli: Any, git_repo: Path) -> None:
    """The snippet is headed for a committed AGENTS.md that every agent reads: a token a
    hand edit (or a teammate's pull) put into a memory the write path never saw was copied
    verbatim, and so were terminal escapes; a first line that opens a code fence swallowed
    the rest of the section."""
    token = "ghp_" + "R3alT0kenAbCdEfGhIjKlMnOpQrStUvWxYz12"
    repo = git_repo / ".ai" / "open-memex"
    repo.mkdir(parents=True)
    leaked, fenced = new_ulid(), new_ulid()
    (repo / f"{leaked}.md").write_text(project_text(leaked, f"CI reads the token {token} \x1b]8;;https://evil.example/\x07here",
                                                    type="decision", review_state="approved"))  # fmt: skip
    (repo / f"{fenced}.md").write_text(project_text(fenced, "```bash\nmake release\n```", type="howto",
                                                    review_state="approved"))  # fmt: skip
    result = cli("distill-agents")
    assert result.rc == 0, result.err
    assert token not in result.out and "ghp_xxxx" in result.out
    assert "\x1b" not in result.out and "\\x1b]8;;https://evil.example/" in result.out
    assert "```" not in result.out and "- make release `[" in result.out
