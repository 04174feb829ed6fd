"""The cyclopts application behind ``open-memex`` and ``git memex``.

One error handler for every command: a ``MemexError`` becomes one line on stderr and its
exit code; Ctrl-C exits 130; anything else is our bug: a short note, the traceback in
``<data root>/logs/crash.log``, exit 70.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Sequence

from cyclopts import App
from rich.text import Text

from .. import __version__
from ..errors import MemexError
from . import git_cmds, memories, store_cmds

app = App(
    help="open-memex — a git-native, local-first memory layer for AI coding agents.\n\n"
    "Save what a session learned as small Markdown files, find it again with full-text search, "
    "and share it with your team through git review.",
    version=__version__,
    help_formatter="plain",
    version_flags=["--version", "-V"],
    version_format="plaintext",
    help_format="plaintext",
    error_formatter=lambda error: Text(f"open-memex: error: {_one_line(error)}"),
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


def run(tokens: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if tokens is None else tokens)
    try:
        result = app(argv, exit_on_error=False, print_error=True, result_action="return_value")
    except MemexError as exc:
        sys.stderr.write(f"open-memex: error: {exc}\n")
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("open-memex: interrupted\n")
        return 130
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except Exception as exc:
        import cyclopts

        if isinstance(exc, cyclopts.CycloptsError):
            return 2
        if type(exc).__module__.split(".")[0] in ("pygit2", "_pygit2"):
            # the repository itself is in a state libgit2 refuses (corrupt HEAD, locked refs, …)
            sys.stderr.write(f"open-memex: error: git: {exc} — check the repository with `git status`\n")
            return 1
        return _crash(exc)
    if isinstance(result, bool):
        return 0 if result else 1
    return result if isinstance(result, int) else 0


def _crash(exc: BaseException) -> int:
    from ..paths import data_root

    log = data_root() / "logs" / "crash.log"
    try:
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("a", encoding="utf-8") as fh:
            fh.write("".join(traceback.format_exception(exc)) + "\n")
        where = f"; details in {log}"
    except OSError:
        where = ""
    sys.stderr.write(f"open-memex: internal error: {type(exc).__name__}: {exc}{where}\n")
    return 70


def main() -> None:
    sys.exit(run())


def git_main() -> None:
    """``git memex …``: git runs this from the user's current directory."""
    sys.exit(run())
