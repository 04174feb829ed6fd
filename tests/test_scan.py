"""``scan`` (issue 9, item 3): formats and exit codes, folders, memory files, the fast path
that skips the CLI framework, and ``--staged`` inside real ``git commit`` runs (``-a`` and
``-- path``) with a native ``.git/hooks/pre-commit``."""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import shlex
import socket
import string
import subprocess
import sys
from pathlib import Path

import pytest

from openmemex.cli import pipes, shared
from openmemex.cli.entry import _hook
from tests.conftest import Result, git

ROOT = Path(__file__).resolve().parent.parent
ULID = "01J0000000000000000000PB01"


def token(seed: int = 1) -> str:
    """A GitHub token shape (``ghp_`` + 36 alphanumerics), random: never a real credential."""
    rng = random.Random(seed)
    return "ghp_" + "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(36))


def console() -> list[str]:
    """The installed ``open-memex`` script (what a hook runs), else ``python -m openmemex``."""
    script = Path(sys.executable).parent / "open-memex"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "openmemex"]


def run(*args: str, cwd: Path, env: dict[str, str] | None = None) -> Result:
    proc = subprocess.run([*console(), *args], cwd=cwd, capture_output=True, text=True, timeout=60,
                          env={**os.environ, **(env or {})})  # fmt: skip
    return Result(proc.returncode, proc.stdout, proc.stderr)


def memory_text(body: str, mid: str = ULID) -> str:
    """A memory file whose generated fields (fresh ULIDs, times) look random enough to tempt a scanner."""
    from openmemex.ids import new_ulid

    return (f"---\nid: {mid}\nschema_version: 2\nscope: project\nscope_key: project__widgets__3f9a0c1d2e4b\n"
            f"type: fact\nstatus: active\ncreated_at: \"2026-01-05T10:00:00Z\"\nupdated_at: \"2026-01-05T10:00:00Z\"\n"
            f"supersedes: {new_ulid()}\nderived_from: {new_ulid()}\nreview_state: proposed\nreview_history:\n"
            f"  - at: \"2026-01-05T10:00:00Z\"\n    by: alice\n    from: draft\n    to: proposed\n---\n\n{body}\n")  # fmt: skip


@pytest.fixture
def leaky(tmp_path: Path) -> Path:
    folder = tmp_path / "files"
    folder.mkdir()
    (folder / "clean.md").write_text("nothing to see\n")
    (folder / "app.env").write_text(f"# settings\nDEBUG=1\nGITHUB_TOKEN={token()}\n")
    return folder


def test_text_lines_name_path_line_col_rule_and_mask_the_value(cli: object, leaky: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(leaky)
    result = cli("scan", "app.env", "clean.md")  # type: ignore[operator]
    assert result.rc == 1
    assert result.out == f"app.env:3:14 github-pat {token()[:4]}{'x' * 36}\n"
    assert token() not in result.out + result.err
    assert "1 possible secret in 1 of 2 files" in result.err


def test_clean_files_exit_0_and_say_so_only_to_a_person(cli: object, leaky: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = cli("scan", str(leaky / "clean.md"))  # type: ignore[operator]
    assert (result.rc, result.out, result.err) == (0, "", "")  # a hook's batch: silence
    monkeypatch.setattr(shared, "_at_terminal", lambda: True)
    result = cli("scan", str(leaky / "clean.md"))  # type: ignore[operator]
    assert (result.rc, result.out, result.err) == (0, "", "open-memex: no secrets in 1 file\n")


def test_json_format(cli: object, leaky: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(leaky)
    result = cli("scan", ".", "--format", "json")  # type: ignore[operator]
    doc = json.loads(result.out)
    assert result.rc == 1
    assert doc["findings"] == [{"path": "app.env", "line": 3, "col": 14, "rule": "github-pat", "masked": token()[:4] + "x" * 36}]
    assert (doc["files"], doc["skipped"], doc["unreadable"]) == (2, [], [])


GITHUB_LINE = re.compile(r"^::error file=[^,:\n]+,line=\d+,col=\d+,title=[^:\n]+::[^\n]+$")


def test_github_format_is_a_valid_workflow_command(cli: object, leaky: Path) -> None:
    (leaky / "a,b:c%.txt").write_text(f"token = {token(2)}\n")
    result = cli("scan", str(leaky), "--format", "github")  # type: ignore[operator]
    lines = result.out.splitlines()
    assert result.rc == 1 and len(lines) == 2
    assert all(GITHUB_LINE.match(line) for line in lines), lines
    assert "file=" + str(leaky / "a%2Cb%3Ac%25.txt") in lines[0]  # property values escaped as the runner expects
    assert ",line=3,col=14,title=open-memex%3A possible secret (github-pat)::ghp_xxx" in lines[1]


def test_sarif_format_is_a_minimal_valid_2_1_0_log(cli: object, leaky: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(leaky)
    result = cli("scan", "--format", "sarif", "app.env")  # type: ignore[operator]
    log = json.loads(result.out)
    assert result.rc == 1
    check_sarif(log)
    (hit,) = log["runs"][0]["results"]
    assert hit["ruleId"] == "github-pat" and hit["level"] == "error"
    assert hit["locations"][0]["physicalLocation"] == {"artifactLocation": {"uri": "app.env"}, "region": {"startLine": 3, "startColumn": 14}}
    assert token() not in result.out


def test_sarif_writes_a_file_name_that_is_not_utf8_as_its_bytes(cli: object, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """A file name that is not valid UTF-8 reaches Python as a lone surrogate; its URI is the
    name's bytes percent-encoded. Encoding the text raised instead — no SARIF at all, exit 1,
    and the error handler told the user to set PYTHONIOENCODING, which changes nothing."""
    monkeypatch.setattr(pipes, "output_closed", lambda: pipes.EXIT_PIPE)  # a regression fails here, not pytest's capture
    folder = tmp_path / "odd"
    folder.mkdir()
    (folder / os.fsdecode(b"bad\xffname.txt")).write_text(f"token {token(11)}\n")
    monkeypatch.chdir(folder)
    result = cli("scan", "--format", "sarif", ".")  # type: ignore[operator]
    assert (result.rc, result.err) == (1, "")
    log = json.loads(result.out)
    check_sarif(log)
    (hit,) = log["runs"][0]["results"]
    assert hit["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "bad%FFname.txt"


def test_a_lone_surrogate_is_not_blamed_on_the_outputs_encoding(monkeypatch: pytest.MonkeyPatch) -> None:
    """No encoding carries undecodable bytes, so "set PYTHONIOENCODING=utf-8" would be a fix
    that fixes nothing: that error stays a bug report, and only text a real encoding refuses
    names the output."""
    monkeypatch.setattr(pipes, "output_closed", lambda: pipes.EXIT_PIPE)
    assert pipes.encoding_refused(UnicodeEncodeError(sys.stdout.encoding, "bad\udcffname", 3, 4, "surrogates not allowed")) is None


def check_sarif(log: dict[str, object]) -> None:
    """The SARIF 2.1.0 schema's rules for the objects we emit (required fields, enums, ranges
    and ``additionalProperties: false``); checked once against the full OASIS schema too."""
    assert set(log) <= {"$schema", "version", "runs", "inlineExternalProperties", "properties"}
    assert log["version"] == "2.1.0" and isinstance(log["runs"], list)
    for run_ in log["runs"]:  # type: ignore[attr-defined]
        assert set(run_) <= {"tool", "results", "columnKind", "invocations", "artifacts", "properties"}
        assert run_["columnKind"] in ("utf16CodeUnits", "unicodeCodePoints")
        driver = run_["tool"]["driver"]
        assert set(driver) <= {"name", "version", "semanticVersion", "rules", "informationUri"} and driver["name"]
        ids = [rule["id"] for rule in driver["rules"]]
        assert len(ids) == len(set(ids))
        for rule in driver["rules"]:
            assert set(rule) <= {"id", "name", "shortDescription", "fullDescription", "help"} and rule["shortDescription"]["text"]
        for result in run_["results"]:
            assert set(result) <= {"ruleId", "ruleIndex", "level", "message", "locations"}
            assert result["level"] in ("none", "note", "warning", "error") and result["message"]["text"]
            assert ids[result["ruleIndex"]] == result["ruleId"]
            for location in result["locations"]:
                physical = location["physicalLocation"]
                assert set(physical) == {"artifactLocation", "region"} and physical["artifactLocation"]["uri"]
                assert physical["region"]["startLine"] >= 1 and physical["region"]["startColumn"] >= 1


@pytest.mark.parametrize(("argv", "code", "message"), [
    (["scan", "--format", "xml", "x"], 2, "open-memex: error: unknown --format 'xml' — use one of: text, json, github, sarif"),
    (["scan", "missing.txt"], 2, "open-memex: error: no such file or folder: missing.txt — check the path"),
    (["scan", "--bogus"], 2, "open-memex: error: unknown option: --bogus — see `open-memex scan --help`"),
    (["check", "--format", "sarif"], 2, "open-memex: error: unknown --format 'sarif' — use one of: text, json, github"),
])  # fmt: skip
def test_usage_errors_exit_2_with_one_line(cli: object, argv: list[str], code: int, message: str) -> None:
    result = cli(*argv)  # type: ignore[operator]
    assert (result.rc, result.err.strip()) == (code, message)


def test_folders_recurse_and_skip_git_binary_and_large_files(cli: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "tree"
    (root / "sub" / "deeper").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text(f"token = {token(3)}\n")
    (root / "sub" / "deeper" / "notes.md").write_text(f"the token is {token(4)}\n")
    (root / "blob.bin").write_bytes(b"\x00\x01" + f"token = {token(5)}".encode())
    (root / "big.json").write_text(f'{{"token": "{token(6)}"}}' + " " * (5 * 1024 * 1024))
    os.symlink(root / "sub", root / "loop")
    monkeypatch.chdir(root)
    result = cli("scan", ".", "--format", "json")  # type: ignore[operator]
    doc = json.loads(result.out)
    assert [f["path"] for f in doc["findings"]] == ["sub/deeper/notes.md"]
    assert doc["skipped"] == [{"path": "big.json", "reason": "larger than 5 MB (5.2 MB)"}, {"path": "blob.bin", "reason": "binary"}]
    assert "open-memex: note: skipped big.json (larger than 5 MB (5.2 MB))" in result.err


UNSCANNED = ("open-memex: error: not scanned: {path} ({why}) — a gate passes only what it read and `open-memex:allow` "
             "cannot exempt a whole file: {fix}")  # fmt: skip
NAMED_FIX = "check it another way, then leave it out of the scan (config `scanExclude`; pre-commit: the hook's `exclude:`)"
STAGED_FIX = "check it another way, then list it in config `scanExclude` or commit it on its own with `git commit --no-verify`"


def big_dump(path: Path, secret: str) -> None:
    """A 5.7 MB SQL dump with a token on its last line (over MAX_BYTES)."""
    path.write_text("INSERT INTO t VALUES (1);\n" * 220000 + f"-- token {secret}\n")


def test_a_named_file_too_large_to_scan_fails_the_run_inside_a_folder_it_is_a_note(cli: object, tmp_path: Path,
                                                                                   monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """pre-commit names each file: one the scanner skips (over 5 MB) passed the hook with exit 0,
    and pre-commit hides a passing hook's note. Named, it fails the run with a line naming it;
    inside a folder (vendored dumps) it stays a note."""
    monkeypatch.chdir(tmp_path)
    big_dump(tmp_path / "dump.sql", token(12))
    (tmp_path / "clean.md").write_text("nothing\n")
    named = cli("scan", "dump.sql", "clean.md")  # type: ignore[operator]
    assert (named.rc, named.out) == (1, "")
    assert named.err == UNSCANNED.format(path="dump.sql", why="larger than 5 MB (5.7 MB)", fix=NAMED_FIX) + "\n"
    doc = json.loads(cli("scan", "--format", "json", "dump.sql").out)  # type: ignore[operator]
    assert (doc["unscanned"], doc["skipped"], doc["files"]) == ([{"path": "dump.sql", "reason": "larger than 5 MB (5.7 MB)"}], [], 0)
    folder = cli("scan", ".")  # type: ignore[operator]
    assert (folder.rc, folder.err) == (0, "open-memex: note: skipped dump.sql (larger than 5 MB (5.7 MB))\n")


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be-bom", "utf-32", "utf-16-le-no-bom", "utf-8-sig"])
def test_utf16_and_utf32_text_is_decoded_and_scanned(cli: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      encoding: str) -> None:  # fmt: skip
    """PowerShell 5's ``>`` writes UTF-16 with a byte-order mark: its NUL bytes made the file
    "binary", skipped without even a note. A mark (or NULs on every other byte only) says how
    to decode it; lines and columns count its characters."""
    monkeypatch.chdir(tmp_path)
    text = f"Deploy notes\r\ndeploy token {token(13)}\r\n"
    data = {"utf-16-be-bom": b"\xfe\xff" + text.encode("utf-16-be"),
            "utf-16-le-no-bom": text.encode("utf-16-le")}.get(encoding) or text.encode(encoding)  # fmt: skip
    (tmp_path / "notes.txt").write_bytes(data)
    for argv in (["scan", "notes.txt"], ["scan", "."]):
        result = cli(*argv)  # type: ignore[operator]
        assert (result.rc, result.out) == (1, f"notes.txt:2:14 github-pat ghp_{'x' * 36}\n"), argv


def test_a_named_binary_file_is_scanned_for_the_text_in_it(cli: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A binary file named to a gate is read as ``strings`` would show it, not skipped: a token
    in a SQLite file or a ``.pyc`` is plain ASCII. Inside a folder binaries are still skipped
    (vendored blobs), and an image with no such text passes."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cache.db").write_bytes(b"SQLite format 3\x00\x10\x00" + bytes(range(256)) + f"\x00\x07token={token(14)}\x00\x00".encode())
    (tmp_path / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(random.Random(3).randrange(256) for _ in range(4000)))
    named = cli("scan", "cache.db", "logo.png")  # type: ignore[operator]
    assert named.rc == 1 and re.fullmatch(r"cache\.db:\d+:\d+ github-pat ghp_x{36}\n", named.out), named.out
    assert cli("scan", "logo.png").rc == 0  # type: ignore[operator]
    doc = json.loads(cli("scan", "--format", "json", ".").out)  # type: ignore[operator]
    assert (doc["findings"], doc["skipped"]) == ([], [{"path": "cache.db", "reason": "binary"}, {"path": "logo.png", "reason": "binary"}])


def test_named_pipes_are_read_and_scanned(tmp_path: Path) -> None:
    """``scan <(…)``, ``… | scan /dev/stdin`` and a FIFO were neither files nor folders, so
    they were left out without a word: 0 files, exit 0. Now they are read (never past 5 MB)."""
    command = " ".join(shlex.quote(part) for part in console())
    substituted = subprocess.run(["bash", "-c", f"{command} scan <(printf 'token %s\\n' {token(15)})"], cwd=tmp_path,
                                 capture_output=True, text=True, timeout=60)  # fmt: skip
    assert substituted.returncode == 1 and re.fullmatch(r"/dev/fd/\d+:1:7 github-pat ghp_x{36}\n", substituted.stdout), substituted
    piped = subprocess.run([*console(), "scan", "/dev/stdin"], input=f"token {token(16)}\n", cwd=tmp_path,
                           capture_output=True, text=True, timeout=60)  # fmt: skip
    assert (piped.returncode, piped.stdout) == (1, f"/dev/stdin:1:7 github-pat ghp_{'x' * 36}\n")
    os.mkfifo(tmp_path / "fifo")
    writer = subprocess.Popen(["sh", "-c", f"printf 'token %s\\n' {token(17)} > fifo"], cwd=tmp_path)
    try:
        fifo = run("scan", "fifo", cwd=tmp_path)
    finally:
        writer.kill()
        writer.wait()
    assert (fifo.rc, fifo.out) == (1, f"fifo:1:7 github-pat ghp_{'x' * 36}\n")
    flood = subprocess.run(["bash", "-c", f"{command} scan <(yes token | head -c 6000000)"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=60)  # fmt: skip
    assert flood.returncode == 1 and re.fullmatch(r"open-memex: error: not scanned: /dev/fd/\d+ \(larger than 5 MB\) — .*\n", flood.stderr)


def test_a_named_socket_is_refused_in_one_line(cli: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with socket.socket(socket.AF_UNIX) as server:
        server.bind("sock")
        result = cli("scan", "sock")  # type: ignore[operator]
    assert (result.rc, result.err) == (2, "open-memex: error: cannot scan sock: not a file, folder, pipe or device — name what to scan\n")


def test_memory_files_never_report_generated_ids_and_times(cli: object, git_repo: Path) -> None:
    folder = git_repo / ".ai" / "open-memex"
    folder.mkdir(parents=True)
    for _ in range(50):
        (folder / f"{ULID}.md").write_text(memory_text("Retries use exponential backoff."))
        assert cli("scan").rc == 0  # type: ignore[operator]  (no path: the repository's memory folder)
    (folder / f"{ULID}.md").write_text(memory_text(f"CI token: {token(7)}"))
    result = cli("scan", "--format", "json")  # type: ignore[operator]
    assert [(f["path"], f["line"], f["rule"]) for f in json.loads(result.out)["findings"]] == [
        (f".ai/open-memex/{ULID}.md", 20, "github-pat")
    ]


def test_no_path_outside_a_repository_names_the_way(cli: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = cli("scan")  # type: ignore[operator]
    assert result.rc == 2
    assert "is not inside a git repository — pass the files or folders to scan: open-memex scan PATH…" in result.err


def test_the_fast_path_prints_exactly_what_the_full_cli_prints(cli: object, leaky: Path, monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    monkeypatch.chdir(leaky)
    (leaky / "--help").write_text(f"token {token(19)}\n")
    for argv in (["scan", "app.env"], ["scan", "--format=json", "--", "app.env", "clean.md"], ["scan", "clean.md"],
                 ["scan", "--format", "github", "."], ["scan", "--format", "xml"], ["scan", "nope"],
                 ["scan", "--", "--help", "clean.md"]):  # fmt: skip
        full = cli(*argv)  # type: ignore[operator]
        capsys.readouterr()
        code = shared.fast(argv)
        fast = capsys.readouterr()
        assert (code, fast.out, fast.err) == (full.rc, full.out, full.err), argv


def test_after_double_dash_files_named_like_options_are_scanned(cli: object, leaky: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pre-commit hooks end their entry with ``--`` and pre-commit appends the file names,
    so committed files named ``--help``, ``-h``, ``--version`` or ``-V`` are files to scan, on
    the fast path as in the full CLI (the fast path used to hand any line holding ``--help``
    to the full CLI)."""
    monkeypatch.chdir(leaky)
    names = ["--help", "-h", "--version", "-V"]
    for n, name in enumerate(names):
        (leaky / name).write_text(f"token {token(20 + n)}\n")
    result = cli("scan", "--", *names)  # type: ignore[operator]
    assert result.rc == 1
    assert result.out.splitlines() == [f"{name}:1:7 github-pat ghp_{'x' * 36}" for name in names]
    assert shared.parse(["scan", "--", *names]) == ("scan", names, {})
    assert shared.parse(["check", "--", "-h"]) == ("check", ["-h"], {})


@pytest.mark.parametrize("argv", [["scan", "--help"], ["scan", "-h"], ["scan", "--staged", "--staged"], ["scan", "--bogus"],
                                  ["scan", "--format"], ["scan", "-"], ["check", "--staged"], ["check", "--base"],
                                  ["scan", "bad\udcffname"], ["hook"], ["scan", "x", "--help", "--", "y"]])  # fmt: skip
def test_anything_unusual_goes_to_the_full_cli(argv: list[str]) -> None:
    assert _hook(argv) is None


def test_a_hook_run_loads_neither_cyclopts_nor_rich_nor_pygit2(leaky: Path) -> None:
    script = ("import sys\nfrom openmemex.cli.entry import _hook\nrc = _hook(['scan', 'app.env', 'clean.md'])\n"
              "print('LOADED', sorted(m for m in ('cyclopts', 'rich', 'pygit2', 'yaml', 'frontmatter') if m in sys.modules))\n"
              "sys.exit(rc)\n")  # fmt: skip
    proc = subprocess.run([sys.executable, "-c", script], cwd=leaky, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1, proc.stderr
    assert "LOADED []" in proc.stdout


# -- --staged under real git commits -------------------------------------------------------------
def install_hook(repo: Path) -> None:
    """A native pre-commit hook, as a user would write it (no pre-commit framework)."""
    hooks = repo / ".git" / "hooks"
    hooks.mkdir(exist_ok=True)
    command = " ".join(f"'{part}'" for part in console())
    (hooks / "pre-commit").write_text(f"#!/bin/sh\nexec {command} scan --staged\n")
    (hooks / "pre-commit").chmod(0o755)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def commit(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "commit", *args], cwd=repo, capture_output=True, text=True, timeout=60)


def test_commit_a_with_a_leaked_token_is_refused_and_the_index_is_untouched(git_repo: Path) -> None:
    install_hook(git_repo)
    (git_repo / "settings.py").write_text("DEBUG = True\n")
    git("add", "settings.py", cwd=git_repo)
    git("commit", "-q", "-m", "settings", cwd=git_repo)
    head, index = git("rev-parse", "HEAD", cwd=git_repo), digest(git_repo / ".git" / "index")
    (git_repo / "settings.py").write_text(f"DEBUG = True\nGITHUB_TOKEN = '{token(8)}'\n")
    proc = commit(git_repo, "-a", "-m", "leak")  # git points GIT_INDEX_FILE at index.lock for -a
    assert proc.returncode == 1
    assert f"settings.py:2:17 github-pat {token(8)[:4]}" in proc.stderr  # git shows a hook's stdout on its stderr
    assert token(8) not in proc.stdout + proc.stderr
    assert git("rev-parse", "HEAD", cwd=git_repo) == head
    assert digest(git_repo / ".git" / "index") == index
    assert git("status", "--porcelain", cwd=git_repo) == " M settings.py\n"
    (git_repo / "settings.py").write_text("DEBUG = True\nGITHUB_TOKEN = os.environ['GITHUB_TOKEN']\n")
    assert commit(git_repo, "-a", "-q", "-m", "from the environment").returncode == 0


def test_a_commit_holding_what_the_scan_cannot_read_is_refused_and_an_image_is_not(git_repo: Path) -> None:
    """``scan --staged`` passed a 5.7 MB dump and a UTF-16 note, both holding a token, with
    exit 0. The UTF-16 note is decoded and its token found; the dump fails the commit with a
    line naming it; an image (binary, no text secret) still commits."""
    install_hook(git_repo)
    big_dump(git_repo / "dump.sql", token(18))
    (git_repo / "notes.txt").write_bytes(f"deploy token {token(19)}\r\n".encode("utf-16"))
    (git_repo / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(random.Random(4).randrange(256) for _ in range(4000)))
    git("add", "dump.sql", "notes.txt", cwd=git_repo)
    refused = commit(git_repo, "-m", "dump and notes")
    assert refused.returncode == 1
    assert UNSCANNED.format(path="dump.sql", why="larger than 5 MB (5.7 MB)", fix=STAGED_FIX) in refused.stderr
    assert f"notes.txt:1:14 github-pat ghp_{'x' * 36}" in refused.stderr
    git("rm", "-q", "--cached", "dump.sql", "notes.txt", cwd=git_repo)
    git("add", "logo.png", cwd=git_repo)
    image = commit(git_repo, "-q", "-m", "logo")
    assert image.returncode == 0, image.stderr


def test_commit_of_named_paths_scans_only_what_is_committed(git_repo: Path) -> None:
    install_hook(git_repo)
    (git_repo / "leak.env").write_text(f"API_TOKEN={token(9)}\n")
    git("add", "leak.env", cwd=git_repo)  # staged, but not part of the next commit
    (git_repo / "README.md").write_text("hello again\n")
    index = digest(git_repo / ".git" / "index")
    ok = commit(git_repo, "-q", "-m", "readme only", "--", "README.md")  # a temporary index: HEAD + README.md
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "possible secret" not in ok.stderr
    refused = commit(git_repo, "-m", "the leak", "--", "leak.env")
    assert refused.returncode == 1
    assert "leak.env:1:11 github-pat" in refused.stderr
    assert git("ls-files", "--stage", "leak.env", cwd=git_repo) != ""  # still staged, still uncommitted
    assert "leak.env" not in git("show", "--name-only", "HEAD", cwd=git_repo)
    assert digest(git_repo / ".git" / "index") != index  # git itself refreshed README.md's entry…
    before = digest(git_repo / ".git" / "index")
    assert run("scan", "--staged", cwd=git_repo).rc == 1
    assert digest(git_repo / ".git" / "index") == before  # …scan never writes it


def test_staged_paths_narrow_the_scan_and_the_first_commit_works(git_repo: Path, tmp_path: Path) -> None:
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    git("init", "-q", "-b", "main", cwd=fresh)
    (fresh / "docs").mkdir()
    (fresh / "docs" / "a.md").write_text(f"token: {token(10)}\n")
    (fresh / "b.md").write_text("fine\n")
    git("add", "-A", cwd=fresh)
    assert run("scan", "--staged", cwd=fresh).out.startswith("docs/a.md:1:8 github-pat")  # HEAD unborn: the whole index
    assert run("scan", "--staged", "b.md", cwd=fresh).rc == 0
    assert run("scan", "--staged", "docs", cwd=fresh).rc == 1
    result = run("scan", "--staged", "/", cwd=fresh)
    assert result.rc == 2 and "is outside the repository" in result.err


def test_staged_scan_mid_merge_skips_the_unmerged_path(git_repo: Path) -> None:
    """A conflicted file has no staged blob yet (git refuses to commit it unresolved); the
    other staged files are still scanned, and nothing crashes on the conflict's empty id."""
    (git_repo / "f.txt").write_text("base\n")
    git("add", "f.txt", cwd=git_repo)
    git("commit", "-q", "-m", "base", cwd=git_repo)
    git("switch", "-q", "-c", "other", cwd=git_repo)
    (git_repo / "f.txt").write_text("theirs\n")
    git("commit", "-q", "-am", "theirs", cwd=git_repo)
    git("switch", "-q", "main", cwd=git_repo)
    (git_repo / "f.txt").write_text("ours\n")
    git("commit", "-q", "-am", "ours", cwd=git_repo)
    subprocess.run(["git", "merge", "-q", "other"], cwd=git_repo, capture_output=True)
    assert "UU f.txt" in git("status", "--porcelain", cwd=git_repo)
    clean = run("scan", "--staged", cwd=git_repo)
    assert clean.rc == 0 and "Traceback" not in clean.err and "internal error" not in clean.err, clean.err
    (git_repo / "leak.env").write_text(f"GITHUB_TOKEN={token()}\n")
    git("add", "leak.env", cwd=git_repo)
    found = run("scan", "--staged", cwd=git_repo)
    assert found.rc == 1 and "leak.env:1:" in found.out, (found.out, found.err)


def test_staged_scan_of_an_index_libgit2_cannot_read_is_one_line(git_repo: Path, tmp_path: Path) -> None:
    """A sparse index (`git sparse-checkout set --sparse-index`) and a damaged index given in
    GIT_INDEX_FILE: one line naming the way out, no traceback from pygit2's destructor — and
    the way out for the sparse index works (the checkout stays sparse)."""
    for folder, name in (("app", "a.txt"), ("other", "o.txt")):
        (git_repo / folder).mkdir()
        (git_repo / folder / name).write_text("x\n")
    git("add", "-A", cwd=git_repo)
    git("commit", "-qm", "tree", cwd=git_repo)
    git("sparse-checkout", "set", "--cone", "--sparse-index", "app", cwd=git_repo)
    (git_repo / "app" / "leak.env").write_text(f"token: {token(3)}\n")
    git("add", "app/leak.env", cwd=git_repo)
    result = run("scan", "--staged", cwd=git_repo)
    assert result.rc == 1 and "sparse index" in result.err and "Traceback" not in result.err, result.err
    assert result.err.count("\n") == 1 and "git sparse-checkout init --no-sparse-index" in result.err
    git("sparse-checkout", "init", "--no-sparse-index", cwd=git_repo)
    assert not (git_repo / "other").exists()  # still sparse
    found = run("scan", "--staged", cwd=git_repo)
    assert found.rc == 1 and found.out.startswith("app/leak.env:1:8 github-pat"), found.err
    broken = tmp_path / "broken-index"
    broken.write_bytes((git_repo / ".git" / "index").read_bytes()[:40])
    damaged = run("scan", "--staged", cwd=git_repo, env={"GIT_INDEX_FILE": str(broken)})
    assert damaged.rc == 1 and "cannot read the git index" in damaged.err
    assert damaged.err.count("\n") == 1 and "Traceback" not in damaged.err and "Exception ignored" not in damaged.err


# -- scanExclude: the way a gate leaves one legitimate file out ---------------------------------


@pytest.mark.parametrize(
    ("pattern", "path", "folder", "excluded"),
    [
        ("*.sql", "dump.sql", False, True),
        ("*.sql", "data/2026/dump.sql", False, True),  # no slash: a name at any depth
        ("*.sql", "dump.sql.gz", False, False),
        ("dump.sql", "data/dump.sql", False, True),
        ("/dump.sql", "data/dump.sql", False, False),  # a leading slash anchors at the top
        ("data/*.sql", "data/dump.sql", False, True),
        ("data/*.sql", "data/old/dump.sql", False, False),  # * stays within one folder
        ("data/*.sql", "other/data/dump.sql", False, False),  # a middle slash anchors too
        ("data/**/*.sql", "data/old/2026/dump.sql", False, True),
        ("data/**/*.sql", "data/dump.sql", False, True),  # /**/ is zero or more folders
        ("**/fixtures", "a/b/fixtures/big.json", False, True),  # a matched folder takes its files
        ("data/**", "data/x/y.bin", False, True),
        ("data/**", "data", True, False),  # everything inside, not the folder itself
        ("vendor/", "vendor/lib/x.js", False, True),
        ("vendor/", "vendor", False, False),  # a trailing slash: folders only
        ("vendor/", "vendor", True, True),
        ("dump-20??.sql", "dump-2026.sql", False, True),
        ("dump-[0-9].sql", "dump-7.sql", False, True),
        ("dump-[!0-9].sql", "dump-7.sql", False, False),
        ("\\*.sql", "*.sql", False, True),
        ("\\*.sql", "x.sql", False, False),
    ],
)  # fmt: skip
def test_scan_exclude_globs_read_like_gitignore(pattern: str, path: str, folder: bool, excluded: bool) -> None:
    from openmemex.globs import Excluder

    assert (Excluder([pattern]).match(path, folder=folder) == pattern) is excluded


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ('["!keep.sql"]', "negation (!) is not supported"),
        ('["ok.sql", ""]', "an empty pattern matches nothing"),
        ('["/"]', "would exclude everything"),
        ('["#dump"]', "starts with #"),
        ("[5]", "expected a list of gitignore-style globs"),
    ],
)
def test_scan_exclude_is_validated(cli: object, value: str, message: str) -> None:
    result = cli("config", "set", "scanExclude", value)  # type: ignore[operator]
    assert result.rc == 2 and message in result.err


def test_an_invalid_scan_exclude_in_a_hand_edited_config_is_reported_and_ignored(tmp_path: Path, data_root: Path) -> None:
    data_root.mkdir(parents=True, exist_ok=True)
    (data_root / "config.json").write_text('{"scanExclude": ["!x"]}')
    (tmp_path / "app.env").write_text(f"GITHUB_TOKEN={token(31)}\n")
    result = run("scan", "app.env", cwd=tmp_path)
    assert result.rc == 1 and "scanExclude in" in result.err and "negation (!) is not supported" in result.err
    assert "app.env:1:14 github-pat" in result.out  # the default (nothing excluded) applies


def test_excluded_paths_are_left_out_and_listed(cli: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder scan does not walk an excluded folder, a named file is left out too, and
    both are listed (text notes, the summary, JSON ``excluded``): a gate says what it did
    not look at."""
    work = tmp_path / "work"
    (work / "fixtures" / "deep").mkdir(parents=True)
    monkeypatch.chdir(work)
    (work / "fixtures" / "deep" / "sample.env").write_text(f"GITHUB_TOKEN={token(32)}\n")
    (work / "dump.sql").write_text(f"-- token {token(33)}\n")
    (work / "app.env").write_text(f"GITHUB_TOKEN={token(34)}\n")
    assert cli("config", "set", "scanExclude", '["fixtures/", "*.sql"]').rc == 0  # type: ignore[operator]
    monkeypatch.setattr(shared, "_at_terminal", lambda: True)
    result = cli("scan", ".", "dump.sql")  # type: ignore[operator]
    assert result.rc == 1 and result.out == f"app.env:1:14 github-pat {token(34)[:4]}{'x' * 36}\n"
    assert result.err.splitlines() == [
        "open-memex: note: excluded dump.sql (scanExclude `*.sql`)",
        "open-memex: note: excluded fixtures (scanExclude `fixtures/`)",
        "open-memex: 1 possible secret in 1 of 1 file (2 excluded by scanExclude) — remove it before committing "
        "(a deliberate example stays with `open-memex:allow` on its line); a secret already pushed must be rotated",
    ]
    doc = json.loads(cli("scan", "--format", "json", ".").out)  # type: ignore[operator]
    assert doc["excluded"] == [{"path": "dump.sql", "pattern": "*.sql"}, {"path": "fixtures", "pattern": "fixtures/"}]
    assert doc["files"] == 1


def test_a_big_file_listed_in_scan_exclude_commits_and_the_rest_is_still_scanned(git_repo: Path) -> None:
    """A legitimate file over 5 MB failed the native hook's gate, and the only way past was
    ``--no-verify`` for the whole commit, the token beside it included. Listed in
    ``scanExclude`` (anchored at the repository's top, from a subfolder too) it is left out
    and named; the token beside it still stops the commit."""
    install_hook(git_repo)
    (git_repo / "data").mkdir()
    big_dump(git_repo / "data" / "dump.sql", token(35))
    (git_repo / "settings.py").write_text(f"GITHUB_TOKEN = '{token(36)}'\n")
    git("add", "data/dump.sql", "settings.py", cwd=git_repo)
    refused = commit(git_repo, "-m", "dump")
    assert refused.returncode == 1 and "not scanned: data/dump.sql" in refused.stderr
    assert run("config", "set", "scanExclude", '["/data/*.sql"]', cwd=git_repo).rc == 0
    still = commit(git_repo, "-m", "dump")
    assert still.returncode == 1 and "settings.py:1:17 github-pat" in still.stderr
    assert "open-memex: note: excluded data/dump.sql (scanExclude `/data/*.sql`)" in still.stderr
    assert "not scanned" not in still.stderr
    git("rm", "-q", "--cached", "settings.py", cwd=git_repo)
    passed = commit(git_repo, "-q", "-m", "dump")
    assert passed.returncode == 0, passed.stderr
    assert "excluded data/dump.sql" in passed.stderr  # git shows a hook's output: the exclusion is never silent
    (git_repo / "data" / "more.sql").write_text(f"-- {token(37)}\n")
    sub = git_repo / "data"
    listed = run("scan", "more.sql", "--format", "json", cwd=sub)
    assert json.loads(listed.out)["excluded"] == [{"path": "more.sql", "pattern": "/data/*.sql"}]
