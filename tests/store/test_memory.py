from __future__ import annotations

from memory_admin.conformance import FakeClock, MemoryStoreConformance
from memory_admin.store import InMemoryMemoryStore


class TestInMemoryStore(MemoryStoreConformance):
    def make_store(self, clock: FakeClock) -> InMemoryMemoryStore:
        return InMemoryMemoryStore(clock=clock)
