"""Surfaces stay honest: lazy imports on the read path, every command documented."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from openmemex.cli.app import app

ROOT = Path(__file__).resolve().parent.parent


def test_search_does_not_import_heavy_modules(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "from openmemex.cli.app import run\n"
        "rc = run(['add', 'lazy import check', '--scope', 'personal'])\n"
        "rc |= run(['search', 'lazy'])\n"
        "heavy = sorted(m for m in ('pygit2', 'mcp', 'github', 'dulwich') if m in sys.modules)\n"
        "print('HEAVY', heavy)\n"
        "sys.exit(rc)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "HEAVY []" in proc.stdout


def test_every_command_is_documented() -> None:
    doc = (ROOT / "docs" / "cli.md").read_text()
    documented = set(re.findall(r"^### `([a-z-]+)", doc, re.M))
    commands = {name for name in app if not name.startswith("-")}
    assert commands <= documented, f"undocumented: {sorted(commands - documented)}"


def test_readme_quick_start_has_two_lines_and_ci_runs_the_second() -> None:
    readme = (ROOT / "README.md").read_text()
    block = readme.split("## Quick start", 1)[1].split("```", 2)[1]
    lines = [line for line in block.splitlines()[1:] if line.strip()]
    assert len(lines) == 2
    assert "open-memex demo" in lines[0]
    ci = (ROOT / ".ci" / "run").read_text()
    assert lines[1].strip() in ci


def test_schema_ships_in_the_package() -> None:
    from openmemex.schema import schema

    assert schema()["properties"]["type"]["enum"][0] == "fact"


def test_doctor_and_man_page(cli: object, tmp_path: Path) -> None:
    import json
    import shutil

    from openmemex.paths import manpath

    page = manpath() / "man1" / "git-memex.1"
    assert page.is_file() and page.read_text().startswith(".TH GIT-MEMEX 1")
    result = cli("doctor", "--json")  # type: ignore[operator]
    doc = json.loads(result.out)
    man = next(c for c in doc["checks"] if c["name"] == "man page")
    assert str(manpath()) in man["detail"]
    assert result.rc == 0 and doc["ok"]
    if shutil.which("man"):
        env = {"MANPATH": str(manpath()), "PATH": "/usr/bin:/bin"}
        proc = subprocess.run(["man", "-w", "git-memex"], env=env, capture_output=True, text=True)
        assert proc.stdout.strip() == str(page)
