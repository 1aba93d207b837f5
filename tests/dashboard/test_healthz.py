"""``/healthz``: no sign-in, and nothing but whether the dashboard and its store answer."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.test import Client

from memory_admin.dashboard import stores
from memory_admin.errors import MemoryStoreError
from memory_admin.store import InMemoryMemoryStore


@pytest.mark.usefixtures("demo_store")
def test_healthz_answers_without_a_sign_in() -> None:
    response = Client().get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "store": "ok"}
    assert "no-store" in response["Cache-Control"]


class BrokenStore(InMemoryMemoryStore):
    def get(self, record_id: str) -> None:
        raise MemoryStoreError("could not connect to server at db.internal:5432 as user memory")


def test_healthz_says_only_that_the_store_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(stores._stores, settings.MEMORY_STORE_URL, BrokenStore())
    response = Client().get("/healthz")
    assert response.status_code == 503
    assert response.json() == {"status": "unavailable", "store": "unavailable"}
    assert b"db.internal" not in response.content


@pytest.mark.usefixtures("demo_store")
def test_healthz_only_reads() -> None:
    assert Client().post("/healthz").status_code == 405
    assert Client().head("/healthz").status_code == 200
