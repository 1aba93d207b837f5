from __future__ import annotations

from memory_admin.conformance import FakeClock, MemoryStoreConformance
from memory_admin.embed import Embedder
from memory_admin.store import FullMemoryStore, InMemoryMemoryStore


class TestInMemoryStore(MemoryStoreConformance):
    def make_store(self, clock: FakeClock, *, embedder: Embedder | None = None) -> InMemoryMemoryStore:
        return InMemoryMemoryStore(clock=clock, embedder=embedder)

    def open_again(self, store: FullMemoryStore, *, embedder: Embedder | None = None) -> FullMemoryStore:
        return store  # the records live in the object, which stays readable after close()
