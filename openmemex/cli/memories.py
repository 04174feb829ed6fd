"""Memory commands: add, search, list, show, supersede, status, forget.

The read commands' bodies are in ``reads.py`` (shared with the fast path, issue 11); here
they keep their signatures and docstrings, which cyclopts turns into options and help."""

from __future__ import annotations

from . import reads
from .output import Count, Flag, Text, emit_json, note, open_context, out, split_list


def add(
    text: Text,
    /,
    *,
    scope: str = "project",
    type: str = "fact",
    tags: str | None = None,
    aliases: str | None = None,
    source: str = "cli",
    importance: str = "normal",
    alias: str | None = None,
    target: str | None = None,
    json: Flag = False,
) -> int:
    """Save a memory.

    Secrets are masked in place (first 4 characters kept) and <private>…</private> becomes
    [REDACTED] before anything is written. Identical text is not saved twice; near
    duplicates are pointed out. Project memories land in the outbox as drafts until
    you submit them.

    Parameters
    ----------
    text
        The memory text (Markdown).
    scope
        project (default: this repository's outbox) or personal (never leaves this machine).
    type
        fact, preference, decision, constraint, todo, knowledge, howto, gotcha, lesson, observation, reference.
    tags
        Comma-separated tags, e.g. "auth,oauth".
    aliases
        Up to 4 alternate phrasings, separated by ";" (searchable).
    source
        Provenance: user, tool, keyword, inference, import, cli.
    importance
        low, normal or high (a ranking hint).
    alias
        A name this memory defines (with --target): searches for either are also run
        with the other, e.g. --alias PSP --target "payment service provider".
    target
        What --alias stands for.
    json
        Print one JSON document.
    """
    from ..write import add_memory

    with open_context() as ctx:
        result = add_memory(
            ctx, text, scope=scope, type=type, tags=split_list(tags), aliases=split_list(aliases, ";"),
            source=source, importance=importance, alias=alias, target=target,
        )  # fmt: skip
    if json:
        emit_json(result.to_json())
        return 0
    if result.status == "exists":
        out(f"already exists: id={result.id} (identical content — not duplicated)")
        return 0
    out(f"saved {result.id} [{result.scope}] -> {result.path}")
    _notices(result.masked, result.private_spans)
    for similar in result.similar:
        note(
            f"similar memory exists (score {similar.score:.2f}): id={similar.id} — {similar.snippet[:80]}; "
            f"if the new one replaces it: open-memex supersede {similar.id} \"…\""
        )
    return 0


def _notices(masked: list[str], private_spans: int) -> None:
    if masked:
        note(f"secret masked ({', '.join(masked)}): first 4 characters kept, the rest replaced with x")
    if private_spans:
        note(f"{private_spans} <private> span(s) stored as [REDACTED]")


def search(
    query: Text,
    /,
    *,
    scope: str = "both",
    type: str | None = None,
    limit: Count = 8,
    explain: Flag = False,
    embeddings: bool | None = None,
    json: Flag = False,
) -> int:
    """Find memories by full-text search.

    English words are stemmed, Chinese is matched by character pairs; a memory is also
    found by the curated synonyms of its words (deploy/ship/部署, db/数据库, …) and by the
    alias/target pairs memories define.

    Among comparably relevant hits, reviewed project knowledge ranks first, then personal
    and proposed memories, then project drafts — a clearly better draft still ranks above
    a weak reviewed hit. Superseded memories answer with their newest version; retracted
    and archived ones are hidden (see --explain).

    Parameters
    ----------
    query
        Free text; quotes, AND/OR/NOT, * and - are treated as plain words.
    scope
        project, personal, both (default) or all (every scope in the data root).
    type
        Only this memory type.
    limit
        At most this many hits (1–50, default 8).
    explain
        Show the FTS expression, alias rewrites, each hit's raw score, tier, lane and why it
        ranks where it does, and what lifecycle hid.
    embeddings
        Use the embeddings lane for this search (--no-embeddings: BM25 only). Default: the
        `embeddings` config key (off unless set).
    json
        Print one JSON document.
    """
    return reads.search(query, scope=scope, type=type, limit=limit, explain=explain, embeddings=embeddings, json=json)


def list_(
    *,
    scope: str = "project",
    type: str | None = None,
    limit: Count = 20,
    include: str = "active",
    json: Flag = False,
) -> int:
    """List memories, newest first, numbered across sections.

    Parameters
    ----------
    scope
        project (default), personal, both or all.
    type
        Only this memory type.
    limit
        At most this many per section (1–100, default 20); the rest is counted.
    include
        active (default: active and deprecated) or all (also superseded, retracted, archived).
    json
        Print one JSON document.
    """
    return reads.list_(scope=scope, type=type, limit=limit, include=include, json=json)


def show(memory_id: str, /, *, json: Flag = False) -> int:
    """Print one memory file (frontmatter and body).

    Parameters
    ----------
    memory_id
        The memory's id (or a unique prefix of at least 6 characters).
    json
        Print the fields as one JSON document.
    """
    return reads.show(memory_id, json=json)


def supersede(
    memory_id: str,
    text: Text,
    /,
    *,
    type: str | None = None,
    tags: str | None = None,
    aliases: str | None = None,
    alias: str | None = None,
    target: str | None = None,
    json: Flag = False,
) -> int:
    """Replace a memory; the old one is kept as history.

    Parameters
    ----------
    memory_id
        The memory to replace.
    text
        The new text.
    type
        New type (default: the old one).
    tags
        New comma-separated tags (default: carried over).
    aliases
        New ";"-separated aliases (default: carried over).
    alias
        The name the new memory defines, with --target (default: the old pair; "" for none).
    target
        What --alias stands for (default: the old pair's).
    json
        Print one JSON document.
    """
    from ..write import supersede as run_supersede

    with open_context() as ctx:
        result = run_supersede(
            ctx, memory_id, text, type=type,
            tags=split_list(tags) if tags is not None else None,
            aliases=split_list(aliases, ";") if aliases is not None else None, alias=alias, target=target,
        )  # fmt: skip
    if json:
        emit_json(result.to_json())
        return 0
    out(f"superseded {result.replaced} → {result.id}")
    _notices(result.masked, result.private_spans)
    return 0


def status(memory_id: str, new_status: str, /, *, json: Flag = False) -> int:
    """Set a memory's status (retracted is one-way).

    Parameters
    ----------
    memory_id
        The memory to change.
    new_status
        active, deprecated, retracted or archived.
    json
        Print one JSON document.
    """
    from ..lifecycle import set_status

    with open_context() as ctx:
        change = set_status(ctx, memory_id, new_status)
    if json:
        emit_json(change.to_json())
        return 0
    out(f"status {change.memory.id} → {change.new}" + (" (unchanged)" if change.old == change.new else ""))
    if change.in_repo:
        note("this memory lives in the repository: commit and push the change so the team sees it")
    return 0


def forget(memory_id: str, /, *, soft: Flag = False, json: Flag = False) -> int:
    """Delete a memory, or hide it with --soft (one-way).

    Parameters
    ----------
    memory_id
        The memory to forget.
    soft
        Keep the file but retract it: hidden from search and lists, cannot be undone.
    json
        Print one JSON document.
    """
    from ..lifecycle import forget as run_forget

    with open_context() as ctx:
        gone = run_forget(ctx, memory_id, soft=soft)
    if json:
        emit_json(gone.to_json())
        return 0
    if gone.soft:
        state = "already hidden" if gone.already else "hidden"
        out(f"{state} {gone.id} (retracted — one-way; save it again with `open-memex add` if needed)")
        if gone.in_repo:
            note("the retraction is a local edit of a repository file: commit and push it — until then the team still sees it")
    else:
        out(f"deleted {gone.id}")
        for path in gone.copies:
            note(f"its other copy went too: {path}")
        if gone.in_repo:
            note("the file was in the repository: commit the deletion so the team's copy goes too")
    if gone.relinked:
        note(f"supersede chain closed around it: {', '.join(gone.relinked)} updated")
    return 0
