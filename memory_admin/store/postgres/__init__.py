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
import contextlib
import logging
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
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
from memory_admin.steps import arun_steps, run_steps
from memory_admin.store.base import BaseMemoryStore
from memory_admin.store.core import full_capabilities
from memory_admin.store.postgres.schema import (
    MIGRATION_LOCK,
    MIGRATIONS,
    SCHEMA_VERSION,
    reindex,
    stored_version,
    terms_current,
)
from memory_admin.store.postgres.search import PostgresSearch
from memory_admin.store.postgres.session import PostgresSession
from memory_admin.store.session import Mode, Statement, Unit
from memory_admin.store.vectors import VectorCache

log = logging.getLogger(__name__)

T = TypeVar("T")


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
        self._log_pool: ConnectionPool[Any] | None = None
        self._log_lock = threading.Lock()
        self._closed = False
        self._searcher = PostgresSearch()
        self._vector_cache = VectorCache()
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
        if not entry.ready:
            # filled before its first use: a connection still being made for a caller
            # served meanwhile would be cut off, and left open, when the loop shuts down
            async with entry.opening:
                if not entry.ready:
                    try:
                        await entry.pool.open(wait=True, timeout=self._pool_timeout)
                    except BaseException:
                        with self._async_lock:  # the next call starts a new pool
                            if self._async_pools.get(loop) is entry:
                                del self._async_pools[loop]
                        await entry.shut()
                        raise
                    entry.ready = True
        return entry.pool

    def _event_log_pool(self) -> ConnectionPool[Any]:
        """The event log's own connection, opened with its first batch. Its batches do not
        borrow from the agents' pool: a pool hands its idle connections out in turn, so a
        second one, kept for the log's commits, would run every other search of a
        one-thread agent on another server process — 0.91× the searches of the log off at
        4 processes with an empty transaction a batch, 0.99× on a connection apart
        (docs/benchmarks/concurrency.md)."""
        with self._log_lock:
            if self._log_pool is None:
                self._log_pool = ConnectionPool(
                    self._conninfo,
                    min_size=1,
                    max_size=1,
                    kwargs=self._connect_kwargs,
                    configure=_configure,
                    timeout=self._pool_timeout,
                    name="memory_admin_events",
                    num_workers=1,
                    open=True,  # connects in the background; a batch waits up to pool_timeout
                )
            return self._log_pool

    # --- units of work ------------------------------------------------------------------

    @contextmanager
    def _open(self, mode: Mode) -> Iterator[tuple[PostgresSession, Callable[[Statement], list[Any]]]]:
        """``read`` and ``maintain`` run in autocommit (a one-statement read sees one
        snapshot); ``snapshot`` is one read-only REPEATABLE READ transaction; ``write``
        one READ COMMITTED transaction (its locks reason in those terms); ``append`` a
        write whose commit does not wait for the WAL flush (``synchronous_commit = off``:
        a server crash may lose it, never corrupt anything)."""
        self._check_open()
        with self._errors(), (self._event_log_pool() if mode == "append" else self._pool).connection() as conn:
            session, execute = PostgresSession(self._searcher, self._vector_cache), _executor(conn)
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
    async def _aopen(self, mode: Mode) -> AsyncIterator[tuple[PostgresSession, Callable[[Statement], Any]]]:
        with self._errors():
            pool = await self._async_pool()
            async with pool.connection() as conn:
                session, execute = (
                    PostgresSession(self._searcher, self._vector_cache),
                    _aexecutor(conn),
                )
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

    def _forget_reads(self) -> None:
        super()._forget_reads()
        self._searcher.records.clear()

    def _release(self) -> None:
        """Close the pools: the agents', the event log's and each loop's. Async pools are
        closed on their loop when it is idle or running elsewhere; prefer :meth:`aclose`
        from async code."""
        self._closed = True
        with self._log_lock:
            log_pool, self._log_pool = self._log_pool, None
        if log_pool is not None:
            log_pool.close()
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

    async def _arelease(self) -> None:
        loop = asyncio.get_running_loop()
        with self._async_lock:
            entry = self._async_pools.pop(loop, None)
        if entry is not None:
            await entry.shut()
        self._release()

    # --- schema -----------------------------------------------------------------------

    def schema_version(self) -> int:
        with self._errors(), self._pool.connection() as conn:
            return run_steps(stored_version(), _executor(conn))

    def _migrate(self, migrations: Sequence[str] = MIGRATIONS) -> None:
        target = len(migrations)
        with self._errors(), self._pool.connection() as conn:
            found = run_steps(stored_version(), _executor(conn))
            if found > target:
                raise SchemaVersionError(self.location, found, target)
            if found == target and run_steps(terms_current(), _executor(conn)):
                return
            # One migrator at a time; the others find the work done when they get in. The
            # lock is taken before the transaction begins: a transaction that waited for it
            # could still see the catalog as it was before the other migrator committed.
            conn.execute("SELECT pg_advisory_lock(%s)", [MIGRATION_LOCK])
            try:
                with conn.transaction():
                    found = run_steps(stored_version(), _executor(conn))
                    if found > target:
                        raise SchemaVersionError(self.location, found, target)
                    for version in range(found + 1, target + 1):
                        conn.execute(migrations[version - 1].encode())
                        conn.execute("UPDATE memory_schema SET version = %s", [version])
                    # after a stemmer change or the migration that introduced the terms
                    run_steps(reindex(), _executor(conn))
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s)", [MIGRATION_LOCK])


@dataclass
class _LoopPool:
    """An event loop's async pool and the task that closes it when the loop shuts down."""

    pool: AsyncConnectionPool[Any]
    guard: asyncio.Task[None]
    opening: asyncio.Lock = field(default_factory=asyncio.Lock)
    ready: bool = False

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
        await _close_cancelled(pool)


async def _close_cancelled(pool: AsyncConnectionPool[Any]) -> None:
    """Close ``pool`` while its loop shuts down. The workers are cancelled with every other
    task, and ``close()`` stops at gathering them (CancelledError) before it closes the
    idle connections, which then stay open on the server until they are collected — one
    or two more for every ``asyncio.run()``. So those are taken out and closed first."""
    for _ in range(pool.get_stats()["pool_available"]):
        try:
            conn = await pool.getconn(timeout=1)
        except PoolTimeout:
            break
        await conn.close()
    with contextlib.suppress(asyncio.CancelledError):
        await pool.close()


def _configure(conn: psycopg.Connection[Any]) -> None:
    # the write path's locking reasons in READ COMMITTED terms (a locked row is re-read
    # after the wait), whatever default the database sets
    conn.isolation_level = psycopg.IsolationLevel.READ_COMMITTED


async def _aconfigure(conn: psycopg.AsyncConnection[Any]) -> None:
    await conn.set_isolation_level(psycopg.IsolationLevel.READ_COMMITTED)


__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "PostgresMemoryStore", "describe"]
