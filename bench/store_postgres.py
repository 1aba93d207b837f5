"""The store benchmark's PostgreSQL target (``python -m bench.store --backend postgres``).

One size runs against one database: the store's tables go in the schema
``memory_bench_store`` and the raw baseline's in ``memory_bench_raw`` (each connection's
``search_path`` points at one of them), both dropped and made afresh for the run and
dropped after it. Every operation is measured through the store's public API and as the
same operation done with hand-written SQL on the same schema, on a connection with the
store's settings; the ratio is the library's overhead.
"""

from __future__ import annotations

import statistics
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from bench.corpus import Corpus
from bench.measure import LoadSampler, ingest, peak_rss_mb
from bench.workload import BATCH, measure_against_raw, search_cases
from memory_admin.scope import scope_json
from memory_admin.store.postgres import PostgresMemoryStore
from memory_admin.store.postgres.index import (
    kind_lexeme,
    lexeme,
    pair_lexeme,
    scope_pair_lexemes,
    scope_text_lexeme,
)
from memory_admin.store.ranking import record_text
from memory_admin.store.sql.rows import dumps
from memory_admin.tokenize import tokenize, unique_tokens

STORE_SCHEMA = "memory_bench_store"
RAW_SCHEMA = "memory_bench_raw"

# what the report states about the server it ran on
SETTINGS = (
    "fsync",
    "synchronous_commit",
    "full_page_writes",
    "wal_level",
    "shared_buffers",
    "work_mem",
    "effective_cache_size",
    "max_parallel_workers_per_gather",
    "jit",
)


def in_schema(url: str, schema: str) -> str:
    """``url`` with every connection's ``search_path`` set to ``schema``, where the store
    then makes its tables (libpq's ``options``, after any the URL already sets)."""
    options = str(conninfo_to_dict(url).get("options") or "")
    return make_conninfo(url, options=f"{options} -c search_path={schema}".strip())


def server_settings(url: str) -> dict[str, str]:
    found: dict[str, str] = {}
    with psycopg.connect(url, autocommit=True) as conn:
        for name in ("server_version", *SETTINGS):
            row = conn.execute(f"SHOW {name}".encode()).fetchone()
            found["version" if name == "server_version" else name] = str(row[0]) if row else "?"
    return found


def _quoted(text: str) -> str:
    # tsvector and tsquery quoting: a quote doubled, a backslash escaped
    return "'" + text.replace("\\", "\\\\").replace("'", "''") + "'"


def _any(lexemes: Sequence[str], joiner: str) -> str:
    return "(" + f" {joiner} ".join(_quoted(lex) for lex in lexemes) + ")"


class RawPostgres:
    """The same operations, hand-written against the same schema, on one connection with
    the store's settings (autocommit, no server-side prepared statements): no models, no
    validation, no planning in Python."""

    def __init__(self, url: str) -> None:
        self.conn = psycopg.connect(url, autocommit=True, prepare_threshold=None)
        self.scope_ids: dict[str, int] = {}

    def write(self, batch: list[dict[str, Any]]) -> None:
        """One transaction: new scopes, then the records by ``COPY`` (the fastest bulk
        path PostgreSQL has), each with the tsvector the store would build for it."""
        now = datetime.now(UTC)
        with self.conn.transaction():
            new = {scope_json(item["scope"]): item["scope"] for item in batch}
            new = {text: scope for text, scope in new.items() if text not in self.scope_ids}
            if new:
                rows = self.conn.execute(
                    "INSERT INTO memory_scopes (scope, tenant, lexemes) "
                    "SELECT v.scope, v.tenant, string_to_array(v.lexemes, ' ') "
                    "FROM unnest(%s::text[], %s::text[], %s::text[]) AS v(scope, tenant, lexemes) "
                    "RETURNING scope_id, scope",
                    [
                        list(new),
                        [scope["tenant"] for scope in new.values()],
                        [" ".join(scope_pair_lexemes(scope)) for scope in new.values()],
                    ],
                ).fetchall()
                self.scope_ids.update({text: scope_id for scope_id, text in rows})
            columns = "scope_id, tenant, id, kind, key, content, tags, provenance, created_at, n_tokens, tsv"
            with self.conn.cursor().copy(f"COPY memory_records ({columns}) FROM STDIN") as copy:
                for item in batch:
                    text = scope_json(item["scope"])
                    tags = item.get("tags") or []
                    tokens = tokenize(record_text(item["content"], tags, now))
                    positions: dict[str, list[str]] = {}
                    for index, token in enumerate(tokens, start=1):
                        positions.setdefault(lexeme(token), []).append(str(index))
                    hidden = [*scope_pair_lexemes(item["scope"]), scope_text_lexeme(text), kind_lexeme(item["kind"])]
                    tsv = " ".join(
                        [f"{_quoted(lex)}:{','.join(where)}" for lex, where in positions.items()]
                        + [_quoted(lex) for lex in hidden]
                    )
                    copy.write_row(
                        (
                            self.scope_ids[text],
                            item["scope"]["tenant"],
                            "mem_" + uuid.uuid4().hex,
                            item["kind"],
                            item.get("key"),
                            item["content"],
                            dumps(tags) if tags else None,
                            dumps(item["provenance"]),
                            now,
                            len(tokens),
                            tsv,
                        )
                    )

    def search(self, scope: dict[str, str], query: str, limit: int = 10) -> list[tuple[Any, ...]]:
        """The best single statement for the store's result: the scoped GIN match, then
        BM25 (presence for term frequency, the searched scopes as the collection) over
        every match, ranked in SQL, and the page's records."""
        pairs = [pair_lexeme(key, value) for key, value in scope.items()]
        lexemes = [lexeme(token) for token in unique_tokens(query)]
        indexes = range(1, len(lexemes) + 1)
        present = ", ".join("r.tsv @@ %s::tsquery" for _ in lexemes)
        idf = ", ".join(
            f"greatest(ln((st.n - count(*) FILTER (WHERE m.p[{i}]) + 0.5) "
            f"/ (count(*) FILTER (WHERE m.p[{i}]) + 0.5)), 1e-6)"
            for i in indexes
        )
        weight = " + ".join(f"CASE WHEN m.p[{i}] THEN d.idf[{i}] ELSE 0 END" for i in indexes)
        sql = f"""
            WITH st AS MATERIALIZED (
                SELECT greatest(sum(n_records), 1)::float8 AS n,
                       greatest(sum(n_tokens)::float8 / greatest(sum(n_records), 1), 1) AS avgdl
                FROM memory_scopes WHERE lexemes @> %s::text[]
            ),
            m AS MATERIALIZED (
                SELECT r.seq, r.created_at, r.n_tokens, ARRAY[{present}] AS p FROM memory_records r
                WHERE r.tsv @@ %s::tsquery AND r.invalid_at IS NULL AND (r.expires_at IS NULL OR r.expires_at > now())
            ),
            d AS MATERIALIZED (SELECT ARRAY[{idf}] AS idf, st.avgdl FROM m, st GROUP BY st.n, st.avgdl),
            top AS (
                SELECT m.seq, m.created_at,
                       round((({weight}) * 2.2 / (1 + 1.2 * (0.25 + 0.75 * m.n_tokens / d.avgdl)))::numeric, 9) AS score
                FROM m, d ORDER BY score DESC, m.created_at DESC, m.seq DESC LIMIT %s
            )
            SELECT r.*, s.scope, top.score FROM top JOIN memory_records r ON r.seq = top.seq
            JOIN memory_scopes s ON s.scope_id = r.scope_id ORDER BY top.score DESC, top.created_at DESC, top.seq DESC
        """
        params = [pairs, *(_quoted(lex) for lex in lexemes), _any(pairs, "&") + " & " + _any(lexemes, "|"), limit]
        return self.conn.execute(sql.encode(), params).fetchall()

    def listing(self, scope: dict[str, str], limit: int = 10) -> list[tuple[Any, ...]]:
        """Newest first: each reached scope's recency index walked, the top rows merged."""
        return self.conn.execute(
            "SELECT c.* FROM (SELECT scope_id FROM memory_scopes WHERE lexemes @> %s::text[]) sc "
            "CROSS JOIN LATERAL (SELECT r.*, s.scope FROM memory_records r JOIN memory_scopes s USING (scope_id) "
            "WHERE r.scope_id = sc.scope_id AND r.invalid_at IS NULL "
            "AND (r.expires_at IS NULL OR r.expires_at > now()) "
            "ORDER BY r.created_at DESC, r.seq DESC LIMIT %s) c "
            "ORDER BY c.created_at DESC, c.seq DESC LIMIT %s",
            [[pair_lexeme(key, value) for key, value in scope.items()], limit, limit],
        ).fetchall()

    def get(self, record_id: str) -> tuple[Any, ...] | None:
        row: tuple[Any, ...] | None = self.conn.execute(
            "SELECT r.*, s.scope FROM memory_records r JOIN memory_scopes s USING (scope_id) WHERE r.id = %s",
            [record_id],
        ).fetchone()
        return row


def _fresh_schemas(url: str, *schemas: str, create: bool = True) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        for schema in schemas:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE".encode())
            if create:
                conn.execute(f"CREATE SCHEMA {schema}".encode())


def _table_bytes(url: str) -> tuple[int, int]:
    """The store's tables (heap, indexes, TOAST) and the event log's, in bytes."""
    log_tables = "('memory_events', 'memory_counters')"
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)) FILTER "
            f"(WHERE c.relkind = 'r' AND c.relname NOT IN {log_tables}), 0), "
            f"coalesce(sum(pg_total_relation_size(c.oid)) FILTER (WHERE c.relname IN {log_tables}), 0) "
            "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s",
            [STORE_SCHEMA],
        ).fetchone()
    return (int(row[0]), int(row[1])) if row else (0, 0)


def run_size(size: int, url: str, queries: int) -> dict[str, Any]:
    sampler = LoadSampler()
    corpus = Corpus()
    _fresh_schemas(url, STORE_SCHEMA, RAW_SCHEMA)
    store_url, raw_url = in_schema(url, STORE_SCHEMA), in_schema(url, RAW_SCHEMA)
    result: dict[str, Any] = {"size": size, "server": server_settings(url)}
    try:
        store = PostgresMemoryStore(store_url)  # the default configuration: event log on
        result["ingest_per_s"] = ingest("store ingest", store.write, corpus.inputs(size), size, batch=BATCH)

        PostgresMemoryStore(raw_url, persist_events=False).close()  # the same schema, empty
        raw_ingest = RawPostgres(raw_url)
        result["raw_ingest_per_s"] = ingest("raw ingest", raw_ingest.write, corpus.inputs(size), size, batch=BATCH)
        raw_ingest.conn.close()
        _fresh_schemas(url, RAW_SCHEMA, create=False)  # its disk back before the measurements

        started = time.perf_counter()
        store.optimize()  # VACUUM (ANALYZE), what memory_import does after a bulk load
        result["optimize_s"] = time.perf_counter() - started
        store.flush_events()
        store_bytes, result["event_log_bytes"] = _table_bytes(url)
        result["bytes_per_record"] = store_bytes / size

        raw = RawPostgres(store_url)
        user_cases, tenant_cases = search_cases(corpus, queries)
        sample = raw.conn.execute("SELECT id FROM memory_records ORDER BY random() LIMIT %s", [queries])
        ids = [row[0] for row in sample]

        quiet = PostgresMemoryStore(store_url, persist_events=False)
        measure_against_raw(result, (store, quiet), raw, (user_cases, tenant_cases), (ids, ids))
        quiet.close()
        same = same_set = 0
        hits = []
        for scope, text in user_cases[:200]:
            found = [hit.record.id for hit in store.search({"scope": scope, "query": text, "limit": 10})]
            raw_ids = [row[1] for row in raw.search(scope, text)]  # r.* starts with seq, id
            hits.append(len(found))
            same += found == raw_ids
            same_set += set(found) == set(raw_ids)
        result["user_search_mean_hits"] = statistics.fmean(hits)
        result["raw_agreement"] = {"searches": len(hits), "same_order": same, "same_records": same_set}
        result["peak_rss_mb"] = peak_rss_mb()
        result["load"] = sampler.stop()
        store.close()
        raw.conn.close()
    finally:
        _fresh_schemas(url, STORE_SCHEMA, RAW_SCHEMA, create=False)
    return result
