"""The retrieval eval set: parse the corpus and the queries, build a data root from them,
and score ranked answers. Shared by ``eval.py`` (through the real CLI, in subprocesses)
and the regression test in ``tests/test_retrieval_eval.py`` (in-process CLI)."""

from __future__ import annotations

import math
import subprocess
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
MEMORIES = HERE / "memories.txt"
QUERIES = HERE / "queries.txt"
KINDS = ("exact", "question", "identifier", "paraphrase", "synonym", "chinese", "cross",
         "superseded", "retracted", "personal")  # fmt: skip
VOCABULARY_KINDS = ("paraphrase", "synonym", "cross")  # "different words" (issue 10)
INACTIVE = ("retracted", "archived", "superseded")


@dataclass
class Item:
    key: str
    project: str | None  # None: personal
    type: str
    review_state: str
    status: str
    tags: list[str]
    body: str
    supersedes: str | None = None
    aliases: list[str] = field(default_factory=list)
    alias: str | None = None
    target: str | None = None
    importance: str = "normal"
    superseded_by: str | None = None


@dataclass
class Query:
    kind: str
    project: str
    relevant: dict[str, int]  # key -> grade (2 answers, 1 related)
    text: str


@dataclass
class Corpus:
    items: dict[str, Item]
    projects: dict[str, bool]  # name -> is a git repository

    def inactive(self) -> set[str]:
        return {k for k, it in self.items.items() if it.status in INACTIVE}


def load_corpus(path: Path = MEMORIES) -> Corpus:
    items: dict[str, Item] = {}
    projects: dict[str, bool] = {}
    project: str | None = None
    for raw in path.read_text("utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("@project "):
            _, name, kind = line.split()
            project = name
            projects[name] = kind == "git"
            continue
        if line == "@personal":
            project = None
            continue
        key, type_, state, tags, extra, body = (p.strip() for p in line.split(" | ", 5))
        review, _, status = state.partition("/")
        item = Item(key, project, type_, review, status or "active",
                    [t for t in tags.split(",") if t and t != "-"], body)  # fmt: skip
        for part in extra.split(",") if extra != "-" else []:
            name, _, value = part.partition("=")
            if name == "sup":
                item.supersedes = value
            elif name == "aka":
                item.aliases = value.split(";")
            elif name == "alias":
                item.alias = value
            elif name == "target":
                item.target = value
            elif name == "imp":
                item.importance = value
        items[key] = item
    for item in items.values():
        if item.supersedes:
            old = items[item.supersedes]
            old.superseded_by = item.key
            old.status = "superseded"
    return Corpus(items, projects)


def load_queries(path: Path = QUERIES) -> list[Query]:
    out = []
    for raw in path.read_text("utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        kind, project, relevant, text = (p.strip() for p in line.split(" | ", 3))
        grades: dict[str, int] = {}
        for key in relevant.split(",") if relevant != "-" else []:
            grades[key.rstrip("~")] = 1 if key.endswith("~") else 2
        assert kind in KINDS, kind
        out.append(Query(kind, project, grades, text))
    return out


# -- building a data root -------------------------------------------------------------


def build(base: Path, corpus: Corpus) -> dict[str, str]:
    """``base/data`` (the data root) and ``base/projects/<name>`` (git repositories with an
    origin where the corpus says so); memory files written straight to their folders, as a
    team's clone and outbox would hold them. Returns key → memory id."""
    from openmemex import memfile, paths, store
    from openmemex.ids import new_ulid
    from openmemex.model import PERSONAL_KEY, Memory, default_visibility
    from openmemex.scope import resolve_project

    data = base / "data"
    keys: dict[str, tuple[str, Path, Path | None]] = {}  # project -> (scope key, outbox, repo dir)
    for name, is_git in corpus.projects.items():
        folder = base / "projects" / name
        folder.mkdir(parents=True)
        if is_git:
            subprocess.run(["git", "init", "-q", "-b", "main"], cwd=folder, check=True)
            subprocess.run(["git", "remote", "add", "origin", f"https://git.example.com/acme/{name}.git"],
                           cwd=folder, check=True)  # fmt: skip
        scope = resolve_project(folder)
        repo_dir = folder / ".ai" / "open-memex" if is_git else None
        keys[name] = (scope.key, paths.scope_dir(data, scope.key), repo_dir)
    ids = {key: new_ulid() for key in corpus.items}
    start = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
    for n, (key, item) in enumerate(corpus.items.items()):
        stamp = (start + timedelta(hours=7 * n)).strftime("%Y-%m-%dT%H:%M:%SZ")
        if item.project is None:
            scope, scope_key, folder, name = "personal", PERSONAL_KEY, paths.scope_dir(data, PERSONAL_KEY), ""
        else:
            scope_key, outbox, repo_dir = keys[item.project]
            in_repo = item.review_state != "draft"
            if in_repo and repo_dir is None:
                raise ValueError(f"{key}: a reviewed memory needs a git project")
            scope, folder, name = "project", (repo_dir if in_repo else outbox), item.project
            assert folder is not None
        memory = Memory(
            id=ids[key], scope=scope, scope_key=scope_key, body=item.body, type=item.type,
            visibility=default_visibility(scope), project_name=name, importance=item.importance,
            status=item.status, tags=item.tags, aliases=item.aliases, source="user",
            created_at=stamp, updated_at=stamp,
            supersedes=ids[item.supersedes] if item.supersedes else None,
            superseded_by=ids[item.superseded_by] if item.superseded_by else None,
            review_state=item.review_state, alias=item.alias, target=item.target,
        )  # fmt: skip
        folder.mkdir(parents=True, exist_ok=True)
        store.write_atomic(folder / f"{memory.id}.md", memfile.serialize(memory))
    return ids


# -- scoring --------------------------------------------------------------------------


@dataclass
class Outcome:
    query: Query
    ranked: list[str]  # keys, best first (ids not in the corpus as "?")
    lanes: list[str] = field(default_factory=list)

    def first_rank(self) -> int | None:
        for i, key in enumerate(self.ranked[:10]):
            if self.query.relevant.get(key) == 2:
                return i + 1
        return None


@dataclass
class Score:
    queries: int = 0
    graded: int = 0  # queries with an answer
    r1: float = 0.0
    r5: float = 0.0
    mrr: float = 0.0
    ndcg: float = 0.0
    leaks: int = 0
    zero: int = 0

    def row(self, name: str) -> str:
        g = max(self.graded, 1)
        return (f"| {name} | {self.queries} | {self.r1 / g:.3f} | {self.r5 / g:.3f} | {self.mrr / g:.3f} "
                f"| {self.ndcg / g:.3f} | {self.leaks} | {self.zero} |")  # fmt: skip

    def ratios(self) -> dict[str, float]:
        g = max(self.graded, 1)
        return {"r1": self.r1 / g, "r5": self.r5 / g, "mrr": self.mrr / g, "ndcg": self.ndcg / g,
                "leaks": self.leaks, "zero": self.zero}  # fmt: skip


HEADER = ("| kind | queries | R@1 | R@5 | MRR@10 | nDCG@10 | leaked | zero results |\n"
          "|---|---:|---:|---:|---:|---:|---:|---:|")  # fmt: skip


def score(outcomes: list[Outcome], inactive: set[str]) -> dict[str, Score]:
    """Per kind, plus ``paraphrase+synonym+cross`` and ``all``."""
    table: dict[str, Score] = {}
    for out in outcomes:
        for name in (out.query.kind, "all", *(["paraphrase+synonym+cross"] if out.query.kind in VOCABULARY_KINDS else [])):
            s = table.setdefault(name, Score())
            s.queries += 1
            s.leaks += any(k in inactive for k in out.ranked)
            s.zero += not out.ranked
            if not any(g == 2 for g in out.query.relevant.values()):
                continue
            s.graded += 1
            rank = out.first_rank()
            s.r1 += rank == 1
            s.r5 += rank is not None and rank <= 5
            s.mrr += 1 / rank if rank else 0.0
            s.ndcg += _ndcg(out)
    return table


def _ndcg(out: Outcome) -> float:
    gains = [out.query.relevant.get(k, 0) for k in out.ranked[:10]]
    dcg = sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(gains))
    ideal = sorted(out.query.relevant.values(), reverse=True)[:10]
    idcg = sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def render(table: dict[str, Score]) -> str:
    order = [*KINDS, "paraphrase+synonym+cross", "all"]
    return "\n".join([HEADER, *(table[k].row(k) for k in order if k in table)])
