"""fastyaml keeps the lines it has read (issue 11: a cold build reads the same few lines in
every file): a remembered line must read as a fresh one does, and no caller may share a
list through it."""

from __future__ import annotations

import yaml

from openmemex import fastyaml

TEXT = '\nid: 01M8PEV547QVJ3VAAKWSDENEAQ\nstatus: active\ntags: [a, "b c"]\nsupersedes: null\ncount: 7\n'


def test_a_remembered_line_reads_as_a_fresh_one() -> None:
    fastyaml._SEEN.clear()
    first = fastyaml.load(TEXT)
    assert "status: active" in fastyaml._SEEN and "supersedes: null" in fastyaml._SEEN
    again = fastyaml.load(TEXT)
    assert first == again == yaml.load(TEXT, Loader=yaml.CSafeLoader)
    assert first is not None and again is not None
    first["tags"].append("changed")
    assert again["tags"] == ["a", "b c"] and fastyaml.load(TEXT) == again  # lists are never shared


def test_a_line_another_file_made_unusual_is_still_refused() -> None:
    """The memo is of ``key: value`` lines only: what makes a file not ours (a repeated key,
    a YAML 1.1 word as key) is judged per file, as before."""
    fastyaml._SEEN.clear()
    assert fastyaml.load("status: active\n") == {"status": "active"}
    assert fastyaml.load("status: active\nstatus: active\n") is None
    assert fastyaml.load("yes: active\n") is None and fastyaml.load("yes: active\n") is None


def test_the_memo_stays_bounded() -> None:
    fastyaml._SEEN.clear()
    for i in range(fastyaml._SEEN_MAX + 10):
        assert fastyaml.load(f"k{i}: v\n") == {f"k{i}": "v"}
    assert len(fastyaml._SEEN) <= fastyaml._SEEN_MAX


def test_long_lines_are_read_but_never_remembered() -> None:
    """A file's unique long lines (a title, a hash) would make the memo hold up to
    _SEEN_MAX × their length in a long-lived server: they are parsed, not kept."""
    fastyaml._SEEN.clear()
    long = "x" * (fastyaml._SEEN_LINE_MAX + 1)
    assert fastyaml.load(f"title: {long}\nstatus: active\n") == {"title": long, "status": "active"}
    assert list(fastyaml._SEEN) == ["status: active"]
