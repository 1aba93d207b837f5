"""Any model a user has, through sentence-transformers (an optional install: torch).

``open_embedder("sentence-transformers:all-mpnet-base-v2")`` or a local folder path.
Queries and documents go through the model's own prompts when it defines them
(``prompt_name="query"`` / ``"document"``), else through the prefixes given here (e5:
``query_prefix="query: ", document_prefix="passage: "``).
"""

from __future__ import annotations

import threading
from typing import Any

from memory_admin.embed.protocol import BaseEmbedder, Matrix, Side, require

SENTENCE_TRANSFORMERS_INSTALL = "pip install sentence-transformers"


class SentenceTransformerEmbedder(BaseEmbedder):
    """A ``sentence_transformers.SentenceTransformer`` behind the :class:`Embedder` protocol."""

    def __init__(
        self,
        model: str,
        *,
        query_prefix: str = "",
        document_prefix: str = "",
        device: str = "cpu",
        batch_size: int = 32,
        model_id: str | None = None,
    ) -> None:
        self.model_name = model
        self.query_prefix = query_prefix
        self.document_prefix = document_prefix
        self.device = device
        self.batch_size = batch_size
        self._model_id = model_id or f"sentence-transformers:{model}"
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimensions(self) -> int:
        self.load()
        return int(self._model.get_sentence_embedding_dimension())

    def load(self) -> None:
        with self._lock:
            if self._model is None:
                module = require("sentence_transformers", "sentence-transformers", SENTENCE_TRANSFORMERS_INSTALL)
                self._model = module.SentenceTransformer(self.model_name, device=self.device)

    def _embed_batch(self, texts: list[str], side: Side) -> Matrix:
        self.load()
        prompts = getattr(self._model, "prompts", None) or {}
        prompt = side if side in prompts and not (self.query_prefix or self.document_prefix) else None
        rows: Matrix = self._model.encode(
            texts, prompt_name=prompt, batch_size=len(texts), convert_to_numpy=True, show_progress_bar=False
        )
        return rows


__all__ = ["SENTENCE_TRANSFORMERS_INSTALL", "SentenceTransformerEmbedder"]
