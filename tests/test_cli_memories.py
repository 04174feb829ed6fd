"""The memory commands end to end through the CLI (reference scenarios 17–31, 42–43)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from openmemex.context import Context
from tests.conftest import git

ID = re.compile(r"\b([0-7][0-9A-HJKMNP-TV-Z]{25})\b")


def add(cli: Any, *args: str) -> str:
    result = cli("add", *args)
    assert result.rc == 0, result.err
    match = ID.search(result.out)
    assert match, result.out
    return match.group(1)


def test_add_then_exact_duplicate(cli: Any, data_root: Path) -> None:
    first = add(cli, "Run migrations with make migrate, never by hand")
    again = cli("add", "Run  migrations with make migrate,\nnever by hand")
    assert again.rc == 0
    assert again.out.strip() == f"already exists: id={first} (identical content — not duplicated)"
    assert len(list(data_root.rglob("*.md"))) == 1


def test_add_json_contract(cli: Any) -> None:
    result = cli("add", "The staging key is ghp_" + "A1b2" * 9, "--json", "--tags", "ci", "--scope", "personal")
    doc = json.loads(result.out)
    assert set(doc) == {"id", "status", "scope", "scope_key", "path", "masked", "similar"}
    assert doc["status"] == "saved" and doc["scope"] == "personal" and doc["scope_key"] == "personal"
    assert doc["masked"] == ["github-pat"]
    stored = Path(doc["path"]).read_text()
    assert "ghp_xxxx" in stored and "A1b2A1b2" not in stored
    assert json.loads(cli("add", "The staging key is ghp_" + "A1b2" * 9, "--json", "--scope", "personal").out)["status"] == "exists"


def test_near_duplicate_notice(cli: Any) -> None:
    first = add(cli, "the release checklist lives in docs/release.md and must be followed for every tag")
    result = cli("add", "release checklist lives in docs/release.md and must be followed for every tag", "--json")
    doc = json.loads(result.out)
    assert doc["status"] == "saved"
    assert doc["similar"] and doc["similar"][0]["id"] == first and doc["similar"][0]["score"] >= 0.8
    text = cli("add", "the release checklist lives in docs/release.md and must be followed for each tag")
    assert "similar memory exists (score" in text.err and first in text.err


def test_private_and_secret_masking(cli: Any, data_root: Path) -> None:
    result = cli("add", "db password: <private>hunter2-is-secret</private> and api_key = 'Zk39sLq8Xw72mNp4Rt6Y'")
    assert result.rc == 0
    assert "secret masked (generic-secret-assignment)" in result.err
    text = next(data_root.rglob("*.md")).read_text()
    assert "[REDACTED]" in text and "hunter2" not in text
    assert "api_key = 'Zk39xxxxxxxxxxxxxxxx'" in text


def test_unknown_type_is_an_error(cli: Any) -> None:
    for command in (("add", "x y z", "--type", "decisions"), ("search", "x", "--type", "decisions"),
                    ("list", "--type", "decisions")):  # fmt: skip
        result = cli(*command)
        assert result.rc == 2
        assert result.err.startswith("open-memex: error: unknown type 'decisions' — use one of: fact,")


@pytest.mark.parametrize("scope", ["org", "team", "public"])
def test_reserved_scopes_refused(cli: Any, scope: str) -> None:
    result = cli("add", "something", "--scope", scope)
    assert result.rc == 2 and "reserved" in result.err


def test_search_finds_by_prefix_and_alias(cli: Any) -> None:
    decision = add(cli, "We use fast-forward merges only on main", "--type", "decision")
    aliased = add(cli, "PTO requests go through the HR portal", "--aliases", "time off;vacation days")
    assert decision in cli("search", "ff merges").out or decision in cli("search", "merge").out
    hit = cli("search", "vacation")
    assert aliased in hit.out and "(aka: time off, vacation days)" in hit.out


def test_secret_alias_masked_benign_alias_searchable(cli: Any, data_root: Path) -> None:
    memory_id = add(cli, "CI token rotation happens monthly", "--aliases", "ghp_" + "Z9y8" * 9 + ";credential rotation")
    text = (next(data_root.rglob(f"{memory_id}.md"))).read_text()
    assert "Z9y8Z9y8" not in text
    assert memory_id in cli("search", "credential").out


def test_search_json_and_limit_never_exceeded(cli: Any) -> None:
    for i in range(12):
        add(cli, f"kubernetes note number {i} about pods and nodes {i * 7}")
    doc = json.loads(cli("search", "kubernetes", "--limit", "5", "--json").out)
    assert doc["query"] == "kubernetes" and len(doc["hits"]) == 5
    assert set(doc["hits"][0]) >= {"id", "scope", "scope_key", "type", "status", "review_state", "score", "snippet", "tags"}
    assert doc["hits"][0]["lane"] == "bm25" and doc["lanes"] == ["bm25"]  # recall receipts (design §7)
    scores = [h["score"] for h in doc["hits"]]
    assert scores == sorted(scores, reverse=True)
    assert cli("search", "kubernetes", "--limit", "0").rc == 2


def test_search_no_matches_and_hostile_query(cli: Any) -> None:
    add(cli, "alpha beta")
    assert cli("search", "zzzzqqq").out.strip() == "(no matches)"
    for query in ('"', "AND", "NOT OR", "*", "-", "a:b", "(("):
        assert cli("search", query).rc == 0


def test_chinese_search(cli: Any) -> None:
    memory_id = add(cli, "发布前必须先跑回归测试，数据库迁移要单独审核")
    assert memory_id in cli("search", "数据库迁移怎么做").out
    assert memory_id in cli("search", "回归测试").out


def test_supersede_chain_answers_with_newest(cli: Any) -> None:
    old = add(cli, "Deploys happen on Tuesdays", "--tags", "deploy")
    result = cli("supersede", old, "Deploys happen on Thursdays")
    assert result.rc == 0
    new = ID.findall(result.out)[-1]
    assert result.out.strip() == f"superseded {old} → {new}"
    shown = json.loads(cli("show", old, "--json").out)
    assert shown["status"] == "superseded" and shown["superseded_by"] == new
    assert json.loads(cli("show", new, "--json").out)["supersedes"] == old
    assert json.loads(cli("show", new, "--json").out)["tags"] == ["deploy"]
    hits = json.loads(cli("search", "deploys tuesdays", "--json").out)["hits"]
    assert [h["id"] for h in hits] == [new]
    explain = cli("search", "tuesdays", "--explain").out
    assert "hidden by lifecycle: 1 superseded" in explain
    assert cli("supersede", old, "again").rc == 1


def test_status_rules(cli: Any) -> None:
    old = add(cli, "first version of the rule")
    cli("supersede", old, "second version of the rule")
    refused = cli("status", old, "active")
    assert refused.rc == 1 and "chain-managed" in refused.err
    other = add(cli, "an unrelated fact about caching")
    assert cli("status", other, "retracted").rc == 0
    back = cli("status", other, "active")
    assert back.rc == 1 and "retracted" in back.err
    assert cli("status", other, "bogus").rc == 2
    assert cli("status", add(cli, "third thing"), "deprecated").out.startswith("status ")


def test_forget_hard_and_soft(cli: Any, data_root: Path) -> None:
    gone = add(cli, "temporary note to delete")
    assert cli("forget", gone).out.strip() == f"deleted {gone}"
    assert gone not in cli("list").out
    assert cli("forget", gone).rc == 1
    hidden = add(cli, "note to hide softly")
    assert cli("forget", hidden, "--soft").out.startswith(f"hidden {hidden}")
    assert hidden not in cli("list").out
    assert "[retracted]" in cli("list", "--include", "all").out
    assert hidden not in cli("search", "hide softly").out
    assert cli("forget", hidden).rc == 0


def test_an_id_of_another_project_is_named_as_such(cli: Any, git_repo: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """An id reaches every project's outbox (``inventory --scope all`` lists them for
    ``forget ID``); run in another project, every command says whose memory it acts on."""
    first = json.loads(cli("add", "widgets runs postgres 15", "--json").out)["id"]
    second = json.loads(cli("add", "widgets deploys from the release branch", "--json").out)["id"]
    other = tmp_path / "gadgets"
    other.mkdir()
    git("init", "-q", "-b", "main", cwd=other)
    monkeypatch.chdir(other)
    note = "belongs to another project, widgets (project__widgets__"
    replaced = cli("supersede", first, "widgets runs postgres 16 now", "--json")
    assert replaced.rc == 0 and note in replaced.err and "not to gadgets, where this runs" in replaced.err
    assert replaced.err.count(note) == 1  # looked up twice (before and under the lock), said once
    assert json.loads(replaced.out)["scope_key"].startswith("project__widgets__")
    forgotten = cli("forget", second)
    assert forgotten.rc == 0 and note in forgotten.err
    assert note in cli("show", first).err
    own = json.loads(cli("add", "gadgets ship on Tuesdays", "--json").out)["id"]
    mine = cli("forget", own)
    assert mine.rc == 0 and "another project" not in mine.err


def test_forget_reports_undeletable_file(cli: Any, data_root: Path) -> None:
    """D63: only "already gone" counts as deleted; the memory survives a failed unlink."""
    memory_id = add(cli, "a memory in a folder that becomes read-only")
    path = next(data_root.rglob(f"{memory_id}.md"))
    path.parent.chmod(0o555)
    try:
        if os.access(path.parent, os.W_OK):  # running as root: permissions do not bite
            path.parent.chmod(0o755)
            blocker = path.parent / "blocker"
            path.rename(blocker)
            path.mkdir()
            (path / "x").write_text("x")
            result = cli("forget", memory_id)
            assert result.rc == 1
            (path / "x").unlink()
            path.rmdir()
            blocker.rename(path)
        else:
            result = cli("forget", memory_id)
            assert result.rc == 1
            assert "could not delete" in result.err and "memory not forgotten" in result.err
            assert path.exists()
    finally:
        path.parent.chmod(0o755)
    assert memory_id in cli("list").out
    assert cli("forget", memory_id).rc == 0
    assert not path.exists()


def test_list_numbering_and_truncation(cli: Any) -> None:
    for i in range(22):
        add(cli, f"project fact {i} about widgets {i * 13}")
    for i in range(3):
        add(cli, f"personal fact {i} about tea {i * 17}", "--scope", "personal")
    listing = cli("list", "--limit", "5").out
    lines = [line for line in listing.splitlines() if re.match(r"^\d+\. ", line)]
    assert len(lines) == 5
    assert all(re.match(r"^\d+\. \[[a-z]+\] id=\S+ created=\S+ source=", line) for line in lines)
    assert "… and 17 more not shown" in listing
    both = cli("list", "--scope", "both", "--limit", "5").out
    numbers = [int(m) for m in re.findall(r"^(\d+)\. ", both, re.M)]
    assert numbers == list(range(1, len(numbers) + 1)) and len(numbers) == 8
    assert both.index("## About you") < both.index("## This project")
    assert "[draft]" in both and "personal fact" in both
    assert "(no memories in personal)" not in both
    doc = json.loads(cli("list", "--scope", "both", "--json").out)
    assert [s["total"] for s in doc["sections"]] == [3, 22]


def test_list_filters(cli: Any) -> None:
    add(cli, "choose postgres", "--type", "decision")
    add(cli, "likes dark mode", "--scope", "personal", "--type", "preference")
    assert "choose postgres" in cli("list").out and "dark mode" not in cli("list").out
    assert "dark mode" in cli("list", "--scope", "personal").out
    assert "choose postgres" not in cli("list", "--type", "preference", "--scope", "both").out


def test_empty_list_messages(cli: Any) -> None:
    assert cli("list", "--scope", "personal").out.strip() == "(no memories in personal)"
    assert "(nothing remembered in this scope yet)" in cli("list", "--scope", "both").out


def test_review_tiers(cli: Any, data_root: Path) -> None:
    draft = add(cli, "cache invalidation uses redis pubsub draft")
    approved = add(cli, "cache invalidation uses redis pubsub approved")
    personal = add(cli, "cache invalidation uses redis pubsub personal", "--scope", "personal")
    path = next(data_root.rglob(f"{approved}.md"))
    path.write_text(path.read_text().replace("review_state: draft", "review_state: approved"))
    ids = [h["id"] for h in json.loads(cli("search", "cache invalidation redis", "--json").out)["hits"]]
    assert ids == [approved, personal, draft]


def test_where_scopes_config(cli: Any, data_root: Path) -> None:
    where = cli("where").out
    assert f"root:      {data_root}" in where and "project:   project__" in where
    assert cli("scopes").out.strip() == "(no scopes with memories yet — add one with `open-memex add`)"
    add(cli, "one")
    add(cli, "two", "--scope", "personal")
    scopes = cli("scopes").out
    assert "personal  <- personal" in scopes and "<- current project" in scopes
    assert cli("config", "set", "sync.autoPull", "true").rc == 0
    config = json.loads(cli("config").out)
    assert config["sync"] == {"autoPull": True, "transport": "auto"}
    assert json.loads(cli("config", "get", "sync.autoPull").out) is True
    assert cli("config", "set", "nope", "1").rc == 2
    assert cli("config", "set", "memoryDir", "../../escape").rc == 2


def test_escaping_memory_dir_falls_back(cli: Any, data_root: Path) -> None:
    data_root.mkdir(parents=True, exist_ok=True)
    (data_root / "config.json").write_text('{"memoryDir": "../../shared" /* hand-edited */}')
    with Context.load() as ctx:
        assert ctx.config.memory_dir == ".ai/open-memex"


def test_migrate(cli: Any, data_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert "no --from given" in cli("migrate", "--dry-run").err
    personal = add(cli, "moves to the project", "--scope", "personal")
    dry = cli("migrate", "--from", "personal", "--to", "project", "--dry-run")
    assert dry.out.startswith("[DRY RUN] personal → project__") and "moved 1" in dry.out
    assert (data_root / "memories" / "personal" / f"{personal}.md").exists()
    assert cli("migrate", "--from", "personal", "--to", "project").rc == 0
    moved = json.loads(cli("show", personal, "--json").out)
    assert moved["scope"] == "project" and moved["visibility"] == "internal" and moved["location"] == "outbox"
    assert cli("migrate", "--from", "personal", "--to", "personal").rc == 2


def test_reindex_after_index_loss(cli: Any, data_root: Path) -> None:
    memory_id = add(cli, "survives index loss")
    for name in ("index.db", "index.db-wal", "index.db-shm"):
        (data_root / name).unlink(missing_ok=True)
    assert memory_id in cli("list").out
    result = cli("reindex")
    assert result.rc == 0 and result.out.startswith("reindexed: 1 memories")


def test_redact_command(cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    source = tmp_path / "note.txt"
    source.write_text("token ghp_" + "Q7w8" * 9 + " and <private>x</private>\n")
    result = cli("redact", str(source))
    assert result.out == "token ghp_" + "x" * 36 + " and [REDACTED]\n"
    monkeypatch.setattr("sys.stdin", io.StringIO("plain text\n"))
    assert cli("redact", "-").out == "plain text\n"
    assert cli("redact", str(tmp_path / "missing")).rc == 2


def test_every_command_has_help(cli: Any) -> None:
    from openmemex.cli.app import app

    names = [name for name in app if not name.startswith("-")]
    assert {"add", "search", "list", "show", "supersede", "status", "forget", "where", "scopes",
            "reindex", "migrate", "config", "redact", "demo"} <= set(names)  # fmt: skip
    for name in names:
        result = cli(name, "--help")
        assert result.rc == 0 and "Usage" in result.out, name
    assert cli("--version").out.strip()
    assert cli("nonsense-command").rc == 2


def test_delete_failure_is_reported_not_swallowed(tmp_path: Path) -> None:
    """unlink on a directory fails with EISDIR even as root: reported, never "deleted"."""
    from openmemex.errors import MemexError
    from openmemex.store import delete

    blocker = tmp_path / "01M8MKWK0600T1RZG1FH1S8A9F.md"
    blocker.mkdir()
    with pytest.raises(MemexError, match=r"could not delete .* \(EISDIR\) — memory not forgotten"):
        delete(blocker)
    delete(tmp_path / "already-gone.md")  # ENOENT is success


def test_data_root_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from openmemex.paths import config_path, data_root, data_root_source

    monkeypatch.setenv("MY_O_MEMORY_HOME", str(tmp_path / "legacy"))
    assert data_root() == tmp_path / "data" and data_root_source() == "OPEN_MEMEX_HOME"
    monkeypatch.delenv("OPEN_MEMEX_HOME")
    assert data_root() == tmp_path / "legacy" and data_root_source() == "MY_O_MEMORY_HOME"
    monkeypatch.delenv("MY_O_MEMORY_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert data_root() == tmp_path / "xdg" / "open-memex"
    monkeypatch.setenv("MY_O_MEMORY_CONFIG", str(tmp_path / "old.json"))
    monkeypatch.setenv("OPEN_MEMEX_CONFIG", str(tmp_path / "new.json"))
    assert config_path(tmp_path) == tmp_path / "new.json"
    monkeypatch.delenv("OPEN_MEMEX_CONFIG")
    assert config_path(tmp_path) == tmp_path / "old.json"


def test_jsonc_stripper_is_string_aware() -> None:
    from openmemex.config import strip_jsonc

    text = '{"redactPatterns": ["src/**/secrets", "a /* not a comment */ b"], // real comment\n "x": 1, /* block */ }'
    assert json.loads(strip_jsonc(text)) == {"redactPatterns": ["src/**/secrets", "a /* not a comment */ b"], "x": 1}
    # a comma before } or ] inside a string is text (the config's own stripper once ate it)
    assert json.loads(strip_jsonc('{"redactPatterns": ["x,}", "y, ]"],}')) == {"redactPatterns": ["x,}", "y, ]"]}


def test_soft_forget_of_a_repo_memory_warns(cli: Any, git_repo: Path) -> None:
    memory = add(cli, "a shared memory that turns out wrong")
    assert cli("submit", memory).rc == 0
    result = cli("forget", memory, "--soft")
    assert result.rc == 0 and "commit and push" in result.err and "team still sees it" in result.err
    hard = add(cli, "another shared memory")
    cli("submit", hard)
    deleted = cli("forget", hard)
    assert "commit the deletion" in deleted.err


def test_bad_config_values_fall_back_with_a_warning(cli: Any, data_root: Path) -> None:
    data_root.mkdir(parents=True, exist_ok=True)
    (data_root / "config.json").write_text('{"redactPatterns": 5, "sync": "git", "memoryDir": ".git/mem"}')
    result = cli("add", "a bad cab stays readable")
    assert result.rc == 0
    assert "redactPatterns" in result.err and "'sync' in" in result.err and "memoryDir" in result.err
    doc = json.loads(cli("show", ID.search(result.out).group(1), "--json").out)  # type: ignore[union-attr]
    assert doc["body"] == "a bad cab stays readable"
    assert cli("config", "set", "redactPatterns", '["(sk_"]').rc == 2
    assert cli("config", "set", "memoryDir", ".").rc == 2


def test_review_notes_are_redacted(cli: Any, git_repo: Path) -> None:
    memory = add(cli, "tokens rotate weekly")
    cli("submit", memory)
    token = "ghp_" + "R3v1" * 9
    assert cli("promote", memory, "--reject", "--note", f"leaked {token} here").rc == 0
    text = (git_repo / ".ai" / "open-memex" / f"{memory}.md").read_text()
    assert token not in text and "ghp_xxxx" in text


def test_hidden_memories_never_crowd_out_hits(cli: Any) -> None:
    for i in range(15):
        memory = add(cli, f"alpha retracted note {i} {i * 31}")
        cli("forget", memory, "--soft")
    keep = add(cli, "alpha note that is still true")
    result = cli("search", "alpha", "--limit", "1", "--explain")
    assert keep in result.out and "15 retracted/archived" in result.out


def test_unusable_data_root_is_one_line(cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    monkeypatch.setenv("OPEN_MEMEX_HOME", str(blocker))
    result = cli("search", "anything")
    assert result.rc == 1 and result.err.startswith("open-memex: error: cannot use") and "Traceback" not in result.err
    assert cli("doctor").rc == 1


def test_corrupt_repository_is_one_line(cli: Any, git_repo: Path) -> None:
    (git_repo / ".git" / "HEAD").write_text("garbage\n")
    result = cli("sync-status")
    assert result.rc == 1 and result.err.startswith("open-memex: error: git:")


def test_show_json_with_a_date_typed_unknown_field(cli: Any, data_root: Path) -> None:
    memory = add(cli, "dates in unknown fields", "--scope", "personal")
    path = next(data_root.rglob(f"{memory}.md"))
    path.write_text(path.read_text().replace("review_history: []", "review_history: []\nx_when: 2026-01-01"))
    assert json.loads(cli("show", memory, "--json").out)["x_when"] == "2026-01-01"
