"""The user's own regexes (config ``redactPatterns``, ``redactAllowlist``) run with a time
limit: one that backtracks without end stops the command with one line naming it, never
hangs it and never lets the text through unmasked. The real CLI and hook, each bounded by a
subprocess timeout, so a hang fails the test instead of hanging the run."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from openmemex.redact.user import as_re_reads, compile_user

REDOS = "(a|aa)+$"  # the family of a naive (\w+\s?)+= : exponential on a run of a's then a b
TEXT = "remember that the key is " + "a" * 40 + "b"
LIMIT_S = 60  # the old code spun for minutes on TEXT; the time limit is 2 s


def om(*args: str, input: str | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run([sys.executable, "-m", "openmemex", *args], input=input, capture_output=True,
                              text=True, cwd=cwd, timeout=LIMIT_S)  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail(f"`open-memex {' '.join(args)}` still ran after {LIMIT_S} s: a user pattern hung it")


def one_line_naming(err: str, key: str, pattern: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert repr(pattern) in lines[0] and f"open-memex config set {key}" in lines[0], err
    assert "Traceback" not in err and "internal error" not in err


def test_a_backtracking_pattern_stops_redact_and_add_with_one_line(data_root: Path) -> None:
    assert om("config", "set", "redactPatterns", json.dumps([REDOS])).returncode == 0
    shown = om("redact", "-", input=TEXT)
    assert (shown.returncode, shown.stdout) == (1, ""), shown.stderr
    one_line_naming(shown.stderr, "redactPatterns", REDOS)
    added = om("add", TEXT)
    assert added.returncode == 1
    one_line_naming(added.stderr, "redactPatterns", REDOS)
    assert not list((data_root / "memories").rglob("*.md"))  # nothing stored, masked or not
    assert not (data_root / "logs" / "crash.log").exists()


def test_a_backtracking_pattern_fails_the_prompt_hook_open(data_root: Path, tmp_path: Path) -> None:
    """A hook never breaks the session: exit 0, no output, the one line on stderr."""
    assert om("config", "set", "redactPatterns", json.dumps([REDOS])).returncode == 0
    payload = {"prompt": TEXT, "cwd": str(tmp_path), "hook_event_name": "UserPromptSubmit", "session_id": "s"}
    hook = om("hook", "user-prompt", input=json.dumps(payload))
    assert (hook.returncode, hook.stdout) == (0, ""), hook.stderr
    assert hook.stderr.startswith("open-memex hook user-prompt: ")
    one_line_naming(hook.stderr, "redactPatterns", REDOS)
    assert not list((data_root / "memories").rglob("*.md"))


def test_a_backtracking_allowlist_entry_stops_the_command_too(data_root: Path) -> None:
    """Allowlist entries are matched against each secret found: past the limit, the secret
    is neither let through nor left unmasked in silence."""
    assert om("config", "set", "redactPatterns", json.dumps(["a{30,}b"])).returncode == 0
    assert om("config", "set", "redactAllowlist", json.dumps([REDOS])).returncode == 0
    shown = om("redact", "-", input=TEXT)
    assert (shown.returncode, shown.stdout) == (1, ""), shown.stderr
    one_line_naming(shown.stderr, "redactAllowlist", REDOS)


def test_an_honest_pattern_on_a_large_text_is_within_the_limit(data_root: Path) -> None:
    assert om("config", "set", "redactPatterns", json.dumps([r"[A-Za-z0-9+/]{40,}={0,2}", "ACME-[0-9]{6}"])).returncode == 0
    block = "".join(f"line {i} key {'Zq8vT2pL' * 6} and ACME-{i % 10**6:06d} end\n" for i in range(25_000))
    assert len(block) > 2_000_000
    shown = om("redact", "-", input=block)
    assert shown.returncode == 0, shown.stderr
    assert "ACME-000123" not in shown.stdout and "Zq8vT2pL" * 6 not in shown.stdout


# Patterns re read before: still accepted at `config set`, and matching what re matched.
RE_READ = [
    ("ACME-[0-9]{6}", "id ACME-123456 and ACME-12"),
    ("a{e<=1}", "a{e<=1} b a"),  # a literal to re; fuzzy matching to regex unless escaped
    ("(?:ab){e<=1}+", "ab{e<=1}}} abx"),  # re: "}" repeated; an error to regex as written
    ("(?x) tok { 1}", "tok{1} tok{ 1} tok"),  # verbose: "{ 1}" is no repeat to re
    ("x{}y{,}z{2,}", "x{}yyz x{}zz"),
    (r"\N{EM DASH}{2}\{", "a——{ —{"),
    ("[[a]+", "[[a] b"),  # "possible nested set": re warns, and reads a set
    (r"(?i)bearer\s+\w{8,}", "Bearer abcdefgh12"),
]


@pytest.mark.parametrize(("pattern", "text"), RE_READ)
def test_patterns_re_read_are_read_alike(pattern: str, text: str) -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        expected = [m.span() for m in re.finditer(pattern, text)]
    compiled = compile_user(pattern)
    assert compiled is not None, as_re_reads(pattern)
    assert [m.span() for m in compiled.finditer(text, timeout=5)] == expected


def test_config_set_accepts_what_re_read_and_refuses_what_neither_reads(data_root: Path) -> None:
    patterns = [p for p, _ in RE_READ] + [r"\p{Lu}{3}-\d+"]  # the last: regex's own syntax
    accepted = om("config", "set", "redactPatterns", json.dumps(patterns))
    assert accepted.returncode == 0, accepted.stderr
    assert json.loads(om("config", "get", "redactPatterns").stdout) == patterns
    masked = om("redact", "-", input="code ABC-123 here a{e<=1} there")
    assert masked.returncode == 0 and "ABC-123" not in masked.stdout and "a{e<=1}" not in masked.stdout
    refused = om("config", "set", "redactPatterns", '["(sk_"]')
    assert refused.returncode == 2 and "'(sk_' is not a valid regular expression" in refused.stderr


def test_regex_is_loaded_only_for_user_patterns(data_root: Path) -> None:
    """Every command's start-up is measured: without user patterns nothing loads `regex`, and
    with them a read that redacts nothing (search) does not either."""
    script = ("import sys\nfrom openmemex.cli.app import run\nrc = run(sys.argv[1:])\n"
              "sys.stderr.write('\\nREGEX ' + str('regex' in sys.modules))\nsys.exit(rc)\n")  # fmt: skip

    def loads_regex(*args: str) -> bool:
        proc = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True,
                              timeout=LIMIT_S, env={**os.environ, "OPEN_MEMEX_NO_FASTPATH": "1"})  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        return proc.stderr.rsplit("REGEX ", 1)[1] == "True"

    assert not loads_regex("add", "the deploy token is ghp_" + "Ab1" * 12, "--scope", "personal")
    assert not loads_regex("search", "deploy")
    assert om("config", "set", "redactPatterns", '["ACME-[0-9]{6}"]').returncode == 0
    assert not loads_regex("search", "deploy")
    assert loads_regex("add", "ACME-123456 is the vendor code", "--scope", "personal")
