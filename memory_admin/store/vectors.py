"""Vectors beside records, for every backend: what a store embeds, how vectors are
encoded, the exact similarity scan over a scope's candidates, and hybrid fusion.

A backend stores one blob per record (:func:`~memory_admin.embed.quantize.to_blob`:
int8 codes and a scale, 388 bytes at 384 dimensions) in the records' own transaction,
and the model that made them once per store (:class:`VectorSpace`). Its
:meth:`~memory_admin.store.session.Session.similar` primitive selects the blobs of the
records a plan admits — with the very SQL filters a keyword search uses, so no scope,
kind, tag, key, agent, ``as_of``, expiry or invalidation rule can differ between modes —
and hands them to :func:`closest`. Similarity is computed exactly, never approximated:
there is no index to drift from the records, nothing to rebuild.

numpy is imported only when vectors are first used (it comes with the ``semantic`` extra).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from memory_admin.embed.fusion import CANDIDATES, KEYWORD_WEIGHT, zscore_fusion
from memory_admin.embed.protocol import Matrix, Vector, numpy
from memory_admin.embed.quantize import SCALE_BYTES, int8_scores, quantize_int8, stack_blobs
from memory_admin.records import MemoryHit, MemoryRecord, MemoryWriteInput

if TYPE_CHECKING:
    from memory_admin.embed.protocol import Embedder

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

SEMANTIC_CANDIDATES = CANDIDATES
"""How many of the closest records a hybrid search fuses with as many keyword hits."""


@dataclass(frozen=True)
class VectorSpace:
    """The model a store's vectors come from: vectors of two spaces are never compared."""

    model_id: str
    dimensions: int

    @classmethod
    def of(cls, embedder: Embedder) -> VectorSpace:
        return cls(embedder.model_id, embedder.dimensions)

    @property
    def blob_bytes(self) -> int:
        return SCALE_BYTES + self.dimensions


class LruCache(Generic[K, V]):
    """A small thread-safe least-recently-used map."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._items: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self._size:
                self._items.popitem(last=False)


def document_text(record: MemoryRecord | MemoryWriteInput) -> str:
    """What a record's vector embeds: its content (tags and the date are keyword matter)."""
    return record.content


def encode(matrix: Matrix) -> list[bytes]:
    """One storage blob per row of unit vectors (scale as float32 LE, then int8 codes)."""
    codes, scales = quantize_int8(matrix)
    le_scales = scales.astype("<f4")
    return [le_scales[i].tobytes() + codes[i].tobytes() for i in range(codes.shape[0])]


def closest(query: Vector, rows: Sequence[tuple[K, bytes]], dimensions: int, limit: int) -> list[tuple[K, float]]:
    """The ``limit`` rows most similar to ``query`` (cosine), closest first; ties keep
    the rows' order."""
    if not rows or limit <= 0:
        return []
    np = numpy()
    codes, scales = stack_blobs([blob for _, blob in rows], dimensions)
    scores: Any = int8_scores(query, codes, scales)
    top = np.argpartition(-scores, limit - 1)[:limit] if len(rows) > limit else np.arange(len(rows))
    order = sorted(top.tolist(), key=lambda i: (-float(scores[i]), i))
    return [(rows[i][0], round(float(scores[i]), 6)) for i in order]


def fuse(keyword: Sequence[MemoryHit], semantic: Sequence[MemoryHit]) -> list[MemoryHit]:
    """Both sides' candidates in one order (:func:`~memory_admin.embed.fusion.zscore_fusion`,
    BM25 weighted :data:`~memory_admin.embed.fusion.KEYWORD_WEIGHT`), each hit carrying
    its keyword and semantic scores beside the fused one."""
    by_id = {hit.record.id: hit.record for hit in (*semantic, *keyword)}
    fused = zscore_fusion(
        {hit.record.id: hit.score or 0.0 for hit in keyword},
        {hit.record.id: hit.semantic_score or 0.0 for hit in semantic},
        keyword_weight=KEYWORD_WEIGHT,
    )
    return [
        MemoryHit(
            record=by_id[hit.key],
            score=round(hit.score, 6),
            keyword_score=hit.keyword_raw,
            semantic_score=hit.semantic_raw,
        )
        for hit in fused
    ]


__all__ = ["SEMANTIC_CANDIDATES", "LruCache", "VectorSpace", "closest", "document_text", "encode", "fuse"]
