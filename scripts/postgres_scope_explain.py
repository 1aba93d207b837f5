"""Measure how scoped search behaves on PostgreSQL (the figures in docs/postgres.md).

    python scripts/postgres_scope_explain.py postgresql://…/empty_db --records 300000

Loads synthetic records through the store (tenants × users × records, Zipf-distributed
words, so some tokens are in most records), then prints EXPLAIN ANALYZE of the store's
own SQL for user- and tenant-scoped searches beside a baseline that filters scope after
the text match, and the latency of searches through the public API. The database must
be empty or hold only a previous run of this script.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from typing import Any

import psycopg
from psycopg.rows import dict_row

from memory_admin.store.postgres import (
    Op,
    PostgresMemoryStore,
    TermFrequencies,
    _scope_condition,
    match_tsquery,
    ranked_op,
    recent_op,
)

WORDS = [f"w{n}" for n in range(5000)] + ["the", "did", "what", "dana", "coffee", "flight", "seat", "aisle"]


def sentence(rng: random.Random) -> str:
    # Zipf-like: low indexes are common, so "w0", "w1" … appear in most records
    return " ".join(WORDS[min(int(rng.paretovariate(1.1)) - 1, len(WORDS) - 1)] for _ in range(rng.randint(8, 16)))


def load(store: PostgresMemoryStore, records: int, tenants: int, users: int) -> float:
    rng = random.Random(7)
    per_user = max(1, records // (tenants * users))
    batch: list[dict[str, Any]] = []
    started = time.perf_counter()
    written = 0
    for t in range(tenants):
        for u in range(users):
            scope = {"tenant": f"t{t}", "user": f"u{u}"}
            for _ in range(per_user):
                batch.append({"scope": scope, "kind": "fact", "content": sentence(rng), "provenance": {"source": "m"}})
                if len(batch) == 2000:
                    written += len(store.write(batch))
                    batch = []
    if batch:
        written += len(store.write(batch))
    return written / (time.perf_counter() - started)


def explain(url: str, sql: str, params: list[Any]) -> str:
    with psycopg.connect(url, autocommit=True, prepare_threshold=None) as conn:
        rows = conn.execute(("EXPLAIN (ANALYZE, BUFFERS) " + sql).encode(), params).fetchall()
    return "\n".join(row[0] for row in rows)


def explain_op(url: str, op: Op[Any]) -> str:
    """EXPLAIN ANALYZE every statement an op issues, feeding it the real rows."""
    plans = []
    with psycopg.connect(url, autocommit=True, prepare_threshold=None) as conn:
        cur = conn.cursor(row_factory=dict_row)
        try:
            statement = next(op)
            while True:
                plans.append(explain(url, statement.sql, list(statement.params)))
                cur.execute(statement.sql.encode(), statement.params)
                statement = op.send(cur.fetchall() if cur.description is not None else [])
        except StopIteration:
            pass
    return "\n\n".join(plans)


def percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    pick = {p: ordered[min(len(ordered) - 1, int(len(ordered) * p / 100))] for p in (50, 95, 99)}
    return (
        " ".join(f"p{p}={v:.2f}ms" for p, v in pick.items())
        + f" (n={len(ordered)}, mean={statistics.mean(ordered):.2f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--tenants", type=int, default=20)
    parser.add_argument("--users", type=int, default=500)
    args = parser.parse_args()
    store = PostgresMemoryStore(args.url, persist_events=False)
    present = store.count_records({"tenant": "t0"}).total
    if present == 0:
        rate = load(store, args.records, args.tenants, args.users)
        print(f"ingest: {rate:,.0f} records/s (batches of 2000)")
        with psycopg.connect(args.url, autocommit=True) as conn:
            conn.execute("VACUUM ANALYZE")
    with psycopg.connect(args.url) as conn:
        total = conn.execute("SELECT count(*) FROM memory_records").fetchone()
    print(f"records: {total[0] if total else 0:,}")

    text = "what did dana say about the w3 flight"
    for label, scope in (("user", {"tenant": "t3", "user": "u42"}), ("tenant", {"tenant": "t3"})):
        plan = store._plan({"scope": scope, "query": text, "limit": 10})
        print(f"\n=== {label}-scoped ranked search (the store's SQL, statement by statement) ===")
        print(explain_op(args.url, ranked_op(plan, TermFrequencies())))
        scope_where, scope_params = _scope_condition(plan)
        tokens_only = match_tsquery(plan).split(" & ")[-1]
        print(f"\n=== {label}-scoped: the hidden-lexeme match alone ===")
        print(
            explain(
                args.url,
                "SELECT count(*) FROM memory_records r WHERE r.tsv @@ %s::tsquery",
                [match_tsquery(plan)],
            )
        )
        print(f"\n=== {label}-scoped: what the query's words alone match in the whole database ===")
        print(explain(args.url, "SELECT count(*) FROM memory_records r WHERE r.tsv @@ %s::tsquery", [tokens_only]))
        print(f"\n=== {label}-scoped baseline: text match first, scope filtered after ===")
        print(
            explain(
                args.url,
                "SELECT count(*) FROM memory_records r WHERE r.tsv @@ %s::tsquery "
                f"AND r.scope_id IN (SELECT sc.scope_id FROM memory_scopes sc WHERE {scope_where})",
                [tokens_only, *scope_params],
            )
        )
        print(f"\n=== {label}-scoped recency listing ===")
        print(explain_op(args.url, recent_op(store._plan({"scope": scope, "limit": 10}))))

    rng = random.Random(11)
    for label in ("user", "tenant"):
        for ranked in (True, False):
            samples = []
            for _ in range(300 if label == "user" else 60):
                tenant = f"t{rng.randrange(args.tenants)}"
                scope = (
                    {"tenant": tenant, "user": f"u{rng.randrange(args.users)}"}
                    if label == "user"
                    else {"tenant": tenant}
                )
                query: dict[str, Any] = {"scope": scope, "limit": 10}
                if ranked:
                    query["query"] = " ".join(rng.choice(WORDS[:200]) for _ in range(4)) + " dana flight"
                started = time.perf_counter()
                store.search(query)
                samples.append((time.perf_counter() - started) * 1000)
            print(f"{label}-scoped {'ranked' if ranked else 'recency'} via store.search: {percentiles(samples)}")
    store.close()


if __name__ == "__main__":
    main()
