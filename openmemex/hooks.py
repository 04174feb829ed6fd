"""Agent-host hooks for Claude Code and Codex: ``open-memex hook session-start |
user-prompt | stop``.

Both hosts run a command per event with the event as JSON on stdin (``session_id``,
``cwd``, ``prompt`` for a prompt, ``source`` for a session start) and read JSON from its
stdout: ``hookSpecificOutput.additionalContext`` reaches the model, ``systemMessage`` is
shown to the user. Codex validates that output strictly (no unknown keys), so only those
fields are ever written.

- ``session-start``: the injected block (``inject.session_block``), on startup, clear and
  compact (a resumed session already has it).
- ``user-prompt``: keyword capture; a capture is handed to the model at once (D73: "the
  user's words are stored — do not memory_add them again") and the user is told what was
  saved. This runs on every prompt of every session, so a prompt without a trigger word
  returns before anything but this module, ``json`` and ``capture`` is imported, and
  without opening the index.
- ``stop``: tells the user which memories the agent saved during the turn (design
  "memory visibility": nothing is saved behind their back).

A hook never breaks the session: any failure is one line on stderr, no output, exit 0.
"""

from __future__ import annotations

import contextlib
import json
import sys
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

    from .capture import Scan
    from .context import Context
    from .echo import CleanMemo

EVENTS = ("session-start", "user-prompt", "stop")
SESSION_TTL_S = 7 * 86400
# init gives a hook 10 s (hookconf.EVENTS); another process holding the store's write lock that
# long is stuck, so a capture gives up well before the host kills the hook (SQLite's own busy
# wait, 5 s, comes on top of this)
HOOK_LOCK_WAIT_S = 3.0


def run(event: str, stdin: IO[str] | None = None, stdout: IO[str] | None = None) -> int:
    stdin = stdin if stdin is not None else sys.stdin
    stdout = stdout if stdout is not None else sys.stdout
    if event not in EVENTS:
        sys.stderr.write(f"open-memex: error: unknown hook event {event!r} — use one of: {', '.join(EVENTS)}\n")
        return 2
    _warnings.clear()
    try:
        payload = _payload(stdin.read())
        if event == "user-prompt":
            from .capture import scan

            prompt = payload.get("prompt")
            found = scan(prompt) if isinstance(prompt, str) else None
            if found is None or not (found.hits or found.dropped):
                return 0  # the common case: nothing imported, nothing opened
            document = user_prompt(payload, found)
        elif event == "session-start":
            document = session_start(payload)
        else:
            document = stop(payload)
        if document:
            # ASCII escapes: valid JSON whatever encoding the host gave our stdout (Windows
            # pipes use the ANSI code page; "→" and Chinese would not encode there)
            stdout.write(json.dumps(document, ensure_ascii=True) + "\n")
            stdout.flush()
    except KeyboardInterrupt:  # the host (or its user) stopped the hook: one line, no traceback
        _warnings.clear()
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write(f"open-memex hook {event}: interrupted\n")
        return 130
    except Exception as exc:  # fail open: the user's session matters more than a memory
        from .crashlog import summary
        from .errors import MemexError

        line = str(exc) if isinstance(exc, MemexError) else summary(exc)
        _warnings.clear()  # the failure is the one line
        from .terminal import safe

        with contextlib.suppress(OSError, ValueError, LookupError):  # controls shown, never sent to the terminal
            encoding = sys.stderr.encoding or "ascii"  # and what stderr cannot encode escaped, not an error
            text = safe(f"open-memex hook {event}: {line}") + "\n"
            sys.stderr.write(text.encode(encoding, "backslashreplace").decode(encoding))
    finally:
        _flush_warnings()
    return 0


_warnings: list[str] = []  # what the run noticed on the way (a teammate's broken file …): one line at the end


def _flush_warnings() -> None:
    """A hook's stderr is one line however many files were skipped: the first, and how many more."""
    from .terminal import safe

    if _warnings:
        more = f" (and {len(_warnings) - 1} more — see `open-memex audit`)" if len(_warnings) > 1 else ""
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write(f"open-memex: {safe(_warnings[0])}{more}\n")
        _warnings.clear()


def _payload(text: str) -> dict[str, Any]:
    from .errors import MemexError

    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):  # the host's input, not our bug: no crash log
        raise MemexError("the agent host sent a payload that is not JSON — nothing done") from None
    return value if isinstance(value, dict) else {}


def _context(payload: dict[str, Any]) -> Context:
    import os
    from pathlib import Path

    from .context import Context

    cwd = payload.get("cwd")
    here = Path(cwd) if isinstance(cwd, str) and cwd and os.path.isdir(cwd) else Path.cwd()
    ctx = Context.load(cwd=here, warn=_warnings.append)
    ctx.lock_wait_s = HOOK_LOCK_WAIT_S
    return ctx


def _output(event_name: str, context: str = "", message: str = "", memo: CleanMemo | None = None) -> dict[str, Any]:
    """The host's document. ``additionalContext`` enters the agent's transcript as the MCP
    tools' results do, so it is masked and escaped by the same function (``echo.for_transcript``)."""
    document: dict[str, Any] = {}
    if context:
        from .echo import for_transcript

        document["hookSpecificOutput"] = {"hookEventName": event_name,
                                          "additionalContext": for_transcript(context, memo)}  # fmt: skip
    if message:
        document["systemMessage"] = message
    return document


# -- events ------------------------------------------------------------------------------
def user_prompt(payload: dict[str, Any], found: Scan) -> dict[str, Any]:
    from .capture import capture
    from .guidance import handoff

    ctx = _context(payload)
    if not ctx.config.values.get("keywordCaptureEnabled", True):
        return {}
    with ctx:
        saved, dropped = capture(ctx, found)
    told = [f"open-memex: remembered → {c.scope}: \"{_preview(c.body)}\" (id {c.id})" for c in saved]
    told += [f"open-memex: \"{d.pattern}\" matched but nothing was saved: \"{_preview(d.body)}\" "
             + ("— " if d.reason == "refused" else "is ") + d.told() for d in dropped]  # fmt: skip
    return _output("UserPromptSubmit", handoff([(c.id, c.scope, c.body) for c in saved]), "\n".join(told))


def session_start(payload: dict[str, Any]) -> dict[str, Any]:
    from . import freshness
    from .echo import MEMO_FILE, CleanMemo
    from .git.sync_status import outbox_count
    from .guidance import outbox_note
    from .inject import estimate_tokens, session_block

    if payload.get("source") == "resume":
        return {}  # the resumed transcript already holds the block
    ctx = _context(payload)
    with ctx:
        _remember_turn(ctx, payload)
        if not ctx.config.values.get("injectOnFirstTurn", True):
            return {}
        freshness.sync_folders(ctx, [*ctx.folders("personal"), *ctx.folders("project")])  # once, for both
        note = outbox_note(outbox_count(ctx, synced=True))
        budget = int(ctx.config.values.get("injectTokens", 800)) - (estimate_tokens(note) + 1 if note else 0)
        memo = CleanMemo(ctx.root / MEMO_FILE, ctx.config.masking_rules)  # the scanner loads only for a text not seen clean
        block = session_block(ctx, budget=max(budget, 0), synced=True, memo=memo)
    text = block.text
    if note:
        text = (text + "\n" if text else "") + note
    told = ""
    if block.unvetted:  # say why, or an upgrade (or a review checkout) silently drops instructions
        many = block.unvetted > 1
        told = (f"open-memex: {block.unvetted} approved memor{'ies' if many else 'y'} not shown as reviewed: "
                f"{'their approval is' if many else 'its approval is'} not on the default branch yet — once the PR "
                "is approved: `open-memex pr-status --apply` on its branch, commit, push, merge")  # fmt: skip
    document = _output("SessionStart", text, told, memo)
    memo.save()
    return document


def stop(payload: dict[str, Any]) -> dict[str, Any]:
    from . import freshness
    from .index import placeholders

    ctx = _context(payload)
    with ctx:
        since = _remember_turn(ctx, payload)
        if since is None:
            return {}
        folders = [*ctx.folders("personal"), *ctx.folders("project")]
        freshness.sync_folders(ctx, folders)
        dirs = [str(f.path) for f in folders]
        rows = ctx.conn.execute(
            f"SELECT id, scope, content FROM memories WHERE dir IN ({placeholders(dirs)}) "
            "AND created_at >= ? AND source IN ('tool', 'inference', 'user', 'cli') ORDER BY created_at",
            [*dirs, since],
        ).fetchall()
    if not rows:
        return {}
    lines = [f"open-memex: {len(rows)} memor{'y was' if len(rows) == 1 else 'ies were'} saved during this turn "
             "(review: open-memex list --scope both):"]  # fmt: skip
    lines += [f"  [{r['scope']}] \"{_preview(r['content'])}\" (id {r['id']})" for r in rows[:10]]
    if len(rows) > 10:
        lines.append(f"  … and {len(rows) - 10} more")
    return _output("Stop", message="\n".join(lines))


def _preview(text: str, width: int = 80) -> str:
    from .terminal import safe

    flat = " ".join(text.split())
    return safe(flat if len(flat) <= width else flat[: width - 1] + "…")


def _session_file(ctx: Context, payload: dict[str, Any]) -> Path | None:
    import hashlib

    session = payload.get("session_id")
    if not isinstance(session, str) or not session:
        return None
    name = hashlib.sha256(session.encode("utf-8", "surrogatepass")).hexdigest()[:24]  # never a path from input
    return ctx.root / "sessions" / f"{name}.json"


def _remember_turn(ctx: Context, payload: dict[str, Any]) -> float | None:
    """Record now as the start of the next turn; return when the previous one started
    (None when this session was never seen: no baseline to compare against)."""
    import time

    from .store import write_atomic

    path = _session_file(ctx, payload)
    if path is None:
        return None
    previous: float | None = None
    try:
        value = json.loads(path.read_text("utf-8")).get("since")
        previous = float(value) if isinstance(value, (int, float)) else None
    except (OSError, ValueError, AttributeError):
        previous = None
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps({"since": time.time()}))
    if previous is None:
        _prune(path.parent)
    return previous


def _prune(folder: Path) -> None:
    import time

    cutoff = time.time() - SESSION_TTL_S
    for entry in folder.glob("*.json"):
        try:
            if entry.stat().st_mtime < cutoff:
                entry.unlink()
        except OSError:
            continue
