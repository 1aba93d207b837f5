"""Concurrency benchmark: several agent processes on one store, event log on and off.

    python -m bench.concurrency [--records 20000] [--processes 1,4,8] [--seconds 4]
        [--rounds 3] [--postgres-throwaway | --no-sqlite …] [--out docs/benchmarks/concurrency.md]

Each process is an agent host: mixed traffic as agents make it, 90 % searches (2–4
corpus words at an active user scope, limit 10) and 10 % writes of 1–3 records. Every
process count runs against one SQLite file and, with ``--postgres-throwaway``, against
a private PostgreSQL cluster (durable defaults), in the default configuration (event
log on) and with ``persist_events=False``. The two alternate round by round in the
same run — each worker process holds one store object of each kind over the same data
— so whatever else the machine is doing falls on both alike; the load average is
sampled and printed. Throughput counts every operation of every process over the
round's wall time; latencies are per operation, p50 and p99 over every round. The
round-by-round ratios (on against off) are also summarised by their mean and a 95 %
bootstrap interval, so a reader can tell a target missed from one inside the run's noise.
"""

from __future__ import annotations

import argparse
import multiprocessing
import random
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.corpus import Corpus
from bench.measure import (
    MS,
    LoadSampler,
    command,
    fenced,
    ingest,
    load_line,
    measured_on,
    percentile,
    scratch,
    sqlite_url,
    throwaway_postgres,
    write_report,
)
from memory_admin.store import BaseMemoryStore, open_store

SPAWN = multiprocessing.get_context("spawn")
MODES = ("on", "off")
TARGETS = {1: (0.95, None), 4: (0.9, 1.2)}
"""Processes → (search throughput on/off at least, search p99 on/off at most)."""


def _write_batch(corpus: Corpus, rng: random.Random, worker: int, n: int) -> list[dict[str, Any]]:
    scope = corpus.active_user_scope(rng)
    return [
        {
            "scope": scope,
            "kind": "fact",
            "content": corpus.sentence(rng),
            "provenance": {"source": "bench", "conversation_id": f"w{worker}-{n}"},
        }
        for _ in range(rng.randint(1, 3))
    ]


def traffic(store: BaseMemoryStore, corpus: Corpus, rng: random.Random, worker: int, seconds: float) -> dict[str, Any]:
    """Mixed traffic for ``seconds``: latencies per operation and how many ran."""
    search: list[float] = []
    write: list[float] = []
    started = time.perf_counter()
    deadline = started + seconds
    n = 0
    while time.perf_counter() < deadline:
        n += 1
        if rng.random() < 0.1:
            batch = _write_batch(corpus, rng, worker, n)
            began = time.perf_counter()
            store.write(batch)
            write.append(time.perf_counter() - began)
        else:
            query = {"scope": corpus.active_user_scope(rng), "query": corpus.query(rng), "limit": 10}
            began = time.perf_counter()
            store.search(query)
            search.append(time.perf_counter() - began)
    return {"search": search, "write": write, "elapsed": time.perf_counter() - started}


def _worker(url: str, worker: int, tasks: Any, results: Any) -> None:
    corpus = Corpus()
    stores = {"on": open_store(url), "off": open_store(url, persist_events=False)}
    try:
        results.put(("ready", worker))
        while (task := tasks.get()) is not None:
            mode, seconds, start_at, seed = task
            time.sleep(max(0.0, start_at - time.time()))  # every worker starts together
            outcome = traffic(stores[mode], corpus, random.Random(seed), worker, seconds)
            # what is still buffered belongs to this round: commit it before the next one
            stores[mode].flush_events()
            outcome["finished"] = time.time()
            outcome["start_at"] = start_at
            results.put((mode, outcome))
    finally:
        for store in stores.values():
            store.close()


@dataclass
class Tally:
    search: list[float] = field(default_factory=list)
    write: list[float] = field(default_factory=list)
    ops: int = 0
    searches: int = 0
    seconds: float = 0.0
    rounds: list[float] = field(default_factory=list)
    """Searches per second of each round."""

    def add_round(self, outcomes: Sequence[dict[str, Any]]) -> None:
        searches = sum(len(outcome["search"]) for outcome in outcomes)
        for outcome in outcomes:
            self.search += outcome["search"]
            self.write += outcome["write"]
            self.ops += len(outcome["search"]) + len(outcome["write"])
        self.searches += searches
        # wall time of the round: from the common start to the last worker's last commit
        seconds = max(o["finished"] for o in outcomes) - outcomes[0]["start_at"]
        self.seconds += seconds
        self.rounds.append(searches / seconds)

    def summary(self) -> dict[str, float]:
        return {
            "ops_per_s": self.ops / self.seconds,
            "searches_per_s": self.searches / self.seconds,
            "search_p50": percentile(self.search, 0.5, scale=MS),
            "search_p99": percentile(self.search, 0.99, scale=MS),
            "write_p50": percentile(self.write, 0.5, scale=MS),
            "write_p99": percentile(self.write, 0.99, scale=MS),
            "writes": len(self.write),
        }

    def pair_ratios(self, other: Tally) -> list[float]:
        """Searches/s of each round against the other configuration's same round."""
        return [a / b for a, b in zip(self.rounds, other.rounds, strict=True)]


def _processes(n: int) -> str:
    return f"{n} process" if n == 1 else f"{n} processes"


def mean_interval(ratios: Sequence[float], *, resamples: int = 2000) -> tuple[float, float, float]:
    """The mean of ``ratios`` and a 95 % bootstrap interval for it (seeded: a report
    prints the same interval for the same rounds)."""
    mean = statistics.fmean(ratios)
    if len(ratios) < 2:
        return mean, mean, mean
    rng = random.Random(0)
    means = sorted(statistics.fmean(rng.choices(ratios, k=len(ratios))) for _ in range(resamples))
    return mean, means[int(0.025 * resamples)], means[int(0.975 * resamples) - 1]


def build(url: str, records: int) -> None:
    with open_store(url, persist_events=False) as store:
        ingest("build", store.write, Corpus().inputs(records), records)
        store.optimize()


def run_processes(url: str, processes: int, *, seconds: float, rounds: int) -> dict[str, dict[str, float]]:
    tasks = [SPAWN.Queue() for _ in range(processes)]
    results = SPAWN.Queue()
    workers = [SPAWN.Process(target=_worker, args=(url, n, tasks[n], results)) for n in range(processes)]
    for process in workers:
        process.start()
    try:
        for _ in workers:
            assert results.get(timeout=300)[0] == "ready"
        tallies = {mode: Tally() for mode in MODES}
        # a warm-up of each (not counted), then rounds; both configurations of a round
        # replay the same traffic (same seeds), in alternating order
        schedule = [("on", 1.0, 0), ("off", 1.0, 0)]
        for round_ in range(1, rounds + 1):
            schedule += [(mode, seconds, round_) for mode in (MODES if round_ % 2 else MODES[::-1])]
        for index, (mode, length, round_) in enumerate(schedule):
            start_at = time.time() + 0.3
            for n, queue in enumerate(tasks):
                queue.put((mode, length, start_at, round_ * 1000 + n))
            outcomes = [results.get(timeout=300)[1] for _ in workers]
            if index >= 2:
                tallies[mode].add_round(outcomes)
            sys.stderr.write(
                f"    {_processes(processes)}, event log {mode}: {sum(len(o['search']) for o in outcomes)} searches\n"
            )
        figures = {mode: tally.summary() for mode, tally in tallies.items()}
        ratios = tallies["on"].pair_ratios(tallies["off"])
        mean, low95, high95 = mean_interval(ratios)
        figures["pairs"] = {
            "median": statistics.median(ratios),
            "low": min(ratios),
            "high": max(ratios),
            "mean": mean,
            "low95": low95,
            "high95": high95,
        }
        return figures
    finally:
        for queue in tasks:
            queue.put(None)
        for process in workers:
            process.join(timeout=120)


def run_backend(
    label: str, url: str, records: int, counts: Sequence[int], seconds: float, rounds: int
) -> dict[str, Any]:
    sys.stderr.write(f"{label}: {records:,} records\n")
    build(url, records)
    sampler = LoadSampler()
    figures = {n: run_processes(url, n, seconds=seconds, rounds=rounds) for n in counts}
    return {"label": label, "figures": figures, "load": sampler.stop()}


def _row(n: int, mode: str, f: dict[str, float]) -> str:
    return (
        f"| {n} | {mode} | {f['ops_per_s']:,.0f} | {f['searches_per_s']:,.0f} | {f['search_p50']:.2f} / "
        f"{f['search_p99']:.2f} | {f['write_p50']:.2f} / {f['write_p99']:.2f} | {f['writes']:,.0f} |"
    )


def report(runs: Sequence[dict[str, Any]], *, records: int, seconds: float, rounds: int) -> str:
    lines = [
        f"{measured_on()}, Python "
        f"{sys.version.split()[0]}; {records:,} records (the store benchmark's corpus), then per process count "
        f"a warm-up and {rounds} rounds of {seconds:g} s for each configuration, alternating.",
    ]
    checks: list[str] = []
    for run in runs:
        samples = run["load"]
        lines += [
            "",
            f"### {run['label']}",
            "",
            f"{load_line(samples)}.",
            "",
            "| processes | event log | operations/s | searches/s | search p50 / p99 (ms) | write p50 / p99 (ms) "
            "| writes |",
            "| ---: | --- | ---: | ---: | --- | --- | ---: |",
        ]
        for n, figures in run["figures"].items():
            lines += [_row(n, mode, figures[mode]) for mode in MODES]
        lines += [
            "",
            "| processes | searches/s on/off | round pairs: median (range) | round pairs: mean (95 % interval) "
            "| search p50 on/off | search p99 on/off |",
            "| ---: | ---: | --- | --- | ---: | ---: |",
        ]
        for n, figures in run["figures"].items():
            on, off = figures["on"], figures["off"]
            throughput = on["searches_per_s"] / off["searches_per_s"]
            p99 = on["search_p99"] / off["search_p99"]
            pairs = figures["pairs"]
            spread = f"{pairs['median']:.2f}× ({pairs['low']:.2f}–{pairs['high']:.2f})"
            interval = f"{pairs['mean']:.3f}× ({pairs['low95']:.3f}–{pairs['high95']:.3f})"
            lines.append(
                f"| {n} | {throughput:.2f}× | {spread} | {interval} | {on['search_p50'] / off['search_p50']:.2f}× "
                f"| {p99:.2f}× |"
            )
            if n in TARGETS:
                least, most = TARGETS[n]
                ok = throughput >= least and (most is None or p99 <= most)
                wanted = f"search throughput ≥ {least}× events-off" + (f", p99 ≤ {most}×" if most else "")
                checks.append(
                    f"- {'met' if ok else 'MISSED'}: {run['label']}, {_processes(n)}: {wanted} "
                    f"(measured {throughput:.2f}×; round pairs' mean {pairs['mean']:.3f}×, "
                    f"95 % interval {pairs['low95']:.3f}–{pairs['high95']:.3f}×)"
                )
    if checks:
        lines += ["", "Targets (event log on against off):", "", *checks]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--processes", default="1,4,8", help="comma-separated process counts")
    parser.add_argument("--seconds", type=float, default=4.0, help="length of one round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per configuration")
    parser.add_argument("--postgres-throwaway", action="store_true", help="also run on a private PostgreSQL cluster")
    parser.add_argument("--no-sqlite", action="store_true", help="skip the SQLite run")
    parser.add_argument("--out", type=Path, default=None, help="also write the report (markdown) here")
    args = parser.parse_args(argv)
    counts = [int(n) for n in args.processes.split(",")]
    runs = []
    if not args.no_sqlite:
        with scratch("memory-bench-concurrency-") as folder:
            runs.append(
                run_backend("SQLite (one file)", sqlite_url(folder), args.records, counts, args.seconds, args.rounds)
            )
    if args.postgres_throwaway:
        with throwaway_postgres(parser, "memory_bench_concurrency") as url:
            label = "PostgreSQL (a throwaway cluster on this machine, durable defaults, unix socket)"
            runs.append(run_backend(label, url, args.records, counts, args.seconds, args.rounds))
    text = report(runs, records=args.records, seconds=args.seconds, rounds=args.rounds)
    print(text)
    write_report(args.out, fenced("Concurrency benchmark", command("bench.concurrency", argv), text))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
