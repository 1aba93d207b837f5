"""A model-free embedder: feature hashing of words and their character trigrams.

Each word of :func:`~memory_admin.tokenize.tokenize` and each trigram of it adds ±1 to
one of ``dimensions`` buckets (the bucket and the sign from a keyed hash), so texts that
share words or word pieces point the same way. It knows nothing of meaning — "work"
and "job" are strangers — but it is deterministic, instant and needs only numpy: the
embedder for tests of the store's semantic plumbing, and for machines where no model
may be installed. Spec: ``hashing`` (``hashing:<dimensions>``).
"""

from __future__ import annotations

import hashlib
from functools import lru_cache

from memory_admin.embed.protocol import BaseEmbedder, Matrix, Side, numpy
from memory_admin.tokenize import tokenize

DEFAULT_DIMENSIONS = 256


@lru_cache(maxsize=65_536)
def _feature(piece: str, dimensions: int) -> tuple[int, float]:
    digest = hashlib.blake2b(piece.encode(), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    return value % dimensions, 1.0 if value >> 63 else -1.0


def _pieces(word: str) -> list[str]:
    padded = f"<{word}>"
    return [word] + [padded[i : i + 3] for i in range(len(padded) - 2)]


class HashingEmbedder(BaseEmbedder):
    batch_size = 256

    def __init__(self, dimensions: int = DEFAULT_DIMENSIONS) -> None:
        self._dimensions = dimensions

    @property
    def model_id(self) -> str:
        return f"hashing-v1:{self._dimensions}"

    @property
    def dimensions(self) -> int:
        return self._dimensions

    def _embed_batch(self, texts: list[str], side: Side) -> Matrix:
        np = numpy()
        out: Matrix = np.zeros((len(texts), self._dimensions), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in tokenize(text):
                for piece in _pieces(word):
                    bucket, sign = _feature(piece, self._dimensions)
                    out[row, bucket] += sign
        return out


__all__ = ["DEFAULT_DIMENSIONS", "HashingEmbedder"]
