"""Hostile and broken memory files never crash a command (design: quarantine).

Each hostile file sits in the personal folder next to one good memory. ``search`` and
``list`` must exit 0, still find the good memory, warn exactly once (one line) about the
bad file the first time it is seen, stay quiet about it afterwards, and never print a
traceback. A fixed file comes back; ``index.quarantined`` lists what is held.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

import pytest

from openmemex import index
from openmemex.context import Context
from openmemex.ids import new_ulid
from tests.conftest import run_process
from tests.helpers import personal_text

GOOD_TEXT = "good memory about kubernetes"
WARN_PREFIX = "open-memex: warning: skipped "



def _personal_dir() -> Path:
    with Context.load() as ctx:
        return ctx.personal_dir


# ---- the hostile files ------------------------------------------------------------------
# Each maker writes one bad file into ``folder`` and returns its path.
Maker = Callable[[Path, Path], Path]

MARKER_NAME = "os-system-ran"


def make_python_tag(folder: Path, tmp: Path) -> Path:
    mid = new_ulid()
    marker = tmp / MARKER_NAME
    extra = f'x_evil: !!python/object/apply:os.system ["touch {marker}"]\n'
    path = folder / f"{mid}.md"
    path.write_text(personal_text(mid, extra=extra), encoding="utf-8")
    return path


def make_alias_bomb(folder: Path, tmp: Path) -> Path:
    mid = new_ulid()
    lines = ['x_a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    names = "abcdefghi"
    for prev, cur in itertools.pairwise(names):
        refs = ", ".join(f"*{prev}" for _ in range(9))
        lines.append(f"x_{cur}: &{cur} [{refs}]")
    path = folder / f"{mid}.md"
    path.write_text(personal_text(mid, extra="\n".join(lines) + "\n"), encoding="utf-8")
    return path


def make_invalid_utf8(folder: Path, tmp: Path) -> Path:
    mid = new_ulid()
    data = personal_text(mid, body="broken bytes here").encode("utf-8")
    data = data.replace(b"broken bytes", b"broken \xff\xfe\xc3\x28 bytes")
    path = folder / f"{mid}.md"
    path.write_bytes(data)
    return path


def make_binary(folder: Path, tmp: Path) -> Path:
    mid = new_ulid()
    path = folder / f"{mid}.md"
    path.write_bytes(b"\x7fELF\x02\x01\x01\x00\x00\x00" + bytes(range(256)) * 8)
    return path


def make_empty(folder: Path, tmp: Path) -> Path:
    mid = new_ulid()
    path = folder / f"{mid}.md"
    path.write_bytes(b"")
    return path


def make_huge(folder: Path, tmp: Path) -> Path:
    mid = new_ulid()
    path = folder / f"{mid}.md"
    head = personal_text(mid, body="enormous").encode("utf-8")
    size = 20 * 1024 * 1024
    chunk = b"padding line of a far too large memory file\n" * 4096
    with path.open("wb") as fh:
        fh.write(head)
        written = len(head)
        while written < size:
            part = chunk[: size - written]
            fh.write(part)
            written += len(part)
    assert path.stat().st_size == size
    return path


def make_missing_id(folder: Path, tmp: Path) -> Path:
    mid = new_ulid()
    text = personal_text(mid).replace(f"id: {mid}\n", "")
    assert "\nid:" not in text and not text.startswith("---\nid:")
    path = folder / f"{mid}.md"
    path.write_text(text, encoding="utf-8")
    return path


def make_id_mismatch(folder: Path, tmp: Path) -> Path:
    path = folder / f"{new_ulid()}.md"
    path.write_text(personal_text(new_ulid()), encoding="utf-8")
    return path


def make_list_frontmatter(folder: Path, tmp: Path) -> Path:
    mid = new_ulid()
    path = folder / f"{mid}.md"
    path.write_text(
        f"---\n- id: {mid}\n- scope: personal\n- type: fact\n---\n\nlist shaped\n", encoding="utf-8"
    )
    return path


def make_unterminated(folder: Path, tmp: Path) -> Path:
    mid = new_ulid()
    text = personal_text(mid, body="never closed")
    head, _, body = text.rpartition("---\n")
    path = folder / f"{mid}.md"
    path.write_text(head + body, encoding="utf-8")
    assert path.read_text(encoding="utf-8").count("---") == 1
    return path


def make_bad_enum(folder: Path, tmp: Path) -> Path:
    mid = new_ulid()
    path = folder / f"{mid}.md"
    path.write_text(personal_text(mid, type="decisoin"), encoding="utf-8")
    return path


def make_no_frontmatter(folder: Path, tmp: Path) -> Path:
    path = folder / f"{new_ulid()}.md"
    path.write_text("# just markdown\n\nno frontmatter at all\n", encoding="utf-8")
    return path


def make_directory(folder: Path, tmp: Path) -> Path:
    path = folder / f"{new_ulid()}.md"
    path.mkdir()
    return path


HOSTILE: dict[str, Maker] = {
    "python-tag": make_python_tag,
    "alias-bomb": make_alias_bomb,
    "invalid-utf8": make_invalid_utf8,
    "binary-nul": make_binary,
    "empty": make_empty,
    "20mb": make_huge,
    "missing-id": make_missing_id,
    "id-mismatch": make_id_mismatch,
    "list-frontmatter": make_list_frontmatter,
    "unterminated-frontmatter": make_unterminated,
    "bad-enum": make_bad_enum,
    "no-frontmatter": make_no_frontmatter,
    "directory-named-md": make_directory,
}

# Values in otherwise valid frontmatter that make the YAML loader or the time
# normalisation raise something other than a YAML error.
BAD_VALUES = {
    "impossible-date": ("created_at", "2026-02-30"),
    "impossible-hour": ("created_at", "2026-09-26 25:00:00"),
    "infinite-time": ("created_at", ".inf"),
    "nan-time": ("updated_at", ".nan"),
    "huge-epoch": ("created_at", "99999999999999999999"),
    "bad-int-tag": ("x_count", "!!int abc"),
    "bad-float-tag": ("x_ratio", "!!float abc"),
    "bad-bool-tag": ("x_flag", "!!bool maybe"),
}


def _warnings_about(err: str, path: Path) -> list[str]:
    return [line for line in err.splitlines() if line.startswith(f"{WARN_PREFIX}{path}: ")]


def _assert_no_traceback(*results: object) -> None:
    for result in results:
        assert "Traceback" not in result.out  # type: ignore[attr-defined]
        assert "Traceback" not in result.err  # type: ignore[attr-defined]


def _add_good(cli) -> str:  # type: ignore[no-untyped-def]
    result = cli("add", GOOD_TEXT, "--scope", "personal")
    assert result.rc == 0, result.err
    assert result.err == ""
    return result.out.split()[1]


def _check_quarantined(cli, good_id: str, bad: Path) -> None:  # type: ignore[no-untyped-def]
    first = cli("search", "kubernetes")
    assert first.rc == 0, first.err
    assert good_id in first.out
    lines = [line for line in first.err.splitlines() if line.strip()]
    assert len(lines) == 1, first.err
    assert len(_warnings_about(first.err, bad)) == 1, first.err

    listed = cli("list", "--scope", "personal")
    assert listed.rc == 0, listed.err
    assert good_id in listed.out
    assert listed.err == "", "an unchanged quarantined file must not be reported again"

    again = cli("search", "kubernetes")
    assert again.rc == 0, again.err
    assert good_id in again.out
    assert again.err == ""
    _assert_no_traceback(first, listed, again)

    with Context.load() as ctx:
        held = dict(index.quarantined(ctx.conn))
        ids = {r[0] for r in ctx.conn.execute("SELECT id FROM memories")}
    assert str(bad) in held
    assert "\n" not in held[str(bad)]
    assert ids == {good_id}


@pytest.mark.parametrize("kind", list(HOSTILE))
def test_hostile_file_is_quarantined(cli, tmp_path: Path, kind: str) -> None:  # type: ignore[no-untyped-def]
    good_id = _add_good(cli)
    folder = _personal_dir()
    bad = HOSTILE[kind](folder, tmp_path)
    _check_quarantined(cli, good_id, bad)
    if kind == "python-tag":
        assert not (tmp_path / MARKER_NAME).exists(), "a python/object tag was executed"


@pytest.mark.parametrize("kind", list(BAD_VALUES))
def test_bad_yaml_value_is_quarantined(cli, kind: str) -> None:  # type: ignore[no-untyped-def]
    good_id = _add_good(cli)
    folder = _personal_dir()
    key, value = BAD_VALUES[kind]
    mid = new_ulid()
    text = personal_text(mid)
    if f"\n{key}: " in text:
        text = "\n".join(
            f"{key}: {value}" if line.startswith(f"{key}: ") else line for line in text.split("\n")
        )
    else:
        text = text.replace("review_history: []\n", f"review_history: []\n{key}: {value}\n")
    assert f"\n{key}: {value}\n" in text
    bad = folder / f"{mid}.md"
    bad.write_text(text, encoding="utf-8")
    _check_quarantined(cli, good_id, bad)


def test_symlink_is_not_followed(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    good_id = _add_good(cli)
    folder = _personal_dir()
    outside = tmp_path / "outside"
    outside.mkdir()
    mid = new_ulid()
    target = outside / f"{mid}.md"
    target.write_text(
        personal_text(mid, body="zanzibar secret outside the store"), encoding="utf-8"
    )
    link = folder / f"{mid}.md"
    link.symlink_to(target)

    _check_quarantined(cli, good_id, link)
    found = cli("search", "zanzibar")
    assert found.rc == 0
    assert mid not in found.out
    assert "zanzibar" not in found.out
    assert "(no matches)" in found.out
    listed = cli("list", "--scope", "personal")
    assert mid not in listed.out
    assert target.read_text(encoding="utf-8").startswith("---\n")  # never touched


def test_bom_file_is_accepted(cli) -> None:  # type: ignore[no-untyped-def]
    good_id = _add_good(cli)
    folder = _personal_dir()
    mid = new_ulid()
    path = folder / f"{mid}.md"
    path.write_bytes(
        b"\xef\xbb\xbf"
        + personal_text(mid, body="kubernetes with a byte order mark").encode("utf-8")
    )

    found = cli("search", "kubernetes")
    assert found.rc == 0, found.err
    assert found.err == ""
    assert good_id in found.out
    assert mid in found.out
    listed = cli("list", "--scope", "personal")
    assert listed.rc == 0
    assert listed.err == ""
    assert mid in listed.out
    with Context.load() as ctx:
        assert index.quarantined(ctx.conn) == []
    _assert_no_traceback(found, listed)


def test_crlf_file_is_accepted(cli) -> None:  # type: ignore[no-untyped-def]
    good_id = _add_good(cli)
    mid = new_ulid()
    path = _personal_dir() / f"{mid}.md"
    path.write_bytes(
        personal_text(mid, body="kubernetes written on windows")
        .replace("\n", "\r\n")
        .encode("utf-8")
    )
    found = cli("search", "kubernetes")
    assert found.rc == 0, found.err
    assert found.err == ""
    assert good_id in found.out and mid in found.out


def test_good_file_swapped_for_symlink(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A memory replaced by a symlink disappears, and the link target is never read."""
    good_id = _add_good(cli)
    folder = _personal_dir()
    mid = new_ulid()
    path = folder / f"{mid}.md"
    path.write_text(personal_text(mid, body="kubernetes original text"), encoding="utf-8")
    assert mid in cli("search", "kubernetes").out

    target = tmp_path / f"{mid}.md"
    target.write_text(personal_text(mid, body="kubernetes zanzibar injected"), encoding="utf-8")
    path.unlink()
    path.symlink_to(target)
    found = cli("search", "kubernetes")
    assert found.rc == 0
    assert good_id in found.out
    assert mid not in found.out
    assert len(_warnings_about(found.err, path)) == 1
    assert "(no matches)" in cli("search", "zanzibar").out
    with Context.load() as ctx:
        assert [p for p, _ in index.quarantined(ctx.conn)] == [str(path)]


def test_fixed_file_leaves_quarantine(cli) -> None:  # type: ignore[no-untyped-def]
    good_id = _add_good(cli)
    folder = _personal_dir()
    mid = new_ulid()
    path = folder / f"{mid}.md"
    path.write_text(
        personal_text(mid, type="decisoin", body="kubernetes repaired later"), encoding="utf-8"
    )

    first = cli("search", "kubernetes")
    assert first.rc == 0
    assert mid not in first.out
    assert len(_warnings_about(first.err, path)) == 1
    with Context.load() as ctx:
        assert [p for p, _ in index.quarantined(ctx.conn)] == [str(path)]

    path.write_text(
        personal_text(mid, type="decision", body="kubernetes repaired later"), encoding="utf-8"
    )
    fixed = cli("search", "kubernetes")
    assert fixed.rc == 0, fixed.err
    assert fixed.err == ""
    assert mid in fixed.out
    assert good_id in fixed.out
    with Context.load() as ctx:
        assert index.quarantined(ctx.conn) == []
        rows = ctx.conn.execute(
            "SELECT COUNT(*) FROM quarantine WHERE file_path = ?", (str(path),)
        ).fetchone()
        assert rows[0] == 0


def test_deleted_bad_file_leaves_quarantine(cli) -> None:  # type: ignore[no-untyped-def]
    _add_good(cli)
    folder = _personal_dir()
    bad = make_empty(folder, folder)
    assert cli("search", "kubernetes").rc == 0
    with Context.load() as ctx:
        assert [p for p, _ in index.quarantined(ctx.conn)] == [str(bad)]
    bad.unlink()
    again = cli("search", "kubernetes")
    assert again.rc == 0
    assert again.err == ""
    with Context.load() as ctx:
        assert index.quarantined(ctx.conn) == []


def test_quarantined_lists_every_bad_file(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    good_id = _add_good(cli)
    folder = _personal_dir()
    bad = [maker(folder, tmp_path) for maker in HOSTILE.values()]
    outside = tmp_path / "outside"
    outside.mkdir()
    mid = new_ulid()
    (outside / f"{mid}.md").write_text(personal_text(mid), encoding="utf-8")
    link = folder / f"{mid}.md"
    link.symlink_to(outside / f"{mid}.md")
    bad.append(link)

    first = cli("search", "kubernetes")
    assert first.rc == 0, first.err
    assert good_id in first.out
    _assert_no_traceback(first)
    for path in bad:
        assert len(_warnings_about(first.err, path)) == 1, (path, first.err)
    assert len([line for line in first.err.splitlines() if line.strip()]) == len(bad)

    with Context.load() as ctx:
        held = index.quarantined(ctx.conn)
    assert [p for p, _ in held] == sorted(str(p) for p in bad)
    assert all(reason and "\n" not in reason for _, reason in held)

    second = cli("list", "--scope", "personal")
    assert second.rc == 0
    assert good_id in second.out
    assert second.err == ""


def test_hostile_file_in_real_process(tmp_path: Path) -> None:
    """The same guarantees hold for the installed entry point run as a process."""
    added = run_process("add", GOOD_TEXT, "--scope", "personal")
    assert added.rc == 0, added.err
    folder = _personal_dir()
    bad = make_alias_bomb(folder, tmp_path)
    result = run_process("search", "kubernetes")
    assert result.rc == 0, result.err
    assert "kubernetes" in result.out
    assert "Traceback" not in result.err
    assert len(_warnings_about(result.err, bad)) == 1
    assert run_process("search", "kubernetes").err == ""
