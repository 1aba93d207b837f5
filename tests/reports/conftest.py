"""Fixtures for the reports: records built by hand, and the demo corpus in RAM (no Django)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from memory_admin.dashboard.demo import DemoClock, demo_start, load_demo
from memory_admin.records import MemoryRecord
from memory_admin.store import InMemoryMemoryStore

T0 = datetime(2026, 1, 5, 9, tzinfo=UTC)  # a Monday


def rec(
    record_id: str, content: str, *, scope: dict[str, str] | None = None, minutes: int = 0, **fields: object
) -> MemoryRecord:
    """A record as a store would return it, ``minutes`` after :data:`T0`."""
    at = T0 + timedelta(minutes=minutes)
    return MemoryRecord.model_validate(
        {
            "id": record_id,
            "scope": scope or {"tenant": "t"},
            "kind": "fact",
            "content": content,
            "provenance": {"source": "test"},
            "created_at": at,
            "updated_at": at,
            **fields,
        }
    )


@pytest.fixture
def demo_store() -> Iterator[InMemoryMemoryStore]:
    """The dashboard's demo corpus (the demo module needs no Django)."""
    clock = DemoClock(demo_start())
    store = InMemoryMemoryStore(clock=clock)
    assert load_demo(store, clock) is not None
    yield store
    store.close()
