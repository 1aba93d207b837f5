"""What an embedder promises, and the base class that writes the public API once.

An :class:`Embedder` turns texts into unit-length float32 vectors whose dot product is
their cosine similarity. Documents (the records a store holds) and queries (what a
caller searches with) are embedded by separate methods, because retrieval models such
as e5 are trained with a different prefix on each side; a symmetric model (MiniLM)
simply treats both alike. ``model_id`` names the vector space: two embedders with the
same id produce interchangeable vectors, so a store records it beside its vectors and
refuses to compare vectors from different ids.

numpy is part of the ``semantic`` extra, not of the core install: this module imports
it only for type checking, so ``import memory_admin.embed`` works everywhere and the
first real use raises :class:`EmbedderUnavailableError` naming the install line.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
from abc import ABC, abstractmethod
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias, runtime_checkable

from memory_admin.errors import MemoryStoreError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Matrix: TypeAlias = npt.NDArray[np.float32]
    """``(n, dimensions)`` float32, each row of unit length."""
    Vector: TypeAlias = npt.NDArray[np.float32]
    """``(dimensions,)`` float32 of unit length."""
else:
    Matrix = Any
    Vector = Any

Side = Literal["document", "query"]

SEMANTIC_INSTALL = "pip install 'memory-admin[semantic]'"


class EmbedderUnavailableError(MemoryStoreError, ImportError):
    """An embedder's libraries or model files are missing: the message names the install."""

    code = "embedder_unavailable"

    def __init__(self, what: str, install: str = SEMANTIC_INSTALL) -> None:
        self.install = install
        super().__init__(f"{what} is not installed. Install it with: {install}", install=install)


class EmbedderError(MemoryStoreError):
    """The embedder ran but failed: a bad answer from an endpoint, a wrong shape, a bad spec."""

    code = "embedder_error"


def require(module: str, what: str, install: str = SEMANTIC_INSTALL) -> ModuleType:
    """Import an optional dependency or raise :class:`EmbedderUnavailableError`."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise EmbedderUnavailableError(what, install) from exc


@functools.cache
def numpy() -> Any:
    """numpy, or the typed error that names the ``semantic`` extra (looked up once)."""
    return require("numpy", "numpy (needed for embeddings)")


@runtime_checkable
class Embedder(Protocol):
    """Embeds documents and queries into one vector space.

    Every method returns float32 rows of unit length (so ``matrix @ vector`` is cosine
    similarity), one row per input, in input order; an empty input gives a ``(0,
    dimensions)`` matrix. Embedding is deterministic for a given ``model_id``: the same
    text embeds to the same vector (up to float rounding across batch sizes). Models are
    loaded lazily: constructing an embedder is cheap and never touches the model; the
    first embedding (or :meth:`load`) does.

    An embedder that reads a long text in several windows may also offer
    ``embed_document_windows(texts) -> (matrix, windows)``: :meth:`embed_documents`'s
    matrix, and for each text a unit row per window (``None`` for a text within one). A
    store keeps those beside the record's vector and mixes the best window's cosine into
    a search (:meth:`~memory_admin.embed.local.OnnxEmbedder.embed_document_windows`, the
    default's); without it, a record has its one vector.
    """

    @property
    def model_id(self) -> str:
        """A stable name of the vector space (model, weights, pooling, prefixes)."""
        ...

    @property
    def dimensions(self) -> int:
        """The length of every vector."""
        ...

    def load(self) -> None:
        """Load the model now (otherwise the first embedding does); idempotent."""
        ...

    def embed_documents(self, texts: Sequence[str]) -> Matrix:
        """Vectors of records to be stored and searched."""
        ...

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        """Vectors of search queries."""
        ...

    def embed_query(self, text: str) -> Vector:
        """One query's vector: ``embed_queries([text])[0]``."""
        ...

    async def aembed_documents(self, texts: Sequence[str]) -> Matrix:
        """:meth:`embed_documents` without blocking the event loop."""
        ...

    async def aembed_queries(self, texts: Sequence[str]) -> Matrix:
        """:meth:`embed_queries` without blocking the event loop."""
        ...

    async def aembed_query(self, text: str) -> Vector:
        """:meth:`embed_query` without blocking the event loop."""
        ...


class BaseEmbedder(ABC):
    """The public API written once over one primitive, :meth:`_embed_batch`.

    Subclasses embed one batch of at most ``batch_size`` texts, already prefixed, and
    return raw rows; this class splits inputs into batches, applies the side's prefix,
    normalises and checks the shape. The async twins run the sync path in a worker
    thread: model runtimes (onnxruntime, a C engine) release the GIL while they compute,
    and a blocking HTTP call is no worse in a thread.
    """

    #: texts per call to :meth:`_embed_batch`; short records pad little at 32
    batch_size: int = 32
    query_prefix: str = ""
    document_prefix: str = ""

    @property
    @abstractmethod
    def model_id(self) -> str: ...

    @property
    @abstractmethod
    def dimensions(self) -> int: ...

    def load(self) -> None:
        """Load the model now; the default has nothing to load."""

    @abstractmethod
    def _embed_batch(self, texts: list[str], side: Side) -> Matrix:
        """Raw vectors of one batch of prefixed texts, shape ``(len(texts), dimensions)``."""

    def _embed(self, texts: Sequence[str], side: Side) -> Matrix:
        np = numpy()
        if isinstance(texts, str):
            raise TypeError("pass a sequence of texts, not one string (use embed_query for one query)")
        prefix = self.query_prefix if side == "query" else self.document_prefix
        items = [prefix + text for text in texts]
        if not items:
            empty: Matrix = np.zeros((0, self.dimensions), dtype=np.float32)
            return empty
        # batches of similar lengths: a batch is padded to its longest text
        order = sorted(range(len(items)), key=lambda i: len(items[i]))
        parts = []
        for start in range(0, len(order), self.batch_size):
            batch = [items[i] for i in order[start : start + self.batch_size]]
            rows = np.asarray(self._embed_batch(batch, side), dtype=np.float32)
            if rows.ndim != 2 or rows.shape[0] != len(batch):
                raise EmbedderError(f"{self.model_id} returned shape {rows.shape} for {len(batch)} texts")
            parts.append(rows)
        matrix = np.empty((len(items), parts[0].shape[1]), dtype=np.float32)
        matrix[order] = np.concatenate(parts) if len(parts) > 1 else parts[0]
        return normalise(matrix)

    def embed_documents(self, texts: Sequence[str]) -> Matrix:
        return self._embed(texts, "document")

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        return self._embed(texts, "query")

    def embed_query(self, text: str) -> Vector:
        row: Vector = self._embed([text], "query")[0]
        return row

    async def aembed_documents(self, texts: Sequence[str]) -> Matrix:
        return await asyncio.to_thread(self.embed_documents, list(texts))

    async def aembed_queries(self, texts: Sequence[str]) -> Matrix:
        return await asyncio.to_thread(self.embed_queries, list(texts))

    async def aembed_query(self, text: str) -> Vector:
        return await asyncio.to_thread(self.embed_query, text)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.model_id}>"


def normalise(matrix: Matrix) -> Matrix:
    """Rows scaled to unit length (a zero row stays zero)."""
    np = numpy()
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    out: Matrix = (matrix / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)
    return out


__all__ = [
    "SEMANTIC_INSTALL",
    "BaseEmbedder",
    "Embedder",
    "EmbedderError",
    "EmbedderUnavailableError",
    "Matrix",
    "Side",
    "Vector",
    "normalise",
    "numpy",
    "require",
]
