"""The read commands' fast path (issue 11, item 3): ``search``/``list``/``show``/``where``
answer without cyclopts and rich, byte for byte as the full CLI does.

Every case runs the real console entry twice in fresh processes on a real store — once as
shipped, once with ``OPEN_MEMEX_NO_FASTPATH=1`` (the full cyclopts CLI) — and compares stdout,
stderr and the exit code. The route column pins which command lines the fast path takes
itself; the rest must reach the full CLI (help, errors, anything unusual).
"""

from __future__ import annotations

import inspect
import json
import os
import pty
import subprocess
import sys
import typing
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from openmemex.cli import memories, reads, store_cmds
from openmemex.cli.argv import parse
from openmemex.cli.entry import _hook
from openmemex.context import Context
from openmemex.lifecycle import forget
from openmemex.write import add_memory, supersede
from tests.helpers import drain_pty

ENTRY = "from openmemex.cli.entry import main; main()"
HEAVY = ("cyclopts", "rich", "yaml", "frontmatter", "fastjsonschema", "pygit2", "mcp", "github")
ID = "01J0000000000000000000FAKE"  # replaced by the seeded memory's id in the cases below


@pytest.fixture
def store(git_repo: Path) -> dict[str, str]:
    """A project with reviewed-less drafts, personal memories, a supersede chain, a retracted
    memory, Chinese text and stored control characters; the index warm. Returns ids."""
    with Context.load() as ctx:
        deploy = add_memory(ctx, "Deploy with make deploy; the database migrations run first", type="howto", tags=["ci"]).id
        add_memory(ctx, "The database pool is capped at 20 connections per worker", type="gotcha")
        add_memory(ctx, "部署前先运行数据库迁移", type="decision")
        add_memory(ctx, "I prefer short deploy notes \x1b[31min red\x1b[0m", scope="personal", type="preference")
        add_memory(ctx, "Personal database cheat sheet: psql -X", scope="personal", type="reference")
        old = add_memory(ctx, "Staging deploys happen on Fridays", type="decision").id
        supersede(ctx, old, "Staging deploys happen on Thursdays")
        gone = add_memory(ctx, "Deploy keys live in the vault under ci/deploy", type="fact").id
        forget(ctx, gone, soft=True)
    assert run(["search", "deploy"]).returncode == 0  # the index is warm for both runs
    return {"deploy": deploy, "prefix": deploy[:8]}


def run(argv: list[str], *, full: bool = False) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if k != "OPEN_MEMEX_NO_FASTPATH"}
    if full:
        env["OPEN_MEMEX_NO_FASTPATH"] = "1"
    return subprocess.run([sys.executable, "-c", ENTRY, *argv], capture_output=True, env=env, timeout=120)


def both(argv: list[str]) -> tuple[subprocess.CompletedProcess[bytes], subprocess.CompletedProcess[bytes]]:
    return run(argv), run(argv, full=True)


def routed_fast(argv: list[str]) -> bool:
    command = reads.COMMANDS.get(argv[0])
    return command is not None and parse(argv[1:], command[1]) is not None


FAST, FULL = "fast", "full"
CASES = [
    # search
    (["search", "deploy"], FAST), (["search", "database deploy"], FAST), (["search", "部署"], FAST),
    (["search", "deploy", "--json"], FAST), (["search", "--json", "deploy"], FAST), (["search", "deploy", "--explain"], FAST),
    (["search", "deploy", "--limit=3"], FAST), (["search", "deploy", "--limit", "3"], FAST), (["search", "deploy", "--limit=03"], FAST),
    (["search", "deploy", "--scope", "personal"], FAST), (["search", "deploy", "--scope=personal"], FAST),
    (["search", "deploy", "--scope=all", "--type", "howto", "--json", "--explain"], FAST),
    (["search", "deploy", "--type=gotcha"], FAST), (["search", "deploy", "--no-embeddings"], FAST),
    (["search", "deploy", "--scope", "team"], FAST), (["search", "deploy", "--scope="], FAST), (["search", "deploy", "--scope", ""], FAST),
    (["search", "deploy", "--scope=-x"], FAST), (["search", "deploy", "--type", "nonsense"], FAST),
    (["search", "deploy", "--limit=0"], FAST), (["search", "deploy", "--limit", "500"], FAST),
    (["search", ""], FAST), (["search", "nothing-matches-this"], FAST), (["search", "--", "-deploy"], FAST),
    (["search", "a=b"], FAST), (["search", "deploy", "--embeddings"], FAST), (["search", "--", "--help"], FAST),
    (["search", "-deploy"], FULL), (["search", "deploy", "--help"], FULL), (["search", "-h"], FULL), (["search"], FULL),
    (["search", "--json"], FULL), (["search", "deploy", "database"], FULL), (["search", "deploy", "--bogus"], FULL),
    (["search", "deploy", "--lim", "3"], FULL), (["search", "deploy", "--limit", "x"], FULL), (["search", "deploy", "--limit=-3"], FULL),
    (["search", "deploy", "--limit=3.7"], FULL), (["search", "deploy", "--limit", "0x3"], FULL), (["search", "deploy", "--limit"], FULL),
    (["search", "deploy", "--json", "--json"], FULL), (["search", "deploy", "--json=true"], FULL),
    (["search", "deploy", "--embeddings", "--no-embeddings"], FULL), (["search", "deploy", "--type", "--json"], FULL),
    (["search", "caf\udce9"], FULL), (["search", "deploy", "--scope", "caf\udce9"], FULL), (["search", "deploy", "--version"], FULL),
    (["search", "deploy", "-"], FULL), (["search", "deploy", "--", "--json"], FULL),
    # list
    (["list"], FAST), (["list", "--json"], FAST), (["list", "--limit=3"], FAST), (["list", "--limit", "1"], FAST),
    (["list", "--scope", "personal"], FAST), (["list", "--scope=both", "--include=all"], FAST), (["list", "--include", "all", "--json"], FAST),
    (["list", "--type", "decision"], FAST), (["list", "--scope", "nope"], FAST), (["list", "--include", "some"], FAST),
    (["list", "--limit", "0"], FAST),
    (["list", "--help"], FULL), (["list", "-h"], FULL), (["list", "extra"], FULL), (["list", "--bogus"], FULL),
    (["list", "--limit"], FULL), (["list", "--limit", "-1"], FULL), (["list", "--scope", "a", "--scope", "b"], FULL),
    # show
    (["show", ID], FAST), (["show", ID, "--json"], FAST), (["show", "--json", ID], FAST), (["show", "PREFIX"], FAST),
    (["show", "01J0000000000000000000NONE"], FAST), (["show", "abc"], FAST), (["show", ""], FAST), (["show", "--", ID], FAST),
    (["show", "--", "-h"], FAST), (["show", "--help", "--", ID], FULL),
    (["show"], FULL), (["show", "--help"], FULL), (["show", "-h"], FULL), (["show", "-x"], FULL), (["show", ID, ID], FULL),
    (["show", ID, "--bogus"], FULL), (["show", "--memory-id", ID], FULL), (["show", "\udcff"], FULL),
    # where
    (["where"], FAST), (["where", "--json"], FAST),
    (["where", "--help"], FULL), (["where", "-h"], FULL), (["where", "x"], FULL), (["where", "--json=yes"], FULL),
]  # fmt: skip


def _ids(cases: list[tuple[list[str], str]]) -> list[str]:
    return [" ".join(a).encode("ascii", "backslashreplace").decode() for a, _ in cases]


@pytest.mark.parametrize(("argv", "route"), CASES, ids=_ids(CASES))
def test_which_command_lines_the_fast_path_takes(argv: list[str], route: str) -> None:
    """A command line the fast path does not take goes to the full CLI before anything ran,
    exactly as with OPEN_MEMEX_NO_FASTPATH (so its output is the full CLI's by construction)."""
    assert routed_fast(argv) == (route == FAST), argv
    if route == FULL:
        assert _hook(argv) is None


# the full CLI's own answers, end to end through both ways, one of each kind per command
E2E_FULL = [["search", "-deploy"], ["search", "deploy", "--help"], ["search", "-h"], ["search"], ["search", "deploy", "--bogus"],
            ["search", "deploy", "--limit=3.7"], ["search", "caf\udce9"], ["search", "deploy", "--json", "--json"],
            ["list", "-h"], ["list", "extra"], ["list", "--limit"], ["show"], ["show", "--help"], ["show", "-x"],
            ["show", "\udcff"], ["where", "-h"], ["where", "x"], ["where", "--json=yes"]]  # fmt: skip


@pytest.mark.parametrize("command", ["search", "list", "show", "where"])
def test_fast_path_matches_the_full_cli(store: dict[str, str], command: str) -> None:
    """Each command's table, through the fast path and the full CLI in fresh processes:
    identical stdout, stderr and exit code."""
    cases = [argv for argv, route in CASES if argv[0] == command and route == FAST]
    cases += [argv for argv in E2E_FULL if argv[0] == command]
    cases = [[store["deploy"] if a == ID else store["prefix"] if a == "PREFIX" else a for a in argv] for argv in cases]
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(both, cases))
    differ = [argv for argv, (fast, full) in zip(cases, results, strict=True)
              if (fast.returncode, fast.stdout, fast.stderr) != (full.returncode, full.stdout, full.stderr)]  # fmt: skip
    assert not differ, [(argv, both(argv)) for argv in differ]
    for argv, (fast, _) in zip(cases, results, strict=True):
        if routed_fast(argv) and fast.returncode == 0:
            assert fast.stdout, argv  # a real answer, not an empty run
            if "--json" in argv:
                json.loads(fast.stdout)


def test_the_answers_are_the_real_ones(store: dict[str, str]) -> None:
    """Spot checks that the compared output is meaningful: hits, explain, hidden memories,
    the masked escape of stored control characters, a usage error's exit code."""
    hits = json.loads(run(["search", "deploy", "--json"]).stdout)["hits"]
    assert store["deploy"] in [h["id"] for h in hits]
    explain = run(["search", "deploy", "--explain"]).stdout.decode()
    assert "hidden by lifecycle: 1 superseded, 1 retracted/archived" in explain
    personal = run(["search", "red", "--scope", "personal"]).stdout.decode()
    assert "\\x1b[31m" in personal and "\x1b" not in personal
    bad = run(["search", "deploy", "--scope", "team"])
    assert bad.returncode != 0 and bad.stderr.startswith(b"open-memex: error: ")
    assert run(["show", store["deploy"]]).stdout.decode().startswith("# ")


def _in_pty(argv: list[str], full: bool) -> tuple[int, bytes]:
    """stdout and stderr on one pseudo-terminal: what a person sees (the first-run tip)."""
    env = {k: v for k, v in os.environ.items() if k != "OPEN_MEMEX_NO_FASTPATH"}
    if full:
        env["OPEN_MEMEX_NO_FASTPATH"] = "1"
    main, child = pty.openpty()
    proc = subprocess.run([sys.executable, "-c", ENTRY, *argv], stdout=child, stderr=child,
                          stdin=subprocess.DEVNULL, env=env, timeout=120)  # fmt: skip
    os.close(child)
    return proc.returncode, drain_pty(main)


@pytest.mark.parametrize("argv", [["search", "deploy"], ["list"], ["where"], ["show", "PREFIX"], ["search", "deploy", "--scope", "x"]])
def test_on_a_terminal_too(store: dict[str, str], argv: list[str]) -> None:
    argv = [store["prefix"] if a == "PREFIX" else a for a in argv]
    fast = _in_pty(argv, full=False)
    assert fast == _in_pty(argv, full=True)
    assert b"open-memex: tip: run `open-memex init`" in fast[1]


@pytest.mark.parametrize("argv", [["search", "deploy"], ["search", "deploy", "--json", "--explain"], ["list"], ["where", "--json"]])
def test_a_warm_read_loads_no_framework_no_yaml_no_git(store: dict[str, str], argv: list[str]) -> None:
    script = ("import sys, json\nfrom openmemex.cli.entry import _hook\n"
              f"rc = _hook({argv!r})\n"
              "sys.stderr.write('\\nLOADED ' + json.dumps(sorted(sys.modules)))\nsys.exit(rc)\n")  # fmt: skip
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    modules = set(json.loads(proc.stderr.rsplit("LOADED ", 1)[1]))
    assert {m.split(".")[0] for m in modules} & set(HEAVY) == set()


def test_show_parses_its_one_file_but_loads_no_framework_or_git(store: dict[str, str]) -> None:
    script = ("import sys, json\nfrom openmemex.cli.entry import _hook\n"
              f"rc = _hook(['show', {store['deploy']!r}])\n"
              "sys.stderr.write('\\nLOADED ' + json.dumps(sorted(sys.modules)))\nsys.exit(rc)\n")  # fmt: skip
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    modules = {m.split(".")[0] for m in json.loads(proc.stderr.rsplit("LOADED ", 1)[1])}
    assert modules & {"cyclopts", "rich", "pygit2", "mcp", "github"} == set()


def test_no_fastpath_switch_reaches_the_full_cli(store: dict[str, str]) -> None:
    script = ("import sys\nfrom openmemex.cli.entry import main\n"
              "try:\n    main()\nfinally:\n    sys.stderr.write('\\nCYCLOPTS ' + str('cyclopts' in sys.modules))\n")  # fmt: skip
    env = {**os.environ, "OPEN_MEMEX_NO_FASTPATH": "1"}
    proc = subprocess.run([sys.executable, "-c", script, "where"], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0 and proc.stderr.endswith("CYCLOPTS True")


# -- the fast path's forms are the cyclopts commands' forms ----------------------------------------
DECLARED = {"search": memories.search, "list": memories.list_, "show": memories.show, "where": store_cmds.where}


@pytest.mark.parametrize("name", sorted(DECLARED))
def test_each_spec_is_its_cyclopts_signature(name: str) -> None:
    """Options, flags, positionals and defaults: a parameter added to a command (or a default
    changed) must be added to the fast path too, or this fails."""
    declared, (body, spec) = DECLARED[name], reads.COMMANDS[name]
    hints = typing.get_type_hints(declared, include_extras=True)
    params = inspect.signature(declared).parameters.values()
    flags: set[str] = set()
    options: set[str] = set()
    for param in params:
        if param.kind is not param.KEYWORD_ONLY:
            continue
        option = "--" + param.name.replace("_", "-")
        hint = hints[param.name]
        if typing.get_origin(hint) is typing.Annotated and typing.get_args(hint)[0] is bool:  # Flag: no --no-… twin
            flags.add(option)
        elif hint == bool | None:
            flags |= {option, "--no-" + option[2:]}
        else:
            options.add(option)
    assert (set(spec.flags), set(spec.options)) == (flags, options)
    positional = [p for p in params if p.kind is p.POSITIONAL_ONLY]
    assert spec.positionals == (len(positional), len(positional))
    shape = [(p.name, p.kind, p.default) for p in params]
    assert shape == [(p.name, p.kind, p.default) for p in inspect.signature(body).parameters.values()]


VOCAB = ["deploy", "", "-", "--", "-x", "--json", "--json=1", "--explain", "--limit", "--limit=3", "3", "03", "-3", "--scope",
         "--scope=personal", "--type=a=b", "a=b", "--no-embeddings", "--embeddings", "--include=all", "all", "--bogus", "x y",
         "é", "none", "--limit=", "=", "--=x", "---json", "--scope=--json", "-h", "--no-json", "--embeddings=no", "\t", "list"]  # fmt: skip


@pytest.mark.parametrize("name", sorted(reads.COMMANDS))
def test_every_line_the_fast_path_reads_cyclopts_reads_the_same(name: str) -> None:
    """Differential, in-process: every command line of up to two tokens from VOCAB and a fixed
    sample of longer ones; where the fast path takes a line, cyclopts binds the same values."""
    import random

    from openmemex.cli.app import app

    spec = reads.COMMANDS[name][1]
    rng = random.Random(11)
    lines = [[], *([t] for t in VOCAB), *([a, b] for a in VOCAB for b in VOCAB)]
    lines += [[rng.choice(VOCAB) for _ in range(rng.randint(3, 5))] for _ in range(400)]
    taken = 0
    for tokens in lines:
        ours = parse(tokens, spec)
        if ours is None:
            continue
        taken += 1
        command, bound, _ = app.parse_args([name, *tokens], exit_on_error=False, print_error=False)
        assert command is DECLARED[name], tokens
        assert (list(bound.args), dict(bound.kwargs)) == (ours[0], ours[1]), tokens
    assert taken >= 4  # where takes the fewest: nothing, --, --json, --json --


@pytest.mark.parametrize("full", [False, True], ids=["fast", "full"])
def test_output_to_a_full_disk_or_an_ascii_terminal_is_not_a_crash(full: bool, tmp_path: Path) -> None:
    """stdout on a full disk (/dev/full) is one line and exit 1; an encoding that cannot
    carry Chinese is one line and exit 1 on a pipe, backslash escapes on a terminal — both
    paths, never an internal error."""
    env = {k: v for k, v in os.environ.items() if k != "OPEN_MEMEX_NO_FASTPATH"}
    if full:
        env["OPEN_MEMEX_NO_FASTPATH"] = "1"
    assert subprocess.run([sys.executable, "-c", ENTRY, "add", "deploy on fridays 部署"], env=env,
                          capture_output=True, timeout=120).returncode == 0  # fmt: skip
    with open("/dev/full", "wb") as sink:
        proc = subprocess.run([sys.executable, "-c", ENTRY, "search", "deploy"], env=env, stdout=sink,
                              stderr=subprocess.PIPE, timeout=120)  # fmt: skip
    err = proc.stderr.decode()
    assert proc.returncode == 1 and "No space left" in err and "internal error" not in err, err
    ascii_env = {**env, "PYTHONIOENCODING": "ascii"}
    piped = subprocess.run([sys.executable, "-c", ENTRY, "search", "部署"], env=ascii_env, capture_output=True,
                           timeout=120)  # fmt: skip
    # a pipe or a file is not silently altered: one line naming the fix
    assert piped.returncode == 1 and b"PYTHONIOENCODING=utf-8" in piped.stderr, piped.stderr
    assert b"internal error" not in piped.stderr
    main, child = pty.openpty()  # a person reading a terminal gets escapes instead
    proc = subprocess.run([sys.executable, "-c", ENTRY, "search", "部署"], env=ascii_env, stdout=child,
                          stderr=child, stdin=subprocess.DEVNULL, timeout=120)  # fmt: skip
    os.close(child)
    shown = drain_pty(main)
    assert proc.returncode == 0 and b"\\u90e8\\u7f72" in shown and b"internal error" not in shown, shown


@pytest.mark.parametrize(("argv", "module"), [(["config"], "cyclopts"), (["search", "x"], "openmemex.cli.shared"),
                                              (["hook", "session-start"], "openmemex.hooks")])  # fmt: skip
def test_ctrl_c_while_the_modules_load_is_one_line_and_130(argv: list[str], module: str, git_repo: Path,
                                                           data_root: Path) -> None:  # fmt: skip
    """Ctrl-C lands while a command's modules load (the full CLI's take a tenth of a second
    and more): one line and exit 130, as later on, never a traceback. The interrupt is raised
    by an import hook at the first import of ``module``."""
    script = ("import sys\n"
              "class Stop:\n"
              "    def find_spec(self, name, path=None, target=None):\n"
              f"        if name == {module!r}:\n"
              "            raise KeyboardInterrupt\n"
              "sys.meta_path.insert(0, Stop())\n"
              f"sys.argv = ['open-memex', *{argv!r}]\n" + ENTRY)  # fmt: skip
    env = {**os.environ, "OPEN_MEMEX_HOME": str(data_root)}
    proc = subprocess.run([sys.executable, "-c", script], cwd=git_repo, env=env, capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    assert (proc.returncode, proc.stderr) == (130, "open-memex: interrupted\n"), proc.stderr
