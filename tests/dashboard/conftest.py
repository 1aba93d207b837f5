"""Fixtures for the dashboard: the demo corpus in an in-memory store, and signed-in users."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client

from memory_admin.dashboard import stores
from memory_admin.dashboard.demo import DemoClock, demo_start, load_demo
from memory_admin.dashboard.permissions import add_grants, role_named, set_role
from memory_admin.records import MemoryRecord
from memory_admin.scope import parse_scope_text
from memory_admin.store import BaseMemoryStore, InMemoryMemoryStore, RecordListQuery

MakeClient = Callable[..., Client]


@pytest.fixture
def demo_store(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemoryMemoryStore]:
    """The demo corpus, served to the dashboard as its configured store."""
    clock = DemoClock(demo_start())
    store = InMemoryMemoryStore(clock=clock)
    assert load_demo(store, clock) is not None
    monkeypatch.setitem(stores._stores, settings.MEMORY_STORE_URL, store)
    yield store
    store.close()


def make_user(username: str, role: str | None, grants: tuple[str, ...] = ()) -> User:
    user = User.objects.create_user(username=username, password="pw-for-tests-only")
    if role is not None:
        set_role(user, role_named(role))
    add_grants(user, [parse_scope_text(text) for text in grants])
    return user


@pytest.fixture
def client_for(db: None) -> MakeClient:
    """``client_for("viewer", "tenant=acme")``: a client signed in as a new user with that role and grants."""
    made = 0

    def make(role: str | None, *grants: str) -> Client:
        nonlocal made
        made += 1
        client = Client()
        client.force_login(make_user(f"user{made}", role, grants))
        return client

    return make


def find(store: BaseMemoryStore, scope: str, text: str) -> MemoryRecord:
    """The one record under ``scope`` (any state) whose content contains ``text``."""
    query = RecordListQuery.model_validate(
        {
            "search": {"scope": parse_scope_text(scope), "include_invalidated": True, "limit": 1000},
            "include_expired": True,
        }
    )
    found = [hit.record for hit in store.list_records(query).hits if text in hit.record.content]
    assert len(found) == 1, f"{len(found)} records under {scope} contain {text!r}"
    return found[0]
