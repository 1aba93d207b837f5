"""The PostgreSQL backend: the production tier, for when one machine is not enough.

psycopg 3 with a connection pool for the sync API and an async pool per event loop for
the async twins, which are native: a unit's steps (:mod:`memory_admin.store.base`) run
on a sync or an async connection through the same statements. Search and its lexemes
live in :mod:`.search`, the schema in :mod:`.schema`; this module holds the pools, the
transactions of each mode and the write primitives.

Writers lock the rows of every scope they write, in one order, before planning: two
writers of one scope serialise, so two key upserts cannot leave two live records and a
record cannot get two successors; partial unique indexes make both impossible anyway.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

import psycopg
from psycopg import errors as pg_errors
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import dict_row, tuple_row
from psycopg_pool import AsyncConnectionPool, ConnectionPool, PoolTimeout

from memory_admin.errors import (
    MemoryBusyError,
    MemoryConflictError,
    MemoryStoreError,
    MemoryValidationError,
    SchemaVersionError,
)
from memory_admin.events import StoredEvent
from memory_admin.records import MemoryHit, MemoryRecord
from memory_admin.scope import TENANT_KEY, Scope, scope_json
from memory_admin.steps import arun_steps, run_steps
from memory_admin.store._sql import (
    RECORD_COLUMNS,
    Op,
    SqlSession,
    Statement,
    event_row,
    record_values,
)
from memory_admin.store.base import (
    BaseMemoryStore,
    Invalidation,
    Mode,
    Slot,
    Unit,
    full_capabilities,
)
from memory_admin.store.plan import Cursor, SearchPlan
from memory_admin.store.postgres.schema import MIGRATION_LOCK, MIGRATIONS, SCHEMA_VERSION, version_op
from memory_admin.store.postgres.search import (
    DIALECT,
    RECORD_FROM,
    RECORD_SELECT,
    TermFrequencies,
    count_op,
    document,
    facets_op,
    kind_lexeme,
    lexeme,
    list_op,
    pair_lexeme,
    record_of,
    scope_lexeme,
    scope_pair_lexemes,
    scope_text_lexeme,
)
from memory_admin.store.protocol import ScopeCounts, ScopeFacet

log = logging.getLogger(__name__)

T = TypeVar("T")

# column, SQL array type — the order the insert statement binds them in
_INSERT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("scope_id", "bigint"),
    ("tenant", "text"),
    *((c, "timestamptz" if c.endswith("_at") else "text") for c in RECORD_COLUMNS),
    ("n_tokens", "integer"),
    ("tsv", "tsvector"),
)


def _executor(conn: psycopg.Connection[Any]) -> Callable[[Statement], list[Any]]:
    def execute(statement: Statement) -> list[Any]:
        with conn.cursor(row_factory=tuple_row if statement.raw else dict_row) as cur:
            if statement.many:
                cur.executemany(statement.sql, statement.params)
                return []
            cur.execute(statement.sql, statement.params)
            return cur.fetchall() if cur.description is not None else []

    return execute


def _aexecutor(conn: psycopg.AsyncConnection[Any]) -> Callable[[Statement], Any]:
    async def execute(statement: Statement) -> list[Any]:
        async with conn.cursor(row_factory=tuple_row if statement.raw else dict_row) as cur:
            if statement.many:
                await cur.executemany(statement.sql, statement.params)
                return []
            await cur.execute(statement.sql, statement.params)
            return await cur.fetchall() if cur.description is not None else []

    return execute


# --- write primitives -----------------------------------------------------------------


def fetch_op(ids: Sequence[str], *, lock: bool = False) -> Op[dict[str, MemoryRecord]]:
    if not ids:
        return {}
    sql = RECORD_SELECT + RECORD_FROM + " WHERE r.id = ANY(%s)"
    if lock:
        sql += " ORDER BY r.id FOR UPDATE OF r"
    rows = yield Statement(sql, [list(ids)])
    return {row["id"]: record_of(row) for row in rows}


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
        values = record_values(record, DIALECT.to_db_time)
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


def import_events_op(events: Sequence[StoredEvent]) -> Op[int]:
    columns = list(zip(*([stored.id, *event_row(DIALECT, stored.event)] for stored in events), strict=True))
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


def _lock_rows_op(ids: Sequence[str], slots: Sequence[Slot], scope_ids: Mapping[str, int]) -> Op[list[MemoryRecord]]:
    """The records with these ids and the live holders of these key slots, locked in id order."""
    keyed = sorted({(scope_ids[scope_json(scope)], kind, key) for scope, kind, key in slots})
    rows = yield Statement(
        RECORD_SELECT + RECORD_FROM + " WHERE r.seq IN ("
        "SELECT seq FROM memory_records WHERE id = ANY(%s::text[]) UNION "
        "SELECT h.seq FROM memory_records h "
        "JOIN unnest(%s::bigint[], %s::text[], %s::text[]) AS v(scope_id, kind, key) "
        "ON h.scope_id = v.scope_id AND h.kind = v.kind AND h.key = v.key "
        "WHERE h.key IS NOT NULL AND h.invalid_at IS NULL"
        ") ORDER BY r.id FOR UPDATE OF r",
        [list(ids), [k[0] for k in keyed], [k[1] for k in keyed], [k[2] for k in keyed]],
    )
    # the locked rows' latest versions: a holder invalidated while we waited for its
    # lock is no holder any more
    return [record_of(row) for row in rows]


class _Session(SqlSession):
    """The primitives of one unit of work on a PostgreSQL connection."""

    dialect = DIALECT
    record_select = RECORD_SELECT + RECORD_FROM

    def __init__(self, store: PostgresMemoryStore) -> None:
        self._store = store
        self._scope_ids: dict[str, int] = {}

    def records_under(self, scope: Scope) -> Op[tuple[str, list[Any]]]:
        return (
            "r.scope_id IN (SELECT sc.scope_id FROM memory_scopes sc WHERE sc.lexemes @> %s::text[])",
            [[pair_lexeme(key, value) for key, value in scope.items()]],
        )
        yield  # pragma: no cover - makes this an op

    def _locked_scopes(self, scopes: Mapping[str, Scope]) -> Op[dict[str, int]]:
        missing = {text: scope for text, scope in scopes.items() if text not in self._scope_ids}
        if missing:
            self._scope_ids.update((yield from lock_scopes_op(missing)))
        return self._scope_ids

    def get_many(self, ids: Sequence[str], *, lock: bool = False) -> Op[dict[str, MemoryRecord]]:
        return (yield from fetch_op(ids, lock=lock))

    def batch_reads(self, ids: Sequence[str], slots: Sequence[Slot], scopes: Sequence[Scope]) -> Op[list[MemoryRecord]]:
        # every scope of the batch is locked first, in one order, before anything is read
        scope_ids = yield from self._locked_scopes({scope_json(s): s for s in scopes})
        return (yield from _lock_rows_op(ids, slots, scope_ids))

    def insert(self, records: Sequence[MemoryRecord]) -> Op[None]:
        scope_ids = yield from self._locked_scopes({scope_json(r.scope): r.scope for r in records})
        yield from insert_op(records, scope_ids)

    def invalidate(self, changes: Sequence[Invalidation]) -> Op[None]:
        yield from invalidate_op(changes)

    def delete(self, record_id: str) -> Op[bool]:
        return (yield from delete_op(record_id))

    def expired_ids(self, scope: Scope, now: datetime) -> Op[list[str]]:
        return (yield from expired_ids_op(scope, now))

    def scopes_under(self, scope: Scope, *, lock: bool) -> Op[list[tuple[int, Scope]]]:
        rows = yield Statement(
            "SELECT scope_id, scope FROM memory_scopes WHERE lexemes @> %s::text[] ORDER BY scope"
            + (" FOR UPDATE" if lock else ""),
            [[pair_lexeme(key, value) for key, value in scope.items()]],
        )
        return [(int(row["scope_id"]), json.loads(row["scope"])) for row in rows]

    def drop_scopes(self, scope_ids: Sequence[int]) -> Op[None]:
        yield Statement("DELETE FROM memory_records WHERE scope_id = ANY(%s)", [list(scope_ids)])
        yield Statement("DELETE FROM memory_scopes WHERE scope_id = ANY(%s)", [list(scope_ids)])

    def search(self, plan: SearchPlan) -> Op[tuple[list[MemoryHit], Cursor | None]]:
        return (yield from list_op(plan, self._store._frequencies))

    def count(self, plan: SearchPlan) -> Op[ScopeCounts]:
        return (yield from count_op(plan))

    def facets(self, scope: Scope | None, values_per_key: int) -> Op[list[ScopeFacet]]:
        return (yield from facets_op(scope, values_per_key))

    def import_events(self, events: Sequence[StoredEvent]) -> Op[int]:
        return (yield from import_events_op(events))

    def scrub(self) -> Op[None]:
        # a deleted row's bytes stay in the heap until VACUUM (see docs/postgres.md)
        return None
        yield  # pragma: no cover - makes this an op

    def optimize(self) -> Op[None]:
        # VACUUM cannot run in a transaction; a maintain unit runs in autocommit
        yield Statement("VACUUM (ANALYZE) memory_records, memory_scopes, memory_events")


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
    capabilities_data = full_capabilities("postgres")

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

    # --- units of work ------------------------------------------------------------------

    @contextmanager
    def _open(self, mode: Mode) -> Iterator[tuple[_Session, Callable[[Statement], list[Any]]]]:
        """``read`` and ``maintain`` run in autocommit (a one-statement read sees one
        snapshot); ``snapshot`` is one read-only REPEATABLE READ transaction; ``write``
        one READ COMMITTED transaction (its locks reason in those terms); ``append`` a
        write whose commit does not wait for the WAL flush (``synchronous_commit = off``:
        a server crash may lose it, never corrupt anything)."""
        self._check_open()
        with self._errors(), self._pool.connection() as conn:
            session, execute = _Session(self), _executor(conn)
            if mode in ("read", "maintain"):
                yield session, execute
            elif mode == "snapshot":
                conn.isolation_level, conn.read_only = psycopg.IsolationLevel.REPEATABLE_READ, True
                try:
                    with conn.transaction():  # one BEGIN carrying both
                        yield session, execute
                finally:
                    if not conn.closed:
                        conn.isolation_level, conn.read_only = psycopg.IsolationLevel.READ_COMMITTED, False
            else:
                with conn.transaction():
                    if mode == "append":
                        conn.execute("SET LOCAL synchronous_commit = off")
                    yield session, execute

    @asynccontextmanager
    async def _aopen(self, mode: Mode) -> AsyncIterator[tuple[_Session, Callable[[Statement], Any]]]:
        with self._errors():
            pool = await self._async_pool()
            async with pool.connection() as conn:
                session, execute = _Session(self), _aexecutor(conn)
                if mode in ("read", "maintain"):
                    yield session, execute
                elif mode == "snapshot":
                    await conn.set_isolation_level(psycopg.IsolationLevel.REPEATABLE_READ)
                    await conn.set_read_only(True)
                    try:
                        async with conn.transaction():
                            yield session, execute
                    finally:
                        if not conn.closed:
                            await conn.set_isolation_level(psycopg.IsolationLevel.READ_COMMITTED)
                            await conn.set_read_only(False)
                else:
                    async with conn.transaction():
                        if mode == "append":
                            await conn.execute("SET LOCAL synchronous_commit = off")
                        yield session, execute

    async def _arun_unit(self, unit: Unit[T]) -> T:
        async with self._aopen(unit.mode) as (session, execute):
            return await arun_steps(unit.steps(session), execute)

    def _event_log_key(self) -> str:
        return f"postgres:{self._conninfo}"

    def close(self) -> None:
        """Close both pools. Async pools are closed on their loop when it is idle or
        running elsewhere; prefer :meth:`aclose` from async code."""
        super().close()  # the buffered events first, while the pools are open
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
            return run_steps(version_op(), _executor(conn))

    def _migrate(self, migrations: Sequence[str] = MIGRATIONS) -> None:
        target = len(migrations)
        with self._errors(), self._pool.connection() as conn:
            found = run_steps(version_op(), _executor(conn))
            if found > target:
                raise SchemaVersionError(self.location, found, target)
            if found == target:
                return
            # One migrator at a time; the others find the work done when they get in. The
            # lock is taken before the transaction begins: a transaction that waited for it
            # could still see the catalog as it was before the other migrator committed.
            conn.execute("SELECT pg_advisory_lock(%s)", [MIGRATION_LOCK])
            try:
                with conn.transaction():
                    found = run_steps(version_op(), _executor(conn))
                    if found > target:
                        raise SchemaVersionError(self.location, found, target)
                    for version in range(found + 1, target + 1):
                        conn.execute(migrations[version - 1].encode())
                        conn.execute("UPDATE memory_schema SET version = %s", [version])
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s)", [MIGRATION_LOCK])


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


def _configure(conn: psycopg.Connection[Any]) -> None:
    # the write path's locking reasons in READ COMMITTED terms (a locked row is re-read
    # after the wait), whatever default the database sets
    conn.isolation_level = psycopg.IsolationLevel.READ_COMMITTED


async def _aconfigure(conn: psycopg.AsyncConnection[Any]) -> None:
    await conn.set_isolation_level(psycopg.IsolationLevel.READ_COMMITTED)


__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "PostgresMemoryStore", "describe"]


__all__ = [
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "PostgresMemoryStore",
    "describe",
    "kind_lexeme",
    "lexeme",
    "pair_lexeme",
    "scope_lexeme",
    "scope_pair_lexemes",
    "scope_text_lexeme",
]
