"""The throwaway PostgreSQL cluster's pytest fixtures.

The cluster itself (``initdb`` into a temporary directory, ``pg_ctl start`` on a private
unix-socket directory with TCP off, run as the ``postgres`` OS user under root) is
:mod:`tests.support.postgres`; the tests start it without flushes to disk. One
fresh database per test session, and a cheap ``TRUNCATE`` between tests.

Without the binaries or the ``postgres`` extra these tests skip with a message saying
what to install; with ``MEMORY_ADMIN_REQUIRE_ALL=1`` (CI) that is a failure, never a skip
(:mod:`tests.support.optional`). Set ``MEMORY_ADMIN_PG_BIN`` to use binaries from another
directory.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import NoReturn

import pytest

from tests.support import postgres as pg_cluster
from tests.support.optional import needs_extra, unavailable
from tests.support.postgres import BIN_ENV, ClusterUnavailable, PostgresCluster, find_bin_dir, server_user

__all__ = ["BIN_ENV", "PostgresCluster", "find_bin_dir", "start_cluster"]

STORE_TABLES = (
    "memory_vectors",
    "memory_promotions",
    "memory_promotion_history",
    "memory_proposals",
    "memory_composition_uses",
    "memory_compositions",
    "memory_records",
    "memory_scopes",
    "memory_events",
    "memory_counters",
    "memory_settings",
    "memory_forgetting",
)
TEST_SETTINGS = {"max_connections": "200"}  # the multi-process tests open many pools


def _unavailable(reason: str) -> NoReturn:
    unavailable(
        f"PostgreSQL tests need a local server build: {reason}. "
        "Install it with scripts/ensure-system-deps.sh (Debian: apt-get install postgresql) "
        f"or point {BIN_ENV} at a directory holding initdb and pg_ctl."
    )


def start_cluster(*, owner_pid: int | None = None) -> PostgresCluster:
    """A fast (never flushed) cluster, or a skip — a failure under CI — when the machine
    cannot run one. With ``owner_pid``, a later start stops it once that process is gone."""
    pytest.importorskip("psycopg", reason=needs_extra("postgres"))
    try:
        return pg_cluster.start_cluster(owner_pid=owner_pid, durable=False, settings=TEST_SETTINGS)
    except ClusterUnavailable as exc:
        _unavailable(exc.reason)


@pytest.fixture(scope="session")
def postgres_binaries() -> None:
    """This machine can start clusters (the server binaries, and a user to run them as
    under root), for a test that starts its own: a skip — a failure under CI — otherwise."""
    pytest.importorskip("psycopg", reason=needs_extra("postgres"))
    try:
        server_user()
    except ClusterUnavailable as exc:
        _unavailable(exc.reason)
    if find_bin_dir() is None:
        _unavailable("initdb and pg_ctl were not found")


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[PostgresCluster]:
    """The session's cluster, stopped and deleted at the end."""
    cluster = start_cluster(owner_pid=os.getpid())
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def postgres_session_url(postgres_cluster: PostgresCluster) -> str:
    """A fresh database for this test session."""
    return postgres_cluster.create_database(f"memory_admin_test_{os.getpid()}")


@pytest.fixture
def postgres_url(postgres_session_url: str) -> str:
    """The session database, emptied: every store table truncated, identities restarted."""
    import psycopg

    with psycopg.connect(postgres_session_url, autocommit=True) as conn:
        present = [
            table
            for table in STORE_TABLES
            if conn.execute("SELECT to_regclass(%s)", [table]).fetchone() not in (None, (None,))
        ]
        if present:
            conn.execute(f"TRUNCATE {', '.join(present)} RESTART IDENTITY".encode())
    return postgres_session_url


@pytest.fixture
def fresh_postgres_database(postgres_cluster: PostgresCluster) -> Iterator[str]:
    """A new, empty database for one test (schema and migration tests), dropped afterwards."""
    name = f"memory_admin_fresh_{os.getpid()}_{next(_fresh_counter)}"
    url = postgres_cluster.create_database(name)
    try:
        yield url
    finally:
        postgres_cluster.drop_database(name)


def _counter() -> Iterator[int]:
    n = 0
    while True:
        n += 1
        yield n


_fresh_counter = _counter()
