"""Fixtures for the reports: records built by hand, and the demo corpus in RAM (no Django)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from memory_admin.records import MemoryRecord
from memory_admin.store import InMemoryMemoryStore
from tests.support.stores import demo_memory

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
    with demo_memory() as store:
        yield store
