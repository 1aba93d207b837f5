"""Vectors beside records, for every backend: what a store embeds, how vectors are
encoded, the exact similarity scan over a scope's candidates, and hybrid fusion.

A backend stores one blob per record (:func:`~memory_admin.embed.quantize.to_blob`:
int8 codes and a scale, 388 bytes at 384 dimensions, and as much again for each window
of a record longer than its model reads at once) in the records' own transaction,
and the model that made them once per store (:class:`VectorSpace`). Its
:meth:`~memory_admin.store.session.Session.similar` primitive selects the blobs of the
records a plan admits — with the very SQL filters a keyword search uses, so no scope,
kind, tag, key, agent, ``as_of``, expiry or invalidation rule can differ between modes —
and hands them to :func:`closest`, which scores them by cosine similarity measured from
the searched collection's mean (:func:`centre`), a long record's best window mixed in
(:func:`with_windows`). A large scope is first shortlisted by the
signs of its vectors (:func:`shortlist`); the shortlist is scored exactly: there is no
index to drift from the records, nothing to rebuild. Fusion (:func:`fuse`) orders both
sides' candidates, ids and scores only, before any record is read.

numpy is imported only when vectors are first used (it comes with the ``semantic`` extra).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from memory_admin import tuning
from memory_admin.embed.fusion import context_lift, length_prior, zscore_fusion
from memory_admin.embed.protocol import Vector, numpy
from memory_admin.embed.quantize import int8_cosines, scaled_sum, stack_blobs, stack_with_windows
from memory_admin.records import MemoryHit, MemoryRecord, MemoryWriteInput
from memory_admin.store.caches import LruCache
from memory_admin.store.named_time import NamedTime
from memory_admin.store.plan import Candidate, context_day

if TYPE_CHECKING:
    from memory_admin.embed.protocol import Embedder

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class VectorSpace:
    """The model a store's vectors come from: vectors of two spaces are never compared."""

    model_id: str
    dimensions: int

    @classmethod
    def of(cls, embedder: Embedder) -> VectorSpace:
        return cls(embedder.model_id, embedder.dimensions)


@dataclass(frozen=True)
class ScopeVectors:
    """One stored scope's vectors as a search's first pass reads them: the record keys
    and one bit per dimension (its sign), 48 bytes a vector at 384 dimensions; and the
    same of the windows long records carry (``window_keys`` their records' keys), so a
    long record is shortlisted by its best part too."""

    version: int
    keys: Any
    bits: Any
    window_keys: Any = None
    window_bits: Any = None

    @property
    def nbytes(self) -> int:
        windows = 0 if self.window_keys is None else self.window_keys.nbytes + self.window_bits.nbytes
        return int(self.keys.nbytes + self.bits.nbytes + windows)

    @classmethod
    def of(cls, version: int, rows: Sequence[tuple[int, bytes]], dimensions: int) -> ScopeVectors:
        np = numpy()
        keys = np.fromiter((key for key, _ in rows), dtype=np.int64, count=len(rows))
        parts, window_keys, window_bits = [], [], []
        for start in range(0, len(rows), tuning.SCAN_CHUNK):
            codes, _, windows = stack_with_windows(
                [blob for _, blob in rows[start : start + tuning.SCAN_CHUNK]], dimensions
            )
            parts.append(np.packbits(codes > 0, axis=1))
            if windows is not None:
                owners, window_codes, _ = windows
                window_keys.append(keys[start + np.asarray(owners, dtype=np.intp)])
                window_bits.append(np.packbits(window_codes > 0, axis=1))
        bits = np.concatenate(parts) if len(parts) > 1 else parts[0]
        if not window_keys:
            return cls(version, keys, bits)
        return cls(version, keys, bits, np.concatenate(window_keys), np.concatenate(window_bits))


def centre_keys(keys: Sequence[K]) -> list[K]:
    """Which of a collection's vectors (``keys`` in key order: the order they were
    written) its centre is measured on: every one up to :data:`~memory_admin.tuning.CENTRE_SAMPLE`, else that
    many spread evenly over the order."""
    if len(keys) <= tuning.CENTRE_SAMPLE:
        return list(keys)
    step = (len(keys) - 1) / (tuning.CENTRE_SAMPLE - 1)
    return [keys[round(i * step)] for i in range(tuning.CENTRE_SAMPLE)]


def centre(rows: Sequence[tuple[Any, bytes]], count: int, dimensions: int) -> Vector | None:
    """The point a search measures similarity from: the mean of the collection it
    searches (``count`` vectors), taken over ``rows`` (:func:`centre_keys` of it), shrunk
    towards the origin by ``count / (count +`` :data:`~memory_admin.tuning.CENTRE_PRIOR` ``)`` so that a
    handful of records is barely centred. ``None`` for an empty collection."""
    if not rows or count <= 0:
        return None
    scale = count / (count + tuning.CENTRE_PRIOR) / len(rows)
    shrunk: Vector = scaled_sum(*stack_blobs([blob for _, blob in rows], dimensions)) * numpy().float32(scale)
    return shrunk


class VectorCache:
    """A process's copy of the vectors it searched, per stored scope, in at most
    ``max_bytes``; least recently used scopes go first. Beside them, the centres of the
    large collections it searched (:func:`centre`, measured on a sample), by the scopes
    and versions they were measured on.

    A scope's copy is used only while the scope's ``vec_version`` — a store-wide number
    stamped on the scope, in the same transaction, by every change to its vectors, and
    never repeated — is the one the copy was read at; otherwise the scope is read again.
    The file stays the only truth: the cache is rebuilt from it, never written back.
    """

    def __init__(self, max_bytes: int = tuning.VECTOR_CACHE_BYTES) -> None:
        self._scopes: LruCache[int, ScopeVectors] = LruCache(max_bytes, weight=lambda vectors: vectors.nbytes)
        self.centres: LruCache[Hashable, Vector] = LruCache(tuning.CENTRES_KEPT)

    def get(self, scope_id: int, version: int) -> ScopeVectors | None:
        found = self._scopes.get(scope_id)
        return found if found is not None and found.version == version else None

    def put(self, scope_id: int, vectors: ScopeVectors) -> None:
        self._scopes.put(scope_id, vectors)

    def clear(self) -> None:
        """Forget every copy (after a delete or an erasure: no forgotten vector stays in RAM)."""
        self._scopes.clear()
        self.centres.clear()


def shortlist(query: Vector, scopes: Sequence[ScopeVectors], size: int) -> list[int]:
    """The keys whose vectors a search scores exactly: every one when the scopes hold at
    most ``size``, else the ``size`` whose signs agree most with the query's (Hamming
    distance of the bit vectors; a long record's windows compete beside its own vector,
    so it may be listed by its best part) — a first pass over 48 bytes a vector, from
    which the exact int8 scores of :func:`closest` then choose."""
    np = numpy()
    if not scopes:
        return []
    keys: Any = np.concatenate([scope.keys for scope in scopes]) if len(scopes) > 1 else scopes[0].keys
    if len(keys) <= size:
        return [int(key) for key in keys.tolist()]
    bits: Any = np.concatenate([scope.bits for scope in scopes]) if len(scopes) > 1 else scopes[0].bits
    windowed = [scope for scope in scopes if scope.window_keys is not None]
    if windowed:  # a long record's windows compete for the shortlist beside its own vector
        keys = np.concatenate([keys, *(scope.window_keys for scope in windowed)])
        bits = np.concatenate([bits, *(scope.window_bits for scope in windowed)])
    signs = np.packbits(np.asarray(query) > 0)
    distance = np.bitwise_count(bits ^ signs).sum(axis=1, dtype=np.int32)
    nearest = np.argpartition(distance, size - 1)[:size]
    return list(dict.fromkeys(int(key) for key in keys[nearest].tolist()))


def document_text(record: MemoryRecord | MemoryWriteInput) -> str:
    """What a record's vector embeds: its content (tags and the date are keyword matter)."""
    return record.content


def closest(
    query: Vector,
    rows: Sequence[tuple[K, bytes]],
    dimensions: int,
    limit: int,
    centre: Vector | None = None,
    *,
    by_centre: bool = True,
    own: Vector | None = None,
) -> list[tuple[K, float, float]]:
    """The ``limit`` rows most similar to ``query``, as ``(key, cosine, score)``: exact
    over the int8 codes (:func:`~memory_admin.embed.quantize.int8_cosines`). The score
    orders them: the cosine measured from ``centre`` when ``by_centre``, else the plain
    one; ties keep the rows' order. The cosine is the plain one of ``own`` when given —
    the query as embedded, when ``query`` is its moved form
    (:mod:`~memory_admin.embed.query_map`): what a hit's ``semantic_score`` says and the
    relevance floor reads — else of ``query``. A long record's order mixes in its best
    window (:func:`with_windows`); its cosine is its own vector's or its best window's,
    whichever is higher: a question about one part of it matches that part. Scored
    :data:`~memory_admin.tuning.SCAN_CHUNK` rows at a time."""
    if not rows or limit <= 0:
        return []
    np = numpy()
    query32 = np.asarray(query, dtype=np.float32)
    orders, cosines = [], []
    for start in range(0, len(rows), tuning.SCAN_CHUNK):
        codes, scales, windows = stack_with_windows(
            [blob for _, blob in rows[start : start + tuning.SCAN_CHUNK]], dimensions
        )
        plain, centred, own_plain = int8_cosines(query32, codes, scales, centre, own)
        if windows is not None and tuning.WINDOW_WEIGHT:
            owners, window_codes, window_scales = windows
            parts = int8_cosines(query32, window_codes, window_scales, centre, own)
            plain, centred = (
                with_windows(whole, part, owners) for whole, part in zip((plain, centred), parts[:2], strict=True)
            )
            # what matches: the record's closest part (the floor was chosen on records of one part)
            own_plain = np.maximum(own_plain, best_window(len(own_plain), parts[2], owners))
        orders.append(centred if by_centre else plain)
        cosines.append(own_plain)
    scores: Any = np.concatenate(orders) if len(orders) > 1 else orders[0]
    cosine: Any = np.concatenate(cosines) if len(cosines) > 1 else cosines[0]
    top = np.argpartition(-scores, limit - 1)[:limit] if len(rows) > limit else np.arange(len(rows))
    order = sorted(top.tolist(), key=lambda i: (-float(scores[i]), i))
    return [(rows[i][0], round(float(cosine[i]), 6), round(float(scores[i]), 6)) for i in order]


def best_window(records: int, windows: Vector, owners: Sequence[int]) -> Vector:
    """Each of ``records`` records' highest similarity among its windows (``owners`` says
    whose each window is); ``-inf`` for a record without windows."""
    np = numpy()
    best: Vector = np.full(records, -np.inf, dtype=np.float32)
    np.maximum.at(best, np.asarray(owners, dtype=np.intp), windows)
    return best


def with_windows(whole: Vector, windows: Vector, owners: Sequence[int]) -> Vector:
    """Each record's similarity with its best window's mixed in: ``(1 - w) × whole + w ×
    best`` for a record whose vector has windows (:func:`~memory_admin.embed.quantize.stack_with_windows`),
    ``w`` :data:`~memory_admin.tuning.WINDOW_WEIGHT`; the rest as they were. A long record's
    vector is a mean over everything it says, so a question about one part of it scores
    lower than the same words in a short record would (docs/search.md, "Long records")."""
    np = numpy()
    best = best_window(len(whole), windows, owners)
    weight = tuning.WINDOW_WEIGHT
    mixed: Vector = np.where(np.isfinite(best), (1 - weight) * whole + weight * best, whole)
    return mixed


@dataclass(frozen=True, slots=True)
class Ranked:
    """A semantic or hybrid search's hit before its record is read: the order's score
    and where it came from (see :class:`~memory_admin.records.MemoryHit`)."""

    id: str
    score: float
    keyword_score: float | None = None
    semantic_score: float | None = None
    terms: dict[str, float] | None = None
    context_score: float | None = None
    length_score: float | None = None

    def hit(self, record: MemoryRecord) -> MemoryHit:
        return MemoryHit(
            record=record,
            score=self.score,
            keyword_score=self.keyword_score,
            semantic_score=self.semantic_score,
            context_score=self.context_score,
            length_score=self.length_score,
            terms=self.terms,
        )


def relevant(ranked: Sequence[Ranked], relevance: Literal["match", "rank"] = "match") -> list[Ranked]:
    """The hits of a semantic, hybrid or quality search that match its query: those
    sharing a word with it (a keyword score), and those whose cosine similarity reaches
    :data:`~memory_admin.tuning.RELEVANCE_FLOOR` — or, for ``relevance="rank"``, all of
    them, in their order. The one home of the rule, for every backend."""
    floor = tuning.RELEVANCE_FLOOR
    if floor is None or relevance == "rank":
        return list(ranked)
    return [
        hit
        for hit in ranked
        if hit.keyword_score is not None or (hit.semantic_score is not None and hit.semantic_score >= floor)
    ]


def named_lift(contexts: Sequence[Hashable | None], named: NamedTime | None, weight: float) -> list[float]:
    """What each candidate gains from the time its query names (:mod:`~memory_admin.store.named_time`):
    ``weight`` when it was stated on a day the query names, or in a month it names; else 0."""
    if named is None or not weight:
        return [0.0] * len(contexts)
    return [weight if named.covers(context_day(where)) else 0.0 for where in contexts]


def _ordered(ranked: list[Ranked]) -> list[Ranked]:
    order = sorted(range(len(ranked)), key=lambda i: (-ranked[i].score, i))
    return [ranked[i] for i in order]


def by_meaning(
    semantic: Sequence[Candidate],
    named: NamedTime | None = None,
    *,
    context_weight: float | None = None,
    named_weight: float | None = None,
    length_weight: float | None = None,
) -> list[Ranked]:
    """A semantic search's order: by cosine similarity (of the moved query: the
    candidates' scores), each candidate lifted by
    :data:`~memory_admin.tuning.SEMANTIC_CONTEXT_WEIGHT` of the best cosine among the
    candidates stated in its context (the same scope, the same day), by
    :data:`~memory_admin.tuning.SEMANTIC_NAMED_TIME_WEIGHT` when it was stated at the
    time the query names, and by :data:`~memory_admin.tuning.SEMANTIC_LENGTH_WEIGHT` of
    its length's z-score (:func:`~memory_admin.embed.fusion.length_prior`). A hit's
    ``semantic_score`` is the query's own cosine. A weight given here stands in for its
    tuned value (what the out-of-fold bench tries)."""
    scores = [c.score for c in semantic]
    contexts = [c.context for c in semantic]
    lifts = context_lift(scores, contexts, tuning.SEMANTIC_CONTEXT_WEIGHT if context_weight is None else context_weight)
    when = tuning.SEMANTIC_NAMED_TIME_WEIGHT if named_weight is None else named_weight
    named_lifts = named_lift(contexts, named, when)
    says = tuning.SEMANTIC_LENGTH_WEIGHT if length_weight is None else length_weight
    prior = length_prior([c.length for c in semantic], says)
    return _ordered(
        [
            Ranked(
                c.id,
                round(score + lift + at + more, 6),
                semantic_score=c.cosine if c.cosine is not None else score,
                context_score=round(lift + at, 6),
                length_score=round(more, 6) if says else None,
            )
            for c, score, lift, at, more in zip(semantic, scores, lifts, named_lifts, prior, strict=True)
        ]
    )


def fuse(
    keyword: Sequence[Candidate],
    semantic: Sequence[Candidate],
    named: NamedTime | None = None,
    *,
    keyword_weight: float | None = None,
    context_weight: float | None = None,
    named_weight: float | None = None,
    length_weight: float | None = None,
) -> list[Ranked]:
    """Both sides' candidates in one order (:func:`~memory_admin.embed.fusion.zscore_fusion`
    of BM25 and the centred cosine, BM25 weighted :data:`~memory_admin.tuning.KEYWORD_WEIGHT`,
    each lifted by its context's best: :data:`~memory_admin.tuning.CONTEXT_WEIGHT`, by
    :data:`~memory_admin.tuning.NAMED_TIME_WEIGHT` when it was stated at the time the
    query names, and by :data:`~memory_admin.tuning.LENGTH_WEIGHT` of its length's
    z-score, :func:`~memory_admin.embed.fusion.length_prior`), each carrying its keyword
    score (and matched terms), its cosine and its lifts beside the fused one. A weight
    given here stands in for its tuned value (what the out-of-fold bench tries)."""
    terms = {c.id: c.terms for c in keyword}
    cosines = {c.id: c.cosine for c in semantic}
    contexts = {c.id: c.context for c in (*semantic, *keyword) if c.context is not None}
    lengths = {c.id: c.length for c in (*semantic, *keyword) if c.length is not None}
    fused = zscore_fusion(
        {c.id: c.score for c in keyword},
        {c.id: c.score for c in semantic},
        keyword_weight=tuning.KEYWORD_WEIGHT if keyword_weight is None else keyword_weight,
        context_weight=tuning.CONTEXT_WEIGHT if context_weight is None else context_weight,
        contexts=contexts,
    )
    when = tuning.NAMED_TIME_WEIGHT if named_weight is None else named_weight
    at = named_lift([contexts.get(hit.key) for hit in fused], named, when)
    says = tuning.LENGTH_WEIGHT if length_weight is None else length_weight
    prior = length_prior([lengths.get(hit.key) for hit in fused], says)
    ranked = [
        Ranked(
            hit.key,
            round(hit.score + lift + more, 6),
            hit.keyword_raw,
            cosines.get(hit.key),
            terms.get(hit.key),
            round(hit.context + lift, 6),
            round(more, 6) if says else None,
        )
        for hit, lift, more in zip(fused, at, prior, strict=True)
    ]
    # the fusion's order stands until a lift or the prior moves a score
    return _ordered(ranked) if named is not None or says else ranked


__all__ = [
    "Ranked",
    "ScopeVectors",
    "VectorCache",
    "VectorSpace",
    "by_meaning",
    "centre",
    "centre_keys",
    "closest",
    "document_text",
    "fuse",
    "named_lift",
    "relevant",
    "shortlist",
    "with_windows",
]
