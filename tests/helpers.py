"""Small helpers shared by tests (import as ``from tests.helpers import …``)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from openmemex.ids import new_ulid

EXAMPLE = """---
id: {id}
schema_version: 2
scope: project # personal | project | org (ownership: WHO owns it)
scope_key: project__my-repo__9f2c1a4b8e3d # storage identity (repo-derived, or "personal")
visibility: internal # private | internal | shared (read access: WHO may read)
project_name: my-repo
type: decision # content kind: what the memory IS (§3.2)
role: knowledge # knowledge | instruction — how it may be USED (§3.3)
importance: normal # low | normal | high (ranking hint; replaces 1–10 priority)
status: active # active | superseded | deprecated | retracted | archived
tags: [auth, oauth]
aliases: ["oauth login flow"] # optional: capture-time phrasing variants (D61)
source: user # provenance: user | tool | keyword | inference | import
created_at: "2026-09-26T12:00:00Z" # RFC 3339, never bare epoch
updated_at: "2026-09-26T12:00:00Z"
supersedes: null # on the NEW memory → points BACK to what it replaces
superseded_by: null # on the OLD memory → points FORWARD to its replacement
review_state: approved # draft | proposed | approved | rejected | published (promotion)
proposed_by: stoneskin
approved_by: stoneskin
derived_from: null # for propose-copies: the personal memory this came from
review_note: null
review_history: [] # append-only [{{at, by, from, to, note}}] audit trail
x_team_owner: platform   # a field from a newer writer
---

We chose OAuth device flow for the CLI login because headless boxes have no browser.
"""


def write_example(folder: Path, memory_id: str | None = None, body_extra: str = "") -> Path:
    memory_id = memory_id or new_ulid()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{memory_id}.md"
    path.write_text(EXAMPLE.format(id=memory_id) + body_extra, encoding="utf-8")
    return path


PERSONAL = """---
id: {id}
schema_version: 2
scope: personal # who owns it
scope_key: personal
visibility: private
project_name: ""
type: {type}
role: knowledge
importance: normal
status: {status}
tags: [notes]
source: user
created_at: "2026-09-26T12:00:00Z"
updated_at: "2026-09-26T12:00:00Z"
supersedes: {supersedes}
superseded_by: {superseded_by}
review_state: draft
proposed_by: null
approved_by: null
derived_from: null
review_note: null
review_history: []
{extra}---

{body}
"""


def personal_text(
    memory_id: str, body: str = "a perfectly valid note", *, type: str = "fact", status: str = "active",
    supersedes: str | None = None, superseded_by: str | None = None, extra: str = "",
) -> str:  # fmt: skip
    """A valid hand-written personal memory; ``extra`` adds raw frontmatter lines."""
    return PERSONAL.format(
        id=memory_id, body=body, type=type, status=status, supersedes=supersedes or "null",
        superseded_by=superseded_by or "null", extra=extra,
    )  # fmt: skip


def drain_pty(main: int) -> bytes:
    """Everything written to a pseudo-terminal whose child side is closed, then close it
    (reading past the end raises EIO on Linux: that is the end)."""
    chunks = []
    while True:
        try:
            chunk = os.read(main, 4096)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(main)
    return b"".join(chunks)


def merge_branches(repo: Path, rel: str, base: str, ours: str, theirs: str) -> subprocess.CompletedProcess[str]:
    """Commit ``base`` at ``rel``, ``theirs`` on a branch ``feature`` and ``ours`` on ``main``,
    then ``git merge feature`` (with whatever merge driver the repository has set up)."""
    from tests.conftest import git

    path = repo / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(base)
    git("add", rel, cwd=repo)
    git("commit", "-q", "-m", "base", cwd=repo)
    git("switch", "-q", "-c", "feature", cwd=repo)
    path.write_text(theirs)
    git("commit", "-q", "-am", "theirs", cwd=repo)
    git("switch", "-q", "main", cwd=repo)
    path.write_text(ours)
    git("commit", "-q", "-am", "ours", cwd=repo)
    env = {**os.environ, "GIT_EDITOR": "true"}
    return subprocess.run(["git", "merge", "--no-edit", "feature"], cwd=repo, capture_output=True, text=True, env=env)
