"""Guards on the surfaces around the store (review of bundles, migrate, propose, distill,
capture and report paths): nothing private or secret slips past a side door, no file of the
user's is replaced, and nothing hangs on a FIFO."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def _add(cli: Any, *args: str) -> str:
    result = cli("add", *args, "--json")
    assert result.rc == 0, result.err
    return str(json.loads(result.out)["id"])


def test_propose_redacts_what_it_copies_into_the_outbox(cli: Any, data_root: Path, git_repo: Path) -> None:
    """A personal file edited by hand may hold a secret: the project copy is made through the
    write path's barrier, as `add` would write it."""
    memory_id = _add(cli, "the staging deploy uses a token", "--scope", "personal")
    path = next(data_root.rglob(f"{memory_id}.md"))
    path.write_text(path.read_text().replace("the staging deploy uses a token", f"the staging deploy token is {TOKEN}")
                    .replace("tags: []", f"tags: [{TOKEN}]"))  # fmt: skip
    result = cli("propose", memory_id)
    assert result.rc == 0, result.err
    outbox = [p for p in data_root.rglob("*.md") if "personal" not in p.parts]
    assert outbox and all(TOKEN not in p.read_text() for p in outbox)
    assert any("ghp_" in p.read_text() for p in outbox)  # masked, not dropped


def test_migrate_keeps_a_private_project_memory_private_and_an_unreadable_target(cli: Any, data_root: Path,
                                                                                git_repo: Path) -> None:  # fmt: skip
    from openmemex.git.repo import GitRepo  # noqa: F401  (the repository exists)
    from tests.conftest import git

    private = _add(cli, "our staging password rotation lives in the vault")
    other = _add(cli, "a second project memory")
    old_key = json.loads(cli("where", "--json").out)["project"]
    source = data_root / "memories" / old_key
    file = source / f"{private}.md"
    file.write_text(file.read_text().replace("visibility: internal", "visibility: private"))
    git("remote", "set-url", "origin", "https://example.com/acme/renamed.git", cwd=git_repo)
    new_key = json.loads(cli("where", "--json").out)["project"]
    assert new_key != old_key
    target = data_root / "memories" / new_key
    target.mkdir(parents=True, exist_ok=True)
    typo = "---\nid: [a typo by hand\n---\nsomeone's text\n"
    (target / f"{other}.md").write_text(typo)
    result = cli("migrate", "--from", old_key, "--on-conflict", "newer", "--json")
    assert result.rc == 0, result.err
    doc = json.loads(result.out)
    assert doc["moved"] == [private] and doc["conflicts"] == [other]
    assert "visibility: private" in (target / f"{private}.md").read_text()
    assert (target / f"{other}.md").read_text() == typo  # never replaced


def test_distill_leaves_private_project_memories_out(cli: Any, data_root: Path, git_repo: Path) -> None:
    shared = _add(cli, "we release on tuesdays", "--type", "decision")
    private = _add(cli, "the vendor contract renews in march", "--type", "decision")
    file = next(data_root.rglob(f"{private}.md"))
    file.write_text(file.read_text().replace("visibility: internal", "visibility: private"))
    text = cli("distill-agents").out
    assert "tuesdays" in text and "vendor contract" not in text, (shared, text)


def test_a_dropped_capture_is_shown_redacted(cli: Any) -> None:
    """A match too long to save is echoed (cut to 80 characters): masked like a saved one."""
    shown = cli("capture", "--dry-run", f"remember that the deploy token is {TOKEN} " + "x" * 2100).out
    assert "NOT captured" in shown and TOKEN not in shown and "ghp_" in shown


def test_reports_never_replace_a_device_or_fifo_and_import_never_waits_on_one(cli: Any, tmp_path: Path,
                                                                              data_root: Path) -> None:  # fmt: skip
    _add(cli, "a memory to report", "--scope", "personal")
    _add(cli, "we deploy on tuesdays", "--type", "decision")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for args in (("inventory", "--out", str(fifo)), ("export", "-o", str(fifo), "--all"),
                 ("distill-agents", "-o", str(fifo), "--force")):  # fmt: skip
        result = cli(*args)
        assert result.rc == 2 and re.search(r"device, FIFO or socket", result.err), (args, result.err)
        assert fifo.is_fifo(), args
    result = cli("import", str(fifo))
    assert result.rc == 1 and "is not a file" in result.err


def test_propose_of_a_masked_text_is_idempotent_and_all_or_nothing(cli: Any, data_root: Path, git_repo: Path) -> None:
    """The copy holds the cleaned text: proposing again must find it (three proposes made
    three copies), and a source refused by the barrier writes no copy of the others."""
    memory_id = _add(cli, "the staging deploy uses a token", "--scope", "personal")
    path = next(data_root.rglob(f"{memory_id}.md"))
    path.write_text(path.read_text().replace("the staging deploy uses a token", f"the staging deploy token is {TOKEN}"))
    for _ in range(3):
        assert cli("propose", memory_id).rc == 0

    def outbox() -> list[Path]:
        return [p for p in data_root.rglob("*.md") if "personal" not in p.parts]

    assert len(outbox()) == 1
    fine = _add(cli, "we cache builds for a week", "--scope", "personal")
    private = _add(cli, "placeholder", "--scope", "personal")
    file = next(data_root.rglob(f"{private}.md"))
    file.write_text(file.read_text().replace("placeholder", "<private>only secrets</private>"))
    refused = cli("propose", fine, private)
    assert refused.rc == 2 and len(outbox()) == 1, refused.err


def test_propose_of_the_same_memory_twice_in_one_call_makes_one_copy(cli: Any, data_root: Path, git_repo: Path) -> None:
    memory_id = _add(cli, "we cache builds for a week", "--scope", "personal")
    assert cli("propose", memory_id, memory_id).rc == 0
    assert len([p for p in data_root.rglob("*.md") if "personal" not in p.parts]) == 1


def test_a_hook_payload_that_is_not_json_is_one_line_and_no_crash_log(data_root: Path, git_repo: Path) -> None:
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "openmemex", "hook", "stop"], input="not json", capture_output=True,
                          text=True, cwd=git_repo, timeout=60)  # fmt: skip
    assert proc.returncode == 0 and "not JSON" in proc.stderr and "internal error" not in proc.stderr
    assert not (data_root / "logs" / "crash.log").exists()


def test_propose_again_after_submit_names_no_submit(cli: Any, git_repo: Path) -> None:
    """Re-proposing a memory whose copy was submitted suggested `submit` for it, which then
    had nothing to commit."""
    memory_id = _add(cli, "I review pull requests before lunch", "--scope", "personal")
    copy = json.loads(cli("propose", memory_id, "--json").out)["proposed"][0]["id"]
    assert cli("propose", memory_id).out.endswith(f"next: open-memex submit {copy}\n")
    assert cli("submit", copy).rc == 0
    again = cli("propose", memory_id)
    assert again.rc == 0 and "next:" not in again.out and "already in the repository" in again.out


@pytest.mark.parametrize("value", ["1e400", "9" * 5000])
def test_a_config_number_out_of_range_is_replaced_by_its_default(cli: Any, data_root: Path, value: str) -> None:
    """`{"injectTokens": 1e400}` (or 5,000 digits) by hand made every command exit 70."""
    data_root.mkdir(parents=True, exist_ok=True)
    (data_root / "config.json").write_text('{"injectTokens": ' + value + '}\n')
    for args in (("where",), ("list",), ("config",)):
        result = cli(*args)
        assert "internal error" not in result.err and result.err.count("\n") <= 1, (args, result.err)
        if value == "1e400":  # a value: replaced by its default, with a warning
            assert result.rc == 0, result.err
        else:  # a number Python will not read: the file cannot be read, one line naming it
            assert result.rc == 1 and "fix or delete it" in result.err
    if value == "1e400":
        assert json.loads(cli("config", "get", "injectTokens").out) == 800
    refused = cli("config", "set", "injectTokens", "1e400")
    assert refused.rc == 2 and "invalid value for injectTokens" in refused.err
    for bad in ("true", "3.7"):
        assert cli("config", "set", "injectTokens", bad).rc == 2


def test_config_set_from_several_processes_loses_no_update(data_root: Path) -> None:
    import subprocess
    import sys

    keys = [("maxProjectMemories", "7"), ("maxProfileItems", "9"), ("injectTokens", "500"),
            ("captureAliases", "false"), ("keywordCaptureEnabled", "false"), ("logLevel", '"debug"')]  # fmt: skip
    procs = [subprocess.Popen([sys.executable, "-m", "openmemex", "config", "set", key, value],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for key, value in keys]  # fmt: skip
    for proc in procs:
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
    stored = json.loads((data_root / "config.json").read_text())
    assert set(stored) == {key for key, _ in keys}, stored


def test_config_set_writes_through_a_link_and_refuses_a_folder(cli: Any, data_root: Path, tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "open-memex.json"
    real.parent.mkdir()
    real.write_text('{"injectTokens": 500}\n')
    data_root.mkdir(parents=True, exist_ok=True)
    (data_root / "config.json").symlink_to(real)
    assert cli("config", "set", "maxProfileItems", "9").rc == 0
    assert (data_root / "config.json").is_symlink() and json.loads(real.read_text()) == {"injectTokens": 500,
                                                                                         "maxProfileItems": 9}  # fmt: skip
    (data_root / "config.json").unlink()
    (data_root / "config.json").mkdir()
    result = cli("config", "set", "maxProfileItems", "9")
    assert result.rc == 1 and "is not a file" in result.err and "internal error" not in result.err
    assert not [p for p in data_root.iterdir() if p.name.endswith(".tmp")]
    assert "is not a file" in cli("where").err  # read commands say so, then use the defaults
