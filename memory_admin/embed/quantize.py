"""int8 vectors for storage: one byte per dimension plus one float32 scale per vector.

Each unit vector ``v`` is stored as ``codes = round(v / max|v| * 127)`` (int8) and
``scale = max|v| / 127``, so ``v ≈ codes * scale``. For 384 dimensions that is 388 bytes
a record instead of 1,536. Cosine similarity against a float query is then
``(codes @ q) * scale``, computed exactly over a scope's rows; the error against the
float vectors is far below the gaps that order search results (tested: mean absolute
error under 0.002 on real embeddings).

The blob layout (:func:`to_blob` / :func:`from_blob`) is the scale as little-endian
float32, then the codes: what a store writes in one BLOB column beside the record. A
record longer than its model reads at once may carry one more such vector per window
after its own (:func:`to_blobs` with ``windows``): every reader of the record's vector
reads the first, and :func:`stack_with_windows` the rest too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memory_admin.embed.protocol import EmbedderError, Matrix, Vector, numpy

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Codes = npt.NDArray[np.int8]
    Scales = npt.NDArray[np.float32]
else:
    Codes = Any
    Scales = Any
Windows = tuple[list[int], Codes, Scales]
"""A batch's window vectors: each one's record (its index in the batch), codes and scales."""

SCALE_BYTES = 4
PRODUCT_ROWS = 1024
"""Stored vectors converted to float32 and multiplied at a time. A product this size
runs on one thread (a larger one starts BLAS's thread pool, which would contend with the
embedder's and the host's for the cores), and converting first is some twenty times
faster than numpy's mixed-type product of the int8 codes."""


def quantize_int8(matrix: Matrix) -> tuple[Codes, Scales]:
    """``(codes, scales)``: int8 ``(n, d)`` and float32 ``(n,)`` with ``matrix ≈ codes * scales[:, None]``."""
    np = numpy()
    rows = np.atleast_2d(np.asarray(matrix, dtype=np.float32))
    peak = np.abs(rows).max(axis=1)
    scales = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
    codes = np.clip(np.rint(rows / scales[:, None]), -127, 127).astype(np.int8)
    return codes, scales


def dequantize_int8(codes: Codes, scales: Scales) -> Matrix:
    """Float32 rows back from int8 codes and their scales (not renormalised)."""
    np = numpy()
    out: Matrix = codes.astype(np.float32) * np.asarray(scales, dtype=np.float32)[:, None]
    return out


def int8_scores(query: Vector, codes: Codes, scales: Scales, centre: Vector | None = None) -> Vector:
    """Cosine similarity of a unit float query with each stored unit vector, ``(n,)``.

    With a ``centre`` (the mean of the vectors searched), the cosine of ``query - centre``
    and each ``vector - centre``: what the query shares with a record beyond what every
    record of the collection shares (see ``docs/search.md``)."""
    return int8_cosines(query, codes, scales, centre)[1 if centre is not None else 0]


def int8_cosines(
    query: Vector, codes: Codes, scales: Scales, centre: Vector | None = None, own: Vector | None = None
) -> tuple[Vector, Vector, Vector]:
    """The similarities of :func:`int8_scores` in one pass over the codes: the plain
    cosine of a unit float query with each stored vector; (with a ``centre``; else the
    plain one again) the cosine measured from the centre; and the plain cosine of ``own``,
    a second unit query (the plain one again without it) — the centre and ``own`` are
    further columns of the same product."""
    np = numpy()
    q = np.asarray(query, dtype=np.float32)
    extra = [np.asarray(v, dtype=np.float32) for v in (centre, own) if v is not None]
    columns = np.stack([q, *extra], axis=1)
    count = codes.shape[0]
    both = np.empty((count, columns.shape[1]), dtype=np.float32)
    squares = np.empty(count, dtype=np.float32)
    for start in range(0, count, PRODUCT_ROWS):
        rows = codes[start : start + PRODUCT_ROWS].astype(np.float32)
        both[start : start + PRODUCT_ROWS] = rows @ columns
        if centre is not None:
            squares[start : start + PRODUCT_ROWS] = np.einsum("ij,ij->i", rows, rows)
    dots: Vector = both[:, 0] * scales  # v·q
    own_dots: Vector = both[:, -1] * scales if own is not None else dots
    if centre is None:
        return dots, dots, own_dots
    mu = columns[:, 1]
    shared = both[:, 1] * scales  # v·μ
    squares *= scales * scales  # |v|²
    mu_mu, q_mu, q_q = float(mu @ mu), float(q @ mu), float(q @ q)
    rows_norm = np.sqrt(np.maximum(squares - 2 * shared + mu_mu, 1e-12))
    scaled: Vector = (dots - shared - q_mu + mu_mu) / (rows_norm * np.sqrt(max(q_q - 2 * q_mu + mu_mu, 1e-12)))
    return dots, scaled, own_dots


def scaled_sum(codes: Codes, scales: Scales) -> Vector:
    """The sum of the stored vectors, ``(d,)`` float32 (for the mean of a collection)."""
    np = numpy()
    total: Vector = np.zeros(codes.shape[1], dtype=np.float32)
    for start in range(0, codes.shape[0], PRODUCT_ROWS):
        rows = codes[start : start + PRODUCT_ROWS].astype(np.float32)
        total += np.asarray(scales[start : start + PRODUCT_ROWS], dtype=np.float32) @ rows
    return total


def to_blobs(matrix: Matrix, windows: Sequence[Matrix | None] | None = None) -> list[bytes]:
    """One blob per row of ``matrix``, each ``scale (float32 LE) + codes (int8)``: ``4 + d``
    bytes; with ``windows``, row ``i``'s blob is followed by one such vector for each row
    of ``windows[i]`` (none when it is ``None``)."""
    codes, scales = quantize_int8(matrix)
    le_scales = scales.astype("<f4")
    blobs = [le_scales[i].tobytes() + codes[i].tobytes() for i in range(codes.shape[0])]
    if windows is None:
        return blobs
    if len(windows) != len(blobs):
        raise ValueError(f"{len(windows)} window matrices for {len(blobs)} vectors")
    return [
        blob if more is None else blob + b"".join(to_blobs(more)) for blob, more in zip(blobs, windows, strict=True)
    ]


def to_blob(vector: Vector) -> bytes:
    """One vector as :func:`to_blobs` writes each row."""
    np = numpy()
    return to_blobs(np.asarray(vector, dtype=np.float32)[None, :])[0]


def from_blob(blob: bytes, dimensions: int) -> tuple[Codes, float]:
    """``(codes, scale)`` of a blob written by :func:`to_blob`."""
    np = numpy()
    own = _own(blob, SCALE_BYTES + dimensions)
    scale = float(np.frombuffer(own[:SCALE_BYTES], dtype="<f4")[0])
    codes: Codes = np.frombuffer(own[SCALE_BYTES:], dtype=np.int8)
    return codes, scale


def stack_blobs(blobs: Sequence[bytes], dimensions: int) -> tuple[Codes, Scales]:
    """Many blobs' own vectors (each one's first) as one ``(codes, scales)`` pair, ready
    for :func:`int8_scores`."""
    codes, scales, _ = stack_with_windows(blobs, dimensions)
    return codes, scales


def stack_with_windows(blobs: Sequence[bytes], dimensions: int) -> tuple[Codes, Scales, Windows | None]:
    """:func:`stack_blobs`, and the window vectors some of the blobs carry after their own
    (:func:`to_blobs`) as ``(owners, codes, scales)``, ``owners[j]`` the index in ``blobs``
    of window ``j``'s record; ``None`` when none does. One join of the blobs when every
    one is a single vector, as nearly every record is."""
    width = SCALE_BYTES + dimensions
    raw = b"".join(blobs)
    if len(raw) == width * len(blobs):
        return (*_table(raw, len(blobs), width), None)
    firsts, owners, parts = [], [], []
    for i, blob in enumerate(blobs):
        firsts.append(_own(blob, width))
        if len(blob) > width:
            owners += [i] * (len(blob) // width - 1)
            parts.append(blob[width:])
    codes, scales = _table(b"".join(firsts), len(blobs), width)
    extra = b"".join(parts)
    window_codes, window_scales = _table(extra, len(owners), width)
    return codes, scales, (owners, window_codes, window_scales)


def _own(blob: bytes, width: int) -> bytes:
    """A blob's own vector (its first ``width`` bytes), after checking it is whole: one
    vector, or one and its windows'."""
    if len(blob) < width or len(blob) % width:
        raise EmbedderError(f"a stored vector has {len(blob)} bytes, not {width} (or a multiple, with its windows)")
    return blob[:width]


def _table(raw: bytes, count: int, width: int) -> tuple[Codes, Scales]:
    np = numpy()
    if len(raw) != width * count:
        raise EmbedderError(f"stored vectors are not all {width} bytes long")
    table = np.frombuffer(raw, dtype=np.uint8).reshape(count, width)
    scales: Scales = table[:, :SCALE_BYTES].copy().view("<f4").reshape(-1).astype(np.float32)
    codes: Codes = table[:, SCALE_BYTES:].view(np.int8)
    return codes, scales


__all__ = [
    "dequantize_int8",
    "from_blob",
    "int8_cosines",
    "int8_scores",
    "quantize_int8",
    "scaled_sum",
    "stack_blobs",
    "stack_with_windows",
    "to_blob",
    "to_blobs",
]
