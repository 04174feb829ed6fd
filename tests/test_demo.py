"""The demo is the README's first line: it must run, narrate, and leave nothing behind."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import run_process


def test_demo_runs_in_a_sandbox_and_cleans_up(data_root: Path, tmp_path: Path) -> None:
    result = run_process("demo", cwd=tmp_path)
    assert result.rc == 0, result.err
    out = result.out
    for expected in (
        "secret", "ghp_xxxx", "提交信息", "superseded", "hidden by lifecycle: 1 superseded",
        "## About you", "submitted", "pushed main to origin", "pulled main from origin",
        "have diverged", "CONFLICT", "resolved .ai/open-memex/", "review_state: rejected", "Done — the sandbox is gone",
    ):  # fmt: skip
        assert expected in out + result.err, expected
    sandbox = re.search(r"sandbox: (\S+)", out)
    assert sandbox and not Path(sandbox.group(1)).exists()
    assert not data_root.exists()  # the user's own data root was never touched
    assert "Traceback" not in result.err
