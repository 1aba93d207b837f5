from __future__ import annotations

from memory_admin.conformance import FakeClock, MemoryStoreConformance
from memory_admin.store import SqliteMemoryStore


class TestSqliteStore(MemoryStoreConformance):
    def make_store(self, clock: FakeClock) -> SqliteMemoryStore:
        return SqliteMemoryStore(self.tmp_path / "memory.sqlite3", clock=clock)
