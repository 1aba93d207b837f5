"""The PostgreSQL backend: the production tier, for when one machine is not enough.

psycopg 3 with a connection pool for the sync API and an async pool for the async
twins, which are native: every piece of SQL is written once, as a small generator that
yields statements and receives their rows (an *op*), and two ten-line drivers run an op
on a sync or an async connection. The rules stay in :class:`BaseMemoryStore`.

Full-text search matches exactly what SQLite and the in-memory store match: each
record's ``tsvector`` is built from :func:`~memory_admin.tokenize.tokenize` lexeme by
lexeme (the server's parser never re-splits them), and a query is the OR of its tokens.
Each record also carries hidden lexemes — one per scope pair, one for its whole scope,
its kind, an agent marker — that start with ``:``, which no token can, so user text can
never spell them. A user-scoped search is one GIN expression, ``pairs & (t1 | t2 …)``,
that never visits another scope's matches. Ranking is BM25 computed in SQL over the
matches, with collection statistics of the searched scopes (counters kept by triggers)
and a token's presence standing for its frequency.

Writers lock the rows of every scope they write, in one order, before planning: two
writers of one scope serialise, so two key upserts cannot leave two live records and a
record cannot get two successors; partial unique indexes make both impossible anyway.
The schema has its own migration ladder (``memory_schema.version``) run under an
advisory lock, so processes starting together migrate once.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import math
import threading
import time
from collections import Counter
from collections.abc import Generator, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import combinations
from typing import Any, TypeVar, cast

import psycopg
from psycopg import errors as pg_errors
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool, ConnectionPool, PoolTimeout

from memory_admin.errors import (
    MemoryBusyError,
    MemoryConflictError,
    MemoryCorruptionError,
    MemoryStoreError,
    MemoryValidationError,
    SchemaVersionError,
)
from memory_admin.events import AnyEvent, EventQuery, StoredEvent, deliver, parse_event
from memory_admin.records import KINDS, MemoryHit, MemoryRecord, MemoryWriteInput
from memory_admin.scope import AGENT_KEY, TENANT_KEY, Scope, canonical_scope, scope_json
from memory_admin.store import ranking
from memory_admin.store._sql import AGENT_MARK, RECORD_COLUMNS, dumps, pair_token, record_from_row, record_values
from memory_admin.store.base import (
    DEFAULT_MAX_BATCH,
    DEFAULT_MAX_CONTENT_CHARS,
    DEFAULT_MAX_LIMIT,
    BaseMemoryStore,
    Cursor,
    Invalidation,
    PlannedBatch,
    SearchPlan,
    _check_id,
    clean_reason,
)
from memory_admin.store.memory import build_facets
from memory_admin.store.protocol import (
    CorruptionScan,
    CorruptRecord,
    ErasureReport,
    MemoryStoreCapabilities,
    ScopeCounts,
    ScopeFacet,
    SearchQueryLike,
    WriteInputLike,
)
from memory_admin.tokenize import tokenize

log = logging.getLogger(__name__)

T = TypeVar("T")
Row = dict[str, Any]

# --- schema ----------------------------------------------------------------------------

MIGRATIONS: list[str] = [
    # 1: records, scopes with their counters, the full-text index, the event log
    """
    CREATE TABLE memory_schema (
        singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
        version   integer NOT NULL
    );
    INSERT INTO memory_schema (version) VALUES (0);

    CREATE TABLE memory_scopes (
        scope_id  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        scope     text NOT NULL UNIQUE,
        tenant    text NOT NULL,
        lexemes   text[] NOT NULL,
        n_records bigint NOT NULL DEFAULT 0,
        n_tokens  bigint NOT NULL DEFAULT 0
    );
    CREATE INDEX memory_scopes_lexemes ON memory_scopes USING gin (lexemes);

    CREATE TABLE memory_records (
        seq            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        id             text NOT NULL UNIQUE,
        scope_id       bigint NOT NULL REFERENCES memory_scopes (scope_id),
        tenant         text NOT NULL,
        kind           text NOT NULL,
        key            text,
        content        text NOT NULL,
        tags           text,
        provenance     text NOT NULL,
        created_at     timestamptz NOT NULL,
        updated_at     timestamptz,
        invalid_at     timestamptz,
        invalid_reason text,
        superseded_by  text,
        supersedes     text,
        expires_at     timestamptz,
        target         text,
        payload        text,
        supports       text,
        n_tokens       integer NOT NULL,
        tsv            tsvector NOT NULL
    );
    CREATE INDEX memory_records_scope_recent ON memory_records (scope_id, created_at, seq);
    CREATE INDEX memory_records_tenant_recent ON memory_records (tenant, created_at, seq);
    CREATE INDEX memory_records_fts ON memory_records USING gin (tsv);
    -- the contract's chain invariants, held by the database whatever the writer
    CREATE UNIQUE INDEX memory_records_live_slot ON memory_records (scope_id, kind, key)
        WHERE key IS NOT NULL AND invalid_at IS NULL;
    CREATE UNIQUE INDEX memory_records_one_successor ON memory_records (supersedes)
        WHERE supersedes IS NOT NULL;

    -- per-scope counters (BM25 statistics, facets) kept once per statement, not per row
    CREATE FUNCTION memory_scopes_add() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        UPDATE memory_scopes s SET n_records = s.n_records + d.n, n_tokens = s.n_tokens + d.t
        FROM (SELECT scope_id, count(*) AS n, sum(n_tokens) AS t FROM added GROUP BY scope_id) d
        WHERE s.scope_id = d.scope_id;
        RETURN NULL;
    END $$;
    CREATE FUNCTION memory_scopes_remove() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        UPDATE memory_scopes s SET n_records = s.n_records - d.n, n_tokens = s.n_tokens - d.t
        FROM (SELECT scope_id, count(*) AS n, sum(n_tokens) AS t FROM removed GROUP BY scope_id) d
        WHERE s.scope_id = d.scope_id;
        RETURN NULL;
    END $$;
    CREATE TRIGGER memory_records_counted_insert AFTER INSERT ON memory_records
        REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION memory_scopes_add();
    CREATE TRIGGER memory_records_counted_delete AFTER DELETE ON memory_records
        REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION memory_scopes_remove();

    CREATE TABLE memory_events (
        eid     bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        type    text NOT NULL,
        at      timestamptz NOT NULL,
        tenant  text NOT NULL,
        scope   jsonb NOT NULL,
        agent   text,
        preview boolean NOT NULL DEFAULT false,
        body    text NOT NULL
    );
    CREATE INDEX memory_events_type_at ON memory_events (type, at);
    CREATE INDEX memory_events_tenant_at ON memory_events (tenant, at);
    CREATE INDEX memory_events_scope ON memory_events USING gin (scope jsonb_path_ops);
    """,
]

SCHEMA_VERSION = len(MIGRATIONS)

_MIGRATION_LOCK = 0x6D656D5F61646D31  # any constant; "mem_adm1" in ASCII
_VISIBLE_ENUMERATION_LIMIT = 12  # viewer pairs; 2^11 candidate scopes at most

# PostgreSQL's own limits on a tsvector entry
_MAX_LEXEME_BYTES = 2047
_MAX_POSITION = 16383
_MAX_POSITIONS = 256

# Ranked search (as SQLite's): scopes this size are ranked exhaustively in one statement;
# larger ones score at most this many candidates per search
_SMALL_SCOPE = 500
_CANDIDATE_BUDGET = 200
_SCOPE_SCAN = 500  # a ranked search over at most this many records reads its scopes whole
_FEW_SCOPES = 16  # a search reaching at most this many stored scopes matches their whole-scope lexemes
_STATS_TTL_S = 300.0
# BM25's length factor (presence for term frequency) never exceeds its value at length 0
_MAX_LENGTH_FACTOR = (ranking.K1 + 1) / (1 + ranking.K1 * (1 - ranking.B))

_RECORD_SELECT = "SELECT r.seq AS seq, s.scope AS scope, " + ", ".join(f"r.{c} AS {c}" for c in RECORD_COLUMNS)
_RECORD_FROM = " FROM memory_records r JOIN memory_scopes s ON s.scope_id = r.scope_id"

# column, SQL array type — the order the insert statement binds them in
_INSERT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("scope_id", "bigint"),
    ("tenant", "text"),
    *((c, "timestamptz" if c.endswith("_at") else "text") for c in RECORD_COLUMNS),
    ("n_tokens", "integer"),
    ("tsv", "tsvector"),
)


# --- hidden lexemes and the text of tsvectors and tsqueries ----------------------------
# Every hidden lexeme starts with ':'; tokenize() only yields letters and digits.

AGENT_LEXEME = ":" + AGENT_MARK


def pair_lexeme(key: str, value: str) -> str:
    return ":" + pair_token(key, value)


def scope_lexeme(scope: Mapping[str, str]) -> str:
    return scope_text_lexeme(scope_json(scope))


def scope_text_lexeme(text: str) -> str:
    """The whole-scope lexeme of a scope given as its canonical JSON (as stored)."""
    return ":s" + hashlib.blake2b(text.encode(), digest_size=10).hexdigest()


def kind_lexeme(kind: str) -> str:
    return ":k" + kind


def scope_pair_lexemes(scope: Mapping[str, str]) -> list[str]:
    """The lexemes stored with a scope: its pairs, and the agent marker if it names one."""
    lexemes = [pair_lexeme(key, value) for key, value in sorted(scope.items())]
    if AGENT_KEY in scope:
        lexemes.append(AGENT_LEXEME)
    return lexemes


def lexeme(token: str) -> str:
    """A token as an index lexeme. PostgreSQL refuses lexemes over 2047 bytes; a longer
    token keeps its head and a digest of the whole, so equal tokens stay equal."""
    raw = token.encode()
    if len(raw) <= _MAX_LEXEME_BYTES:
        return token
    head = raw[:2000].decode(errors="ignore")
    return f"{head}#{hashlib.blake2b(raw, digest_size=8).hexdigest()}"


def _quote(text: str) -> str:
    # the tsvector/tsquery quoting rules: a quote is doubled, a backslash escaped
    return "'" + text.replace("\\", "\\\\").replace("'", "''") + "'"


def document(record: MemoryRecord, hidden: Iterable[str]) -> tuple[str, int]:
    """The record's tsvector text (content and tag tokens with positions, then the hidden
    lexemes) and its length in tokens, for BM25."""
    tokens = tokenize(record.content) + tokenize(" ".join(record.tags))
    positions: dict[str, list[int]] = {}
    for index, token in enumerate(tokens, start=1):
        kept = positions.setdefault(lexeme(token), [])
        position = min(index, _MAX_POSITION)
        if len(kept) < _MAX_POSITIONS and (not kept or kept[-1] != position):
            kept.append(position)
    parts = [f"{_quote(lex)}:{','.join(map(str, where))}" for lex, where in positions.items()]
    parts += [_quote(lex) for lex in hidden]
    return " ".join(parts), len(tokens)


def _all_of(lexemes: Iterable[str]) -> str:
    return "(" + " & ".join(_quote(lex) for lex in lexemes) + ")"


def _any_of(lexemes: Iterable[str]) -> str:
    return "(" + " | ".join(_quote(lex) for lex in lexemes) + ")"


def _visible_candidates(viewer: Scope, agent: str | None) -> list[Scope]:
    """Every scope a viewer sees under visible match: the tenant plus any subset of its
    other pairs (the agent convention applied)."""
    if len(viewer) > _VISIBLE_ENUMERATION_LIMIT:
        raise MemoryValidationError(
            f"A visible-match scope holds at most {_VISIBLE_ENUMERATION_LIMIT} pairs.",
            [{"loc": "scope", "msg": "too many pairs for visible match"}],
        )
    others = [key for key in viewer if key != TENANT_KEY]
    candidates = []
    for size in range(len(others) + 1):
        for keys in combinations(others, size):
            subset = {TENANT_KEY: viewer[TENANT_KEY], **{k: viewer[k] for k in keys}}
            if agent is None or subset.get(AGENT_KEY, agent) == agent:
                candidates.append(dict(sorted(subset.items())))
    return candidates


# --- ops: SQL written once, run by a sync or an async driver ---------------------------


@dataclass(frozen=True)
class Statement:
    sql: str
    params: Sequence[Any] = ()


Op = Generator[Statement, list[Row], T]
"""A database operation: yields statements, receives each one's rows, returns a value.
Statements of one op run on one connection (in one transaction when the caller opens one)."""


def _drive(conn: psycopg.Connection[Any], op: Op[T]) -> T:
    with conn.cursor(row_factory=dict_row) as cur:
        try:
            statement = next(op)
            while True:
                cur.execute(statement.sql, statement.params)
                statement = op.send(cur.fetchall() if cur.description is not None else [])
        except StopIteration as done:
            return cast(T, done.value)


async def _adrive(conn: psycopg.AsyncConnection[Any], op: Op[T]) -> T:
    async with conn.cursor(row_factory=dict_row) as cur:
        try:
            statement = next(op)
            while True:
                await cur.execute(statement.sql, statement.params)
                statement = op.send(await cur.fetchall() if cur.description is not None else [])
        except StopIteration as done:
            return cast(T, done.value)


def _from_db_time(value: Any) -> datetime:
    if not isinstance(value, datetime) or value.tzinfo is None:
        raise TypeError(f"timestamp column holds {type(value).__name__}, expected timestamptz")
    return value.astimezone(UTC)


def _same(value: datetime) -> datetime:
    return value


def _record(row: Row) -> MemoryRecord:
    return record_from_row(row, _from_db_time)


def _cursor_time(created_us: int) -> datetime:
    try:
        return datetime.fromtimestamp(created_us // 1_000_000, UTC).replace(microsecond=created_us % 1_000_000)
    except (OverflowError, OSError, ValueError):
        raise MemoryValidationError(
            "That page cursor is not one this store issued; start from the first page.",
            [{"loc": "cursor", "msg": "malformed cursor"}],
        ) from None


def _created_us(moment: datetime) -> int:
    return int(moment.timestamp()) * 1_000_000 + moment.microsecond


def fetch_op(ids: Sequence[str], *, lock: bool = False) -> Op[dict[str, MemoryRecord]]:
    if not ids:
        return {}
    sql = _RECORD_SELECT + _RECORD_FROM + " WHERE r.id = ANY(%s)"
    if lock:
        sql += " ORDER BY r.id FOR UPDATE OF r"
    rows = yield Statement(sql, [list(ids)])
    return {row["id"]: _record(row) for row in rows}


def find_keyed_op(scope: Scope, kind: str, key: str) -> Op[MemoryRecord | None]:
    rows = yield Statement(
        _RECORD_SELECT + _RECORD_FROM + " WHERE s.scope = %s AND r.kind = %s AND r.key = %s "
        "AND r.invalid_at IS NULL LIMIT 1",
        [scope_json(scope), kind, key],
    )
    return _record(rows[0]) if rows else None


def lock_scopes_op(scopes: Mapping[str, Scope]) -> Op[dict[str, int]]:
    """Create the missing scopes and lock every one of them, in scope order (so writers
    never deadlock); returns their ids by canonical JSON."""
    texts = sorted(scopes)
    rows = yield Statement(
        "INSERT INTO memory_scopes AS sc (scope, tenant, lexemes) "
        "SELECT v.scope, v.tenant, string_to_array(v.lexemes, ' ') "
        "FROM unnest(%s::text[], %s::text[], %s::text[]) AS v(scope, tenant, lexemes) ORDER BY v.scope "
        # DO UPDATE (not DO NOTHING) locks an existing row, and survives its concurrent deletion
        "ON CONFLICT (scope) DO UPDATE SET tenant = EXCLUDED.tenant RETURNING sc.scope_id, sc.scope",
        [
            texts,
            [scopes[text][TENANT_KEY] for text in texts],
            [" ".join(scope_pair_lexemes(scopes[text])) for text in texts],
        ],
    )
    return {row["scope"]: int(row["scope_id"]) for row in rows}


def insert_op(records: Sequence[MemoryRecord], scope_ids: Mapping[str, int]) -> Op[None]:
    columns: dict[str, list[Any]] = {name: [] for name, _ in _INSERT_COLUMNS}
    for record in records:
        text = scope_json(record.scope)
        values = record_values(record, _same)
        tsv, n_tokens = document(
            record, [*scope_pair_lexemes(record.scope), scope_lexeme(record.scope), kind_lexeme(record.kind)]
        )
        values.update(scope_id=scope_ids[text], tenant=record.scope[TENANT_KEY], n_tokens=n_tokens, tsv=tsv)
        for name in columns:
            columns[name].append(values[name])
    names = ", ".join(name for name, _ in _INSERT_COLUMNS)
    arrays = ", ".join(f"%s::{kind}[]" for _, kind in _INSERT_COLUMNS)
    # unnest keeps input order, so seq (the batch tiebreak) follows it
    yield Statement(f"INSERT INTO memory_records ({names}) SELECT * FROM unnest({arrays})", list(columns.values()))


def invalidate_op(changes: Sequence[Invalidation]) -> Op[None]:
    yield Statement(
        "UPDATE memory_records r SET invalid_at = v.at, updated_at = v.at, invalid_reason = v.reason, "
        "superseded_by = v.successor "
        "FROM unnest(%s::text[], %s::timestamptz[], %s::text[], %s::text[]) AS v(id, at, reason, successor) "
        "WHERE r.id = v.id",
        [
            [c.record_id for c in changes],
            [c.at for c in changes],
            [c.reason for c in changes],
            [c.superseded_by for c in changes],
        ],
    )


def delete_op(record_id: str) -> Op[bool]:
    rows = yield Statement("SELECT scope_id FROM memory_records WHERE id = %s", [record_id])
    if not rows:
        return False
    scope_id = rows[0]["scope_id"]
    # the scope row first, as writers take it: the same lock order everywhere
    yield Statement("SELECT 1 FROM memory_scopes WHERE scope_id = %s FOR UPDATE", [scope_id])
    gone = yield Statement("DELETE FROM memory_records WHERE id = %s RETURNING 1", [record_id])
    yield Statement("DELETE FROM memory_scopes WHERE scope_id = %s AND n_records <= 0", [scope_id])
    return bool(gone)


def expired_ids_op(scope: Scope, now: datetime) -> Op[list[str]]:
    """The expired records under a scope, their scopes locked first (in scope order, as
    every writer locks them) since deleting each one takes its scope's lock."""
    scope_rows = yield Statement(
        "SELECT scope_id FROM memory_scopes WHERE lexemes @> %s::text[] ORDER BY scope FOR UPDATE",
        [[pair_lexeme(key, value) for key, value in scope.items()]],
    )
    rows = yield Statement(
        "SELECT id FROM memory_records WHERE scope_id = ANY(%s) AND expires_at <= %s ORDER BY id",
        [[row["scope_id"] for row in scope_rows], now],
    )
    return [row["id"] for row in rows]


def find_corrupt_op(scope: Scope | None, limit: int, max_rows: int | None) -> Op[CorruptionScan]:
    where, params = "", []
    if scope is not None:
        where = " AND r.scope_id IN (SELECT sc.scope_id FROM memory_scopes sc WHERE sc.lexemes @> %s::text[])"
        params = [[pair_lexeme(key, value) for key, value in scope.items()]]
    corrupt: list[CorruptRecord] = []
    checked = last = 0
    while len(corrupt) < limit and (max_rows is None or checked < max_rows):
        chunk = 1000 if max_rows is None else min(1000, max_rows - checked)
        rows = yield Statement(
            _RECORD_SELECT + _RECORD_FROM + f" WHERE r.seq > %s{where} ORDER BY r.seq LIMIT %s",
            [last, *params, chunk],
        )
        for row in rows:
            try:
                _record(row)
            except MemoryCorruptionError as exc:
                corrupt.append(CorruptRecord(id=exc.record_id, detail=exc.extras["detail"], raw=exc.raw))
        checked += len(rows)
        if len(rows) < chunk:
            return CorruptionScan(checked=checked, corrupt=corrupt[:limit], complete=True)
        last = int(rows[-1]["seq"])
    return CorruptionScan(checked=checked, corrupt=corrupt[:limit], complete=False)


def _events_under(scope: Scope) -> tuple[str, list[Any]]:
    # jsonb containment is exactly subset match: user=u1 never contains user=u10
    return "tenant = %s AND scope @> %s::jsonb", [scope[TENANT_KEY], scope_json(scope)]


def erase_op(scope: Scope, now: datetime, *, dry_run: bool) -> Op[ErasureReport]:
    lock = "" if dry_run else " FOR UPDATE"
    scope_rows = yield Statement(
        f"SELECT scope_id, scope FROM memory_scopes WHERE lexemes @> %s::text[] ORDER BY scope{lock}",
        [[pair_lexeme(key, value) for key, value in scope.items()]],
    )
    ids = [int(row["scope_id"]) for row in scope_rows]
    kinds = yield Statement(
        "SELECT kind, count(*) AS n FROM memory_records WHERE scope_id = ANY(%s) GROUP BY kind ORDER BY kind", [ids]
    )
    sample = yield Statement(
        "SELECT id FROM memory_records WHERE scope_id = ANY(%s) ORDER BY created_at DESC, seq DESC LIMIT 10", [ids]
    )
    where, params = _events_under(scope)
    if dry_run:
        counted = yield Statement(f"SELECT count(*) AS n FROM memory_events WHERE {where}", params)
    else:
        counted = yield Statement(
            f"WITH gone AS (DELETE FROM memory_events WHERE {where} RETURNING 1) SELECT count(*) AS n FROM gone",
            params,
        )
        yield Statement("DELETE FROM memory_records WHERE scope_id = ANY(%s)", [ids])
        yield Statement("DELETE FROM memory_scopes WHERE scope_id = ANY(%s)", [ids])
    by_kind = {row["kind"]: int(row["n"]) for row in kinds}
    return ErasureReport(
        scope=scope,
        dry_run=dry_run,
        records=sum(by_kind.values()),
        by_kind=by_kind,
        events=int(counted[0]["n"]),
        scopes=[json.loads(row["scope"]) for row in scope_rows],
        sample_ids=[row["id"] for row in sample],
        at=now,
    )


def append_event_op(event: AnyEvent) -> Op[StoredEvent]:
    rows = yield Statement(
        "INSERT INTO memory_events (type, at, tenant, scope, agent, preview, body) "
        "VALUES (%s, %s, %s, %s::jsonb, %s, %s, %s) RETURNING eid",
        _event_values(event),
    )
    return StoredEvent(id=int(rows[0]["eid"]), event=event)


def _event_values(event: AnyEvent) -> list[Any]:
    return [
        event.type,
        event.at,
        event.scope[TENANT_KEY],
        scope_json(event.scope),
        event.agent,
        bool(getattr(event, "preview_run", False)),
        event.model_dump_json(),
    ]


def import_events_op(events: Sequence[StoredEvent]) -> Op[int]:
    columns = list(zip(*([stored.id, *_event_values(stored.event)] for stored in events), strict=True))
    rows = yield Statement(
        "INSERT INTO memory_events (eid, type, at, tenant, scope, agent, preview, body) "
        "SELECT v.eid, v.type, v.at, v.tenant, v.scope::jsonb, v.agent, v.preview, v.body FROM unnest("
        "%s::bigint[], %s::text[], %s::timestamptz[], %s::text[], %s::text[], %s::text[], %s::boolean[], %s::text[]"
        ") AS v(eid, type, at, tenant, scope, agent, preview, body) ON CONFLICT (eid) DO NOTHING RETURNING eid",
        [list(column) for column in columns],
    )
    # appends continue after the highest imported id
    yield Statement(
        "SELECT setval(pg_get_serial_sequence('memory_events', 'eid'), "
        "greatest((SELECT max(eid) FROM memory_events), 1))"
    )
    return len(rows)


def query_events_op(query: EventQuery) -> Op[list[StoredEvent]]:
    clauses: list[str] = []
    params: list[Any] = []
    if query.types is not None:
        clauses.append("type = ANY(%s)")
        params.append(list(query.types))
    if query.since is not None:
        clauses.append("at >= %s")
        params.append(query.since)
    if query.until is not None:
        clauses.append("at < %s")
        params.append(query.until)
    if query.scope is not None:
        where, scope_params = _events_under(query.scope)
        clauses.append(where)
        params += scope_params
    if query.agent is not None:
        clauses.append("agent = %s")
        params.append(query.agent)
    if query.before_id is not None:
        clauses.append("eid < %s")
        params.append(query.before_id)
    if not query.include_previews:
        clauses.append("NOT preview")
    sql = "SELECT eid, body FROM memory_events"
    if clauses:
        sql += " WHERE " + " AND ".join(clauses)
    rows = yield Statement(sql + " ORDER BY eid DESC LIMIT %s", [*params, query.limit])
    return [StoredEvent(id=int(row["eid"]), event=parse_event(row["body"])) for row in rows]


def prune_events_op(before: datetime) -> Op[int]:
    rows = yield Statement(
        "WITH gone AS (DELETE FROM memory_events WHERE at < %s RETURNING 1) SELECT count(*) AS n FROM gone", [before]
    )
    return int(rows[0]["n"])


# --- search ---------------------------------------------------------------------------


def _scope_condition(plan: SearchPlan, alias: str = "sc") -> tuple[str, list[Any]]:
    """Which stored scopes a plan reaches (subset or visible match, agent convention)."""
    query = plan.query
    if query.scope_match == "visible":
        texts = [scope_json(s) for s in _visible_candidates(query.scope, query.agent)]
        return f"{alias}.scope = ANY(%s::text[])", [texts]
    where = f"{alias}.lexemes @> %s::text[]"
    params: list[Any] = [[pair_lexeme(key, value) for key, value in query.scope.items()]]
    if query.agent is not None:
        where += f" AND (NOT %s = ANY({alias}.lexemes) OR %s = ANY({alias}.lexemes))"
        params += [AGENT_LEXEME, pair_lexeme(AGENT_KEY, query.agent)]
    return where, params


def _record_filters(plan: SearchPlan) -> tuple[str, list[Any]]:
    """SQL conditions on ``r`` for every filter except scope and text."""
    query = plan.query
    clauses: list[str] = []
    params: list[Any] = []
    if query.kinds is not None:
        clauses.append("r.kind = ANY(%s::text[])")
        params.append(list(query.kinds))
    if query.tags:
        clauses.append("r.tags::jsonb @> %s::jsonb")
        params.append(dumps(list(query.tags)))
    if query.keys is not None:
        if query.key_match == "exact":
            clauses.append("r.key = ANY(%s::text[])")
        else:
            clauses.append("EXISTS (SELECT 1 FROM unnest(%s::text[]) AS k(prefix) WHERE starts_with(r.key, k.prefix))")
        params.append(list(query.keys))
    if query.targeted is not None:
        clauses.append("r.target IS NOT NULL" if query.targeted else "r.target IS NULL")
    if not plan.include_expired:
        clauses.append("(r.expires_at IS NULL OR r.expires_at > %s)")
        params.append(plan.now)
    if query.as_of is not None:
        clauses.append("r.created_at <= %s AND (r.expires_at IS NULL OR r.expires_at > %s)")
        params += [query.as_of, query.as_of]
        if not query.include_invalidated:
            clauses.append("(r.invalid_at IS NULL OR r.invalid_at > %s)")
            params.append(query.as_of)
    elif not query.include_invalidated:
        clauses.append("r.invalid_at IS NULL")
    return (" AND ".join(clauses) or "TRUE"), params


def _filter_tsquery(plan: SearchPlan, scope_texts: Sequence[str] | None = None) -> str:
    """What a match needs besides the query's tokens, as a tsquery. Given the reached
    scopes (their canonical JSON, when they are few): the OR of their whole-scope
    lexemes, whose postings hold only those scopes' records — a user's, not every
    tenant's user of that name — and already honour the agent convention (kinds are
    then left to the row filter). Otherwise the scope pairs (or the visible candidates),
    the agent convention and the kinds."""
    query = plan.query
    if scope_texts is not None:
        return _any_of(scope_text_lexeme(text) for text in scope_texts)
    if query.scope_match == "visible":
        parts = [_any_of(scope_lexeme(s) for s in _visible_candidates(query.scope, query.agent))]
    else:
        parts = [_all_of(pair_lexeme(key, value) for key, value in query.scope.items())]
        if query.agent is not None:
            parts.append(f"(!{_quote(AGENT_LEXEME)} | {_quote(pair_lexeme(AGENT_KEY, query.agent))})")
    if query.kinds is not None:
        parts.append(_any_of(kind_lexeme(kind) for kind in query.kinds))
    return " & ".join(parts)


def match_tsquery(plan: SearchPlan) -> str:
    """The whole search as one tsquery: scope lexemes, kinds, the agent convention and
    the query's tokens OR-ed. Every lexeme is quoted, and tokens hold letters and digits
    only, so no user text can become tsquery syntax."""
    return _filter_tsquery(plan) + " & " + _any_of(lexeme(token) for token in plan.tokens)


def scope_ids_op(plan: SearchPlan) -> Op[list[int] | None]:
    """The ids of the stored scopes a plan reaches, when they are few (else ``None``)."""
    scope_where, scope_params = _scope_condition(plan)
    rows = yield Statement(
        f"SELECT sc.scope_id FROM memory_scopes sc WHERE {scope_where} ORDER BY sc.scope_id LIMIT {_FEW_SCOPES + 1}",
        scope_params,
    )
    return [int(row["scope_id"]) for row in rows] if len(rows) <= _FEW_SCOPES else None


def recent_op(plan: SearchPlan) -> Op[tuple[list[MemoryHit], Cursor | None]]:
    filters, params = _record_filters(plan)
    if plan.cursor is not None:
        filters += " AND (r.created_at, r.seq) < (%s, %s)"
        params += [_cursor_time(plan.cursor.created_us or 0), plan.cursor.seq]
    scope_ids = yield from scope_ids_op(plan)
    if scope_ids == []:
        return [], None
    if scope_ids is not None:
        # a few scopes (a user's, and that user's with each agent): each one's recency
        # index walked newest-first, top rows merged — never the tenant's records
        one = (
            f"({_RECORD_SELECT}{_RECORD_FROM} WHERE r.scope_id = %s AND {filters} "
            "ORDER BY r.created_at DESC, r.seq DESC LIMIT %s)"
        )
        rows = yield Statement(
            "SELECT * FROM (" + " UNION ALL ".join([one] * len(scope_ids)) + ") c "
            "ORDER BY c.created_at DESC, c.seq DESC LIMIT %s",
            [*(value for sid in scope_ids for value in (sid, *params, plan.limit + 1)), plan.limit + 1],
        )
    else:
        scope_where, scope_params = _scope_condition(plan)
        rows = yield Statement(
            _RECORD_SELECT + _RECORD_FROM + " WHERE r.tenant = %s "
            f"AND r.scope_id IN (SELECT sc.scope_id FROM memory_scopes sc WHERE {scope_where}) AND {filters} "
            "ORDER BY r.created_at DESC, r.seq DESC LIMIT %s",
            [plan.query.scope[TENANT_KEY], *scope_params, *params, plan.limit + 1],
        )
    hits = [MemoryHit(record=_record(row)) for row in rows[: plan.limit]]
    if len(rows) > plan.limit:
        last = rows[plan.limit - 1]
        return hits, Cursor(created_us=_created_us(last["created_at"]), seq=int(last["seq"]))
    return hits, None


class TermFrequencies:
    """How common the commonest lexemes are, from PostgreSQL's own sample of the index
    column (``pg_stats.most_common_elems`` of ``memory_records.tsv``, which ANALYZE and
    autovacuum refresh), cached per store for a few minutes. A large scope's search reads
    it to tell which tokens match so much of the scope that fetching all their matches
    would cost more than ranking their newest ones. Without statistics (a table never
    analyzed) no token counts as common and every search ranks exhaustively."""

    def __init__(self) -> None:
        self._shares: dict[str, float] = {}
        self._at = -math.inf

    def op(self) -> Op[dict[str, float]]:
        if time.monotonic() - self._at < _STATS_TTL_S:
            return self._shares
        rows = yield Statement(
            "SELECT st.most_common_elems::text::text[] AS lexemes, st.most_common_elem_freqs AS shares "
            "FROM pg_stats st JOIN pg_class c ON c.relname = st.tablename "
            "JOIN pg_namespace ns ON ns.oid = c.relnamespace AND ns.nspname = st.schemaname "
            "WHERE c.oid = 'memory_records'::regclass AND st.attname = 'tsv'"
        )
        shares: dict[str, float] = {}
        if rows and rows[0]["lexemes"] is not None:
            # the shares array ends with three summary numbers; zip stops at the last lexeme
            shares = dict(zip(rows[0]["lexemes"], map(float, rows[0]["shares"]), strict=False))
        self._shares, self._at = shares, time.monotonic()
        return shares


def ranked_op(plan: SearchPlan, frequencies: TermFrequencies) -> Op[tuple[list[MemoryHit], Cursor | None]]:
    """Relevance search: BM25 over the searched scopes, the same rules as SQLite's.

    The collection is the searched scopes (record and token counters kept by triggers);
    a token's presence stands for its frequency (a record holds one fact, so words rarely
    repeat, and testing presence is a lookup where counting unpacks every ``tsvector``).
    Scopes of up to :data:`_SMALL_SCOPE` records are ranked exhaustively in one
    statement. In a larger one, tokens are taken rarest first and each only while it
    could still lift a record into the page (MaxScore): tokens PostgreSQL's statistics
    (:class:`TermFrequencies`) do not list as common have all their matches fetched and
    their document frequency counted; a listed token is weighed from those statistics,
    and has all its matches fetched when they are few, else its newest ones, within
    :data:`_CANDIDATE_BUDGET` candidates. The ranking is exact unless that budget runs
    out; then a query of stopwords ranks recent memories, as on SQLite. Its statements
    run in one snapshot.
    """
    scope_where, scope_params = _scope_condition(plan)
    offset = (plan.cursor.offset or 0) if plan.cursor is not None else 0
    needed = offset + plan.limit + 1
    budget = max(_CANDIDATE_BUDGET, needed * 4)
    lexemes = [lexeme(token) for token in plan.tokens]
    found = yield Statement(
        "SELECT count(*) AS scopes, coalesce(sum(sc.n_records), 0) AS n, coalesce(sum(sc.n_tokens), 0) AS t, "
        f"CASE WHEN count(*) <= {_FEW_SCOPES} THEN array_agg(sc.scope_id ORDER BY sc.scope_id) END AS ids, "
        f"CASE WHEN count(*) <= {_FEW_SCOPES} THEN array_agg(sc.scope ORDER BY sc.scope_id) END AS texts "
        f"FROM memory_scopes sc WHERE {scope_where}",
        scope_params,
    )
    if not found[0]["scopes"]:
        return [], None
    search = _Ranking(plan, lexemes, n=max(int(found[0]["n"]), 1), tokens=int(found[0]["t"]), needed=needed)
    scope_ids: list[int] | None = found[0]["ids"]
    scope_texts: list[str] | None = found[0]["texts"]

    shares: dict[str, float] = {}
    if search.n > max(_SMALL_SCOPE, budget):
        shares = yield from frequencies.op()
    listed = sorted((lex for lex in lexemes if lex in shares), key=lambda lex: shares[lex])
    counted = [lex for lex in lexemes if lex not in shares]
    search.frequency.update({lex: min(search.n, round(shares[lex] * search.n)) for lex in listed})
    search.weigh()
    fetched: list[str] = []  # tokens whose every match is a candidate already
    considered = 0
    if counted:
        # a small scope is read whole; a larger one through the full-text index
        whole = scope_ids if search.n <= _SCOPE_SCAN and not listed else None
        total = search.take((yield search.every_match(_filter_tsquery(plan, scope_texts), counted, fetched, whole)))
        considered += total
        fetched += counted
    # A token's m matches cost about m heap rows to fetch, plus the index scan, which
    # visits the scope's postings (n of them, about an eighth of a row's cost each); its
    # newest `budget` matches cost about budget·n/m rows walked. Past the m where the two
    # meet, a token fetches only its newest matches.
    scan = search.n / 8
    cut = (math.sqrt(scan * scan + 4 * budget * search.n) - scan) / 2
    walking = False  # listed tokens come rarest first: once one walks, the rest do
    for index, lex in enumerate(listed):
        bound = sum(search.weights[other] for other in listed[index:]) * _MAX_LENGTH_FACTOR
        page = search.ranked()
        if len(page) >= needed and page[needed - 1][0] > bound:
            break  # no record holding only the remaining tokens can reach the page
        room = budget - considered
        if room <= 0:
            break
        if search.frequency[lex] < cut:
            considered += search.take((yield search.every_match(_filter_tsquery(plan, scope_texts), [lex], fetched)))
            fetched.append(lex)
        else:
            if not walking:
                # Walk the recency index, never gather the whole scope into a bitmap and
                # sort it: the planner would, for any scope its statistics think small.
                # Until the transaction ends; nothing after this needs a bitmap scan.
                yield Statement("SET LOCAL enable_bitmapscan = off")
                walking = True
            held = f" & !{_any_of(fetched)}" if fetched else ""
            considered += search.take((yield search.newest_matches(scope_ids, _quote(lex) + held, room)))

    page = search.ranked()
    shown = page[offset : offset + plan.limit]
    missing = [seq for _, _, seq in shown if seq not in search.records]
    if missing:
        rows = yield Statement(_RECORD_SELECT + _RECORD_FROM + " WHERE r.seq = ANY(%s)", [missing])
        search.records.update((int(row["seq"]), row) for row in rows)
    hits = [MemoryHit(record=_record(search.records[seq]), score=score) for score, _, seq in shown]
    return hits, Cursor(offset=offset + plan.limit) if len(page) > offset + plan.limit else None


class _Ranking:
    """One ranked search's statistics, weights and candidates, and the statements that
    fetch candidates with each query token's presence."""

    def __init__(self, plan: SearchPlan, lexemes: list[str], *, n: int, tokens: int, needed: int) -> None:
        self.plan = plan
        self.lexemes = lexemes
        self.n = n
        self.average = max(tokens / n, 1.0)
        self.needed = needed
        self.frequency: dict[str, int] = {}
        self.weights: dict[str, float] = {}
        self.candidates: dict[int, tuple[float, datetime, int]] = {}
        self.records: dict[int, Row] = {}  # candidates that came back whole
        self.filters, self.params = _record_filters(plan)
        self.probes = [_quote(lex) for lex in lexemes]
        self.presence = "ARRAY[" + ", ".join("r.tsv @@ %s::tsquery" for _ in lexemes) + "] AS p"

    def weigh(self) -> None:
        """Weights of the tokens whose document frequency is known so far."""
        self.weights = {lex: ranking.idf(self.n, df) for lex, df in self.frequency.items()}

    def every_match(
        self, scope_match: str, tokens: Sequence[str], fetched: Sequence[str], scope_ids: Sequence[int] | None = None
    ) -> Statement:
        """Every match of ``tokens`` not holding an already fetched token, ranked in SQL;
        the best ``needed`` come back as whole records, with the count of all and, per
        query token, how many hold it (the document frequency of a token whose weight is
        not known yet).
        Found through the full-text index, or with ``scope_ids`` by reading those (small)
        scopes whole: cheaper than probing a common token's long posting list for each."""
        match = _any_of(tokens) + (f" & !{_any_of(fetched)}" if fetched else "")
        where = "r.tsv @@ %s::tsquery"
        params: list[Any] = [f"{scope_match} & {match}"]
        if scope_ids is not None:
            # wrapped, so the planner reads the scopes' rows rather than the full-text index
            where = "r.scope_id = ANY(%s::bigint[]) AND coalesce(r.tsv @@ %s::tsquery, false)"
            params = [list(scope_ids), match]
        indexes = range(1, len(self.lexemes) + 1)
        count = ", ".join(f"count(*) FILTER (WHERE m.p[{i}])" for i in indexes)
        floor = ranking.IDF_FLOOR
        weigh = ", ".join(
            f"coalesce(%s::float8, greatest(ln((%s::float8 - d.df[{i}] + 0.5) / (d.df[{i}] + 0.5)), {floor}))"
            for i in indexes
        )
        relevance = " + ".join(f"CASE WHEN m.p[{i}] THEN w.idf[{i}] ELSE 0 END" for i in indexes)
        # only which rows make the page is decided here (Python scores them again): no
        # rounding, which would cost a numeric conversion per match
        return Statement(
            f"""
            WITH m AS MATERIALIZED (
                SELECT r.seq, r.created_at, r.n_tokens, {self.presence} FROM memory_records r
                WHERE {where} AND {self.filters}
            ),
            d AS (SELECT count(*) AS total, ARRAY[{count}] AS df FROM m),
            w AS MATERIALIZED (SELECT d.total, d.df, ARRAY[{weigh}] AS idf FROM d)
            SELECT w.total, w.df, top.n_tokens, top.p, rec.* FROM w LEFT JOIN LATERAL (
                SELECT m.seq, m.n_tokens, m.p FROM m
                ORDER BY ({relevance}) * {ranking.K1 + 1} / (1 + {ranking.K1}
                         * ({1 - ranking.B} + {ranking.B} * m.n_tokens / %s::float8)) DESC,
                         m.created_at DESC, m.seq DESC
                LIMIT %s
            ) top ON true
            LEFT JOIN LATERAL ({_RECORD_SELECT}{_RECORD_FROM} WHERE r.seq = top.seq) rec ON true
            """,
            [
                *self.probes,
                *params,
                *self.params,
                *(value for lex in self.lexemes for value in (self.weights.get(lex), self.n)),
                self.average,
                self.needed,
            ],
        )

    def newest_matches(self, scope_ids: Sequence[int] | None, match: str, room: int) -> Statement:
        """The newest ``room`` matches of ``match`` in the searched scopes: each scope's
        recency index walked newest-first (a common token's matches turn up every few
        rows), or the tenant's when the search reaches many scopes."""
        columns = f"r.seq, r.created_at, r.n_tokens, {self.presence}"
        # the match is wrapped so the planner cannot use the full-text index: it would
        # gather every match of the common token (most of the scope) before sorting
        if scope_ids is not None:
            one = (
                f"(SELECT {columns} FROM memory_records r WHERE r.scope_id = %s "
                f"AND coalesce(r.tsv @@ %s::tsquery, false) AND {self.filters} "
                "ORDER BY r.created_at DESC, r.seq DESC LIMIT %s)"
            )
            return Statement(
                "SELECT * FROM (" + " UNION ALL ".join([one] * len(scope_ids)) + ") c "
                "ORDER BY c.created_at DESC, c.seq DESC LIMIT %s",
                [*(value for sid in scope_ids for value in (*self.probes, sid, match, *self.params, room)), room],
            )
        scope_where, scope_params = _scope_condition(self.plan)
        return Statement(
            f"SELECT {columns} FROM memory_records r WHERE r.tenant = %s "
            f"AND r.scope_id IN (SELECT sc.scope_id FROM memory_scopes sc WHERE {scope_where}) "
            f"AND coalesce(r.tsv @@ %s::tsquery, false) AND {self.filters} "
            "ORDER BY r.created_at DESC, r.seq DESC LIMIT %s",
            [
                *self.probes,
                self.plan.query.scope[TENANT_KEY],
                *scope_params,
                _filter_tsquery(self.plan) + " & " + match,
                *self.params,
                room,
            ],
        )

    def take(self, rows: list[Row]) -> int:
        """Score fetched candidates; returns how many matches the statement considered."""
        if rows and "total" in rows[0]:
            for lex, holders in zip(self.lexemes, rows[0]["df"], strict=True):
                self.frequency.setdefault(lex, int(holders))
            self.weigh()
            considered = int(rows[0]["total"])
            rows = [row for row in rows if row["seq"] is not None]
        else:
            considered = sum(1 for row in rows if int(row["seq"]) not in self.candidates)
        for row in rows:
            seq = int(row["seq"])
            if seq not in self.candidates:
                weight = sum(self.weights[lex] for lex, hit in zip(self.lexemes, row["p"], strict=True) if hit)
                score = round(_bm25(weight, int(row["n_tokens"]), self.average), 9)
                self.candidates[seq] = (score, row["created_at"], seq)
            if "id" in row:
                self.records[seq] = row
        return considered

    def ranked(self) -> list[tuple[float, datetime, int]]:
        # relevance, then the newer record, then the later one in its batch
        return sorted(self.candidates.values(), reverse=True)


def _bm25(weight: float, length: int, average: float) -> float:
    """BM25 of a record holding query tokens of this summed weight once each (the SQL
    of :meth:`_Ranking.every_match` computes the same, in the same order)."""
    return weight * (ranking.K1 + 1) / (1 + ranking.K1 * (1 - ranking.B + ranking.B * length / average))


def list_op(plan: SearchPlan, frequencies: TermFrequencies) -> Op[tuple[list[MemoryHit], Cursor | None]]:
    if plan.empty:
        return [], None
    return (yield from ranked_op(plan, frequencies) if plan.ranked else recent_op(plan))


def count_op(plan: SearchPlan) -> Op[ScopeCounts]:
    scope_where, scope_params = _scope_condition(plan)
    rows = yield Statement(
        "SELECT r.kind, count(*) AS total, count(*) FILTER (WHERE r.invalid_at IS NOT NULL) AS invalidated, "
        "count(*) FILTER (WHERE r.expires_at <= %s) AS expired, "
        "count(*) FILTER (WHERE r.invalid_at IS NULL AND (r.expires_at IS NULL OR r.expires_at > %s)) AS live "
        "FROM memory_records r WHERE r.tenant = %s "
        f"AND r.scope_id IN (SELECT sc.scope_id FROM memory_scopes sc WHERE {scope_where}) GROUP BY r.kind",
        [plan.now, plan.now, plan.query.scope[TENANT_KEY], *scope_params],
    )
    by_kind = dict.fromkeys(KINDS, 0)
    for row in rows:
        by_kind[row["kind"]] = int(row["total"])
    return ScopeCounts(
        total=sum(int(row["total"]) for row in rows),
        live=sum(int(row["live"]) for row in rows),
        invalidated=sum(int(row["invalidated"]) for row in rows),
        expired=sum(int(row["expired"]) for row in rows),
        by_kind=by_kind,
    )


def facets_op(scope: Scope | None, values_per_key: int) -> Op[list[ScopeFacet]]:
    sql = "SELECT scope, n_records FROM memory_scopes WHERE n_records > 0"
    params: list[Any] = []
    if scope is not None:
        sql += " AND lexemes @> %s::text[]"
        params.append([pair_lexeme(key, value) for key, value in scope.items()])
    rows = yield Statement(sql, params)
    counts: Counter[str] = Counter({row["scope"]: int(row["n_records"]) for row in rows})
    return build_facets(counts, {row["scope"]: json.loads(row["scope"]) for row in rows}, values_per_key)


# --- writing a batch ------------------------------------------------------------------


class _LockedReads:
    """What planning a batch reads, fetched (and locked) before planning starts."""

    def __init__(self, records: Iterable[MemoryRecord], slots: set[tuple[str, str, str]]) -> None:
        self._by_id = {record.id: record for record in records}
        self._holders: dict[tuple[str, str, str], MemoryRecord] = {
            (scope_json(r.scope), r.kind, r.key): r
            for r in self._by_id.values()
            if r.key is not None and r.invalid_at is None and (scope_json(r.scope), r.kind, r.key) in slots
        }

    def get_many(self, ids: Iterable[str]) -> dict[str, MemoryRecord]:
        return {i: self._by_id[i] for i in ids if i in self._by_id}

    def find_valid_keyed(self, scope: Scope, kind: str, key: str) -> MemoryRecord | None:
        return self._holders.get((scope_json(scope), kind, key))


class _Transaction:
    """The base class's write primitives on one sync connection inside a transaction."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn

    def get_many(self, ids: Iterable[str]) -> dict[str, MemoryRecord]:
        return _drive(self._conn, fetch_op(list(ids), lock=True))

    def find_valid_keyed(self, scope: Scope, kind: str, key: str) -> MemoryRecord | None:
        return _drive(self._conn, find_keyed_op(scope, kind, key))

    def insert(self, records: Sequence[MemoryRecord]) -> None:
        scope_ids = _drive(self._conn, lock_scopes_op({scope_json(r.scope): r.scope for r in records}))
        _drive(self._conn, insert_op(records, scope_ids))

    def invalidate(self, change: Invalidation) -> None:
        _drive(self._conn, invalidate_op([change]))

    def delete(self, record_id: str) -> bool:
        return _drive(self._conn, delete_op(record_id))

    def erase(self, scope: Scope, now: datetime, *, dry_run: bool) -> ErasureReport:
        return _drive(self._conn, erase_op(scope, now, dry_run=dry_run))

    def expired_ids(self, scope: Scope, now: datetime) -> list[str]:
        return _drive(self._conn, expired_ids_op(scope, now))


# --- the store ------------------------------------------------------------------------


def describe(url: str) -> str:
    """Where a store lives, for messages: never the user name or the password."""
    try:
        params = conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "PostgreSQL (unparsable URL)"
    host = str(params.get("host") or "localhost")
    port = str(params.get("port") or "5432")
    return f"PostgreSQL database {params.get('dbname') or '(default)'!s} on {host}:{port}"


class PostgresMemoryStore(BaseMemoryStore):
    """A memory store in a PostgreSQL database, shared by any number of processes.

    ``url`` is a libpq URL or connection string (``postgresql://user@host/db``). The
    sync API uses a thread-safe pool of ``min_size``..``max_size`` connections; the
    async twins use an async pool per event loop, of the same sizes (``async_min_size``
    / ``async_max_size``). ``pool_timeout`` is how long a call waits for a free
    connection before :class:`MemoryBusyError`. The schema is created or migrated on
    open; a database migrated by a newer memory_admin raises :class:`SchemaVersionError`.
    """

    backend_name = "postgres"

    def __init__(
        self,
        url: str,
        *,
        min_size: int = 1,
        max_size: int = 10,
        async_min_size: int = 1,
        async_max_size: int = 10,
        pool_timeout: float = 30.0,
        connect_timeout: float = 10.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.location = describe(url)
        self._conninfo = url
        try:
            given = conninfo_to_dict(url)
        except psycopg.ProgrammingError as exc:
            raise MemoryStoreError(f"Not a PostgreSQL URL or connection string: {exc}") from None
        self._connect_kwargs: dict[str, Any] = {"autocommit": True, "prepare_threshold": None}
        if "application_name" not in given:
            self._connect_kwargs["application_name"] = "memory_admin"
        if "connect_timeout" not in given:
            self._connect_kwargs["connect_timeout"] = max(1, round(connect_timeout))
        self._pool_timeout = pool_timeout
        self._async_sizes = (async_min_size, async_max_size)
        self._async_pools: dict[asyncio.AbstractEventLoop, _LoopPool] = {}
        self._async_lock = threading.Lock()
        self._closed = False
        self._frequencies = TermFrequencies()
        self._pool: ConnectionPool[Any] = ConnectionPool(
            url,
            min_size=min_size,
            max_size=max_size,
            kwargs=self._connect_kwargs,
            configure=_configure,
            timeout=pool_timeout,
            name="memory_admin",
            open=False,
        )
        try:
            try:
                self._pool.open(wait=True, timeout=connect_timeout)
            except PoolTimeout:
                raise MemoryStoreError(
                    f"Could not connect to {self.location} within {connect_timeout:g}s; check the URL, "
                    "the credentials and that the server is up.",
                    location=self.location,
                ) from None
            self._migrate()
        except BaseException:
            self._pool.close()
            raise

    # --- connections and errors -------------------------------------------------------

    @contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except psycopg.Error as exc:
            raise self._translate(exc) from None

    def _translate(self, exc: psycopg.Error) -> MemoryStoreError:
        where = self.location
        if isinstance(exc, pg_errors.UniqueViolation):
            constraint = exc.diag.constraint_name or ""
            meaning = {
                "memory_records_live_slot": "another live record holds that key slot",
                "memory_records_one_successor": "that record already has a successor",
                "memory_records_id_key": "a record with that id already exists",
            }.get(constraint, f"it breaks {constraint or 'a unique constraint'}")
            return MemoryConflictError(
                f"{where} refused the write: {meaning}. Nothing was written.", constraint=constraint
            )
        if isinstance(exc, PoolTimeout):
            return MemoryBusyError(
                f"No connection to {where} within {self._pool_timeout:g}s: every pooled connection is busy "
                "or the server is unreachable. Try again, or raise max_size.",
                location=where,
            )
        if isinstance(
            exc,
            (
                pg_errors.DeadlockDetected,
                pg_errors.SerializationFailure,
                pg_errors.LockNotAvailable,
                pg_errors.QueryCanceled,
            ),
        ):
            return MemoryBusyError(f"{where} is busy ({exc.sqlstate}: {exc}); try again.", location=where)
        if isinstance(exc, psycopg.DataError):
            return MemoryValidationError(
                f"{where} refused a value: {exc}", [{"loc": "input", "msg": str(exc).splitlines()[0]}]
            )
        if isinstance(exc, pg_errors.UndefinedTable):
            return MemoryStoreError(
                f"A memory table is missing from {where} ({exc}). Restore it from a backup; to start "
                "empty instead, drop the memory_* tables and functions and open the store again.",
                location=where,
            )
        if isinstance(exc, psycopg.OperationalError):
            return MemoryStoreError(f"{where} is unreachable: {exc}", location=where)
        return MemoryStoreError(f"PostgreSQL error on {where} ({exc.sqlstate}): {exc}", location=where)

    def _check_open(self) -> None:
        if self._closed:
            raise MemoryStoreError("This store is closed.")

    def _read(self, op: Op[T]) -> T:
        """Run a read op in autocommit: a one-statement op sees one snapshot (only the
        corruption scan, which pages, issues more)."""
        self._check_open()
        with self._errors(), self._pool.connection() as conn:
            return _drive(conn, op)

    def _snapshot(self, op: Op[T]) -> T:
        """Run a read op of several statements in one read-only REPEATABLE READ
        transaction: every statement sees the same state of the store."""
        self._check_open()
        with self._errors(), self._pool.connection() as conn:
            conn.isolation_level, conn.read_only = psycopg.IsolationLevel.REPEATABLE_READ, True
            try:
                with conn.transaction():  # one BEGIN carrying both
                    return _drive(conn, op)
            finally:
                if not conn.closed:
                    conn.isolation_level, conn.read_only = psycopg.IsolationLevel.READ_COMMITTED, False

    def _in_transaction(self, op: Op[T]) -> T:
        self._check_open()
        with self._errors(), self._pool.connection() as conn, conn.transaction():
            return _drive(conn, op)

    async def _async_pool(self) -> AsyncConnectionPool[Any]:
        self._check_open()
        loop = asyncio.get_running_loop()
        with self._async_lock:
            entry = self._async_pools.get(loop)
            if entry is None:
                # a pool's connections belong to the loop that made them; a pool whose
                # loop has closed cannot be awaited any more, so it is only dropped
                for stale in [other for other in self._async_pools if other.is_closed()]:
                    del self._async_pools[stale]
                pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
                    self._conninfo,
                    min_size=self._async_sizes[0],
                    max_size=self._async_sizes[1],
                    kwargs=self._connect_kwargs,
                    configure=_aconfigure,
                    timeout=self._pool_timeout,
                    name="memory_admin_async",
                    open=False,
                )
                guard = loop.create_task(_close_at_shutdown(pool), name="memory_admin: close pool at loop shutdown")
                entry = self._async_pools[loop] = _LoopPool(pool, guard)
        await entry.pool.open()
        return entry.pool

    async def _aread(self, op: Op[T]) -> T:
        with self._errors():
            pool = await self._async_pool()
            async with pool.connection() as conn:
                return await _adrive(conn, op)

    async def _asnapshot(self, op: Op[T]) -> T:
        with self._errors():
            pool = await self._async_pool()
            async with pool.connection() as conn:
                await conn.set_isolation_level(psycopg.IsolationLevel.REPEATABLE_READ)
                await conn.set_read_only(True)
                try:
                    async with conn.transaction():
                        return await _adrive(conn, op)
                finally:
                    if not conn.closed:
                        await conn.set_isolation_level(psycopg.IsolationLevel.READ_COMMITTED)
                        await conn.set_read_only(False)

    async def _ain_transaction(self, op: Op[T]) -> T:
        with self._errors():
            pool = await self._async_pool()
            async with pool.connection() as conn, conn.transaction():
                return await _adrive(conn, op)

    def close(self) -> None:
        """Close both pools. Async pools are closed on their loop when it is idle or
        running elsewhere; prefer :meth:`aclose` from async code."""
        self._closed = True
        self._pool.close()
        with self._async_lock:
            pools, self._async_pools = self._async_pools, {}
        for loop, entry in pools.items():
            if loop.is_closed():
                continue  # its guard closed it at shutdown, or its connections close when collected
            try:
                running = asyncio.get_running_loop()
            except RuntimeError:
                running = None
            if running is loop:
                entry.guard.cancel()  # the guard closes the pool as soon as this loop runs again
            elif loop.is_running():
                asyncio.run_coroutine_threadsafe(entry.shut(), loop).result(timeout=10)
            else:
                loop.run_until_complete(entry.shut())

    async def aclose(self) -> None:
        loop = asyncio.get_running_loop()
        with self._async_lock:
            entry = self._async_pools.pop(loop, None)
        if entry is not None:
            await entry.shut()
        self.close()

    # --- schema -----------------------------------------------------------------------

    def schema_version(self) -> int:
        with self._errors(), self._pool.connection() as conn:
            return _drive(conn, _version_op())

    def _migrate(self, migrations: Sequence[str] = MIGRATIONS) -> None:
        target = len(migrations)
        with self._errors(), self._pool.connection() as conn:
            found = _drive(conn, _version_op())
            if found > target:
                raise SchemaVersionError(self.location, found, target)
            if found == target:
                return
            # One migrator at a time; the others find the work done when they get in. The
            # lock is taken before the transaction begins: a transaction that waited for it
            # could still see the catalog as it was before the other migrator committed.
            conn.execute("SELECT pg_advisory_lock(%s)", [_MIGRATION_LOCK])
            try:
                with conn.transaction():
                    found = _drive(conn, _version_op())
                    if found > target:
                        raise SchemaVersionError(self.location, found, target)
                    for version in range(found + 1, target + 1):
                        conn.execute(migrations[version - 1].encode())
                        conn.execute("UPDATE memory_schema SET version = %s", [version])
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s)", [_MIGRATION_LOCK])

    def optimize(self) -> None:
        """``VACUUM (ANALYZE)`` the store's tables: fresh planner statistics after a bulk
        load, the full-text index's pending entries merged, dead row versions pruned."""
        self._check_open()
        with self._errors(), self._pool.connection() as conn:
            # VACUUM cannot run in a transaction; pooled connections are in autocommit
            conn.execute("VACUUM (ANALYZE) memory_records, memory_scopes, memory_events")

    def capabilities(self) -> MemoryStoreCapabilities:
        return MemoryStoreCapabilities(
            backend=self.backend_name,
            search="keyword",
            erasure=True,
            admin=True,
            events=True,
            max_content_chars=DEFAULT_MAX_CONTENT_CHARS,
            max_limit=DEFAULT_MAX_LIMIT,
            max_batch=DEFAULT_MAX_BATCH,
        )

    # --- primitives of the base class -------------------------------------------------

    @contextmanager
    def _transaction(self) -> Iterator[_Transaction]:
        self._check_open()
        with self._errors(), self._pool.connection() as conn, conn.transaction():
            yield _Transaction(conn)

    def _write_op(self, items: list[MemoryWriteInput]) -> Op[PlannedBatch]:
        """Lock the batch's scopes, read (and lock) its predecessors, plan, apply."""
        scope_ids = yield from lock_scopes_op({scope_json(item.scope): item.scope for item in items})
        slots: set[tuple[str, str, str]] = {
            (scope_json(item.scope), item.kind, item.key) for item in items if item.key is not None
        }
        rows = yield Statement(
            _RECORD_SELECT + _RECORD_FROM + " WHERE r.seq IN ("
            "SELECT seq FROM memory_records WHERE id = ANY(%s::text[]) UNION "
            "SELECT h.seq FROM memory_records h "
            "JOIN unnest(%s::bigint[], %s::text[], %s::text[]) AS v(scope_id, kind, key) "
            "ON h.scope_id = v.scope_id AND h.kind = v.kind AND h.key = v.key "
            "WHERE h.key IS NOT NULL AND h.invalid_at IS NULL"
            ") ORDER BY r.id FOR UPDATE OF r",
            [
                sorted({item.supersedes for item in items if item.supersedes}),
                [scope_ids[scope] for scope, _, _ in slots],
                [kind for _, kind, _ in slots],
                [key for _, _, key in slots],
            ],
        )
        # classified from the locked rows' latest versions: a holder invalidated while
        # we waited for its lock is no holder any more
        batch = self._plan_batch(_LockedReads(map(_record, rows), slots), items)
        if batch.invalidations:
            yield from invalidate_op(batch.invalidations)
        yield from insert_op(batch.records, scope_ids)
        return batch

    def _commit_batch(self, items: list[MemoryWriteInput]) -> PlannedBatch:
        return self._in_transaction(self._write_op(items))

    def _get_many(self, ids: Sequence[str]) -> dict[str, MemoryRecord]:
        return self._read(fetch_op(ids))

    def _list(self, plan: SearchPlan) -> tuple[list[MemoryHit], Cursor | None]:
        return (
            self._snapshot(list_op(plan, self._frequencies))
            if plan.ranked
            else self._read(list_op(plan, self._frequencies))
        )

    def _scope_facets(self, scope: Scope | None, values_per_key: int) -> list[ScopeFacet]:
        return self._read(facets_op(scope, values_per_key))

    def _count_records(self, plan: SearchPlan) -> ScopeCounts:
        return self._read(count_op(plan))

    def _find_corrupt(self, scope: Scope | None, limit: int, max_rows: int | None) -> CorruptionScan:
        return self._read(find_corrupt_op(scope, limit, max_rows))

    def _append_event(self, event: AnyEvent) -> StoredEvent:
        return self._in_transaction(append_event_op(event))

    def _query_events(self, query: EventQuery) -> list[StoredEvent]:
        return self._read(query_events_op(query))

    def _prune_events(self, before: datetime) -> int:
        return self._in_transaction(prune_events_op(before))

    def _import_events(self, events: Sequence[StoredEvent]) -> int:
        return self._in_transaction(import_events_op(events))

    # --- native async twins -----------------------------------------------------------
    # The same ops as the sync API, on the async pool; the rules come from the base class.

    async def _aemit(self, event: AnyEvent) -> None:
        if self._logging_events:
            try:
                await self._ain_transaction(append_event_op(event))
            except Exception:
                log.exception("could not persist %s event", event.type)
        deliver(self._sinks, event)

    async def awrite(self, inputs: Sequence[WriteInputLike]) -> list[MemoryRecord]:
        items = self._validate_batch(inputs)
        if not items:
            return []
        batch = await self._ain_transaction(self._write_op(items))
        if self._observed:
            for event in self._write_events(batch):
                await self._aemit(event)
        return batch.records

    async def asearch(self, query: SearchQueryLike, *, emit_event: bool = True) -> list[MemoryHit]:
        started = time.perf_counter()
        plan = self._plan(query)
        op = list_op(plan, self._frequencies)
        hits = (await (self._asnapshot(op) if plan.ranked else self._aread(op)))[0]
        if emit_event and self._observed:
            await self._aemit(self._search_event(plan, hits, started))
        return hits

    async def aget(self, record_id: str) -> MemoryRecord | None:
        _check_id(record_id)
        return (await self._aread(fetch_op([record_id]))).get(record_id)

    async def ainvalidate(self, record_id: str, reason: str | None = None) -> MemoryRecord:
        _check_id(record_id)
        return await self._ain_transaction(self._invalidate_op(record_id, clean_reason(reason)))

    def _invalidate_op(self, record_id: str, reason: str | None) -> Op[MemoryRecord]:
        current = (yield from fetch_op([record_id], lock=True)).get(record_id)
        result, change = self._invalidation(record_id, current, reason)
        if change is not None:
            yield from invalidate_op([change])
        return result

    async def adelete(self, record_id: str) -> bool:
        _check_id(record_id)
        return await self._ain_transaction(delete_op(record_id))

    async def aerase(self, scope: Mapping[str, str]) -> ErasureReport:
        return await self._ain_transaction(erase_op(canonical_scope(scope), self._clock(), dry_run=False))


@dataclass
class _LoopPool:
    """An event loop's async pool and the task that closes it when the loop shuts down."""

    pool: AsyncConnectionPool[Any]
    guard: asyncio.Task[None]

    async def shut(self) -> None:
        self.guard.cancel()
        await self.pool.close()


async def _close_at_shutdown(pool: AsyncConnectionPool[Any]) -> None:
    # asyncio.run() cancels every task before closing its loop. psycopg_pool's workers
    # survive a cancellation that arrives while they run a maintenance task and would
    # then wait forever, so the loop could never finish: closing the pool stops them.
    try:
        await asyncio.Event().wait()
    finally:
        await pool.close()


def _version_op() -> Op[int]:
    present = yield Statement("SELECT to_regclass('memory_schema') IS NOT NULL AS present")
    if not present[0]["present"]:
        return 0
    rows = yield Statement("SELECT version FROM memory_schema")
    return int(rows[0]["version"]) if rows else 0


def _configure(conn: psycopg.Connection[Any]) -> None:
    # the write path's locking reasons in READ COMMITTED terms (a locked row is re-read
    # after the wait), whatever default the database sets
    conn.isolation_level = psycopg.IsolationLevel.READ_COMMITTED


async def _aconfigure(conn: psycopg.AsyncConnection[Any]) -> None:
    await conn.set_isolation_level(psycopg.IsolationLevel.READ_COMMITTED)


__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "PostgresMemoryStore", "describe"]
