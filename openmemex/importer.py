"""``open-memex import BUNDLE``: memories from another machine, admitted like any other
write (design §11: the admission barrier covers import).

``bundle.read_bundle`` has already refused anything unsafe in the archive; here every
memory file is parsed and schema-checked as a reader would, re-keyed (personal stays
personal, project memories join the current project's outbox), and redacted with the
write path's own function — body, tags, aliases and every free-text field — before any
byte is written. Then, under the scope's write lock as ``add_memory`` decides: the same
id with the same text is skipped as identical, the same id with other text is reported
and never overwritten, and an active memory whose text the scope already holds under
another id is skipped as a duplicate (design §3.4). Files are written only as
``<scope folder>/<id>.md`` with the id checked against the schema's ULID pattern — never
under a name taken from the bundle. The file is re-emitted from its fields, so a YAML
comment (which redaction cannot see) does not ride along.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from . import freshness, store
from .bundle import BundleFile, read_bundle, rejected
from .context import Context
from .errors import MemexError, UsageError
from .index import Folder, placeholders
from .memfile import MemoryFileError, parse_memory
from .model import PERSONAL_KEY, Memory
from .text import normalize_ws
from .write import clean, clean_all, exact_duplicate

CHUNK = 500  # memories decided and written per hold of the scope's lock


@dataclass
class ImportResult:
    dry_run: bool
    imported: list[tuple[str, str]] = field(default_factory=list)  # (id, scope)
    identical: list[tuple[str, str]] = field(default_factory=list)  # (id, why)
    conflicts: list[tuple[str, str, str]] = field(default_factory=list)  # (id, bundle file, why)
    rejected: list[tuple[str, str]] = field(default_factory=list)  # (bundle file, reason)
    masked: dict[str, list[str]] = field(default_factory=dict)  # id -> rules
    unlinked: list[tuple[str, str, str]] = field(default_factory=list)  # (id, "supersedes X", why): a pointer dropped

    def to_json(self) -> dict[str, object]:
        return {
            "dry_run": self.dry_run,
            "imported": [{"id": i, "scope": s} for i, s in self.imported],
            "identical": [{"id": i, "why": w} for i, w in self.identical],
            "conflicts": [{"id": i, "file": f, "why": w} for i, f, w in self.conflicts],
            "rejected": [{"file": f, "reason": r} for f, r in self.rejected],
            "masked": self.masked,
            "unlinked": [{"id": i, "pointer": p, "why": w} for i, p, w in self.unlinked],
        }


def import_bundle(ctx: Context, path: Path, dry_run: bool = False,
                  progress: Callable[[int, int], None] | None = None) -> ImportResult:  # fmt: skip
    bundle = read_bundle(path, ctx.root / ".import-staging")  # never created: names are judged, not extracted
    result = ImportResult(dry_run)
    admitted: dict[str, list[tuple[BundleFile, Memory]]] = {"personal": [], "project": []}
    for item in bundle.files:
        try:
            memory = parse_memory(item.data)
        except MemoryFileError as exc:
            result.rejected.append((item.name, str(exc)))
            continue
        if memory.id != item.id or memory.scope != item.scope:
            raise rejected(f"{item.name} holds the {memory.scope} memory {memory.id}, not what the manifest says")
        try:
            masked = admit(ctx, memory)
        except MemexError as exc:
            result.rejected.append((item.name, str(exc)))
            continue
        if masked:
            result.masked[memory.id] = masked
        admitted[memory.scope].append((item, memory))
    freshness.sync(ctx, "all")  # ids must be unique across every scope folder, not just the target's
    _unlink_foreign_chains(ctx, [m for items in admitted.values() for _, m in items], result)
    done = [0]
    total = sum(len(v) for v in admitted.values())
    for scope, items in admitted.items():
        seen_text: dict[str, str] = {}  # normalised text -> id, for a dry run's duplicates within the bundle
        for start in range(0, len(items), CHUNK):
            _place(ctx, scope, items[start : start + CHUNK], result, dry_run, seen_text)
            done[0] += len(items[start : start + CHUNK])
            if progress is not None:
                progress(done[0], total)
    return result


def _unlink_foreign_chains(ctx: Context, memories: list[Memory], result: ImportResult) -> None:
    """A supersede pointer may join a memory of the bundle to another memory of the bundle
    that this import writes, to a memory not here (yet: a chain exported in two parts joins
    when the other part comes), or to a memory here that already points back — and only
    within one scope: a chain never crosses scopes (docs/protocol.md, Supersede chains).
    Any other pointer would let a bundle take over a memory: the next read's chain repair
    would complete it on the user's own file, and that memory would read as replaced by
    the bundle's text. A memory here is answered for by its copy here even when the bundle
    holds the same id too: that copy is never written (skipped as identical, or a conflict
    that keeps the existing file), so it cannot vouch for the pointer. Such a pointer is
    dropped, and said."""
    bundle = {m.id: m for m in memories}
    keys = {str(f.path): f.scope_key for f in ctx.folders("all")}
    for memory in memories:
        own = ctx.write_folder(memory.scope).scope_key
        for pointer, back in (("supersedes", "superseded_by"), ("superseded_by", "supersedes")):
            target = getattr(memory, pointer)
            if target is None:
                continue
            if target == memory.id:  # the read after would mark it replaced by itself, then retract it
                _unlink(memory, pointer, "it names itself, and a chain never loops", result)
                continue
            here = ctx.conn.execute(f"SELECT {back}, dir, scope_key FROM memories WHERE id = ?", (target,)).fetchall()
            ours = [row for row in here if keys.get(row[1], row[2]) == own]
            if here:  # its copy here decides: of this scope, and pointing back
                why = "" if any(row[0] == memory.id for row in ours) else (
                    "it is here and does not point back" if ours else "it is here in another scope, and a chain never crosses scopes")
            elif target in bundle:  # the bundle's own chain, written by this import
                why = "" if bundle[target].scope == memory.scope else (
                    f"the bundle holds it as a {bundle[target].scope} memory, and a chain never crosses scopes")
            else:
                why = ""  # not here yet
            if why:
                _unlink(memory, pointer, why, result)
    _unlink_loops(ctx, memories, result)


def _unlink(memory: Memory, pointer: str, why: str, result: ImportResult) -> None:
    """Drop one supersede pointer of a bundle memory, and say so."""
    target = getattr(memory, pointer)
    setattr(memory, pointer, None)
    if pointer == "superseded_by" and memory.status == "superseded":
        memory.status = "active"  # replaced by nothing it may name: the head again
    result.unlinked.append((memory.id, f"{pointer} {target}", why))


def _unlink_loops(ctx: Context, memories: list[Memory], result: ImportResult) -> None:
    """A chain runs one way, oldest to head. Pointers that close a loop — A supersedes B
    and B supersedes A, among the bundle's memories or through memories here (parts of
    chains imported earlier, waiting for this part) — leave a chain with no head: the
    reads' repair would mark a memory replaced by one it replaced, and a forget of one
    would retract the others. Every pointer of the bundle on such a loop is dropped, and
    said. Only pointers this import writes count: a bundle memory whose id is here is
    answered for by its copy here (``_unlink_foreign_chains``)."""
    chained = [m for m in memories if m.supersedes is not None or m.superseded_by is not None]
    if not chained:
        return
    keys = {str(f.path): f.scope_key for f in ctx.folders("all")}
    here: set[str] = set()  # as ``_place`` decides: an id in any folder of the data root is not written
    for start in range(0, len(chained), CHUNK):
        ids = [m.id for m in chained[start : start + CHUNK]]
        here.update(r[0] for r in ctx.conn.execute(
            f"SELECT id FROM memories WHERE id IN ({placeholders(ids)}) AND dir IN ({placeholders(list(keys))})",
            [*ids, *keys]))  # fmt: skip
    written = [m for m in chained if m.id not in here]
    # older -> newer, one graph per scope key: a chain never crosses scopes
    edges: dict[str, dict[str, set[str]]] = {}
    own = {scope: ctx.write_folder(scope).scope_key or "" for scope in {m.scope for m in written}}
    for memory_id, supersedes, superseded_by, folder, key in ctx.conn.execute(
        "SELECT id, supersedes, superseded_by, dir, scope_key FROM memories "
        "WHERE supersedes IS NOT NULL OR superseded_by IS NOT NULL"
    ):
        graph = keys.get(folder, key)
        if graph in own.values():
            _edges(edges.setdefault(graph, {}), memory_id, supersedes, superseded_by)
    for memory in written:
        _edges(edges.setdefault(own[memory.scope], {}), memory.id, memory.supersedes, memory.superseded_by)
    loops = {key: _components(graph) for key, graph in edges.items()}
    for memory in written:
        component = loops[own[memory.scope]]
        for pointer in ("supersedes", "superseded_by"):
            target = getattr(memory, pointer)
            if target is not None and target in component and component[target] == component[memory.id]:
                _unlink(memory, pointer, "it leads back to this memory, and a chain never loops", result)


def _edges(graph: dict[str, set[str]], memory_id: str, supersedes: str | None, superseded_by: str | None) -> None:
    """Add one memory's pointers as edges from the older memory to the newer."""
    if supersedes is not None:
        graph.setdefault(supersedes, set()).add(memory_id)
    if superseded_by is not None:
        graph.setdefault(memory_id, set()).add(superseded_by)


def _components(graph: dict[str, set[str]]) -> dict[str, int]:
    """Each node's strongly connected component (Tarjan's, with a stack of its own: a
    chain may be longer than Python's recursion limit); an edge is on a loop exactly when
    both its ends share one."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    component: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    for root in graph:
        if root in order:
            continue
        order[root] = low[root] = len(order)
        stack.append(root)
        on_stack.add(root)
        work = [(root, iter(graph.get(root, ())))]
        while work:
            node, children = work[-1]
            for child in children:
                if child not in order:
                    order[child] = low[child] = len(order)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(graph.get(child, ()))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], order[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == order[node]:
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component[member] = order[node]
                        if member == node:
                            break
    return component


def admit(ctx: Context, memory: Memory) -> list[str]:
    """Re-key ``memory`` for this machine and redact every text it carries, as the write
    path would; the secret rules that fired are returned. Raises what the write path
    raises (text that is all ``<private>``, conflict markers, too large)."""
    if memory.scope == "personal":
        memory.scope_key = PERSONAL_KEY
        memory.project_name = ""
    elif memory.scope == "project":
        memory.scope_key = ctx.project.key
        memory.project_name = ctx.project.name
        # a review done elsewhere (or written into the file by hand) is no review in this
        # project: the memory joins the outbox as a draft, and an instruction is shown to
        # agents only once reviewed here (design: the iron rules)
        memory.review_state, memory.review_history = "draft", []
        memory.proposed_by = memory.approved_by = memory.review_note = None
    else:
        raise UsageError(f"scope {memory.scope!r} cannot be imported (personal and project only)")
    (body, tags, aliases), masked, _ = clean_all(ctx, memory.body, memory.tags, memory.aliases)
    memory.body, memory.tags, memory.aliases = body, tags, aliases

    def scrub(value: object) -> object:
        """Every text, however deep in lists and mappings (unknown fields, history notes);
        the reader refuses nesting deeper than ``memfile.MAX_YAML_DEPTH``, so this recursion is shallow."""
        if isinstance(value, str):
            cleaned = clean(ctx, value)
            masked.extend(r for r in cleaned.rules if r not in masked)
            return cleaned.text
        if isinstance(value, list):
            return [scrub(v) for v in value]
        if isinstance(value, dict):  # keys too: YAML lets a token be a key (!!binary, a pair, a set)
            return {scrub(k) if isinstance(k, _KEY_TEXTS) else k: scrub(v) for k, v in value.items()}
        if isinstance(value, tuple):  # !!omap and !!pairs entries
            return tuple(scrub(v) for v in value)
        if isinstance(value, (set, frozenset)):  # !!set
            return type(value)(scrub(v) for v in value)
        if isinstance(value, bytes):  # !!binary: a text the scanner can read is scanned as text
            text = value.decode("utf-8", "replace")
            shown = scrub(text)
            return value if shown == text else shown
        return value

    for name in ("alias", "target", "review_note", "proposed_by", "approved_by"):
        setattr(memory, name, scrub(getattr(memory, name)))
    memory.review_history = cast("list[dict[str, Any]]", [scrub(entry) for entry in memory.review_history])
    memory.extra = {str(scrub(k)): scrub(v) for k, v in memory.extra.items()}  # a field's name is text too
    memory.raw = None  # re-emitted from the fields: comments and layout do not ride along
    store.render(memory)  # refused here, before anything is written, if a reader would quarantine it
    return masked


_KEY_TEXTS = (str, bytes, tuple, frozenset)  # the mapping keys YAML can load that hold text


def _place(ctx: Context, scope: str, items: list[tuple[BundleFile, Memory]], result: ImportResult,
           dry_run: bool, seen_text: dict[str, str]) -> None:  # fmt: skip
    """Decide and write one chunk under the scope's lock, as ``add_memory`` does."""
    folder = ctx.write_folder(scope)
    own = ctx.folders("personal" if scope == "personal" else "project")
    own_dirs = [str(f.path) for f in own]
    every = [str(f.path) for f in ctx.folders("all")]
    written: list[tuple[Memory, Folder]] = []
    with ctx.lock(folder.scope_key or ""):
        freshness.sync_folders(ctx, own)
        ids = [m.id for _, m in items]
        known: dict[str, set[str]] = {}  # id -> the normalised texts it has here (the text decides, not its hash)
        for memory_id, content in ctx.conn.execute(
            f"SELECT id, content FROM memories WHERE id IN ({placeholders(ids)}) AND dir IN ({placeholders(every)})",
            [*ids, *every],
        ):
            known.setdefault(memory_id, set()).add(normalize_ws(content))
        try:
            _decide(ctx, scope, folder, own_dirs, every, items, known, result, dry_run, seen_text, written)
        finally:
            if written:  # even when a write failed midway: the files that landed are indexed
                freshness.record(ctx, written)


def _decide(ctx: Context, scope: str, folder: Folder, own_dirs: list[str], every: list[str], items: list[tuple[BundleFile, Memory]],
            known: dict[str, set[str]], result: ImportResult, dry_run: bool, seen_text: dict[str, str],
            written: list[tuple[Memory, Folder]]) -> None:  # fmt: skip
    for item, memory in items:
        if memory.id in known:
            if normalize_ws(memory.body) in known[memory.id]:
                result.identical.append((memory.id, "same id, same text"))
            else:
                result.conflicts.append((memory.id, item.name, "a memory with this id and other text exists here"))
            continue
        # an id is unique in the whole data root, not only in the target folder: a file the
        # index could not read (another scope's too) holds it, and a second copy would
        # surface as a duplicate id once that file is fixed
        unreadable = next((p for p in (Path(d) / f"{memory.id}.md" for d in every) if p.exists() or p.is_symlink()), None)
        if unreadable is not None:
            result.conflicts.append((memory.id, item.name, f"{unreadable} exists but cannot be read (see `open-memex doctor`)"))
            continue
        # a replacement in a chain is imported even when its text is here under another id:
        # skipped, its predecessor would be "superseded by" nothing and come back as current
        if memory.status == "active" and memory.supersedes is None:
            twin = exact_duplicate(ctx, memory.body, own_dirs)
            twin_id = twin[0] if twin is not None else seen_text.get(normalize_ws(memory.body))
            if twin_id is not None:
                result.identical.append((memory.id, f"same text as {twin_id}"))
                continue
            seen_text[normalize_ws(memory.body)] = memory.id  # the bundle's own twins, by text
        result.imported.append((memory.id, scope))
        if not dry_run:
            store.save(memory, folder.path)
            written.append((memory, folder))
