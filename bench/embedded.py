"""An embedder whose vectors outlast the run: benchmarks embed the same dataset again and
again, and the model's time is not what they measure.

:class:`CachedEmbedder` wraps any :class:`~memory_admin.embed.Embedder` and keeps every
vector it hands out, by side (document or query) and text, in one file per vector space
in the cache folder (``MEMORY_ADMIN_CACHE``, else ``$XDG_CACHE_HOME/memory_admin``), under
``bench-vectors/``. A text the file holds is not embedded again; what is new is embedded
by the wrapped model and written back when the run ends (:meth:`CachedEmbedder.save`).
A vector is the model's for that text whatever it was embedded with (the default model
embeds each text alone), so a cached run ranks exactly as an uncached one. Only
benchmarks use this: a store embeds through its own embedder.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memory_admin.embed import Embedder
from memory_admin.embed.int8_graph import cache_folder
from memory_admin.embed.protocol import BaseEmbedder, Matrix, Side, numpy

VERSION = 2
"""Part of a cache file's name: raised when the same model embeds some text differently
(2: a text past the model's window is read whole, in windows), so that no run ranks by
vectors an older version made."""


class CachedEmbedder(BaseEmbedder):
    """``inner``'s vectors, remembered across runs (see the module)."""

    def __init__(self, inner: Embedder, folder: Path | None = None) -> None:
        self.inner = inner
        name = hashlib.sha256(f"{inner.model_id} v{VERSION}".encode()).hexdigest()[:16]
        self.path = (folder or cache_folder() / "bench-vectors") / f"{name}.npz"
        self._known: dict[tuple[str, str], Any] = {}
        self._fresh = 0
        self.hits = 0
        if self.path.is_file():
            with numpy().load(self.path) as stored:
                keys = json.loads(bytes(stored["keys"]).decode())
                if stored["model"].item() == inner.model_id:
                    self._known = {(side, text): row for (side, text), row in zip(keys, stored["vectors"], strict=True)}

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dimensions(self) -> int:
        return self.inner.dimensions

    def load(self) -> None:
        self.inner.load()

    def _embed(self, texts: Sequence[str], side: Side) -> Matrix:
        # the wrapped embedder's own vectors, as they are: it batched and normalised them
        return self._embed_batch(list(texts), side)

    def _embed_batch(self, texts: list[str], side: Side) -> Matrix:
        np = numpy()
        if not texts:
            empty: Matrix = np.zeros((0, self.dimensions), dtype=np.float32)
            return empty
        missing = list(dict.fromkeys(text for text in texts if (side, text) not in self._known))
        if missing:
            rows = self.inner.embed_documents(missing) if side == "document" else self.inner.embed_queries(missing)
            self._known.update({(side, text): row for text, row in zip(missing, rows, strict=True)})
            self._fresh += len(missing)
        self.hits += len(texts) - len(missing)
        matrix: Matrix = np.stack([self._known[side, text] for text in texts]).astype(np.float32)
        return matrix

    def save(self) -> None:
        """Write what this run embedded to the cache file (nothing new: nothing written)."""
        if not self._fresh:
            return
        np = numpy()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        keys = list(self._known)
        partial = self.path.with_suffix(".partial.npz")
        np.savez(
            partial,
            model=np.array(self.inner.model_id),
            keys=np.frombuffer(json.dumps(keys).encode(), dtype=np.uint8),
            vectors=np.stack([self._known[key] for key in keys]).astype(np.float32),
        )
        partial.replace(self.path)
        self._fresh = 0


__all__ = ["CachedEmbedder"]
