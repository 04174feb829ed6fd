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
