"""The CLI contract (issue 6, items 4, 6 and 11): undecodable arguments, terminal escapes in
stored text, --json everywhere state changes, one-line usage errors, closed pipes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from openmemex.terminal import safe
from tests.conftest import run_process
from tests.helpers import write_example

ID = re.compile(r"\b([0-7][0-9A-HJKMNP-TV-Z]{25})\b")
MAIN = "from openmemex.cli.app import main; main()"
# what must never reach a terminal raw: C0 but \t \n, DEL, C1, bidi overrides and isolates
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
HOSTILE = "title \x1b]0;pwned\x07 then \x1b[2J cleared and \u202eesrever \x9b2J csi"
VISIBLE = ("\\x1b]0;pwned\\x07", "\\x1b[2J", "\\u202eesrever")


def run_bytes(*args: str | bytes, stdin: bytes | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "LC_ALL": "C.UTF-8", "PYTHONUTF8": "1"}
    return subprocess.run([sys.executable, "-c", MAIN, *args], input=stdin, capture_output=True, env=env,
                          cwd=cwd, timeout=120)  # fmt: skip


def no_crash(data_root: Path) -> None:
    assert not (data_root / "logs" / "crash.log").exists()


# -- item 4: invalid UTF-8 in arguments ---------------------------------------------------


@pytest.mark.parametrize(
    ("args", "number"),
    [
        (["add", b"x \xff"], 2),
        (["search", b"caf\xe9"], 2),
        (["show", b"\xff\xfe"], 2),
        (["supersede", "01ABCDEFGH", b"new \xff"], 3),
        (["add", "fine text", "--tags", b"a\xfeb"], 4),
        ([b"\xff"], 1),
    ],
)
def test_invalid_utf8_argument_is_a_usage_error(args: list[str | bytes], number: int, data_root: Path) -> None:
    proc = run_bytes(*args)
    byte = next(b for a in args if isinstance(a, bytes) for b in a if b >= 0x80)
    assert proc.returncode == 2
    assert proc.stderr.decode() == (
        f"open-memex: error: argument {number} is not valid UTF-8 (byte 0x{byte:02x}) — "
        "pass UTF-8 text (convert it with `iconv -t UTF-8`)\n"
    )
    assert proc.stdout == b""
    no_crash(data_root)
    assert not list(data_root.rglob("*.md"))


def test_invalid_utf8_argument_in_process(cli: Any) -> None:
    result = cli("add", "x \udcff")
    assert result.rc == 2 and result.err.startswith("open-memex: error: argument 2 is not valid UTF-8 (byte 0xff)")


def test_redact_invalid_utf8_input(tmp_path: Path, data_root: Path) -> None:
    expected = ("open-memex: error: cannot read {}: not valid UTF-8 (byte 0xff at offset 2) — "
                "convert it first, e.g. `iconv -t UTF-8`\n")  # fmt: skip
    for args in (["redact", "-"], ["redact"], ["redact", "--json"]):
        proc = run_bytes(*args, stdin=b"x \xff tail\n")
        assert (proc.returncode, proc.stdout) == (2, b""), proc.stderr
        assert proc.stderr.decode() == expected.format("standard input")
    source = tmp_path / "latin1.txt"
    source.write_bytes(b"x \xff tail\n")
    proc = run_bytes("redact", str(source))
    assert proc.returncode == 2 and proc.stderr.decode() == expected.format(source)
    no_crash(data_root)


# -- item 6: terminal escapes ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("plain ascii, ünïcödé, 中文", "plain ascii, ünïcödé, 中文"),
        ("keep\nnew lines\tand tabs", "keep\nnew lines\tand tabs"),
        ("a \\x1b literal backslash", "a \\x1b literal backslash"),
        ("\x1b]0;pwned\x07", "\\x1b]0;pwned\\x07"),
        ("\x1b[2J\r\x00\x7f", "\\x1b[2J\\x0d\\x00\\x7f"),
        ("c1 \x85 \x9b", "c1 \\x85 \\x9b"),
        ("\u202a\u202b\u202c\u202d\u202e", "\\u202a\\u202b\\u202c\\u202d\\u202e"),
        ("\u2066\u2067\u2068\u2069", "\\u2066\\u2067\\u2068\\u2069"),
        ("lone \udcff", "lone \\udcff"),
    ],
)
def test_safe(text: str, shown: str) -> None:
    assert safe(text) == shown
    assert safe(shown) == shown  # idempotent: escapes are plain text
    assert not RAW.search(safe(text))


def assert_terminal_safe(output: str) -> None:
    assert not RAW.search(output), repr(output)
    assert all(piece in output for piece in VISIBLE), output


def test_stored_escapes_never_reach_the_terminal(cli: Any) -> None:
    added = cli("add", HOSTILE, "--scope", "personal", "--tags", "evil")
    assert added.rc == 0, added.err
    memory_id = ID.search(added.out).group(1)  # type: ignore[union-attr]
    assert_terminal_safe(cli("list", "--scope", "personal").out)
    assert_terminal_safe(cli("search", "cleared", "--scope", "personal").out)
    assert_terminal_safe(cli("show", memory_id).out)
    # a near duplicate's notice quotes the stored text on stderr
    notice = cli("add", HOSTILE + " again", "--scope", "personal").err
    assert "similar memory exists" in notice and not RAW.search(notice)
    # --json is for programs: the text round-trips exactly, and what json.dumps leaves raw
    # (C1's CSI, bidi overrides) is a \uXXXX escape, inert on a terminal
    for args in (("list", "--scope", "personal", "--json"), ("show", memory_id, "--json"),
                 ("search", "cleared", "--scope", "personal", "--json"), ("inventory", "--format", "json")):
        printed = cli(*args).out
        assert not RAW.search(printed), (args, repr(printed))
    listing = json.loads(cli("list", "--scope", "personal", "--json").out)
    assert HOSTILE in [m["content"] for s in listing["sections"] for m in s["memories"]]
    assert json.loads(cli("show", memory_id, "--json").out)["body"].strip() == HOSTILE
    hits = json.loads(cli("search", "cleared", "--scope", "personal", "--json").out)["hits"]
    assert any(hit["id"] == memory_id for hit in hits)


def test_teammates_memory_with_escapes(cli: Any, git_repo: Path) -> None:
    """A memory that arrived with `git memex pull` is as hostile as anything typed."""
    path = write_example(git_repo / ".ai" / "open-memex", body_extra="\n" + HOSTILE + "\n")
    memory_id = path.stem
    assert_terminal_safe(cli("list").out)
    assert_terminal_safe(cli("search", "cleared").out)
    assert_terminal_safe(cli("show", memory_id).out)
    status = cli("sync-status")
    assert status.rc == 0 and not RAW.search(status.out)


def test_error_and_warning_lines_are_terminal_safe(cli: Any, data_root: Path) -> None:
    missing = cli("show", "\x1b[2Jnope")
    assert missing.rc != 0 and not RAW.search(missing.err) and "\\x1b[2J" in missing.err
    unknown = cli("\x1b]0;pwned\x07")
    assert unknown.rc == 2 and not RAW.search(unknown.err)
    assert unknown.err == 'open-memex: error: unknown command "\\x1b]0;pwned\\x07" — see `open-memex --help` for every command\n'
    # the index's warnings name the file; a file name can carry escapes too
    folder = data_root / "memories" / "personal"
    folder.mkdir(parents=True)
    (folder / "evil\x1b]0;pwned\x07.md").write_text("not a memory file\n")
    for args in (("list", "--scope", "personal"), ("reindex",)):
        warned = cli(*args)
        assert warned.rc == 0 and "skipped" in warned.err and not RAW.search(warned.err), warned.err
        assert "evil\\x1b]0;pwned\\x07.md" in warned.err


def test_redact_raw_when_piped_safe_on_a_terminal(cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = tmp_path / "note.txt"
    source.write_text(HOSTILE + "\n")
    proc = run_bytes("redact", str(source))
    assert proc.returncode == 0 and proc.stdout.decode() == HOSTILE + "\n"  # byte-for-byte when piped
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    shown = cli("redact", str(source)).out
    assert_terminal_safe(shown)


# -- item 11: --json on every command that changes or reports state -------------------------


def one_json(result: Any) -> Any:
    assert result.rc == 0, result.err
    return json.loads(result.out)  # the whole of stdout is one document


def test_status_and_forget_json(cli: Any) -> None:
    first = ID.search(cli("add", "alpha fact", "--scope", "personal").out).group(1)  # type: ignore[union-attr]
    second = ID.search(cli("add", "beta fact", "--scope", "personal").out).group(1)  # type: ignore[union-attr]
    changed = one_json(cli("status", first, "deprecated", "--json"))
    assert set(changed) == {"id", "old", "new", "changed", "in_repo", "path"}
    assert (changed["id"], changed["old"], changed["new"], changed["changed"], changed["in_repo"]) == (
        first, "active", "deprecated", True, False)  # fmt: skip
    assert one_json(cli("status", first, "deprecated", "--json"))["changed"] is False
    soft = one_json(cli("forget", first, "--soft", "--json"))
    assert set(soft) == {"id", "path", "soft", "already", "in_repo", "relinked", "copies"}
    assert (soft["soft"], soft["already"]) == (True, False)
    assert one_json(cli("forget", first, "--soft", "--json"))["already"] is True
    hard = one_json(cli("forget", second, "--json"))
    assert (hard["id"], hard["soft"], hard["already"]) == (second, False, False)
    assert not Path(hard["path"]).exists()


def test_reindex_json(cli: Any, data_root: Path) -> None:
    cli("add", "gamma fact", "--scope", "personal")
    bad = data_root / "memories" / "personal" / "01BADBADBAD00000000000000000.md"
    bad.write_text("not a memory file\n")
    doc = one_json(cli("reindex", "--json"))
    assert set(doc) == {"added", "scanned", "quarantined"}
    assert (doc["added"], doc["scanned"]) == (1, 2)
    assert [q["path"] for q in doc["quarantined"]] == [str(bad)] and doc["quarantined"][0]["reason"]


def test_migrate_json(cli: Any) -> None:
    cli("add", "delta fact", "--scope", "project")
    key = json.loads(cli("where", "--json").out)["project"]
    doc = one_json(cli("migrate", "--from", key, "--to", "personal", "--dry-run", "--json"))
    assert set(doc) == {"source", "target", "dry_run", "moved", "skipped", "conflicts"}
    assert (doc["source"], doc["target"], doc["dry_run"], len(doc["moved"])) == (key, "personal", True, 1)


def test_config_json(cli: Any, data_root: Path) -> None:
    assert one_json(cli("config", "--json"))["memoryDir"] == ".ai/open-memex"
    assert one_json(cli("config", "get", "memoryDir", "--json")) == ".ai/open-memex"
    doc = one_json(cli("config", "set", "sync.autoPull", "true", "--json"))
    assert doc == {"key": "sync.autoPull", "value": True, "path": str(data_root / "config.json")}
    assert cli("config", "set", "sync.autoPull", "true").out.startswith("set sync.autoPull = True")


def test_redact_json(cli: Any, tmp_path: Path) -> None:
    source = tmp_path / "note.txt"
    source.write_text("token ghp_" + "Q7w8" * 9 + " and <private>x</private>\n")
    for args in (("redact", "--json", str(source)), ("redact", str(source), "--json")):
        doc = one_json(cli(*args))
        assert doc == {"text": "token ghp_" + "x" * 36 + " and [REDACTED]\n", "masked": ["github-pat"],
                       "private_spans": 1}  # fmt: skip


def test_review_and_merge_commands_json(cli: Any, git_repo: Path) -> None:
    personal = ID.search(cli("add", "epsilon fact", "--scope", "personal").out).group(1)  # type: ignore[union-attr]
    proposed = one_json(cli("propose", personal, "--to", "project", "--json"))["proposed"]
    assert [(p["source"], p["review_state"]) for p in proposed] == [(personal, "draft")]
    copy = proposed[0]["id"]
    assert one_json(cli("submit", copy, "--json"))["submitted"] == [{"id": copy, "review_state": "proposed"}]
    promoted = one_json(cli("promote", copy, "--json"))
    assert (promoted["id"], promoted["old"], promoted["new"], promoted["in_repo"]) == (copy, "proposed", "approved", True)
    assert [e["to"] for e in promoted["review_history"]][-1] == "approved"
    assert one_json(cli("resolve", "--json")) == {"conflicted": []}
    setup = one_json(cli("setup", "--json"))
    assert set(setup) == {"attributes", "attributes_changed", "driver_set", "driver_kept"} and setup["driver_set"]


# -- item 11: one-line usage errors ---------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["frobnicate"], 'unknown command "frobnicate" — see `open-memex --help` for every command'),
        (["serch", "x"], 'unknown command "serch". Did you mean "search"? — see `open-memex --help` for every command'),
        (["add"], 'missing the memory text — open-memex add "what to remember"'),
        (["search"], 'missing the search query — open-memex search "words to look for"'),
        (["supersede"], 'missing the id of the memory to replace — open-memex supersede ID "the corrected text"'),
        (["supersede", "01ABC"], 'missing the new text — open-memex supersede ID "the corrected text"'),
        (["show"], "missing the memory id — open-memex show ID"),
        (["status"], "missing the memory id — open-memex status ID active|deprecated|retracted|archived"),
        (["status", "01ABC"], "missing the new status — open-memex status ID active|deprecated|retracted|archived"),
        (["forget"], "missing the memory id — open-memex forget ID [--soft]"),
        (["submit"], "missing argument IDS — open-memex submit IDS…"),
        (["merge-driver", "a"], "missing argument OURS — open-memex merge-driver BASE OURS THEIRS [PATH]"),
        (["list", "--scope"], "--scope needs a value — see `open-memex list --help`"),
        (["add", "x", "--bogus"], "unknown option: --bogus. Did you mean --tags? — see `open-memex add --help`"),
        (["search", "x", "--limit", "abc"],
         "invalid value for --limit: 'abc' is not a whole number (use digits, e.g. 8) — see `open-memex search --help`"),
        (["redact", "a", "b"], "unexpected argument: b — see `open-memex redact --help`"),
        (["config", "get", "a", "b", "c"], "unexpected argument: c — see `open-memex config --help`"),
    ],
)  # fmt: skip
def test_usage_errors_are_one_line(cli: Any, args: list[str], message: str) -> None:
    result = cli(*args)
    assert (result.rc, result.out) == (2, "")
    assert result.err == f"open-memex: error: {message}\n"


def test_usage_error_as_a_real_process(data_root: Path) -> None:
    result = run_process("frobnicate-with-a-very-long-name-that-rich-would-have-wrapped-at-eighty-columns", "x")
    assert result.rc == 2 and result.err.count("\n") == 1 and result.err.startswith("open-memex: error: unknown command")


# -- item 11: a closed pipe ends quietly, as in git ----------------------------------------


def closed_stdout(*args: str, cwd: Path | None = None) -> tuple[int, str]:
    """Run with a stdout whose reader is gone before anything is written."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run([sys.executable, "-c", MAIN, *args], stdout=write_end, stderr=subprocess.PIPE,
                              cwd=cwd, timeout=120, text=True)  # fmt: skip
    finally:
        os.close(write_end)
    return proc.returncode, proc.stderr


@pytest.mark.parametrize(
    "args",
    [["list", "--scope", "personal"], ["search", "payments", "--scope", "personal"], ["show", "{id}"],
     ["sync-status"], ["list", "--scope", "personal", "--json"], ["--help"], ["add", "--help"], ["--version"]],
)  # fmt: skip
def test_closed_pipe_exits_quietly(cli: Any, git_repo: Path, data_root: Path, args: list[str]) -> None:
    memory_id = ID.search(cli("add", "payments retry with idempotency keys", "--scope", "personal").out).group(1)  # type: ignore[union-attr]
    rc, err = closed_stdout(*[a.replace("{id}", memory_id) for a in args], cwd=git_repo)
    assert (rc, err) == (141, "")
    no_crash(data_root)


def test_sync_status_into_head(cli: Any, git_repo: Path, data_root: Path) -> None:
    for number in range(50):
        assert cli("add", f"draft number {number} " + "about payments and retries " * 40).rc == 0
    script = f"{sys.executable} -c '{MAIN}' sync-status | head -3; echo \"rc=${{PIPESTATUS[0]}}\" >&2"
    proc = subprocess.run(["bash", "-c", script], capture_output=True, text=True, cwd=git_repo, timeout=120)
    assert len(proc.stdout.splitlines()) == 3
    assert proc.stderr in ("rc=0\n", "rc=141\n")
    no_crash(data_root)
