"""Field-level three-way merge of one memory file (design §9, D25 §4, D29).

Used by ``resolve`` (from index stages 1/2/3) and by the git merge driver, so both give the
same answer. Identity must agree; scalars merge 3-way; tags, aliases and review histories
merge as sets against the base (what either side added is kept, what one side removed stays
removed: a scrubbed tag or review note never comes back); ``updated_at`` takes the latest;
the review state keeps the further step but never drops a rejection; the body merges only
when one side changed it, or when a line-level text merge (supplied by the caller) is
clean; YAML comments come from the one side that changed them. Two sides that took different
review steps, so that the merged history would end on one while the state keeps the other,
conflict. An approval (or publish)
made on one side vouches for that side's version only, so the other side's change to a
field it covers (``check.reviewed_changes``) is a conflict. Everything else, and a file too
deeply nested to compare, is a semantic conflict that a human decides (design principle 5):
nothing is written then.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from .check import REVIEWED, history_leads_to, reviewed_changes
from .ids import parse_time
from .memfile import serialize
from .model import FIELD_ORDER, Memory, normalize_aliases

IDENTITY = ("id", "scope", "scope_key")
UNION_FIELDS = ("tags", "aliases", "review_history")
REVIEW_FOLLOWERS = ("approved_by", "review_note")
_RANK = {"draft": 0, "proposed": 1, "approved": 2, "published": 3}

TextMerge = Callable[[str, str, str], str | None]  # (base, ours, theirs) -> merged or None
Texts = tuple[bytes | None, bytes, bytes]  # the three files as read (base, ours, theirs)
TOO_DEEP = "the file nests too deeply to be merged field by field — merge it by hand"
_FENCE = re.compile(r"^-{3,}\s*$", re.MULTILINE)  # python-frontmatter's fence, as memfile splits
_KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_\-]*)[ \t]*:(?:[ \t]|$)", re.MULTILINE)  # a top-level key's line
_COMMENT = re.compile(r"#[^\n]*")


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


def _key(item: Any) -> Hashable:
    """What an item of a merged list is compared by: a review step's keys written as null and
    left out say the same (``check._stated``)."""
    if isinstance(item, str):
        return item
    if isinstance(item, dict):
        return repr(sorted((str(k), repr(v)) for k, v in item.items() if v is not None))
    return repr(item)


def _merge_set(base: list[Any], ours: list[Any], theirs: list[Any]) -> list[Any]:
    """A 3-way set merge: the base's items neither side removed (in the base's order), then
    ours' additions, then theirs'. A plain union would bring back what one side deleted (a
    leaked token scrubbed from a tag or a note); an edited item is a removal plus an addition,
    so the edited version wins over the old one."""
    if ours == theirs or theirs == base:
        return list(ours)
    if ours == base:
        return list(theirs)
    ours_by = {_key(item): item for item in ours}
    theirs_keys = {_key(item) for item in theirs}
    base_keys = {_key(item) for item in base}
    out: list[Any] = []
    seen: set[Hashable] = set()
    kept = [(key, ours_by[key]) for item in base if (key := _key(item)) in ours_by and key in theirs_keys]
    added = [(key, item) for side in (ours, theirs) for item in side if (key := _key(item)) not in base_keys]
    for key, item in kept + added:
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out


def merge_memories(
    base: Memory | None, ours: Memory, theirs: Memory, text_merge: TextMerge | None = None,
    labels: tuple[str, str] = ("ours", "theirs"), texts: Texts | None = None,
) -> MergeOutcome:  # fmt: skip
    """Merge ``ours`` and ``theirs`` against ``base``. ``texts`` are the files the three were
    parsed from, whose YAML comments are merged too (without them: the lines each side's
    parse kept). A value nested too deeply to compare (``==`` recurses) is a conflict, never
    a crash: the merge driver must still leave both sides in the file."""
    try:
        return _merge(base, ours, theirs, text_merge, labels, texts)
    except RecursionError:
        return MergeOutcome(None, [TOO_DEEP])


def _merge(base: Memory | None, ours: Memory, theirs: Memory, text_merge: TextMerge | None,
           labels: tuple[str, str], texts: Texts | None) -> MergeOutcome:  # fmt: skip
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
            merged = _merge_set(bv or [], ov or [], tv or [])
            if key == "review_history" and merged != (ov or []) and merged != (tv or []):
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
    found = [_comments(front) for front in _fronts(base, ours, theirs, texts)]
    if any(side is None for side in found):
        return MergeOutcome(None, ["frontmatter comments: a side's YAML cannot be scanned for them"], auto)
    base_c, ours_c, theirs_c = (side or [] for side in found)
    if ours_c != theirs_c and base_c not in (ours_c, theirs_c):
        return MergeOutcome(None, [f"frontmatter comments: {left} and {right} changed them differently"], auto)
    # the side that changed the comments lends its layout, so its comment lines are kept
    template, wanted = (theirs, theirs_c) if ours_c == base_c and theirs_c != base_c else (ours, ours_c)
    merged_memory = _build(result, body, template)
    conflicts += _approval_conflicts(base, ours, theirs, merged_memory, labels)
    conflicts += _history_conflicts(ours, theirs, merged_memory, labels)
    if not conflicts and _comments(_front(serialize(merged_memory))) != wanted:
        conflicts.append(f"frontmatter comments: the merged file would lose or move a comment of {left} or {right} "
                         "(a comment on a line both sides changed)")  # fmt: skip
    if conflicts:
        return MergeOutcome(None, conflicts, auto)
    return MergeOutcome(merged_memory, [], auto)


def _approval_conflicts(base: Memory | None, ours: Memory, theirs: Memory, merged: Memory,
                        labels: tuple[str, str]) -> list[str]:  # fmt: skip
    """An approval or publish made on one side vouches for that side's version only: if the
    merge would carry the other side's change to a field it covers (check's reviewed-edit
    rule), the approved state would vouch for a text nobody reviewed."""
    out: list[str] = []
    for side, name, other in ((ours, labels[0], labels[1]), (theirs, labels[1], labels[0])):
        if side.review_state not in REVIEWED or not _reviewed_here(base, side):
            continue  # no review step on this side in this merge
        changed = reviewed_changes(side, merged)
        if changed:
            step = "published" if side.review_state == "published" else "approved"
            out.append(f"review_state: {name} {step} its version, but {other} changed {', '.join(changed)}, which that "
                       "review never saw — merge by hand; the new version needs its own review")  # fmt: skip
    return out


def _history_conflicts(ours: Memory, theirs: Memory, merged: Memory, labels: tuple[str, str]) -> list[str]:
    """The two histories interleave by time (D29), and the state keeps the further step or a
    rejection: when the two sides took different steps, the merged history may end on one
    side's step while the state is the other's (an approval made after the other branch's
    rejection). Neither reviewer saw the other's decision, and check would refuse the file:
    a human decides. A side already off on its own is not this merge's doing."""
    led = history_leads_to(merged.review_history)
    if led is not None and led != merged.review_state:
        if any(history_leads_to(side.review_history) not in (None, side.review_state) for side in (ours, theirs)):
            return []
        return [f"review_state: {labels[0]} and {labels[1]} took different review steps — the merged history ends "
                f"→ {led} but the state would be {merged.review_state}; decide which stands by hand (`open-memex "
                "promote` records the step)"]  # fmt: skip
    if _after_publish(merged) and not (_after_publish(ours) or _after_publish(theirs)):
        return [f"review_history: {labels[0]} and {labels[1]} — one side published the memory and the other recorded "
                "an entry dated after that, which the merged history would put after the publish (published is "
                "terminal); keep the publish last by hand"]  # fmt: skip
    return []


def _after_publish(memory: Memory) -> bool:
    """Whether a published memory's history holds an entry after the step that published it."""
    steps = [e for e in memory.review_history if isinstance(e, dict)]
    publish = [i for i, e in enumerate(steps) if e.get("to") == "published" != e.get("from")]
    return memory.review_state == "published" and bool(publish) and publish[-1] < len(steps) - 1


def _reviewed_here(base: Memory | None, side: Memory) -> bool:
    """Whether ``side`` took a review step since the base: its state, approver or history
    moved (a memory approved again after an edit ends where the base was, approved, and its
    new approval vouches for its new text only)."""
    if base is None:
        return True
    return (base.review_state, base.approved_by, base.review_history) != \
        (side.review_state, side.approved_by, side.review_history)  # fmt: skip


def _front(text: str) -> str:
    """A file's frontmatter text, split as memfile splits it."""
    text = text.removeprefix("\ufeff").replace("\r\n", "\n")
    parts = _FENCE.split(text, 2)
    return parts[1] if len(parts) == 3 and not parts[0].strip() else ""


def _fronts(base: Memory | None, ours: Memory, theirs: Memory, texts: Texts | None) -> list[str]:
    if texts is not None:
        return [_front(data.decode("utf-8", errors="replace")) if data else "" for data in texts]
    out = []
    for memory in (base, ours, theirs):
        raw = memory.raw if memory is not None else None
        out.append("" if raw is None else "\n".join([*raw.preamble, *(line for _, lines in raw.segments for line in lines)]))
    return out


def _comments(front: str) -> list[tuple[str, str]] | None:
    """The YAML comments of a frontmatter, each with the top-level key it sits under ("" before
    the first), in order; None when yaml's scanner refuses the text. Comments are not fields,
    so only the gaps between the scanner's tokens tell them from a ``#`` inside a value (a
    quoted note saying "PR #42")."""
    if "#" not in front:
        return []
    import yaml

    starts: list[int] = []
    names: list[str] = []
    for match in _KEY.finditer(front):
        starts.append(match.start())
        names.append(match.group(1))
    found: list[tuple[str, str]] = []
    end = 0
    try:
        for token in yaml.scan(front, Loader=yaml.SafeLoader):
            start = token.start_mark.index
            for match in _COMMENT.finditer(front, end, max(start, end)):
                at = bisect.bisect_right(starts, match.start()) - 1
                found.append((names[at] if at >= 0 else "", match.group().rstrip()))
            end = max(end, token.end_mark.index)
    except yaml.YAMLError:
        return None
    return found


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
