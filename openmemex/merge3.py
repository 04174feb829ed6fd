"""Field-level three-way merge of one memory file (design §9, D25 §4, D29).

Used by ``resolve`` (from index stages 1/2/3) and by the git merge driver, so both give the
same answer. Identity must agree; scalars merge 3-way; tags, aliases and review histories
are unioned; ``updated_at`` takes the latest; the review state keeps the further step but
never drops a rejection; the body merges only when one side changed it, or when a
line-level text merge (supplied by the caller) is clean. Everything else is a semantic
conflict that a human decides (design principle 5): nothing is written then.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .ids import parse_time
from .model import FIELD_ORDER, Memory, normalize_aliases

IDENTITY = ("id", "scope", "scope_key")
UNION_FIELDS = ("tags", "aliases", "review_history")
REVIEW_FOLLOWERS = ("approved_by", "review_note")
_RANK = {"draft": 0, "proposed": 1, "approved": 2, "published": 3}

TextMerge = Callable[[str, str, str], str | None]  # (base, ours, theirs) -> merged or None


@dataclass
class MergeOutcome:
    merged: Memory | None
    conflicts: list[str] = field(default_factory=list)
    auto: list[str] = field(default_factory=list)  # fields merged from both sides

    @property
    def clean(self) -> bool:
        return self.merged is not None and not self.conflicts


def _fields(memory: Memory | None) -> dict[str, Any]:
    if memory is None:
        return {}
    out = memory.fields()
    out.update(memory.extra)
    out["body"] = memory.body
    return out


def _three_way(base: Any, ours: Any, theirs: Any) -> tuple[bool, Any]:
    if ours == theirs:
        return True, ours
    if ours == base:
        return True, theirs
    if theirs == base:
        return True, ours
    return False, None


def _union(a: list[Any], b: list[Any]) -> list[Any]:
    out = list(a)
    for item in b:
        if item not in out:
            out.append(item)
    return out


def merge_memories(
    base: Memory | None, ours: Memory, theirs: Memory, text_merge: TextMerge | None = None,
    labels: tuple[str, str] = ("ours", "theirs"),
) -> MergeOutcome:  # fmt: skip
    b, o, t = _fields(base), _fields(ours), _fields(theirs)
    conflicts: list[str] = []
    auto: list[str] = []
    result: dict[str, Any] = {}
    left, right = labels
    for key in IDENTITY:
        if o.get(key) != t.get(key):
            conflicts.append(f"{key}: {left} has {o.get(key)!r}, {right} has {t.get(key)!r} (identity must agree)")
        result[key] = o.get(key)
    keys = [k for k in FIELD_ORDER if k in o or k in t] + [k for k in {**o, **t} if k not in FIELD_ORDER and k != "body"]
    review_winner = None
    if "review_state" in keys:
        review_winner = _merge_review_state(b.get("review_state"), o.get("review_state"), t.get("review_state"))
        result["review_state"] = o["review_state"] if review_winner == "ours" else t.get("review_state")
        if review_winner == "both":
            auto.append("review_state")
    for key in keys:
        if key in IDENTITY or key == "review_state":
            continue
        bv, ov, tv = b.get(key), o.get(key), t.get(key)
        if key in UNION_FIELDS:
            merged = _union(ov or [], tv or [])
            if key == "review_history":
                merged.sort(key=lambda e: parse_time(e.get("at")) or 0.0 if isinstance(e, dict) else 0.0)
            if key == "aliases":
                merged = normalize_aliases(merged)
            if merged != (ov or []) and merged != (tv or []):
                auto.append(key)
            result[key] = merged
            continue
        if key == "updated_at":
            result[key] = max((v for v in (ov, tv) if v), key=lambda v: parse_time(v) or 0.0, default=ov)
            continue
        ok, value = _three_way(bv, ov, tv)
        if not ok and key in REVIEW_FOLLOWERS and review_winner in ("ours", "theirs"):
            ok, value = True, ov if review_winner == "ours" else tv
        if ok:
            if value is not None or key in o or key in t:
                result[key] = value
            continue
        conflicts.append(f"{key}: {left} changed it to {ov!r}, {right} to {tv!r}")
    body_ok, body = _three_way(b.get("body"), o.get("body"), t.get("body"))
    if not body_ok:
        merged_text = text_merge(b.get("body") or "", o["body"], t["body"]) if text_merge and base is not None else None
        if merged_text is None:
            conflicts.append(f"body: both sides changed the text differently ({left} and {right})")
        else:
            body, body_ok = merged_text, True
            auto.append("body")
    if conflicts:
        return MergeOutcome(None, conflicts, auto)
    merged_memory = _build(result, body, ours)
    return MergeOutcome(merged_memory, [], auto)


def _merge_review_state(base: Any, ours: Any, theirs: Any) -> str:
    """Which side's review state wins: the further step, but a rejection is never dropped."""
    if ours == theirs or theirs == base:
        return "ours"
    if ours == base:
        return "theirs"
    if ours == "rejected":
        return "ours"
    if theirs == "rejected":
        return "theirs"
    return "ours" if _RANK.get(str(ours), -1) >= _RANK.get(str(theirs), -1) else "theirs"


def _build(fields: dict[str, Any], body: str, template: Memory) -> Memory:
    known = {k: v for k, v in fields.items() if k in FIELD_ORDER}
    extra = {k: v for k, v in fields.items() if k not in FIELD_ORDER}
    memory = Memory(id=known["id"], scope=known["scope"], scope_key=known["scope_key"], body=body)
    for key, value in known.items():
        if key in ("id", "scope", "scope_key"):
            continue
        if key in ("tags", "aliases", "review_history") and value is None:
            value = []
        setattr(memory, key, value)
    memory.extra = extra
    memory.raw = template.raw  # keep ours' formatting for untouched lines
    return memory
