"""Issue 10: the optional embeddings lane, end to end with the in-wheel model (wordllama),
and the multilingual-e5-small download's offline error."""

from __future__ import annotations

import json
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from openmemex import paths
from tests.conftest import run_process


def _search(cli: Any, *args: str) -> dict[str, Any]:
    result = cli("search", *args, "--json", "--limit", "10")
    assert result.rc == 0, result.err
    doc: dict[str, Any] = json.loads(result.out)
    return doc


def test_lane_end_to_end_with_the_in_wheel_model(cli: Any, data_root: Path) -> None:
    pytest.importorskip("wordllama", reason="the optional extra: pip install 'open-memex[embeddings]'")
    assert cli("add", "The kitten sleeps on the sofa all afternoon.").rc == 0
    assert cli("add", "Deploys to production need a manual Argo CD sync.").rc == 0
    assert cli("add", "Invoices are rendered as PDF by the billing worker.").rc == 0
    assert _search(cli, "cat nap couch")["hits"] == []  # no shared word: BM25 alone finds nothing
    assert cli("config", "set", "embeddings", "wordllama").rc == 0

    doc = _search(cli, "cat nap couch")
    assert doc["lanes"] == ["bm25", "vector:wordllama"]
    assert doc["hits"][0]["snippet"].startswith("The kitten")
    assert doc["hits"][0]["lane"] == "vector" and doc["hits"][0]["matched_via"] == "vector"
    assert -1.0 <= doc["hits"][0]["vector"] <= 1.0

    both = _search(cli, "argo cd deploys")["hits"][0]
    assert "Argo" in both["snippet"] and both["lane"] == "both"  # receipt: found by both lanes

    db = sqlite3.connect(paths.index_path(data_root))
    try:
        assert db.execute("SELECT count(*) FROM vectors WHERE model = 'wordllama'").fetchone()[0] == 3
    finally:
        db.close()
    assert cli("add", "Retry webhooks with exponential backoff.").rc == 0  # incremental: one more vector
    explained = cli("search", "cat nap couch", "--explain")
    assert "lanes: bm25, vector:wordllama" in explained.out and "lane=vector" in explained.out
    db = sqlite3.connect(paths.index_path(data_root))
    try:
        assert db.execute("SELECT count(*) FROM vectors").fetchone()[0] == 4
    finally:
        db.close()
    assert cli("add", "订单数据库每天凌晨备份。").rc == 0
    assert _search(cli, "数据库备份")["lanes"] == ["bm25"]  # an English-only model stays out of Chinese
    assert all(h["lane"] == "bm25" for h in _search(cli, "database backup")["hits"] if "订单" in h["snippet"])
    assert cli("reindex").rc == 0  # vectors are keyed by text: a rebuild keeps them
    assert _search(cli, "--no-embeddings", "cat nap couch") == {"query": "cat nap couch", "hits": [], "lanes": ["bm25"]}
    assert _search(cli, "cat nap couch")["hits"][0]["lane"] == "vector"


def test_e5_offline_is_one_clear_line(cli: Any, data_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPEN_MEMEX_MODELS_URL", "http://127.0.0.1:9/")  # nothing listens: as offline
    assert cli("add", "Deploys need a manual sync.").rc == 0
    assert cli("config", "set", "embeddings", "multilingual-e5-small").rc == 0
    result = cli("search", "deploys")
    assert result.rc == 1 and result.out == ""
    assert "cannot download the embeddings model multilingual-e5-small" in result.err
    assert "config set embeddings wordllama" in result.err and "Traceback" not in result.err
    assert len(result.err.strip().splitlines()) == 1
    models = data_root / "models" / "multilingual-e5-small"
    assert not any(p.name.endswith(".part") for p in models.iterdir())  # no half file left behind
    assert cli("search", "deploys", "--no-embeddings").rc == 0  # BM25 still answers


def test_lane_off_by_default_and_search_does_not_load_models(cli: Any) -> None:
    assert cli("add", "Deploys need a manual sync.").rc == 0
    assert _search(cli, "deploys")["lanes"] == ["bm25"]
    assert "onnxruntime" not in sys.modules
    off = cli("search", "deploys", "--embeddings")
    assert off.rc == 2 and "config set embeddings" in off.err


def _search_with_e5_from(cli: Any, monkeypatch: pytest.MonkeyPatch, handler: Callable[..., Any]) -> Any:
    """A search with the e5 lane on, its model files served on 127.0.0.1 by ``handler``."""
    import http.server
    import threading

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        monkeypatch.setenv("OPEN_MEMEX_MODELS_URL", f"http://127.0.0.1:{server.server_address[1]}/")
        assert cli("add", "Deploys need a manual sync.").rc == 0
        assert cli("config", "set", "embeddings", "multilingual-e5-small").rc == 0
        return cli("search", "deploys")
    finally:
        server.shutdown()
        server.server_close()


def test_e5_downloads_on_first_use_into_the_data_root(cli: Any, data_root: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """The model files come over HTTP (a loopback server here) into <data root>/models/,
    through a temporary name; without onnxruntime the next step names the extra."""
    import functools
    import http.server
    import importlib.util

    site = tmp_path / "site"
    (site / "onnx").mkdir(parents=True)
    (site / "onnx" / "model.onnx").write_bytes(b"\0" * 300_000)
    (site / "tokenizer.json").write_text("{}")
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # the request log would land on stderr
            pass

    result = _search_with_e5_from(cli, monkeypatch, functools.partial(Quiet, directory=str(site)))
    folder = data_root / "models" / "multilingual-e5-small"
    assert (folder / "model.onnx").stat().st_size == 300_000 and (folder / "tokenizer.json").read_text() == "{}"
    assert not any(p.name.endswith(".part") for p in folder.iterdir())
    assert result.rc == 1 and "Traceback" not in result.err and len(result.err.strip().splitlines()) == 1
    if importlib.util.find_spec("onnxruntime") is None:
        assert "pip install 'open-memex[embeddings]'" in result.err
    else:  # the stand-in files are no model: one line that says how to get a fresh copy
        assert "cannot be loaded" in result.err and "delete that folder" in result.err


def test_lane_keeps_to_the_searched_scope_and_type(cli: Any, data_root: Path) -> None:
    """The vector lane reads only the searched scope's vectors (kept per scope) and filters
    by type: a personal memory never answers a project-only search, a gotcha never a
    decision-only one, and switching scopes back and forth keeps the answers."""
    pytest.importorskip("wordllama", reason="the optional extra: pip install 'open-memex[embeddings]'")
    assert cli("add", "The kitten sleeps on the sofa all afternoon.", "--scope", "personal").rc == 0
    assert cli("add", "Our office cat naps on the couch near the window.", "--type", "gotcha").rc == 0
    assert cli("add", "A cat nap on the couch is allowed after lunch.", "--type", "decision").rc == 0
    assert cli("config", "set", "embeddings", "wordllama").rc == 0
    from openmemex.context import Context
    from openmemex.search import search

    ctx = Context.load(Path.cwd())
    try:
        for _ in range(2):  # the second pass reads the kept scopes
            both = search(ctx, "kitten sofa", scope="both", limit=5)
            assert {h.scope for h in both.hits} == {"personal", "project"}
            project = search(ctx, "kitten sofa", scope="project", limit=5)
            assert project.hits and all(h.scope == "project" for h in project.hits)
            personal = search(ctx, "office couch", scope="personal", limit=5)
            assert [h.scope for h in personal.hits] == ["personal"]
            decision = search(ctx, "kitten sofa", scope="both", type="decision", limit=5)
            assert [h.type for h in decision.hits] == ["decision"]
            assert decision.hits[0].lane in ("vector", "both")
    finally:
        ctx.close()


def test_lane_overlapping_the_bm25_rounds_answers_as_one_thread_does(cli: Any, data_root: Path) -> None:
    """The lane's query embedding and product run on a worker thread while bm25 runs; many
    searches at once, each on its own Context as the MCP server's calls are (sharing the
    vectors kept in memory), and a search in a forked child (whose parent's worker thread
    does not exist there) give the sequential answers."""
    pytest.importorskip("wordllama", reason="the optional extra: pip install 'open-memex[embeddings]'")
    import os
    from concurrent.futures import ThreadPoolExecutor

    from openmemex.context import Context
    from openmemex.embeddings import providers
    from openmemex.search import search

    texts = ["The kitten sleeps on the sofa all afternoon.", "Deploys to production need a manual Argo CD sync.",
             "Invoices are rendered as PDF by the billing worker.", "Retry webhooks with exponential backoff.",
             "Our office cat naps on the couch near the window."]  # fmt: skip
    for text in texts:
        assert cli("add", text).rc == 0
    assert cli("config", "set", "embeddings", "wordllama").rc == 0
    queries = ["cat nap couch", "argo cd deploys", "pdf invoices", "webhook retries", "sleepy kitten"]

    def answer(ctx: Context, query: str) -> list[tuple[str, str, float | None]]:
        return [(h.id, h.lane, h.vector) for h in search(ctx, query, scope="both", limit=5).hits]

    ctx = Context.load(Path.cwd())
    try:
        expected = {q: answer(ctx, q) for q in queries}
        assert any(lane == "vector" for hits in expected.values() for _, lane, _ in hits)
        model = providers.WordLlamaProvider()
        for q in queries:  # the one-text path embeds exactly as the batch path does
            import numpy as np

            assert np.array_equal(model.embed_query(q), providers._unit(model._model.embed([q], norm=False))[0])
        def call(query: str) -> tuple[str, list[tuple[str, str, float | None]]]:
            with Context.load(Path.cwd()) as own:
                return query, answer(own, query)

        with ThreadPoolExecutor(max_workers=6) as pool:
            got = list(pool.map(call, queries * 8))
        assert all(hits == expected[q] for q, hits in got)
        if hasattr(os, "fork"):
            read, write = os.pipe()
            pid = os.fork()
            if pid == 0:  # the child: a search must finish, with the same answer
                ok = answer(ctx, "cat nap couch") == expected["cat nap couch"]
                os.write(write, b"ok" if ok else b"different")
                os._exit(0)
            os.close(write)
            _, status = os.waitpid(pid, 0)
            assert os.read(read, 16) == b"ok" and status == 0
            _forked_while_the_lane_lock_is_held(lambda: answer(ctx, "cat nap couch") == expected["cat nap couch"])
    finally:
        ctx.close()


def _forked_while_the_lane_lock_is_held(search_ok: Callable[[], bool]) -> None:
    """A child forked while another thread holds the lane's lock (it prepares a scope's
    vectors) searches with the lane all the same: that thread does not exist in the child."""
    import os
    import threading
    import time

    from openmemex import embeddings

    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with embeddings._lock:
            held.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    assert held.wait(10)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.write(write, b"ok" if search_ok() else b"different")
        os._exit(0)
    os.close(write)
    release.set()
    holder.join()
    deadline = time.monotonic() + 30
    while (done := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    if done[0] == 0:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        pytest.fail("the child forked while the lane's lock was held never finished its search")
    assert os.read(read, 16) == b"ok" and done[1] == 0


def test_lane_answers_inline_when_the_worker_is_gone_and_never_shares_uncommitted_rows(
        cli: Any, data_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """A search still running while the interpreter shuts down (an MCP call as the client
    hangs up) cannot schedule work on the lane's worker: it computes in place. And the
    vectors kept for every connection are never built by one inside a transaction, whose
    uncommitted rows another connection would otherwise be shown."""
    pytest.importorskip("wordllama", reason="the optional extra: pip install 'open-memex[embeddings]'")
    from openmemex import embeddings
    from openmemex.context import Context
    from openmemex.search import search

    assert cli("add", "The kitten sleeps on the sofa all afternoon.", "--type", "fact").rc == 0
    assert cli("add", "Our office cat naps on the couch near the window.", "--type", "decision").rc == 0
    assert cli("config", "set", "embeddings", "wordllama").rc == 0
    with Context.load(Path.cwd()) as ctx:
        expected = [(h.id, h.lane) for h in search(ctx, "cat nap couch", scope="both").hits]

        class Closed:
            def submit(self, *_args: object) -> object:
                raise RuntimeError("cannot schedule new futures after interpreter shutdown")

        with monkeypatch.context() as patch:
            patch.setattr(embeddings, "_worker", Closed)
            assert [(h.id, h.lane) for h in search(ctx, "cat nap couch", scope="both").hits] == expected

    kitten = next(i for i, _ in expected if cli("show", i).out.count("kitten"))
    with Context.load(Path.cwd()) as writer, Context.load(Path.cwd()) as reader:
        writer.conn.execute("BEGIN IMMEDIATE")
        writer.conn.execute("UPDATE memory_rows SET type = 'decision' WHERE id = ?", (kitten,))
        assert kitten in [h.id for h in search(writer, "kitten sofa", scope="both", type="decision").hits]
        writer.conn.execute("ROLLBACK")
        # another write brings the row counter back to where the rolled-back one had put it
        reader.conn.execute("UPDATE memory_rows SET importance = importance WHERE id != ?", (kitten,))
        decisions = search(reader, "kitten sofa", scope="both", type="decision").hits
        assert kitten not in [h.id for h in decisions] and all(h.type == "decision" for h in decisions)


def test_the_lane_module_imports_where_python_has_no_fork() -> None:
    """os.register_at_fork is POSIX only: on Windows the module must still import (a search
    with the lane on was an internal error there)."""
    import subprocess

    # what the module needs is imported first (the standard library registers fork hooks too)
    code = "import os, openmemex.index, openmemex.search; del os.register_at_fork; import openmemex.embeddings; print('ok')"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


def test_a_damaged_vector_is_computed_again_not_a_crash(cli: Any, data_root: Path) -> None:
    """The vectors table is a cache: a row cut short (or one an earlier model of this name
    made) crashed every lane search with a numpy reshape error, and reindex kept the row."""
    pytest.importorskip("wordllama", reason="the optional extra: pip install 'open-memex[embeddings]'")
    assert cli("add", "The kitten sleeps on the sofa all afternoon.").rc == 0
    assert cli("add", "Deploys to production need a manual Argo CD sync.").rc == 0
    assert cli("config", "set", "embeddings", "wordllama").rc == 0
    assert _search(cli, "cat nap couch")["hits"][0]["lane"] == "vector"
    db = sqlite3.connect(paths.index_path(data_root))
    try:
        with db:
            hashes = [r[0] for r in db.execute("SELECT content_hash FROM vectors ORDER BY content_hash")]
            db.execute("UPDATE vectors SET vec = substr(vec, 1, 281) WHERE content_hash = ?", (hashes[0],))
            db.execute("UPDATE vectors SET vec = ? WHERE content_hash = ?", (b"\xff" * 1024, hashes[1]))  # NaNs
    finally:
        db.close()
    fresh = run_process("search", "cat nap couch", "--json", "--limit", "10")  # a new process reads the table
    assert fresh.rc == 0, fresh.err
    hits = json.loads(fresh.out)["hits"]
    assert hits and hits[0]["snippet"].startswith("The kitten") and hits[0]["lane"] == "vector"
    db = sqlite3.connect(paths.index_path(data_root))
    try:
        lengths = {h: n for h, n in db.execute("SELECT content_hash, length(vec) FROM vectors")}
        assert lengths[hashes[0]] == 1024  # computed again
        assert lengths[hashes[1]] == 1024
        assert db.execute("SELECT vec FROM vectors WHERE content_hash = ?", (hashes[1],)).fetchone()[0] != b"\xff" * 1024
    finally:
        db.close()


def test_a_download_cut_short_is_never_installed(cli: Any, data_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A server that announces 50 MB and closes after a few KB: the prefix was renamed into
    place as the model, and the next search blamed a damaged model. Temporary files of
    downloads whose process is gone (killed mid-way) are removed by the next download."""
    import http.server
    import subprocess

    class Cut(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(50_000_000))
            self.end_headers()
            self.wfile.write(b"\0" * 4096)
            self.wfile.flush()
            self.close_connection = True

        def log_message(self, *args: Any) -> None:
            pass

    folder = data_root / "models" / "multilingual-e5-small"
    folder.mkdir(parents=True)
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = folder / f".model.onnx.{int(gone.stdout)}.part"
    stale.write_bytes(b"\0" * 1000)
    result = _search_with_e5_from(cli, monkeypatch, Cut)
    assert result.rc == 1 and "Traceback" not in result.err and len(result.err.strip().splitlines()) == 1
    assert "cannot download the embeddings model" in result.err and "stopped at 4,096 of 50,000,000 bytes" in result.err
    assert list(folder.iterdir()) == []  # no cut model in place, no temporary file left, the stale one swept


def test_the_coarse_first_pass_gives_the_full_products_answer() -> None:
    """wordllama is Matryoshka-trained: a scope of more than 320 memories is ranked by its
    first 128 dimensions and the full product is taken of the 160 kept (half the memory
    read). On the eval set's memories (each also written a second way, so a type-filtered
    scope is large enough too) and its queries, each hit's cosine is the full product's and
    the hits are the full product's (an approximation: measured, not assumed); a small scope
    is multiplied in full."""
    pytest.importorskip("wordllama", reason="the optional extra: pip install 'open-memex[embeddings]'")
    import numpy as np

    from openmemex import embeddings
    from openmemex.embeddings import providers
    from openmemex.text import has_cjk

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks" / "retrieval"))
    from evalset import load_corpus, load_queries

    model = providers.WordLlamaProvider()
    assert model.first_dims == 128
    bodies = [item.body for item in load_corpus().items.values()]
    texts = bodies + [f"As noted before: {b}" for b in bodies]
    matrix = model.embed_documents(texts)
    n = len(texts)
    types = ["gotcha" if i % 3 else "decision" for i in range(n)]

    def cache() -> Any:  # a new one each time: the scopes it keeps are the layout asked first
        return embeddings._Cache(("", "", 0, "wordllama"), np.arange(100, 100 + n, dtype=np.int64), ["/a", "/b"],
                                 np.array([i % 2 for i in range(n)], dtype=np.int32), types, matrix, {})  # fmt: skip

    full = providers.WordLlamaProvider()
    full.first_dims = 0  # type: ignore[misc]
    same = asked = 0
    for query in [q.text for q in load_queries() if not has_cjk(q.text)]:
        vector = model.embed_query(query)
        for type, count in ((None, 8), ("gotcha", 4)):  # scopes of 648 and 432 memories
            layout = embeddings._scoped(cache(), ["/a", "/b"], type, 128)
            assert layout.columns is None and layout.prefix.shape == (128, len(layout.rowids)) and len(layout.rowids) > 320
            coarse = embeddings._nearest(model, query, layout, count)
            whole = embeddings._scoped(cache(), ["/a", "/b"], type)
            assert whole.prefix is None and whole.columns.shape == (256, len(layout.rowids))
            exact = embeddings._nearest(full, query, whole, count)
            assert all(abs(s - float(matrix[r - 100] @ vector)) < 1e-5 for r, s in coarse)
            assert all(types[r - 100] == (type or types[r - 100]) for r, _ in coarse)
            same += sum(1 for a, b in zip(coarse, exact, strict=True) if a[0] == b[0])
            asked += count
    assert same / asked >= 0.98, same / asked
    small = embeddings._scoped(cache(), ["/a"], None, 128).only(np.arange(n // 2) < 300)  # ≤ 320: one product
    assert embeddings._nearest(model, "deploys", small, 8) == embeddings._nearest(full, "deploys", small, 8)


def test_an_index_that_cannot_say_when_its_rows_change_keeps_nothing(cli: Any, data_root: Path, git_repo: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """``index_info``'s row count damaged (not a number) or gone: every search still answers,
    and nothing is kept across searches — a long-lived process sees another process's new
    memory in the lane, and a memory deleted elsewhere is not scored with a vector kept for
    its rowid."""
    pytest.importorskip("wordllama", reason="the optional extra: pip install 'open-memex[embeddings]'")
    from openmemex.context import Context
    from openmemex.embeddings import providers
    from openmemex.search import search

    monkeypatch.chdir(git_repo)
    assert cli("add", "Deploys to production need a manual Argo CD sync.").rc == 0
    assert cli("add", "PSP is our shorthand.", "--alias", "PSP", "--target", "payment service provider").rc == 0
    kitten = json.loads(cli("add", "The kitten sleeps on the sofa all afternoon.", "--json").out)["id"]
    assert cli("config", "set", "embeddings", "wordllama").rc == 0
    db = sqlite3.connect(data_root / "index.db")
    db.execute("UPDATE index_info SET value = 'x' WHERE key = 'rows'")
    db.commit()
    assert cli("search", "Argo sync", "--no-embeddings").rc == 0  # was an internal error
    db.execute("DELETE FROM index_info WHERE key = 'rows'")
    db.commit()
    db.close()
    with Context.load(git_repo) as ctx:
        assert [h.id for h in search(ctx, "cat nap couch").hits][:1] == [kitten]
        assert search(ctx, "PSP outage").rewrites == ["PSP → payment service provider"]
        assert cli("forget", kitten).rc == 0
        tax = json.loads(cli("add", "Quarterly VAT filings go through the tax portal.", "--json").out)["id"]
        hits = {h.id: h for h in search(ctx, "VAT tax filings").hits}
        model = providers.WordLlamaProvider()
        own = float(model.embed_query("VAT tax filings") @ model.embed_documents([
            "Quarterly VAT filings go through the tax portal."])[0])  # fmt: skip
        assert hits[tax].vector is not None and abs(hits[tax].vector - own) < 1e-4  # its vector, not the kitten's
        assert kitten not in [h.id for h in search(ctx, "cat nap couch").hits]


def test_a_memory_retracted_while_the_lane_runs_is_not_shown(cli: Any, data_root: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """The lane picks its candidates from the vectors of one moment. When they were current
    for the search's own view of the index, that is the moment; when another process had
    changed a row, the lane makes them current outside that view (it writes them), and the
    rows it alone found are then read in the search's view: a memory another process
    retracted (or moved out of the scope) in between is left out there, as bm25's rows are."""
    pytest.importorskip("wordllama", reason="the optional extra: pip install 'open-memex[embeddings]'")
    from openmemex import embeddings

    kitten = json.loads(cli("add", "The kitten sleeps on the sofa all afternoon.", "--json").out)["id"]
    for text in ("Deploys to production need a manual Argo CD sync.", "Invoices are rendered as PDF by the worker."):
        assert cli("add", text).rc == 0
    assert cli("config", "set", "embeddings", "wordllama").rc == 0
    hits = _search(cli, "cat nap couch")["hits"]
    assert [h["lane"] for h in hits if h["id"] == kitten] == ["vector"]  # the lane alone finds it
    started = embeddings.start

    def start_then_retract(*args: Any, **kwargs: Any) -> Any:
        pending = started(*args, **kwargs)
        assert run_process("forget", kitten, "--soft").rc == 0  # another process, meanwhile
        return pending

    monkeypatch.setattr(embeddings, "start", start_then_retract)
    assert run_process("add", "The garden hose leaks at the tap.").rc == 0  # the vectors kept are not current
    assert kitten not in [h["id"] for h in _search(cli, "cat nap couch")["hits"]]


def test_the_rows_only_the_lane_found_are_its_own_while_no_row_changed(cli: Any, data_root: Path) -> None:
    """The lane keeps each memory's lean row (what ranking, chains and tiers read) with its
    vector. While the search's view of the index is the one they were read at, the rows only
    the lane found are taken from there — exactly the rows the statement gives, for every
    scope and type — and not read again; once a row changed, they are read."""
    pytest.importorskip("wordllama", reason="the optional extra: pip install 'open-memex[embeddings]'")
    from openmemex.context import Context
    from openmemex.search import search, visible_rows

    kitten = json.loads(cli("add", "The kitten sleeps on the sofa all afternoon.", "--json").out)["id"]
    old = json.loads(cli("add", "Cats nap on the couch in the office.", "--type", "gotcha", "--json").out)["id"]
    assert cli("supersede", old, "Our office cat naps on the couch near the window.", "--type", "gotcha").rc == 0
    for text in ("Deploys to production need a manual Argo CD sync.", "Invoices are rendered as PDF by the worker.",
                 "The puppy sleeps in the garden shed.", "Retry webhooks with exponential backoff."):  # fmt: skip
        assert cli("add", text, "--scope", "project").rc == 0
    assert cli("config", "set", "embeddings", "wordllama").rc == 0
    with Context.load(Path.cwd()) as ctx:
        assert kitten in [h.id for h in search(ctx, "cat nap couch").hits if h.lane == "vector"]  # the lane alone
        rowid = ctx.conn.execute("SELECT rowid FROM memories WHERE id = ?", (kitten,)).fetchone()[0]
        statements: list[str] = []
        ctx.conn.set_trace_callback(statements.append)
        hits = search(ctx, "cat nap couch").hits
        ctx.conn.set_trace_callback(None)
        assert kitten in [h.id for h in hits if h.lane == "vector"]
        lean = [json.loads(s.split("json_each('", 1)[1].split("'", 1)[0]) for s in statements
                if s.startswith("SELECT rowid, id, dir,") and "json_each('" in s]  # fmt: skip
        assert lean and all(rowid not in ids for ids in lean)  # bm25's rows were read, not the lane's own

        from openmemex import embeddings
        from openmemex.index import generation

        seen = generation(ctx.conn, ctx.root)
        every = [int(r[0]) for r in ctx.conn.execute("SELECT rowid FROM memories")]
        compared = 0
        for scope in ("both", "personal", "project"):
            dirs = [str(f.path) for f in ctx.folders(scope)]
            for type in (None, "gotcha", "decision"):
                lane = embeddings.start(ctx, "wordllama", "cat nap couch", dirs, type, 20, seen)
                assert lane() is not None
                kept = lane.rows(every, seen)
                assert kept is not None and kept == [dict(r) for r in visible_rows(ctx, every, dirs, type)]
                compared += len(kept)
                assert lane.rows(every, (*seen[:2], seen[2] + 1)) is None  # another view: read them
        assert compared > 10
    assert run_process("forget", kitten, "--soft").rc == 0  # another process changes a row
    with Context.load(Path.cwd()) as ctx:
        assert kitten not in [h.id for h in search(ctx, "cat nap couch").hits]


def test_the_vectors_kept_are_of_the_state_their_generation_names(cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The lane's vectors and lean rows are read in one view of the index together with the
    generation that labels them. Another process writing between two separate reads would
    label the newer state's rows with the older generation, and a search whose own view is
    that older state (another MCP call's thread) would take them: here an archived memory
    that another process made active again after that search began."""
    pytest.importorskip("wordllama", reason="the optional extra: pip install 'open-memex[embeddings]'")
    from openmemex import embeddings
    from openmemex.context import Context
    from openmemex.search import search

    kitten = json.loads(cli("add", "The kitten sleeps on the sofa all afternoon.", "--json").out)["id"]
    for text in ("Deploys to production need a manual Argo CD sync.", "Invoices are rendered as PDF by the worker."):
        assert cli("add", text).rc == 0
    assert cli("config", "set", "embeddings", "wordllama").rc == 0
    with Context.load(Path.cwd()) as first, Context.load(Path.cwd()) as other:
        assert kitten in [h.id for h in search(first, "cat nap couch").hits]
        assert run_process("status", kitten, "archived").rc == 0
        assert kitten not in [h.id for h in search(first, "cat nap couch").hits]
        monkeypatch.setattr(embeddings, "_caches", {})  # the other call reads the vectors anew
        read, ready = embeddings._read_vectors, embeddings.ready
        steps: list[str] = []

        def read_while_another_process_writes(ctx: Any, prov: Any) -> Any:
            if ctx is other and "written" not in steps:
                steps.append("written")
                assert run_process("status", kitten, "active").rc == 0
            return read(ctx, prov)

        def ready_once_the_other_call_searched(model: str, generation: Any) -> bool:
            if "searched" not in steps:  # this search's view is open; the other call searches meanwhile
                steps.append("searched")
                search(other, "argo deploys")
            return ready(model, generation)

        monkeypatch.setattr(embeddings, "_read_vectors", read_while_another_process_writes)
        monkeypatch.setattr(embeddings, "ready", ready_once_the_other_call_searched)
        hits = search(first, "cat nap couch").hits
        assert steps == ["searched", "written"]
        assert kitten not in [h.id for h in hits]  # archived in this search's view
        monkeypatch.undo()
        assert kitten in [h.id for h in search(first, "cat nap couch").hits]  # active again now


def test_the_lane_inside_the_searchs_snapshot_never_writes(cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The lane begins inside the search's read snapshot when its vectors are current for it;
    if another thread replaced them meanwhile (``ready`` said yes, they are not), the vectors
    a new text lacks are not computed there — the read transaction never becomes a write,
    which another writer could refuse — and the next search computes them."""
    pytest.importorskip("wordllama", reason="the optional extra: pip install 'open-memex[embeddings]'")
    from openmemex import embeddings
    from openmemex.context import Context
    from openmemex.search import search

    for text in ("Deploys to production need a manual Argo CD sync.", "Invoices are rendered as PDF by the worker."):
        assert cli("add", text).rc == 0
    assert cli("config", "set", "embeddings", "wordllama").rc == 0
    with Context.load(Path.cwd()) as ctx:
        assert search(ctx, "argo deploys").hits
        kitten = json.loads(run_process("add", "The kitten sleeps on the sofa all afternoon.", "--json").out)["id"]
        monkeypatch.setattr(embeddings, "ready", lambda model, generation: True)  # (stale, in truth)
        statements: list[str] = []
        ctx.conn.set_trace_callback(statements.append)
        hits = search(ctx, "cat nap couch").hits
        ctx.conn.set_trace_callback(None)
        assert not [s for s in statements if "INSERT" in s.upper() or "DELETE" in s.upper()]
        assert kitten not in [h.id for h in hits]  # no vector yet, and no word in common
        monkeypatch.undo()
        assert kitten in [h.id for h in search(ctx, "cat nap couch").hits if h.lane == "vector"]


def test_the_lane_worker_answers_raises_and_is_never_waited_on_when_held_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """The lane's worker thread answers each job through its lock and hands a call's error
    to the caller. A job it has not begun when the answer is asked for (its core busy, the
    GIL, its thread gone at the interpreter's end) is run by the caller; one it began and is
    held up in is computed again by the caller after ``PATIENCE_S``, not waited on."""
    import threading
    import time

    from openmemex import embeddings

    monkeypatch.setattr(embeddings, "_workers", {})
    worker = embeddings._worker()
    job = worker.submit(lambda a, b: (a + b, threading.current_thread().name), 2, 3)
    while not job.claim.locked():  # let the worker begin it
        time.sleep(0.001)
    assert embeddings._worker() is worker and job.result() == (5, "open-memex-vectors")
    again: list[Any] = []
    asking = threading.Thread(target=lambda: again.append(job.result()), daemon=True)
    asking.start()
    asking.join(timeout=10)
    assert again == [(5, "open-memex-vectors")]  # asked twice, answered twice (not a wait for ever)

    def boom() -> None:
        raise ValueError("the model's files are another model's")

    with pytest.raises(ValueError, match="another model's"):
        worker.submit(boom).result()
    assert worker.submit(lambda: "still serving").result() == "still serving"

    # never begun: the worker takes no job (a thread waiting for a core, or gone)
    gate = threading.Event()
    monkeypatch.setattr(embeddings._Worker, "_serve", lambda self: gate.wait())
    monkeypatch.setattr(embeddings, "_workers", {})
    monkeypatch.setattr(embeddings, "PATIENCE_S", 60.0)  # run here at once, not after any patience
    job = embeddings._worker().submit(lambda: threading.current_thread().name)
    began = time.monotonic()
    assert job.result() == threading.current_thread().name
    assert job.result() == threading.current_thread().name  # and a second time
    assert time.monotonic() - began < 30
    gate.set()

    # begun and held up: computed here after the patience, not when the worker gets on
    monkeypatch.undo()  # the worker serves again
    monkeypatch.setattr(embeddings, "_workers", {})
    held = threading.Event()

    def slow() -> str:
        if threading.current_thread().name == "open-memex-vectors":
            held.wait(30)
        return threading.current_thread().name

    job = embeddings._worker().submit(slow)
    while not job.claim.locked():
        time.sleep(0.001)
    began = time.monotonic()
    assert job.result() == threading.current_thread().name
    assert time.monotonic() - began < 10  # the patience (1 ms), with room for a loaded machine
    held.set()

    # the patience follows the worker's usual time (a larger index, a slower machine): a job
    # slower than PATIENCE_S, as its last runs were, is waited for — not computed twice
    from collections import deque

    monkeypatch.setattr(embeddings, "_took", deque(maxlen=9))
    worker = embeddings._worker()

    def on_worker(call: Callable[[], Any]) -> Any:
        job = worker.submit(call)
        while not job.claim.locked():
            time.sleep(0.001)
        return job.result()

    for _ in range(3):
        on_worker(lambda: time.sleep(0.05))
    assert embeddings.patience() >= 0.1
    assert on_worker(lambda: (time.sleep(0.05), threading.current_thread().name)[1]) == "open-memex-vectors"

    monkeypatch.setattr(worker._thread, "is_alive", lambda: False)  # a thread that ended
    with pytest.raises(RuntimeError, match="gone"):  # (``start`` then hands the caller a job of its own)
        worker.submit(lambda: None)


def test_a_model_giving_vectors_of_another_size_is_one_line(cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The query's embedding runs on the lane's worker thread: a model whose files give
    vectors of another size is still one line naming the fix, exit 1 — not a traceback from
    that thread."""
    pytest.importorskip("wordllama", reason="the optional extra: pip install 'open-memex[embeddings]'")
    import numpy as np

    from openmemex.embeddings import providers

    assert cli("add", "The kitten sleeps on the sofa all afternoon.").rc == 0
    assert cli("config", "set", "embeddings", "wordllama").rc == 0
    assert cli("search", "kitten").rc == 0  # the document vectors are right
    monkeypatch.setattr(providers.WordLlamaProvider, "embed_query", lambda self, text: np.zeros(128, np.float32))
    result = cli("search", "cat nap couch")
    assert result.rc == 1 and "Traceback" not in result.err, result.err
    assert "gave 128-dimension vectors, not 256" in result.err and "--no-embeddings" in result.err
    assert result.err.count("\n") == 1
