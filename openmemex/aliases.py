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


def _pattern(term: str) -> re.Pattern[str]:
    """CJK by substring; Latin as whole words only ("sso" never inside "association")."""
    escaped = re.escape(term)
    if CJK_RUN.fullmatch(term):
        return re.compile(escaped)
    return re.compile(rf"(?<![\w]){escaped}(?![\w])", re.IGNORECASE)


@lru_cache(maxsize=8)
def _any_term(pairs: tuple[tuple[str, str], ...]) -> re.Pattern[str]:
    """One pattern that finds a query naming either side of any pair (as ``_pattern`` does
    for one term: an alternation inside the same word boundaries matches where one of them
    would)."""
    terms = {t for pair in pairs for t in pair}
    latin = sorted((re.escape(t) for t in terms if not CJK_RUN.fullmatch(t)), key=len, reverse=True)
    cjk = sorted((re.escape(t) for t in terms if CJK_RUN.fullmatch(t)), key=len, reverse=True)
    parts = ([rf"(?i:(?<![\w])(?:{'|'.join(latin)})(?![\w]))"] if latin else []) + cjk
    return re.compile("|".join(parts) or r"(?!)")


def rounds(query: str, pairs: list[tuple[str, str]]) -> list[Rewrite]:
    """The extra queries the registry gives ``query`` (empty when no pair applies)."""
    if not pairs or not _any_term(tuple(pairs)).search(query):
        return []  # most queries name no alias: one search instead of two per pair
    rules = []
    for alias, target in pairs:
        rules.append((alias, target))
        rules.append((target, alias))
    out: list[Rewrite] = []
    seen = {query.casefold()}
    current = Rewrite(query, ())
    used: set[tuple[str, str]] = set()
    for _ in range(MAX_EXTRA_ROUNDS):
        text, steps = current.text, list(current.steps)
        due = [(src, dst) for src, dst in rules if _pattern(src).search(current.text)]  # one hop per round
        for src, dst in due:
            if (src, dst) in used or (dst, src) in used:
                continue  # each pair once: a cycle ends here
            text = _pattern(src).sub(dst.replace("\\", "\\\\"), text)  # dst is literal text
            steps.append((src, dst))
            used.add((src, dst))
        if text.casefold() in seen or not steps or len(steps) == len(current.steps):
            break
        seen.add(text.casefold())
        current = Rewrite(text, tuple(steps))
        out.append(current)
    return out


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
