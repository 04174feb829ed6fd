"""The optional embeddings lane (design §7, D7, D8): vectors beside BM25, off by default.

``config set embeddings multilingual-e5-small`` (or ``wordllama``) turns it on; ``search
--no-embeddings`` turns it off for one query. Vectors are computed incrementally — only for
text the index has no vector of yet, keyed by the text's hash, so a reindex or a schema
change reuses them — and stored in the index database (table ``vectors``). A search fuses
the two lanes by a convex combination of their normalised scores and reports per hit
which lane found it (the recall receipt: bm25, vector or both). numpy and the model
libraries are imported only here, only when the lane is on.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import MemexError
from ..index import generation as index_generation
from ..index import read_snapshot, transaction
from ..index_schema import LEAN_COLUMNS
from ..text import has_cjk

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from ..context import Context

    Matrix = npt.NDArray[np.float32]

# One BLAS thread: a query multiplies one vector by at most a few MB of vectors, which a
# second thread cannot speed up, and on a busy machine OpenBLAS's waiting threads turned a
# 0.2 ms product into 2-7 ms (measured). Set before numpy loads; a user's own setting wins.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

MODELS = ("multilingual-e5-small", "wordllama")
VECTOR_WEIGHT = 0.5  # share of the vector lane in the fused relevance (the rest is bm25)
BATCH = 64
INSTALL_HINT = "pip install 'open-memex[embeddings]'"

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS vectors(model TEXT NOT NULL, content_hash TEXT NOT NULL, vec BLOB NOT NULL, "
    "PRIMARY KEY (model, content_hash)) WITHOUT ROWID"
)


class EmbeddingProvider(Protocol):
    """What the lane needs from a model: unit-length float32 vectors for documents and
    for queries (models such as e5 embed the two differently)."""

    name: str
    dim: int
    multilingual: bool  # False: the lane stays out of Chinese queries and memories (measured: it hurts them)
    # (optional) first_dims: int — a Matryoshka-trained model's leading dimensions, a coarse first pass

    def embed_documents(self, texts: list[str]) -> Matrix: ...

    def embed_query(self, text: str) -> Matrix: ...


def provider(ctx: Context, name: str) -> EmbeddingProvider:
    """The configured model, loaded once per process."""
    key = (name, str(ctx.root))
    if key not in _loaded:
        from . import providers

        if name == "wordllama":
            _loaded[key] = providers.WordLlamaProvider()
        elif name == "multilingual-e5-small":
            _loaded[key] = providers.E5Provider(ctx.root / "models")  # its own labelled download bar
        else:
            raise MemexError(f"unknown embeddings model {name!r} — use one of: {', '.join(MODELS)}, or off")
    return _loaded[key]


_loaded: dict[tuple[str, str], EmbeddingProvider] = {}


@dataclass
class _Cache:
    key: tuple[str, str, int, str] | None  # None: never kept (``_state``)
    rowids: Any  # numpy int64 array
    dirs: list[str]
    dir_index: Any
    types: list[str]
    matrix: Any
    lean: dict[int, tuple[Any, ...]]  # rowid -> its ``LEAN_COLUMNS``, as read with the vectors
    masks: dict[tuple[str, ...], tuple[Any, _Scope]] = field(default_factory=dict)  # dirs -> (positions, vectors)


# model -> the vectors of the index that searched last, shared by every connection to it
# (the MCP server opens one per call); the lock keeps its threads' scope copies consistent.
_caches: dict[str, _Cache] = {}
_lock = threading.Lock()


def _after_fork_in_child() -> None:
    """A child forked while another thread held the lock would wait for it forever (that
    thread is not in the child): it starts with a free lock of its own."""
    global _lock
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):  # POSIX only; Windows has no fork
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _state(ctx: Context, model: str) -> tuple[str, str, int, str] | None:
    """The vectors in memory are current while no memory row changed (in any process: a
    trigger counts row writes, ``index.generation``) and the index is the same file (a
    rebuilt one has a new epoch) of the same data root. None: they may not be kept (inside
    the caller's own transaction, or an index that cannot say when its rows change)."""
    generation = index_generation(ctx.conn, ctx.root)
    return None if generation is None else (*generation, model)


def refresh(ctx: Context, prov: EmbeddingProvider) -> int:
    """Embed every visible memory text that has no vector for this model yet; returns
    how many were computed. Cheap when nothing changed (one indexed anti-join)."""
    conn = ctx.conn
    with transaction(conn):
        conn.execute(_SCHEMA)
    only_latin = "" if prov.multilingual else " AND m.cjk = 0"
    # a vector of the wrong size (a damaged row, or one an earlier model of this name made)
    # counts as missing: it is computed again and replaces the stored one
    missing = conn.execute(
        "SELECT m.content_hash, min(m.content) FROM memories m "
        f"WHERE m.status NOT IN ('retracted', 'archived'){only_latin} AND NOT EXISTS "
        "(SELECT 1 FROM vectors v WHERE v.model = ? AND v.content_hash = m.content_hash AND length(v.vec) = ?) "
        "GROUP BY m.content_hash",
        (prov.name, 4 * prov.dim),
    ).fetchall()
    show = ctx.progress if ctx.progress is not None and len(missing) >= 200 else None
    done = 0
    for start in range(0, len(missing), BATCH):
        batch = missing[start : start + BATCH]
        vectors = prov.embed_documents([str(r[1]) for r in batch])
        if vectors.ndim != 2 or vectors.shape != (len(batch), prov.dim):
            raise wrong_model(prov, vectors.shape[-1] if vectors.ndim else 0)
        with transaction(conn):
            conn.executemany(
                "INSERT OR REPLACE INTO vectors(model, content_hash, vec) VALUES (?, ?, ?)",
                [(prov.name, r[0], vectors[i].astype("float32").tobytes()) for i, r in enumerate(batch)],
            )
        done += len(batch)
        if show is not None:
            show(done, len(missing))
    return done


def ready(model: str, generation: tuple[str, str, int] | None) -> bool:
    """Whether the vectors kept in memory are current for ``generation`` (``index.generation``):
    the lane can then begin inside the caller's read transaction (it writes nothing)."""
    cached = _caches.get(model)
    return cached is not None and generation is not None and cached.key == (*generation, model)


def _matrix(ctx: Context, prov: EmbeddingProvider, generation: tuple[str, str, int] | None = None,
            writes: bool = True) -> _Cache:  # fmt: skip
    """The vectors of the index as ``generation`` has it (read when None), computing the
    missing ones first — unless ``writes`` is False (the caller's own read transaction,
    which must not become a write: a text with no vector yet then has none this time)."""
    import numpy as np

    conn = ctx.conn
    key = (*generation, prov.name) if generation is not None else _state(ctx, prov.name)
    private = conn.in_transaction  # it may see rows it has not committed: never share or repair them
    cached = _caches.get(prov.name)
    if cached is not None and key is not None and cached.key == key:
        return cached
    if writes:
        refresh(ctx, prov)
    key, rows, matrix = _read_current(ctx, prov)
    finite = np.isfinite(matrix).all(axis=1)
    if not finite.all() and not private:  # damaged rows of the right size: dropped and computed again
        with transaction(conn):
            conn.executemany("DELETE FROM vectors WHERE model = ? AND content_hash = ?",
                             [(prov.name, rows[int(i)][4]) for i in np.flatnonzero(~finite)])  # fmt: skip
        refresh(ctx, prov)
        key, rows, matrix = _read_current(ctx, prov)
        finite = np.isfinite(matrix).all(axis=1)
    if not writes:
        key = None  # some texts may have no vector yet: this answer is never kept
    if not finite.all():  # still (the model itself gave them): left out, their memories keep bm25
        kept = np.flatnonzero(finite)
        rows = [rows[int(i)] for i in kept]
        matrix = matrix[kept]
    dirs = sorted({str(r[1]) for r in rows})
    where = {d: i for i, d in enumerate(dirs)}
    cache = _Cache(key, np.array([r[0] for r in rows], dtype=np.int64), dirs,
                   np.array([where[str(r[1])] for r in rows], dtype=np.int32), [str(r[2]) for r in rows], matrix,
                   {int(r[0]): tuple(r[_FIRST_LEAN:]) for r in rows})  # fmt: skip
    if key is not None:
        _caches[prov.name] = cache
    return cache


def _read_current(ctx: Context, prov: EmbeddingProvider) -> tuple[tuple[str, str, int, str] | None, list[Any], Matrix]:
    """The vectors (``_read_vectors``) and the generation they are of, read in one view of the
    index: read apart, another process's write in between would label one state's rows with
    another's generation, and a search whose view is the first would take the second's rows
    (``Lane.rows``). None inside the caller's own transaction: never kept."""
    private = ctx.conn.in_transaction
    with read_snapshot(ctx.conn):
        generation = None if private else index_generation(ctx.conn, ctx.root, snapshot=True)
        rows, matrix = _read_vectors(ctx, prov)
    return (None if generation is None else (*generation, prov.name)), rows, matrix


_FIRST_LEAN = 5  # a vector row's ``LEAN_COLUMNS`` begin after (rowid, dir, type, vec, hash)


def _read_vectors(ctx: Context, prov: EmbeddingProvider) -> tuple[list[Any], Matrix]:
    """The visible memories' vectors of the model's size (rowid, dir, type, vec, hash, then
    the ``LEAN_COLUMNS`` search ranks by), as rows and a matrix."""
    import numpy as np

    only_latin = "" if prov.multilingual else " AND m.cjk = 0"  # a Latin-only model reads no Chinese
    rows = ctx.conn.execute(
        f"SELECT m.rowid, m.dir, m.type, v.vec, v.content_hash, {', '.join(f'm.{c}' for c in LEAN_COLUMNS)} "
        "FROM memories m JOIN vectors v "
        "ON v.model = ? AND v.content_hash = m.content_hash AND length(v.vec) = ? "
        f"WHERE m.status NOT IN ('retracted', 'archived'){only_latin}",
        (prov.name, 4 * prov.dim),
    ).fetchall()
    matrix: Matrix = np.frombuffer(b"".join(r[3] for r in rows), dtype=np.float32).reshape(len(rows), prov.dim) \
        if rows else np.zeros((0, prov.dim), dtype=np.float32)  # fmt: skip
    return rows, matrix


def vector_candidates(ctx: Context, model: str, query: str, dirs: list[str], type: str | None,
                      k: int) -> list[tuple[int, float]] | None:  # fmt: skip
    """(rowid, cosine) of the ``k`` memories nearest to ``query`` in ``dirs``; None when
    the model cannot read the query (the lane stays out)."""
    return start(ctx, model, query, dirs, type, k)()


class Lane:
    """A search's vector lane, begun by ``start``: calling it waits for its candidates
    ((rowid, cosine), or None when the model cannot read the query)."""

    __slots__ = ("_answer", "_cache", "_dirs", "_type")

    def __init__(self, answer: Callable[[], list[tuple[int, float]] | None], cache: _Cache | None = None,
                 dirs: list[str] | None = None, type: str | None = None) -> None:  # fmt: skip
        self._answer, self._cache, self._dirs, self._type = answer, cache, set(dirs or ()), type

    def __call__(self) -> list[tuple[int, float]] | None:
        return self._answer()

    def rows(self, rowids: list[int], generation: tuple[str, str, int] | None) -> list[dict[str, Any]] | None:
        """The lean rows (``LEAN_COLUMNS``) of these candidates as read with the vectors, when
        ``generation`` (the caller's view of the index) is the one they were read at: no row
        has changed since, so they are that view's rows, and reading them again costs a
        statement (a rowid lookup each: 2-7 µs here). None: they may be older — read them."""
        cache = self._cache
        if cache is None or cache.key is None or generation is None or cache.key[:3] != generation:
            return None
        out = []
        for rowid in sorted(rowids):  # as the statement gives them
            lean = cache.lean.get(rowid)
            if lean is None:
                return None
            row = dict(zip(LEAN_COLUMNS, lean, strict=True))
            if row["dir"] in self._dirs and (self._type is None or row["type"] == self._type):
                out.append(row)  # (kept rows are never retracted or archived: ``_read_vectors``)
        return out


def start(ctx: Context, model: str, query: str, dirs: list[str], type: str | None, k: int,
          generation: tuple[str, str, int] | None = None, writes: bool = True) -> Lane:  # fmt: skip
    """Begin the lane for ``query`` (as ``vector_candidates``). The vectors are made current
    here, on the caller's thread (it owns the index connection); the query's embedding and
    the product run on the lane's worker thread meanwhile, so they overlap the bm25 rounds
    the caller runs next (both release the GIL: SQLite while it steps, numpy while it
    multiplies). Measured at 10k (benchmarks/retrieval): the worker's 0.4 ms costs the
    search 0.19 ms more than the default — waking the worker, the bm25 statements running
    slower beside it, and the fusion.
    ``generation`` (``index.generation``, read by the caller) saves reading it again;
    ``writes`` False: inside the caller's read transaction (``ready`` said the vectors were
    current; another thread may have replaced them since — then none are computed)."""
    prov = provider(ctx, model)
    if not prov.multilingual and has_cjk(query):
        return Lane(lambda: None)
    with _lock:
        cache = _matrix(ctx, prov, generation, writes)
        scope = _scoped(cache, dirs, type, getattr(prov, "first_dims", 0))
    count = min(k, len(scope.rowids))
    if count == 0:
        return Lane(lambda: [], cache, dirs, type)
    try:
        job = _worker().submit(_nearest, prov, query, scope, count)
    except RuntimeError:  # no thread to be had (the interpreter is ending as a call runs): the caller runs it
        job = _Job(_nearest, (prov, query, scope, count))
    return Lane(job.result, cache, dirs, type)


def wrong_model(prov: EmbeddingProvider, dim: int) -> MemexError:
    """Vectors of another size than the model's: its files are some other model's."""
    where = getattr(prov, "folder", None)
    fix = f"delete {where} and search again to download it anew" if where is not None else \
        "reinstall it: " + INSTALL_HINT  # fmt: skip
    return MemexError(f"the embeddings model {prov.name} gave {dim}-dimension vectors, not {prov.dim} — its files are "
                      f"another model's; {fix} (or search with --no-embeddings)")  # fmt: skip


def _nearest(prov: EmbeddingProvider, query: str, scope: _Scope, count: int) -> list[tuple[int, float]]:
    import numpy as np

    vector = prov.embed_query(query)
    if vector.shape != (prov.dim,):
        raise wrong_model(prov, vector.shape[-1] if vector.ndim else 0)
    vector = np.asarray(vector, dtype=np.float32)  # no copy when it is one already (each call holds the GIL)
    picked = None
    if scope.prefix is not None and len(scope.rowids) > 2 * (wide := max(FIRST_PASS_WIDTH * count, FIRST_PASS_MIN)):
        # a Matryoshka model's leading dimensions are a coarse embedding of their own: they
        # pick the few worth the full product (half the memory read), which then gives every
        # kept hit its exact cosine
        rough = vector[: scope.prefix.shape[0]] @ scope.prefix
        picked = np.argpartition(-rough, wide - 1)[:wide]
        sims = scope.rows[picked] @ vector
    elif scope.columns is not None:
        sims = vector @ scope.columns
    else:
        sims = scope.rows @ vector
    top = np.argpartition(-sims, count - 1)[:count]
    top = top[np.argsort(-sims[top])]
    at = scope.rowids if picked is None else scope.rowids[picked]
    return [(int(at[i]), float(sims[i])) for i in top]


FIRST_PASS_WIDTH, FIRST_PASS_MIN = 8, 160  # candidates the coarse pass keeps: per hit asked, at least


class _Job:
    """One call on the lane's worker. Whichever thread claims it first runs it: the worker,
    or the caller asking for the answer before the worker began (measured on a 2-core VM:
    1 search in 40 found the worker not yet started after the 2-3 ms of bm25 — waiting for a
    core or the GIL — and then waited 1-14 ms more). A job the worker began but has not
    finished within ``patience()`` is computed again by the caller, which returns its own
    answer (the call is a pure function of its arguments)."""

    __slots__ = ("args", "call", "claim", "done", "error", "value")

    def __init__(self, call: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self.call, self.args = call, args
        self.claim = threading.Lock()
        self.done = threading.Lock()
        self.done.acquire()
        self.value: Any = None
        self.error: BaseException | None = None

    def run(self, timed: bool = False) -> bool:
        """Run the call unless another thread claimed it; whether this one did (``timed``:
        the worker's runs, whose times set the caller's patience)."""
        if not self.claim.acquire(blocking=False):
            return False
        began = time.perf_counter()
        try:
            self.value = self.call(*self.args)
        except BaseException as exc:  # handed to the caller, as a future would
            self.error = exc
        finally:
            if timed:
                _took.append(time.perf_counter() - began)
            self.done.release()
        return True

    def result(self) -> Any:
        if not self.run():  # the worker began it
            if not self.done.acquire(timeout=patience()):
                return self.call(*self.args)  # the worker is held up (its core, the GIL, its end): quicker here
            self.done.release()  # answered: a second call returns at once, as a future's would
        if self.error is not None:
            raise self.error
        return self.value


PATIENCE_S = 0.001  # at least: about twice the worker's own time at 10k (the query's embedding and product)
_took: deque[float] = deque(maxlen=9)  # the worker's last runs, in seconds


def patience() -> float:
    """How long a caller waits for a job the worker began: twice the worker's usual time
    (the median of its last runs: a larger index, a slower machine), at least ``PATIENCE_S``
    — past it the worker is held up, and computing the answer here is quicker."""
    recent = sorted(_took)  # one C call under the GIL: the worker's append cannot come in between
    return max(PATIENCE_S, 2 * recent[len(recent) // 2]) if recent else PATIENCE_S


class _Worker:
    """The lane's thread: jobs through a queue, each answered through a lock — a round trip
    takes 17 µs where an executor's future took 37 (measured), and every search with the
    lane on makes one."""

    def __init__(self) -> None:
        import queue

        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._serve, name="open-memex-vectors", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            self._jobs.get().run(timed=True)

    def submit(self, call: Callable[..., Any], *args: Any) -> _Job:
        if not self._thread.is_alive():
            raise RuntimeError("the lane's worker thread is gone")
        job = _Job(call, args)
        self._jobs.put(job)
        return job


_workers: dict[int, _Worker] = {}  # pid -> worker: a forked child gets its own (the parent's thread is not there)


def _worker() -> _Worker:
    pid = os.getpid()
    if pid not in _workers:
        _workers.clear()
        _workers[pid] = _Worker()
    return _workers[pid]


SCOPES_KEPT = 3  # each kept scope is a copy of its vectors: the three search scopes (both, project, personal)


@dataclass
class _Scope:
    """A scope's vectors in the layouts its product reads fastest."""

    rowids: Any
    columns: Any = None  # vectorsᵀ (dim × n), contiguous: the full product
    prefix: Any = None  # a first pass (``first_dims`` × n, contiguous), then …
    rows: Any = None  # … the picked vectors gathered by row (n × dim, contiguous)

    def only(self, keep: Any) -> _Scope:
        def cut(m: Any, by_column: bool) -> Any:
            return None if m is None else (m[:, keep] if by_column else m[keep])

        return _Scope(self.rowids[keep], cut(self.columns, True), cut(self.prefix, True), cut(self.rows, False))


def _scoped(cache: _Cache, dirs: list[str], type: str | None, first: int = 0) -> _Scope:
    """The vectors of the memories in ``dirs`` (and of ``type``) and their rowids: a query
    reads only its own scope's vectors, in the layout numpy multiplies fastest (with a
    Matryoshka model's ``first`` dimensions, a coarse pass). Kept for the last few scopes."""
    import numpy as np

    key = tuple(dirs)
    found = cache.masks.pop(key, None)
    if found is None:
        wanted = [i for i, d in enumerate(cache.dirs) if d in set(dirs)]
        mask = np.isin(cache.dir_index, wanted)
        positions = np.flatnonzero(mask)
        matrix = cache.matrix[mask]
        scope = _Scope(cache.rowids[positions], np.ascontiguousarray(matrix.T)) if not first else \
            _Scope(cache.rowids[positions], prefix=np.ascontiguousarray(matrix[:, :first].T),
                   rows=np.ascontiguousarray(matrix))  # fmt: skip
        found = (positions, scope)
        while len(cache.masks) >= SCOPES_KEPT:
            cache.masks.pop(next(iter(cache.masks)))
    cache.masks[key] = found  # most recent last
    positions, scope = found
    if type is None:
        return scope
    return scope.only(np.array([cache.types[p] == type for p in positions], dtype=bool))


def fuse(ctx: Context, model: str, candidates: list[Any], near: list[tuple[int, float]],
         make: Callable[..., Any], rows_of: Callable[[list[int]], list[Any]]) -> list[Any]:  # fmt: skip
    """Hybrid ranking: relevance = (1 − w)·bm25 relevance + w·vector relevance, where the
    vector relevance is the cosine min-max scaled over the lane's own list (so both lanes
    give their best hit 1.0); each candidate records its lane and cosine. ``rows_of`` reads
    the rows only the lane found (search's lean rows: their texts are read if shown), and
    leaves out those the search's own view has hidden or moved since the lane began."""
    if not near:
        return candidates
    low = min(s for _, s in near)
    span = max(s for _, s in near) - low
    by_row: dict[int, Any] = {int(c.row["rowid"]): c for c in candidates}
    missing = [r for r, _ in near if r not in by_row]
    if missing:
        for row in rows_of(missing):
            by_row[int(row["rowid"])] = make(row, 0.0, 0.0, 0, "", "vector")
    keep, weight = 1 - VECTOR_WEIGHT, VECTOR_WEIGHT
    voted = set()
    for rowid, cosine in near:
        cand = by_row.get(rowid)
        if cand is None:
            continue  # hidden or moved since the lane began (``rows_of``)
        voted.add(rowid)
        cand.vector = cosine
        if cand.lane != "vector":
            cand.lane = "both"
        cand.relevance = keep * cand.relevance + weight * ((cosine - low) / span if span > 0 else 1.0)
    latin_only = not provider(ctx, model).multilingual
    for rowid, cand in by_row.items():
        # the lane voted 0 on what it did not list; a memory it cannot read keeps its bm25 relevance
        if rowid not in voted and not (latin_only and cand.row["cjk"]):
            cand.relevance *= keep
    return sorted(by_row.values(), key=lambda c: -c.relevance)
