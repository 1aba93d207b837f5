"""The conformance kit: one executable contract for every memory store backend.

Subclass :class:`MemoryStoreConformance` in a test module and implement
:meth:`~MemoryStoreConformance.make_store`; pytest then runs every case against your
backend, once through the sync API and once through the async twins::

    class TestMyStore(MemoryStoreConformance):
        def make_store(self, clock, *, embedder=None):
            return MyStore(dsn, clock=clock, embedder=embedder)

Tier 1 pins the protocol for every backend; its rules of scope, kind, tag, key, agent,
``as_of``, expiry and invalidation are also run in each search mode (keyword, semantic,
hybrid) over a store with an embedder, with the vectors' life cycle beside them. Tier 2
pins identical match sets over one shared corpus for every backend whose ``capabilities().search`` is ``keyword``. Cases
for optional extensions (erasure, the admin listing, the event log, promotion state)
skip only where the backend declares it lacks them.

This package imports pytest; the store library never imports it.
"""

from __future__ import annotations

from memory_admin.conformance.kit import MemoryStoreConformance
from memory_admin.conformance.support import AsyncBridge, FakeClock

__all__ = ["AsyncBridge", "FakeClock", "MemoryStoreConformance"]
