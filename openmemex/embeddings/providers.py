"""The two embedding models the lane ships with (D8: configurable, popular default).

``multilingual-e5-small`` (the design's default): ONNX through onnxruntime and the
``tokenizers`` library, downloaded on first use into ``<data root>/models/`` with a
progress bar; offline, the error says what to fetch and where to put it. ``wordllama``:
a 256-dimension static model inside its own wheel, so it works offline and in CI (its
loader looks for the tokenizer in the wrong folder and then tries to download it, so
``cache_dir`` points at the installed package and downloads are disabled).
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import MemexError
from . import INSTALL_HINT

if TYPE_CHECKING:
    from . import Matrix

E5_NAME = "multilingual-e5-small"
E5_REPO = "https://huggingface.co/intfloat/multilingual-e5-small/resolve/main/"
E5_FILES = {"model.onnx": "onnx/model.onnx", "tokenizer.json": "tokenizer.json"}
E5_MAX_TOKENS = 512
TIMEOUT_S = 30


def _missing_extra(exc: ImportError) -> MemexError:
    return MemexError(f"the embeddings lane needs the optional libraries ({exc.name} is missing) — {INSTALL_HINT}, "
                      "or turn the lane off: open-memex config set embeddings off")  # fmt: skip


def _unit(matrix: Any) -> Any:
    import numpy as np

    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.where(norms == 0, 1, norms)).astype(np.float32)


class WordLlamaProvider:
    """WordLlama's in-wheel ``l2_supercat`` 256-d model: token embeddings pooled, no network."""

    name = "wordllama"
    dim = 256
    multilingual = False  # Llama-2 vocabulary: Chinese comes out as byte pieces (measured on the eval set)
    first_dims = 128  # Matryoshka-trained: its first 128 dimensions pick the candidates of the full product

    def __init__(self) -> None:
        try:
            import wordllama
        except ImportError as exc:
            raise _missing_extra(exc) from None
        package = Path(wordllama.__file__).parent
        try:
            self._model = wordllama.WordLlama.load(cache_dir=package, disable_download=True, dim=self.dim)
        except FileNotFoundError as exc:
            raise MemexError(f"wordllama's model files are missing from {package} ({exc}) — reinstall it: "
                             f"{INSTALL_HINT}") from None  # fmt: skip

    def embed_documents(self, texts: list[str]) -> Matrix:
        result: Matrix = _unit(self._model.embed(texts, norm=False))
        return result

    def embed_query(self, text: str) -> Matrix:
        """``embed`` for one text without its batch machinery (padding, masks, a copy per
        step): the same token vectors pooled and scaled to unit length, in a handful of numpy
        calls — a query's embedding runs beside the bm25 rounds, and each call holds the GIL
        they need (20 µs where it took 54, measured)."""
        import numpy as np

        table = self._model.embedding
        ids = self._model.tokenizer.encode(text, add_special_tokens=False).ids
        if not ids:
            return np.zeros(self.dim, dtype=np.float32)
        if max(ids) >= table.shape[0]:  # a tokenizer of another vocabulary than the table's
            ids = [min(i, table.shape[0] - 1) for i in ids]
        pooled = table[ids].sum(axis=0, dtype=np.float32) / np.float32(len(ids))
        norm = np.sqrt(np.add.reduce(pooled * pooled))  # ``_unit``'s own steps: the batch path's very vector
        result: Matrix = pooled / norm if norm > 0 else pooled
        return result


Progress = Callable[[int, int], None]


def download(url: str, dest: Path, progress: Progress | None = None) -> None:
    """Fetch ``url`` to ``dest`` through a temporary file (never a half file in place),
    showing progress; any network failure is one line naming what to do offline."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    _sweep_parts(dest)
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.part")
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response, tmp.open("wb") as out:
            total = int(response.headers.get("Content-Length") or 0)
            done = 0
            while chunk := response.read(1 << 20):
                out.write(chunk)
                done += len(chunk)
                if progress is not None:
                    progress(done, total or done)
            if total and done != total:  # the server closed early: never a cut file in place
                raise ValueError(f"the download stopped at {done:,} of {total:,} bytes")
        os.replace(tmp, dest)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        tmp.unlink(missing_ok=True)
        reason = getattr(exc, "reason", None) or exc
        raise MemexError(
            f"cannot download the embeddings model {E5_NAME} ({reason}) — this needs the network once; offline, "
            f"fetch {url} to {dest} by hand, or use the model that ships in its wheel: "
            "open-memex config set embeddings wordllama (or off)"
        ) from None


def _sweep_parts(dest: Path) -> None:
    """Remove the temporary files of downloads whose process is gone (killed mid-way): a
    model is hundreds of MB, and nothing else would ever remove them."""
    for part in dest.parent.glob(f".{dest.name}.*.part"):
        pid = part.name[len(dest.name) + 2 : -len(".part")]
        if not pid.isdigit() or _alive(int(pid)):
            continue
        with contextlib.suppress(OSError):
            part.unlink()


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # someone else's process, or a platform that cannot tell: keep its file
    return True


def _stderr_bar(label: str) -> Progress:
    """A download bar on stderr, on a terminal only (stdout may carry JSON or MCP)."""
    last = [0.0]

    def show(done: int, total: int) -> None:
        if not sys.stderr.isatty() or (done < total and time.monotonic() - last[0] < 0.1):
            return
        last[0] = time.monotonic()
        width = 30
        filled = int(width * done / total) if total else width
        print(f"\r{label} [{'#' * filled}{'.' * (width - filled)}] {done / 1e6:.1f}/{total / 1e6:.1f} MB",
              end="" if done < total else "\n", file=sys.stderr, flush=True)  # fmt: skip

    return show


class E5Provider:
    """intfloat/multilingual-e5-small (384-d) through onnxruntime: ``query:`` and
    ``passage:`` prefixes, mean pooling over the attention mask, unit length."""

    name = E5_NAME
    dim = 384
    multilingual = True

    def __init__(self, models_dir: Path, progress: Progress | None = None) -> None:
        self.folder = models_dir / E5_NAME
        base = os.environ.get("OPEN_MEMEX_MODELS_URL") or E5_REPO  # a mirror, and the tests' offline check
        for local, remote in E5_FILES.items():
            path = self.folder / local
            if not path.is_file():
                bar = progress or _stderr_bar(f"downloading {E5_NAME} {local}")
                download(base.rstrip("/") + "/" + remote, path, bar)
        try:
            import numpy  # noqa: F401
            import onnxruntime
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise _missing_extra(exc) from None
        try:
            self._tokenizer = Tokenizer.from_file(str(self.folder / "tokenizer.json"))
            self._tokenizer.enable_truncation(E5_MAX_TOKENS)
            self._tokenizer.enable_padding()
            self._session = onnxruntime.InferenceSession(str(self.folder / "model.onnx"),
                                                         providers=["CPUExecutionProvider"])  # fmt: skip
        except Exception as exc:  # the libraries raise their own types for a damaged file
            raise MemexError(f"the embeddings model in {self.folder} cannot be loaded ({str(exc)[:200]}) — delete "
                             "that folder and search again to download it anew") from None  # fmt: skip
        self._inputs = {i.name for i in self._session.get_inputs()}

    def _embed(self, texts: list[str]) -> Matrix:
        import numpy as np

        encoded = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run(None, feed)[0]
        summed = (hidden * mask[:, :, None]).sum(axis=1)
        result: Matrix = _unit(summed / np.maximum(mask.sum(axis=1, keepdims=True), 1))
        return result

    def embed_documents(self, texts: list[str]) -> Matrix:
        return self._embed([f"passage: {t}" for t in texts])

    def embed_query(self, text: str) -> Matrix:
        result: Matrix = self._embed([f"query: {text}"])[0]
        return result
