"""An event batch is one statement over one JSON array of its rows (SQLite and PostgreSQL
alike): whatever the text — quotes, backslashes, any script, a NUL in a query preview —
every stored column must be what :func:`~memory_admin.store.sql.rows.event_row` computes,
the body byte for byte."""

from __future__ import annotations

import json
import sqlite3
import tempfile
import uuid
from collections.abc import Callable
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_admin.events import AnyEvent, MemoryRecallEvent, MemorySearchEvent, MemoryWriteEvent
from memory_admin.store import BaseMemoryStore, SqliteMemoryStore
from memory_admin.store.postgres import PostgresMemoryStore
from memory_admin.store.sql.dialect import POSTGRES, SQLITE, Dialect
from memory_admin.store.sql.rows import EVENT_COLUMNS, event_row
from memory_admin.store.sqlite import events_path

COLUMNS = ", ".join(name for name, _ in EVENT_COLUMNS)
Logged = Callable[[list[AnyEvent], str], list[list[Any]]]
"""Log these events (their tenant given) through a fresh store; their stored columns, in order."""


def _sqlite(events: list[AnyEvent], tenant: str) -> list[list[Any]]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "memory.sqlite3"
        _log(SqliteMemoryStore(path), events)
        with closing(sqlite3.connect(events_path(path))) as conn:  # the log's own file
            return [list(row) for row in conn.execute(f"SELECT {COLUMNS} FROM memory_events ORDER BY eid")]


def _log(store: BaseMemoryStore, events: list[AnyEvent]) -> None:
    with store:
        for event in events:
            store.emit(event)
        store.flush_events()


@pytest.fixture(params=["sqlite", "postgres"])
def logged(request: pytest.FixtureRequest) -> tuple[Logged, Dialect]:
    if request.param == "sqlite":
        return _sqlite, SQLITE
    url: str = request.getfixturevalue("postgres_url")  # skips without the postgres extra
    import psycopg

    def postgres(events: list[AnyEvent], tenant: str) -> list[list[Any]]:
        _log(PostgresMemoryStore(url), events)
        with psycopg.connect(url) as conn:
            rows = conn.execute(f"SELECT {COLUMNS} FROM memory_events WHERE tenant = %s ORDER BY eid", [tenant])
            # the scope column is jsonb: compare it as the canonical text event_row gives
            return [
                [*row[:3], json.dumps(row[3], sort_keys=True, separators=(",", ":"), ensure_ascii=False), *row[4:]]
                for row in rows
            ]

    return postgres, POSTGRES


# what a scope value may hold: no control characters (the scope validators refuse them)
scope_value = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=12)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(preview=st.none() | st.text(max_size=40), value=scope_value, duration=st.floats(0, 1e6, allow_nan=False))
def test_an_event_batch_stores_what_event_row_computes(
    logged: tuple[Logged, Dialect], preview: str | None, value: str, duration: float
) -> None:
    log, dialect = logged
    at = datetime(2026, 5, 8, 13, 14, 15, 123456, tzinfo=UTC)
    tenant = f"t {value} {uuid.uuid4().hex}"
    scope = {"user": value, "tenant": tenant}  # not in canonical order
    events: list[AnyEvent] = [
        MemorySearchEvent(
            at=at, scope=scope, query_preview=preview, count=1, limit=10, record_ids=["a"], duration_ms=duration
        ),
        MemoryRecallEvent(
            at=at,
            scope=scope,
            agent=value,
            query_preview=preview,
            count=0,
            chars=0,
            budget_chars=4000,
            truncated=False,
            deferred=0,
            record_ids=[],
            preview_run=True,
            duration_ms=duration,
        ),
        MemoryRecallEvent(
            at=at, scope=scope, count=0, chars=0, budget_chars=4000, truncated=True, deferred=0, record_ids=[]
        ),
        MemoryWriteEvent(at=at, scope=scope, count=1, record_ids=["a"], kinds={"fact": 1}),
    ]
    stored = log(events, tenant)
    assert stored == [event_row(dialect, event) for event in events]
    assert [bool(row[5]) for row in stored] == [False, True, False, False], "only a preview run is marked"
