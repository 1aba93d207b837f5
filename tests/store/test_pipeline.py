"""The store's public API is written once: backends implement primitives, never a
public method of :class:`BaseMemoryStore`."""

from __future__ import annotations

import inspect

import pytest

from memory_admin.store import BaseMemoryStore, InMemoryMemoryStore, SqliteMemoryStore
from tests.support.optional import needs_extra

# every public method the base class has, from each class it is built of
PUBLIC = sorted(
    {
        name
        for cls in BaseMemoryStore.__mro__
        if cls.__module__.startswith("memory_admin.store")
        for name, member in vars(cls).items()
        if not name.startswith("_") and inspect.isfunction(member)
    }
)


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> type[BaseMemoryStore]:
    if request.param == "postgres":
        pytest.importorskip("psycopg", reason=needs_extra("postgres"))
        from memory_admin.store.postgres import PostgresMemoryStore

        return PostgresMemoryStore
    return InMemoryMemoryStore if request.param == "memory" else SqliteMemoryStore


def test_no_backend_overrides_a_public_method(backend: type[BaseMemoryStore]) -> None:
    assert {"write", "asearch", "erase", "close", "aclose", "query_events", "list_records", "scrub"} <= set(PUBLIC)
    overridden = [name for name in PUBLIC if getattr(backend, name) is not getattr(BaseMemoryStore, name)]
    assert overridden == [], f"{backend.__name__} writes these a second time"


def test_the_protocol_calls_have_async_twins(backend: type[BaseMemoryStore]) -> None:
    protocol_calls = ("write", "search", "get", "invalidate", "delete", "erase")
    for name in protocol_calls:
        assert inspect.iscoroutinefunction(getattr(backend, "a" + name)), name
