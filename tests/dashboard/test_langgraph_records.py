"""What LangMem's memory tools write through MemoryAdminStore, on the dashboard's record page."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse

from memory_admin.dashboard import stores
from memory_admin.store import InMemoryMemoryStore, RecordListQuery
from tests.dashboard.conftest import MakeClient

langmem = pytest.importorskip("langmem", reason="needs langmem (dev) and the langgraph extra")

from memory_admin.integrations.langgraph import MemoryAdminStore  # noqa: E402

pytestmark = pytest.mark.django_db


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemoryMemoryStore]:
    store = InMemoryMemoryStore()
    monkeypatch.setitem(stores._stores, settings.MEMORY_STORE_URL, store)
    yield store
    store.close()


def test_a_langmem_memory_shows_its_versions_namespace_key_and_value(
    client_for: MakeClient, served: InMemoryMemoryStore
) -> None:
    lg = MemoryAdminStore(served, tenant="acme")
    manage = langmem.create_manage_memory_tool(namespace=("memories", "dana"), store=lg)
    memory_id = manage.invoke({"content": "Dana prefers aisle seats", "action": "create"}).rsplit(" ", 1)[-1]
    manage.invoke({"content": "Dana prefers window seats now", "action": "update", "id": memory_id})
    manage.invoke({"action": "delete", "id": memory_id})
    query = RecordListQuery.model_validate({"search": {"scope": {"tenant": "acme"}, "include_invalidated": True}})
    [head] = [r for r in served.list_records(query).hits if r.record.superseded_by is None]

    viewer: Client = client_for("viewer", "tenant=acme,user=dana")
    html = viewer.get(reverse("dashboard:record", args=[head.record.id])).content.decode()
    timeline = html.split('id="timeline"')[1]
    assert "2 versions" in timeline
    assert "Dana prefers aisle seats" in timeline  # the first version, whole
    assert "Dana prefers <del>aisle seats" in timeline and "<ins>window seats now" in timeline  # what changed
    assert "deleted through LangGraph" in html
    # the record's content is the item: its namespace, key and value, as JSON
    assert "&quot;namespace&quot;: [&quot;memories&quot;, &quot;dana&quot;]" in html
    assert f"&quot;key&quot;: &quot;{memory_id}&quot;" in html
    # the scope the template made is what grants confine: another user's grant sees nothing
    other: Client = client_for("viewer", "tenant=acme,user=mei")
    assert other.get(reverse("dashboard:record", args=[head.record.id])).status_code == 404
