"""The cyclopts application behind ``open-memex`` and ``git memex``.

One error handler for every command: a ``MemexError`` or a command-line mistake becomes one
line on stderr (``open-memex: error: …``) and its exit code (2 for usage); Ctrl-C exits 130;
a closed stdout (``… | head``) ends quietly with 141, as git does; anything else is our
bug: a short note, the traceback in ``<data root>/logs/crash.log``, exit 70.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from cyclopts import App
from rich.text import Text

from .. import __version__
from ..errors import IndexDamaged, MemexError, repository_refused
from ..terminal import safe
from . import git_cmds, memories, store_cmds
from .pipes import disk_full, encoding_refused, finish, output_closed
from .tip import HELP_FLAGS as _HELP_FLAGS
from .tip import TIP as TIP
from .tip import first_run_tip as first_run_tip

if TYPE_CHECKING:
    from cyclopts import CycloptsError
    from rich.console import Console

PROG = "open-memex"
EXIT_USAGE = 2

app = App(
    help="open-memex — a git-native, local-first memory layer for AI coding agents.\n\n"
    "Save what a session learned as small Markdown files, find it again with full-text search, "
    "and share it with your team through git review.",
    version=__version__,
    help_formatter="plain",
    version_flags=["--version", "-V"],
    version_format="plaintext",
    help_format="plaintext",
    error_formatter=lambda error: Text(f"{PROG}: error: {safe(_one_line(error))}"),
)


def _one_line(error: object) -> str:
    text = " ".join(str(error).split())
    return text[:1].lower() + text[1:] if text else "invalid command line"


for command in (
    memories.add, memories.search, memories.list_, memories.show, memories.supersede,
    memories.status, memories.forget,
    store_cmds.where, store_cmds.scopes, store_cmds.reindex, store_cmds.migrate,
    store_cmds.config, store_cmds.redact, store_cmds.doctor,
    git_cmds.submit, git_cmds.pull, git_cmds.push, git_cmds.sync_status, git_cmds.propose,
    git_cmds.promote, git_cmds.resolve, git_cmds.merge_driver, git_cmds.pr_status, git_cmds.setup,
):  # fmt: skip
    app.command(command, name=command.__name__.rstrip("_").replace("_", "-"))
app.command("openmemex.cli.demo:demo", name="demo", help="A guided tour in a throw-away sandbox (never touches your data).")
# Lazy: `mcp` imports the MCP SDK (~0.8 s) and init/uninstall the client registry, only when run.
app.command("openmemex.cli.agent_cmds:hook", name="hook", help="Run an agent-host hook (Claude Code, Codex): session-start, user-prompt or stop.")
app.command("openmemex.cli.agent_cmds:capture", name="capture", help="Preview keyword capture on a message (--dry-run).")
app.command("openmemex.cli.agent_cmds:mcp", name="mcp", help="Run the MCP server on stdio, or print a client's config snippet.")
app.command("openmemex.cli.client_cmds:init", name="init", help="Wire open-memex into your coding agents' MCP configs.")
app.command("openmemex.cli.client_cmds:uninstall", name="uninstall", help="Remove what init wrote (never touches memory data).")
# Lazy: plain scan/check command lines never get here (entry.py's fast path); help does.
app.command("openmemex.cli.shared_cmds:scan", name="scan", help="Scan files (or the staged index) for secrets; exit 1 when one is found.")
app.command("openmemex.cli.shared_cmds:check", name="check", help="Check memory files for CI and pre-commit: schema, review, chains, secrets.")
app.command("openmemex.cli.visibility_cmds:inventory", name="inventory", help="Show everything open-memex remembers (text, JSON or an HTML page).")
app.command("openmemex.cli.visibility_cmds:audit", name="audit", help="Check the memories' health (read-only); each finding names its fix.")
app.command("openmemex.cli.visibility_cmds:export", name="export", help="Write memories to a portable .tar.gz bundle (private ones only with --all).")
app.command("openmemex.cli.visibility_cmds:import_", name="import", help="Import a bundle from `open-memex export` (--dry-run to preview).")
app.command("openmemex.cli.visibility_cmds:distill_agents", name="distill-agents", help="Propose an AGENTS.md section from this project's memories.")


# What a missing positional argument is called, and a call that works (issue 6, item 11).
_MISSING: dict[tuple[str, str], tuple[str, str]] = {
    ("add", "text"): ("the memory text", f'{PROG} add "what to remember"'),
    ("search", "query"): ("the search query", f'{PROG} search "words to look for"'),
    ("supersede", "memory_id"): ("the id of the memory to replace", f'{PROG} supersede ID "the corrected text"'),
    ("supersede", "text"): ("the new text", f'{PROG} supersede ID "the corrected text"'),
    ("show", "memory_id"): ("the memory id", f"{PROG} show ID"),
    ("status", "memory_id"): ("the memory id", f"{PROG} status ID active|deprecated|retracted|archived"),
    ("status", "new_status"): ("the new status", f"{PROG} status ID active|deprecated|retracted|archived"),
    ("forget", "memory_id"): ("the memory id", f"{PROG} forget ID [--soft]"),
    ("import", "bundle"): ("the bundle to import", f"{PROG} import BUNDLE.tar.gz [--dry-run]"),
}


def run(tokens: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if tokens is None else tokens)
    undecodable = _undecodable(argv)
    if undecodable:
        _error(undecodable)
        return EXIT_USAGE
    tip = first_run_tip(argv)
    if tip:
        sys.stderr.write(tip + "\n")
    try:
        console = _help_console() if not argv or not _HELP_FLAGS.isdisjoint(argv) else None
        try:
            result = app(argv, console=console, exit_on_error=False, print_error=False, result_action="return_value")
        except IndexDamaged:
            # the damaged index was moved aside before anything was written: answer from
            # a fresh one, once (docs/protocol.md, Consistency)
            result = app(argv, console=console, exit_on_error=False, print_error=False, result_action="return_value")
    except MemexError as exc:
        _error(str(exc))
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write(f"{PROG}: interrupted\n")
        return 130
    except BrokenPipeError:
        return output_closed()
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except Exception as exc:
        import cyclopts

        if isinstance(exc, cyclopts.CycloptsError):
            _error(usage_message(exc))
            return EXIT_USAGE
        if _interrupted_in_sqlite(exc):
            sys.stderr.write(f"{PROG}: interrupted\n")
            return 130
        full = disk_full(exc) or encoding_refused(exc)
        if full is not None:
            return full
        refused = repository_refused(exc)
        if refused is not None:
            _error(refused)
            return 1
        return _crash(exc)
    if isinstance(result, bool):
        return 0 if result else 1
    return result if isinstance(result, int) else 0


def _interrupted_in_sqlite(exc: Exception) -> bool:
    """A Ctrl-C that landed inside one of our SQL functions reaches here as an sqlite3 error
    (sqlite3 drops the KeyboardInterrupt) where no caller asked ``index.is_corrupt``."""
    if "sqlite3" not in sys.modules or not isinstance(exc, sys.modules["sqlite3"].OperationalError):
        return False
    from ..index import FUNCTION_RAISED
    from ..index_schema import raised_in_functions

    return FUNCTION_RAISED in str(exc) and raised_in_functions() == "interrupt"


def _error(message: str) -> None:
    """The line every failure prints (resolve's conflict report adds its field lines);
    stored text in it is shown terminal-safe."""
    sys.stderr.write(f"{PROG}: error: {safe(message)}\n")


def _undecodable(argv: Sequence[str]) -> str | None:
    """Python hands undecodable argv bytes over as lone surrogates (surrogateescape); they
    must not reach the write path, which would store or crash on them (issue 6, item 4)."""
    from ..text import undecodable_at

    for number, token in enumerate(argv, start=1):
        at = undecodable_at(token)
        if at is not None:
            code = ord(token[at])
            byte = f" (byte 0x{code - 0xDC00:02x})" if 0xDC80 <= code <= 0xDCFF else ""
            return f"argument {number} is not valid UTF-8{byte} — pass UTF-8 text (convert it with `iconv -t UTF-8`)"
    return None


def usage_message(exc: CycloptsError) -> str:
    """A cyclopts parse error as one line that names the next step."""
    import cyclopts

    command = " ".join(exc.command_chain or ())
    helper = f"see `{PROG} {command} --help`" if command else f"see `{PROG} --help`"
    argument = exc.argument
    if isinstance(exc, cyclopts.MissingArgumentError) and argument is not None:
        if argument.field_info.is_positional:
            name = argument.field_info.name
            what, call = _MISSING.get((command, name), (f"argument {_word(name)}", ""))
            return f"missing {what} — {call or _synopsis(command, exc)}"
        return f"{exc.keyword or argument.name} needs a value — {helper}"
    if isinstance(exc, cyclopts.UnusedCliTokensError) and exc.unused_tokens:
        extra = " ".join(exc.unused_tokens)
        return f"unexpected argument{'s' if len(exc.unused_tokens) > 1 else ''}: {extra} — {helper}"
    text = _one_line(exc)
    if isinstance(exc, cyclopts.UnknownCommandError):
        # cyclopts lists eight commands and "..."; the help lists them all
        text, helper = text.split(" Available commands:")[0], f"see `{PROG} --help` for every command"
    return f"{text[:-1] if text.endswith('.') and not text.endswith('...') else text} — {helper}"


def _synopsis(command: str, exc: CycloptsError) -> str:
    """``open-memex CMD ARG…`` from the command's positional parameters."""
    words = [PROG, command]
    if exc.target is not None:
        for param in inspect.signature(exc.target).parameters.values():
            if param.kind not in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD):
                continue
            word = _word(param.name) + ("…" if str(param.annotation).startswith("list[") else "")
            words.append(word if param.default is param.empty else f"[{word}]")
    return " ".join(words)


def _word(name: str) -> str:
    return name.upper().rstrip("_").replace("_", "-")


def _help_console() -> Console:
    """rich's console, except that a closed stdout ends like every other command (rich
    itself would exit 1); built only when help or the version is printed."""
    from rich.console import Console

    class HelpConsole(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True
            raise BrokenPipeError

    return HelpConsole()


def _crash(exc: BaseException) -> int:
    from ..crashlog import summary

    sys.stderr.write(f"{PROG}: {safe(summary(exc))}\n")
    return 70


def _exit(code: int) -> None:
    sys.exit(finish(code))


def main() -> None:
    _exit(run())


git_main = main  # ``git memex …``: git runs it from the user's own folder; nothing else differs
