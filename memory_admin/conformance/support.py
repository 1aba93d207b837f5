"""Helpers for the conformance kit: a controllable clock and the async bridge."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from memory_admin.promotion import DecisionOutcome, Promotion, PromotionPage, TransitionPage
from memory_admin.records import MemoryHit, MemoryRecord
from memory_admin.store.protocol import ErasureReport, FullMemoryStore, MemoryStore, MemoryStoreCapabilities

EPOCH = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


class FakeClock:
    """A clock the tests move by hand. Each reading ticks one millisecond, like time
    passing between calls, unless frozen."""

    def __init__(self, start: datetime = EPOCH, *, tick: timedelta = timedelta(milliseconds=1)) -> None:
        self.now = start
        self.tick = tick

    def __call__(self) -> datetime:
        current = self.now
        self.now = self.now + self.tick
        return current

    def advance(self, **delta: float) -> datetime:
        self.now = self.now + timedelta(**delta)
        return self.now

    def peek(self) -> datetime:
        return self.now


class AsyncBridge:
    """Presents a store's async twins (``awrite``, ``asearch``, …) under the sync names,
    so every conformance case runs once through each API."""

    def __init__(self, store: MemoryStore) -> None:
        self._store = store
        self._runner = asyncio.Runner()

    def write(self, inputs: Sequence[Any]) -> list[MemoryRecord]:
        return self._runner.run(self._store.awrite(inputs))

    def search(self, query: Any, **options: Any) -> list[MemoryHit]:
        return self._runner.run(self._store.asearch(query, **options))

    def get(self, record_id: str) -> MemoryRecord | None:
        return self._runner.run(self._store.aget(record_id))

    def invalidate(self, record_id: str, reason: str | None = None) -> MemoryRecord:
        return self._runner.run(self._store.ainvalidate(record_id, reason))

    def delete(self, record_id: str) -> bool:
        return self._runner.run(self._store.adelete(record_id))

    def erase(self, scope: Mapping[str, str]) -> ErasureReport:
        return self._runner.run(self._store.aerase(scope))  # type: ignore[attr-defined,no-any-return]

    def capabilities(self) -> MemoryStoreCapabilities:
        return self._store.capabilities()

    # --- the promotion extension's async twins ------------------------------------------

    def register_composition(self, composition: Any, scope: Mapping[str, str]) -> str:
        return self._runner.run(self._full.aregister_composition(composition, scope))

    def corroborate(self, record_id: str, provenance: Any) -> MemoryRecord:
        return self._runner.run(self._full.acorroborate(record_id, provenance))

    def decide(self, decisions: Sequence[Any], **options: Any) -> list[DecisionOutcome]:
        return self._runner.run(self._full.adecide(decisions, **options))

    def promote(self, record_id: str, **fields: Any) -> Promotion:
        return self._runner.run(self._full.apromote(record_id, **fields))

    def reject(self, record_id: str, **fields: Any) -> Promotion:
        return self._runner.run(self._full.areject(record_id, **fields))

    def demote(self, record_id: str, **fields: Any) -> Promotion:
        return self._runner.run(self._full.ademote(record_id, **fields))

    def promotion(self, record_id: str) -> Promotion | None:
        return self._runner.run(self._full.apromotion(record_id))

    def promotions(self, scope: Mapping[str, str], **filters: Any) -> PromotionPage:
        return self._runner.run(self._full.apromotions(scope, **filters))

    def transitions(self, scope: Mapping[str, str], **filters: Any) -> TransitionPage:
        return self._runner.run(self._full.atransitions(scope, **filters))

    def promoted_records(self, scope: Mapping[str, str], **options: Any) -> list[MemoryRecord]:
        return self._runner.run(self._full.apromoted_records(scope, **options))

    @property
    def _full(self) -> FullMemoryStore:
        return cast(FullMemoryStore, self._store)

    def close(self) -> None:
        # a store with native async connections must release them on the loop that made them
        aclose = getattr(self._store, "aclose", None)
        if aclose is not None:
            self._runner.run(aclose())
        self._runner.close()

    def __getattr__(self, name: str) -> Any:
        # admin-extension calls have no async twin; they pass through unchanged
        return getattr(self._store, name)


APIS = ("sync", "async")
"""The two ways every case runs: a fixture parametrized over these yields :func:`through`."""


def through(api: str, store: FullMemoryStore) -> Iterator[FullMemoryStore]:
    """``store`` itself (``"sync"``), or an :class:`AsyncBridge` over it (``"async"``),
    closed after the case: ``yield from through(request.param, raw_store)``."""
    if api == "sync":
        yield store
        return
    bridge = AsyncBridge(store)
    # the bridge answers every member of the protocol (async twins under sync names)
    yield cast(FullMemoryStore, bridge)
    bridge.close()
