"""What every conformance case shares: the fixtures (a fresh store, sync and async), the
capability gate, the corruption hook and the record helpers."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest

from memory_admin.conformance.support import APIS, FakeClock, through
from memory_admin.embed.protocol import Embedder
from memory_admin.errors import (
    CapabilityError,
)
from memory_admin.records import MemoryHit, MemoryRecord
from memory_admin.store.protocol import FullMemoryStore, MemoryNeeds, MemoryStore, require_memory

ACME = {"tenant": "acme"}
U1 = {"tenant": "acme", "user": "u1"}
U10 = {"tenant": "acme", "user": "u10"}
U2 = {"tenant": "acme", "user": "u2"}
OTHER = {"tenant": "globex", "user": "u1"}
PROV = {"source": "conformance"}


def rec(content: str, scope: dict[str, str] | None = None, **fields: Any) -> dict[str, Any]:
    """A write input with sensible defaults."""
    return {"scope": scope or U1, "kind": "fact", "content": content, "provenance": PROV, **fields}


def stored(store: MemoryStore, record_id: str) -> MemoryRecord:
    """The record with this id, which the case knows exists."""
    record = store.get(record_id)
    assert record is not None, f"{record_id} should exist"
    return record


def contents(hits: Sequence[MemoryHit]) -> list[str]:
    return [hit.record.content for hit in hits]


class ConformanceBase(ABC):
    """The fixtures and hooks every case uses; :class:`~memory_admin.conformance.MemoryStoreConformance`
    combines the case groups over it."""

    @abstractmethod
    def make_store(self, clock: FakeClock, *, embedder: Embedder | None = None) -> FullMemoryStore:
        """A new, empty store that reads time from ``clock`` and embeds with ``embedder``
        (``None``: keyword-only). ``self.tmp_path`` is a fresh directory for this test."""

    CORRUPTIONS: ClassVar[tuple[tuple[str, str], ...]] = (
        ("kind", "belief"),
        ("tags", "{not json"),
        ("content", " "),
    )
    """Column edits :meth:`corrupt_row` makes in the corruption cases; a backend adds
    the ways its own columns can rot."""

    def corrupt_row(self, store: FullMemoryStore, record_id: str, column: str, value: str) -> bool:
        """Overwrite one stored column of a record behind the store's back, as disk rot or
        a careless manual edit would. Returns ``False`` where the backend cannot hold a
        row that no longer validates (records in RAM are validated models); the
        corruption cases then skip."""
        return False

    def open_again(self, store: FullMemoryStore, *, embedder: Embedder | None = None) -> FullMemoryStore | None:
        """Another store object over ``store``'s data — what a second process opens,
        embedding with ``embedder`` — still readable after ``store`` is closed; ``None``
        where the backend cannot (the cases that need it then skip). A backend whose
        data lives in the store object returns ``store`` itself (and cannot change its
        embedder: the cases that need that skip)."""
        return None

    # --- fixtures -----------------------------------------------------------------

    @pytest.fixture(autouse=True)
    def _kit_tmp_path(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path

    @pytest.fixture
    def clock(self) -> FakeClock:
        return FakeClock()

    @pytest.fixture
    def raw_store(self, clock: FakeClock) -> Iterator[FullMemoryStore]:
        store = self.make_store(clock)
        yield store
        store.close()

    @pytest.fixture(params=APIS)
    def store(self, request: pytest.FixtureRequest, raw_store: FullMemoryStore) -> Iterator[FullMemoryStore]:
        yield from through(request.param, raw_store)

    @staticmethod
    def _needs(store: FullMemoryStore, **needs: Any) -> None:
        try:
            require_memory(store, MemoryNeeds(**needs))
        except CapabilityError as exc:
            pytest.skip(f"backend declares it lacks {', '.join(exc.missing)}")
