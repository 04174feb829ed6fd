"""``open-memex mcp``: the eleven tools over stdio (SPEC §4.16, reference §3).

Each tool parses its typed input, calls one core function through ``Session.run`` and
renders the result twice: text written for a model (what most clients show it) and the
same JSON document the CLI's ``--json`` prints, as structured content. Invalid input (an
unknown type, an empty query) is refused by the schema before any code runs. Failures come
back as ``isError`` results whose text names the next step.

Nothing may reach stdout outside the protocol: this module prints nothing at import, logs
go to stderr, and the SDK points fd 1 at stderr while it serves.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field

from .. import __version__, guidance
from ..context import Context
from ..echo import NO_CUT, for_transcript, masked
from ..errors import MemexError
from ..terminal import safe
from .calls import Session, ToolFailure
from .names import TOOL_NAMES

log = logging.getLogger("open-memex.mcp")


def _field(**kwargs: Any) -> Any:
    return Field(**kwargs)


def _untitled(schema: Any) -> Any:
    """The schema without pydantic's generated titles ("Query" beside "query" says nothing
    to a model, and every client pays for tools/list in its context window)."""
    if isinstance(schema, dict):
        return {k: _untitled(v) for k, v in schema.items() if not (k == "title" and isinstance(v, str))}
    if isinstance(schema, list):
        return [_untitled(v) for v in schema]
    return schema


STATUS_CAP = 20  # entries per section in memory_status (the CLI shows all)

MemoryType = Literal[
    "fact", "preference", "decision", "constraint", "todo", "knowledge",
    "howto", "gotcha", "lesson", "observation", "reference",
]  # fmt: skip
WriteScope = Literal["project", "personal"]
ReadScope = Literal["project", "personal", "both", "all"]
Id = Annotated[str, _field(min_length=1)]
Ids = Annotated[list[Id], _field(min_length=1)]
Tags = list[str] | None
Aliases = Annotated[list[str] | None, _field(description=(
    "Up to 4 other phrasings someone might search with: synonyms, the identifier, the other language."))]


def _result(text: str, data: dict[str, Any], warnings: list[str], drafts: int | None = None,
            rules: Sequence[str] = ()) -> Any:  # fmt: skip
    """A tool's answer. Memory text is masked when written, but a file edited by hand or
    pulled from a teammate can hold a token the write path never saw: what goes back into
    the agent's transcript is masked again here, text and structured content alike (ids
    kept), with the user's ``redactPatterns`` (``rules``) as on a write."""
    from mcp.types import CallToolResult, TextContent

    lines = [text]
    lines += [f"note: {w}" for w in warnings]
    if drafts:
        lines.append(guidance.outbox_note(drafts))
    body = for_transcript("\n".join(lines), rules=rules)
    return CallToolResult(content=[TextContent(type="text", text=body)], structured_content=_masked_doc(data, rules),
                          is_error=False)  # fmt: skip


def _masked_doc(value: Any, rules: Sequence[str] = ()) -> Any:
    """The document with secrets masked in its strings; one scan of them all first, since a
    result with nothing to mask (nearly every one) is then left as it is."""
    strings: list[str] = []
    _strings(value, strings, 1 if rules else 8)
    joined = "\n".join(strings)
    if masked(joined, limit=NO_CUT, rules=rules) == joined:
        return value
    return _mask_each(value, rules)


def _strings(value: Any, out: list[str], shortest: int) -> None:
    if isinstance(value, str):
        if len(value) >= shortest:
            out.append(value)
    elif isinstance(value, dict):
        for v in value.values():
            _strings(v, out, shortest)
    elif isinstance(value, list):
        for v in value:
            _strings(v, out, shortest)


def _mask_each(value: Any, rules: Sequence[str] = ()) -> Any:
    if isinstance(value, str):  # no built-in rule matches fewer than 8 characters; a user's pattern may
        return masked(value, limit=NO_CUT, rules=rules) if len(value) >= 8 or rules else value
    if isinstance(value, dict):
        return {k: _mask_each(v, rules) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask_each(v, rules) for v in value]
    return value


def _failure(message: str) -> Any:
    from mcp.types import CallToolResult, TextContent

    text = safe(f"open-memex error: {masked(message)}")  # it may quote the caller's id, path or a hook's output
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


def _invalid_arguments(name: str, exc: Any, arguments: dict[str, Any], known: list[str]) -> str:
    """One line for arguments the schema refuses: which fields and why, never their values
    (pydantic's own text repeats the input, a token in ``tags`` included)."""
    problems = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error.get("loc", ())) or "arguments"
        problems.append(f"{where}: {error.get('msg', 'invalid')}")
    unknown = sorted(set(arguments) - set(known))
    if unknown:
        problems.append(f"unknown argument(s) {', '.join(masked(u, 60) for u in unknown)}")
    return (f"open-memex error: invalid arguments for {name}: {'; '.join(problems)} — the tool takes "
            f"{', '.join(known)} (see its input schema in tools/list)")


def _drafts(ctx: Context) -> int:
    from ..git.sync_status import outbox_count

    return outbox_count(ctx)


def build(session: Session, drafts: int | None = None) -> Any:
    """The MCPServer with the eleven tools; the outbox's ``drafts`` (counted now when not
    given) go into the handshake (D53)."""
    if drafts is None:
        drafts = _count_drafts(session)
    try:
        here = Context.load(cwd=session.cwd)
        from ..scope import displayable

        where = f"{here.project.name} ({displayable(str(here.project.root))})"  # a latin-1 path: JSON must encode it
    except MemexError as exc:  # a broken config.json: the server still starts and each call says why
        log.warning("%s", exc)
        where = ""
    from mcp.server.mcpserver.tools import Tool
    from mcp.types import CallToolResult, ToolAnnotations

    tools: list[Tool] = []

    def tool(*, annotations: ToolAnnotations, description: str) -> Callable[[Callable[..., Any]], None]:
        def register(fn: Callable[..., Any]) -> None:
            made = Tool.from_function(fn, description=description, annotations=annotations, structured_output=False)
            made.parameters = {**_untitled(made.parameters), "additionalProperties": False}
            tools.append(made)

        return register

    def call(render: Callable[[Context], tuple[str, dict[str, Any], bool]]) -> CallToolResult:
        """Run ``render`` (core call + text + JSON + whether it mutated) as one tool call.
        The outbox count is a second, separate step: the call has already done its work, so
        nothing that goes wrong while counting may make it run again (or fail it)."""
        rules: list[Sequence[str]] = []

        def work(ctx: Context) -> tuple[str, dict[str, Any], bool]:
            rules.append(ctx.config.masking_rules)  # the answer is masked with the user's patterns too
            return render(ctx)

        try:
            (text, data, mutated), warnings = session.run(work)
        except ToolFailure as exc:
            return _failure(str(exc))  # type: ignore[no-any-return]
        try:
            return _result(text, data, warnings, _count_drafts(session) if mutated else None,  # type: ignore[no-any-return]
                           rules[-1] if rules else ())  # fmt: skip
        except MemexError as exc:  # a user's pattern that runs past its time limit: its one line
            return _failure(str(exc))  # type: ignore[no-any-return]

    read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)

    def writes(*, idempotent: bool, destructive: bool = False, open_world: bool = False) -> ToolAnnotations:
        return ToolAnnotations(read_only_hint=False, destructive_hint=destructive, idempotent_hint=idempotent,
                               open_world_hint=open_world)  # fmt: skip

    @tool(annotations=writes(idempotent=True), description=(
        f"Save one memory. {guidance.RUBRIC} Save what the user states right away; propose what you "
        "infer and save it (source inference) only once approved. Secrets are masked before writing; "
        "identical text is not saved twice. Project memories become outbox drafts (shared via "
        f"memory_submit); personal ones never leave this machine. {guidance.ECHO} To correct a memory, "
        "use memory_supersede."))  # fmt: skip
    def memory_add(
        content: Annotated[str, _field(min_length=1, description="One self-contained fact or decision, in Markdown.")],
        type: Annotated[MemoryType, _field()] = "fact",
        scope: Annotated[WriteScope, _field(description="personal: about the user, this machine only.")] = "project",
        tags: Tags = None,
        aliases: Aliases = None,
        source: Annotated[Literal["tool", "inference", "user"], _field(description="inference: your conclusion, approved by the user.")] = "tool",
        importance: Annotated[Literal["low", "normal", "high"], _field()] = "normal",
        alias: Annotated[str | None, _field(description="A name this memory defines, e.g. PSP (with target).")] = None,
        target: Annotated[str | None, _field(description="What alias stands for; searches for either find both.")] = None,
    ) -> Any:  # fmt: skip
        def render(ctx: Context) -> tuple[str, dict[str, Any], bool]:
            from ..write import add_memory

            r = add_memory(ctx, content, scope=scope, type=type, tags=tags, aliases=aliases, source=source,
                           importance=importance, guard_echo=True, alias=alias, target=target)  # fmt: skip
            data = r.to_json()
            if r.status == "exists":
                return f"Identical memory already exists: id={r.id}. Not duplicated.", data, False
            if r.status == "refused":
                first = r.similar[0]
                lines = [f"Not saved — the user's own words were already stored moments ago (overlap {first.score:.2f}): "
                         f"id={first.id} — {_flat(first.snippet)}"]  # fmt: skip
                lines += [f"Also matching: id={s.id} — {_flat(s.snippet)}" for s in r.similar[1:]]
                lines.append("Do not save it again. If you have something new, save only the new part, or call "
                             f"memory_supersede with id {first.id} to correct the stored text.")  # fmt: skip
                data["echo_of"] = [{"id": s.id, "score": round(s.score, 3)} for s in r.similar]
                return "\n".join(lines), data, False
            lines = [f"Saved to {r.scope} scope ({r.scope_key}) as {type}. id={r.id}"]
            if r.scope == "project":
                lines.append("It is a draft in the local outbox until the user has it submitted (memory_submit).")
            if r.masked:
                lines.append(f"Secret masked ({', '.join(r.masked)}): first 4 characters kept, the rest replaced with x.")
            if r.private_spans:
                lines.append(f"{r.private_spans} <private> span(s) stored as [REDACTED].")
            for s in r.similar:
                lines.append(f"Note: similar memory exists (score {s.score:.2f}): id={s.id} — {_flat(s.snippet)}. "
                             f"If the new one replaces it, use memory_supersede on {s.id} instead.")  # fmt: skip
            return "\n".join(lines), data, True

        return call(render)

    @tool(annotations=read_only, description=(
        "Full-text search of the memories, best first (reviewed knowledge ahead of drafts of similar "
        f"relevance; the newest version of a superseded memory). {guidance.QUERY_EXPANSION}"))  # fmt: skip
    def memory_search(
        query: Annotated[str, _field(min_length=1, description="Keywords or a question.")],
        scope: Annotated[ReadScope, _field(description="both: this project and personal; all: every project here.")] = "both",
        type: MemoryType | None = None,
        limit: Annotated[int, _field(ge=1, le=50)] = 8,
    ) -> Any:  # fmt: skip
        def render(ctx: Context) -> tuple[str, dict[str, Any], bool]:
            from ..search import search, state_tag

            result = search(ctx, query, scope=scope, type=type, limit=limit)
            data = {**result.to_json(), "query": masked(query, 500)}  # the caller's words repeated: masked, cut
            if not result.hits:
                return (f"No memories matched \"{masked(_flat(query), 200)}\". Try other words for the same concepts, the "
                        "identifier as written, or the other language before concluding nothing is remembered."
                        ), data, False  # fmt: skip
            lines = []
            for hit in result.hits:
                kind = "personal" if hit.scope == "personal" else "project"
                tag = state_tag(hit.scope, hit.review_state, hit.status)
                lane = f" lane={hit.lane}" if len(result.lanes) > 1 else ""  # recall receipt when vectors are on
                lines.append(f"- [{kind}/{hit.type}]{' ' + tag if tag else ''} id={hit.id}{lane}")
                lines.append(f"  {_flat(hit.snippet)}")
            return "\n".join(lines), data, False

        return call(render)

    @tool(annotations=read_only, description=(
        "List memories newest first, numbered, with when and how each was saved; describe that in plain "
        "words. Numbers change: re-list before acting on \"#3\", and read an entry back before deleting it."))  # fmt: skip
    def memory_list(
        scope: ReadScope = "project",
        type: MemoryType | None = None,
        limit: Annotated[int, _field(ge=1, le=100, description="Per section.")] = 20,
        include: Annotated[Literal["active", "all"], _field(description="all: also superseded, retracted, archived.")] = "active",
    ) -> Any:  # fmt: skip
        def render(ctx: Context) -> tuple[str, dict[str, Any], bool]:
            from ..listing import list_memories
            from ..listing import render as render_listing

            listing = list_memories(ctx, scope=scope, type=type, limit=limit, include=include)
            text = render_listing(listing)
            if any(s.hidden for s in listing.sections):
                text += "\n(raise limit up to 100, or use memory_search to find a specific memory)"
            return text, listing.to_json(), False

        return call(render)

    @tool(annotations=writes(idempotent=False), description=(
        "Replace a wrong or outdated memory with corrected text; the old one stays as history and search "
        "answers with the new one. Tags, aliases and the alias/target pair carry over unless given."))  # fmt: skip
    def memory_supersede(
        id: Id,
        content: Annotated[str, _field(min_length=1, description="The full corrected text.")],
        type: MemoryType | None = None,
        tags: Tags = None,
        aliases: Aliases = None,
        alias: Annotated[str | None, _field(description="The name the new memory defines (with target); \"\" for none.")] = None,
        target: Annotated[str | None, _field(description="What alias stands for; omitted: the old pair's.")] = None,
    ) -> Any:  # fmt: skip
        def render(ctx: Context) -> tuple[str, dict[str, Any], bool]:
            from ..write import supersede

            r = supersede(ctx, id, content, type=type, tags=tags, aliases=aliases, source="tool", alias=alias,
                          target=target)  # fmt: skip
            text = f"Replaced {r.replaced} with {r.id} (old kept as history)."
            if r.masked:
                text += f" Secret masked ({', '.join(r.masked)})."
            return text, r.to_json(), True

        return call(render)

    @tool(annotations=writes(idempotent=True, destructive=True), description=(
        "Delete a memory, or with soft=true retract it (kept on disk, hidden, one-way). Confirm with the "
        "user first. To correct a memory, use memory_supersede."))  # fmt: skip
    def memory_forget(id: Id, soft: bool = False) -> Any:
        def render(ctx: Context) -> tuple[str, dict[str, Any], bool]:
            from ..lifecycle import forget

            gone = forget(ctx, id, soft=soft)
            if gone.soft:
                text = (f"{'Already hidden' if gone.already else 'Hidden'} {gone.id} (retracted — one-way; save it again "
                        "with memory_add if it is needed after all).")  # fmt: skip
                if gone.in_repo:
                    text += " The retraction is a local edit of a repository file: it reaches the team only once committed and pushed."
            else:
                text = f"Deleted {gone.id}."
                if gone.copies:
                    text += f" Its other copy went too: {', '.join(str(p) for p in gone.copies)}."
                if gone.in_repo:
                    text += " The file was in the repository: commit the deletion so the team's copy goes too."
            if gone.relinked:
                text += f" Supersede chain closed around it: {', '.join(gone.relinked)} updated."
            return text, gone.to_json(), True

        return call(render)

    @tool(annotations=read_only, description=(
        "Outbox drafts, in-repo memories by review state, uncommitted memory files, next step. Call at "
        "session start, when a result says drafts are waiting, and on \"sync memory\" / \"同步记忆\"; then "
        "summarise the drafts and ask which to submit."))  # fmt: skip
    def memory_status() -> Any:
        def render(ctx: Context) -> tuple[str, dict[str, Any], bool]:
            from ..git.sync_status import render as render_status
            from ..git.sync_status import sync_status

            status = sync_status(ctx)
            text = render_status(status, cap=STATUS_CAP)
            pending = len(status.outbox) + sum(1 for i in status.in_repo if i.review_state in ("proposed", "approved"))
            return f"memory: sync status ({pending} pending)\n{text}", status.to_json(cap=STATUS_CAP), False

        return call(render)

    @tool(annotations=writes(idempotent=True), description=(
        "Commit the outbox drafts the user chose into the repository (as proposed) on the current branch, "
        "only those files; never pushes. Ask before branch=…, pushing or a PR. Personal memories need "
        "memory_propose first."))  # fmt: skip
    def memory_submit(
        ids: Annotated[Ids, _field(description="Outbox draft ids.")],
        branch: Annotated[str | None, _field(description="Only when the user asked.")] = None,
    ) -> Any:  # fmt: skip
        def render(ctx: Context) -> tuple[str, dict[str, Any], bool]:
            from ..git.submit import submit

            report = submit(ctx, ids, branch=branch)
            lines = report.lines()
            if (report.submitted or report.recovered) and report.commit:
                lines.append("Ask the user before pushing and opening a pull request; then: "
                             "open-memex push, and gh pr create --fill (or the host's PR page).")  # fmt: skip
            lines += [f"note: {n}" for n in report.notices]
            if not report.index_refreshed and report.commit:
                lines.append(f"note: the git index could not be refreshed (another git command held it) — run `{report.repair}`")
            return "\n".join(lines), report.to_json(), True

        return call(render)

    @tool(annotations=writes(idempotent=True), description=(
        "Copy personal memories into the project outbox (new ids; originals stay personal), then "
        "memory_submit them. local_approve: approved without PR review (solo projects)."))  # fmt: skip
    def memory_propose(
        ids: Annotated[Ids, _field(description="Personal memory ids.")],
        local_approve: bool = False,
    ) -> Any:  # fmt: skip
        def render(ctx: Context) -> tuple[str, dict[str, Any], bool]:
            from ..review import propose

            proposals = propose(ctx, ids, to="project", local_approve=local_approve)
            lines = [p.line() for p in proposals]
            lines.append("next: memory_submit with ids " + ", ".join(p.copy.id for p in proposals) + " once the user agrees")
            return "\n".join(lines), {"proposed": [p.to_json() for p in proposals]}, True

        return call(render)

    @tool(annotations=writes(idempotent=False), description=(
        "Record the user's review decision: one step up (proposed → approved → published), reject (with a "
        "note), or resubmit (rejected → proposed). For a GitHub PR, memory_pr_status does this."))  # fmt: skip
    def memory_promote(
        id: Id,
        reject: bool = False,
        resubmit: bool = False,
        note: Annotated[str | None, _field(description="Why; required to reject.")] = None,
        by: Annotated[str | None, _field(description="Default: git user.name.")] = None,
    ) -> Any:  # fmt: skip
        def render(ctx: Context) -> tuple[str, dict[str, Any], bool]:
            from ..review import promote

            change = promote(ctx, id, reject=reject, resubmit=resubmit, note=note, by=by)
            lines = change.lines()
            if change.in_repo:
                lines.append("This memory lives in the repository: commit and push the change so the team sees it.")
            return "\n".join(lines), change.to_json(), True

        return call(render)

    @tool(annotations=writes(idempotent=True), description=(
        "In a conflicted git merge or rebase: list conflicted memory files, or merge one field by field and "
        "stage it. Semantic conflicts are reported and left to the user."))  # fmt: skip
    def memory_resolve(
        target: Annotated[str | None, _field(description="Path or id; omit to list.")] = None,
    ) -> Any:  # fmt: skip
        def render(ctx: Context) -> tuple[str, dict[str, Any], bool]:
            from ..git.repo import open_repo
            from ..git.resolve import conflicted_memory_files, resolve

            if target is None:
                paths = conflicted_memory_files(open_repo(ctx))
                return ("\n".join(paths) or "(no conflicted memory files)"), {"conflicted": paths}, False
            report = resolve(ctx, target)
            after = ("staged; the user finishes with `git commit` (or `git rebase --continue`)" if report.outcome.clean
                     else "Ask the user to decide; they edit the file, then `git add` it.")  # fmt: skip
            text = "\n".join([*report.lines(), after])
            return text, report.to_json(), True

        return call(render)

    @tool(annotations=writes(idempotent=True, open_world=True), description=(
        "Map this branch's GitHub PR onto its memories' review states (merged → published, approved → "
        "approved; a local rejection is kept). Report only; apply=true (the CLI's --apply) writes them "
        "locally, never commits or pushes. Needs GH_TOKEN, GITHUB_TOKEN or gh."))  # fmt: skip
    def memory_pr_status(apply: bool = False) -> Any:
        def render(ctx: Context) -> tuple[str, dict[str, Any], bool]:
            from ..git.pr_status import pr_status
            from ..git.pr_status import render as render_pr

            report = pr_status(ctx, apply=apply)
            return render_pr(report), report.to_json(), apply

        return call(render)

    if sorted(t.name for t in tools) != sorted(TOOL_NAMES):
        raise AssertionError(f"tools out of step with names.TOOL_NAMES: {[t.name for t in tools]}")
    return _server_class()("open-memex", version=__version__, instructions=guidance.handshake(drafts, where),
                           tools=tools, log_level="WARNING")  # fmt: skip


def _server_class() -> Any:
    """The SDK's server with our answer to arguments a tool cannot take: one masked line
    naming the fields (the SDK's repeats the values, secrets included) and refusing unknown
    arguments (a misspelled ``kind`` for ``type`` was dropped and the memory saved as a fact)."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
    from pydantic import ValidationError

    class Server(MCPServer):
        async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
            tool = self._tool_manager.get_tool(name)
            if tool is None:
                raise ToolError(safe(f"open-memex error: unknown tool {masked(name, 80)!r} — the tools are "
                                     f"{', '.join(TOOL_NAMES)}"))  # fmt: skip
            known = list((tool.parameters or {}).get("properties", {}))
            unknown = sorted(set(arguments) - set(known))
            if unknown:
                raise ToolError(safe(f"open-memex error: invalid arguments for {name}: unknown argument(s) "
                                     f"{', '.join(masked(u, 60) for u in unknown)} — the tool takes "
                                     f"{', '.join(known)} (see its input schema in tools/list)"))  # fmt: skip
            try:
                return await super().call_tool(name, arguments, context)
            except UnexpectedToolError:
                raise
            except ToolError as exc:
                if isinstance(exc.__cause__, ValidationError):
                    raise ToolError(safe(_invalid_arguments(name, exc.__cause__, arguments, known))) from None
                raise ToolError(safe(masked(str(exc)))) from None

    return Server


def _flat(text: str) -> str:
    return " ".join(text.split())


def _count_drafts(session: Session, box: list[int] | None = None) -> int:
    try:
        count = session.run(_drafts)[0]
    except Exception as exc:  # the handshake must come up even when the store cannot be read
        log.warning("could not count outbox drafts: %s", exc)
        count = 0
    if box is not None:
        box.append(count)
    return count


def serve(cwd: Path | None = None) -> int:
    """Serve on stdio until the client closes stdin. The outbox count for the handshake is
    taken on a thread while the SDK imports (≈ 0.8 s), so it costs no start-up time."""
    logging.basicConfig(level=os.environ.get("OPEN_MEMEX_LOG", "WARNING").upper(), stream=sys.stderr,
                        format="open-memex mcp: %(levelname)s %(message)s")  # fmt: skip
    session = Session.start(cwd)
    box: list[int] = []
    counter = threading.Thread(target=_count_drafts, args=(session, box), daemon=True)
    counter.start()
    import mcp.server.mcpserver  # noqa: F401  (the slow import, overlapped with the count)

    counter.join()
    server = build(session, box[0] if box else 0)
    try:
        import anyio

        from .wire import serve_stdio

        anyio.run(serve_stdio, server)  # Ctrl-C: KeyboardInterrupt, which the CLI exits 130 on
    finally:
        session.close()
    return 0
