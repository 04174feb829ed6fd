"""The config file as people keep it: a mode they chose and an editor's byte-order mark are
read and kept by `config set`, through the real CLI."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from openmemex import config
from tests.conftest import run_process

BOM = b"\xef\xbb\xbf"


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.skipif(os.name == "nt", reason="POSIX file modes")
def test_config_set_keeps_the_files_mode(data_root: Path) -> None:
    """A 0600 config (exact secret values in redactAllowlist) stayed 0600 only until the
    first `config set`, which left it 0644."""
    data_root.mkdir()
    path = data_root / "config.json"
    path.write_text('{"redactAllowlist": ["sk-live-EXAMPLEVALUE123"]}\n')
    path.chmod(0o600)
    result = run_process("config", "set", "logLevel", "debug")
    assert result.rc == 0, result.err
    assert _mode(path) == 0o600
    assert json.loads(path.read_text()) == {"redactAllowlist": ["sk-live-EXAMPLEVALUE123"], "logLevel": "debug"}
    assert not [p.name for p in data_root.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.skipif(os.name == "nt", reason="POSIX file modes")
def test_the_temp_file_is_private_until_renamed(data_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data_root.mkdir()
    path = data_root / "config.json"
    path.write_text("{}\n")
    path.chmod(0o640)
    seen: list[tuple[str, int]] = []
    real_replace = os.replace

    def replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        seen.append((os.path.basename(src), _mode(Path(src))))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    config.set_value(path, "injectTokens", "500")
    config.set_value(path, "logLevel", "debug")
    assert _mode(path) == 0o640
    names = [name for name, _ in seen]
    assert len(set(names)) == 2 and all(name.startswith(".config.json.") and name.endswith(".tmp") for name in names)
    assert all(mode == 0o640 for _, mode in seen)  # given the file's mode before the rename


@pytest.mark.skipif(os.name == "nt", reason="POSIX file modes")
def test_a_new_config_is_made_as_before(data_root: Path) -> None:
    umask = os.umask(0o022)
    os.umask(umask)
    assert run_process("config", "set", "logLevel", "debug").rc == 0
    assert _mode(data_root / "config.json") == 0o666 & ~umask


def test_a_byte_order_mark_is_read_and_kept(data_root: Path) -> None:
    """Notepad's "UTF-8 with BOM": every command failed on it ("Unexpected UTF-8 BOM"),
    `config set` too, so the CLI could not repair it."""
    data_root.mkdir()
    path = data_root / "config.json"
    path.write_bytes(BOM + b'{\r\n  "injectTokens": 500\r\n}\r\n')
    got = run_process("config", "get", "injectTokens")
    assert (got.rc, got.out.strip()) == (0, "500"), got.err
    listed = run_process("list")
    assert listed.rc == 0 and "config" not in listed.err, listed.err
    assert run_process("config", "set", "logLevel", "debug").rc == 0
    written = path.read_bytes()
    assert written == BOM + (json.dumps({"injectTokens": 500, "logLevel": "debug"}, indent=2) + "\n").encode()
    doctor = run_process("doctor", "--json")
    assert doctor.rc in (0, 1) and json.loads(doctor.out)["checks"], doctor.err
    assert "BOM" not in doctor.err
    # without a mark, the file is written as before: no mark added
    path.write_text('{"injectTokens": 400}')
    assert run_process("config", "set", "logLevel", "info").rc == 0
    assert path.read_bytes() == (json.dumps({"injectTokens": 400, "logLevel": "info"}, indent=2) + "\n").encode()
