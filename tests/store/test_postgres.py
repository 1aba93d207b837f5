from __future__ import annotations

import pytest

from memory_admin.conformance import FakeClock, MemoryStoreConformance
from memory_admin.store.postgres import PostgresMemoryStore

pytestmark = pytest.mark.postgres


class TestPostgresStore(MemoryStoreConformance):
    @pytest.fixture(autouse=True)
    def _database(self, postgres_url: str) -> None:
        self.url = postgres_url

    def make_store(self, clock: FakeClock) -> PostgresMemoryStore:
        return PostgresMemoryStore(self.url, clock=clock)
