"""Frontmatter nested deeper than ``MAX_YAML_DEPTH`` is a broken file, refused before libyaml
composes it: a 50,000-deep ``[[[…]]]`` (100 KB) made libyaml's composer overflow the C stack
(SIGSEGV in every command), and a few thousand levels made our own walks over values
(import's scrub, forget's deepcopy, the merge driver's ==) raise RecursionError.

The crashes killed the process, so the commands run here as real processes."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from openmemex.context import Context
from openmemex.ids import new_ulid
from openmemex.memfile import MAX_YAML_DEPTH, MemoryFileError, _nesting_bound, parse_memory
from tests.bundles import honest, project_text
from tests.conftest import run_process
from tests.helpers import personal_text

GOOD_TEXT = "good memory about kubernetes"
WARN_PREFIX = "open-memex: warning: skipped "
TOO_DEEP = f"YAML nested deeper than the {MAX_YAML_DEPTH}-level limit"


def _flow_seq(levels: int) -> str:
    return "x_deep: " + "[" * levels + "]" * levels + "\n"


def _flow_map(levels: int) -> str:
    return "x_deep: " + "{a: " * levels + "b" + "}" * levels + "\n"


def _block_map(levels: int) -> str:
    return "x_deep:\n" + "".join(" " * (i + 1) + "k:\n" for i in range(levels - 1)) + " " * levels + "k: v\n"


def _compact_seq(levels: int) -> str:
    return "x_deep:\n" + "- " * levels + "x\n"


def _implicit_pairs(levels: int) -> str:  # [a: [a: …]]: each bracket holds a one-pair mapping too
    return "x_deep: " + "[a: " * levels + "b" + "]" * levels + "\n"


def _mixed(levels: int) -> str:  # block mapping > block sequence > compact mapping > …, then flow
    lines, indent = ["x_deep:"], 0
    for _ in range(levels):
        lines.append(" " * indent + "- k:")
        indent += 2
    return "\n".join(lines) + "\n" + " " * indent + "- [[[[x]]]]\n"


def _cr_lines(levels: int) -> str:  # a lone CR is a YAML line break: the indentation still nests
    return "x_deep:\r" + "".join(" " * (i + 1) + "k:\r" for i in range(levels - 1)) + " " * levels + "k: v\n"


SHAPES = {
    "flow-seq": _flow_seq, "flow-map": _flow_map, "block-map": _block_map, "compact-seq": _compact_seq,
    "implicit-pairs": _implicit_pairs, "mixed": _mixed, "cr-lines": _cr_lines,
}  # fmt: skip


def _depth(value: Any) -> int:
    """How deep ``value``'s lists and mappings nest (the top mapping counts as 1)."""
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    return 0


def _event_depth(text: str) -> int:
    """The deepest libyaml nests ``text``'s events before it stops (at the end or an error)."""
    depth = deepest = 0
    try:
        for event in yaml.parse(text, Loader=yaml.CSafeLoader):
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                deepest = max(deepest, depth)
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    except yaml.YAMLError as exc:
        if "maximum nesting depth" in str(getattr(exc, "problem", "") or ""):
            return 1 << 30  # PyYAML >= 6.0.4: libyaml refuses nesting past a limit of its own, before its events
    return deepest


def _levels_in(shape: str, total: int) -> int:
    """How many levels a shape's generator needs for ``total`` levels counting the top mapping."""
    return {"implicit-pairs": (total - 1) // 2, "mixed": (total - 1 - 4) // 2}.get(shape, total - 1)


@pytest.mark.parametrize("shape", list(SHAPES))
def test_too_deep_is_a_broken_file(shape: str) -> None:
    mid = new_ulid()
    for levels in (_levels_in(shape, MAX_YAML_DEPTH) + 1, 1_000):
        text = personal_text(mid, extra=SHAPES[shape](levels))
        assert _event_depth(text.split("---\n")[1]) > MAX_YAML_DEPTH
        with pytest.raises(MemoryFileError, match=TOO_DEEP):
            parse_memory(text.encode())


@pytest.mark.parametrize("shape", list(SHAPES))
def test_exactly_at_the_limit_is_read(shape: str) -> None:
    mid = new_ulid()
    text = personal_text(mid, extra=SHAPES[shape](_levels_in(shape, MAX_YAML_DEPTH)))
    assert _event_depth(text.split("---\n")[1]) <= MAX_YAML_DEPTH
    memory = parse_memory(text.encode())
    assert 1 + _depth(memory.extra["x_deep"]) == _event_depth(text.split("---\n")[1])
    if shape in ("flow-seq", "flow-map", "block-map", "compact-seq", "cr-lines"):
        assert 1 + _depth(memory.extra["x_deep"]) == MAX_YAML_DEPTH


def _file_line(text: str, prefix: str) -> int:
    """The 1-based line of ``text`` starting with ``prefix`` (YAML errors count the same way)."""
    return next(n for n, line in enumerate(text.split("\n"), start=1) if line.startswith(prefix))


def test_the_message_names_the_line() -> None:
    mid = new_ulid()
    text = personal_text(mid, extra="x_fine: 1\n" + _flow_seq(50_000))
    with pytest.raises(MemoryFileError) as caught:
        parse_memory(text.encode())
    assert str(caught.value) == f"{TOO_DEEP} (frontmatter line {_file_line(text, 'x_deep: ')})"


def test_brackets_in_quotes_and_comments_do_not_count() -> None:
    """Only nesting counts: brackets in quoted and plain strings and in a comment push the
    cheap bound over the limit, and the exact check reads the file."""
    mid = new_ulid()
    extra = (
        f'x_title: "{"[" * 200}{"{" * 50} not nested"\n'
        f"x_single: '{']' * 100}[[[['\n"
        f"x_plain: a{'[' * 40}b\n"
        f"# {'[' * 300}\n"
        "x_list: [\"[[[[\", '{{{{', ok]\n"
    )
    text = personal_text(mid, extra=extra)
    assert _nesting_bound(text.split("---\n")[1]) > MAX_YAML_DEPTH  # the exact check is the one asked
    memory = parse_memory(text.encode())
    assert memory.extra["x_title"] == "[" * 200 + "{" * 50 + " not nested"
    assert memory.extra["x_plain"] == "a" + "[" * 40 + "b"
    assert memory.extra["x_list"] == ["[[[[", "{{{{", "ok"]


def test_indented_text_does_not_count() -> None:
    """Indentation inside a block scalar, a multi-line string or a comment is no nesting."""
    mid = new_ulid()
    extra = (
        "x_block: |\n" + "".join(f"{' ' * (i + 1)}- - ? {i}\n" for i in range(40))
        + "x_folded: a\n" + "".join(f"{' ' * (i + 1)}b{i}\n" for i in range(40))
        + "".join(f"{' ' * i}# - - comment\n" for i in range(40))
    )  # fmt: skip
    text = personal_text(mid, extra=extra)
    assert _nesting_bound(text.split("---\n")[1]) > MAX_YAML_DEPTH
    memory = parse_memory(text.encode())
    assert memory.extra["x_block"].count("- - ?") == 40
    assert memory.extra["x_folded"].startswith("a b0 b1")


def test_the_bound_is_an_upper_bound() -> None:
    """The cheap bound never under-counts what libyaml would nest: YAML dumped in every style
    from deep narrow values, and random runs of indicators, indentation and line breaks."""
    rng = random.Random(62)

    def value(levels: int) -> Any:
        if levels == 0 or rng.random() < 0.1:
            return rng.choice(["x", 1, "a b", None, "[x]"])
        width = 1 if rng.random() < 0.8 else 2
        if rng.random() < 0.5:
            return [value(levels - 1) for _ in range(width)]
        return {f"{rng.choice(['k', 'long key', '[k]'])}{i}": value(levels - 1) for i in range(width)}

    for _ in range(150):
        tree = {"root": value(rng.randint(1, 40))}
        for style in ({}, {"default_flow_style": True}, {"indent": rng.randint(2, 9)}, {"indent": 2, "width": 20}):
            text = yaml.safe_dump(tree, **style)  # type: ignore[call-overload]
            text = text.replace("\n", rng.choice(["\n", "\r", "\u2028", "\x85", "\r\n"]))
            assert _event_depth(text) <= _nesting_bound(text), text
    pieces = ["- ", "? ", ": ", "a: ", "a", "[", "]", "{", "}", ", ", "\n", " ", "  ", "   ", "\r", "\u2028",
              "\ufeff", "\t", "#c", "!t ", '"q"', "'q'", "|\n", "-", "?", ":", "--- ", "\n- ", "\n  - ",
              "\n    ? ", "\n      : "]  # fmt: skip
    for _ in range(6_000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 40)))
        assert _event_depth(text) <= _nesting_bound(text), repr(text)


def test_typical_files_skip_the_exact_check() -> None:
    """What our writers emit is read without libyaml (3 levels at most), and a hand-edited
    file of the usual shape stays under the bound: neither is walked event by event."""
    from openmemex import fastyaml
    from openmemex.memfile import serialize
    from openmemex.model import Memory

    stamp = "2026-09-26T12:00:00.000Z"
    history = [{"at": stamp, "by": "me", "from": None, "to": "draft"}, {"at": stamp, "by": "me", "from": "draft", "to": "proposed"}]
    memory = Memory(id=new_ulid(), scope="personal", scope_key="personal", body="text", tags=["a", "b-c"],
                    created_at=stamp, updated_at=stamp, review_history=history)  # fmt: skip
    front = serialize(memory).split("---\n")[1]
    assert fastyaml.load(front) is not None
    assert _nesting_bound(front) <= MAX_YAML_DEPTH
    hand_edited = personal_text(new_ulid(), extra="x_team: {owner: platform, on_call: [a, b]}\n")
    assert fastyaml.load(hand_edited.split("---\n")[1]) is None
    assert _nesting_bound(hand_edited.split("---\n")[1]) <= MAX_YAML_DEPTH


# ---- commands on a store holding one such file (real processes) ----------------------------


def _personal_dir() -> Path:
    with Context.load() as ctx:
        return ctx.personal_dir


def _store_with_deep_file(levels: int = 50_000) -> tuple[str, Path]:
    added = run_process("add", GOOD_TEXT, "--scope", "personal")
    assert added.rc == 0, added.err
    good_id = added.out.split()[1]
    mid = new_ulid()
    bad = _personal_dir() / f"{mid}.md"
    bad.write_text(personal_text(mid, "deep one about kubernetes", extra=_flow_seq(levels)), encoding="utf-8")
    return good_id, bad


def _warned_once(err: str, bad: Path) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    line = _file_line(bad.read_text(encoding="utf-8"), "x_deep: ")
    assert lines == [f"{WARN_PREFIX}{bad}: {TOO_DEEP} (frontmatter line {line})"], err


@pytest.mark.parametrize("command", [("list", "--scope", "personal"), ("search", "kubernetes")])
def test_reads_skip_the_file_with_one_warning(command: tuple[str, ...]) -> None:
    good_id, bad = _store_with_deep_file()
    result = run_process(*command)
    assert result.rc == 0, (result.rc, result.err)
    assert good_id in result.out and bad.stem not in result.out
    _warned_once(result.err, bad)
    again = run_process(*command)
    assert again.rc == 0 and good_id in again.out and again.err == ""


def test_doctor_names_the_file() -> None:
    _, bad = _store_with_deep_file()
    result = run_process("doctor")
    assert result.rc == 1, (result.rc, result.err)  # a skipped file is a failed check, not a crash
    assert f"{bad}: {TOO_DEEP}" in result.out + result.err
    assert "Traceback" not in result.err and "internal error" not in result.err


def test_check_fails_the_file(tmp_path: Path) -> None:
    mid = new_ulid()
    path = tmp_path / f"{mid}.md"
    path.write_text(personal_text(mid, extra=_flow_seq(50_000)), encoding="utf-8")
    result = run_process("check", str(path))
    assert result.rc == 1, (result.rc, result.err)
    assert TOO_DEEP in result.out + result.err
    assert "Traceback" not in result.err and "internal error" not in result.err


def test_hook_session_start_survives(git_repo: Path) -> None:
    _store_with_deep_file()
    payload = json.dumps({"hook_event_name": "SessionStart", "cwd": str(git_repo), "source": "startup"})
    proc = subprocess.run([sys.executable, "-m", "openmemex", "hook", "session-start"], input=payload,
                          capture_output=True, text=True, cwd=git_repo, env=dict(os.environ), timeout=60)  # fmt: skip
    assert proc.returncode == 0, (proc.returncode, proc.stderr)
    assert GOOD_TEXT in proc.stdout and "deep one" not in proc.stdout
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("levels", [900, 50_000])
def test_import_rejects_the_memory_and_imports_the_rest(tmp_path: Path, levels: int) -> None:
    good, deep = new_ulid(), new_ulid()
    files = [("project", good, project_text(good, "a perfectly normal memory")),
             ("project", deep, project_text(deep, "b").replace("tags: [imported]", _flow_seq(levels).strip()))]  # fmt: skip
    path, _ = honest(tmp_path / "b.tar.gz", files)
    result = run_process("import", str(path))
    assert result.rc == 1, (result.rc, result.err)
    assert result.out.startswith("imported 1, skipped 0 identical, 1 rejected"), result.out
    assert f"rejected: memories/project/{deep}.md ({TOO_DEEP}" in result.out
    listed = run_process("list", "--scope", "project")
    assert good in listed.out and deep not in listed.out


def test_forget_soft_refuses_the_deep_file_and_works_on_the_rest() -> None:
    good_id, bad = _store_with_deep_file(5_000)
    refused = run_process("forget", bad.stem, "--soft")
    assert refused.rc == 1, (refused.rc, refused.err)
    assert TOO_DEEP in refused.err and "internal error" not in refused.err
    forgotten = run_process("forget", good_id, "--soft")
    assert forgotten.rc == 0, forgotten.err
    assert good_id not in run_process("list", "--scope", "personal").out


def test_a_file_at_the_limit_is_rewritten_and_imported(cli: Any, tmp_path: Path) -> None:
    """The write path keeps what the reader accepts: a value exactly at the limit survives a
    lifecycle rewrite and an import (re-emitted from the fields) and reads back the same."""
    from openmemex.memfile import read_memory

    assert cli("add", GOOD_TEXT, "--scope", "personal").rc == 0
    mid = new_ulid()
    deep = _flow_seq(MAX_YAML_DEPTH - 1)
    path = _personal_dir() / f"{mid}.md"
    path.write_text(personal_text(mid, "at the limit", extra=deep), encoding="utf-8")
    assert cli("forget", mid, "--soft").rc == 0
    memory = read_memory(path)
    assert memory.status == "retracted" and 1 + _depth(memory.extra["x_deep"]) == MAX_YAML_DEPTH
    other = new_ulid()
    bundle, _ = honest(tmp_path / "b.tar.gz", [("project", other, project_text(other).replace("tags: [imported]", deep.strip()))])
    result = cli("import", str(bundle))
    assert result.rc == 0, (result.out, result.err)
    with Context.load() as ctx:
        imported = read_memory(ctx.outbox_dir / f"{other}.md")
    assert 1 + _depth(imported.extra["x_deep"]) == MAX_YAML_DEPTH
