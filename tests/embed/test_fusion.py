"""Score fusion: z-score / min-max with contributions, and reciprocal rank."""

from __future__ import annotations

import pytest

from memory_admin.embed import rrf_fusion, zscore_fusion


def test_a_hit_both_sides_like_wins() -> None:
    keyword = {"a": 9.0, "b": 4.0}
    semantic = {"b": 0.8, "c": 0.7, "a": 0.3, "d": 0.1}
    fused = zscore_fusion(keyword, semantic, keyword_weight=0.3)
    assert fused[0].key == "b"
    assert {hit.key for hit in fused} == {"a", "b", "c", "d"}
    for hit in fused:
        assert hit.score == pytest.approx(hit.keyword + hit.semantic)
    by_key = {hit.key: hit for hit in fused}
    assert by_key["c"].keyword_raw is None and by_key["c"].semantic_raw == 0.7


def test_the_weight_moves_the_balance() -> None:
    keyword = {"lexical": 10.0}
    semantic = {"meaning": 0.9, "lexical": 0.2, "other": 0.1}
    assert zscore_fusion(keyword, semantic, keyword_weight=0.9)[0].key == "lexical"
    assert zscore_fusion(keyword, semantic, keyword_weight=0.1)[0].key == "meaning"
    assert [h.key for h in zscore_fusion({}, semantic)] == ["meaning", "lexical", "other"]
    assert [h.key for h in zscore_fusion(keyword, {})] == ["lexical"]
    assert zscore_fusion({}, {}) == []


def test_minmax_and_limit() -> None:
    fused = zscore_fusion({"a": 2.0, "b": 1.0}, {"a": 0.5, "b": 0.4, "c": 0.3}, method="minmax", limit=2)
    assert [h.key for h in fused] == ["a", "b"]
    assert fused[0].score == pytest.approx(1.0)


def test_a_semantic_score_missing_takes_that_sides_floor() -> None:
    fused = zscore_fusion({"x": 1.0}, {"a": 0.9, "b": 0.1}, keyword_weight=0.0)
    by_key = {h.key: h for h in fused}
    assert by_key["x"].semantic == pytest.approx(by_key["b"].semantic)


def test_rrf() -> None:
    fused = rrf_fusion(["a", "b", "c"], ["c", "a", "d"], k=60)
    assert [key for key, _ in fused][:2] == ["a", "c"]
    assert fused[0][1] == pytest.approx(0.5 / 61 + 0.5 / 62)
    assert len(rrf_fusion(["a"], ["b"], limit=1)) == 1


def test_a_strong_hit_lifts_what_was_stated_with_it() -> None:
    keyword = {"meeting": 8.0, "venue": 1.0, "elsewhere": 1.0}
    semantic = {"meeting": 0.9, "venue": 0.4, "elsewhere": 0.4, "noise": 0.1}
    contexts = {"meeting": ("dana", 1), "venue": ("dana", 1), "elsewhere": ("dana", 2), "noise": ("dana", 3)}
    plain = zscore_fusion(keyword, semantic)
    assert [h.key for h in plain][1:3] == ["venue", "elsewhere"], "a tie without contexts keeps the semantic order"
    lifted = zscore_fusion(keyword, semantic, contexts=contexts, context_weight=0.2)
    by_key = {hit.key: hit for hit in lifted}
    assert [h.key for h in lifted][:2] == ["meeting", "venue"]
    assert by_key["venue"].context == pytest.approx(0.2 * (by_key["meeting"].keyword + by_key["meeting"].semantic))
    assert by_key["venue"].score > by_key["elsewhere"].score
    for hit in lifted:
        assert hit.score == pytest.approx(hit.keyword + hit.semantic + hit.context)


def test_one_shared_context_changes_no_order() -> None:
    keyword = {"a": 3.0, "b": 2.0, "c": 1.0}
    semantic = {"c": 0.9, "b": 0.5, "d": 0.2}
    same = {key: ("scope", 7) for key in "abcd"}
    assert [h.key for h in zscore_fusion(keyword, semantic, contexts=same)] == [
        h.key for h in zscore_fusion(keyword, semantic)
    ]
    assert [h.key for h in zscore_fusion(keyword, semantic, contexts=same, context_weight=0.0)] == [
        h.key for h in zscore_fusion(keyword, semantic)
    ]
