"""MemoryAdminStore against LangGraph's own SqliteStore: a batch of 100 puts and a search.

    .venv/bin/python -m bench.langgraph_store [--rounds 10] [--searches 50] [--out docs/benchmarks/langgraph.md]

Both stores run in this process, on files in one scratch directory, over the same data
and the same embedding function (memory_admin's model-free feature-hashing embedder,
256 dimensions, handed to both as LangGraph's ``index={"dims", "embed", "fields"}``), so
the figures differ only by the stores. Measured, interleaved store by store round by
round so the machine's load falls on both:

* ``batch of 100 puts`` — ``store.batch([PutOp × 100])`` of new keys (each round adds
  100 items to the namespace, ``--rounds`` rounds);
* ``batch of 100 updates`` — the same keys put again (MemoryAdminStore supersedes:
  every update is a new version, the old one kept);
* ``search`` — ``store.search(namespace, query=…, limit=10)`` over the filled namespace;
* ``search with a filter`` — the same with ``filter={"topic": …}``.

MemoryAdminStore runs on a SQLite memory file in its default configuration (event log
on), once without an index (keyword search, BM25) and once with the index (hybrid: BM25
and meaning, fused); SqliteStore with the index when this Python can load SQLite
extensions (its vector search is sqlite-vec), else without one. Each figure is the
median of its timings; a ratio is that MemoryAdminStore's time over SqliteStore's.
"""

from __future__ import annotations

import argparse
import contextlib
import platform
import random
import sqlite3
import statistics
import sys
from collections.abc import Callable, Iterator
from functools import partial
from importlib import metadata
from pathlib import Path
from typing import Any

from langgraph.store.base import BaseStore, PutOp
from langgraph.store.sqlite import SqliteStore

from bench.measure import MS, measured_on, scratch, seconds_each, write_report
from memory_admin.embed.hashing import HashingEmbedder
from memory_admin.integrations.langgraph import MemoryAdminStore

NAMESPACE = ("memories", "dana")
DIMENSIONS = 256
TOPICS = ("travel", "food", "work", "health", "family", "music", "sport", "money")
WORDS = (
    "aisle",
    "window",
    "seat",
    "flight",
    "hotel",
    "breakfast",
    "coffee",
    "tea",
    "espresso",
    "vegetarian",
    "meeting",
    "deadline",
    "report",
    "doctor",
    "running",
    "guitar",
    "piano",
    "savings",
    "budget",
    "lisbon",
    "tokyo",
    "train",
    "morning",
    "evening",
    "weekend",
    "project",
)


def embed_texts(texts: list[str]) -> list[list[float]]:
    """The embedding function both stores are given: deterministic, model-free."""
    return [[float(x) for x in row] for row in _EMBEDDER.embed_documents(texts)]


_EMBEDDER = HashingEmbedder(DIMENSIONS)
INDEX: dict[str, Any] = {"dims": DIMENSIONS, "embed": embed_texts, "fields": ["text"]}


def value(rng: random.Random, i: int) -> dict[str, Any]:
    words = " ".join(rng.choice(WORDS) for _ in range(12))
    return {"text": f"Memory {i}: {words}.", "topic": TOPICS[i % len(TOPICS)], "n": i}


BASELINE = "SqliteStore"


def vector_search_loads() -> bool:
    """Whether this Python can load SQLite extensions (SqliteStore's vector search is the
    sqlite-vec extension; some builds of Python have loading compiled out)."""
    import sqlite3

    return hasattr(sqlite3.connect(":memory:"), "enable_load_extension")


@contextlib.contextmanager
def stores(directory: Path) -> Iterator[dict[str, BaseStore]]:
    keyword = MemoryAdminStore(f"sqlite:///{directory}/keyword.sqlite3", tenant="bench")
    hybrid = MemoryAdminStore(f"sqlite:///{directory}/hybrid.sqlite3", tenant="bench", index=INDEX)
    index = INDEX if vector_search_loads() else None
    with SqliteStore.from_conn_string(str(directory / "langgraph.sqlite3"), index=index) as theirs:  # type: ignore[arg-type]
        theirs.setup()
        try:
            yield {"MemoryAdminStore (keyword)": keyword, "MemoryAdminStore (hybrid)": hybrid, BASELINE: theirs}
        finally:
            keyword.close()
            hybrid.close()


def timed_ms(call: Callable[[], object]) -> float:
    [seconds] = seconds_each([call])
    return seconds * MS


def run(rounds: int, searches: int, seed: int = 7) -> dict[str, dict[str, float]]:
    timings: dict[str, dict[str, list[float]]] = {}
    with scratch("bench-langgraph-") as folder, stores(folder) as made:
        for name in made:
            timings[name] = {
                "batch of 100 puts": [],
                "batch of 100 updates": [],
                "search": [],
                "search with a filter": [],
            }
        for round_ in range(rounds):
            rng = random.Random(seed + round_)
            ops = [PutOp(NAMESPACE, f"item-{round_}-{i}", value(rng, round_ * 100 + i)) for i in range(100)]
            updates = [PutOp(op.namespace, op.key, {**(op.value or {}), "n": -1}) for op in ops]
            for name, store in made.items():
                timings[name]["batch of 100 puts"].append(timed_ms(partial(store.batch, ops)))
            for name, store in made.items():
                timings[name]["batch of 100 updates"].append(timed_ms(partial(store.batch, updates)))
        rng = random.Random(seed)
        queries = [" ".join(rng.sample(WORDS, 3)) for _ in range(searches)]
        for query in queries:
            topic = rng.choice(TOPICS)
            for name, store in made.items():
                timings[name]["search"].append(timed_ms(partial(store.search, NAMESPACE, query=query, limit=10)))
                timings[name]["search with a filter"].append(
                    timed_ms(partial(store.search, NAMESPACE, query=query, filter={"topic": topic}, limit=10))
                )
    return {name: {op: statistics.median(values) for op, values in ops.items()} for name, ops in timings.items()}


def table(medians: dict[str, dict[str, float]]) -> list[str]:
    base = medians[BASELINE]
    ours = [name for name in medians if name != BASELINE]
    lines = [
        "| operation | "
        + " | ".join(f"{name} (ms)" for name in [*ours, BASELINE])
        + " | "
        + " | ".join(f"ratio {name.removeprefix('MemoryAdminStore ')}" for name in ours)
        + " |",
        "| --- |" + " ---: |" * (2 * len(ours) + 1),
    ]
    for op in base:
        times = " | ".join(f"{medians[name][op]:.2f}" for name in [*ours, BASELINE])
        ratios = " | ".join(f"{medians[name][op] / base[op]:.2f}×" for name in ours)
        lines.append(f"| {op} | {times} | {ratios} |")
    return lines


def configuration(rounds: int, searches: int) -> list[str]:
    versions = ", ".join(
        f"{package} {metadata.version(package)}"
        for package in ("memory-admin", "langgraph-checkpoint-sqlite", "langgraph-checkpoint", "sqlite-vec")
    )
    return [
        f"- {measured_on()}, {platform.machine()}, Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}",
        f"- {versions}",
        f"- {rounds} rounds of 100 new items and 100 updates (the namespace ends with {rounds * 100} items, "
        f"{rounds * 200} versions in MemoryAdminStore); {searches} searches, `limit=10`",
        "- every store a file in one scratch directory; MemoryAdminStore on SQLite in its default configuration "
        "(event log on): `(keyword)` without an index (BM25 search), `(hybrid)` with "
        f"`index={{'dims': {DIMENSIONS}, 'embed': feature hashing, 'fields': ['text']}}` (BM25 and meaning, fused)",
        "- SqliteStore "
        + (
            "with the same index (vector search by sqlite-vec)"
            if vector_search_loads()
            else "without an index: this Python's sqlite3 cannot load extensions, so SqliteStore's vector search "
            "(the sqlite-vec extension) cannot run; its search then ignores the query and lists the namespace"
        ),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.langgraph_store", description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--searches", type=int, default=50)
    parser.add_argument("--out", type=Path, help="write the figures as markdown (docs/benchmarks/langgraph.md)")
    options = parser.parse_args(argv)
    medians = run(options.rounds, options.searches)
    lines = table(medians)
    print("\n".join(lines))
    if options.out is not None:
        doc = [
            "# MemoryAdminStore against LangGraph's SqliteStore",
            "",
            "`.venv/bin/python -m bench.langgraph_store --out docs/benchmarks/langgraph.md` — the stores in one "
            "process, same data, interleaved; medians in milliseconds, ratio = MemoryAdminStore / SqliteStore.",
            "",
            *lines,
            "",
            "Configuration:",
            "",
            *configuration(options.rounds, options.searches),
            "",
            "What the ratio buys: every put is a validated record with provenance, a supersede chain (an update "
            "keeps the old version), keyword and vector index entries and an event; a search is hybrid (BM25 "
            "and meaning, fused) or BM25, with the value filter applied over full pages, and each hit that was "
            "updated reads its chain for the first version's `created_at`. SqliteStore overwrites in place.",
            "",
        ]
        write_report(options.out, "\n".join(doc))
        print(f"wrote {options.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
