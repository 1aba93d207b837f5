"""The default local embedder, on the real packaged model."""

from __future__ import annotations

import asyncio

import pytest

from tests.support.optional import needs_extra

pytest.importorskip("numpy", reason=needs_extra("semantic"))

import numpy as np

from memory_admin.embed import DEFAULT_MODEL_ID, Embedder, OnnxEmbedder, default_embedder

FACTS = [
    "Dana is a staff engineer on the payments team",
    "Caroline went to an LGBTQ support group on 7 May 2023",
    "Melanie painted a sunrise over a lake last year",
    "The user prefers dark roast coffee in the morning",
]


def test_it_satisfies_the_protocol_and_loads_lazily() -> None:
    model = default_embedder()
    assert isinstance(model, Embedder)
    assert not model.loaded  # constructing touches no file
    assert model.model_id == DEFAULT_MODEL_ID
    assert model.dimensions == 384


def test_vectors_are_unit_float32_rows_in_input_order(embedder: OnnxEmbedder) -> None:
    vectors = embedder.embed_documents(FACTS)
    assert vectors.shape == (4, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    one_by_one = np.stack([embedder.embed_documents([text])[0] for text in reversed(FACTS)])[::-1]
    np.testing.assert_allclose(vectors, one_by_one, atol=1e-5)  # batching and padding change nothing


def test_a_question_finds_its_fact_by_meaning(embedder: OnnxEmbedder) -> None:
    # no word of the question but the name is in the fact: the lexical miss keyword search has
    vectors = embedder.embed_documents(FACTS)
    scores = vectors @ embedder.embed_query("Where does Dana work?")
    assert int(np.argmax(scores)) == 0
    assert int(np.argmax(vectors @ embedder.embed_query("What does the user like to drink?"))) == 3


def test_batches_larger_than_the_batch_size(embedder: OnnxEmbedder) -> None:
    texts = [f"fact number {i} about {FACTS[i % 4]}" for i in range(embedder.batch_size * 2 + 3)]
    vectors = embedder.embed_documents(texts)
    assert vectors.shape == (len(texts), 384)
    np.testing.assert_allclose(vectors[-1], embedder.embed_documents([texts[-1]])[0], atol=1e-5)


def test_empty_input_and_a_bare_string(embedder: OnnxEmbedder) -> None:
    assert embedder.embed_documents([]).shape == (0, 384)
    with pytest.raises(TypeError, match="embed_query"):
        embedder.embed_documents("one string")  # type: ignore[arg-type]


def test_a_long_text_is_read_whole_in_windows(embedder: OnnxEmbedder) -> None:
    """Past the model's 256 tokens a text runs in windows and every token counts: what a
    long record says after its first window still moves it by meaning (truncated, it would not)."""
    filler = " ".join(f"The notes for week {week} cover the budget review and the hiring plan." for week in range(20))
    text = f"{filler} Dana keeps her passport in the blue folder in the hall cupboard."
    embedder.load()
    encoding = embedder._tokenizer.encode(text)
    assert len(encoding.overflowing) == 1, "the last sentence falls in a second window"
    whole, filler_only = embedder.embed_documents([text, filler])
    first = embedder._hidden(encoding.ids).mean(axis=0)
    truncated = first / np.linalg.norm(first)  # what the first window alone says
    query = embedder.embed_query("Where does Dana keep her passport?")
    assert whole @ query > truncated @ query + 0.05, "the second window counts"
    assert whole @ query > filler_only @ query + 0.05
    # every token weighs the same: the mean over both windows' states, not of their two means
    states = np.concatenate([embedder._hidden(window.ids) for window in (encoding, *encoding.overflowing)])
    pooled = states.mean(axis=0)
    np.testing.assert_allclose(whole, pooled / np.linalg.norm(pooled), atol=1e-5)
    huge = embedder.embed_documents(["word " * 2000])  # many windows: still one unit row
    assert huge.shape == (1, 384) and abs(float(np.linalg.norm(huge[0])) - 1.0) < 1e-5
    # a query is read to its first window: a search's time does not grow with a pasted page
    np.testing.assert_allclose(embedder.embed_query(text), truncated, atol=1e-5)
    np.testing.assert_allclose(embedder.embed_queries([text, filler])[0], truncated, atol=1e-5)


def test_a_batch_of_long_and_short_texts_gives_each_its_own_vector(embedder: OnnxEmbedder) -> None:
    """The windows of a batch run side by side and are pooled back per text, in order."""
    long = " ".join(f"Week {week}: the budget review moved and the hiring plan grew." for week in range(60))
    texts = [FACTS[0], long, FACTS[1], long[: len(long) // 2], FACTS[2]]
    embedder.load()
    assert [len(embedder._windows(text, "document")) for text in texts] == [1, 4, 1, 2, 1]
    together = embedder.embed_documents(texts)
    alone = np.stack([embedder.embed_documents([text])[0] for text in texts])
    np.testing.assert_allclose(together, alone, atol=1e-5)
    assert not np.allclose(together[1], together[3], atol=1e-3), "each long text its own windows"


def test_a_long_document_s_windows_come_with_its_vector(embedder: OnnxEmbedder) -> None:
    """What a store writes: each text's vector, as embed_documents gives it, and a unit
    vector per window (the mean of its tokens' states) for a text the model reads in more
    than one; a text within one window has none."""
    long = " ".join(f"Week {week}: the budget review moved and the hiring plan grew." for week in range(60))
    texts = [FACTS[0], long, FACTS[1], long[: len(long) // 2]]
    embedder.load()
    matrix, windows = embedder.embed_document_windows(texts)
    np.testing.assert_allclose(matrix, embedder.embed_documents(texts), atol=1e-6)
    assert windows[0] is None and windows[2] is None
    assert windows[1] is not None and windows[3] is not None
    assert [windows[1].shape, windows[3].shape] == [(4, 384), (2, 384)]
    np.testing.assert_allclose(np.linalg.norm(windows[1], axis=1), 1.0, atol=1e-5)
    for ids, row in zip(embedder._windows(long, "document"), windows[1], strict=True):
        mean = embedder._hidden(ids).mean(axis=0)
        np.testing.assert_allclose(row, mean / np.linalg.norm(mean), atol=1e-5)
    assert not np.allclose(windows[1][0], windows[1][1], atol=1e-3)
    empty, none = embedder.embed_document_windows([])
    assert empty.shape == (0, 384) and none == []
    with pytest.raises(TypeError):
        embedder.embed_document_windows("one string")


def test_a_text_within_one_window_runs_once(embedder: OnnxEmbedder) -> None:
    embedder.load()
    encoding = embedder._tokenizer.encode(FACTS[0])
    assert not encoding.overflowing
    pooled = embedder._hidden(encoding.ids).mean(axis=0)
    np.testing.assert_allclose(embedder.embed_documents([FACTS[0]])[0], pooled / np.linalg.norm(pooled), atol=1e-6)


def test_the_async_twins_give_the_same_vectors(embedder: OnnxEmbedder) -> None:
    async def both() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return (
            await embedder.aembed_documents(FACTS[:2]),
            await embedder.aembed_queries(["Where does Dana work?"]),
            await embedder.aembed_query("Where does Dana work?"),
        )

    documents, queries, query = asyncio.run(both())
    np.testing.assert_allclose(documents, embedder.embed_documents(FACTS[:2]), atol=1e-6)
    np.testing.assert_allclose(queries[0], query, atol=1e-6)


def test_prefixes_apply_to_their_side_only(embedder: OnnxEmbedder) -> None:
    prefixed = OnnxEmbedder(
        embedder._model_path,
        embedder._tokenizer_path,
        model_id="prefixed",
        dimensions=384,
        query_prefix="query: ",
        document_prefix="passage: ",
        graph=embedder._graph,
    )
    text = FACTS[0]
    np.testing.assert_allclose(prefixed.embed_query(text), embedder.embed_query("query: " + text), atol=1e-5)
    np.testing.assert_allclose(
        prefixed.embed_documents([text])[0], embedder.embed_documents(["passage: " + text])[0], atol=1e-5
    )
