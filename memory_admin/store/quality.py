"""The ``quality`` search mode: a small learned ranker over what a fusion already computes.

A quality search gathers the candidates a hybrid search fuses — the best keyword matches
(BM25, their matched terms) and the closest records by meaning (the plain and the centred
cosine), each with where it was stated — describes each candidate by a few numbers
(:data:`FEATURES`, computed by :func:`features`), and orders them by a weighted sum of
those numbers, whose weights (:data:`~memory_admin.tuning.QUALITY_WEIGHTS`) were fitted by
``python -m bench.locomo … --train-quality`` on LoCoMo's development split only — one
question at a time, so the softmax of its candidates' sums leans towards its evidence —
and are shipped as those few numbers. Nothing is learned at run time and nothing
but what the store computed for the fusion is read, so a quality search costs about what
a hybrid one does.

The features are relative to the query's own candidates (z-scores, shares of the best,
reciprocal ranks), so weights fitted on one store's scores carry to another's. A
record's kind is not among them: every LoCoMo record is a fact, so no weight for it could
be learned there.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence

from memory_admin import tuning
from memory_admin.embed.fusion import length_prior
from memory_admin.store.named_time import NamedTime
from memory_admin.store.plan import Candidate, context_day
from memory_admin.store.vectors import Ranked, named_lift

FEATURES: tuple[str, ...] = (
    "keyword_z",
    "centred_z",
    "cosine_z",
    "keyword_share",
    "matched",
    "coverage",
    "keyword_rank",
    "semantic_rank",
    "context",
    "context_share",
    "age",
    "long_query_keyword",
    "long_query_semantic",
    "named_time",
    "agreement",
    "context_keyword",
    "context_semantic",
    "length",
)
"""What the ranker sees of a candidate, over the query's candidates (the union of both sides):

* ``keyword_z``, ``centred_z``, ``cosine_z`` — its BM25 (0 without a word in common), its
  cosine measured from the searched records' centre and its plain cosine (a candidate the
  semantic side did not bring takes that side's lowest), each as a z-score;
* ``keyword_share`` — its BM25 over the best; ``matched`` — 1 when it shares a word;
* ``coverage`` — how much of each matched query term's best part of a BM25 it holds,
  summed over terms and divided by the number of terms any candidate matched;
* ``keyword_rank``, ``semantic_rank`` — ``1 / (1 + rank)`` on each side (0 when absent);
* ``context`` — the best mean of ``keyword_z`` and ``centred_z`` among the candidates
  stated in its context (the same scope and day); ``context_share`` — the share of the
  candidates stated there;
* ``age`` — how far before the most recently stated candidate it was stated, as a share
  of the candidates' span of days (0 for the newest);
* ``long_query_keyword``, ``long_query_semantic`` — ``keyword_z`` and ``centred_z`` times
  the query's number of terms over ten (a long question leans on words differently);
* ``named_time`` — 1 when it was stated on a day the query names, or in a month it names
  (:mod:`~memory_admin.store.named_time`);
* ``agreement`` — ``keyword_z`` times ``centred_z``: high when both sides rank it well,
  negative when one side likes what the other does not;
* ``context_keyword``, ``context_semantic`` — the best ``keyword_z`` and the best
  ``centred_z`` among the candidates stated in its context, each on its own;
* ``length`` — the log of its length in characters as a z-score
  (:func:`~memory_admin.embed.fusion.length_prior` at weight 1; 0 when unknown).
"""


def _standardise(values: Sequence[float]) -> list[float]:
    mean = math.fsum(values) / len(values)
    deviation = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / len(values))
    return [(v - mean) / deviation if deviation > 1e-12 else 0.0 for v in values]


def _ranks(candidates: Sequence[Candidate]) -> dict[str, float]:
    return {c.id: 1.0 / (1 + rank) for rank, c in enumerate(candidates)}


def features(
    keyword: Sequence[Candidate], semantic: Sequence[Candidate], query_terms: int, named: NamedTime | None = None
) -> tuple[list[str], list[list[float]]]:
    """The candidates' ids (the semantic side's order, then the keyword side's new ones)
    and each one's :data:`FEATURES`, in that order."""
    ids = list(dict.fromkeys([*(c.id for c in semantic), *(c.id for c in keyword)]))
    if not ids:
        return [], []
    by_keyword = {c.id: c for c in keyword}
    by_meaning = {c.id: c for c in semantic}
    centred_floor = min((c.score for c in semantic), default=0.0)
    cosine_floor = min((c.cosine for c in semantic if c.cosine is not None), default=0.0)
    bm25 = [by_keyword[i].score if i in by_keyword else 0.0 for i in ids]
    centred = [by_meaning[i].score if i in by_meaning else centred_floor for i in ids]
    cosine = [cos if i in by_meaning and (cos := by_meaning[i].cosine) is not None else cosine_floor for i in ids]
    keyword_z, centred_z, cosine_z = _standardise(bm25), _standardise(centred), _standardise(cosine)
    best_bm25 = max(bm25) or 1.0
    best_part: dict[str, float] = {}
    for c in keyword:
        for term, part in (c.terms or {}).items():
            best_part[term] = max(best_part.get(term, 0.0), part)
    terms_matched = max(1, len(best_part))
    keyword_rank, semantic_rank = _ranks(keyword), _ranks(semantic)
    contexts: list[Hashable] = [
        (by_meaning[i].context if i in by_meaning else None) or (by_keyword[i].context if i in by_keyword else None)
        for i in ids
    ]
    blended = [(k + c) / 2 for k, c in zip(keyword_z, centred_z, strict=True)]
    best_in: dict[Hashable, float] = {}
    best_keyword_in: dict[Hashable, float] = {}
    best_semantic_in: dict[Hashable, float] = {}
    count_in: dict[Hashable, int] = {}
    for where, score, by_words, by_sense in zip(contexts, blended, keyword_z, centred_z, strict=True):
        best_in[where] = max(best_in.get(where, -math.inf), score)
        best_keyword_in[where] = max(best_keyword_in.get(where, -math.inf), by_words)
        best_semantic_in[where] = max(best_semantic_in.get(where, -math.inf), by_sense)
        count_in[where] = count_in.get(where, 0) + 1
    days = [context_day(where) for where in contexts]
    known = [day for day in days if day is not None]
    newest, span = (max(known), max(1, max(known) - min(known))) if known else (0, 1)
    length = query_terms / 10
    at = named_lift(contexts, named, 1.0)
    characters: dict[str, int] = {c.id: c.length for c in (*semantic, *keyword) if c.length is not None}
    says = length_prior([characters.get(i) for i in ids], 1.0)
    rows = []
    for n, record_id in enumerate(ids):
        found = by_keyword.get(record_id)
        parts: Mapping[str, float] = (found.terms or {}) if found is not None else {}
        day = days[n]
        coverage = math.fsum(part / best_part[term] for term, part in parts.items() if best_part.get(term))
        rows.append(
            [
                keyword_z[n],
                centred_z[n],
                cosine_z[n],
                bm25[n] / best_bm25,
                1.0 if found is not None else 0.0,
                coverage / terms_matched,
                keyword_rank.get(record_id, 0.0),
                semantic_rank.get(record_id, 0.0),
                best_in[contexts[n]] if contexts[n] is not None else blended[n],
                count_in[contexts[n]] / len(ids) if contexts[n] is not None else 1 / len(ids),
                (newest - day) / span if day is not None else 0.0,
                length * keyword_z[n],
                length * centred_z[n],
                at[n],
                keyword_z[n] * centred_z[n],
                best_keyword_in[contexts[n]] if contexts[n] is not None else keyword_z[n],
                best_semantic_in[contexts[n]] if contexts[n] is not None else centred_z[n],
                says[n],
            ]
        )
    return ids, rows


def rank(
    keyword: Sequence[Candidate],
    semantic: Sequence[Candidate],
    query_terms: int,
    weights: Mapping[str, float] | None = None,
    named: NamedTime | None = None,
) -> list[Ranked]:
    """A quality search's order: every candidate by the weighted sum of its
    :data:`FEATURES` (``weights``: :data:`~memory_admin.tuning.QUALITY_WEIGHTS`), best
    first; ties keep the candidates' order. Each carries its BM25 (and matched terms) and
    its cosine, as a hybrid hit does."""
    table = tuning.QUALITY_WEIGHTS if weights is None else weights
    coefficients = [table.get(name, 0.0) for name in FEATURES]
    ids, rows = features(keyword, semantic, query_terms, named)
    scores = [math.fsum(w * x for w, x in zip(coefficients, row, strict=True)) for row in rows]
    by_keyword = {c.id: c for c in keyword}
    cosines = {c.id: c.cosine for c in semantic}
    order = sorted(range(len(ids)), key=lambda n: (-scores[n], n))
    return [
        Ranked(
            ids[n],
            round(scores[n], 6),
            by_keyword[ids[n]].score if ids[n] in by_keyword else None,
            cosines.get(ids[n]),
            by_keyword[ids[n]].terms if ids[n] in by_keyword else None,
        )
        for n in order
    ]


__all__ = ["FEATURES", "features", "rank"]
