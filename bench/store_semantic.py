"""Store benchmark with the embedder: recall by meaning at 100k and 1M records.

    python -m bench.store_semantic --sizes 100000,1000000 [--out docs/benchmarks/store-semantic.md]

Each size runs in a fresh subprocess (peak RSS is that size's own) on a fresh SQLite
file of the bench corpus (:mod:`bench.corpus`), the store in its hybrid
configuration, event log on. It measures:

* **model load**: a fresh process loading the default model and embedding one query;
* **ingest with embedding**: ``--ingest`` corpus records written through a store with
  the default embedder (every record embedded in its write), beside the same records
  through a keyword-only store;
* **search**: user-scoped and tenant-wide searches in hybrid (the default), quality,
  semantic and keyword mode, p50/p99, every search by meaning including its query's
  embedding by the default model;
* **bytes per record** with vectors (the event log's pages left out), **peak RSS** of
  the process that opens the filled file and searches it (and runs the ingest): the
  fill runs in a process of its own, whose peak is reported apart.

Filling a store of a million records through the model would take hours on two cores,
so the fill (not measured) stores feature-hashed vectors of the same 384 dimensions
(:class:`~memory_admin.embed.hashing.HashingEmbedder`): the same bytes per record and the
same scan. Searches embed their query with the default model, then search with the
query's hashed vector: each search pays the model's cost and the store's exact scan
over that many stored vectors, which is what its latency is made of — the vectors'
values change which records come back, not how long finding them takes. Quality is
measured on real text by :mod:`bench.locomo`.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from statistics import median
from typing import Any

from bench.corpus import Corpus
from bench.locomo import load_dataset
from bench.measure import (
    MS,
    LoadSampler,
    answer_parent,
    command,
    ingest,
    load_line,
    peak_rss_mb,
    run_child,
    scratch,
    seconds_each,
    summary,
    timed,
    write_report,
)
from bench.store import record_bytes
from memory_admin.embed import HashingEmbedder, OnnxEmbedder, default_embedder
from memory_admin.embed.protocol import BaseEmbedder, Matrix, Side
from memory_admin.store.sqlite import SqliteMemoryStore

DIMENSIONS = 384
MODES = ("hybrid", "quality", "semantic", "keyword")
TARGETS = {
    "user_hybrid_p99_ms": 25.0,
    "tenant_hybrid_p99_ms": 150.0,
    "bytes_per_record": 900,
    "ingest_per_s": 200,
    "load_s": 1.0,
    "peak_rss_mb": 400,
}


class TimedQueries(BaseEmbedder):
    """Documents by feature hashing (the fill); queries embedded by the real model first,
    then answered with their hashed vector, so a search costs what it costs a user."""

    def __init__(self, model: OnnxEmbedder) -> None:
        self._model = model
        self._hashing = HashingEmbedder(DIMENSIONS)
        self.batch_size = self._hashing.batch_size

    @property
    def model_id(self) -> str:
        return self._hashing.model_id

    @property
    def dimensions(self) -> int:
        return DIMENSIONS

    def _embed_batch(self, texts: list[str], side: Side) -> Matrix:
        if side == "query":
            self._model.embed_queries(texts)
        return self._hashing._embed_batch(texts, side)


def load_seconds() -> float:
    """A fresh process: import, load the default model, embed one query."""
    script = (
        "import time; t = time.perf_counter(); from memory_admin.embed import default_embedder; "
        "e = default_embedder(); e.embed_query('where does dana work'); print(time.perf_counter() - t)"
    )
    child = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True)
    return float(child.stdout.strip())


def ingest_inputs(corpus: Corpus, count: int, texts: Sequence[str]) -> list[dict[str, Any]]:
    """``count`` corpus inputs; with ``texts``, their contents are those texts in turn."""
    inputs = list(corpus.inputs(count, seed=99))
    for index, item in enumerate(inputs if texts else []):
        item["content"] = texts[index % len(texts)]
    return inputs


INGEST_ROUNDS = 3
"""Ingest runs this many times, each into a fresh file, the two stores taking turns: the
model's throughput on a small machine moves by half from one minute to the next, so the
report gives the median and the range, not one draw."""


def ingest_rates(
    workdir: Path, corpus: Corpus, count: int, model: OnnxEmbedder, texts: Sequence[str] = (), rounds: int = 1
) -> tuple[list[float], list[float]]:
    """Records per second through a store that embeds (the default model) and one that
    does not, ``rounds`` times each."""
    inputs = ingest_inputs(corpus, count, texts)
    rates: dict[str, list[float]] = {"ingest+embed": [], "ingest keyword": []}
    for round_ in range(rounds):
        for name, embedder in (("ingest+embed", model), ("ingest keyword", None)):
            path = workdir / f"ingest-{name}-{len(texts)}-{round_}.sqlite3"
            with SqliteMemoryStore(path, embedder=embedder) as store:
                rates[name].append(ingest(f"{name} {round_ + 1}/{rounds}", store.write, inputs, count, batch=100))
    return rates["ingest+embed"], rates["ingest keyword"]


def rounds_label(result: dict[str, Any]) -> str:
    rounds = len(result["ingest_rates"])
    return "one run" if rounds == 1 else f"median of {rounds} runs (range)"


def rates_text(rates: Sequence[float]) -> str:
    """The median, and the range when there are several rounds."""
    if len(rates) == 1:
        return f"{rates[0]:.0f}"
    return f"{median(rates):.0f} ({min(rates):.0f}–{max(rates):.0f})"


WARM = 20
"""Searches of each row run untimed first (caches warmed), then not timed again."""


def run_size(
    size: int, workdir: Path, queries: int, ingested: int, texts_path: Path | None, rounds: int = INGEST_ROUNDS
) -> dict[str, Any]:
    sampler = LoadSampler()
    corpus = Corpus()
    result: dict[str, Any] = {"size": size, "load_s": load_seconds()}
    model = default_embedder()
    model.load()
    result["ingest_rates"], result["keyword_ingest_rates"] = ingest_rates(workdir, corpus, ingested, model, (), rounds)
    result["ingest_per_s"] = median(result["ingest_rates"])
    if texts_path is not None:
        texts = [o.text for o in load_dataset(texts_path).observations]
        result["texts_ingest_rates"], _ = ingest_rates(workdir, corpus, ingested, model, texts, rounds)
        result["texts_ingest_per_s"] = median(result["texts_ingest_rates"])
        result["texts_mean_chars"] = sum(map(len, texts)) / len(texts)
    result["corpus_mean_chars"] = sum(len(i["content"]) for i in ingest_inputs(corpus, ingested, ())) / ingested

    path = workdir / f"semantic-{size}.sqlite3"
    # the fill runs in a process of its own: the RSS measured here is that of a process
    # opening a store of this size and searching it (and writing to the ingest files)
    result.update(run_child("bench.store_semantic", "--fill", str(size), "--file", str(path)))
    store = SqliteMemoryStore(path, embedder=TimedQueries(model))

    # the first search of each tenant reads its vectors' signs into the process's copy:
    # timed apart, so the rows below are a running process's
    rng = random.Random(11)
    firsts = [({"tenant": f"t{n:02d}"}, corpus.query(rng)) for n in range(corpus.shape.tenants)]
    cold = [partial(store.search, {"scope": scope, "query": query, "mode": "semantic"}) for scope, query in firsts]
    result["cold_tenant"] = summary(seconds_each(cold), scale=MS)
    # every mode gets questions of its own: the store keeps recent query embeddings, and a
    # repeated question would measure that cache instead of the model
    for label, count in (("user", queries), ("tenant", max(queries // 4, 20))):
        for mode in MODES:
            cases = [
                (
                    corpus.active_user_scope(rng) if label == "user" else {"tenant": corpus.tenant(rng)},
                    corpus.query(rng),
                )
                for _ in range(count + WARM)
            ]
            calls = [
                (lambda s=scope, q=query, m=mode: store.search({"scope": s, "query": q, "mode": m, "limit": 10}))
                for scope, query in cases
            ]
            result[f"{label}_{mode}"] = timed(calls[WARM:], warmup=calls[:WARM])
    result["peak_rss_mb"] = peak_rss_mb()
    result["load"] = sampler.stop()
    store.close()
    return result


def fill(size: int, path: Path) -> dict[str, Any]:
    """A fresh file of ``size`` corpus records with feature-hashed vectors (see the
    module docstring): its bytes per record, vectors and this process's peak RSS."""
    with SqliteMemoryStore(path, embedder=HashingEmbedder(DIMENSIONS)) as store:
        ingest("fill", store.write, Corpus().inputs(size), size)
        store.optimize()
        store.flush_events()
        embedded = store.embedding_status().embedded
    return {
        "bytes_per_record": record_bytes(path) / size,
        "embedded": embedded,
        "fill_rss_mb": peak_rss_mb(),
    }


def report(results: list[dict[str, Any]], command_line: str) -> str:
    def ms(r: dict[str, Any], key: str) -> str:
        return f"{r[key]['p50']:.2f} / {r[key]['p99']:.2f}"

    def target(key: str, value: float, *, most: bool = True) -> str:
        goal = TARGETS[key]
        met = value <= goal if most else value >= goal
        return f"{'≤' if most else '≥'} {goal:g} {'(met)' if met else '(not met)'}"

    header = "| | " + " | ".join(f"{r['size']:,} records" for r in results) + " | target |"
    lines = [
        "# Store benchmark with the embedder (SQLite, hybrid)",
        "",
        f"Command: `{command_line}`",
        "",
        "The store in its hybrid configuration (the default embedder, all-MiniLM-L6-v2 int8 on onnxruntime), "
        "event log on. Every hybrid and semantic search below includes embedding its query with the default "
        "model. The large fill stores feature-hashed vectors of the same 384 dimensions (see the module "
        "docstring: same bytes, same exact scan); ingest with embedding is measured with the model itself.",
        "",
        header,
        "| --- | " + " | ".join("---:" for _ in results) + " | --- |",
    ]

    def row(label: str, cell: Callable[[dict[str, Any]], str], goal: str = "") -> str:
        return f"| {label} | " + " | ".join(cell(r) for r in results) + f" | {goal} |"

    last = results[-1]
    for who, searched in (("user", "user-scoped"), ("tenant", "tenant-wide")):
        for mode in MODES:
            key = f"{who}_{mode}"
            goal = target(f"{key}_p99_ms", last[key]["p99"]) if f"{key}_p99_ms" in TARGETS else ""
            lines.append(row(f"{searched} {mode} p50 / p99 (ms)", partial(ms, key=key), goal))
    lines += [
        row(
            "hybrid / keyword p99, user-scoped",
            lambda r: f"{r['user_hybrid']['p99'] / r['user_keyword']['p99']:.2f}×",
        ),
        row(
            "bytes per record, vectors included",
            lambda r: f"{r['bytes_per_record']:.0f}",
            target("bytes_per_record", last["bytes_per_record"]),
        ),
        row(
            f"ingest with embedding, corpus records of {last['corpus_mean_chars']:.0f} characters "
            f"(records/s, {rounds_label(last)})",
            lambda r: rates_text(r["ingest_rates"]),
            target("ingest_per_s", min(r["ingest_per_s"] for r in results), most=False),
        ),
        row(
            f"ingest keyword-only, same records (records/s, {rounds_label(last)})",
            lambda r: rates_text(r["keyword_ingest_rates"]),
        ),
        *(
            [
                row(
                    f"ingest with embedding, LoCoMo observations of {last['texts_mean_chars']:.0f} characters "
                    f"(records/s, {rounds_label(last)})",
                    lambda r: rates_text(r["texts_ingest_rates"]),
                    target("ingest_per_s", min(r["texts_ingest_per_s"] for r in results), most=False),
                )
            ]
            if "texts_ingest_per_s" in last
            else []
        ),
        row(
            "model load, fresh process, first query included (s)",
            lambda r: f"{r['load_s']:.2f}",
            target("load_s", max(r["load_s"] for r in results)),
        ),
        row(
            "peak RSS of a process searching it and writing (MB)",
            lambda r: f"{r['peak_rss_mb']:.0f}",
            target("peak_rss_mb", max(r["peak_rss_mb"] for r in results)),
        ),
        row("peak RSS of the process that filled it (MB)", lambda r: f"{r['fill_rss_mb']:.0f}"),
        row("records with a vector", lambda r: f"{r['embedded']:,}"),
        row(
            "first tenant-wide search of a tenant in a process, p50 / max (ms)",
            lambda r: f"{r['cold_tenant']['p50']:.0f} / {r['cold_tenant']['p99']:.0f}",
        ),
        "",
        "The first search of a scope in a process reads the signs of the scope's vectors into the process's "
        "copy (the last row, once per tenant, before the timings); every other row is a running process's. A "
        "scope of more than 400 vectors is searched through a shortlist of its 400 vectors whose signs agree "
        "most with the query's, scored exactly.",
        "",
        load_line([value for r in results for value in r.get("load", [])]) + " (2 cores).",
        "",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100000,1000000", help="comma-separated record counts")
    parser.add_argument("--queries", type=int, default=400, help="user-scoped searches per mode (tenant-wide: 1/4)")
    parser.add_argument("--ingest", type=int, default=2000, help="records written through the model for ingest")
    parser.add_argument(
        "--ingest-rounds",
        type=int,
        default=INGEST_ROUNDS,
        help="times ingest runs, each into a fresh file; the report gives the median and the range",
    )
    parser.add_argument(
        "--texts",
        type=Path,
        default=None,
        help="a LoCoMo JSON file: also measure ingest on its observations (real text; the corpus's "
        "synthetic words split into several tokens each)",
    )
    parser.add_argument("--dir", type=Path, default=None, help="where the files go (default: a temp dir)")
    parser.add_argument("--out", type=Path, default=None, help="also write the report (markdown) here")
    parser.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--fill", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--file", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.fill is not None:  # a child of run_size
        return answer_parent(fill(args.fill, args.file))
    if args.one is not None:  # a child of the run below
        with scratch("bench-semantic-", parent=args.dir) as folder:
            return answer_parent(run_size(args.one, folder, args.queries, args.ingest, args.texts, args.ingest_rounds))
    results = []
    for size in (int(s) for s in args.sizes.split(",")):
        sys.stderr.write(f"{size:,} records → SQLite, hybrid\n")
        extra = [
            "--queries",
            str(args.queries),
            "--ingest",
            str(args.ingest),
            "--ingest-rounds",
            str(args.ingest_rounds),
        ]
        if args.texts is not None:
            extra += ["--texts", str(args.texts)]
        if args.dir is not None:
            extra += ["--dir", str(args.dir)]
        results.append(run_child("bench.store_semantic", "--one", str(size), *extra))
    text = report(results, command("bench.store_semantic", argv))
    print(text, end="")
    write_report(args.out, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
