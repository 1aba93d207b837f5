"""int8 storage of real embeddings: bytes, round trips and the cosine error."""

from __future__ import annotations

import pytest

from tests.support.optional import needs_extra

pytest.importorskip("numpy", reason=needs_extra("semantic"))

import numpy as np

from memory_admin.embed import (
    EmbedderError,
    OnnxEmbedder,
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

TEXTS = [
    "Caroline moved from Sweden four years ago",
    "Melanie ran a charity race for mental health",
    "Jon lost his job as a banker and opened a dance studio",
    "Gina's clothing store launched an online shop",
    "John wants to run for office to improve schools",
    "Tim is writing a fantasy novel set in Middle-earth",
    "Audrey adopted a third dog named Pepper",
    "Andrew started hiking with his girlfriend on weekends",
    "Evan bought a new Prius after the old one broke down",
    "Sam was told by the doctor to lose weight",
] * 3


@pytest.fixture(scope="module")
def vectors(embedder: OnnxEmbedder) -> np.ndarray:
    return embedder.embed_documents([f"{t} ({i})" for i, t in enumerate(TEXTS)])


def test_the_cosine_error_of_int8_vectors_is_small(embedder: OnnxEmbedder, vectors: np.ndarray) -> None:
    codes, scales = quantize_int8(vectors)
    assert codes.dtype == np.int8 and scales.dtype == np.float32
    queries = embedder.embed_queries(["Who moved from abroad?", "Who owns a pet?", "What car does Evan drive?"])
    exact = vectors @ queries.T
    approx = np.stack([int8_scores(q, codes, scales) for q in queries], axis=1)
    error = np.abs(exact - approx)
    assert error.mean() < 0.002
    assert error.max() < 0.01
    # the same best match for every query (each text is stored three times, numbered, so
    # its copies tie within the int8 error: the best match is a text, not one copy)
    assert [TEXTS[i] for i in exact.argmax(axis=0)] == [TEXTS[i] for i in approx.argmax(axis=0)]
    # and against itself a stored vector keeps a cosine of ~1
    self_cosine = (dequantize_int8(codes, scales) * vectors).sum(axis=1)
    assert np.abs(self_cosine - 1).max() < 0.005


def test_a_blob_is_4_plus_d_bytes_and_round_trips(vectors: np.ndarray) -> None:
    blob = to_blob(vectors[0])
    assert len(blob) == 4 + 384
    codes, scale = from_blob(blob, 384)
    np.testing.assert_allclose(codes.astype(np.float32) * scale, vectors[0], atol=scale / 2 + 1e-7)
    with pytest.raises(EmbedderError, match="bytes"):
        from_blob(blob[:-1], 384)


def test_stacked_blobs_score_like_the_quantized_matrix(vectors: np.ndarray) -> None:
    codes, scales = stack_blobs([to_blob(v) for v in vectors], 384)
    direct_codes, direct_scales = quantize_int8(vectors)
    np.testing.assert_array_equal(codes, direct_codes)
    np.testing.assert_allclose(scales, direct_scales)
    np.testing.assert_allclose(int8_scores(vectors[3], codes, scales), int8_scores(vectors[3], *quantize_int8(vectors)))


def test_a_blob_may_carry_window_vectors_after_its_own(vectors: np.ndarray) -> None:
    """A long record's blob is its own vector, then one per window: every reader of the
    record's vector reads the first, and stack_with_windows the rest, with their owners."""
    blobs = to_blobs(vectors[:3], [None, vectors[3:6], vectors[6:7]])
    assert [len(blob) for blob in blobs] == [388, 4 * 388, 2 * 388]
    assert blobs[0] == to_blob(vectors[0]) and blobs[1].startswith(to_blob(vectors[1]))
    codes, scales = stack_blobs(blobs, 384)
    np.testing.assert_array_equal(codes, quantize_int8(vectors[:3])[0])
    np.testing.assert_allclose(scales, quantize_int8(vectors[:3])[1])
    np.testing.assert_array_equal(from_blob(blobs[1], 384)[0], quantize_int8(vectors[1:2])[0][0])
    _, _, windows = stack_with_windows(blobs, 384)
    assert windows is not None
    owners, window_codes, window_scales = windows
    assert owners == [1, 1, 1, 2]
    np.testing.assert_array_equal(window_codes, quantize_int8(vectors[[3, 4, 5, 6]])[0])
    np.testing.assert_allclose(window_scales, quantize_int8(vectors[[3, 4, 5, 6]])[1])
    assert stack_with_windows(blobs[:1], 384)[2] is None, "a record within one window carries none"
    for torn in (blobs[1][:-1], blobs[1] + b"\0", blobs[0][:-1]):
        with pytest.raises(EmbedderError, match="bytes"):
            stack_blobs([blobs[0], torn], 384)
        with pytest.raises(EmbedderError, match="bytes"):
            from_blob(torn, 384)
    with pytest.raises(ValueError, match="window matrices"):
        to_blobs(vectors[:2], [None])


def test_a_zero_vector_survives() -> None:
    codes, scales = quantize_int8(np.zeros((1, 8), dtype=np.float32))
    assert not codes.any() and scales[0] == 1.0


def test_centred_scores_are_the_cosine_measured_from_the_centre(embedder: OnnxEmbedder, vectors: np.ndarray) -> None:
    codes, scales = quantize_int8(vectors)
    stored = dequantize_int8(codes, scales).astype(np.float64)
    mean = stored.mean(axis=0)
    np.testing.assert_allclose(scaled_sum(codes, scales), stored.sum(axis=0), rtol=1e-4, atol=1e-5)
    for query in embedder.embed_queries(["Who moved from abroad?", "What car does Evan drive?"]):
        shifted = stored - mean
        expected = shifted @ (query - mean) / (np.linalg.norm(shifted, axis=1) * np.linalg.norm(query - mean))
        got = int8_scores(query, codes, scales, mean.astype(np.float32))
        np.testing.assert_allclose(got, expected, atol=2e-5)
        assert not np.allclose(got, int8_scores(query, codes, scales), atol=0.05), "the centre changes the scores"


def test_a_second_query_s_cosines_come_from_the_same_pass(embedder: OnnxEmbedder, vectors: np.ndarray) -> None:
    from memory_admin.embed.quantize import int8_cosines

    codes, scales = quantize_int8(vectors)
    mean = dequantize_int8(codes, scales).mean(axis=0).astype(np.float32)
    first, second = embedder.embed_queries(["Who moved from abroad?", "What car does Evan drive?"])
    for centre in (None, mean):
        plain, centred, own = int8_cosines(first, codes, scales, centre, second)
        np.testing.assert_allclose(plain, int8_scores(first, codes, scales), atol=1e-6)
        np.testing.assert_allclose(centred, int8_scores(first, codes, scales, centre), atol=1e-6)
        np.testing.assert_allclose(own, int8_scores(second, codes, scales), atol=1e-6)
        alone = int8_cosines(first, codes, scales, centre)
        np.testing.assert_allclose(alone[2], plain, atol=1e-6)  # without a second query: the first's again
