from __future__ import annotations

from memory_admin.conformance import FakeClock, MemoryStoreConformance
from memory_admin.store import FullMemoryStore, InMemoryMemoryStore


class TestInMemoryStore(MemoryStoreConformance):
    def make_store(self, clock: FakeClock) -> InMemoryMemoryStore:
        return InMemoryMemoryStore(clock=clock)

    def open_again(self, store: FullMemoryStore) -> FullMemoryStore:
        return store  # the records live in the object, which stays readable after close()
