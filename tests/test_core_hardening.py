"""Regression tests for the core items of issue 6: stale reads after hand edits that keep
size and mtime, a damaged index, unwritable files, forgetting chain members, duplicate
ids, one size limit, temp files left by a killed writer, and why a file can't be shown."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from openmemex import paths
from openmemex.memfile import MAX_FILE_BYTES, read_memory
from openmemex.store import LIFECYCLE_ROOM
from tests.conftest import Result, git, run_process
from tests.helpers import personal_text

PERSONAL = "memories/personal"


def _add(cli: object, text: str, *extra: str) -> str:
    result: Result = cli("add", text, "--scope", "personal", "--json", *extra)  # type: ignore[operator]
    assert result.rc == 0, result.err
    return str(json.loads(result.out)["id"])


# -- item 2: stale reads ----------------------------------------------------------------


def test_rewrite_keeping_size_and_mtime_is_seen(cli, data_root: Path) -> None:  # type: ignore[no-untyped-def]
    memory_id = _add(cli, "the staging database lives on port 5432")
    assert memory_id in cli("search", "staging", "--json").out
    path = data_root / PERSONAL / f"{memory_id}.md"
    before = path.stat()
    text = path.read_text()
    path.write_text(text.replace("staging database", "billing database"))  # same length
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # `touch -r`: mtime restored
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    hits = json.loads(cli("search", "billing", "--json").out)["hits"]
    assert [h["id"] for h in hits] == [memory_id]
    assert json.loads(cli("search", "staging", "--json").out)["hits"] == []
    listed = json.loads(cli("list", "--scope", "personal", "--json").out)
    assert "billing database" in listed["sections"][0]["memories"][0]["content"]


def test_file_swapped_by_rename_keeping_stat_is_seen(cli, data_root: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    memory_id = _add(cli, "alpha team owns the billing service")
    path = data_root / PERSONAL / f"{memory_id}.md"
    cli("list", "--scope", "personal")
    before = path.stat()
    other = tmp_path / "swap.md"
    other.write_text(path.read_text().replace("alpha", "gamma"))
    os.utime(other, ns=(before.st_atime_ns, before.st_mtime_ns))
    os.replace(other, path)  # new inode, same name, size and mtime
    assert json.loads(cli("search", "gamma", "--json").out)["hits"][0]["id"] == memory_id


# -- item 3: damaged index ----------------------------------------------------------------


def _damage(db: Path, seed: int, pages: int = 6) -> None:
    """Overwrite a few random pages (never page 1, so the file still looks like SQLite)."""
    size = db.stat().st_size
    page = 4096
    rng = random.Random(seed)
    with db.open("r+b") as fh:
        for _ in range(pages):
            fh.seek(rng.randrange(1, size // page) * page)
            fh.write(rng.randbytes(page))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_damaged_index_pages_are_rebuilt_by_every_command(cli, data_root: Path, seed: int) -> None:  # type: ignore[no-untyped-def]
    folder = data_root / PERSONAL
    folder.mkdir(parents=True)
    for i in range(400):
        memory_id = f"01K6AB3XZQ7WVD9J1M2N{i:06d}"
        (folder / f"{memory_id}.md").write_text(personal_text(memory_id, f"note {i} about kettle{i} and the harbor crane"))
    assert cli("list", "--scope", "personal").rc == 0
    db = paths.index_path(data_root)
    for command in (["search", "harbor crane"], ["list", "--scope", "personal"], ["reindex"], ["doctor"],
                    ["add", "a new note after the damage", "--scope", "personal"], ["search", "kettle17"]):  # fmt: skip
        _damage(db, seed)
        result = run_process(*command)
        assert result.rc in (0, 1), (command, result.err)  # doctor may report other findings
        assert "Traceback" not in result.err and "internal error" not in result.err, (command, result.err)
        assert result.err.count("was damaged") <= 1, result.err
    result = run_process("search", "kettle17", "--json")
    assert "01K6AB3XZQ7WVD9J1M2N000017" in [h["id"] for h in json.loads(result.out)["hits"]]
    assert not (data_root / "logs" / "crash.log").exists()
    assert len(list(data_root.glob("index.db.corrupt-*"))) <= 2  # a few kept for a bug report, not all


# -- item 4 (core): text that is not UTF-8 ---------------------------------------------


def test_core_write_path_refuses_undecodable_text(data_root: Path) -> None:
    from openmemex.context import Context
    from openmemex.errors import UsageError
    from openmemex.write import add_memory

    with Context.load() as ctx, pytest.raises(UsageError, match="not valid UTF-8"):
        add_memory(ctx, "x \udcff", scope="personal")
    assert not (data_root / PERSONAL).exists() or os.listdir(data_root / PERSONAL) == []


# -- item 5: unwritable files --------------------------------------------------------


def _refuse_replace(monkeypatch: pytest.MonkeyPatch, after: int = 0) -> None:
    """Make the (after+1)-th atomic rename fail as a read-only file system would."""
    real = os.replace
    calls = {"n": 0}

    def replace(src: object, dst: object) -> None:
        calls["n"] += 1
        if calls["n"] > after:
            raise PermissionError(13, "Permission denied")
        real(src, dst)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "replace", replace)


def test_add_to_unwritable_folder_is_one_line(cli, data_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    _refuse_replace(monkeypatch)
    result = cli("add", "a note that cannot land", "--scope", "personal")
    assert result.rc == 1
    assert result.err.startswith("open-memex: error: cannot write ") and "Permission denied" in result.err
    assert len(result.err.strip().splitlines()) == 1
    leftovers = [p for p in (data_root / PERSONAL).iterdir()] if (data_root / PERSONAL).exists() else []
    assert leftovers == []  # no temp file left behind


def test_supersede_rolls_back_when_the_old_file_cannot_be_written(cli, data_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    old_id = _add(cli, "deploys happen on tuesdays")
    with monkeypatch.context() as patch:
        _refuse_replace(patch, after=1)  # the new file lands, rewriting the old one fails
        result = cli("supersede", old_id, "deploys happen on thursdays")
    assert result.rc == 1 and "cannot write" in result.err and "Traceback" not in result.err
    files = sorted(p.name for p in (data_root / PERSONAL).iterdir())
    assert files == [f"{old_id}.md"]  # rolled back: no second active memory
    assert read_memory(data_root / PERSONAL / f"{old_id}.md").status == "active"
    listed = json.loads(cli("list", "--scope", "personal", "--json").out)["sections"][0]
    assert [m["id"] for m in listed["memories"]] == [old_id]


def test_status_on_unwritable_file_is_one_line(cli, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    memory_id = _add(cli, "the cache TTL is five minutes")
    _refuse_replace(monkeypatch)
    result = cli("status", memory_id, "deprecated")
    assert result.rc == 1 and result.err.startswith("open-memex: error: cannot write ")


def test_failed_chain_repair_is_retried_on_the_next_read(cli, data_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    folder = data_root / PERSONAL
    folder.mkdir(parents=True)
    old_id, new_id = "01K6AB3XZQ7WVD9J1M2N4P5Q6R", "01K6AB3XZQ7WVD9J1M2N4P5Q7S"
    (folder / f"{old_id}.md").write_text(personal_text(old_id, "old"))
    (folder / f"{new_id}.md").write_text(personal_text(new_id, "new", supersedes=old_id))
    with monkeypatch.context() as patch:
        _refuse_replace(patch)
        first = cli("list", "--scope", "personal")
    assert first.rc == 0 and "could not be repaired" in first.err and "Traceback" not in first.err
    second = cli("list", "--scope", "personal")  # nothing changed on disk since: repair runs anyway
    assert "repaired one-sided supersede chain" in second.err
    assert read_memory(folder / f"{old_id}.md").superseded_by == new_id


# -- item 7: forgetting a chain member ---------------------------------------------------


def _chain(cli: object) -> list[str]:
    first = _add(cli, "the api rate limit is 100 requests per minute")
    second = json.loads(cli("supersede", first, "the api rate limit is 200 requests per minute", "--json").out)["id"]  # type: ignore[operator]
    third = json.loads(cli("supersede", second, "the api rate limit is 300 requests per minute", "--json").out)["id"]  # type: ignore[operator]
    return [first, second, third]


def _visible(cli: object) -> tuple[list[str], list[str]]:
    listed = json.loads(cli("list", "--scope", "personal", "--json").out)["sections"][0]["memories"]  # type: ignore[operator]
    hits = json.loads(cli("search", "rate limit", "--json").out)["hits"]  # type: ignore[operator]
    return [m["id"] for m in listed], [h["id"] for h in hits]


@pytest.mark.parametrize("soft", [False, True], ids=["hard", "soft"])
@pytest.mark.parametrize("position", ["head", "middle", "tail"])
def test_forgetting_a_chain_member_keeps_one_head(cli, data_root: Path, position: str, soft: bool) -> None:  # type: ignore[no-untyped-def]
    first, second, third = _chain(cli)
    target = {"head": third, "middle": second, "tail": first}[position]
    result = cli("forget", target, *(["--soft"] if soft else []))
    assert result.rc == 0, result.err
    assert "supersede chain closed around it" in result.err
    expected_head = second if position == "head" else third
    remaining = [m for m in (first, second, third) if m != target]
    # list, search, supersede, status and doctor agree on one head
    assert _visible(cli) == ([expected_head], [expected_head])
    for memory_id in remaining:
        memory = read_memory(data_root / PERSONAL / f"{memory_id}.md")
        assert (memory.status == "active") == (memory_id == expected_head)
        assert target not in (memory.supersedes, memory.superseded_by)
    older, newer = remaining
    assert read_memory(data_root / PERSONAL / f"{older}.md").superseded_by == newer
    assert read_memory(data_root / PERSONAL / f"{newer}.md").supersedes == older
    if soft:
        gone = read_memory(data_root / PERSONAL / f"{target}.md")
        assert (gone.status, gone.supersedes, gone.superseded_by) == ("retracted", None, None)
    else:
        assert not (data_root / PERSONAL / f"{target}.md").exists()
    doctor = json.loads(cli("doctor", "--json").out)
    chains = next(c for c in doctor["checks"] if c["name"] == "supersede chains")
    assert chains["ok"], chains
    stale = next(m for m in remaining if m != expected_head)
    assert "already superseded by" in cli("supersede", stale, "x").err
    assert "chain-managed" in cli("status", stale, "archived").err
    new = cli("supersede", expected_head, "the api rate limit is 400 requests per minute", "--json")
    assert new.rc == 0, new.err
    assert _visible(cli)[0] == [json.loads(new.out)["id"]]


def test_head_deleted_by_hand_leaves_a_head_every_command_agrees_on(cli, data_root: Path) -> None:  # type: ignore[no-untyped-def]
    _first, second, third = _chain(cli)
    (data_root / PERSONAL / f"{third}.md").unlink()  # rm, not forget
    assert _visible(cli) == ([second], [second])
    doctor = json.loads(cli("doctor", "--json").out)
    chains = next(c for c in doctor["checks"] if c["name"] == "supersede chains")
    assert not chains["ok"] and f"open-memex status {second} active" in chains["detail"]
    assert cli("status", second, "active").rc == 0
    memory = read_memory(data_root / PERSONAL / f"{second}.md")
    assert (memory.status, memory.superseded_by) == ("active", None)
    assert next(c for c in json.loads(cli("doctor", "--json").out)["checks"] if c["name"] == "supersede chains")["ok"]


# -- item 8: duplicate ids --------------------------------------------------------------


def test_duplicate_id_is_reported_and_every_command_names_its_copy(cli, data_root: Path, git_repo: Path) -> None:  # type: ignore[no-untyped-def]
    memory_id = _add(cli, "the nightly job runs at 02:00 UTC")
    personal = data_root / PERSONAL / f"{memory_id}.md"
    outboxes = [p for p in (data_root / "memories").iterdir() if p.name != "personal"]
    outbox = outboxes[0] if outboxes else None
    if outbox is None:
        cli("add", "make the outbox exist")
        outbox = next(p for p in (data_root / "memories").iterdir() if p.name != "personal")
    shutil.copy(personal, outbox / personal.name)  # the same file in two scope folders
    doctor = json.loads(cli("doctor", "--json").out)
    check = next(c for c in doctor["checks"] if c["name"] == "duplicate ids")
    assert not check["ok"] and memory_id in check["detail"]
    # every report lists first the copy a command acts on (it listed the personal copy first)
    assert check["detail"].index(str(outbox / personal.name)) < check["detail"].index(str(personal))
    audit = cli("audit").out
    assert audit.index(str(outbox / personal.name)) < audit.index(str(personal))
    result = cli("forget", memory_id)
    assert result.rc == 0
    assert f"id {memory_id} exists in 2 places; acting on {outbox / personal.name}" in result.err
    assert result.err.count("exists in 2 places") == 1  # said once, though forget looks the id up twice
    assert personal.exists() and not (outbox / personal.name).exists()


def test_list_all_shows_this_project_when_its_memories_are_in_the_repository_alone(cli, git_repo: Path) -> None:  # type: ignore[no-untyped-def]
    """A fresh clone: the team's memories are in .ai/open-memex, and no outbox folder exists."""
    added = cli("add", "team rule: every migration needs a rollback script", "--json")
    memory_id = json.loads(added.out)["id"]
    outbox_file = next(p for p in (Path(os.environ["OPEN_MEMEX_HOME"]) / "memories").rglob(f"{memory_id}.md"))
    repo_dir = git_repo / ".ai" / "open-memex"
    repo_dir.mkdir(parents=True)
    shutil.move(outbox_file, repo_dir / outbox_file.name)
    shutil.rmtree(outbox_file.parent)
    listed = json.loads(cli("list", "--scope", "all", "--json").out)
    assert memory_id in json.dumps(listed)


# -- item 9: one size limit -------------------------------------------------------------


def test_oversized_body_is_refused_on_write(cli, data_root: Path) -> None:  # type: ignore[no-untyped-def]
    huge = "word " * (MAX_FILE_BYTES // 5 + 10)
    result = cli("add", huge, "--scope", "personal")
    assert result.rc == 2 and "memory too large" in result.err and "a new memory is at most" in result.err
    assert not (data_root / PERSONAL).exists() or list((data_root / PERSONAL).iterdir()) == []
    just_fits = "w" * (MAX_FILE_BYTES - LIFECYCLE_ROOM - 2000)
    memory_id = _add(cli, just_fits)
    assert cli("reindex").rc == 0
    assert memory_id in cli("list", "--scope", "personal", "--json").out  # the reader keeps it


@pytest.mark.parametrize("text", ["<private>my salary is 100k</private>", "  <private>a</private> <private>b</private>  ",
                                  "<private>unclosed secret note"])  # fmt: skip
def test_all_private_body_is_refused(cli, data_root: Path, text: str) -> None:  # type: ignore[no-untyped-def]
    result = cli("add", text, "--scope", "personal")
    assert result.rc == 2 and "nothing left to save" in result.err
    assert not (data_root / PERSONAL).exists() or list((data_root / PERSONAL).iterdir()) == []


@pytest.mark.parametrize("text", ["\u200b\u200b", "\x1b\x07\x08", "\u202e\u202c\u2066", "\ufeff", "\u3164 \u2800",
                                  "\u200d\n\u0301"])  # fmt: skip
def test_text_with_nothing_visible_is_refused(cli, data_root: Path, text: str) -> None:  # type: ignore[no-untyped-def]
    """Zero-width, control and bidi characters alone are as empty as spaces: refused by add
    and by supersede (the one write path), with the same one line."""
    result = cli("add", text, "--scope", "personal")
    assert result.rc == 2 and "nothing to save: the memory text has no visible character" in result.err
    assert not (data_root / PERSONAL).exists() or list((data_root / PERSONAL).iterdir()) == []
    memory_id = _add(cli, "a fact that stays as it is")
    result = cli("supersede", memory_id, text)
    assert result.rc == 2 and "nothing to save: the new memory text has no visible character" in result.err
    assert len(list((data_root / PERSONAL).iterdir())) == 1
    assert cli("add", "   ", "--scope", "personal").err.count("the memory text is empty") == 1
    assert _add(cli, "\u200bvisible after a zero-width space")  # one visible character is enough


# -- item 16 (core parts): temp files and unreadable in-repo files ------------------------


def test_temp_file_of_a_killed_writer_is_swept(cli, data_root: Path) -> None:  # type: ignore[no-untyped-def]
    memory_id = _add(cli, "a memory next to a stray temp file")
    folder = data_root / PERSONAL
    dead = folder / f".{memory_id}.md.999999.abcd1234.tmp"  # pid 999999 is not running
    dead.write_text("half a file")
    alive = folder / f".{memory_id}.md.{os.getpid()}.abcd1234.tmp"  # a writer still at work
    alive.write_text("being written")
    fresh = folder / f".{memory_id}.md.999998.abcd1234.tmp"  # "dead" pid, but just written: maybe
    fresh.write_text("in flight")  # a writer in another pid namespace (a container): kept
    old = time.time() - 120
    os.utime(dead, (old, old))
    cli("list", "--scope", "personal")
    assert not dead.exists() and alive.exists() and fresh.exists()
    ancient = time.time() - 3600
    os.utime(alive, (ancient, ancient))  # nothing takes an hour to write
    (folder / f"{memory_id}.md").touch()  # the folder changed: the next read scans it
    cli("list", "--scope", "personal")
    assert not alive.exists()


def test_show_names_why_an_in_repo_file_cannot_be_read(cli, git_repo: Path) -> None:  # type: ignore[no-untyped-def]
    folder = git_repo / ".ai" / "open-memex"
    folder.mkdir(parents=True)
    memory_id = "01K6AB3XZQ7WVD9J1M2N4P5Q6R"
    (folder / f"{memory_id}.md").write_text(f"---\nid: {memory_id}\nscope: [unclosed\n---\n\nbody\n")
    git("add", ".", cwd=git_repo)
    result = cli("show", memory_id)
    assert result.rc == 1
    assert f"memory {memory_id} cannot be read: invalid YAML" in result.err
    assert "no memory with id" not in result.err


def test_read_only_index_is_one_line(cli, data_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    import sqlite3

    from openmemex import index

    _add(cli, "written while the index was writable")
    real = sqlite3.connect

    def read_only(path: object, *args: object, **kwargs: object) -> sqlite3.Connection:
        kwargs.pop("uri", None)
        return real(f"file:{path}?mode=ro", *args, uri=True, **kwargs)  # type: ignore[arg-type]

    with monkeypatch.context() as patch:
        patch.setattr(index.sqlite3, "connect", read_only)
        added = cli("add", "a new note while the index is read-only", "--scope", "personal")
        found = cli("search", "written")
    # the add made its change: it says so, and that the index lags (it exited 1, and a retry said "exists")
    assert added.rc == 0 and added.out.startswith("saved "), added.err
    assert added.err.startswith("open-memex: warning: the change is saved, but the index could not be updated")
    assert found.rc == 1, found.err
    assert found.err.startswith("open-memex: error: cannot write the index") and "writable" in found.err
    for result in (added, found):
        assert len(result.err.strip().splitlines()) == 1
    assert not (data_root / "logs" / "crash.log").exists()
    assert "read-only" in cli("search", "read-only", "--json").out  # the file landed; the index catches up


def test_replacement_outside_the_searched_folders_never_forks(cli, git_repo: Path, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """A's replacement B was submitted into the repo; seen from outside the repo, A must stay
    superseded (acting on it there forked the chain), and a broken B file keeps it so too."""
    old = json.loads(cli("add", "delta port is 8080", "--json").out)["id"]
    new = json.loads(cli("supersede", old, "delta port is 9090", "--json").out)["id"]
    assert cli("submit", new).rc == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    listed = json.loads(cli("list", "--scope", "all", "--json").out)
    assert old not in [m["id"] for s in listed["sections"] for m in s["memories"]]
    assert old not in [h["id"] for h in json.loads(cli("search", "delta port", "--scope", "all", "--json").out)["hits"]]
    refused = cli("supersede", old, "delta port is 7070")
    assert refused.rc == 1 and f"{old} is already superseded by {new}" in refused.err
    assert "chain-managed" in cli("status", old, "deprecated").err
    monkeypatch.chdir(git_repo)
    (git_repo / ".ai" / "open-memex" / f"{new}.md").write_text("---\nid: [broken\n---\n")  # a teammate's bad edit
    assert "already superseded" in cli("supersede", old, "delta port is 6060").err
    doctor = json.loads(cli("doctor", "--json").out)
    assert next(c for c in doctor["checks"] if c["name"] == "supersede chains")["ok"]


# -- review findings: rollback, interrupted forget, odd names, damaged cells -----------------


def test_forget_rolls_back_the_relinked_neighbours_when_the_delete_fails(cli, data_root: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    first, second, third = _chain(cli)
    folder = data_root / PERSONAL
    before = {m: (folder / f"{m}.md").read_text() for m in (first, third)}
    real_unlink = Path.unlink

    def refuse(self: Path, missing_ok: bool = False) -> None:
        if self.name == f"{second}.md":
            raise PermissionError(13, "Permission denied")
        real_unlink(self, missing_ok=missing_ok)

    with monkeypatch.context() as patch:
        patch.setattr(Path, "unlink", refuse)
        result = cli("forget", second)
    assert result.rc == 1 and "memory not forgotten" in result.err
    for memory_id, text in before.items():
        memory = read_memory(folder / f"{memory_id}.md")
        assert (memory.supersedes, memory.superseded_by) == (
            (None, second) if memory_id == first else (second, None))  # fmt: skip
        assert memory.body in text
    assert _visible(cli) == ([third], [third])
    assert next(c for c in json.loads(cli("doctor", "--json").out)["checks"] if c["name"] == "supersede chains")["ok"]


@pytest.mark.parametrize("written", [1, 2], ids=["killed-after-prev", "killed-after-both"])
def test_a_forget_interrupted_after_closing_the_chain_is_finished_on_read(cli, data_root: Path, written: int) -> None:  # type: ignore[no-untyped-def]
    first, second, third = _chain(cli)
    folder = data_root / PERSONAL
    edits = ((first, f"superseded_by: {second}", f"superseded_by: {third}"),
             (third, f"supersedes: {second}", f"supersedes: {first}"))  # fmt: skip
    for memory_id, old, new in edits[:written]:
        path = folder / f"{memory_id}.md"
        path.write_text(path.read_text().replace(old, new))  # what forget wrote before the kill
    listed = cli("list", "--scope", "personal")
    assert f"{second}.md: finished an interrupted forget" in listed.err
    middle = read_memory(folder / f"{second}.md")
    assert (middle.status, middle.supersedes, middle.superseded_by) == ("retracted", None, None)
    assert _visible(cli) == ([third], [third])
    assert read_memory(folder / f"{third}.md").supersedes == first
    assert next(c for c in json.loads(cli("doctor", "--json").out)["checks"] if c["name"] == "supersede chains")["ok"]


@pytest.mark.parametrize("position", ["head", "tail"])
def test_a_forget_killed_before_the_delete_is_undone_on_read(cli, data_root: Path, position: str) -> None:  # type: ignore[no-untyped-def]
    """Head and tail: the neighbour was rewritten, the member not yet deleted. The member
    still points at it, so the next read restores the chain — the forget simply did not
    happen (it never said it did) — instead of leaving a dangling pointer or two heads."""
    first, second, third = _chain(cli)
    folder = data_root / PERSONAL
    if position == "head":  # forgetting `third` rewrites `second` first: active, no successor
        path = folder / f"{second}.md"
        path.write_text(path.read_text().replace("status: superseded", "status: active")
                        .replace(f"superseded_by: {third}", "superseded_by: null"))  # fmt: skip
    else:  # forgetting `first` rewrites `second` first: no predecessor
        path = folder / f"{second}.md"
        path.write_text(path.read_text().replace(f"supersedes: {first}", "supersedes: null"))
    result = cli("list", "--scope", "personal")
    assert "repaired one-sided supersede chain" in result.err
    assert _visible(cli) == ([third], [third])
    middle = read_memory(folder / f"{second}.md")
    assert (middle.status, middle.supersedes, middle.superseded_by) == ("superseded", first, third)
    assert next(c for c in json.loads(cli("doctor", "--json").out)["checks"] if c["name"] == "supersede chains")["ok"]


def test_a_file_name_that_is_not_utf8_is_skipped_not_fatal(data_root: Path) -> None:
    folder = data_root / PERSONAL
    folder.mkdir(parents=True)
    memory_id = "01K6AB3XZQ7WVD9J1M2N4P5Q6R"
    (folder / f"{memory_id}.md").write_text(personal_text(memory_id, "a note beside a badly named file"))
    with open(os.fsencode(folder) + b"/bad\xff.md", "wb") as fh:  # git allows any bytes in a name
        fh.write(b"---\nid: x\n---\n")
    for command in (["list", "--scope", "personal"], ["search", "note"], ["reindex"], ["doctor"]):
        result = run_process(*command)
        assert result.rc in (0, 1) and "Traceback" not in result.err and "internal error" not in result.err, result.err
    assert "bad\\xff.md: the file name is not valid UTF-8" in run_process("doctor").out
    assert memory_id in run_process("search", "badly named", "--json").out


def test_a_damaged_text_cell_rebuilds_the_index(cli, data_root: Path) -> None:  # type: ignore[no-untyped-def]
    """Damage the freshness check never touches, found only by the search query itself:
    the command still answers, from a rebuilt index, with one warning."""
    import sqlite3

    memory_id = _add(cli, "the widgets service owns the queue")
    db = sqlite3.connect(paths.index_path(data_root))
    db.execute("UPDATE memory_rows SET visibility = CAST(x'696e7465ff' AS TEXT)")
    db.commit()
    db.close()
    result = run_process("search", "widgets", "--json")
    assert result.rc == 0 and "Traceback" not in result.err, result.err
    assert [h["id"] for h in json.loads(result.out)["hits"]] == [memory_id]
    assert result.err.count("was damaged") == 1


def test_a_damaged_index_that_cannot_be_moved_is_one_line(cli, data_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    _add(cli, "a note before the damage")
    db = paths.index_path(data_root)
    cli("list", "--scope", "personal")
    db.write_bytes(b"this is not a database" * 100)
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    real = os.replace

    def read_only(src: object, dst: object) -> None:
        if str(src) == str(db):
            raise OSError(30, "Read-only file system")
        real(src, dst)  # type: ignore[arg-type]

    with monkeypatch.context() as patch:
        patch.setattr(os, "replace", read_only)
        result = cli("search", "note")
    assert result.rc == 1
    assert result.err.startswith(f"open-memex: error: the index {db} is damaged and cannot be moved aside")
    assert len(result.err.strip().splitlines()) == 1


def test_a_busy_index_after_the_file_landed_is_a_warning(cli, data_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    from openmemex import index
    from openmemex.errors import StoreBusyError

    def busy(*args: object) -> None:
        raise StoreBusyError("the memory store is busy")

    with monkeypatch.context() as patch:
        patch.setattr(index, "apply_changes", busy)
        result = cli("add", "saved while a reindex held the index", "--scope", "personal", "--json")
    assert result.rc == 0 and json.loads(result.out)["status"] == "saved"
    assert "saved, but the index is busy" in result.err
    hits = json.loads(cli("search", "reindex held", "--json").out)["hits"]
    assert [h["id"] for h in hits] == [json.loads(result.out)["id"]]


def test_proposing_twice_makes_one_copy(cli, git_repo: Path) -> None:  # type: ignore[no-untyped-def]
    personal = _add(cli, "I review PRs before lunch")
    first = json.loads(cli("propose", personal, "--to", "project", "--json").out)["proposed"][0]
    again = cli("propose", personal, "--to", "project")
    assert again.rc == 0 and f"already proposed: {personal} → {first['id']}" in again.out
    drafts = json.loads(cli("list", "--json").out)["sections"][0]["memories"]
    assert [d["id"] for d in drafts] == [first["id"]]


def test_a_second_worktree_is_not_a_duplicate_id(cli, git_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """Each work tree has its own .ai/open-memex/ copy of the committed memories; doctor in
    one must not report the other's rows (which it never synced) as duplicate ids."""
    draft = json.loads(cli("add", "the release train leaves on fridays", "--json").out)["id"]
    assert cli("submit", draft).rc == 0
    other = tmp_path / "wt2"
    git("worktree", "add", "-q", str(other), "-b", "wt2", cwd=git_repo)
    monkeypatch.chdir(other)
    assert draft in cli("list", "--json").out  # indexes the second work tree's copy
    monkeypatch.chdir(git_repo)
    checks = {c["name"]: c for c in json.loads(cli("doctor", "--json").out)["checks"]}
    assert checks["duplicate ids"]["ok"], checks["duplicate ids"]
    assert checks["supersede chains"]["ok"]


def test_a_conflicted_memory_mid_rebase_is_never_read_or_written(cli, git_repo: Path) -> None:  # type: ignore[no-untyped-def]
    """A real rebase leaves git's markers in the body: reading it showed both sides as one
    text, and `status` rewrote the conflicted file. Now it is skipped with the way out."""
    memory_id = json.loads(cli("add", "deploys happen on tuesdays", "--json").out)["id"]
    assert cli("submit", memory_id).rc == 0
    path = git_repo / ".ai" / "open-memex" / f"{memory_id}.md"
    git("checkout", "-q", "-b", "side", cwd=git_repo)
    path.write_text(path.read_text().replace("tuesdays", "mondays"))
    git("commit", "-qam", "side", cwd=git_repo)
    git("checkout", "-q", "main", cwd=git_repo)
    path.write_text(path.read_text().replace("tuesdays", "thursdays"))
    git("commit", "-qam", "main", cwd=git_repo)
    git("checkout", "-q", "side", cwd=git_repo)
    subprocess.run(["git", "rebase", "main"], cwd=git_repo, capture_output=True)
    conflicted = path.read_text()
    assert "<<<<<<< " in conflicted
    listed = cli("list")
    assert "unresolved git conflict markers" in listed.err and "open-memex resolve" in listed.err
    assert memory_id not in listed.out
    refused = cli("status", memory_id, "deprecated")
    assert refused.rc == 1 and "unresolved git conflict markers" in refused.err
    assert path.read_text() == conflicted  # untouched


def test_conflict_markers_in_new_text_are_refused_unless_fenced(cli, data_root: Path) -> None:  # type: ignore[no-untyped-def]
    markers = "<<<<<<< HEAD\nours\n=======\ntheirs\n>>>>>>> branch"
    refused = cli("add", f"git conflicts look like:\n{markers}", "--scope", "personal")
    assert refused.rc == 2 and "conflict markers" in refused.err and "code block" in refused.err
    fenced = _add(cli, f"git conflicts look like:\n```\n{markers}\n```")
    assert cli("reindex").rc == 0
    assert fenced in cli("list", "--scope", "personal", "--json").out  # what is written reads back
    assert _add(cli, "a setext heading\n=======\nis not a conflict")


@pytest.mark.parametrize("op", ["add", "supersede", "status", "forget"])
def test_a_change_saved_while_the_index_cannot_be_written_succeeds(data_root: Path, op: str) -> None:
    """The files are the truth: with the index unwritable (a full disk, a read-only index.db:
    here SQLite's own query_only refusal) the change is made, the command
    succeeds with a warning (it exited 1, and a retry said 'already exists'; forget said
    nothing was changed with the file gone), and the next read indexes it."""
    from openmemex.context import Context
    from openmemex.lifecycle import forget, set_status
    from openmemex.search import search
    from openmemex.write import add_memory, supersede

    with Context.load() as setup:
        first = add_memory(setup, "the cache layer is redis").id
    warnings: list[str] = []
    with Context.load(warn=warnings.append) as ctx:
        from openmemex import freshness

        freshness.sync(ctx, "both")  # the read before the change, then a full disk
        ctx.conn.execute("PRAGMA query_only = 1")  # SQLite refuses every write from here on
        if op == "add":
            assert add_memory(ctx, "the message bus is kafka").status == "saved"
        elif op == "supersede":
            supersede(ctx, first, "the cache layer is valkey now")
        elif op == "status":
            set_status(ctx, first, "archived")
        else:
            forget(ctx, first)
    assert any("the change is saved, but the index could not be updated" in w for w in warnings), warnings
    with Context.load() as after:
        found = {h.id for h in search(after, "kafka OR valkey OR redis", scope="both").hits}
        texts = [h.snippet for h in search(after, "kafka valkey redis", scope="both").hits]
    expected = {"add": ("kafka", True), "supersede": ("valkey", True), "status": ("redis", False),
                "forget": ("redis", False)}[op]  # fmt: skip
    assert any(expected[0] in t for t in texts) == expected[1], (op, texts, found)


def test_a_change_on_an_ascii_pipe_is_confirmed_in_ascii(data_root: Path, tmp_path: Path) -> None:
    """The change is made before the confirmation is printed: our own arrow must not turn a
    done supersede into exit 1 (and its retry into 'already superseded')."""
    env = {"PYTHONIOENCODING": "ascii"}
    first = json.loads(run_process("add", "plain ascii memory", "--json").out)["id"]
    result = run_process("supersede", first, "plain ascii memory v2", env=env)
    assert result.rc == 0, result.err
    assert f"superseded {first} -> " in result.out
    other = json.loads(run_process("add", "another plain memory", "--json").out)["id"]
    result = run_process("status", other, "archived", env=env)
    assert result.rc == 0 and "->" in result.out, result.err
    result = run_process("export", "-o", str(tmp_path / "b.tgz"), env=env)
    assert result.rc == 0 and (tmp_path / "b.tgz").exists(), result.err
    saved = run_process("add", "café au lait", env=env)  # the confirmation names the id and path, not the text
    assert saved.rc == 0 and saved.out.startswith("saved "), saved.err


@pytest.mark.parametrize("value", [["a"], 5, {"x": 1}, True])
def test_a_memory_dir_that_is_not_a_string_is_refused(data_root: Path, git_repo: Path, value: object) -> None:
    from openmemex.context import Context

    data_root.mkdir(parents=True, exist_ok=True)
    (data_root / "config.json").write_text(json.dumps({"memoryDir": value}))
    warnings: list[str] = []
    with Context.load(warn=warnings.append) as ctx:
        assert ctx.repo_dir == git_repo / ".ai" / "open-memex"
    assert any("memoryDir must be a folder name in quotes" in w for w in warnings), warnings


def test_a_wal_that_is_a_folder_is_named(cli, data_root: Path) -> None:  # type: ignore[no-untyped-def]
    _add(cli, "the index gets a folder where its wal belongs")
    db = data_root / "index.db"
    for extra in (Path(f"{db}-wal"), Path(f"{db}-shm")):
        extra.unlink(missing_ok=True)
    Path(f"{db}-wal").mkdir()
    result = cli("reindex")
    assert result.rc == 1
    assert f"{db}-wal (a folder or special file where a file belongs: move it away)" in result.err
    assert f"{db}-shm" not in result.err


@pytest.mark.parametrize("value", ["1.5", "0x2", "0b11", "0.5", "-1", "2e1"])
@pytest.mark.parametrize("command", ["search", "list"])
def test_limit_takes_whole_numbers_only(cli, command: str, value: str) -> None:  # type: ignore[no-untyped-def]
    _add(cli, "limit parsing memory")
    args = [command, "limit"] if command == "search" else [command]
    for form in ([*args, "--limit", value], [*args, f"--limit={value}"]):
        result = cli(*form)
        assert result.rc == 2, (form, result.out, result.err)
        assert "--limit" in result.err and result.err[-1] == "\n" and result.err.count("\n") == 1


def test_a_fifth_alias_is_left_out_with_a_warning(cli, data_root: Path) -> None:  # type: ignore[no-untyped-def]
    result = cli("add", "aliases are capped at four", "--aliases", "a1;b2;c3;d4;e5", "--json")
    assert result.rc == 0
    assert "keeps at most 4 aliases: kept the first 4, not 'e5'" in result.err
    saved = read_memory(Path(json.loads(result.out)["path"]), "personal")
    assert saved.aliases == ["a1", "b2", "c3", "d4"]


def test_one_bad_redact_pattern_leaves_the_others_on(data_root: Path) -> None:
    """A typo in one of the user's patterns turned every pattern off: the secret they mask
    was stored in the clear, and the warning never reached an MCP result."""
    from openmemex.context import Context
    from openmemex.write import add_memory

    data_root.mkdir(parents=True, exist_ok=True)
    (data_root / "config.json").write_text(json.dumps({"redactPatterns": ["ACME-[0-9]{6}", "(typo"]}))
    warnings: list[str] = []
    with Context.load(warn=warnings.append) as ctx:
        assert ctx.config.values["redactPatterns"] == ["ACME-[0-9]{6}"]
        saved = add_memory(ctx, "the staging key is ACME-123456")
    assert "ACME-123456" not in Path(saved.path).read_text()
    assert any("'(typo' is left out" in w and "the other patterns still apply" in w for w in warnings), warnings
