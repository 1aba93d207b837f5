"""The default model multiplied as int8: the rewritten graph, its vectors, its cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.optional import needs_extra

pytest.importorskip("numpy", reason=needs_extra("semantic"))

import numpy as np

from memory_admin.embed import EmbedderError, OnnxEmbedder, int8_graph
from memory_admin.embed.int8_graph import cached_int8_matmuls, int8_matmuls

onnx = pytest.importorskip("onnx", reason=needs_extra("semantic"))

TEXTS = [
    "Dana is a staff engineer on the payments team",
    "Caroline went to an LGBTQ support group on Sunday",
    "Melanie ran a charity race for mental health",
    "Where does Dana work?",
]


@pytest.fixture(scope="module")
def model_path(embedder: OnnxEmbedder) -> Path:
    return Path(embedder._model_path())


def test_every_weight_matrix_is_multiplied_as_int8(model_path: Path) -> None:
    before = onnx.load(str(model_path))
    after = onnx.load_from_string(int8_matmuls(model_path))
    ops = [node.op_type for node in after.graph.node]
    float_weights = [
        init for init in after.graph.initializer if init.data_type == onnx.TensorProto.FLOAT and len(init.dims) == 2
    ]
    assert ops.count("DynamicQuantizeMatMul") == 36, "every layer's six weight products"
    assert ops.count("MatMul") == 12, "left as they were: attention's products of activations"
    matrices = [i.name for i in float_weights if min(i.dims) > 1 and i.dims[0] * i.dims[1] > 10_000]  # not scales
    assert not matrices, "no weight matrix turned back into floats"
    size = lambda model: sum(len(init.raw_data) for init in model.graph.initializer)  # noqa: E731
    assert size(after) < size(before) * 1.05, "the same codes, a few scales more"


def test_its_vectors_agree_with_the_float_products(embedder: OnnxEmbedder, model_path: Path) -> None:
    floats = OnnxEmbedder(model_path, embedder._tokenizer_path, model_id="floats", dimensions=384)
    cosines = (embedder.embed_documents(TEXTS) * floats.embed_documents(TEXTS)).sum(axis=1)
    assert cosines.min() > 0.98
    assert cosines.max() < 0.99999, "it is a different computation, not the same one"


def test_a_text_s_vector_does_not_depend_on_its_companions(embedder: OnnxEmbedder) -> None:
    together = embedder.embed_documents([*TEXTS, "a much longer text " * 20])
    alone = np.stack([embedder.embed_documents([text])[0] for text in TEXTS])
    np.testing.assert_array_equal(together[: len(TEXTS)], alone)
    np.testing.assert_array_equal(embedder.embed_query(TEXTS[3]), embedder.embed_documents([TEXTS[3]])[0])


def test_the_rewritten_graph_is_cached_for_the_next_process(
    model_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORY_ADMIN_CACHE", str(tmp_path / "cache"))
    first = cached_int8_matmuls(model_path)
    assert [p.name.endswith(f".int8-v{int8_graph.REWRITE_VERSION}.onnx") for p in (tmp_path / "cache").iterdir()] == [
        True
    ]

    def no_rewrite(path: Path) -> bytes:
        raise AssertionError("the cached graph was not used")

    monkeypatch.setattr(int8_graph, "int8_matmuls", no_rewrite)
    assert cached_int8_matmuls(model_path) == first


def test_a_cache_folder_that_cannot_be_written_is_no_error(
    model_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocked = tmp_path / "a file, not a folder"
    blocked.write_text("")
    monkeypatch.setenv("MEMORY_ADMIN_CACHE", str(blocked / "cache"))
    assert cached_int8_matmuls(model_path) == int8_matmuls(model_path)


def test_a_graph_without_int8_weights_is_refused(tmp_path: Path) -> None:
    helper = onnx.helper
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "plain",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1])],
    )
    path = tmp_path / "plain.onnx"
    onnx.save(helper.make_model(graph), str(path))
    with pytest.raises(EmbedderError, match="no int8 weights"):
        int8_matmuls(path)
