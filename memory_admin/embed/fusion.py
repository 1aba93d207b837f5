"""Fusing keyword and semantic hits: score-normalised (default) and reciprocal rank.

Pure Python, no numpy: the store can fuse whatever its two searches return.

:func:`zscore_fusion` standardises each signal over the candidate set (the union of
both searches' candidates) and adds them with ``keyword_weight`` and ``1 -
keyword_weight``. A candidate the keyword search did not match scores 0 there (BM25 of
no shared word); one the semantic side did not score takes that side's lowest score.
Each fused hit keeps both contributions, so a surface can show why it ranked.

:func:`rrf_fusion` is what most libraries ship (k = 60, equal weights): the comparison
row of the benchmark. The weights are in :mod:`memory_admin.tuning`.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

from memory_admin import tuning

K = TypeVar("K", bound=Hashable)

RRF_K = 60
"""Reciprocal rank fusion's constant as most libraries ship it (the comparison row)."""


@dataclass(frozen=True)
class FusedHit(Generic[K]):
    key: K
    score: float
    keyword: float
    """The keyword side's weighted, normalised contribution (0 when unmatched and the scale is flat)."""
    semantic: float
    keyword_raw: float | None
    semantic_raw: float | None
    context: float = 0.0
    """What its context added (:data:`CONTEXT_WEIGHT` of the best fused score stated with it)."""


def _standardise(values: list[float], method: Literal["zscore", "minmax"]) -> list[float]:
    if not values:
        return []
    if method == "minmax":
        low, high = min(values), max(values)
        span = high - low
        return [(v - low) / span if span > 1e-12 else 0.0 for v in values]
    mean = math.fsum(values) / len(values)
    deviation = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / len(values))
    return [(v - mean) / deviation if deviation > 1e-12 else 0.0 for v in values]


def zscore_fusion(
    keyword: Mapping[K, float],
    semantic: Mapping[K, float],
    *,
    keyword_weight: float = tuning.KEYWORD_WEIGHT,
    method: Literal["zscore", "minmax"] = "zscore",
    contexts: Mapping[K, Hashable] | None = None,
    context_weight: float = tuning.CONTEXT_WEIGHT,
    limit: int | None = None,
) -> list[FusedHit[K]]:
    """Candidates of both sides ranked by ``w·norm(keyword) + (1-w)·norm(semantic)``.

    ``keyword`` holds higher-is-better scores (BM25), ``semantic`` cosine similarities.
    With ``contexts`` (a candidate's scope and day), each candidate then gains
    ``context_weight`` times the best fused score in its context (its own included, so
    when every candidate shares one context the order is unchanged).
    Ties keep the semantic side's order, then the keyword side's, then first-seen.
    """
    keys: list[K] = list(dict.fromkeys([*semantic, *keyword]))
    if not keys:
        return []
    floor = min(semantic.values()) if semantic else 0.0
    raw_kw = [keyword.get(key, 0.0) for key in keys]
    raw_sem = [semantic.get(key, floor) for key in keys]
    kw = _standardise(raw_kw, method)
    sem = _standardise(raw_sem, method)
    fused = [keyword_weight * k + (1 - keyword_weight) * s for k, s in zip(kw, sem, strict=True)]
    lift = context_lift(fused, [contexts.get(key) for key in keys], context_weight) if contexts else [0.0] * len(keys)
    hits = [
        FusedHit(
            key=key,
            score=f + c,
            keyword=keyword_weight * k,
            semantic=(1 - keyword_weight) * s,
            keyword_raw=keyword.get(key),
            semantic_raw=semantic.get(key),
            context=c,
        )
        for key, k, s, f, c in zip(keys, kw, sem, fused, lift, strict=True)
    ]
    order = sorted(range(len(hits)), key=lambda i: (-hits[i].score, i))
    ranked = [hits[i] for i in order]
    return ranked if limit is None else ranked[:limit]


def context_lift(scores: Sequence[float], contexts: Sequence[Hashable | None], weight: float) -> list[float]:
    """What each candidate gains from where it was stated: ``weight`` times the best score
    among the candidates of its context (its own included; 0 without a context). What was
    said together is recalled together; when every candidate shares one context, the
    order is unchanged."""
    best: dict[Hashable, float] = {}
    for score, where in zip(scores, contexts, strict=True):
        if where is not None and score > best.get(where, -math.inf):
            best[where] = score
    return [weight * best[where] if where is not None else 0.0 for where in contexts]


def length_prior(lengths: Sequence[int | None], weight: float) -> list[float]:
    """What each candidate gains (or loses) for how much it says: ``weight`` times the
    z-score of the log of its length (characters, plus one) among the candidates whose
    length is known; 0 for one whose length is not, and for all when they are one length.

    A prior, not a match: BM25 normalises length away and a short text's embedding sits
    close to almost anything, so a record of a few words ("ok, thanks!") reaches the top
    of a search more often than it answers one."""
    if not weight:
        return [0.0] * len(lengths)
    known = [math.log1p(n) for n in lengths if n is not None]
    z = iter(_standardise(known, "zscore"))
    return [weight * next(z) if n is not None else 0.0 for n in lengths]


def rrf_fusion(
    keyword: Sequence[K],
    semantic: Sequence[K],
    *,
    k: int = RRF_K,
    keyword_weight: float = 0.5,
    limit: int | None = None,
) -> list[tuple[K, float]]:
    """Reciprocal rank fusion of two ranked lists: ``Σ w / (k + rank)``, rank from 1."""
    scores: dict[K, float] = {}
    for weight, ranked in ((1 - keyword_weight, semantic), (keyword_weight, keyword)):
        for rank, key in enumerate(ranked, start=1):
            scores[key] = scores.get(key, 0.0) + weight / (k + rank)
    order = sorted(scores.items(), key=lambda item: -item[1])
    return order if limit is None else order[:limit]


__all__ = ["RRF_K", "FusedHit", "context_lift", "length_prior", "rrf_fusion", "zscore_fusion"]
