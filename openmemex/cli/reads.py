"""The read commands — ``search``, ``list``, ``show``, ``where`` — without the CLI framework.

Agents and people run these all day, so they must start near Python's own floor rather than
pay for cyclopts and rich (≈ 100 ms, issue 11) before they can answer. The bodies live here,
free of both: the cyclopts commands (``memories.py``, ``store_cmds.py``) keep the signatures
and docstrings (``--help``) and call these functions, and ``entry.py`` hands a plain command
line straight to :func:`fast`, so both ways print the same bytes and exit with the same codes.
Anything :func:`fast` is not sure about — help, an unknown or repeated option, a missing
argument, a query starting with ``-`` — goes to the full CLI (``argv.py``).
``OPEN_MEMEX_NO_FASTPATH=1`` sends every command line there (the tests compare both ways).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from .argv import Spec, count, parse, text
from .output import emit_json, open_context, out, warn


def search(query: str, /, *, scope: str = "both", type: str | None = None, limit: int = 8, explain: bool = False,
           embeddings: bool | None = None, json: bool = False) -> int:  # fmt: skip
    from ..search import search as run_search
    from ..search import state_tag

    with open_context() as ctx:
        result = run_search(ctx, query, scope=scope, type=type, limit=limit, explain=explain, embeddings=embeddings)
    if json:
        emit_json(result.to_json())
        return 0
    if explain:
        out(f"fts: {result.expression or '(empty)'}")
        if result.left_out:
            out(f"left out, in half the index or more (bm25 gives them no weight): {', '.join(result.left_out)}")
        for rewrite in result.rewrites:
            out(f"alias round: {rewrite}")
        out(f"lanes: {', '.join(result.lanes)}; order: {result.rule}")
        out(
            f"candidates: {result.candidates}, hidden by lifecycle: {result.hidden_superseded} superseded, "
            f"{result.hidden_retracted} retracted/archived"
        )
    if not result.hits:
        out("(no matches)")
        return 0
    for hit in result.hits:
        tag = state_tag(hit.scope, hit.review_state, hit.status)
        label = f"[{'personal' if hit.scope == 'personal' else 'project'}/{hit.type}]"
        head = " ".join(p for p in (label, tag, hit.id) if p)
        line = f"{head}  {hit.snippet}"
        if explain:
            vector = f" cosine={hit.vector:.3f}" if hit.vector is not None else ""
            line += (f"\n    bm25={hit.bm25:.3f}{vector} lane={hit.lane} via={hit.matched_via} tier={hit.tier} "
                     f"final={hit.score:.3f}: {hit.reason}")  # fmt: skip
        out(line)
    return 0


def list_(*, scope: str = "project", type: str | None = None, limit: int = 20, include: str = "active",
          json: bool = False) -> int:  # fmt: skip
    from ..listing import list_memories, render

    with open_context() as ctx:
        listing = list_memories(ctx, scope=scope, type=type, limit=limit, include=include)
    if json:
        emit_json(listing.to_json())
    else:
        out(render(listing))
    return 0


def show(memory_id: str, /, *, json: bool = False) -> int:
    from ..lookup import locate
    from ..memfile import serialize

    with open_context() as ctx:
        memory, folder = locate(ctx, memory_id)
    if json:
        fields = {**memory.fields(), **memory.extra, "body": memory.body, "path": str(memory.path),
                  "location": folder.location}  # fmt: skip
        emit_json(fields)
    else:
        out(f"# {memory.path}")
        out(serialize(memory).rstrip("\n"))
    return 0


def where(*, json: bool = False) -> int:
    from .. import paths
    from ..context import Context

    with Context.load(warn=warn) as ctx:
        info = {
            "root": str(ctx.root),
            "root_from": paths.data_root_source(),
            "config": str(ctx.config.path) if ctx.config.exists else "(built-in defaults)",
            "memories": str(paths.memories_root(ctx.root)),
            "index": str(paths.index_path(ctx.root)),
            "project": ctx.project.key,
            "project_name": ctx.project.name,
            "outbox": str(ctx.outbox_dir),
            "repo_dir": str(ctx.repo_dir) if ctx.repo_dir else None,
            "personal": paths.PERSONAL_KEY,
            "manpath": str(paths.manpath()),
        }
    if json:
        emit_json(info)
        return 0
    for key in ("root", "config", "memories", "index", "project", "outbox", "repo_dir", "personal", "manpath"):
        value = info[key]
        if key == "repo_dir" and value is None:
            value = "(not in a git repository)"
        out(f"{key + ':':<10} {value}")
    return 0


# -- the fast path -------------------------------------------------------------------------------
# Each command's plain form, option for option its cyclopts signature in memories.py /
# store_cmds.py (tests/test_cli_fastpath.py holds the two side by side).
_JSON = {"--json": ("json", True)}
_SCOPE_TYPE_LIMIT = {"--scope": ("scope", text), "--type": ("type", text), "--limit": ("limit", count)}
COMMANDS: dict[str, tuple[Callable[..., int], Spec]] = {
    "search": (search, Spec(
        flags={**_JSON, "--explain": ("explain", True), "--embeddings": ("embeddings", True),
               "--no-embeddings": ("embeddings", False)},
        options=_SCOPE_TYPE_LIMIT, positionals=(1, 1))),
    "list": (list_, Spec(flags=_JSON, options={**_SCOPE_TYPE_LIMIT, "--include": ("include", text)})),
    "show": (show, Spec(flags=_JSON, positionals=(1, 1))),
    "where": (where, Spec(flags=_JSON)),
}  # fmt: skip


def fast(argv: list[str]) -> int | None:
    """Run a read command without cyclopts when its command line is plain, else None."""
    if not argv or argv[0] not in COMMANDS:
        return None
    command, spec = COMMANDS[argv[0]]
    parsed = parse(argv[1:], spec)
    if parsed is None:
        return None
    positionals, values = parsed
    from .pipes import finish
    from .shared import guarded
    from .tip import first_run_tip

    tip = first_run_tip(argv)
    if tip:
        sys.stderr.write(tip + "\n")
    return finish(guarded(lambda: _run(command, positionals, values)))


def _run(command: Callable[..., int], positionals: list[str], values: dict[str, Any]) -> int:
    from ..errors import IndexDamaged

    try:
        return command(*positionals, **values)
    except IndexDamaged:
        # the damaged index was moved aside before anything was written: answer from a
        # fresh one, once (docs/protocol.md, Consistency) — as the full CLI does
        return command(*positionals, **values)
