"""``open-memex distill-agents``: a proposed AGENTS.md section from the project's memories
(design §5, §12). An assist only — it prints a snippet for a person to review and merge
by hand; it never edits AGENTS.md.

AGENTS.md is committed and read by every agent in the repository, so only project
memories are candidates: personal ones — instructions above all — never appear (iron
rule 2), and an instruction enters only once it was approved or published (iron rule 1).
Rejected memories are left out; drafts are marked unreviewed. Each line is masked and made
terminal-safe as an MCP result is (``echo.for_transcript``): a file edited by hand or pulled
can hold a token the write path never saw, and this text is headed for git. The footer teaches the
checkpoint habit (§3.5) wherever the file lands — opencode reads AGENTS.md and never
sees the MCP handshake (D43).
"""

from __future__ import annotations

import time
from collections import defaultdict

from . import freshness
from .context import Context
from .echo import for_transcript
from .errors import UsageError
from .index import placeholders
from .model import TYPES
from .text import normalize_ws

DEFAULT_TYPES = ("decision", "constraint", "lesson", "gotcha", "howto")
DEFAULT_LIMIT = 30
MAX_LIMIT = 200
LINE_CHARS = 160
REVIEWED = ("approved", "published")

HYGIENE = """### Memory hygiene (open-memex)

- At checkpoints (the end of a work chunk, after the user commits, before the session ends),
  distill the session: propose 1–3 short memories with the useful conclusion — what was
  learned or decided, how a problem was solved, what to avoid, where the authoritative doc
  lives — not the transcript. Save nothing without the user's approval; saved proposals use
  `source: inference`.
- If the knowledge already lives in the project's docs, save a `reference` memory that
  points at the doc instead of copying it.
- Search memory before asking the user something the team may already have decided.
"""


def distill_agents(ctx: Context, types: list[str] | None = None, limit: int = DEFAULT_LIMIT,
                   now: float | None = None) -> tuple[str, int]:  # fmt: skip
    """The Markdown snippet and how many memories it holds ("" and 0 when none qualify)."""
    wanted = list(dict.fromkeys(types or DEFAULT_TYPES))
    for type in wanted:
        if type not in TYPES:
            raise UsageError(f"unknown type {type!r} — use one of: {', '.join(TYPES)}")
    if limit < 1:
        raise UsageError(f"--limit must be at least 1 (got {limit})")
    limit = min(limit, MAX_LIMIT)
    freshness.sync(ctx, "project")
    folders = ctx.folders("project")  # never "personal" or "both": iron rule 2
    dirs = [str(f.path) for f in folders]
    rows = ctx.conn.execute(
        f"SELECT id, type, role, review_state, content FROM memories WHERE dir IN ({placeholders(dirs)}) "
        f"AND scope = 'project' AND visibility != 'private' AND status = 'active' AND review_state != 'rejected' "
        f"AND type IN ({placeholders(wanted)}) AND (role != 'instruction' OR review_state IN ('approved', 'published')) "
        "ORDER BY location = 'repo' DESC, updated_at DESC, id",
        [*dirs, *wanted],
    ).fetchall()
    picked: dict[str, tuple[str, str, str]] = {}
    for row in rows:
        if row["id"] not in picked and len(picked) < limit:
            picked[row["id"]] = (row["type"], row["review_state"], row["content"])
    if not picked:
        return "", 0
    by_type: dict[str, list[str]] = defaultdict(list)
    labels = _labels(list(picked))
    for memory_id, (type, state, content) in picked.items():
        # a fence line would open a code block that swallows the rest of the section
        first = next((normalize_ws(line) for line in content.splitlines()
                      if line.strip() and not line.lstrip().startswith(("```", "~~~"))), "")  # fmt: skip
        first = for_transcript(first, rules=ctx.config.masking_rules)  # AGENTS.md is committed: masked, escapes shown
        if len(first) > LINE_CHARS:
            first = first[:LINE_CHARS].rstrip() + "…"
        mark = "" if state in REVIEWED else " (unreviewed)"
        by_type[type].append(f"- {first} `[{labels[memory_id]}]`{mark}")
    date = time.strftime("%Y-%m-%d", time.gmtime(time.time() if now is None else now))
    lines = [
        f"## Learned (distilled from open-memex, {date})",
        "",
        "<!-- Proposed by `open-memex distill-agents`. Review each line, keep what is true,",
        "     delete the rest, then merge it into AGENTS.md by hand. -->",
        "",
    ]
    for type in wanted:
        if by_type.get(type):
            lines.extend([f"### {type}", "", *by_type[type], ""])
    lines.append(HYGIENE)
    return "\n".join(lines), len(picked)


def _labels(ids: list[str]) -> dict[str, str]:
    """Each id's shortest prefix of at least 8 characters that no other listed id shares
    (`show` takes a prefix). Eight alone is a ULID's time to the second: memories saved in
    the same second would share it."""
    labels = {}
    for memory_id in ids:
        size = 8
        while size < len(memory_id) and any(o != memory_id and o.startswith(memory_id[:size]) for o in ids):
            size += 1
        labels[memory_id] = memory_id[:size]
    return labels
