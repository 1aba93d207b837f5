"""The default model's query map: what the package ships, and how a query is moved."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.optional import needs_extra

pytest.importorskip("numpy", reason=needs_extra("semantic"))

import numpy as np

from memory_admin import tuning
from memory_admin.embed import DEFAULT_MODEL_ID
from memory_admin.embed.protocol import EmbedderError
from memory_admin.embed.query_map import map_path, map_query, query_map
from memory_admin.errors import MemoryStoreError


@pytest.fixture(autouse=True)
def fresh_maps() -> Iterator[None]:
    query_map.cache_clear()
    yield
    query_map.cache_clear()


def test_the_default_model_ships_a_square_finite_map() -> None:
    path = map_path(DEFAULT_MODEL_ID)
    assert path is not None and path.is_file()
    matrix = query_map(DEFAULT_MODEL_ID)
    assert matrix.shape == (384, 384) and matrix.dtype == np.float32
    assert np.isfinite(matrix).all()
    assert 0.1 < float(np.linalg.norm(matrix)) < 100, "a real move, short of swamping the query"
    assert map_path("hashing-v1:384") is None and query_map("hashing-v1:384") is None


def test_a_query_is_moved_to_unit_length_and_only_for_its_model(monkeypatch: pytest.MonkeyPatch) -> None:
    vector = np.random.default_rng(3).standard_normal(384).astype(np.float32)
    vector /= np.linalg.norm(vector)
    moved = map_query(DEFAULT_MODEL_ID, vector)
    expected = vector + query_map(DEFAULT_MODEL_ID) @ vector
    np.testing.assert_allclose(moved, expected / np.linalg.norm(expected), atol=1e-6)
    assert abs(float(np.linalg.norm(moved)) - 1.0) < 1e-5
    assert 0.3 < float(moved @ vector) < 0.9999, "moved, not turned away"
    assert map_query("hashing-v1:384", vector) is vector
    monkeypatch.setattr(tuning, "QUERY_MAP", False)
    assert map_query(DEFAULT_MODEL_ID, vector) is vector
    matrix = np.eye(384, dtype=np.float32)  # an explicit map is used even with the setting off (the bench's)
    np.testing.assert_allclose(map_query(DEFAULT_MODEL_ID, vector, matrix), vector, atol=1e-6)


@pytest.mark.parametrize(
    "content", [np.zeros((384, 12), dtype=np.float16), np.full((384, 384), np.nan, dtype=np.float32), None]
)
def test_a_damaged_map_is_a_typed_error_naming_the_file(
    content: np.ndarray | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "map.npy"
    if content is None:
        path.write_bytes(b"not a numpy file")
    else:
        np.save(path, content)
    monkeypatch.setattr("memory_admin.embed.query_map.map_path", lambda model_id: path)
    with pytest.raises(EmbedderError, match="map") as raised:
        map_query(DEFAULT_MODEL_ID, np.ones(384, dtype=np.float32))
    assert isinstance(raised.value, MemoryStoreError) and str(path) in str(raised.value)
