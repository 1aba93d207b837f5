"""A fresh store of each backend, for the tests parametrized over backends, and the demo corpus.

``memory`` lives in RAM, ``sqlite`` in a file of the test's ``tmp_path``, ``postgres`` in
the session's throwaway database, emptied for the test (``postgres_url``: a skip — a
failure in CI — where the machine cannot run it).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from memory_admin.dashboard.demo import DemoClock, demo_start, load_demo
from memory_admin.store import BaseMemoryStore, InMemoryMemoryStore, SqliteMemoryStore

SQLITE_FILE = "memory.sqlite3"
"""The SQLite backend's file in the test's ``tmp_path``."""


def backends(*kinds: str) -> list[Any]:
    """Fixture params for these backends, the PostgreSQL one marked ``postgres``."""
    return [pytest.param(kind, marks=pytest.mark.postgres) if kind == "postgres" else kind for kind in kinds]


def sqlite_path(request: pytest.FixtureRequest) -> Path:
    tmp_path: Path = request.getfixturevalue("tmp_path")
    return tmp_path / SQLITE_FILE


def backend_url(kind: str, request: pytest.FixtureRequest) -> str:
    """The URL of a fresh store of ``kind`` for the requesting test."""
    if kind == "memory":
        return "memory://"
    if kind == "sqlite":
        return f"sqlite:///{sqlite_path(request)}"
    url: str = request.getfixturevalue("postgres_url")
    return url


def open_backend(kind: str, request: pytest.FixtureRequest, **options: Any) -> BaseMemoryStore:
    """A fresh store of ``kind`` for the requesting test, built with ``options`` (the
    backend's own constructor: no embedder is adopted); the caller closes it."""
    if kind == "memory":
        return InMemoryMemoryStore(**options)
    if kind == "sqlite":
        return SqliteMemoryStore(sqlite_path(request), **options)
    url = backend_url(kind, request)  # a skip, or a failure in CI, without the postgres extra
    from memory_admin.store.postgres import PostgresMemoryStore

    return PostgresMemoryStore(url, **options)


@contextmanager
def demo_memory() -> Iterator[InMemoryMemoryStore]:
    """The dashboard's demo corpus in RAM (the demo module needs no Django), closed afterwards."""
    clock = DemoClock(demo_start())
    store = InMemoryMemoryStore(clock=clock)
    assert load_demo(store, clock) is not None
    try:
        yield store
    finally:
        store.close()
