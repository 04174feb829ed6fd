"""``scan`` and ``check`` for shared repositories, without the CLI framework.

The pre-commit hooks run these on every commit, so they must not pay for cyclopts and rich
(≈ 80–100 ms): ``entry.py`` hands a plain command line straight to :func:`fast`, and the
cyclopts commands in ``shared_cmds.py`` call the same :func:`run_scan` / :func:`run_check`,
so both ways print the same lines and exit with the same codes (0 clean, 1 found, 2 usage).
Anything :func:`fast` does not recognise (``--help``, an unknown option, a repeated one, an
argument that is not valid UTF-8) goes to the full CLI, so help and errors read as elsewhere.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import MemexError, UsageError, repository_refused
from ..terminal import safe, safe_line
from .argv import Spec, text
from .argv import parse as read_argv
from .pipes import disk_full, encoding_refused, finish, output_closed

if TYPE_CHECKING:
    from ..check import Problem
    from ..scan import ScanReport

PROG = "open-memex"
SCAN_FORMATS = ("text", "json", "github", "sarif")
CHECK_FORMATS = ("text", "json", "github")
ALLOW_HINT = "a deliberate example stays with `open-memex:allow` on its line"
# a file a gate was given but could not scan: no marker can exempt it, so the way out is to
# check it by other means and take it out of the gate's hands
UNSCANNED_HINT = {
    False: "check it another way, then leave it out of the scan (config `scanExclude`; pre-commit: the hook's `exclude:`)",
    True: "check it another way, then list it in config `scanExclude` or commit it on its own with `git commit --no-verify`",
}


def run_scan(paths: list[str], *, staged: bool = False, format: str = "text") -> int:
    """Scan, print in ``format``, and return 0 (clean) or 1 (a secret, or a named or staged
    file not read or not scanned)."""
    _check_format(format, SCAN_FORMATS)
    from ..scan import load_config, scan_paths, scan_staged

    cwd = Path.cwd()
    config = load_config()
    report = scan_staged(paths, config, cwd) if staged else scan_paths(paths, config, cwd)
    if report.note:
        _note(f"{PROG}: {report.note}")
    for path, reason in report.skipped:
        if reason != "binary":
            _note(f"{PROG}: note: skipped {path} ({reason})")
    for path, reason in report.unscanned:
        _note(f"{PROG}: error: not scanned: {path} ({reason}) — a gate passes only what it read "
              f"and `open-memex:allow` cannot exempt a whole file: {UNSCANNED_HINT[staged]}")  # fmt: skip
    for path, reason in report.unreadable:
        _note(f"{PROG}: error: cannot read {path} ({reason}) — check its permissions")
    for path, pattern in report.excluded:
        _note(f"{PROG}: note: excluded {path} (scanExclude `{pattern}`)")
    if format == "json":
        _json(report.to_json())
    elif format == "sarif":
        _json(sarif(report))
    elif format == "github":
        for leak in report.leaks:
            _line(annotation(leak.path, leak.line, leak.col, f"open-memex: possible secret ({leak.rule})",
                             f"{leak.shown} — remove it before it is committed; {ALLOW_HINT}"))  # fmt: skip
    else:
        for leak in report.leaks:
            _line(safe_line(f"{leak.path}:{leak.line}:{leak.col} {leak.rule} {leak.shown}"))
    if format == "text":
        where = f"{report.files}{' staged' if staged else ''} file{'s' * (report.files != 1)}"
        if report.excluded:
            where += f" ({len(report.excluded)} excluded by scanExclude)"
        if report.leaks:
            count = len(report.leaks)
            _note(f"{PROG}: {count} possible secret{'s' * (count != 1)} in {report.leaked_files} of {where} — remove "
                  f"{'them' if count != 1 else 'it'} before committing ({ALLOW_HINT}); a secret already pushed must be rotated")  # fmt: skip
        elif not report.note and _at_terminal():
            _note(f"{PROG}: no secrets in {where}")
    return 1 if report.leaks or report.unreadable or report.unscanned else 0


def run_check(paths: list[str], *, base: str | None = None, format: str = "text") -> int:
    """Check memory files, print in ``format``, and return 0 (pass) or 1 (problems)."""
    _check_format(format, CHECK_FORMATS)
    from ..check import check_memory_pr, summary
    from ..git.memory_pr import gather
    from ..scan import load_config

    config = load_config()
    gathered = gather(Path.cwd(), config.memory_dir, base, paths)
    problems = check_memory_pr(gathered.pr, config.redact_patterns)
    checked = [path for path, _ in gathered.pr.changed]
    if format == "json":
        _json({"ok": not problems, "mode": gathered.mode, "base": gathered.base, "checked": checked,
               "skipped": gathered.skipped, "counts": summary(problems), "problems": [p.to_json() for p in problems]})  # fmt: skip
    elif format == "github":
        for problem in problems:
            _line(annotation(problem.path, problem.line, None, f"open-memex check: {problem.check}", f"{problem.message} — {problem.fix}"))
    else:
        for problem in problems:
            _line(safe_line(problem.text()))  # one problem, one line: a line break in a file name is shown escaped
    if format == "text" and (problems or _at_terminal()):
        _note(_check_summary(problems, checked, gathered.mode, gathered.base))
    return 1 if problems else 0


def _at_terminal() -> bool:
    """A clean result is said only to a person: pre-commit runs a hook in parallel batches and
    shows a failing hook's whole output, where "passed" lines of other batches only confuse."""
    try:
        return sys.stderr is not None and sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def _check_summary(problems: list[Problem], checked: list[str], mode: str, base: str | None) -> str:
    what = {"base": f"changed since {(base or '')[:12]}", "paths": "given", "head": "in HEAD"}[mode]
    files = f"{len(checked)} memory file{'s' * (len(checked) != 1)} {what}"
    if not problems:
        return f"{PROG}: check passed: {files}"
    count = len({p.path for p in problems})
    return f"{PROG}: check failed: {len(problems)} problem{'s' * (len(problems) != 1)} in {count} file{'s' * (count != 1)} ({files})"


def _check_format(value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise UsageError(f"unknown --format {value!r} — use one of: {', '.join(allowed)}")


# -- machine formats ---------------------------------------------------------------------------
def annotation(path: str, line: int, col: int | None, title: str, message: str) -> str:
    """A GitHub Actions ``::error`` workflow command, escaped as the runner expects."""
    where = f"file={_prop(path)},line={line}" + (f",col={col}" if col is not None else "")
    return f"::error {where},title={_prop(title)}::{_data(safe(message))}"


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: str) -> str:
    return _data(safe(text)).replace(":", "%3A").replace(",", "%2C")


def sarif(report: ScanReport) -> dict[str, Any]:
    """A minimal, valid SARIF 2.1.0 log (code scanning uploads take it as is)."""
    from .. import __version__

    rules = sorted({leak.rule for leak in report.leaks})
    number = {rule: n for n, rule in enumerate(rules)}
    results = [{
        "ruleId": leak.rule,
        "ruleIndex": number[leak.rule],
        "level": "error",
        "message": {"text": f"possible secret ({leak.rule}): {leak.shown}"},
        "locations": [{"physicalLocation": {
            "artifactLocation": {"uri": _uri(leak.path)},
            "region": {"startLine": leak.line, "startColumn": leak.col},
        }}],
    } for leak in report.leaks]  # fmt: skip
    driver = {"name": "open-memex", "version": __version__, "semanticVersion": __version__,
              "rules": [{"id": rule, "shortDescription": {"text": f"possible secret ({rule})"}} for rule in rules]}  # fmt: skip
    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{"tool": {"driver": driver}, "columnKind": "unicodeCodePoints", "results": results}],
    }


def _uri(path: str) -> str:
    """A relative URI reference for ``path``: its bytes on disk percent-encoded, so a file
    name that is not valid UTF-8 (``bad\\xffname`` arrives as a lone surrogate) becomes
    ``bad%FFname`` — a valid SARIF log, where encoding the text would raise."""
    from urllib.parse import quote

    return quote(os.fsencode(path.replace(os.sep, "/")), safe="/")


def _json(document: Any) -> None:
    from ..terminal import json_text  # json is loaded only for --format json/sarif

    sys.stdout.write(json_text(document, indent=2) + "\n")


def _line(text: str) -> None:
    sys.stdout.write(text + "\n")


def _note(text: str) -> None:
    sys.stderr.write(safe_line(text) + "\n")


# -- the fast path -------------------------------------------------------------------------------
_FORMAT = {"--format": ("format", text)}
_SPECS = {
    "scan": Spec(flags={"--staged": ("staged", True)}, options=_FORMAT, positionals=(0, None)),
    "check": Spec(options={**_FORMAT, "--base": ("base", text)}, positionals=(0, None)),
}


def parse(argv: list[str]) -> tuple[str, list[str], dict[str, Any]] | None:
    """``scan``/``check`` command lines made only of known options and paths, or None."""
    if not argv or argv[0] not in _SPECS:
        return None
    parsed = read_argv(argv[1:], _SPECS[argv[0]])
    if parsed is None or "" in parsed[0]:
        return None
    return argv[0], *parsed


def fast(argv: list[str]) -> int | None:
    """Run ``scan``/``check`` without cyclopts when the command line is plain, else None."""
    parsed = parse(argv)
    if parsed is None:
        return None
    command, paths, values = parsed
    runner: Callable[..., int] = run_scan if command == "scan" else run_check
    return finish(guarded(lambda: runner(paths, **values)))


def guarded(run: Callable[[], int]) -> int:
    """The CLI's error handling (``app.run``) for the fast path: a user error is one line and
    its exit code, Ctrl-C 130, a closed stdout 141, our bug 70 with the traceback logged."""
    try:
        return run()
    except MemexError as exc:
        _note(f"{PROG}: error: {exc}")
        return exc.exit_code
    except KeyboardInterrupt:
        _note(f"{PROG}: interrupted")
        return 130
    except BrokenPipeError:
        return output_closed()
    except Exception as exc:
        full = disk_full(exc) or encoding_refused(exc)
        if full is not None:
            return full
        refused = repository_refused(exc)
        if refused is not None:
            _note(f"{PROG}: error: {refused}")
            return 1
        from ..crashlog import summary

        _note(f"{PROG}: {summary(exc)}")
        return 70


