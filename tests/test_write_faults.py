"""The write path under faults a real disk and a real agent bring: a disk that fills up
mid-write, text a reader would refuse, a memory at the size limit. A memory file is never
cut short or replaced by something the reader then drops."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import run_process


def _file(data_root: Path, memory_id: str) -> Path:
    return next(data_root.rglob(f"{memory_id}.md"))


def test_a_disk_that_fills_up_mid_write_never_cuts_a_memory_short(cli: Any, data_root: Path) -> None:
    """On a nearly full disk `write` writes part of the data and says so; the temp file was
    renamed over the memory anyway (a 73 KB memory became 32 KB, and every reader then served
    the cut text). A file-size limit makes the same short write here."""
    words = " ".join(f"w{i}" for i in range(12_000))
    memory_id = json.loads(cli("add", words, "--json").out)["id"]
    path = _file(data_root, memory_id)
    before = path.read_bytes()
    assert len(before) > 64 * 1024

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (32 * 1024, 32 * 1024))

    proc = subprocess.run([sys.executable, "-m", "openmemex", "status", memory_id, "deprecated"], capture_output=True,
                          text=True, timeout=60, preexec_fn=small_files)  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "nothing was changed; free some disk space" in proc.stderr and "Traceback" not in proc.stderr
    assert path.read_bytes() == before
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".")]  # no temp file left
    shown = run_process("show", memory_id, "--json")
    assert json.loads(shown.out)["body"] == words and json.loads(shown.out)["status"] == "active"


def test_a_memory_saved_at_the_size_limit_can_still_change_status(cli: Any, data_root: Path) -> None:
    """A new text keeps room below the readers' 2 MB for what its lifecycle adds: the largest
    memory `add` takes can still be deprecated and soft-forgotten (they were refused as
    "memory too large … split it"), and the reader still reads it after."""
    from openmemex.memfile import MAX_FILE_BYTES
    from openmemex.store import LIFECYCLE_ROOM

    refused = cli("add", "x" * (MAX_FILE_BYTES - LIFECYCLE_ROOM), "--scope", "personal")
    assert refused.rc == 2 and "memory too large" in refused.err
    body = "x" * (MAX_FILE_BYTES - LIFECYCLE_ROOM - 1000)
    memory_id = json.loads(cli("add", body, "--scope", "personal", "--json").out)["id"]
    saved = _file(data_root, memory_id).stat().st_size
    for args in (("status", memory_id, "deprecated"), ("status", memory_id, "active"), ("forget", memory_id, "--soft")):
        result = cli(*args)
        assert result.rc == 0, (args, result.err)
    assert saved < _file(data_root, memory_id).stat().st_size <= MAX_FILE_BYTES
    assert cli("reindex").rc == 0
    assert json.loads(cli("show", memory_id, "--json").out)["status"] == "retracted"


def test_a_nul_character_is_refused_before_it_is_written(data_root: Path) -> None:
    """A reader takes a file with a NUL byte for a binary file and drops it from the index at
    the next full read: an agent's text holding one was saved, found, then gone."""
    import pytest

    from openmemex.context import Context
    from openmemex.errors import UsageError
    from openmemex.write import add_memory

    with Context.load() as ctx:
        with pytest.raises(UsageError, match="NUL character"):
            add_memory(ctx, "the cache key is a\x00b", scope="personal")
        assert not list(data_root.rglob("*.md"))
        tagged = add_memory(ctx, "the cache key is ab", tags=["a\x00b"], scope="personal")  # escaped in YAML: fine
    assert run_process("reindex").rc == 0
    assert tagged.id in run_process("list", "--scope", "personal").out


def test_tags_are_deduplicated_in_linear_time_and_a_new_memory_takes_at_most_64(cli: Any) -> None:
    """De-duplication was a list scan per tag (40k tags: 6 s, a supersede of a file with
    100k tags: over 30 s); a new memory's own tags are capped, a file's are read as they are."""
    from openmemex.model import MAX_TAGS, normalize_tags

    many = [f"t{i}" for i in range(100_000)] * 2
    assert normalize_tags(many) == many[:100_000]  # order kept, twins dropped (quadratic: minutes)
    refused = cli("add", "a memory with a word list for tags", "--tags", ",".join(f"t{i}" for i in range(MAX_TAGS + 1)))
    assert refused.rc == 2 and f"too many tags ({MAX_TAGS + 1} > {MAX_TAGS})" in refused.err
    added = cli("add", "a memory with enough tags", "--tags", ",".join(f"t{i}" for i in range(MAX_TAGS)), "--json")
    assert added.rc == 0
    memory_id = json.loads(added.out)["id"]
    refused = cli("supersede", memory_id, "a new text", "--tags", ",".join(f"t{i}" for i in range(MAX_TAGS + 1)))
    assert refused.rc == 2 and "too many tags" in refused.err
    assert cli("supersede", memory_id, "a new text keeping the old tags").rc == 0
