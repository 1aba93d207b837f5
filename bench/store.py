"""Store benchmark: ingest, scoped search, listing, get, recall, size and memory at scale.

    python -m bench.store --sizes 100000,1000000 [--out docs/benchmarks/store.md]
    python -m bench.store --backend postgres --url postgresql://… --sizes 1000000
    python -m bench.store --postgres-throwaway --sizes 1000000 [--out docs/benchmarks/store-postgres.md]

Each size runs in a fresh subprocess (so peak RSS is that size's own) against a fresh
SQLite file, or fresh schemas of a PostgreSQL database (``memory_bench_store`` and
``memory_bench_raw``, dropped afterwards). ``--postgres-throwaway`` starts a private
cluster for the run with PostgreSQL's durable defaults and deletes it afterwards. Every
operation is measured twice in the same run: through the store's public API, and as the
same operation done with hand-written SQL on the same schema — the ratio is the
library's overhead (validation, planning, record models). The store runs in its default
configuration, event log on, as users run it; the searches and recall assembly are also
measured through a second store object over the same data with the event log off,
interleaved with the first in chunks so load from the rest of the machine falls on both.
The concurrency benchmark (several processes, mixed traffic) is
:mod:`bench.concurrency`.
"""

from __future__ import annotations

import argparse
import contextlib
import sqlite3
import statistics
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.corpus import Corpus
from bench.measure import (
    LoadSampler,
    answer_parent,
    command,
    fenced,
    ingest,
    load_line,
    measured_on,
    peak_rss_mb,
    run_child,
    scratch,
    throwaway_postgres,
    write_report,
)
from bench.workload import BATCH, EVENT_LOG_OPERATIONS, ingest_pair, measure_against_raw, search_cases
from memory_admin.scope import scope_json
from memory_admin.store.ids import from_value
from memory_admin.store.sql.rows import dumps, filter_tokens, scope_tokens
from memory_admin.store.sqlite import SqliteMemoryStore, sqlite_file_stats, store_files
from memory_admin.store.sqlite import terms as sqlite_terms
from memory_admin.tokenize import unique_tokens

TARGETS = {
    "user_search_p99_ms": 5.0,
    "user_search_ratio": 2.5,
    "tenant_search_p99_ms": 15.0,
    "listing_p99_ms": 1.0,
    "ingest_per_s": 25_000,
    "ingest_ratio": 0.7,
    "bytes_per_record": 400,
    "recall_p99_ms": 10.0,
}
PG_TARGETS = {"user_search_p99_ms": 10.0}


def _log_pages_in_memory_file(path: Path) -> int:
    """Bytes of the event log's pages still inside a SQLite memory file: its counters."""
    with sqlite3.connect(path) as conn:
        row = conn.execute(
            "SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name IN "
            "(SELECT name FROM sqlite_schema WHERE tbl_name IN ('memory_events', 'memory_counters'))"
        ).fetchone()
    return int(row[0])


def event_log_bytes(path: Path) -> int:
    """Bytes of a SQLite memory file's event log: its own file beside the memory file, and
    the pages of its counters in the memory file."""
    return _log_pages_in_memory_file(path) + sqlite_file_stats(path)["events_bytes"]


def record_bytes(path: Path) -> int:
    """Bytes of a SQLite memory file's records, their indexes and scopes: the memory file
    without the event log's pages (the event file is apart already)."""
    return sqlite_file_stats(path)["file_bytes"] - _log_pages_in_memory_file(path)


class RawSqlite:
    """The same operations, hand-written against the same schema: no models, no checks."""

    def __init__(self, path: Path) -> None:
        self.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        sqlite_terms.register(self.conn)  # the index's terms, as the store computes them
        self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.execute("PRAGMA synchronous = FULL")
        self.scope_ids: dict[str, int] = {}

    def _scope_id(self, scope: dict[str, str]) -> int:
        key = scope_json(scope)
        found = self.scope_ids.get(key)
        if found is None:
            cur = self.conn.execute(
                "INSERT INTO memory_scopes (scope, tenant, n_pairs) VALUES (?, ?, ?)",
                (key, scope["tenant"], len(scope)),
            )
            found = self.scope_ids[key] = int(cur.lastrowid or 0)
            self.conn.execute(
                "UPDATE memory_scopes SET fts_tokens = ? WHERE scope_id = ?", (scope_tokens(scope, found), found)
            )
            self.conn.executemany(
                "INSERT INTO memory_scope_pairs VALUES (?, ?, ?)", [(found, k, v) for k, v in scope.items()]
            )
        return found

    def write(self, batch: list[dict[str, Any]]) -> None:
        now = int(time.time() * 1_000_000)
        self.conn.execute("BEGIN IMMEDIATE")
        rows = [
            (
                "mem_" + uuid.uuid4().hex,
                self._scope_id(item["scope"]),
                item["kind"],
                item.get("key"),
                item["content"],
                dumps(item["tags"]) if item.get("tags") else None,
                item["provenance"].get("source"),
                item["provenance"].get("conversation_id"),
                now,
            )
            for item in batch
        ]
        first = self.conn.execute("SELECT coalesce(max(rid), 0) + 1 FROM memory_records").fetchone()[0]
        self.conn.executemany(
            "INSERT INTO memory_records (id, scope_id, kind, key, content, tags, source, conversation_id, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
        self.conn.execute(
            "INSERT INTO memory_fts (rowid, terms, meta) SELECT rid, terms, meta FROM memory_fts_source WHERE rid >= ?",
            (first,),
        )
        counts: dict[int, int] = {}
        for row in rows:
            counts[row[1]] = counts.get(row[1], 0) + 1
        self.conn.executemany(
            "UPDATE memory_scopes SET n_records = n_records + ? WHERE scope_id = ?", [(n, s) for s, n in counts.items()]
        )
        self.conn.execute("COMMIT")

    def search(self, scope: dict[str, str], query: str, limit: int = 10) -> list[tuple[Any, ...]]:
        pairs = " AND ".join(filter_tokens(scope))
        words = " OR ".join(f'"{t}"' for t in unique_tokens(query))
        now = int(time.time() * 1_000_000)
        return self.conn.execute(
            "SELECT r.id, r.content, r.created_at, f.score FROM ("
            "  SELECT rowid AS rid, bm25(memory_fts, 1.0, 0.0) AS score FROM memory_fts"
            "  WHERE memory_fts MATCH ? ORDER BY score LIMIT ?) f "
            "JOIN memory_records r ON r.rid = f.rid "
            "WHERE r.invalid_at IS NULL AND (r.expires_at IS NULL OR r.expires_at > ?) ORDER BY f.score",
            (f"(meta : ({pairs})) AND (terms : ({words}))", limit, now),
        ).fetchall()

    def listing(self, scope: dict[str, str], limit: int = 10) -> list[tuple[Any, ...]]:
        now = int(time.time() * 1_000_000)
        return self.conn.execute(
            "SELECT r.id, r.content, r.created_at FROM memory_records r "
            "WHERE r.scope_id IN (SELECT scope_id FROM memory_scope_pairs WHERE key = 'tenant' AND value = ? "
            "  INTERSECT SELECT scope_id FROM memory_scope_pairs WHERE key = 'user' AND value = ?) "
            "AND r.invalid_at IS NULL AND (r.expires_at IS NULL OR r.expires_at > ?) "
            "ORDER BY r.created_at DESC, r.rid DESC LIMIT ?",
            (scope["tenant"], scope["user"], now, limit),
        ).fetchall()

    def get(self, record_id: bytes) -> tuple[Any, ...] | None:
        row: tuple[Any, ...] | None = self.conn.execute(
            "SELECT r.*, s.scope FROM memory_records r JOIN memory_scopes s USING (scope_id) WHERE r.id = ?",
            (record_id,),
        ).fetchone()
        return row


def run_size(size: int, workdir: Path, queries: int) -> dict[str, Any]:
    sampler = LoadSampler()
    corpus = Corpus()
    store_path = workdir / f"store-{size}.sqlite3"
    quiet_path = workdir / f"quiet-{size}.sqlite3"
    raw_path = workdir / f"raw-{size}.sqlite3"
    for path in (store_path, quiet_path, raw_path):
        for file in store_files(path):
            file.unlink(missing_ok=True)
    result: dict[str, Any] = {"size": size}

    store = SqliteMemoryStore(store_path)  # the default configuration: event log on
    # the same batches into a second file without an event log, alternately
    with SqliteMemoryStore(quiet_path, persist_events=False) as quiet_ingest:
        result["ingest_per_s"], result["off_ingest_per_s"] = ingest_pair(store.write, quiet_ingest.write, corpus, size)
    for file in store_files(quiet_path):
        file.unlink(missing_ok=True)

    SqliteMemoryStore(raw_path, persist_events=False).close()  # the same schema, empty
    raw_ingest = RawSqlite(raw_path)
    result["raw_ingest_per_s"] = ingest("raw ingest", raw_ingest.write, corpus.inputs(size), size, batch=BATCH)
    raw_ingest.conn.close()

    started = time.perf_counter()
    store.optimize()  # what memory_import does after a bulk load; also empties the WAL
    result["optimize_s"] = time.perf_counter() - started
    store.flush_events()
    result["bytes_per_record"] = record_bytes(store_path) / size
    result["event_log_bytes"] = event_log_bytes(store_path)

    raw = RawSqlite(store_path)
    user_cases, tenant_cases = search_cases(corpus, queries)
    keys = [row[0] for row in raw.conn.execute("SELECT id FROM memory_records ORDER BY random() LIMIT ?", (queries,))]
    ids = [from_value(int.from_bytes(key, "big")) for key in keys]

    quiet = SqliteMemoryStore(store_path, persist_events=False)
    measure_against_raw(result, (store, quiet), raw, (user_cases, tenant_cases), (ids, keys))
    quiet.close()
    hits = [len(store.search({"scope": s, "query": q, "limit": 10})) for s, q in user_cases[:200]]
    result["user_search_mean_hits"] = statistics.fmean(hits)
    result["peak_rss_mb"] = peak_rss_mb()
    result["load"] = sampler.stop()
    store.close()
    raw.conn.close()
    return result


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}×" if b else "n/a"


def _load(results: list[dict[str, Any]]) -> str:
    return load_line([value for r in results for value in r.get("load", [])])


def _server(settings: dict[str, str]) -> str:
    listed = ", ".join(f"{name}={value}" for name, value in settings.items() if name != "version")
    return f"PostgreSQL {settings['version']} ({listed})"


def report(results: list[dict[str, Any]], *, backend: str = "sqlite", where: str = "") -> str:
    postgres = backend == "postgres"
    if postgres:
        import psycopg

        engine = f"{_server(results[0]['server'])}{where}, psycopg {psycopg.__version__}"
    else:
        engine = f"SQLite {sqlite3.sqlite_version}"
    lines = [
        f"{measured_on()} ({_load(results)}), {engine}, Python {sys.version.split()[0]}.",
        "",
        "| operation | size | store p50 / p95 / p99 (ms) | raw SQL p50 / p95 / p99 (ms) | p99 ratio |",
        "| --- | ---: | --- | --- | ---: |",
    ]
    for r in results:
        for name in ("user_search", "tenant_search", "listing", "get"):
            s, raw = r[name], r[f"raw_{name}"]
            lines.append(
                f"| {name.replace('_', ' ')} | {r['size']:,} | {s['p50']:.2f} / {s['p95']:.2f} / {s['p99']:.2f} "
                f"| {raw['p50']:.2f} / {raw['p95']:.2f} / {raw['p99']:.2f} | {_ratio(s['p99'], raw['p99'])} |"
            )
    lines += [
        "",
        "The store above runs with its event log on (the default). The same operations through a second store "
        "object over the same data with the event log off, interleaved with it in chunks of 50 calls:",
        "",
        "| operation | size | events on p50 / p95 / p99 (ms) | events off p50 / p95 / p99 (ms) | p50 on/off "
        "| p99 on/off |",
        "| --- | ---: | --- | --- | ---: | ---: |",
    ]
    for r in results:
        for name in EVENT_LOG_OPERATIONS:
            on, off = r[name], r[f"off_{name}"]
            label = "recall assembly (default budget)" if name == "recall" else name.replace("_", " ")
            lines.append(
                f"| {label} | {r['size']:,} | {on['p50']:.2f} / {on['p95']:.2f} / {on['p99']:.2f} "
                f"| {off['p50']:.2f} / {off['p95']:.2f} / {off['p99']:.2f} | {_ratio(on['p50'], off['p50'])} "
                f"| {_ratio(on['p99'], off['p99'])} |"
            )
    dropped = ", ".join(f"{r['events_dropped']:,} at {r['size']:,} records" for r in results)
    lines += ["", f"Events the buffer dropped during the run (ingest included): {dropped}."]
    merge = "VACUUM ANALYZE (s)" if postgres else "index merge (s)"
    lines += [
        "",
        f"| size | ingest (records/s) | ingest, events off | raw ingest | ratio | {merge} | bytes/record "
        "| event log (MB) | peak RSS (MB) |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in results:
        quiet = f"{r['off_ingest_per_s']:,.0f}" if "off_ingest_per_s" in r else "—"
        lines.append(
            f"| {r['size']:,} | {r['ingest_per_s']:,.0f} | {quiet} | {r['raw_ingest_per_s']:,.0f} "
            f"| {r['ingest_per_s'] / r['raw_ingest_per_s']:.2f}× | {r['optimize_s']:.1f} | {r['bytes_per_record']:.0f} "
            f"| {r['event_log_bytes'] / 1e6:.1f} | {r['peak_rss_mb']:.0f} |"
        )
    lines += [
        "",
        "Ingest writes batches of 1,000 records, each spanning hundreds of scopes (one write event per scope); "
        "bytes/record counts the records, their indexes and scopes, the event log apart"
        + ("." if postgres else "; the events-off ingest wrote the same batches into a second file, alternately."),
    ]
    largest = max(results, key=lambda r: r["size"])
    recall_check = (
        "recall assembly p99 ≤ 10 ms, events on (the target is set at 1,000,000 records)",
        largest["recall"]["p99"] <= TARGETS["recall_p99_ms"],
    )
    if postgres:
        checks = {"user-scoped search p99 ≤ 10 ms": largest["user_search"]["p99"] <= PG_TARGETS["user_search_p99_ms"]}
    else:
        checks = {
            "user-scoped search p99 ≤ 5 ms": largest["user_search"]["p99"] <= TARGETS["user_search_p99_ms"],
            "user-scoped search p99 ≤ 2.5× raw": largest["user_search"]["p99"]
            <= TARGETS["user_search_ratio"] * largest["raw_user_search"]["p99"],
            "tenant-scoped search p99 ≤ 15 ms": largest["tenant_search"]["p99"] <= TARGETS["tenant_search_p99_ms"],
            "recency listing p99 ≤ 1 ms": largest["listing"]["p99"] <= TARGETS["listing_p99_ms"],
            "ingest ≥ 25k records/s": largest["ingest_per_s"] >= TARGETS["ingest_per_s"],
            "ingest ≥ 0.7× raw": largest["ingest_per_s"] >= TARGETS["ingest_ratio"] * largest["raw_ingest_per_s"],
            "≤ 400 bytes per record": largest["bytes_per_record"] <= TARGETS["bytes_per_record"],
        }
    checks[recall_check[0]] = recall_check[1]
    lines += ["", f"Targets at {largest['size']:,} records:", ""]
    lines += [f"- {'met' if ok else 'MISSED'}: {name}" for name, ok in checks.items()]
    lines += ["", f"Mean hits per user-scoped search (limit 10): {largest['user_search_mean_hits']:.1f}."]
    if postgres:
        agreement = largest["raw_agreement"]
        lines += [
            "",
            f"Of {agreement['searches']} user-scoped searches, the raw statement returned the store's ten records "
            f"for {agreement['same_records']} and in the store's order for {agreement['same_order']}. Bytes per "
            "record: pg_total_relation_size of the store's tables (heap, indexes, TOAST) over the records. Peak RSS "
            "is the benchmark client's; the server's memory is its own.",
        ]
    return "\n".join(lines)


def _redacted(argv: Sequence[str]) -> list[str]:
    """The command line as the report prints it: a ``--url`` without its password."""
    shown = list(argv)
    for index, arg in enumerate(shown):
        if arg == "--url" and index + 1 < len(shown):
            shown[index + 1] = _without_password(shown[index + 1])
        elif arg.startswith("--url="):
            shown[index] = "--url=" + _without_password(arg[len("--url=") :])
    return shown


def _without_password(url: str) -> str:
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    params = conninfo_to_dict(url)
    if "password" not in params:
        return url
    return make_conninfo("", **{key: value for key, value in params.items() if key != "password"})


def _run_sizes(sizes: list[int], extra: list[str], queries: int) -> list[dict[str, Any]]:
    return [run_child("bench.store", "--one", str(size), "--queries", str(queries), *extra) for size in sizes]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100000,1000000", help="comma-separated record counts")
    parser.add_argument("--queries", type=int, default=2000, help="calls per measured operation")
    parser.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument(
        "--url",
        help="postgres: a database where the benchmark may create and drop the schemas memory_bench_store "
        "and memory_bench_raw",
    )
    parser.add_argument(
        "--postgres-throwaway",
        action="store_true",
        help="postgres: start a private cluster from the local server binaries (PostgreSQL's durable defaults) "
        "for the run, and delete it afterwards",
    )
    parser.add_argument(
        "--postgres-setting",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="postgres-throwaway: a server setting beyond PostgreSQL's defaults (repeatable; the report states "
        "every setting that matters)",
    )
    parser.add_argument("--dir", type=Path, default=None, help="sqlite: where the files go (default: a temp dir)")
    parser.add_argument("--out", type=Path, default=None, help="also write the report (markdown) here")
    parser.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    backend = "postgres" if args.postgres_throwaway else args.backend
    if backend == "postgres" and bool(args.url) == bool(args.postgres_throwaway):
        parser.error("the postgres backend needs --url or --postgres-throwaway (one of them)")
    if backend == "sqlite" and args.url:
        parser.error("--url is for --backend postgres")
    if args.postgres_setting and not args.postgres_throwaway:
        parser.error("--postgres-setting is for --postgres-throwaway (set your own server's settings yourself)")
    settings = dict(item.partition("=")[::2] for item in args.postgres_setting)
    sizes = [int(s) for s in args.sizes.split(",")]
    if backend == "postgres":
        from bench import store_postgres

        if args.one is not None:  # a child of the run below
            return answer_parent(store_postgres.run_size(args.one, args.url, args.queries))
        with contextlib.ExitStack() as stack:
            url, where = args.url, ""
            if args.postgres_throwaway:
                url = stack.enter_context(throwaway_postgres(parser, "memory_bench", settings))
                where = ", a throwaway cluster on this machine reached over a unix socket"
            for size in sizes:
                sys.stderr.write(f"{size:,} records → PostgreSQL\n")
            results = _run_sizes(sizes, ["--backend", "postgres", "--url", url], args.queries)
        text = report(results, backend="postgres", where=where)
    else:
        # the files are kept only where --dir asks for them (a 1M run leaves 1.2 GB)
        with scratch("memory-bench-", keep=args.dir) as workdir:
            if args.one is not None:  # a child of the run below
                return answer_parent(run_size(args.one, workdir, args.queries))
            for size in sizes:
                sys.stderr.write(f"{size:,} records → {workdir}\n")
            results = _run_sizes(sizes, ["--dir", str(workdir)], args.queries)
        text = report(results)
    print(text)
    shown = command("bench.store", _redacted(sys.argv[1:] if argv is None else argv))
    write_report(args.out, fenced("Store benchmark", shown, text))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
