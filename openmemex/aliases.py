"""D81: the alias/target registry, applied at query time.

Any memory may say that one name stands for another (``alias: PSP``, ``target: payment
service provider``). Before a search, the pairs of the active memories in the searched
folders are read with one query over a partial index; a query that names either side is
searched again with the other side (at most two extra rounds, so a chain A → B → C is
followed, and a pair is used once, so A → B → A cannot loop). Rounds are merged by
normalising each round's scores to its best and keeping each memory's best; a memory
found in more rounds wins a tie. Nothing is indexed, so a new pair works at once.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from dataclasses import dataclass
from functools import lru_cache

from .index import placeholders
from .text import CJK_RUN

MAX_EXTRA_ROUNDS = 2


@dataclass(frozen=True)
class Rewrite:
    text: str  # the query of this round
    steps: tuple[tuple[str, str], ...]  # (from, to) applied to reach it, in order

    def label(self) -> str:
        return ", ".join(f"{a} → {b}" for a, b in self.steps)


def registry(conn: sqlite3.Connection, dirs: list[str], generation: tuple[object, ...] | None = None) -> list[tuple[str, str]]:
    """(alias, target) of the active memories in ``dirs`` (the partial index keeps this
    to the rows that have a pair, #55). With the index's ``generation`` (``index.generation``)
    the answer is kept for the next search of the same index and folders until a row changes."""
    if not dirs:
        return []
    key = None if generation is None else (*generation, *dirs)
    kept = _registries.get(key) if key is not None else None
    if kept is not None:
        return list(kept)
    rows = conn.execute(
        f"SELECT r.alias, r.target FROM folders f CROSS JOIN memory_rows r INDEXED BY memories_alias_target "
        f"ON r.folder = f.id WHERE r.alias <> '' AND r.target <> '' AND f.dir IN ({placeholders(dirs)}) "
        f"AND r.status = 'active'",
        dirs,
    ).fetchall()
    pairs = list(dict.fromkeys((str(r[0]), str(r[1])) for r in rows))
    if key is not None:
        with _registries_lock:
            while len(_registries) >= REGISTRIES_KEPT:
                _registries.pop(next(iter(_registries)))
            _registries[key] = tuple(pairs)
    return pairs


REGISTRIES_KEPT = 8  # (index, folders) pairs: a server's scopes, a test's data roots
_registries: dict[tuple[object, ...], tuple[tuple[str, str], ...]] = {}
_registries_lock = threading.Lock()


@lru_cache(maxsize=8)
def _all_rules(pairs: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """Each pair both ways, in the registry's order (kept per registry, like its pattern)."""
    return tuple(rule for alias, target in pairs for rule in ((alias, target), (target, alias)))


@lru_cache(maxsize=32)
def _rewriter(rules: tuple[tuple[str, str], ...]) -> tuple[re.Pattern[str], tuple[tuple[str, str], ...],
                                                           dict[str, tuple[str, str]]]:  # fmt: skip
    """One pattern for every rule's source (Latin names inside one pair of word boundaries,
    any case; CJK ones by substring; the longest first, so
    ``PSP API`` wins over ``PSP``), the rules in that order, and each source's rule by its
    lowercase (the first, where two differ only in case, as the pattern's first alternative
    wins). Compiled once per registry: a pattern per rule and round, or a group or word
    boundaries around each name, cost tens of milliseconds per search at 1,000 pairs."""
    by_length = sorted(rules, key=lambda rule: -len(rule[0]))  # stable: the registry's order among equals
    latin = [rule for rule in by_length if not CJK_RUN.fullmatch(rule[0])]
    cjk = [rule for rule in by_length if CJK_RUN.fullmatch(rule[0])]
    parts = [rf"(?i:(?<![\w])(?:{'|'.join(re.escape(src) for src, _ in latin)})(?![\w]))"] if latin else []
    parts += [re.escape(src) for src, _ in cjk]
    ordered = (*latin, *cjk)
    by_lower: dict[str, tuple[str, str]] = {}
    for rule in ordered:
        by_lower.setdefault(rule[0].lower(), rule)
    return re.compile("|".join(parts) or r"(?!)"), ordered, by_lower


def rounds(query: str, pairs: list[tuple[str, str]]) -> list[Rewrite]:
    """The extra queries the registry gives ``query`` (empty when no pair applies). A round
    rewrites each name in its text once, in one pass (the longest name where two overlap, the
    first pair where two name the same), so a round is one hop and says exactly the pairs it
    used; each pair is used once, so a cycle ends."""
    if not pairs:
        return []
    rules = _all_rules(tuple(pairs))
    if not _rewriter(rules)[0].search(query):
        return []  # most queries name no alias: one search of the registry's pattern, kept per registry
    out: list[Rewrite] = []
    seen = {query.casefold()}
    current = Rewrite(query, ())
    used: set[tuple[str, str]] = set()
    for _ in range(MAX_EXTRA_ROUNDS):
        available = tuple(r for r in rules if r not in used and (r[1], r[0]) not in used)
        if not available:
            break
        text, applied = _rewrite(current.text, available)
        if not applied:
            break
        used.update(applied)
        if text.casefold() in seen:
            break
        seen.add(text.casefold())
        current = Rewrite(text, (*current.steps, *applied))
        out.append(current)
    return out


def _rewrite(text: str, rules: tuple[tuple[str, str], ...]) -> tuple[str, list[tuple[str, str]]]:
    """``text`` with each name of ``rules`` rewritten once, and the rules that were used."""
    pattern, ordered, by_lower = _rewriter(rules)
    applied: list[tuple[str, str]] = []

    def swap(match: re.Match[str]) -> str:
        said = match.group(0)
        rule = by_lower.get(said.lower())
        if rule is None or (rule[0] != said and not re.fullmatch(re.escape(rule[0]), said, re.IGNORECASE)):
            # a case the regex folds and lower() does not (ſ, K, İ): the first source the
            # pattern's own matching takes for this text
            rule = next((r for r in ordered if re.fullmatch(re.escape(r[0]), said, 0 if CJK_RUN.fullmatch(r[0])
                                                             else re.IGNORECASE)), None)  # fmt: skip
            if rule is None:
                return said  # (not reached: the pattern matched one of them)
        if rule not in applied:
            applied.append(rule)
        return rule[1]  # literal text

    return pattern.sub(swap, text), applied


def merge(rounds_scores: list[dict[int, float]]) -> dict[int, tuple[float, int, int]]:
    """rowid → (normalised best score, rounds it was found in, the round of its best).
    Each round's best scores 1.0, so a strong hit of a rewritten query is not buried by a
    mediocre literal one."""
    merged: dict[int, tuple[float, int, int]] = {}
    for number, scores in enumerate(rounds_scores):
        top = max(scores.values(), default=0.0)
        if top <= 0:
            continue
        for rowid, score in scores.items():
            norm = score / top
            best, count, where = merged.get(rowid, (0.0, 0, number))
            if norm > best:
                best, where = norm, number
            merged[rowid] = (best, count + 1, where)
    return merged
