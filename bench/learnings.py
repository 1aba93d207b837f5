"""Learnings benchmark: composing an agent, the gate chain, and recall beside promotion state.

    python -m bench.learnings --records 1000000 [--postgres-throwaway] [--out docs/benchmarks/learnings.md]

One store of ``--records`` records (the synthetic corpus of :mod:`bench.corpus`: SQLite
in a fresh file; with ``--postgres-throwaway`` the same again in a private PostgreSQL
cluster, PostgreSQL's durable defaults), the event log on as users run it. Then:

- **compose**: an agent's scope holds ``--promoted`` promoted learnings (background keys,
  heuristics, examples and awareness domains of two judgment domains); :func:`compose`
  is timed end to end as a host calls it at each instantiate (the registration check, the
  read of the promoted records, the overlay, the rendered prompt, the overlay event),
  with its parts beside it and, as the same run's baseline, a ``get`` and a 10-record
  listing of that scope;
- **promote_candidates** over ``--candidates`` candidates of another scope (auto,
  earned with and without a second conversation, guarded, locked), one run each in
  three scopes, with the listing it reads and the one transaction it applies;
- **recall assembly** A/B: the same recalls with the promoted filter (what recall does
  now that promoted records leave the block) and without it (``include_promoted``: the
  query recall made before promotion state existed), interleaved in chunks, over active
  users' scopes and the agent's own.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import sys
import time
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from statistics import median
from typing import Any

from bench.corpus import Corpus
from bench.measure import (
    LoadSampler,
    command,
    fenced,
    ingest,
    load_line,
    measured_on,
    peak_rss_mb,
    scratch,
    sqlite_url,
    throwaway_postgres,
    timed,
    timed_pair,
    write_report,
)
from memory_admin.composition import AgentComposition, apply_memory_overlay, render_prompt
from memory_admin.learning import compose, promote_candidates
from memory_admin.promotion import Decision
from memory_admin.recall import assemble_recall
from memory_admin.store import BaseMemoryStore, open_store

TARGETS = {"compose_p99_ms": 5.0, "promote_s": 1.0}
AGENT = {"tenant": "t00", "user": "u0000"}
"""The agent's scope: the corpus's busiest user, whose searches and recalls cost the most."""
SEED = 23

COMPOSITION = AgentComposition.model_validate(
    {
        "name": "bench-agent",
        "persona": "You are the benchmark's support agent.",
        "mission": "Answer from what you know; say what you do not.",
        "background": {"conventions": {"tone": "Short answers first, details after."}},
        "judgments": [
            {"domain": "triage", "heuristics": ["Check the status page first."]},
            {"domain": "billing", "constraints": ["Never promise a refund amount."]},
        ],
    }
)


def _targets(n: int, rng: random.Random) -> tuple[dict[str, str], dict[str, str] | None]:
    """A learning's target and payload, cycling through the learnable shapes."""
    shape = n % 4
    if shape == 0:
        return {"primitive": "background", "section": "project_context", "key": f"k{n}"}, None
    if shape == 1:
        return {"primitive": "judgment", "domain": rng.choice(("triage", "billing")), "slot": "heuristics"}, None
    if shape == 2:
        payload = {"scenario": f"case {n}", "good": "answer from the ledger", "bad": "guess"}
        return {"primitive": "example", "judgment_domain": "triage"}, payload
    return {"primitive": "awareness"}, {"name": f"source {n}", "description": "a source", "access_method": "tool"}


def learnings(corpus: Corpus, scope: dict[str, str], count: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    inputs = []
    for n in range(count):
        target, payload = _targets(n, rng)
        item: dict[str, Any] = {
            "scope": scope,
            "kind": "episode",
            "content": corpus.sentence(rng),
            "provenance": {"source": "bench", "conversation_id": f"learn-{seed}-{n}"},
            "target": target,
        }
        if payload is not None:
            item["payload"] = payload
        inputs.append(item)
    return inputs


def candidates(corpus: Corpus, scope: dict[str, str], count: int, seed: int) -> list[dict[str, Any]]:
    """A mix of every tier: auto, earned, guarded, locked (a domain the composition lacks)."""
    rng = random.Random(seed)
    shapes = [
        {"primitive": "background", "section": "conventions", "key": "{n}"},
        {"primitive": "judgment", "domain": "triage", "slot": "heuristics"},
        {"primitive": "judgment", "domain": "billing", "slot": "constraints"},
        {"primitive": "judgment", "domain": "shipping", "slot": "heuristics"},
    ]
    inputs = []
    for n in range(count):
        target = {k: v.format(n=n) for k, v in shapes[n % len(shapes)].items()}
        inputs.append(
            {
                "scope": scope,
                "kind": "episode",
                "content": corpus.sentence(rng),
                "provenance": {"source": "bench", "conversation_id": f"cand-{seed}-{n}"},
                "target": target,
            }
        )
    return inputs


def run(url: str, size: int, calls: int, promoted: int, candidate_count: int) -> dict[str, Any]:
    sampler = LoadSampler()
    corpus = Corpus()
    result: dict[str, Any] = {"size": size}
    store: BaseMemoryStore = open_store(url, embedder="none")
    result["ingest_per_s"] = ingest("store ingest", store.write, corpus.inputs(size), size)
    store.optimize()

    # the agent: its promoted learnings
    written = store.write(learnings(corpus, AGENT, promoted, SEED))
    tiers = {"background": "auto", "awareness": "auto", "judgment": "earned", "example": "earned"}
    outcomes = store.decide(
        [
            Decision(record_id=r.id, state="promoted", by="gate", actor="bench", tier=tiers[r.target.primitive])
            for r in written
            if r.target is not None
        ]
    )
    assert all(o.applied for o in outcomes)
    composed = compose(store, AGENT, COMPOSITION)
    result["compose_shape"] = {
        "promoted": len(written),
        "applied": len(composed.overlay.applied_ids),
        "spilled": len(composed.overlay.spilled),
        "dropped": len(composed.overlay.dropped),
        "lines": len(composed.prompt.lines),
    }
    records = store.promoted_records(AGENT)
    listing = {"scope": AGENT, "limit": 10}
    result["compose"] = timed([lambda: compose(store, AGENT, COMPOSITION) for _ in range(calls)])
    result["promoted_read"] = timed([lambda: store.promoted_records(AGENT) for _ in range(calls)])
    result["overlay_render"] = timed(
        [lambda: render_prompt(apply_memory_overlay(COMPOSITION, records)) for _ in range(calls)]
    )
    result["get"] = timed([lambda: store.get(written[0].id) for _ in range(calls)])
    result["listing"] = timed([lambda: store.search(listing) for _ in range(calls)])

    # the gate chain, in three scopes of their own
    runs = []
    for n, scope in enumerate({"tenant": f"t0{i}", "user": "u0001"} for i in (1, 2, 3)):
        made = store.write(candidates(corpus, scope, candidate_count, SEED + n))
        for record in made[1::8]:  # an eighth of the earned ones seen in a second conversation
            store.corroborate(record.id, {"source": "bench", "conversation_id": f"again-{record.id}"})
        started = time.perf_counter()
        listed = store.promotions(scope, limit=1000)
        listed_s = time.perf_counter() - started
        started = time.perf_counter()
        report = promote_candidates(store, scope, COMPOSITION)
        runs.append({"seconds": time.perf_counter() - started, "listing_s": listed_s, "counts": report.counts})
        assert len(listed.promotions) == candidate_count == len(report.candidates)
    result["promote"] = runs

    # recall beside promotion state: with the promoted filter (A) and without it (B)
    rng = random.Random(SEED)
    cases = [(corpus.active_user_scope(rng), corpus.query(rng)) for _ in range(calls)]
    cases[:: max(1, calls // 10)] = [(AGENT, corpus.query(rng))] * len(cases[:: max(1, calls // 10)])
    with_filter = [partial(assemble_recall, store, s, q) for s, q in cases]
    without = [partial(assemble_recall, store, s, q, include_promoted=True) for s, q in cases]
    result["recall_filtered"], result["recall_unfiltered"] = timed_pair(with_filter, without)
    store.close()
    result["peak_rss_mb"] = peak_rss_mb()
    result["load"] = sampler.stop()
    return result


def _row(label: str, figures: dict[str, float]) -> str:
    return f"| {label} | {figures['p50']:.2f} | {figures['p95']:.2f} | {figures['p99']:.2f} | {figures['mean']:.2f} |"


def section(name: str, r: dict[str, Any]) -> str:
    shape = r["compose_shape"]
    promote_s = [run["seconds"] for run in r["promote"]]
    lines = [
        f"### {name}, {r['size']:,} records",
        "",
        f"Ingest {r['ingest_per_s']:,.0f} records/s; peak RSS {r['peak_rss_mb']:.0f} MB; {load_line(r['load'])}.",
        "",
        f"The agent's scope holds {shape['promoted']} promoted learnings: the overlay applies "
        f"{shape['applied']}, spills {shape['spilled']} over their budgets (back to recall) and drops "
        f"{shape['dropped']}; the prompt has {shape['lines']} lines.",
        "",
        "| operation (ms) | p50 | p95 | p99 | mean |",
        "| --- | --- | --- | --- | --- |",
        _row("compose (end to end)", r["compose"]),
        _row("— the promoted records' read", r["promoted_read"]),
        _row("— overlay and prompt (pure)", r["overlay_render"]),
        _row("baseline: get", r["get"]),
        _row("baseline: listing of 10 in the scope", r["listing"]),
        _row("recall assembly, promoted filter (A)", r["recall_filtered"]),
        _row("recall assembly, no filter (B)", r["recall_unfiltered"]),
        "",
        f"Recall A/B: p99 {r['recall_filtered']['p99'] / r['recall_unfiltered']['p99']:.2f}×, "
        f"mean {r['recall_filtered']['mean'] / r['recall_unfiltered']['mean']:.2f}× (A over B; interleaved).",
        "",
        "| promote_candidates run | seconds | its listing read (s) | outcomes |",
        "| --- | --- | --- | --- |",
    ]
    for n, run in enumerate(r["promote"], 1):
        counts = ", ".join(f"{v} {k}" for k, v in sorted(run["counts"].items()))
        lines.append(f"| {n} | {run['seconds']:.3f} | {run['listing_s']:.3f} | {counts} |")
    lines += [
        "",
        "Targets:",
        "",
        f"- {'met' if r['compose']['p99'] <= TARGETS['compose_p99_ms'] else 'MISSED'}: compose p99 ≤ "
        f"{TARGETS['compose_p99_ms']:g} ms ({r['compose']['p99']:.2f})",
        f"- {'met' if max(promote_s) <= TARGETS['promote_s'] else 'MISSED'}: promote_candidates over "
        f"{sum(r['promote'][0]['counts'].values())} candidates ≤ {TARGETS['promote_s']:g} s "
        f"(slowest of {len(promote_s)}: {max(promote_s):.3f} s, median {median(promote_s):.3f} s)",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--calls", type=int, default=1000, help="calls per timed operation")
    parser.add_argument("--promoted", type=int, default=200)
    parser.add_argument("--candidates", type=int, default=1000)
    parser.add_argument("--postgres-throwaway", action="store_true", help="also run on a private PostgreSQL cluster")
    parser.add_argument("--dir", type=Path, default=None, help="where the SQLite file goes (default: a temp dir)")
    parser.add_argument("--out", type=Path, default=None, help="also write the report (markdown) here")
    args = parser.parse_args(argv)
    sections = []
    with scratch("memory-bench-learnings-", keep=args.dir) as workdir:
        sys.stderr.write(f"{args.records:,} records → SQLite\n")
        result = run(sqlite_url(workdir), args.records, args.calls, args.promoted, args.candidates)
        sections.append(section("SQLite", result))
    if args.postgres_throwaway:
        with contextlib.ExitStack() as stack:
            url = stack.enter_context(throwaway_postgres(parser, "memory_bench_learnings"))
            sys.stderr.write(f"{args.records:,} records → PostgreSQL\n")
            result = run(url, args.records, args.calls, args.promoted, args.candidates)
            sections.append(section("PostgreSQL (a throwaway cluster over a unix socket)", result))
    text = f"{measured_on()}.\n\n" + "\n\n".join(sections)
    print(text)
    write_report(args.out, fenced("Learnings benchmark", command("bench.learnings", argv), text))
    return 0


if __name__ == "__main__":
    sys.exit(main())
