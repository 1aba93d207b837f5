"""Continuity benchmark on LoCoMo: does keyword recall find the evidence, in scope?

    python -m bench.locomo ../shared/datasets/locomo/locomo-dev.json \\
        [--store URL] [--no-events] [--out docs/benchmarks/locomo.md]
    python -m bench.locomo ../shared/datasets/locomo/locomo-dev.json --mode hybrid \\
        [--embedder default] [--out docs/benchmarks/locomo-hybrid.md]
    python -m bench.locomo ../shared/datasets/locomo/locomo-dev.json --mode hybrid --folds \\
        [--train-quality] [--train-query-map] [--units turns] [--out docs/benchmarks/locomo-folds.md]

Each conversation's observations (atomic facts, each citing the dialog ids it came
from) are written as records in one scope per conversation. Every question of
categories 1-4 (multi-hop, temporal, open-domain, single-hop; 5 is adversarial: its
answer is not in the conversation) is then searched in its own conversation's scope,
the way the agent toolbox reads (visible match), and:

* **recall@k** — the share of the question's evidence dialog ids covered by the
  dialog ids of the top k records, averaged over questions. Observations cite about
  80 % of the evidence ids, so that is the ceiling;
* **cross-scope leakage** — records from another conversation in any result. Each
  question is also searched in a *different* conversation's scope, where its words
  match nothing it may see; both must return only that scope's records. Must be 0;
* **characters** returned per search, **latency** p50/p99 per search;
* the turn-1 **recall block** at the default budget: how often it is truncated, its
  size, its latency, and how much evidence it carries.

Beside it, in the same run over the same data, a **baseline**: one raw SQLite FTS5
table (``unicode61 remove_diacritics 2``) queried with bm25 and the same tokens,
filtered to the conversation. The store's keyword search must not fall below it; the
command exits non-zero if it does, or if anything leaks.

With ``--mode semantic``, ``hybrid`` or ``quality`` the store embeds every observation
(the default model unless ``--embedder`` says) and is measured beside its own keyword
mode and naive reciprocal rank fusion (k = 60, equal weights) of its keyword and
semantic searches. Such a store is also measured with its relevance floor off
(``tuning.RELEVANCE_FLOOR``: a search returns what matches, not the whole scope ranked),
its searches and its recall blocks, in the same run.

With ``--folds`` every tuned choice of keyword, semantic and hybrid search is also
picked on four conversations and measured on the fifth, all five ways, on observations
and on dialog turns as records, against the untuned baselines, beside the relevance floor
picked the same way, the quality ranker fitted the same way and what was tried for
multi-hop questions (:mod:`bench.folds`); ``--train-quality`` prints the ranker's weights
fitted on all five conversations as ``tuning.QUALITY_WEIGHTS`` holds them, and
``--train-query-map`` writes the query map fitted on all five at
``tuning.QUERY_MAP_PENALTY`` where the package keeps it
(:mod:`memory_admin.embed.query_map`). ``--units
turns`` makes the dialog's turns the records of the main run. ``--mode quality`` times
the quality mode beside hybrid search, the default. The dataset's vectors are kept
between runs (:mod:`bench.embedded`).

The store runs as users run it, event log on (recall blocks land in its log too). Its
searches and recall blocks are also timed through a second store object over the same
data with the event log off, alternating with the first question by question, and both
latencies are reported side by side (``--no-events`` runs the store with its log off,
and skips the comparison).
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.embedded import CachedEmbedder
from bench.folds import Collected, FoldReport, collect, render, run_folds
from bench.measure import command, percentile, scratch, sqlite_url, tuned, write_report
from memory_admin import tuning
from memory_admin.embed import Embedder, open_embedder
from memory_admin.embed.fusion import rrf_fusion
from memory_admin.embed.query_map import query_map
from memory_admin.recall import DEFAULT_BUDGET_CHARS, assemble_recall
from memory_admin.records import SEARCH_MODES, MemoryRecord, SearchMode
from memory_admin.scope import canonical_scope
from memory_admin.store import BaseMemoryStore, open_store
from memory_admin.tokenize import unique_words
from memory_admin.tuning import FUSION_CANDIDATES as FUSE_DEPTH

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
KS = (5, 10)
SEARCH_LIMIT = max(KS)
TOLERANCE = 0.005
"""How far below insertion-order FTS5 the store's recall@10 may land: the two score
identically and differ only in how equal scores are ordered (see :class:`Fts5Baseline`)."""


# --- the data ------------------------------------------------------------------------


@dataclass(frozen=True)
class Observation:
    conversation: str
    text: str
    dialog_ids: frozenset[str]
    stated: datetime | None = None
    """When its session took place (the record's ``observed_at``)."""


@dataclass(frozen=True)
class Question:
    conversation: str
    text: str
    category: int
    evidence: frozenset[str]


@dataclass(frozen=True)
class Dataset:
    conversations: list[str]
    observations: list[Observation]
    questions: list[Question]

    def ceiling(self) -> float:
        """Mean share of a question's evidence that any observation cites."""
        cited: dict[str, set[str]] = {}
        for obs in self.observations:
            cited.setdefault(obs.conversation, set()).update(obs.dialog_ids)
        return statistics.fmean(len(q.evidence & cited[q.conversation]) / len(q.evidence) for q in self.questions)


def _evidence(raw: Sequence[str]) -> frozenset[str]:
    # a few entries hold two ids ("D8:6; D9:17"); malformed ones are kept and never match
    return frozenset(part.strip() for item in raw for part in item.split(";") if part.strip())


def session_time(text: str | None) -> datetime | None:
    """A session's date as LoCoMo writes it (``1:56 pm on 8 May, 2023``), taken as UTC."""
    if not text:
        return None
    try:
        return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
    except ValueError:
        return None


UNITS = ("observations", "turns")
"""What a record is: one of LoCoMo's observations (an atomic fact about a speaker, the
default), or one turn of the dialog as it was said (``Caroline: …``; a shared photo's
caption in brackets) — the protocol of benchmarks that store one record per turn, a few
hundred a scope, many of them small talk."""


def sessions(conversation: dict[str, Any]) -> Iterator[tuple[datetime | None, list[dict[str, Any]]]]:
    """A LoCoMo conversation's sessions in order: when each took place, and its turns."""
    for key, session in conversation.items():
        if key.startswith("session_") and not key.endswith("_date_time") and isinstance(session, list):
            yield session_time(conversation.get(f"{key}_date_time")), session


def turn_text(turn: dict[str, Any]) -> str:
    """One turn as it was said (``Caroline: …``; a shared photo's caption in brackets)."""
    text = f"{turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        text += f" [shares {turn['blip_caption']}]"
    return text


def _observations(name: str, sample: dict[str, Any]) -> list[Observation]:
    """LoCoMo's observations: atomic facts, each citing the dialog ids it came from."""
    observations = []
    for key, session in sample["observation"].items():
        stated = session_time(sample["conversation"].get(key.replace("_observation", "_date_time")))
        for facts in session.values():
            for text, dialog in facts:
                ids = [dialog] if isinstance(dialog, str) else list(dialog)
                observations.append(Observation(name, text, frozenset(ids), stated))
    return observations


def _turns(name: str, sample: dict[str, Any]) -> list[Observation]:
    """Each turn of the dialog as it was said, citing itself."""
    return [
        Observation(name, turn_text(turn), frozenset([str(turn["dia_id"])]), stated)
        for stated, session in sessions(sample["conversation"])
        for turn in session
    ]


def _sessions(name: str, sample: dict[str, Any]) -> list[Observation]:
    """Each session whole, its turns one a line, citing every one of them (:mod:`bench.sessions`)."""
    return [
        Observation(
            name,
            "\n".join(turn_text(turn) for turn in turns),
            frozenset(str(turn["dia_id"]) for turn in turns),
            stated,
        )
        for stated, turns in sessions(sample["conversation"])
    ]


RECORDS = {"observations": _observations, "turns": _turns, "sessions": _sessions}
"""What a record can be: each of :data:`UNITS`, and whole sessions."""


def load_dataset(path: Path, units: str = "observations") -> Dataset:
    """The conversations, their records (``units``: a key of :data:`RECORDS`) and their
    questions of categories 1-4."""
    data = json.loads(path.read_text(encoding="utf-8"))
    conversations: list[str] = []
    observations: list[Observation] = []
    questions: list[Question] = []
    for sample in data:
        name = str(sample["sample_id"])
        conversations.append(name)
        observations += RECORDS[units](name, sample)
        for qa in sample["qa"]:
            evidence = _evidence(qa.get("evidence", []))
            if qa["category"] in CATEGORIES and evidence:
                questions.append(Question(name, qa["question"], int(qa["category"]), evidence))
    return Dataset(conversations, observations, questions)


# --- measuring ---------------------------------------------------------------------


@dataclass
class Tally:
    """Per-question figures for one retriever."""

    recall: dict[int, list[float]] = field(default_factory=lambda: {k: [] for k in KS})
    by_category: dict[int, list[float]] = field(default_factory=dict)
    chars: dict[int, list[int]] = field(default_factory=lambda: {k: [] for k in KS})
    latency_ms: list[float] = field(default_factory=list)
    leaked: int = 0
    probes: int = 0

    def add(self, question: Question, ranked: list[tuple[str, frozenset[str], str]], seconds: float) -> None:
        """``ranked``: (conversation, dialog ids, content) of each result, best first."""
        self.latency_ms.append(seconds * 1000)
        self.leaked += sum(1 for conversation, _, _ in ranked if conversation != question.conversation)
        for k in KS:
            covered = set().union(*(ids for _, ids, _ in ranked[:k])) if ranked[:k] else set()
            share = len(question.evidence & covered) / len(question.evidence)
            self.recall[k].append(share)
            self.chars[k].append(sum(len(text) for _, _, text in ranked[:k]))
            if k == SEARCH_LIMIT:
                self.by_category.setdefault(question.category, []).append(share)

    def probe(self, searched: str, ranked: list[tuple[str, frozenset[str], str]]) -> None:
        self.probes += 1
        self.leaked += sum(1 for conversation, _, _ in ranked if conversation != searched)


@dataclass
class BlockTally:
    truncated: int = 0
    chars: list[int] = field(default_factory=list)
    latency_ms: list[float] = field(default_factory=list)
    coverage: list[float] = field(default_factory=list)
    leaked: int = 0


# --- the store under test ------------------------------------------------------------


@contextmanager
def opened(
    url: str | None, persist_events: bool, embedder: Embedder | None = None
) -> Iterator[tuple[BaseMemoryStore, BaseMemoryStore | None]]:
    """The store under test, and (when its log is on and a second object can share its
    data) the same data through a store object whose event log is off."""
    with scratch("locomo-bench-") as folder:
        url = url or sqlite_url(folder)
        with open_store(url, persist_events=persist_events, embedder=embedder or "none") as store:
            shared = persist_events and not url.startswith("memory:")
            if not shared:
                yield store, None
                return
            with open_store(url, persist_events=False, embedder=embedder or "none") as quiet:
                yield store, quiet


class StoreRun:
    """The dataset loaded into a memory store, one scope per conversation."""

    def __init__(self, store: BaseMemoryStore, dataset: Dataset, tenant: str, mode: SearchMode = "keyword") -> None:
        self.store = store
        self.tenant = tenant
        self.mode = mode
        self.owner: dict[str, tuple[str, frozenset[str]]] = {}
        started = time.perf_counter()
        for conversation in dataset.conversations:
            inputs = [
                {
                    "scope": self.scope(conversation),
                    "kind": "fact",
                    "content": obs.text,
                    "provenance": {"source": "locomo", "conversation_id": conversation},
                    "observed_at": obs.stated,
                }
                for obs in dataset.observations
                if obs.conversation == conversation
            ]
            records = store.write(inputs)
            for record, obs in zip(
                records, (o for o in dataset.observations if o.conversation == conversation), strict=True
            ):
                self.owner[record.id] = (conversation, obs.dialog_ids)
        self.ingest_seconds = time.perf_counter() - started

    def scope(self, conversation: str) -> dict[str, str]:
        return canonical_scope({"tenant": self.tenant, "conversation": conversation})

    def describe(self, record: MemoryRecord) -> tuple[str, frozenset[str], str]:
        # a record this run did not write (another scope's, in a shared store) is a leak
        conversation, ids = self.owner.get(record.id, (f"<foreign {record.scope}>", frozenset()))
        return conversation, ids, record.content

    def search(self, conversation: str, text: str) -> tuple[list[tuple[str, frozenset[str], str]], float]:
        return self.search_by(self.mode, conversation, text)

    def search_by(
        self, mode: SearchMode, conversation: str, text: str, limit: int = SEARCH_LIMIT
    ) -> tuple[list[tuple[str, frozenset[str], str]], float]:
        started = time.perf_counter()
        hits = self.store.search(self.query(conversation, text, limit, mode))
        elapsed = time.perf_counter() - started
        return [self.describe(hit.record) for hit in hits], elapsed

    def keyword(self, conversation: str, text: str) -> tuple[list[tuple[str, frozenset[str], str]], float]:
        return self.search_by("keyword", conversation, text)

    def query(self, conversation: str, text: str, limit: int, mode: SearchMode) -> dict[str, Any]:
        """A search of ``text`` in the conversation's scope, as the toolbox reads (visible match)."""
        return {
            "scope": self.scope(conversation),
            "scope_match": "visible",
            "query": text,
            "limit": limit,
            "mode": mode,
        }

    def candidates(
        self, conversation: str, text: str
    ) -> tuple[dict[str, float], dict[str, float], dict[str, MemoryRecord]]:
        """The store's keyword and semantic searches, each its top :data:`FUSE_DEPTH` (record
        id → its score), and their records."""
        keyword = self.store.search(self.query(conversation, text, FUSE_DEPTH, "keyword"))
        semantic = self.store.search(self.query(conversation, text, FUSE_DEPTH, "semantic"))
        records = {hit.record.id: hit.record for hit in (*keyword, *semantic)}
        return {h.record.id: h.score or 0.0 for h in keyword}, {h.record.id: h.score or 0.0 for h in semantic}, records

    def rrf(self, conversation: str, text: str) -> tuple[list[tuple[str, frozenset[str], str]], float]:
        """What most libraries ship: reciprocal rank fusion (k = 60, equal weights) of the
        store's keyword and semantic searches."""
        started = time.perf_counter()
        keyword, semantic, records = self.candidates(conversation, text)
        fused = rrf_fusion(list(keyword), list(semantic), limit=SEARCH_LIMIT)
        elapsed = time.perf_counter() - started
        return [self.describe(records[record_id]) for record_id, _ in fused], elapsed

    def recall_block(self, question: Question, tally: BlockTally) -> None:
        started = time.perf_counter()
        result = assemble_recall(self.store, self.scope(question.conversation), question.text)
        tally.latency_ms.append((time.perf_counter() - started) * 1000)
        tally.truncated += int(result.report.truncated)
        tally.chars.append(result.report.chars)
        owners = [self.owner.get(record_id) for record_id in result.report.record_ids]
        tally.leaked += sum(1 for owner in owners if owner is None or owner[0] != question.conversation)
        covered = set().union(*(owner[1] for owner in owners if owner is not None)) if owners else set()
        tally.coverage.append(len(question.evidence & covered) / len(question.evidence))


# --- the baseline ------------------------------------------------------------------


class Fts5Baseline:
    """The same observations in one raw FTS5 table, searched with bm25.

    Equal bm25 scores are common (short facts, one shared word). FTS5 returns them in
    insertion order; the store's contract puts the newer record first, and within one
    write batch the later input counts as newer. ``newest_first`` orders ties the
    store's way, which isolates the scoring from the tie rule.
    """

    def __init__(self, dataset: Dataset, folder: Path, *, newest_first: bool = False) -> None:
        self.order = "bm25(facts), rowid DESC" if newest_first else "bm25(facts)"
        self.db = sqlite3.connect(folder / f"baseline-{'newest' if newest_first else 'inserted'}.sqlite3")
        self.db.execute(
            "CREATE VIRTUAL TABLE facts USING fts5(content, conversation UNINDEXED, dialog_ids UNINDEXED, "
            "tokenize='unicode61 remove_diacritics 2')"
        )
        started = time.perf_counter()
        with self.db:
            self.db.executemany(
                "INSERT INTO facts (content, conversation, dialog_ids) VALUES (?, ?, ?)",
                [(o.text, o.conversation, json.dumps(sorted(o.dialog_ids))) for o in dataset.observations],
            )
        self.ingest_seconds = time.perf_counter() - started

    def search(self, conversation: str, text: str) -> tuple[list[tuple[str, frozenset[str], str]], float]:
        started = time.perf_counter()
        tokens = unique_words(text)  # the raw table indexes unstemmed words
        rows: list[tuple[str, str, str]] = []
        if tokens:
            expression = " OR ".join('"' + token.replace('"', '""') + '"' for token in tokens)
            rows = self.db.execute(
                "SELECT conversation, dialog_ids, content FROM facts WHERE facts MATCH ? AND conversation = ? "
                f"ORDER BY {self.order} LIMIT ?",
                (expression, conversation, SEARCH_LIMIT),
            ).fetchall()
        elapsed = time.perf_counter() - started
        return [(c, frozenset(json.loads(ids)), content) for c, ids, content in rows], elapsed

    def close(self) -> None:
        self.db.close()


# --- the run -------------------------------------------------------------------------


@dataclass
class QuietTimings:
    """The same searches and recall blocks through a store object with the event log off."""

    search_ms: list[float] = field(default_factory=list)
    block_ms: list[float] = field(default_factory=list)

    def measure(self, loaded: StoreRun, quiet: BaseMemoryStore, question: Question) -> None:
        scope = loaded.scope(question.conversation)
        started = time.perf_counter()
        quiet.search(loaded.query(question.conversation, question.text, SEARCH_LIMIT, loaded.mode))
        self.search_ms.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        assemble_recall(quiet, scope, question.text)
        self.block_ms.append((time.perf_counter() - started) * 1000)


@dataclass
class Results:
    dataset: Dataset
    backend: str
    events: bool
    store: Tally
    baseline: Tally
    baseline_newest: Tally
    block: BlockTally
    ingest_s: float
    baseline_ingest_s: float
    quiet: QuietTimings | None = None
    mode: SearchMode = "keyword"
    model: str | None = None
    extra: list[tuple[str, Tally]] = field(default_factory=list)
    """Beside a semantic or hybrid store: its keyword mode, and naive RRF of its two searches."""
    block_unfloored: BlockTally | None = None
    """The recall blocks again, the store's relevance floor off."""
    folds: FoldReport | None = None
    """Every tuned choice out of fold (``--folds``)."""
    cached: bool = False
    """Vectors came from the benchmarks' cache (so ingest did not embed)."""
    units: str = "observations"


def run(
    dataset: Dataset,
    store_url: str | None,
    persist_events: bool,
    *,
    mode: SearchMode = "keyword",
    embedder: Embedder | None = None,
    other: Dataset | None = None,
    units: str = "observations",
) -> Results:
    """One run of the benchmark; with ``other`` (the same conversations with the other
    kind of record), also every tuned choice out of fold (:mod:`bench.folds`)."""
    folds = other is not None
    other_units = next(u for u in UNITS if u != units)
    store_tally, base_tally, newest_tally, block_tally = Tally(), Tally(), Tally(), BlockTally()
    fold_report: FoldReport | None = None
    block_unfloored = BlockTally() if mode != "keyword" else None
    extra: list[tuple[str, Tally]] = []
    # (keyword weight, context weight) → recall@10 per question
    neighbour = {
        c: dataset.conversations[(i + 1) % len(dataset.conversations)] for i, c in enumerate(dataset.conversations)
    }
    quiet_timings = None
    with (
        opened(store_url, persist_events, embedder) as (store, quiet),
        scratch("locomo-fts5-") as folder,
    ):
        tenant = f"locomo-{uuid.uuid4().hex[:8]}"
        loaded = StoreRun(store, dataset, tenant, mode)
        baseline = Fts5Baseline(dataset, folder)
        baseline_newest = Fts5Baseline(dataset, folder, newest_first=True)
        try:
            retrievers: list[tuple[Tally, Callable[[str, str], tuple[list[Any], float]]]] = [
                (store_tally, loaded.search),
                (base_tally, baseline.search),
                (newest_tally, baseline_newest.search),
            ]
            if mode != "keyword":

                def unfloored(conversation: str, text: str) -> tuple[list[tuple[str, frozenset[str], str]], float]:
                    with tuned(RELEVANCE_FLOOR=None):  # every record of the scope, ranked
                        return loaded.search(conversation, text)

                extra = [
                    (f"memory store, {mode} search without the relevance floor", Tally()),
                    ("memory store, keyword mode", Tally()),
                    ("naive RRF (k = 60) of its two searches", Tally()),
                ]
                retrievers += [(extra[0][1], unfloored), (extra[1][1], loaded.keyword), (extra[2][1], loaded.rrf)]
                if mode == "quality":  # beside the default, timed in the same run

                    def hybrid(conversation: str, text: str) -> tuple[list[tuple[str, frozenset[str], str]], float]:
                        return loaded.search_by("hybrid", conversation, text)

                    extra.append(("memory store, hybrid mode (the default)", Tally()))
                    retrievers.append((extra[-1][1], hybrid))
            for _, search in retrievers:  # warm caches and statements outside the timings
                for question in dataset.questions[:20]:
                    search(question.conversation, question.text)
            if quiet is not None:
                quiet_timings = QuietTimings()
                for question in dataset.questions[:20]:
                    QuietTimings().measure(loaded, quiet, question)
            for index, question in enumerate(dataset.questions):
                if quiet_timings is not None and quiet is not None and index % 2:
                    quiet_timings.measure(loaded, quiet, question)  # before the store on odd questions
                for tally, search in retrievers:
                    ranked, seconds = search(question.conversation, question.text)
                    tally.add(question, ranked, seconds)
                    elsewhere = neighbour[question.conversation]
                    tally.probe(elsewhere, search(elsewhere, question.text)[0])
                loaded.recall_block(question, block_tally)
                if block_unfloored is not None:
                    with tuned(RELEVANCE_FLOOR=None):  # every record of the scope, ranked
                        loaded.recall_block(question, block_unfloored)
                if quiet_timings is not None and quiet is not None and not index % 2:
                    quiet_timings.measure(loaded, quiet, question)
            if folds and embedder is not None and other is not None:
                with open_store("memory://", persist_events=False) as plain:
                    shapes = {units: collect(loaded, plain, dataset, embedder, base_tally.recall[SEARCH_LIMIT])}
                with other_shape(other, embedder, tenant) as (other_run, collected):
                    shapes[other_units] = collected
                    fold_report = run_folds(shapes, {units: loaded, other_units: other_run})
        finally:
            baseline.close()
            baseline_newest.close()
            if store_url is not None and store.capabilities().erasure:
                store.erase({"tenant": tenant})  # leave a shared store as it was
        return Results(
            dataset=dataset,
            backend=store.capabilities().backend,
            events=persist_events,
            store=store_tally,
            baseline=base_tally,
            baseline_newest=newest_tally,
            block=block_tally,
            ingest_s=loaded.ingest_seconds,
            baseline_ingest_s=baseline.ingest_seconds,
            quiet=quiet_timings,
            mode=mode,
            model=embedder.model_id if embedder is not None else None,
            extra=extra,
            block_unfloored=block_unfloored,
            folds=fold_report,
            cached=getattr(embedder, "hits", 0) > 0,
            units=units,
        )


@contextmanager
def other_shape(dataset: Dataset, embedder: Embedder, tenant: str) -> Iterator[tuple[StoreRun, Collected]]:
    """The same conversations with the other kind of record, in a store of their own, and
    what its searches compute (:func:`bench.folds.collect`)."""
    with (
        scratch("locomo-other-") as folder,
        open_store(sqlite_url(folder), persist_events=False, embedder=embedder) as store,
        open_store("memory://", persist_events=False) as plain,
    ):
        loaded = StoreRun(store, dataset, tenant, "hybrid")
        baseline, raw = Fts5Baseline(dataset, folder), Tally()
        try:
            for question in dataset.questions:
                raw.add(question, *baseline.search(question.conversation, question.text))
        finally:
            baseline.close()
        yield loaded, collect(loaded, plain, dataset, embedder, raw.recall[SEARCH_LIMIT])


def _mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else 0.0


def train_query_map(folds: FoldReport, model: str) -> str:
    """Write the map fitted on all five conversations at the store's penalty (float16)
    where :func:`~memory_admin.embed.query_map.map_path` finds it; say what changed."""
    from memory_admin.embed.protocol import numpy
    from memory_admin.embed.query_map import map_path

    np = numpy()
    path, fitted = map_path(model), folds.query_map
    if path is None or fitted is None:
        return f"\n{model} has no query map to train.\n"
    shipped = query_map(model) if path.is_file() else None
    np.save(path, fitted.astype(np.float16), allow_pickle=False)
    query_map.cache_clear()
    moved = "new" if shipped is None else f"largest change {float(np.abs(query_map(model) - shipped).max()):.2g}"
    fitted_how = f"fitted on every conversation (penalty {tuning.QUERY_MAP_PENALTY:g})"
    return f"\nWrote the query map {fitted_how} to {path.name} ({moved}).\n"


def _recall_at(k: int) -> Callable[[Tally], str]:
    return lambda tally: f"{_mean(tally.recall[k]):.4f}"


def _recall_in(category: int) -> Callable[[Tally], str]:
    return lambda tally: f"{_mean(tally.by_category.get(category, [])):.4f}"


def _chars_at(k: int) -> Callable[[Tally], str]:
    return lambda tally: f"{_mean(tally.chars[k]):.0f}"


def report(results: Results, command_line: str) -> str:
    data, block = results.dataset, results.block
    tallies = (results.store, results.baseline, results.baseline_newest, *(tally for _, tally in results.extra))
    per_category = {category: sum(1 for q in data.questions if q.category == category) for category in CATEGORIES}

    def row(label: str, value: Callable[[Tally], str]) -> str:
        return f"| {label} | " + " | ".join(value(tally) for tally in tallies) + " |"

    lines = [
        "# LoCoMo continuity benchmark",
        "",
        f"Command: `{command_line}`",
        "",
        f"{len(data.conversations)} conversations, {len(data.observations)} observations written as records "
        f"(one scope per conversation), {len(data.questions)} questions of categories 1-4 "
        f"({', '.join(f'{CATEGORIES[c]} {n}' for c, n in per_category.items())}). "
        f"Store: {results.backend}, {results.mode} search"
        + (f" with {results.model}" if results.model else "")
        + f", event log {'on' if results.events else 'off'}. "
        f"Evidence ceiling (share of evidence ids any observation cites): {data.ceiling():.3f}."
        + (
            " The store moves each question's vector by its model's query map, which was fitted on these "
            "very conversations: its figures here flatter it; docs/benchmarks/locomo-folds.md measures every "
            "search with the map fitted without the conversation searched."
            if results.model and results.mode != "keyword" and tuning.QUERY_MAP and query_map(results.model) is not None
            else ""
        ),
        "",
        f"| | memory store ({results.mode} search, visible match) | raw FTS5 bm25, ties in insertion order "
        "| raw FTS5 bm25, ties newest first |" + "".join(f" {label} |" for label, _ in results.extra),
        "| --- | ---: | ---: | ---: |" + " ---: |" * len(results.extra),
    ]
    lines += [row(f"recall@{k}", _recall_at(k)) for k in KS]
    lines += [row(f"recall@{SEARCH_LIMIT}, {name}", _recall_in(category)) for category, name in CATEGORIES.items()]
    lines += [
        row(
            f"cross-scope leakage (records, {results.store.probes} own-scope + {results.store.probes} "
            "other-scope searches)",
            lambda t: str(t.leaked),
        ),
        *(row(f"characters returned per search, top {k} (mean)", _chars_at(k)) for k in KS),
        row("search latency p50 (ms)", lambda t: f"{percentile(t.latency_ms, 0.5):.2f}"),
        row("search latency p99 (ms)", lambda t: f"{percentile(t.latency_ms, 0.99):.2f}"),
        f"| ingest (s, all records{_embedding_note(results)}) | {results.ingest_s:.2f} "
        f"| {results.baseline_ingest_s:.2f} | |" + " |" * len(results.extra),
        "",
        f"Turn-1 recall block at the default budget ({DEFAULT_BUDGET_CHARS} characters), one per question:",
        "",
        "| | |",
        "| --- | ---: |",
        f"| truncation rate | {block.truncated / len(block.chars):.4f} ({block.truncated} of {len(block.chars)}) |",
        f"| characters (mean / max) | {_mean(block.chars):.0f} / {max(block.chars)} |",
        f"| evidence covered by the block's records (mean) | {_mean(block.coverage):.4f} |",
        f"| records from another conversation | {block.leaked} |",
        f"| assembly latency p50 / p99 (ms) | {percentile(block.latency_ms, 0.5):.2f} / "
        f"{percentile(block.latency_ms, 0.99):.2f} |",
        "",
    ]
    if results.quiet is not None:
        quiet = results.quiet

        def compare(label: str, on: Sequence[float], off: Sequence[float], q: float) -> str:
            a, b = percentile(on, q), percentile(off, q)
            return f"| {label} | {a:.2f} | {b:.2f} | {a / b:.2f}× |" if b else f"| {label} | {a:.2f} | {b:.2f} | |"

        lines += [
            "The store above runs with its event log on (the default). The same searches and blocks through a "
            "second store object over the same data with the event log off, alternating with it question by "
            "question:",
            "",
            "| | event log on | event log off | on/off |",
            "| --- | ---: | ---: | ---: |",
            compare("search latency p50 (ms)", results.store.latency_ms, quiet.search_ms, 0.5),
            compare("search latency p99 (ms)", results.store.latency_ms, quiet.search_ms, 0.99),
            compare("recall assembly p50 (ms)", block.latency_ms, quiet.block_ms, 0.5),
            compare("recall assembly p99 (ms)", block.latency_ms, quiet.block_ms, 0.99),
            "",
        ]
    lines += _floor_report(results)
    if results.folds is not None:
        lines += render(results.folds)
    problems = verdict_problems(results)
    lines.append("Verdict: " + ("pass." if not problems else "FAIL: " + "; ".join(problems) + "."))
    return "\n".join(lines) + "\n"


def _embedding_note(results: Results) -> str:
    if not results.model:
        return ""
    return ", vectors from the benchmarks' cache" if results.cached else ", embedding included"


def _floor_report(results: Results) -> list[str]:
    """The relevance floor: the store's, and what it costs (``--folds`` picks it out of fold)."""
    unfloored = results.block_unfloored
    if unfloored is None:
        return []
    without = results.extra[0][1]
    lines = [
        f"Relevance floor: {tuning.RELEVANCE_FLOOR} (`tuning.RELEVANCE_FLOOR`): a {results.mode} search returns the "
        "records that share a word with the question or whose similarity reaches it, not the whole scope "
        "ranked. The same run with the floor off:",
        "",
        "| | floor on | floor off |",
        "| --- | ---: | ---: |",
        f"| search recall@{SEARCH_LIMIT} | {_mean(results.store.recall[SEARCH_LIMIT]):.4f} "
        f"| {_mean(without.recall[SEARCH_LIMIT]):.4f} |",
        f"| recall block: evidence covered (mean) | {_mean(results.block.coverage):.4f} "
        f"| {_mean(unfloored.coverage):.4f} |",
        f"| recall block: characters (mean) | {_mean(results.block.chars):.0f} | {_mean(unfloored.chars):.0f} |",
        f"| recall block: truncated | {results.block.truncated} | {unfloored.truncated} |",
        "",
    ]
    return lines


def verdict_problems(results: Results) -> list[str]:
    """Why the run fails: recall below the baseline, or any record across scopes."""
    problems = []
    store = _mean(results.store.recall[SEARCH_LIMIT])
    same_ties = _mean(results.baseline_newest.recall[SEARCH_LIMIT])
    inserted = _mean(results.baseline.recall[SEARCH_LIMIT])
    if store < same_ties - 1e-9:
        problems.append(
            f"store recall@{SEARCH_LIMIT} {store:.4f} is below FTS5 bm25 with the same tie rule {same_ties:.4f}"
        )
    if store < inserted - TOLERANCE:
        problems.append(
            f"store recall@{SEARCH_LIMIT} {store:.4f} is below FTS5 bm25 {inserted:.4f} by more than ties explain"
        )
    if results.store.leaked or results.block.leaked:
        problems.append(f"{results.store.leaked + results.block.leaked} records leaked across scopes")
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.locomo", description=__doc__)
    parser.add_argument("dataset", type=Path, help="a LoCoMo JSON file (e.g. locomo-dev.json)")
    parser.add_argument("--store", help="store URL (default: a fresh temporary SQLite file)")
    parser.add_argument("--no-events", action="store_true", help="do not persist search/write events while measuring")
    parser.add_argument(
        "--mode",
        choices=SEARCH_MODES,
        default="keyword",
        help="the store's search mode (semantic and hybrid embed with --embedder, and are reported beside the "
        "store's keyword mode and naive RRF)",
    )
    parser.add_argument("--embedder", default="default", help="embedder spec for --mode semantic or hybrid")
    parser.add_argument(
        "--folds",
        action="store_true",
        help="semantic, hybrid or quality: also choose every tuned setting on four conversations and measure it "
        "on the fifth, all five ways, against the untuned baselines (and fit the quality ranker that way)",
    )
    parser.add_argument(
        "--units", choices=UNITS, default="observations", help="what a record is: an observation or a dialog turn"
    )
    parser.add_argument(
        "--train-quality",
        action="store_true",
        help="with --folds: print the quality ranker's weights fitted on every conversation, as tuning.py holds them",
    )
    parser.add_argument(
        "--train-query-map",
        action="store_true",
        help="with --folds: write the query map fitted on every conversation where the package keeps it "
        "(memory_admin/embed/data)",
    )
    parser.add_argument("--out", type=Path, help="also write the report (Markdown) to this file")
    options = parser.parse_args(argv)
    dataset = load_dataset(options.dataset, options.units)
    embedder = CachedEmbedder(open_embedder(options.embedder)) if options.mode != "keyword" else None
    other = load_dataset(options.dataset, next(u for u in UNITS if u != options.units)) if options.folds else None
    results = run(
        dataset,
        options.store,
        persist_events=not options.no_events,
        mode=options.mode,
        embedder=embedder,
        other=other,
        units=options.units,
    )
    if embedder is not None:
        embedder.save()
    text = report(results, command("bench.locomo", argv))
    if options.train_quality and results.folds is not None and results.folds.learned is not None:
        text += "\n```python\nQUALITY_WEIGHTS: dict[str, float] = {\n"
        text += "".join(f'    "{name}": {weight},\n' for name, weight in results.folds.learned.weights.items())
        text += "}\n```\n"
    if options.train_query_map and results.folds is not None and results.model is not None:
        text += train_query_map(results.folds, results.model)
    print(text, end="")
    write_report(options.out, text)
    return 1 if verdict_problems(results) else 0


if __name__ == "__main__":
    sys.exit(main())
