"""A learned map from a question's vector towards the statements that answer it.

A question and the record that answers it are worded apart ("What activities does
Melanie partake in?" against "Melanie signed up for a pottery class"), and a sentence
encoder trained on pairs of like sentences puts them less close than they belong. For the
default model the store moves each query's vector by one linear map, ``q + M·q``
renormalised, before it scores records by meaning. ``M`` (384 × 384, float16, shipped in
``data/``) is fitted by ``python -m bench.locomo … --folds --train-query-map`` on LoCoMo's
development split only: questions against the records that hold their evidence, every
other record of the conversation a negative, with a ridge penalty pulling ``M`` towards
nothing (:data:`~memory_admin.tuning.QUERY_MAP_PENALTY`, picked out of fold).

Only the query moves: stored vectors, and record-to-record similarity, are the model's
own, so turning the map off (:data:`~memory_admin.tuning.QUERY_MAP`) needs no
re-embedding. Another model has no map and is left as it is.
"""

from __future__ import annotations

import functools
import importlib.resources
from pathlib import Path
from typing import Any

from memory_admin import tuning
from memory_admin.embed.local import DEFAULT_MODEL_ID
from memory_admin.embed.protocol import EmbedderError, Vector, numpy

MAPS = {DEFAULT_MODEL_ID: "all-MiniLM-L6-v2.query-map.npy"}
"""Model id → its map's file in ``memory_admin/embed/data``."""


def map_path(model_id: str) -> Path | None:
    """Where the map of ``model_id``'s queries is packaged, if it has one."""
    name = MAPS.get(model_id)
    return Path(str(importlib.resources.files("memory_admin.embed") / "data" / name)) if name else None


@functools.cache
def query_map(model_id: str) -> Any | None:
    """``M`` for ``model_id`` as float32 (read once), or ``None`` for a model without one."""
    path = map_path(model_id)
    if path is None:
        return None
    np = numpy()
    try:
        matrix = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as error:
        raise EmbedderError(f"the query map of {model_id} cannot be read from {path}: {error}") from error
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1] or not np.isfinite(matrix).all():
        raise EmbedderError(f"{path} is not a square query map of finite numbers: reinstall the package")
    return np.ascontiguousarray(matrix, dtype=np.float32)


def map_query(model_id: str, vector: Vector, matrix: Any | None = None) -> Vector:
    """``vector`` moved by ``matrix`` (by default the shipped map of ``model_id``, when
    :data:`~memory_admin.tuning.QUERY_MAP` is on), at unit length; else ``vector``."""
    if matrix is None:
        if not tuning.QUERY_MAP:
            return vector
        matrix = query_map(model_id)
        if matrix is None:
            return vector
    np = numpy()
    query = np.asarray(vector, dtype=np.float32)
    if matrix.shape != (len(query), len(query)):
        raise EmbedderError(f"{model_id}: a {matrix.shape[0]}-dimension query map for a {len(query)}-dimension query")
    moved = query + matrix @ query
    length = float(np.linalg.norm(moved))
    unit: Vector = moved / length if length > 0 else query
    return unit
