"""Broken supersede chains — a memory naming itself, a loop — as a teammate's pull, a hand
edit or a bundle brings them. A read heals only what an interrupted supersede or forget
left, and a self pointer or a loop mimicked both: the first read marked a memory
superseded by itself, the next "finished an interrupted forget" and retracted it (one-way).
Now no read writes or hides anything for them, ``doctor`` and ``audit`` name the files, and
``supersede`` / ``forget`` refuse a loop instead of rewriting the other members.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from openmemex.context import Context
from openmemex.ids import new_ulid
from tests.bundles import project_text
from tests.helpers import personal_text

WARN = "open-memex: warning: "


def _personal(memory_id: str, body: str, **pointers: str | None) -> Path:
    folder = Context.load().personal_dir
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{memory_id}.md"
    path.write_text(personal_text(memory_id, body, **pointers), encoding="utf-8")  # type: ignore[arg-type]
    return path


def _listed(cli: Any, scope: str = "both") -> dict[str, str]:
    """id → status of every memory ``list`` shows as current."""
    result = cli("list", "--scope", scope, "--json")
    assert result.rc == 0, result.err
    return {m["id"]: m["status"] for s in json.loads(result.out)["sections"] for m in s["memories"]}


def _found(cli: Any, query: str) -> set[str]:
    result = cli("search", query, "--scope", "both", "--json")
    assert result.rc == 0, result.err
    return {h["id"] for h in json.loads(result.out)["hits"]}


def _index_status(memory_id: str) -> set[str]:
    return {r[0] for r in Context.load().conn.execute("SELECT status FROM memories WHERE id = ?", (memory_id,))}


def _reads(cli: Any, times: int = 3) -> str:
    """Plain reads, as a user's session makes them; what they warned."""
    said = ""
    for _ in range(times):
        for args in (("list", "--scope", "both"), ("search", "deploys freeze", "--scope", "both")):
            result = cli(*args)
            assert result.rc == 0, result.err
            said += result.err
    return said


def test_a_memory_naming_itself_is_never_healed_hidden_or_retracted(cli: Any) -> None:
    me = new_ulid()
    path = _personal(me, "deploys freeze at noon on Fridays", supersedes=me)
    before = path.read_bytes()
    said = _reads(cli)
    assert path.read_bytes() == before  # not repaired to superseded-by-itself, not retracted
    assert _listed(cli)[me] == "active" and me in _found(cli, "deploys freeze") and _index_status(me) == {"active"}
    assert said.count(WARN) == 1, said  # said once, like a skipped file
    assert f"{me}.md: supersedes {me} not followed — it names itself; remove `supersedes: {me}` from {path}" in said


@pytest.mark.parametrize(("pointer", "size"), [("supersedes", 2), ("superseded_by", 2), ("supersedes", 3)])
def test_a_loop_is_left_as_it_is(cli: Any, pointer: str, size: int) -> None:
    """A supersedes B and B supersedes A (or the forward pointers, or a ring of three):
    which one is newer is not known. Completing the pointers closed the loop (all
    superseded: hidden from list) — with the files written, or for a repository file in
    the index."""
    ids = [new_ulid() for _ in range(size)]
    status = "superseded" if pointer == "superseded_by" else "active"
    files = [_personal(me, f"deploys freeze at {hour} o'clock", status=status, **{pointer: ids[hour - 1]})
             for hour, me in enumerate(ids)]  # fmt: skip
    before = [f.read_bytes() for f in files]
    said = _reads(cli)
    assert [f.read_bytes() for f in files] == before
    assert all(_index_status(me) == {status} for me in ids)
    assert set(ids) <= _found(cli, "deploys freeze")
    if status == "active":
        assert set(ids) <= set(_listed(cli))
    assert "repaired" not in said and "interrupted" not in said, said
    assert said.count(WARN) == size and "the supersede chain loops" in said, said


def test_a_loop_mimicking_an_interrupted_forget_is_not_finished(cli: Any) -> None:
    """X says P → X → N and P already points to N — an interrupted forget of X, but N also
    says it is replaced by P: a loop, not a forget. Finishing it retracted X (one-way)."""
    p, x, n = new_ulid(), new_ulid(), new_ulid()
    files = [_personal(p, "deploys freeze at noon", status="superseded", superseded_by=n),
             _personal(x, "deploys freeze at one", status="superseded", supersedes=p, superseded_by=n),
             _personal(n, "deploys freeze at two", status="superseded", supersedes=x, superseded_by=p)]  # fmt: skip
    before = [f.read_bytes() for f in files]
    said = _reads(cli)
    assert [f.read_bytes() for f in files] == before
    assert _index_status(x) == {"superseded"} and "interrupted forget" not in said, said


def test_a_repository_file_naming_itself_stays_current_in_the_index(cli: Any, git_repo: Path) -> None:
    """A teammate's committed file, pulled: a read heals a repository file in the index
    only — which hid it there (superseded), then retracted it, with the file unchanged."""
    folder = git_repo / ".ai" / "open-memex"
    folder.mkdir(parents=True)
    me = new_ulid()
    path = folder / f"{me}.md"
    path.write_text(project_text(me, "deploys freeze at noon for the whole team", review_state="published")
                    .replace("\n---\n\n", f"\nsupersedes: {me}\n---\n\n", 1), encoding="utf-8")  # fmt: skip
    before = path.read_bytes()
    _reads(cli)
    assert path.read_bytes() == before
    assert _listed(cli)[me] == "active" and me in _found(cli, "deploys freeze") and _index_status(me) == {"active"}


@pytest.mark.parametrize("soft", [True, False], ids=["soft", "hard"])
def test_forget_refuses_a_member_of_a_loop(cli: Any, soft: bool) -> None:
    """``forget --soft A`` on A ↔ B closed the chain around A by rewriting B into a
    memory naming itself, which the next read retracted: B was lost for a forget of A."""
    a, b = new_ulid(), new_ulid()
    files = [_personal(a, "deploys freeze at noon", status="superseded", supersedes=b, superseded_by=b),
             _personal(b, "deploys freeze at three", status="superseded", supersedes=a, superseded_by=a)]  # fmt: skip
    before = [f.read_bytes() for f in files]
    result = cli("forget", a, *(["--soft"] if soft else []))
    assert result.rc == 1
    assert f"{a} is in a supersede loop ({a} → {b} → {a})" in result.err and "nothing was forgotten" in result.err
    _reads(cli)
    assert [f.read_bytes() for f in files] == before
    assert _index_status(a) == _index_status(b) == {"superseded"}


def test_forget_of_a_memory_naming_itself_changes_it_alone(cli: Any) -> None:
    me, other = new_ulid(), new_ulid()
    path = _personal(me, "deploys freeze at noon", status="superseded", supersedes=me, superseded_by=me)
    bystander = _personal(other, "the release train leaves on Tuesdays")
    kept, before = bystander.read_bytes(), path.read_bytes()
    _reads(cli)
    assert path.read_bytes() == before  # a read did not take it for an interrupted forget
    result = cli("forget", me, "--soft", "--json")
    assert result.rc == 0, result.err
    done = json.loads(result.out)
    assert not done["already"] and done["relinked"] == []  # its own file is no neighbour
    text = path.read_text(encoding="utf-8")
    assert "status: retracted" in text and f"supersedes: {me}" not in text and f"superseded_by: {me}" not in text
    _reads(cli)
    assert bystander.read_bytes() == kept and _listed(cli)[other] == "active"


def test_supersede_refuses_a_self_pointer_and_a_loop(cli: Any) -> None:
    me, a, b = new_ulid(), new_ulid(), new_ulid()
    mine = _personal(me, "deploys freeze at noon", supersedes=me)
    loop = [_personal(a, "deploys freeze at one", supersedes=b), _personal(b, "deploys freeze at two", supersedes=a)]
    before = [f.read_bytes() for f in (mine, *loop)]
    result = cli("supersede", me, "deploys freeze at eleven")
    assert result.rc == 1 and f"{me} names itself in supersedes (a broken file) — nothing was superseded" in result.err
    assert f"remove `supersedes: {me}` from {mine}" in result.err
    result = cli("supersede", a, "deploys freeze at ten")
    assert result.rc == 1 and f"{a} is in a supersede loop ({a} → {b} → {a})" in result.err
    assert [f.read_bytes() for f in (mine, *loop)] == before
    assert len(list(mine.parent.glob("*.md"))) == 3  # no replacement was written


def test_doctor_and_audit_report_a_self_pointer_and_a_loop(cli: Any) -> None:
    me, a, b = new_ulid(), new_ulid(), new_ulid()
    mine = _personal(me, "deploys freeze at noon", supersedes=me)
    pa = _personal(a, "deploys freeze at one", supersedes=b)
    pb = _personal(b, "deploys freeze at two", supersedes=a)
    _reads(cli)  # a read healed them into a closed loop, which then read as "ok"
    audit = cli("audit", "--scope", "personal")
    assert audit.rc == 0 and "ok    supersede chains" not in audit.out, audit.out
    checks = {c["name"]: c for c in json.loads(cli("audit", "--scope", "personal", "--json").out)["checks"]}
    found = {f["subject"]: f for f in checks["supersede chains"]["findings"]}
    assert set(found) == {me, ", ".join(sorted((a, b)))}, found  # not "any read repairs it"
    assert found[me]["detail"] == f"{me} names itself in supersedes (a broken file no read acts on)"
    assert found[me]["fix"] == f"remove `supersedes: {me}` from {mine}"
    first, second = sorted((a, b))
    loop = found[f"{first}, {second}"]
    assert f"the supersede chain loops: {first} → {second} → {first}" in loop["detail"]
    assert str(pa) in loop["fix"] and str(pb) in loop["fix"]
    doctor = next(c for c in json.loads(cli("doctor", "--json").out)["checks"] if c["name"] == "supersede chains")
    assert not doctor["ok"] and "names itself in supersedes" in doctor["detail"] and "loops" in doctor["detail"]
