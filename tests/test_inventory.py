"""The inventory data layer and its renderings (D68, D70; scenarios 79–84): one numbering,
true totals, hidden history counted, provenance in plain words, no paths in JSON, the
HTML escaped under a strict CSP, and the personal-report guard."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from openmemex import inventory_html
from openmemex.context import Context
from openmemex.listing import Entry, provenance, relative_time, review_words
from tests.helpers import write_example

NOW = 1_800_000_000.0


def add(cli: Any, text: str, *args: str) -> str:
    result = cli("add", text, *args, "--json")
    assert result.rc == 0, result.err
    return str(json.loads(result.out)["id"])


def numbers(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"^(\d+)\. \[", text, re.M)]


@pytest.fixture
def store(cli: Any, git_repo: Path) -> dict[str, str]:
    """A personal memory, a repo memory (also copied into the outbox), two outbox drafts,
    and history: one superseded, one retracted, one archived."""
    ids = {"personal": add(cli, "prefers <b>short</b> commit messages", "--scope", "personal", "--type", "preference")}
    repo_dir = git_repo / ".ai" / "open-memex"
    ids["repo"] = write_example(repo_dir).stem
    ctx = Context.load()
    ctx.outbox_dir.mkdir(parents=True, exist_ok=True)
    shutil.copy(repo_dir / f"{ids['repo']}.md", ctx.outbox_dir)  # an interrupted submit: shown once
    ids["draft"] = add(cli, "the ci cache key includes the lockfile hash", "--source", "keyword")
    old = add(cli, "retries use a fixed 1 s delay")
    ids["new"] = json.loads(cli("supersede", old, "retries back off exponentially", "--json").out)["id"]
    assert cli("forget", add(cli, "the vpn needs split tunnelling"), "--soft").rc == 0
    assert cli("status", add(cli, "old build server is jenkins-2"), "archived").rc == 0
    ids["old"] = old
    return ids


def test_text_sections_numbering_and_hidden_counts(cli: Any, store: dict[str, str]) -> None:
    """Scenario 79 (source=cli in the personal section) and the D70 rules."""
    text = cli("inventory").out
    assert text.startswith("What open-memex remembers — ")
    assert "4 memories (1 personal, 1 in the repo, 2 in the outbox)." in text
    sections = [line for line in text.splitlines() if line.startswith("## ")]
    assert sections == ["## About you — personal (never leaves this machine) (1)", "## Project: widgets (1)",
                        "## Not in the repo yet — outbox drafts (2)"]  # fmt: skip
    assert numbers(text) == [1, 2, 3, 4]
    assert re.search(rf"^1\. \[preference\] id={store['personal']} created=now source=cli — prefers <b>short</b>", text, re.M)
    assert text.count(store["repo"]) == 1 and f"2. [decision] id={store['repo']}" in text
    assert "Not shown: 1 superseded version(s), 1 retracted, 1 archived — inspect with `open-memex list" in text
    assert "`open-memex forget ID`" in text


def test_empty_project_says_so(cli: Any, git_repo: Path) -> None:
    """Scenario 84."""
    text = cli("inventory", "--scope", "project").out
    assert "## Project: widgets (0)\n(nothing remembered)" in text
    assert "0 memories (0 personal, 0 in the repo, 0 in the outbox)." in text


def test_json_format_2_has_no_paths(cli: Any, store: dict[str, str], tmp_path: Path, data_root: Path) -> None:
    """Scenario 80."""
    raw = cli("inventory", "--format", "json").out
    doc = json.loads(raw)
    assert doc["format"] == "open-memex-inventory/2" and doc["total"] == 4
    assert isinstance(doc["scopes"], list) and [s["scope"] for s in doc["scopes"]] == ["personal", "project"]
    assert doc["hidden"] == {"superseded": 1, "retracted": 1, "archived": 1}
    assert '"file":' not in raw and "hiddenEntries" not in raw
    assert str(tmp_path) not in raw and str(data_root) not in raw and '"/' not in raw
    entries = [m for s in doc["scopes"] for m in s["memories"]] + doc["outbox"]
    assert [m["number"] for m in entries] == [1, 2, 3, 4]
    keyword = next(m for m in entries if m["id"] == store["draft"])
    assert keyword["provenance"] == "saved just now, from a keyword capture"
    assert keyword["location"] == "outbox" and keyword["project"] == "widgets"


def test_out_and_the_personal_guard(cli: Any, store: dict[str, str], git_repo: Path, tmp_path: Path) -> None:
    """Scenarios 81 and 83: outside the repo it is written; inside, refused without
    --allow-personal (and that refusal beats a missing folder); a missing folder says so."""
    outside = tmp_path / "reports"
    outside.mkdir()
    ok = cli("inventory", "--out", str(outside / "inv.txt"))
    assert ok.rc == 0 and (outside / "inv.txt").read_text().startswith("What open-memex remembers")
    inside = cli("inventory", "--format", "json", "--out", "inv.json")
    assert inside.rc == 1 and not (git_repo / "inv.json").exists()
    assert "holds personal memories" in inside.err and f"inside the git work tree {git_repo}" in inside.err
    deep = cli("inventory", "--out", str(git_repo / "not" / "yet" / "inv.txt"))
    assert deep.rc == 1 and "inside the git work tree" in deep.err
    link = tmp_path / "link-into-repo"
    link.symlink_to(git_repo)
    assert cli("inventory", "--out", str(link / "inv.txt")).rc == 1 and not (git_repo / "inv.txt").exists()
    missing = cli("inventory", "--out", str(outside / "nope" / "inv.txt"))
    assert missing.rc == 2 and "does not exist" in missing.err
    assert "ENOENT" not in missing.err and "No such file" not in missing.err
    allowed = cli("inventory", "--format", "json", "--out", "inv.json", "--allow-personal")
    assert allowed.rc == 0 and json.loads((git_repo / "inv.json").read_text())["total"] == 4
    project_only = cli("inventory", "--scope", "project", "--out", "project.txt")
    assert project_only.rc == 0  # nothing personal in it


def test_html_report(cli: Any, store: dict[str, str], data_root: Path, git_repo: Path) -> None:
    """Scenario 82: escaped, current memories shown, history folded, CSP default-src
    'none' with only our own inline style and script allowed by hash; default path in
    the data root; refused inside the work tree."""
    add(cli, 'hostile <script>document.title="pwned"</script> <img src=x onerror=alert(1)> & "quotes"')
    result = cli("inventory", "--format", "html")
    assert result.rc == 0 and f"to {data_root / 'inventory.html'}" in result.out
    assert f"file://{data_root / 'inventory.html'}" in result.err
    page = (data_root / "inventory.html").read_text()
    assert page.count("<script>") == 1 and "&lt;script&gt;document.title=&quot;pwned&quot;&lt;/script&gt;" in page
    assert "<img" not in page and "&lt;img src=x onerror=alert(1)&gt; &amp; &quot;quotes&quot;" in page
    assert "prefers &lt;b&gt;short&lt;/b&gt;" in page
    csp = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', page)
    assert csp is not None and csp.group(1).startswith("default-src 'none'; ")
    style = re.search(r"<style>(.*?)</style>", page, re.S)
    script = re.search(r"<script>(.*?)</script>", page, re.S)
    assert style is not None and script is not None
    for body in (style.group(1), script.group(1)):
        digest = base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
        assert f"'sha256-{digest}'" in csp.group(1)
    assert "unsafe-inline" not in page and "http://" not in page and "https://" not in page and " style=" not in page
    history = page.split("Replaced &amp; hidden history", 1)[1]
    assert "the vpn needs split tunnelling" in history and "old build server is jenkins-2" in history
    assert f"replaced by <code>{store['new']}</code>" in history
    assert "saved just now, from a keyword capture" in page and "not in the repo yet" in page and "in the repo" in page
    refused = cli("inventory", "--format", "html", "--out", str(git_repo / "inventory.html"))
    assert refused.rc == 1 and not (git_repo / "inventory.html").exists()


def test_html_folds_sections_of_a_large_store(cli: Any, data_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inventory_html, "FOLD_THRESHOLD", 2)
    for i in range(3):
        add(cli, f"project fact {i} about folding {i * 7}")
    cli("inventory", "--format", "html")
    page = (data_root / "inventory.html").read_text()
    opened = re.findall(r'<details class="group"( open)?>\n<summary>([^<]+)', page)
    assert [(bool(o), t) for o, t in opened] == [(False, "About you — personal (never leaves this machine)"),
                                                  (False, "Project: work"), (True, "Not in the repo yet — outbox drafts")]  # fmt: skip


def test_list_counts_hidden_history_and_carries_provenance(cli: Any, store: dict[str, str]) -> None:
    listing = cli("list", "--scope", "both").out
    assert numbers(listing) == [1, 2, 3, 4]
    assert listing.rstrip().endswith("Not shown: 1 superseded version(s), 1 retracted, 1 archived — shown with --include all")
    assert "Not shown" not in cli("list", "--scope", "both", "--include", "all").out
    doc = json.loads(cli("list", "--scope", "both", "--json").out)
    project = doc["sections"][1]
    assert project["hidden"] == {"superseded": 1, "retracted": 1, "archived": 1}
    assert {m["provenance"] for m in project["memories"]} >= {"saved just now, from a keyword capture"}
    assert "file_path" not in json.dumps(doc) and "\"file\"" not in json.dumps(doc)


def test_scope_all_adds_other_projects_outboxes(cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    add(cli, "the elsewhere project uses make")
    monkeypatch.chdir(tmp_path / "work")
    add(cli, "the work project uses just")
    text = cli("inventory", "--scope", "all").out
    assert "## Not in a repo yet — outbox of elsewhere (1)" in text and "the elsewhere project uses make" in text
    assert "the elsewhere project uses make" not in cli("inventory").out
    assert cli("inventory", "--type", "decision").out.count("(nothing remembered)") == 3


def test_bad_format_and_scope_are_usage_errors(cli: Any) -> None:
    bad = cli("inventory", "--format", "pdf")
    assert bad.rc == 2 and "unknown --format 'pdf' — use one of: text, json, html" in bad.err
    assert cli("inventory", "--scope", "team").rc == 2


def _entry(**fields: Any) -> Entry:
    base: dict[str, Any] = {"id": "01J0000000000000000000000A", "scope": "project", "scope_key": "k", "type": "fact",
                            "status": "active", "review_state": "proposed", "source": "keyword",
                            "created_at": NOW - 3 * 86400, "updated_at": NOW - 3 * 86400, "body": "b",
                            "location": "repo", "tags": []}  # fmt: skip
    return Entry(**{**base, **fields})


def test_provenance_in_plain_words() -> None:
    assert provenance(_entry(), NOW) == "saved 3 days ago, from a keyword capture"
    assert provenance(_entry(source="inference", created_at=NOW - 7200, updated_at=NOW - 7200), NOW) == (
        "saved 2 hours ago, inferred by your agent — not your words, check it")
    moved = _entry(source="user", created_at=NOW - 40 * 86400, updated_at=NOW - 86400 * 2)
    assert provenance(moved, NOW) == "saved on 2026-12-06, in your own words; changed 2 days ago"
    assert [relative_time(NOW - d, NOW) for d in (5, 60, 3600, 86400)] == ["just now", "1 minute ago", "1 hour ago", "1 day ago"]
    assert review_words(_entry()) == "waiting for review" and review_words(_entry(scope="personal")) == ""
