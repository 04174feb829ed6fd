"""The one write path (design §3.4, D14, D73): every surface that saves a memory — CLI,
MCP tool, hook, import — calls ``add_memory`` or ``supersede``; none re-implements it."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Literal

from . import freshness, store
from .context import Context
from .errors import LifecycleError, MemexError, UsageError
from .ids import new_ulid, now_rfc3339
from .index import Folder, placeholders
from .lifecycle import key_folders, refuse_broken_chain, successor_missing
from .lookup import locked
from .model import (
    IMPORTANCE,
    MAX_ALIASES,
    MAX_TAGS,
    ROLES,
    SOURCES,
    TYPES,
    Memory,
    default_visibility,
    normalize_aliases,
    normalize_tags,
)
from .redact import RedactResult, redact
from .redact.engine import PRIVATE_REPLACEMENT
from .text import (
    EN_STOPWORDS,
    build_query,
    check_text,
    content_hash,
    has_cjk,
    has_visible,
    jaccard,
    normalize_ws,
    similarity_tokens,
)

NEAR_DUP = 0.8  # design §3.4
ECHO_THRESHOLD = 0.28  # D73, inclusive
ECHO_WINDOW_S = 600.0
MAX_SIMILAR = 3


@dataclass
class Similar:
    id: str
    score: float
    snippet: str


@dataclass
class WriteResult:
    status: Literal["saved", "exists", "refused"]
    id: str
    scope: str
    scope_key: str
    path: str
    masked: list[str] = field(default_factory=list)
    private_spans: int = 0
    similar: list[Similar] = field(default_factory=list)
    memory: Memory | None = None
    replaced: str | None = None  # supersede: the id that was replaced

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "status": self.status,
            "scope": self.scope,
            "scope_key": self.scope_key,
            "path": self.path,
            "masked": list(self.masked),
            "similar": [{"id": s.id, "score": round(s.score, 3)} for s in self.similar],
            **({"supersedes": self.replaced} if self.replaced else {}),
        }


def clean(ctx: Context, text: str) -> RedactResult:
    """The text exactly as it would be stored: ``<private>`` removed, secrets masked (D14)."""
    return redact(text, ctx.config.redact_patterns)


def _emptiness(content: str) -> str:
    """How a text with nothing visible is empty, for the refusal: "is empty" for spaces, else
    what it holds instead (a caller who sent ``\\u200b`` sees why it counts as nothing)."""
    if not content.strip():
        return "is empty"
    return "has no visible character (only zero-width, control or bidi characters) — write the fact in words"


def _check_choice(name: str, value: str, options: tuple[str, ...]) -> str:
    if value not in options:
        raise UsageError(f"unknown {name} {value!r} — use one of: {', '.join(options)}")
    return value


def _dirs(ctx: Context, folder: Folder) -> list[str]:
    """Folders that count as "the same scope" for dedup: a project's outbox and repo dir."""
    if folder.location == "personal":
        return [str(folder.path)]
    return [str(f.path) for f in ctx.folders("project")]


def add_memory(
    ctx: Context,
    content: str,
    *,
    scope: str = "project",
    type: str = "fact",
    tags: list[str] | str | None = None,
    aliases: list[str] | None = None,
    source: str = "cli",
    importance: str = "normal",
    role: str = "knowledge",
    guard_echo: bool = False,
    alias: str | None = None,
    target: str | None = None,
) -> WriteResult:
    """Redact, dedupe, write the file, then index it. ``guard_echo`` (agent tool paths)
    refuses a restatement of a keyword capture from the last 10 minutes (D73, ``says_more``)."""
    _check_choice("type", type, TYPES)
    _check_choice("source", source, SOURCES)
    _check_choice("importance", importance, IMPORTANCE)
    _check_choice("role", role, ROLES)
    folder = ctx.write_folder(scope)
    if not has_visible(content):  # spaces alone, or zero-width, control and bidi characters alone
        raise UsageError(f"nothing to save: the memory text {_emptiness(content)}")
    check_tag_count(tags)
    cleaned, masked, private = clean_all(ctx, content, tags, aliases)
    body, clean_tags, clean_aliases = cleaned
    if not ctx.config.values.get("captureAliases", True):
        clean_aliases = []
    pair = _clean_pair(ctx, alias, target, masked)
    # Dedup, echo check and write are one decision: under the scope's lock, eight
    # identical adds at once make one file and seven "exists" answers.
    with ctx.lock(folder.scope_key or ""):
        return _add_locked(ctx, folder, scope, body, clean_tags, clean_aliases, masked, private,
                           type=type, source=source, importance=importance, role=role, guard_echo=guard_echo,
                           pair=pair)  # fmt: skip


def _add_locked(
    ctx: Context, folder: Folder, scope: str, body: str, clean_tags: list[str], clean_aliases: list[str],
    masked: list[str], private: int, *, type: str, source: str, importance: str, role: str, guard_echo: bool,
    pair: tuple[str | None, str | None] = (None, None),
) -> WriteResult:  # fmt: skip
    freshness.sync(ctx, "personal" if folder.location == "personal" else "project")
    dirs = _dirs(ctx, folder)
    key = folder.scope_key or ""
    existing = exact_duplicate(ctx, body, dirs)
    if existing is not None:
        return WriteResult("exists", existing[0], scope, key, existing[1], masked, private)
    candidates = _candidates(ctx, body, dirs)
    tokens = similarity_tokens(body)
    if guard_echo:
        # Both scopes: the hook routes "remember for me …" to personal while an agent's
        # re-save of the same sentence defaults to the project (D73 backstop).
        now = time.time()
        both_folders = ctx.folders("both")
        freshness.sync_folders(ctx, both_folders)
        both = [str(f.path) for f in both_folders]
        # Only the hook's captures (source keyword): a memory the agent itself saved with
        # source user is one of its own writes, not a sentence it could not see stored.
        echoes = [
            Similar(r[0], score, r[2][:120])
            for r in (candidates if set(both) <= set(dirs) else _candidates(ctx, body, both))
            if r[3] == "keyword" and r[4] >= now - ECHO_WINDOW_S
            for captured in [similarity_tokens(r[2])]
            for score in [jaccard(tokens, captured)]
            if score >= ECHO_THRESHOLD and not says_more(tokens, captured)
        ]
        if echoes:
            echoes.sort(key=lambda s: -s.score)
            return WriteResult("refused", echoes[0].id, scope, key, "", masked, private, echoes[:MAX_SIMILAR])
    similar = [
        Similar(r[0], score, r[2][:120])
        for r in candidates
        for score in [jaccard(tokens, similarity_tokens(r[2]))]
        if score >= NEAR_DUP
    ]
    similar.sort(key=lambda s: -s.score)
    stamp = now_rfc3339()
    memory = Memory(
        id=new_ulid(),
        scope=scope,
        scope_key=key,
        body=body,
        type=type,
        visibility=default_visibility(scope),
        project_name=ctx.project.name if scope == "project" else "",
        role=role,
        importance=importance,
        tags=clean_tags,
        aliases=clean_aliases,
        source=source,
        created_at=stamp,
        updated_at=stamp,
        alias=pair[0],
        target=pair[1],
    )
    path = store.save(memory, folder.path, new=True)
    freshness.record(ctx, [(memory, folder)])
    return WriteResult("saved", memory.id, scope, key, str(path), masked, private, similar[:MAX_SIMILAR], memory)


# Words that frame a restatement rather than add to it ("the user prefers …", "remember: …").
FRAMING_WORDS = frozenset({"remember", "note", "noted", "user", "users", "team"})


def says_more(text: frozenset[str], captured: frozenset[str]) -> bool:
    """Whether a text has a word of its own beside a capture's (its ``similarity_tokens``):
    one that is no stopword, no framing word, and no inflection of a captured word (the
    first five letters decide: deploys/deploy, nightly/night). D73's guard refuses only a
    restatement — an overlap of 0.56 is also "We deploy the frontend service on Mondays"
    after "… the backend service on Fridays", a fact the capture does not hold, and the
    guard would tell the agent it was stored. CJK text counts its characters."""
    stems = {_stem(word) for word in captured}
    return any(
        _stem(word) not in stems
        for word in text
        if word not in EN_STOPWORDS and word not in FRAMING_WORDS and not (has_cjk(word) and len(word) > 1)
    )


def _stem(word: str) -> str:
    return word[:5]


def check_tag_count(tags: list[str] | str | None) -> None:
    """The tags given for a new text (add, supersede) are a few findable words; a file's or a
    bundle's are kept as they are."""
    count = len(normalize_tags(tags))
    if count > MAX_TAGS:
        raise UsageError(f"too many tags ({count} > {MAX_TAGS}) — keep the few words that help find it")


def clean_all(
    ctx: Context, content: str, tags: list[str] | str | None, aliases: list[str] | None
) -> tuple[tuple[str, list[str], list[str]], list[str], int]:
    """The admission barrier every write path shares (add, supersede, import): checked
    text, ``<private>`` removed and secrets masked in the body, tags and aliases.
    Returns ((body, tags, aliases), masked rule ids, number of private spans)."""
    check_text(content, "the memory text")
    for value in [*(normalize_tags(tags)), *(aliases or [])]:
        check_text(value, "a tag or alias")
    masked: list[str] = []
    result = clean(ctx, content.strip())
    masked.extend(result.rules)
    private = result.private_spans
    if private and not result.text.replace(PRIVATE_REPLACEMENT, "").strip():
        raise UsageError("nothing left to save: the text is all <private> — put what may be remembered outside the tags")

    def scrub(values: list[str]) -> list[str]:
        out = []
        for value in values:
            r = clean(ctx, value)
            masked.extend(x for x in r.rules if x not in masked)
            out.append(r.text)
        return out

    clean_tags = normalize_tags(scrub(normalize_tags(tags)))
    given = normalize_aliases(aliases, cap=None)
    if len(given) > MAX_ALIASES:  # D61 caps, never refuses: but never silently either
        left = [clean(ctx, a).text for a in given[MAX_ALIASES:]]  # shown masked, as they would be stored
        ctx.warn(f"a memory keeps at most {MAX_ALIASES} aliases: kept the first {MAX_ALIASES}, not "
                 f"{', '.join(repr(a) for a in left[:3])}{' …' if len(left) > 3 else ''}")  # fmt: skip
    clean_aliases = normalize_aliases(scrub(given[:MAX_ALIASES]))
    unique = list(dict.fromkeys(masked))
    return (result.text.strip(), clean_tags, clean_aliases), unique, private


def _clean_pair(ctx: Context, alias: str | None, target: str | None, masked: list[str]) -> tuple[str | None, str | None]:
    """D81: "``alias`` stands for ``target``" — both or neither, redacted like the text."""
    a, t = " ".join((alias or "").split()), " ".join((target or "").split())
    if bool(a) != bool(t):
        raise UsageError("an alias needs its target (and a target its alias): pass both, e.g. --alias PSP "
                         "--target 'payment service provider'")  # fmt: skip
    if not a:
        return None, None
    out = []
    for value in (a, t):
        check_text(value, "an alias or target")
        r = clean(ctx, value)
        masked.extend(x for x in r.rules if x not in masked)
        out.append(r.text)
    return out[0], out[1]


def exact_duplicate(ctx: Context, body: str, dirs: list[str]) -> tuple[str, str] | None:
    """(id, path) of an active memory in ``dirs`` with the same normalised text (design §3.4).
    The hash finds it; the text decides (80 bits can be made to collide on purpose, and a
    new memory must never be answered with another one's id)."""
    marks = placeholders(dirs)
    text = normalize_ws(body)
    for row in ctx.conn.execute(
        f"SELECT id, file_path, content FROM memories WHERE content_hash = ? AND status = 'active' AND dir IN ({marks}) "
        "ORDER BY location = 'repo' DESC",
        [content_hash(body), *dirs],
    ):
        if normalize_ws(row[2]) == text:
            return (row[0], row[1])
    return None


def _candidates(ctx: Context, body: str, dirs: list[str]) -> list[tuple[str, str, str, str, float]]:
    """Active memories of the scope that share terms with ``body``, best bm25 first."""
    expression = build_query(body)
    if not expression:
        return []
    marks = placeholders(dirs)
    rows = ctx.conn.execute(
        f"SELECT m.id, m.file_path, m.content, m.source, m.created_at FROM memories_fts "
        f"JOIN memories m ON m.rowid = memories_fts.rowid "
        f"WHERE memories_fts MATCH ? AND m.dir IN ({marks}) AND m.status = 'active' "
        f"ORDER BY bm25(memories_fts) LIMIT 40",
        [expression, *dirs],
    ).fetchall()
    return [(r[0], r[1], r[2], r[3], r[4]) for r in rows]


def supersede(
    ctx: Context,
    memory_id: str,
    content: str,
    *,
    type: str | None = None,
    tags: list[str] | str | None = None,
    aliases: list[str] | None = None,
    source: str = "cli",
    alias: str | None = None,
    target: str | None = None,
) -> WriteResult:
    """Replace a memory with a new one; the old stays as history (design §3.4). A memory
    that had entered review re-enters at ``proposed`` (D64) in the same folder. Decided
    and written under the scope's lock: of four concurrent supersedes of one id, one wins
    and three are told who replaced it. The D81 pair carries over unless ``alias`` and
    ``target`` are given (both empty: the new memory defines none)."""
    check_tag_count(tags)  # given anew; tags carried over from the old memory are kept as they are
    with locked(ctx, memory_id) as (old, folder):
        return _supersede_locked(ctx, old, folder, content, type=type, tags=tags, aliases=aliases, source=source,
                                 alias=alias, target=target)  # fmt: skip


def _refuse_second_replacement(ctx: Context, old: Memory, folder: Folder) -> None:
    """A supersede killed between writing the new memory and pointing the old one at it
    leaves a replacement the old file does not name yet. In the outbox the next read
    completes the pair; a repository file is not rewritten on read (it is the team's). A
    second supersede would then fork the chain: two active replacements of one memory."""
    dirs = [str(f.path) for f in key_folders(ctx, folder.scope_key or "")]
    row = ctx.conn.execute(
        f"SELECT id, file_path FROM memories WHERE supersedes = ? AND dir IN ({placeholders(dirs)}) "
        "AND status NOT IN ('retracted', 'archived') AND id != ? ORDER BY id LIMIT 1",
        [old.id, *dirs, old.superseded_by or ""],
    ).fetchone()
    if row is not None:
        raise LifecycleError(
            f"{old.id} already has a replacement, {row['id']} ({row['file_path']}), written by a supersede that did "
            f"not finish — supersede {row['id']} instead, or `open-memex forget {row['id']}` and retry"
        )


def _supersede_locked(
    ctx: Context, old: Memory, folder: Folder, content: str, *, type: str | None, tags: list[str] | str | None,
    aliases: list[str] | None, source: str, alias: str | None = None, target: str | None = None,
) -> WriteResult:  # fmt: skip
    refuse_broken_chain(ctx, old, "superseded")
    if old.status == "superseded" and not successor_missing(ctx.conn, old):
        raise LifecycleError(
            f"{old.id} is already superseded by {old.superseded_by}; supersede the newest version instead"
        )
    if old.status in ("retracted", "archived"):
        raise LifecycleError(f"cannot supersede {old.id}: it is {old.status}; save the new fact with `open-memex add`")
    _refuse_second_replacement(ctx, old, folder)
    if type is not None:
        _check_choice("type", type, TYPES)
    _check_choice("source", source, SOURCES)
    if not has_visible(content):
        raise UsageError(f"nothing to save: the new memory text {_emptiness(content)}")
    cleaned, masked, private = clean_all(
        ctx, content, tags if tags is not None else old.tags, aliases if aliases is not None else old.aliases
    )
    body, clean_tags, clean_aliases = cleaned
    pair = (old.alias, old.target) if alias is None and target is None else _clean_pair(ctx, alias, target, masked)
    stamp = now_rfc3339()
    new = Memory(
        id=new_ulid(),
        scope=old.scope,
        scope_key=old.scope_key,
        body=body,
        type=type or old.type,
        visibility=old.visibility if old.scope != "personal" else "private",
        project_name=old.project_name,
        role=old.role,
        importance=old.importance,
        tags=clean_tags,
        aliases=clean_aliases,
        source=source,
        created_at=stamp,
        updated_at=stamp,
        supersedes=old.id,
        alias=pair[0],
        target=pair[1],
        review_state="proposed" if old.review_state != "draft" else "draft",
        proposed_by=old.proposed_by if old.review_state != "draft" else None,
    )
    # New first (it points back), then the old one: a crash in between leaves a one-sided
    # chain that the next read heals; a refused second write removes the first (rollback).
    path = store.save(new, folder.path, new=True)
    old.status = "superseded"
    old.superseded_by = new.id
    old.updated_at = stamp
    try:
        store.save(old, folder.path)
    except MemexError:
        try:
            store.delete(path)
        except MemexError as exc:
            ctx.warn(f"could not roll back {path.name}: {exc}")
        raise
    freshness.record(ctx, [(new, folder), (old, folder)])
    return WriteResult("saved", new.id, new.scope, new.scope_key, str(path), masked, private, memory=new, replaced=old.id)
