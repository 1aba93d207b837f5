"""Every aggregate a user reads is confined to their grant: a user granted one person's
scope of a tenant never sees the tenant's totals — recall events checked on the health
page, the recall graphs, the scope summary's counts, the browser's facets, exports."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client
from django.urls import reverse
from django.utils.http import urlencode

from memory_admin.events import MemoryRecallEvent
from memory_admin.scope import is_subset_match
from memory_admin.store import InMemoryMemoryStore, RecordListQuery
from tests.dashboard.conftest import MakeClient

pytestmark = pytest.mark.django_db

DANA = {"tenant": "acme", "user": "dana"}
ACME = {"tenant": "acme"}


def _recalls(store: InMemoryMemoryStore, inside: dict[str, str]) -> list[MemoryRecallEvent]:
    events = store.query_events({"types": ["agent.memory.recall"], "scope": ACME, "limit": 10_000})
    return [
        s.event for s in events if isinstance(s.event, MemoryRecallEvent) and is_subset_match(s.event.scope, inside)
    ]


def _url(name: str, scope: str) -> str:
    return reverse(f"dashboard:{name}") + "?" + urlencode({"scope": scope})


@pytest.fixture
def dana(client_for: MakeClient, demo_store: InMemoryMemoryStore) -> Client:
    return client_for("curator", "tenant=acme,user=dana")


def test_the_health_page_counts_only_the_granted_recalls(
    dana: Client, client_for: MakeClient, demo_store: InMemoryMemoryStore
) -> None:
    own, tenant = len(_recalls(demo_store, DANA)), len(_recalls(demo_store, ACME))
    assert 0 < own < tenant  # the demo has recalls of Dana's and of others'
    html = dana.get(_url("health", "tenant=acme,user=dana")).content.decode()
    assert f"Checked {own} recall events" in html and f"Checked {tenant} recall events" not in html
    # asking for the whole tenant is narrowed to the grant, with the same count
    assert f"Checked {own} recall events" in dana.get(_url("health", "tenant=acme")).content.decode()
    wide = client_for("curator", "tenant=acme").get(_url("health", "tenant=acme")).content.decode()
    assert f"Checked {tenant} recall events" in wide


def test_the_recall_graphs_count_only_the_granted_recalls(dana: Client, demo_store: InMemoryMemoryStore) -> None:
    own = _recalls(demo_store, DANA)
    html = dana.get(_url("recall", "tenant=acme")).content.decode()
    found = re.search(r'<script id="recall-series" type="application/json">(.*?)</script>', html, re.S)
    assert found is not None
    data = json.loads(found[1])
    assert sum(data["recalls"]) == len(own)


def test_the_scope_summary_and_facets_count_only_the_grant(dana: Client, demo_store: InMemoryMemoryStore) -> None:
    everything = RecordListQuery.model_validate(
        {"search": {"scope": ACME, "include_invalidated": True, "limit": 1000}, "include_expired": True}
    )
    others = {
        hit.record.scope["user"]
        for hit in demo_store.list_records(everything).hits
        if hit.record.scope.get("user") not in (None, "dana")
    }
    assert others  # other people's scopes exist in the tenant
    summary = dana.get(_url("scope", "tenant=acme")).content.decode()
    counts = demo_store.count_records(DANA)
    assert f"{counts.total}" in summary
    browse = dana.get(_url("browse", "tenant=acme")).content.decode()
    for other in others:
        assert f"user={other}" not in browse and f"user={other}" not in summary
        assert f">{other}<" not in browse  # no facet value names them


def test_exports_hold_only_the_grant(dana: Client, demo_store: InMemoryMemoryStore) -> None:
    response = dana.get(reverse("dashboard:export_jsonl") + "?" + urlencode({"scope": "tenant=acme"}))
    body = b"".join(response.streaming_content).decode()  # type: ignore[attr-defined]
    lines = [json.loads(line) for line in body.splitlines()]
    assert lines and all(is_subset_match(line["scope"], DANA) for line in lines)
    assert len(lines) == demo_store.count_records(DANA).live
