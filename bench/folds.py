"""Out of fold: every tuned choice of search, chosen on four of LoCoMo's development
conversations and measured on the fifth, all five ways, against the untuned baselines.

    python -m bench.locomo ../shared/datasets/locomo/locomo-dev.json --mode hybrid --folds \\
        [--units turns] [--train-quality] [--train-query-map] [--out docs/benchmarks/locomo-folds.md]

A choice tuned on the data it is measured on always looks good; a store's users bring
their own data. So each choice is made the way it would be made without the held-out
conversation: for each of the five conversations, the value with the best mean recall@10
over the other four conversations' questions is picked and measured on the fifth. The
out-of-fold figure is the mean over every question with the value picked without its
conversation. A choice is kept when that beats its untuned baseline's figure in the same
run; otherwise it goes (or stays as an option, off).

Every ranking here is computed from what the store computes, through the package's own
functions — each question's keyword matches come from the store's keyword search (and
from a second, in-memory store whose records' terms leave out the stated day), its
similarities from the same int8 vectors, shortlist and centre as the store's
(:mod:`memory_admin.store.vectors`), fusion from :func:`~memory_admin.store.vectors.fuse`,
the quality ranker from :mod:`memory_admin.store.quality` — and, at the store's own
settings, each mode's top ten is checked against the store's own search (the report says
how many agree).

The query map (:mod:`memory_admin.embed.query_map`) is a choice too: for each question,
the map fitted without its conversation moves its vector (``--train-query-map`` writes
the one fitted on all five, which the package ships); the store's own searches, checked
above, use the shipped map.

Beside the choices, the relevance floor (picked by its rule on four conversations), the
learned quality ranker (fitted on four, measured on the fifth; ``--train-quality`` prints
the weights fitted on all five, which the package ships), and what was tried for
questions whose evidence spans several sessions (a second round seeded by the first
round's records, diversity across sessions, names in common) — each kept only if it wins
out of fold.
"""

from __future__ import annotations

import itertools
import math
import re
import statistics
import time
from collections.abc import Hashable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from bench.measure import tuned
from memory_admin import tuning
from memory_admin.embed.fusion import rrf_fusion
from memory_admin.embed.protocol import numpy
from memory_admin.embed.quantize import dequantize_int8, stack_blobs, to_blobs
from memory_admin.embed.query_map import map_query, query_map
from memory_admin.scope import scope_json
from memory_admin.store import ranking
from memory_admin.store.named_time import NamedTime, named_time
from memory_admin.store.plan import Candidate, context
from memory_admin.store.quality import FEATURES, features
from memory_admin.store.quality import rank as quality_rank
from memory_admin.store.vectors import (
    Ranked,
    ScopeVectors,
    by_meaning,
    centre,
    centre_keys,
    closest,
    fuse,
    relevant,
    shortlist,
)
from memory_admin.tokenize import tokenize, unique_tokens

if TYPE_CHECKING:
    from bench.locomo import Dataset, Question, StoreRun
    from memory_admin.embed import Embedder
    from memory_admin.store import BaseMemoryStore

K = 10
FLOORS = (-1.0, 0.0, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4)
"""Relevance floors the floor's rule chooses among (-1: no floor, in effect)."""


# --- what the store computes for each question ------------------------------------------


@dataclass
class Conversation:
    """One conversation's records as the store holds them: ids in write order, the
    dialog ids each cites, where each was stated, and its vectors."""

    ids: list[str]
    cites: dict[str, frozenset[str]]
    contexts: dict[str, Hashable]
    texts: dict[str, str]
    blobs: list[tuple[int, bytes]]
    """``(write position, int8 blob)``: what the store's vector table holds, by key."""
    vectors: ScopeVectors
    centre: Any

    @cached_property
    def position(self) -> dict[str, int]:
        """Record id → its write position (its index in :attr:`ids` and :attr:`blobs`)."""
        return {key: n for n, key in enumerate(self.ids)}

    def stored(self, keys: Sequence[str], dimensions: int) -> Any:
        """The records' vectors as the store holds them: int8, scaled back (not renormalised)."""
        return dequantize_int8(*stack_blobs([self.blobs[self.position[key]][1] for key in keys], dimensions))


@dataclass
class Asked:
    """One question and what the store's searches compute for it."""

    question: Question
    terms: int
    """The query's distinct terms (what the quality ranker's query shape counts)."""
    vector: Any
    """The query's embedding."""
    keyword: list[Candidate]
    """Every keyword match, in the store's order, with the stated day among the record's terms."""
    keyword_without_day: list[Candidate]
    """The same without the stated day (ids of the first store)."""
    semantic: dict[tuple[bool, int], list[Candidate]]
    """The closest records (centred or plain cosine, depth) as the store's semantic side finds them."""
    mapped: dict[Any, tuple[Any, dict[tuple[bool, int], list[Candidate]]]] = field(default_factory=dict)
    """Query map (a ridge penalty: the map fitted at it without this question's
    conversation; or :data:`SHIPPED`) → the moved vector and its closest records."""

    def closest(self, mapped: Any) -> dict[tuple[bool, int], list[Candidate]]:
        """:attr:`semantic` for the query moved by ``mapped`` (falsy, or a model without a
        map — nothing in :attr:`mapped` — : as embedded, as the store searches then)."""
        return self.mapped[mapped][1] if mapped and self.mapped else self.semantic

    def query_vector(self, mapped: Any) -> Any:
        return self.mapped[mapped][0] if mapped and self.mapped else self.vector


@dataclass
class Collected:
    conversations: dict[str, Conversation]
    asked: list[Asked]
    raw_bm25: list[float]
    """Recall@10 of raw FTS5 bm25 (the words as written), per question."""
    model: str = ""
    """The embedder's model id."""

    @property
    def names(self) -> list[str]:
        return list(self.conversations)


@contextmanager
def without_day_words() -> Iterator[None]:
    """Records' terms without the words of their stated day (the choice switched off)."""
    kept = ranking.date_words
    ranking.date_words = lambda stated: ""
    ranking._date_tokens.cache_clear()
    try:
        yield
    finally:
        ranking.date_words = kept
        ranking._date_tokens.cache_clear()


def _depths() -> tuple[int, ...]:
    return tuple(sorted({30, 50, tuning.FUSION_CANDIDATES, tuning.SEMANTIC_CANDIDATES, 200}))


def collect(
    loaded: StoreRun, plain: BaseMemoryStore, dataset: Dataset, embedder: Embedder, raw: Sequence[float]
) -> Collected:
    """What every question's searches compute: ``loaded`` is the store under test (its
    keyword search), ``plain`` a keyword-only in-memory store written with
    :func:`without_day_words` in the same order, ``raw`` raw FTS5's recall@10 per question."""
    from bench.locomo import StoreRun

    np = numpy()
    with without_day_words():
        unday = StoreRun(plain, dataset, loaded.tenant, "keyword")
    same = dict(zip(unday.owner, loaded.owner, strict=True))
    conversations: dict[str, Conversation] = {}
    for name in dataset.conversations:
        ids = [key for key, (owner, _) in loaded.owner.items() if owner == name]
        records = [loaded.store.get(key) for key in ids]
        texts = {record.id: record.content for record in records if record is not None}
        blobs = list(enumerate(to_blobs(embedder.embed_documents(list(texts.values())))))
        conversations[name] = Conversation(
            ids=ids,
            cites={key: loaded.owner[key][1] for key in ids},
            contexts={r.id: context(scope_json(r.scope), r.observed_at) for r in records if r is not None},
            texts=texts,
            blobs=blobs,
            vectors=ScopeVectors.of(1, blobs, embedder.dimensions),
            centre=centre([blobs[i] for i in centre_keys(range(len(blobs)))], len(blobs), embedder.dimensions),
        )
    asked = []
    for question in dataset.questions:
        held = conversations[question.conversation]
        query = loaded.query(question.conversation, question.text, 1000, "keyword")
        keyword = [
            Candidate(
                hit.record.id, hit.score or 0.0, hit.terms, held.contexts[hit.record.id], length=len(hit.record.content)
            )
            for hit in loaded.store.search(query)
        ]
        with without_day_words():
            hits = plain.search(unday.query(question.conversation, question.text, 1000, "keyword"))
        keyword_without_day = [
            Candidate(
                same[hit.record.id],
                hit.score or 0.0,
                hit.terms,
                held.contexts[same[hit.record.id]],
                length=len(hit.record.content),
            )
            for hit in hits
        ]
        vector = np.asarray(embedder.embed_query(question.text), dtype=np.float32)
        semantic = {
            (by_centre, depth): _closest(held, vector, depth, embedder.dimensions, by_centre=by_centre)
            for by_centre in (True, False)
            for depth in _depths()
        }
        terms = len(unique_tokens(question.text)[:64])
        asked.append(Asked(question, terms, vector, keyword, keyword_without_day, semantic))
    return Collected(conversations, asked, list(raw), embedder.model_id)


def _closest(
    held: Conversation, vector: Any, limit: int, dimensions: int, *, by_centre: bool, own: Any = None
) -> list[Candidate]:
    """The store's semantic side (:meth:`~memory_admin.store.sql.session.SqlSession.similar`)
    over one conversation: the shortlist, the exact scores from the centre, the best
    ``limit``; each candidate's cosine that of ``own`` (the query as embedded) when given."""
    page = K + 1
    depth = max(page * tuning.PREFILTER_FACTOR, tuning.PREFILTER_MIN, limit)
    keys = shortlist(vector, [held.vectors], max(tuning.SHORTLIST, 2 * depth))
    listed = [held.blobs[key] for key in sorted(keys)]
    found = closest(vector, listed, dimensions, depth, held.centre if by_centre else None, by_centre=by_centre, own=own)
    return [
        Candidate(
            held.ids[key],
            score,
            context=held.contexts[held.ids[key]],
            cosine=cosine,
            length=len(held.texts[held.ids[key]]),
        )
        for key, cosine, score in found[:limit]
    ]


# --- rankings ------------------------------------------------------------------------


@dataclass(frozen=True)
class Setting:
    """One way to rank: the mode and its choices' values."""

    mode: str
    day: bool = True
    centring: bool = True
    keyword_weight: float = 0.5
    lift: float = 0.0
    depth: int = 100
    floor: float | None = None
    fusion: str = "zscore"
    second_round: float = 0.0
    diversity: float = 0.0
    names: float = 0.0
    meaning_diversity: float = 0.0
    neighbours: float = 0.0
    length: float = 0.0
    named_time: float = 0.0
    query_map: Any = 0.0
    """0: the query as embedded; a ridge penalty: moved by the map fitted at it without
    the question's conversation; :data:`SHIPPED`: by the package's map."""


def store_map() -> float:
    """The store's query map, as a :attr:`Setting.query_map` measured out of fold."""
    return tuning.QUERY_MAP_PENALTY if tuning.QUERY_MAP else 0.0


def store_setting(mode: str) -> Setting:
    """The store's own settings for a mode (what its searches do; its query map fitted
    without the question's conversation)."""
    if mode == "keyword":
        return Setting("keyword")
    if mode == "semantic":
        return Setting(
            "semantic",
            centring=False,
            lift=tuning.SEMANTIC_CONTEXT_WEIGHT,
            depth=tuning.SEMANTIC_CANDIDATES,
            floor=tuning.RELEVANCE_FLOOR,
            named_time=tuning.SEMANTIC_NAMED_TIME_WEIGHT,
            length=tuning.SEMANTIC_LENGTH_WEIGHT,
            query_map=store_map(),
        )
    return Setting(
        mode,
        centring=tuning.FUSION_CENTRING,
        keyword_weight=tuning.KEYWORD_WEIGHT,
        lift=tuning.CONTEXT_WEIGHT,
        depth=tuning.FUSION_CANDIDATES,
        floor=tuning.RELEVANCE_FLOOR,
        named_time=tuning.NAMED_TIME_WEIGHT,
        length=tuning.LENGTH_WEIGHT if mode == "hybrid" else 0.0,
        query_map=store_map(),
    )


def ranked(asked: Asked, setting: Setting, data: Collected, weights: dict[str, float] | None = None) -> list[str]:
    """The ids a search of ``setting`` returns for the question, best first."""
    keyword = asked.keyword if setting.day else asked.keyword_without_day
    if setting.mode == "keyword":
        return [c.id for c in keyword]
    semantic = asked.closest(setting.query_map)[setting.centring, setting.depth]
    named = named_time(asked.question.text)
    if setting.mode == "semantic":
        hits = by_meaning(
            semantic, named, context_weight=setting.lift, named_weight=setting.named_time, length_weight=setting.length
        )
    elif setting.mode == "quality":
        hits = quality_rank(keyword[: setting.depth], semantic, asked.terms, weights, named)
    elif setting.fusion == "rrf":
        cosines = {c.id: c.cosine for c in semantic}
        bm25 = {c.id: c.score for c in keyword[: setting.depth]}
        order = rrf_fusion(list(bm25), [c.id for c in semantic])
        hits = [Ranked(key, score, bm25.get(key), cosines.get(key)) for key, score in order]
    else:
        hits = _fused(asked, keyword[: setting.depth], semantic, setting, data, named)
    with tuned(RELEVANCE_FLOOR=setting.floor):
        return [hit.id for hit in relevant(hits)]


def _fused(
    asked: Asked,
    keyword: Sequence[Candidate],
    semantic: Sequence[Candidate],
    setting: Setting,
    data: Collected,
    named: NamedTime | None = None,
) -> list[Ranked]:
    hits = _fuse(keyword, semantic, setting, named)
    if setting.second_round or setting.diversity or setting.names or setting.meaning_diversity or setting.neighbours:
        hits = _multi_hop(asked, keyword, hits, setting, data)
    return hits


def _fuse(
    keyword: Sequence[Candidate], semantic: Sequence[Candidate], setting: Setting, named: NamedTime | None = None
) -> list[Ranked]:
    """:func:`~memory_admin.store.vectors.fuse` at the setting's weights."""
    return fuse(
        keyword,
        semantic,
        named,
        keyword_weight=setting.keyword_weight,
        context_weight=setting.lift,
        named_weight=setting.named_time,
        length_weight=setting.length,
    )


# --- multi-hop: what was tried --------------------------------------------------------

_CAPITALISED = re.compile(r"\b[A-Z][\w'’-]*")


def _names(text: str) -> set[str]:
    """The terms of a text's capitalised words after its first (names, places, titles)."""
    words = text.split()
    return {term for word in _CAPITALISED.findall(" ".join(words[1:])) for term in tokenize(word)}


def _multi_hop(
    asked: Asked, keyword: Sequence[Candidate], hits: list[Ranked], setting: Setting, data: Collected
) -> list[Ranked]:
    """A fused order, changed by one of the ideas for evidence spread over sessions:

    * ``second_round``: the top three records' vectors, at this weight, added to the
      query's, and the semantic side searched again (pseudo-relevance feedback);
    * ``diversity``: the top ten picked one by one, each pick's score lowered by this much
      for every record already picked from its session;
    * ``names``: a record gains this much for each name of the question it holds too;
    * ``meaning_diversity``: the top ten picked one by one from the best forty (maximal
      marginal relevance), each pick's score lowered by this much times its highest
      cosine to a record already picked;
    * ``neighbours``: a record gains this much times ``exp(-d / 2)``, ``d`` how many
      records of the scope were written between it and the best match (the turns around
      an answer, or the facts taken from the same moment).
    """
    held = data.conversations[asked.question.conversation]
    score = {hit.id: hit.score for hit in hits}
    if setting.second_round:
        np = numpy()
        query = asked.query_vector(setting.query_map)
        seeds = held.stored([hit.id for hit in hits[:3]], len(query)).mean(axis=0)
        vector = query + setting.second_round * seeds
        again = _closest(
            held, vector / np.linalg.norm(vector), setting.depth, len(query), by_centre=True, own=asked.vector
        )
        return _fuse(keyword, again, setting, named_time(asked.question.text))
    if setting.neighbours:
        best = held.position[hits[0].id]
        for hit in hits[1:]:
            score[hit.id] += setting.neighbours * math.exp(-abs(held.position[hit.id] - best) / 2)
        order = sorted(range(len(hits)), key=lambda i: (-score[hits[i].id], i))
        return [hits[i] for i in order]
    if setting.meaning_diversity:
        pool = hits[:40]
        vectors = _unit_vectors(held, [hit.id for hit in pool], len(asked.vector))
        similar = vectors @ vectors.T
        chosen_at: list[int] = []
        left = list(range(len(pool)))
        while left and len(chosen_at) < K:
            penalty = similar[left][:, chosen_at].max(axis=1) if chosen_at else [0.0] * len(left)
            at = max(
                range(len(left)),
                key=lambda i: (score[pool[left[i]].id] - setting.meaning_diversity * float(penalty[i]), -i),
            )
            chosen_at.append(left.pop(at))
        picked_ids = {pool[i].id for i in chosen_at}
        return [pool[i] for i in chosen_at] + [hit for hit in hits if hit.id not in picked_ids]
    if setting.names:
        asked_names = _names(asked.question.text)
        if asked_names:
            for hit in hits:
                score[hit.id] += setting.names * len(asked_names & _names("- " + held.texts[hit.id]))
        order = sorted(range(len(hits)), key=lambda i: (-score[hits[i].id], i))
        return [hits[i] for i in order]
    # diversity across sessions: greedy, over the best forty
    pool, picked, seen = list(hits[:40]), list[Ranked](), dict[Hashable, int]()
    while pool and len(picked) < K:
        best = max(
            range(len(pool)),
            key=lambda i: (score[pool[i].id] - setting.diversity * seen.get(held.contexts[pool[i].id], 0), -i),
        )
        hit = pool.pop(best)
        picked.append(hit)
        seen[held.contexts[hit.id]] = seen.get(held.contexts[hit.id], 0) + 1
    chosen = {hit.id for hit in picked}
    return picked + [hit for hit in hits if hit.id not in chosen]


def _unit_vectors(held: Conversation, keys: Sequence[str], dimensions: int) -> Any:
    """The records' vectors as the store holds them (int8, scaled back), at unit length."""
    np = numpy()
    vectors = held.stored(keys, dimensions)
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


# --- the query map ---------------------------------------------------------------------

SHIPPED = "shipped"
"""The :attr:`Setting.query_map` of the package's own map (what the store's searches use)."""
MAP_PENALTIES = (0.3, 0.1, 0.03)
"""Ridge penalties the map is fitted at (its choice's values beside 0, no map)."""
MAP_TEMPERATURE = 0.05
MAP_STEPS = 300
MAP_RATE = 3e-3


def fit_query_map(shapes: Shapes, conversations: set[str], penalty: float) -> Any:
    """``M`` of :mod:`memory_admin.embed.query_map`, fitted on the questions of
    ``conversations`` — every kind of record of them — against their records: a softmax
    over each conversation's records (cosines from the scope's centre, as hybrid search
    scores them, at :data:`MAP_TEMPERATURE`; the centre moves every score of a question
    alike, so the fit is the same without it) whose records citing the question's evidence
    are the answer, plus ``penalty`` × ‖M‖² / 2. Full-batch Adam from M = 0:
    deterministic, a few seconds."""
    np = numpy()
    groups: list[tuple[Any, Any, Any]] = []  # (queries, answers, centred records)
    for data in shapes.values():
        for name, held in data.conversations.items():
            if name not in conversations:
                continue
            mine = [a for a in data.asked if a.question.conversation == name]
            answers = np.asarray(
                [[bool(held.cites[key] & a.question.evidence) for key in held.ids] for a in mine], dtype=np.float32
            )
            keep = answers.any(axis=1)
            if not keep.any():
                continue
            codes, scales = stack_blobs([blob for _, blob in held.blobs], len(mine[0].vector))
            records = dequantize_int8(codes, scales).astype(np.float32)
            if held.centre is not None:
                records -= np.asarray(held.centre, dtype=np.float32)
            queries = np.stack([np.asarray(a.vector, dtype=np.float32) for a in mine])[keep]
            groups.append((queries / np.linalg.norm(queries, axis=1, keepdims=True), answers[keep], records))
    count = sum(len(queries) for queries, _, _ in groups)
    size = groups[0][0].shape[1]
    matrix = np.zeros((size, size), dtype=np.float32)
    first, second = np.zeros_like(matrix), np.zeros_like(matrix)
    for step in range(1, MAP_STEPS + 1):
        gradient = penalty * matrix
        for queries, answers, records in groups:
            logits = (queries + queries @ matrix.T) @ records.T / MAP_TEMPERATURE
            logits -= logits.max(axis=1, keepdims=True)
            p = np.exp(logits)
            p /= p.sum(axis=1, keepdims=True)
            on_answers = p * answers
            # d(−log Σ_answers p) / d logits
            slope = p - on_answers / on_answers.sum(axis=1, keepdims=True)
            gradient += ((slope @ records) / MAP_TEMPERATURE).T @ queries / count
        first = 0.9 * first + 0.1 * gradient
        second = 0.999 * second + 0.001 * gradient * gradient
        matrix -= MAP_RATE * (first / (1 - 0.9**step)) / (np.sqrt(second / (1 - 0.999**step)) + 1e-8)
    return matrix


def map_queries(shapes: Shapes, penalties: Sequence[float] = MAP_PENALTIES) -> Any | None:
    """Each question's query moved by the map fitted at each penalty without its
    conversation, and by the package's map (:data:`SHIPPED`), with the closest records of
    each (:attr:`Asked.mapped`); returns the map fitted on every conversation at the
    store's penalty (what ``--train-query-map`` writes). Nothing for a model without a map."""
    first = next(iter(shapes.values()))
    shipped = query_map(first.model) if first.model else None
    if shipped is None:
        return None
    names = set(first.names)
    by_fold = {(p, name): fit_query_map(shapes, names - {name}, p) for p in penalties for name in names}
    for data in shapes.values():
        for asked in data.asked:
            held = data.conversations[asked.question.conversation]
            for key, matrix in [(SHIPPED, shipped), *((p, by_fold[p, asked.question.conversation]) for p in penalties)]:
                vector = map_query(data.model, asked.vector, matrix)
                deepest = {
                    c: _closest(held, vector, max(_depths()), len(vector), by_centre=c, own=asked.vector)
                    for c in (True, False)
                }
                # up to PREFILTER_MIN (200), every depth shortlists and scores what the deepest does
                asked.mapped[key] = (vector, {(c, d): deepest[c][:d] for c in (True, False) for d in _depths()})
    return fit_query_map(shapes, names, tuning.QUERY_MAP_PENALTY)


# --- cross-validation ----------------------------------------------------------------

Shapes = dict[str, Collected]
"""The same conversations and questions with each kind of record (:data:`~bench.locomo.UNITS`)."""
Scores = dict[str, list[float]]
"""Recall@10 per question, per kind of record."""


def _cited(asked: Asked, ids: Sequence[str], data: Collected, k: int | None) -> set[str]:
    """The dialog ids the first ``k`` records cite (``None``: every one)."""
    held = data.conversations[asked.question.conversation]
    return set().union(*(held.cites[key] for key in ids[:k]))


def recall_at(asked: Asked, ids: Sequence[str], data: Collected, k: int | None = K) -> float:
    """The share of the question's evidence the first ``k`` records cite (``None``: all)."""
    return len(asked.question.evidence & _cited(asked, ids, data, k)) / len(asked.question.evidence)


_DIALOG_ID = re.compile(r"D(\d+):(\d+)")


def _turn(dialog_id: str) -> tuple[int, int] | None:
    found = _DIALOG_ID.fullmatch(dialog_id)
    return (int(found[1]), int(found[2])) if found else None


def near_recall_at(asked: Asked, ids: Sequence[str], data: Collected) -> float:
    """:func:`recall_at` with an evidence turn also counted when the top ten cite a turn
    next to it in the same session (``D3:7`` for ``D3:6`` or ``D3:8``)."""
    covered = _cited(asked, ids, data, K)
    turns = {turn for dialog_id in covered if (turn := _turn(dialog_id)) is not None}
    near = 0
    for dialog_id in asked.question.evidence:
        turn = _turn(dialog_id)
        if dialog_id in covered or (
            turn is not None and ((turn[0], turn[1] - 1) in turns or (turn[0], turn[1] + 1) in turns)
        ):
            near += 1
    return near / len(asked.question.evidence)


HEADROOM = (
    "recall@10",
    "recall@20",
    "recall@50",
    "every candidate",
    "ceiling",
    "recall@10, a turn next to the evidence counted",
)
"""What :func:`_headroom` measures of each search."""


def _headroom(data: Collected, learned: Learned | None) -> dict[str, dict[str, float]]:
    """Where the evidence a search misses sits: each search's order at the store's
    settings (no relevance floor; the query map and the quality ranker fitted without the
    question's conversation) cut at ten, twenty, fifty and nowhere, beside every record of
    the scope, and the top ten with a neighbouring turn counted."""
    searches: dict[str, tuple[Setting, Any]] = {"hybrid": (_replace(store_setting("hybrid"), floor=None), None)}
    if learned is not None:
        searches["quality"] = (_replace(store_setting("quality"), floor=None), learned.weights_by_fold)
    out: dict[str, dict[str, float]] = {}
    for search, (setting, by_fold) in searches.items():
        figures: dict[str, list[float]] = {measure: [] for measure in HEADROOM}
        for asked in data.asked:
            weights = by_fold[asked.question.conversation] if by_fold is not None else None
            ids = ranked(asked, setting, data, weights)
            every = data.conversations[asked.question.conversation].ids
            for measure, k in (("recall@10", 10), ("recall@20", 20), ("recall@50", 50), ("every candidate", None)):
                figures[measure].append(recall_at(asked, ids, data, k))
            figures["ceiling"].append(recall_at(asked, every, data, None))
            figures["recall@10, a turn next to the evidence counted"].append(near_recall_at(asked, ids, data))
        out[search] = {measure: _mean(values) for measure, values in figures.items()}
    return out


def _mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else 0.0


def _in(data: Collected, values: Sequence[float], name: str, *, inside: bool) -> list[float]:
    return [v for asked, v in zip(data.asked, values, strict=True) if (asked.question.conversation == name) == inside]


def _per(data: Collected, values: Sequence[float]) -> dict[str, float]:
    return {name: _mean(_in(data, values, name, inside=True)) for name in data.names}


@dataclass
class OutOfFold:
    """One choice (or one mode's choices together) out of fold, on one kind of record."""

    picks: dict[str, Any]
    """Conversation → the value picked on the other four."""
    tuned: dict[str, float]
    """Conversation → recall@10 of its pick, on it."""
    baseline: dict[str, float]
    """Conversation → recall@10 of the baseline value, on it."""
    tuned_all: float
    baseline_all: float
    everywhere: Any
    """The value picked on all five conversations (what a store would ship)."""
    baseline_value: Any = None

    @property
    def wins(self) -> bool:
        return self.tuned_all > self.baseline_all + 1e-9


def training_score(shapes: Shapes, scores: Scores, leave_out: str | None) -> float:
    """A value's mean recall@10 over every conversation but ``leave_out``, each kind of
    record weighing the same."""
    return _mean(
        [
            _mean(values if leave_out is None else _in(shapes[units], values, leave_out, inside=False))
            for units, values in scores.items()
        ]
    )


def pick(shapes: Shapes, by_value: dict[Any, Scores], baseline: Any, leave_out: str | None) -> Any:
    """The value with the best :func:`training_score` (ties go to the baseline, then to
    the earlier value)."""
    best, best_score = baseline, -math.inf
    for value in [baseline, *(v for v in by_value if v != baseline)]:
        score = training_score(shapes, by_value[value], leave_out)
        if score > best_score + 1e-12:
            best, best_score = value, score
    return best


def held_out(shapes: Shapes, by_value: dict[Any, Scores], picks: dict[str, Any], baseline: Any) -> dict[str, OutOfFold]:
    """Each kind of record's figures when each conversation is ranked by its pick."""
    everywhere = pick(shapes, by_value, baseline, None) if baseline in by_value else None
    out = {}
    for units, data in shapes.items():
        pooled = [by_value[picks[a.question.conversation]][units][n] for n, a in enumerate(data.asked)]
        out[units] = OutOfFold(
            dict(picks),
            _per(data, pooled),
            _per(data, by_value[baseline][units]),
            _mean(pooled),
            _mean(by_value[baseline][units]),
            everywhere,
            baseline,
        )
    return out


def out_of_fold(shapes: Shapes, by_value: dict[Any, Scores], baseline: Any) -> dict[str, OutOfFold]:
    names = next(iter(shapes.values())).names
    picks = {name: pick(shapes, by_value, baseline, name) for name in names}
    return held_out(shapes, by_value, picks, baseline)


def score_settings(shapes: Shapes, settings: Sequence[Setting]) -> dict[Setting, Scores]:
    return {
        s: {units: [recall_at(a, ranked(a, s, data), data) for a in data.asked] for units, data in shapes.items()}
        for s in settings
    }


# --- the learned ranker -----------------------------------------------------------------

L2 = 1.0
"""The fit's ridge penalty (on standardised features)."""


def _labelled(asked: Asked, data: Collected, depth: int) -> tuple[Any, Any]:
    np = numpy()
    held = data.conversations[asked.question.conversation]
    named = named_time(asked.question.text)
    semantic = asked.closest(store_map())[True, depth]
    ids, rows = features(asked.keyword[:depth], semantic, asked.terms, named)
    labels = [1.0 if held.cites[key] & asked.question.evidence else 0.0 for key in ids]
    return np.asarray(rows, dtype=np.float64).reshape(len(ids), len(FEATURES)), np.asarray(labels)


def _standardised(tables: Sequence[tuple[Any, Any]]) -> tuple[Any, Any]:
    """The features' mean and spread over every candidate of ``tables`` (a flat one: 1)."""
    x = numpy().concatenate([table for table, _ in tables])
    mean, spread = x.mean(axis=0), x.std(axis=0)
    spread[spread < 1e-9] = 1.0
    return mean, spread


def _on_own_scale(w: Any, spread: Any) -> dict[str, float]:
    return {name: round(float(w[i] / spread[i]), 4) for i, name in enumerate(FEATURES)}


def fit(tables: Sequence[tuple[Any, Any]]) -> dict[str, float]:
    """The ranker's fit, one question at a time (listwise, ListNet's loss): the softmax of
    a question's candidates' scores should put its weight on the question's evidence,
    shared evenly among the records that cite it; ridge penalty :data:`L2` on
    standardised features, Newton's method with its step halved until the loss falls
    (the loss is convex; a full step can overshoot). A question with no evidence among
    its candidates teaches nothing and is left out. The weights are returned on the
    features' own scale (a softmax needs no intercept)."""
    np = numpy()
    mean, spread = _standardised(tables)
    questions = [((table - mean) / spread, labels / labels.sum()) for table, labels in tables if labels.sum() > 0]

    def loss(w: Any) -> tuple[float, Any, Any]:
        total, gradient, hessian = 0.5 * L2 * float(w @ w), L2 * w, L2 * np.eye(len(w))
        for z, target in questions:
            s = z @ w
            top = s.max()
            e = np.exp(s - top)
            p = e / e.sum()
            total += float(top + np.log(e.sum()) - target @ s)
            expected = p @ z
            gradient = gradient + expected - target @ z
            hessian = hessian + (z * p[:, None]).T @ z - np.outer(expected, expected)
        return total, gradient, hessian

    w = np.zeros(len(FEATURES))
    now, gradient, hessian = loss(w)
    for _ in range(50):
        step = np.linalg.solve(hessian, gradient)
        size = 1.0
        while (tried := loss(w - size * step))[0] > now and size > 1e-4:
            size /= 2
        w = w - size * step
        now, gradient, hessian = tried  # the step taken is where the next one starts
        if float(np.abs(size * step).max()) < 1e-7:
            break
    return _on_own_scale(w, spread)


def fit_pointwise(tables: Sequence[tuple[Any, Any]]) -> dict[str, float]:
    """The comparison: logistic regression over every candidate alike (is it evidence?),
    by Newton's method with the same ridge penalty, on standardised features."""
    np = numpy()
    mean, spread = _standardised(tables)
    x = np.concatenate([table for table, _ in tables])
    y = np.concatenate([labels for _, labels in tables])
    z = np.hstack([(x - mean) / spread, np.ones((len(x), 1))])
    w = np.zeros(z.shape[1])
    penalty = np.diag([L2] * len(FEATURES) + [0.0])
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-(z @ w)))
        gradient = z.T @ (p - y) + penalty @ w
        hessian = (z * (p * (1 - p))[:, None]).T @ z + penalty
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if float(np.abs(step).max()) < 1e-10:
            break
    return _on_own_scale(w, spread)


@dataclass
class Learned:
    weights_by_fold: dict[str, dict[str, float]]
    """Conversation → the weights fitted without it (on every kind of record)."""
    weights: dict[str, float]
    """Fitted on all five conversations (what the package ships)."""
    recall: Scores
    """Recall@10 per question, each ranked by the weights fitted without its conversation."""
    pointwise: Scores
    """The same with the weights :func:`fit_pointwise` fits (the comparison)."""


def learn(shapes: Shapes, depth: int) -> Learned:
    """The quality ranker fitted on four conversations — every kind of record of them —
    and measured on the fifth, all five ways (by :func:`fit`, and by
    :func:`fit_pointwise` to compare); and fitted on all five."""
    tables = {units: [_labelled(a, data, depth) for a in data.asked] for units, data in shapes.items()}
    names = next(iter(shapes.values())).names
    setting = Setting("quality", depth=depth, query_map=store_map())
    by_fold: dict[str, dict[str, float]] = {}
    recall: Scores = {units: [0.0] * len(data.asked) for units, data in shapes.items()}
    pointwise: Scores = {units: [0.0] * len(data.asked) for units, data in shapes.items()}
    for name in names:
        rows = [
            table
            for units, data in shapes.items()
            for table, asked in zip(tables[units], data.asked, strict=True)
            if asked.question.conversation != name
        ]
        weights = by_fold[name] = fit(rows)
        compared = fit_pointwise(rows)
        for units, data in shapes.items():
            for n, asked in enumerate(data.asked):
                if asked.question.conversation == name:
                    recall[units][n] = recall_at(asked, ranked(asked, setting, data, weights), data)
                    pointwise[units][n] = recall_at(asked, ranked(asked, setting, data, compared), data)
    every = [table for units in tables for table in tables[units]]
    return Learned(by_fold, fit(every), recall, pointwise)


# --- the run -------------------------------------------------------------------------


@dataclass(frozen=True)
class Choice:
    """One tuned choice: its mode, the :class:`Setting` field it sets, its values and the
    untuned baseline's value."""

    label: str
    mode: str
    field: str
    values: tuple[Any, ...]
    baseline: Any


SEMANTIC_LENGTHS = (0.0, 0.02, 0.03, 0.05)
"""The semantic length prior's weights: on a cosine's scale, about a tenth of a fused z-score's."""


def choices(*, mapped: bool = True) -> list[Choice]:
    lifts = (0.0, 0.1, 0.2, 0.3, 0.4)
    return [
        Choice("the stated day among a record's terms", "keyword", "day", (False, True), False),
        Choice("centring (cosine from the scope's mean)", "semantic", "centring", (False, True), False),
        Choice("context lift", "semantic", "lift", lifts, 0.0),
        Choice("candidate depth", "semantic", "depth", _depths(), tuning.FUSION_CANDIDATES),
        Choice("keyword weight", "hybrid", "keyword_weight", (0.3, 0.4, 0.5, 0.6, 0.7), 0.5),
        Choice("context lift", "hybrid", "lift", lifts, 0.0),
        Choice("candidate depth", "hybrid", "depth", _depths(), tuning.FUSION_CANDIDATES),
        Choice("centring of the semantic side", "hybrid", "centring", (False, True), False),
        Choice("the stated day among the keyword side's terms", "hybrid", "day", (False, True), False),
        Choice("the time the question names", "semantic", "named_time", (0.0, 0.1, 0.2, 0.4), 0.0),
        Choice("the time the question names", "hybrid", "named_time", (0.0, 0.5, 1.0, 2.0, 3.0), 0.0),
        Choice("a prior for longer records (their z-scored log length)", "semantic", "length", SEMANTIC_LENGTHS, 0.0),
        Choice(
            "a prior for longer records (their z-scored log length)", "hybrid", "length", (0.0, 0.15, 0.3, 0.5), 0.0
        ),
        *(
            Choice("the query map (its ridge penalty; 0: none)", mode, "query_map", (0.0, *MAP_PENALTIES), 0.0)
            for mode in (("semantic", "hybrid") if mapped else ())
        ),
    ]


def grids(kept: set[tuple[str, str]], *, mapped: bool = True) -> dict[str, tuple[Setting, list[Setting]]]:
    """Mode → (its untuned baseline, every combination of the values of its ``kept``
    choices, each other choice at its baseline's value)."""
    out = {}
    for mode in ("keyword", "semantic", "hybrid"):
        mine = [c for c in choices(mapped=mapped) if c.mode == mode]
        baseline = Setting(mode, **{c.field: c.baseline for c in mine})
        ranges = [c.values if (mode, c.field) in kept else (c.baseline,) for c in mine]
        grid = [
            Setting(mode, **{c.field: v for c, v in zip(mine, values, strict=True)})
            for values in itertools.product(*ranges)
        ]
        out[mode] = (baseline, grid)
    return out


@dataclass
class FoldReport:
    shapes: Shapes
    per_choice: list[tuple[Choice, dict[str, OutOfFold]]]
    modes: dict[str, tuple[Setting, dict[str, OutOfFold]]]
    """Mode → its untuned baseline and its choices tuned together out of fold."""
    store: dict[str, Scores]
    """Mode → recall@10 per question at the store's own settings."""
    baselines: dict[str, Scores]
    """The untuned baselines' recall@10 per question (beside raw BM25)."""
    agreement: dict[str, dict[str, tuple[int, float]]]
    """Kind of record → mode → questions whose top ten here is the store's own search's,
    and the store's own searches' recall@10."""
    floors: dict[str, dict[str, OutOfFold]]
    """Search (semantic, hybrid) → kind of record → the floor picked out of fold."""
    learned: Learned | None
    multi_hop: list[tuple[str, tuple[float, ...], dict[str, OutOfFold], dict[str, dict[int, tuple[float, float]]]]]
    seconds: float
    query_map: Any | None = None
    """The query map fitted on all five conversations at the store's penalty (``None`` for
    a model without a map)."""
    headroom: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    """Kind of record → search → :data:`HEADROOM` measure → its mean (:func:`_headroom`)."""


def _replace(setting: Setting, **changes: Any) -> Setting:
    return Setting(**{**setting.__dict__, **changes})


def floor_rule(shapes: Shapes, by_mode: dict[str, dict[Any, Scores]], leave_out: str | None) -> float:
    """The relevance floor's rule: the highest floor at which neither a semantic nor a
    hybrid search's recall@10 — on any kind of record — falls below the lowest floor's
    (no floor, in effect), over every conversation but ``leave_out``."""

    def mean_of(scores: Scores, units: str) -> float:
        values = scores[units]
        return _mean(values if leave_out is None else _in(shapes[units], values, leave_out, inside=False))

    lowest = min(FLOORS)
    return max(
        f
        for f in FLOORS
        if all(
            mean_of(by[f], units) >= mean_of(by[lowest], units) - 1e-9 for by in by_mode.values() for units in shapes
        )
    )


def run_folds(shapes: Shapes, stores: dict[str, StoreRun], *, quality: bool = True) -> FoldReport:
    """Every table of the out-of-fold report, over ``shapes`` (the store runs they came
    from, for the agreement check)."""
    started = time.perf_counter()
    names = next(iter(shapes.values())).names
    fitted = map_queries(shapes)
    mapped = fitted is not None
    per_choice = []
    for choice in choices(mapped=mapped):
        base = _replace(store_setting(choice.mode), floor=None)  # the floor is chosen on its own, below
        settings = {value: _replace(base, **{choice.field: value}) for value in choice.values}
        scored = score_settings(shapes, list(settings.values()))
        per_choice.append((choice, out_of_fold(shapes, {v: scored[s] for v, s in settings.items()}, choice.baseline)))
    kept = {(c.mode, c.field) for c, results in per_choice if all(r.wins for r in results.values())}
    modes = {}
    for mode, (baseline, grid) in grids(kept, mapped=mapped).items():
        modes[mode] = (baseline, out_of_fold(shapes, score_settings(shapes, grid), baseline))
    measured = ("keyword", "semantic", "hybrid", *(("quality",) if quality else ()))
    store = {mode: score_settings(shapes, [store_setting(mode)])[store_setting(mode)] for mode in measured}
    rrf = Setting("hybrid", fusion="rrf", depth=tuning.FUSION_CANDIDATES)
    untuned = grids(set(), mapped=mapped)
    plain, fusion = untuned["semantic"][0], untuned["hybrid"][0]
    scored = score_settings(shapes, [plain, fusion, rrf])
    baselines = {"plain cosine": scored[plain], "untuned fusion": scored[fusion], "naive RRF": scored[rrf]}
    agreement: dict[str, dict[str, tuple[int, float]]] = {}
    for units, data in shapes.items():
        loaded = stores[units]
        agreement[units] = {}
        for mode in measured:
            same, own = 0, []
            # the store moves the query by the package's map (fitted on all five)
            own_setting = _replace(store_setting(mode), query_map=SHIPPED if store_map() else 0.0)
            for asked in data.asked:
                text, name = asked.question.text, asked.question.conversation
                found = [hit.record.id for hit in loaded.store.search(loaded.query(name, text, K, mode))]
                same += ranked(asked, own_setting, data)[:K] == found
                own.append(recall_at(asked, found, data))
            agreement[units][mode] = (same, _mean(own))
    by_mode: dict[str, dict[Any, Scores]] = {}
    for mode in ("semantic", "hybrid"):
        base = _replace(store_setting(mode), floor=None)
        scored = score_settings(shapes, [_replace(base, floor=f) for f in FLOORS])
        by_mode[mode] = {f: scored[_replace(base, floor=f)] for f in FLOORS}
    picks = {name: floor_rule(shapes, by_mode, name) for name in names}
    floors = {mode: held_out(shapes, by_floor, picks, min(FLOORS)) for mode, by_floor in by_mode.items()}
    for mode in floors:
        for result in floors[mode].values():
            result.everywhere = floor_rule(shapes, by_mode, None)
    learned = learn(shapes, tuning.FUSION_CANDIDATES) if quality else None
    multi_hop: list[tuple[str, tuple[float, ...], dict[str, OutOfFold], dict[str, dict[int, tuple[float, float]]]]] = []
    base = store_setting("hybrid")
    for label, fieldname, values in (
        ("a second round, its query moved towards the first round's top three", "second_round", (0.0, 0.3, 0.6, 1.0)),
        ("diversity across sessions (the top ten picked one by one)", "diversity", (0.0, 0.1, 0.25, 0.5)),
        ("names in common with the question", "names", (0.0, 0.1, 0.2, 0.4)),
        (
            "diversity by meaning (the top ten picked one by one, less their likeness)",
            "meaning_diversity",
            (0.0, 0.5, 1.0, 2.0),
        ),
        ("records written next to the best match", "neighbours", (0.0, 0.2, 0.4, 0.8)),
    ):
        settings = {v: _replace(base, **{fieldname: v}) for v in values}
        scored = score_settings(shapes, list(settings.values()))
        by_value = {v: scored[s] for v, s in settings.items()}
        tried = out_of_fold(shapes, by_value, 0.0)
        categories = {units: _by_category(shapes[units], tried[units], by_value, units) for units in shapes}
        multi_hop.append((label, values, tried, categories))
    headroom = {units: _headroom(data, learned) for units, data in shapes.items()}
    return FoldReport(
        shapes,
        per_choice,
        modes,
        store,
        baselines,
        agreement,
        floors,
        learned,
        multi_hop,
        time.perf_counter() - started,
        fitted,
        headroom,
    )


def _by_category(
    data: Collected, held: OutOfFold, by_value: dict[Any, Scores], units: str
) -> dict[int, tuple[float, float]]:
    """Category → recall@10 out of fold, and the baseline's."""
    out: dict[int, tuple[list[float], list[float]]] = {}
    for n, asked in enumerate(data.asked):
        tuned, base = out.setdefault(asked.question.category, ([], []))
        tuned.append(by_value[held.picks[asked.question.conversation]][units][n])
        base.append(by_value[held.baseline_value][units][n])
    return {category: (_mean(t), _mean(b)) for category, (t, b) in sorted(out.items())}


# --- the report ----------------------------------------------------------------------


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if value is None:
        return "none"
    return f"{value:g}" if isinstance(value, float) else str(value)


def _setting(setting: Setting) -> str:
    if setting.mode == "keyword":
        return f"stated day {_value(setting.day)}"
    parts = [
        f"centring {_value(setting.centring)}",
        f"lift {_value(setting.lift)}",
        f"depth {setting.depth}",
        f"named time {_value(setting.named_time)}",
        f"query map {_value(setting.query_map) if setting.query_map else 'none'}",
        f"length prior {_value(setting.length)}",
    ]
    if setting.mode == "hybrid":
        parts = [f"keyword weight {_value(setting.keyword_weight)}", *parts, f"stated day {_value(setting.day)}"]
    return ", ".join(parts)


def _both(results: dict[str, OutOfFold]) -> str:
    return " | ".join(f"{r.tuned_all:.4f} ({r.baseline_all:.4f})" for r in results.values())


def render(report: FoldReport) -> list[str]:
    shapes = report.shapes
    names = next(iter(shapes.values())).names
    kinds = list(shapes)
    rule = " ---: |" * len(names)
    by_kind = " | ".join(f"{units}: out of fold (baseline)" for units in kinds)
    lines = [
        "## Out of fold",
        "",
        f"The same {len(names)} conversations and {len(next(iter(shapes.values())).asked)} questions, with two "
        "kinds of record: "
        + " and ".join(
            f"{units} ({sum(len(c.ids) for c in data.conversations.values())} records)"
            for units, data in shapes.items()
        )
        + ". Each figure is recall@10. For each conversation a choice's value is picked on the other four — the "
        "best mean recall@10 over their questions, each kind of record weighing the same; a tie goes to the "
        'baseline — and measured on it; "out of fold" pools every question measured that way. The baselines '
        "are untuned: raw BM25 (SQLite FTS5 over the words as written), the plain cosine of the same model, and "
        "z-score fusion of the two at equal weights without a lift. A choice is kept when it beats its baseline "
        "out of fold on both kinds of record.",
        "",
        "At the store's settings, the top ten computed here from the store's own scores is the store's own search's "
        "for "
        + "; ".join(
            f"{units}: "
            + ", ".join(f"{mode} {same} of {len(shapes[units].asked)}" for mode, (same, _) in agreed.items())
            for units, agreed in report.agreement.items()
        )
        + " questions. The store's own searches' recall@10: "
        + "; ".join(
            f"{units}: " + ", ".join(f"{mode} {own:.4f}" for mode, (_, own) in agreed.items())
            for units, agreed in report.agreement.items()
        )
        + f". Where they differ, a scope holds more than {tuning.SMALL_SCOPE} records: there the store's keyword "
        f"side scores at most {tuning.CANDIDATE_BUDGET} candidates (the commonest words' newest matches), while the "
        "figures here rank every match.",
        "",
    ]
    for units, data in shapes.items():

        def per(values: Sequence[float], data: Collected = data) -> str:
            return " | ".join(f"{v:.4f}" for v in _per(data, values).values())

        rows = [
            ("raw BM25 (FTS5, words as written)", data.raw_bm25),
            ("keyword search", report.store["keyword"][units]),
            ("plain cosine", report.baselines["plain cosine"][units]),
            ("semantic search", report.store["semantic"][units]),
            ("untuned fusion (equal weights, no lift)", report.baselines["untuned fusion"][units]),
            ("naive RRF (k = 60)", report.baselines["naive RRF"][units]),
            ("hybrid search", report.store["hybrid"][units]),
        ]
        if report.learned is not None:
            rows.append(("quality search, fitted without the conversation", report.learned.recall[units]))
        semantic, plain = (
            _per(data, report.store["semantic"][units]),
            _per(data, report.baselines["plain cosine"][units]),
        )
        below = [name for name in names if semantic[name] < plain[name] - 1e-9]
        lines += [
            f"{units.capitalize()} as records, each mode at the store's settings (chosen on all five conversations), "
            "and the baselines:",
            "",
            "| | " + " | ".join(names) + " | all |",
            "| --- |" + rule + " ---: |",
            *(f"| {label} | {per(values)} | {_mean(values):.4f} |" for label, values in rows),
            "",
            "Semantic search against the plain cosine: "
            + ("at least as high on every conversation." if not below else f"BELOW it on {', '.join(below)}."),
            "",
        ]
    lines += [
        "Each choice alone (the mode's other choices at the store's settings, no relevance floor), out of fold:",
        "",
        f"| mode | choice | values | baseline | picked without {' / '.join(names)} | {by_kind} | verdict "
        "| on all five |",
        "| --- | --- | --- | --- | --- |" + " ---: |" * len(kinds) + " --- | --- |",
    ]
    for choice, results in report.per_choice:
        first = next(iter(results.values()))
        picks = " / ".join(_value(first.picks[name]) for name in names)
        kept = all(r.wins for r in results.values())
        verdict = (
            "kept"
            if kept
            else ("no gain: the baseline stays" if not any(r.wins for r in results.values()) else "goes: not on both")
        )
        values = ", ".join(_value(v) for v in choice.values)
        lines.append(
            f"| {choice.mode} | {choice.label} | {values} | {_value(choice.baseline)} | {picks} | {_both(results)} "
            f"| {verdict} | {_value(first.everywhere)} |"
        )
    lines += [
        "",
        "Each mode's kept choices (above) tuned together — every combination of their values, the others at their "
        "baselines — out of fold, against its untuned baseline:",
        "",
        f"| mode | untuned baseline | {by_kind} | picked on all five |",
        "| --- | --- |" + " ---: |" * len(kinds) + " --- |",
    ]
    for mode, (baseline, results) in report.modes.items():
        everywhere = next(iter(results.values())).everywhere
        lines.append(f"| {mode} | {_setting(baseline)} | {_both(results)} | {_setting(everywhere)} |")
    first_floor = next(iter(report.floors["hybrid"].values()))
    lines += [
        "",
        "The relevance floor (on the plain cosine), picked on four conversations by its rule — the highest floor at "
        "which neither a semantic nor a hybrid search's recall@10, on either kind of record, falls below no "
        f"floor's — and measured on the fifth; floors tried: {', '.join(_value(f) for f in FLOORS)} (-1: none):",
        "",
        f"| search | picked without {' / '.join(names)} | "
        + " | ".join(f"{units}: out of fold (no floor)" for units in kinds)
        + " | picked on all five |",
        "| --- | --- |" + " ---: |" * len(kinds) + " --- |",
    ]
    for mode, results in report.floors.items():
        lines.append(
            f"| {mode} | {' / '.join(_value(first_floor.picks[name]) for name in names)} | {_both(results)} "
            f"| {_value(first_floor.everywhere)} |"
        )
    if report.learned is not None:
        learned = report.learned
        lines += [
            "",
            "The quality ranker, fitted on four conversations — both kinds of record — (one question at a time: "
            f"the softmax of its candidates' scores towards its evidence, ridge penalty {L2:g} on standardised "
            "features) and measured on the fifth; beside it the same features fitted as a logistic regression over "
            "every candidate alike (pointwise), and hybrid search at the store's settings:",
            "",
            "| | " + " | ".join(names) + " | all |",
            "| --- |" + rule + " ---: |",
        ]
        for units, data in shapes.items():
            for label, figures in (
                ("quality, out of fold", learned.recall[units]),
                ("quality fitted pointwise, out of fold", learned.pointwise[units]),
                ("hybrid", report.store["hybrid"][units]),
            ):
                cells = " | ".join(f"{v:.4f}" for v in _per(data, figures).values())
                lines.append(f"| {units}: {label} | {cells} | {_mean(figures):.4f} |")
        same = learned.weights == tuning.QUALITY_WEIGHTS
        lines += [
            "",
            "Its weights (per feature, on the feature's own scale), fitted without each conversation and on all five "
            "(what `tuning.QUALITY_WEIGHTS` ships" + (": the same)." if same else ": NOT the same — paste them in)."),
            "",
            "| feature | " + " | ".join(f"without {name}" for name in names) + " | all five |",
            "| --- |" + rule + " ---: |",
        ]
        for feature in FEATURES:
            cells = " | ".join(f"{learned.weights_by_fold[name][feature]:.4f}" for name in names)
            lines.append(f"| {feature} | {cells} | {learned.weights[feature]:.4f} |")
    if report.headroom:
        columns = [(units, search) for units, searches in report.headroom.items() for search in searches]
        lines += [
            "",
            "Where the evidence a search misses sits: each search's order at the store's settings (no relevance "
            "floor; the query map and the quality ranker fitted without the question's conversation) cut at ten, "
            "twenty and fifty records and not at all, beside every record of the scope (the ceiling: evidence no "
            "record cites cannot be found), and the top ten with an evidence turn also counted when they cite a "
            "turn next to it in the same session (a fact taken from the neighbouring turn of the one the question "
            "cites):",
            "",
            "| | " + " | ".join(f"{units}: {search}" for units, search in columns) + " |",
            "| --- |" + " ---: |" * len(columns),
        ]
        for measure in HEADROOM:
            cells = " | ".join(f"{report.headroom[units][search][measure]:.4f}" for units, search in columns)
            lines.append(f"| {measure} | {cells} |")
    lines += [
        "",
        "What was tried for questions whose evidence spans several sessions (multi-hop), on top of hybrid search "
        "— each at a strength (0: off, the baseline) picked on four conversations and measured on the fifth; kept "
        "only if it wins out of fold on both kinds of record:",
        "",
        f"| idea | strengths | picked without {' / '.join(names)} | {by_kind} | "
        + " | ".join(f"{units}, multi-hop: out of fold (baseline)" for units in kinds)
        + " | verdict |",
        "| --- | --- | --- |" + " ---: |" * (2 * len(kinds)) + " --- |",
    ]
    for label, strengths, results, categories in report.multi_hop:
        first = next(iter(results.values()))
        multi = " | ".join(
            f"{categories[u].get(1, (0.0, 0.0))[0]:.4f} ({categories[u].get(1, (0.0, 0.0))[1]:.4f})" for u in kinds
        )
        verdict = (
            "wins out of fold; not in the store (docs/search.md says why)"
            if all(r.wins for r in results.values())
            else "lost: not in the store"
        )
        picked, tried_values = " / ".join(_value(first.picks[n]) for n in names), ", ".join(map(_value, strengths))
        lines.append(f"| {label} | {tried_values} | {picked} | {_both(results)} | {multi} | {verdict} |")
    lines += ["", f"(The out-of-fold tables took {report.seconds:.0f} s.)", ""]
    return lines
