"""The health (gardening) page: each check over the demo corpus, its bounds, the sweep
action, corrupt rows in a real SQLite file, and the pure checks against brute force."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse
from django.utils.http import urlencode

from memory_admin.dashboard.models import AuditEntry
from memory_admin.events import MemorySearchEvent
from memory_admin.reports import health
from memory_admin.store import InMemoryMemoryStore, SqliteMemoryStore
from memory_admin.store.sqlite import terms
from tests.dashboard.conftest import MakeClient, find

pytestmark = pytest.mark.django_db


def health_url(scope: str) -> str:
    return reverse("dashboard:health") + "?" + urlencode({"scope": scope})


@pytest.fixture
def officer(client_for: MakeClient, demo_store: InMemoryMemoryStore) -> Client:
    return client_for("privacy-officer", "tenant=acme", "tenant=globex", "tenant=initech")


# --- over the demo ------------------------------------------------------------------------


def test_demo_findings(officer: Client, demo_store: InMemoryMemoryStore) -> None:
    globex = officer.get(health_url("tenant=globex")).content.decode()
    assert 'Near-duplicate live records <span class="count">1</span>' in globex
    assert "86 %" in globex and "pointed to the status page" in globex and "sent to the status page" in globex
    acme = officer.get(health_url("tenant=acme")).content.decode()
    assert "<code><bdi>diet</bdi></code> in <code>tenant=acme,user=mei</code> — across kinds" in acme
    assert 'Expired, not yet swept <span class="count">3</span>' in acme and "Sweep 3 expired records" in acme
    assert "<code>tenant=acme,user=dana</code>: " in acme and "do not fit the profile slice" in acme
    assert "deferred on every recall" not in acme, "a message that matches them brings them in"
    unused = acme[acme.index('id="h-unused"') : acme.index('id="h-profile"')]
    # the window is said, and the demo's marker — written after the last recall — is too new to judge
    assert "Window checked:" in unused and "too new to judge" in unused
    assert "The demo corpus (v3) was loaded" not in unused
    initech = officer.get(health_url("tenant=initech")).content.decode()
    assert 'No usable provenance <span class="count">1</span>' in initech
    assert "The staging cluster is rebuilt every Sunday night." in initech and "via <bdi>unknown</bdi>" in initech
    assert 'Rows that fail validation <span class="count">0</span>' in initech


def test_never_recalled_is_what_no_recall_injected(officer: Client, demo_store: InMemoryMemoryStore) -> None:
    recalled = {
        record_id
        for stored in demo_store.query_events(
            {"types": ["agent.memory.recall"], "scope": {"tenant": "acme"}, "limit": 1000}
        )
        for record_id in stored.event.record_ids  # type: ignore[union-attr]
    }
    html = officer.get(health_url("tenant=acme,user=ravi")).content.decode()
    refunds = find(demo_store, "tenant=acme,user=ravi", "refunds endpoint")
    agenda = find(demo_store, "tenant=acme,user=ravi", "agenda")
    assert refunds.id in recalled and agenda.id not in recalled
    section = html[html.index('id="h-unused"') : html.index('id="h-profile"')]
    assert agenda.id in section and refunds.id not in section


def test_page_and_fragment(officer: Client) -> None:
    page = officer.get(health_url("tenant=acme"))
    fragment = officer.get(health_url("tenant=acme"), HTTP_HX_REQUEST="true")
    assert page.status_code == fragment.status_code == 200 and "HX-Request" in fragment["Vary"]
    assert "<html" in page.content.decode() and fragment.content.decode().lstrip().startswith('<div id="health"')


def test_scans_are_bounded_and_say_so(officer: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(health, "LIVE_SCAN", 5)
    html = officer.get(health_url("tenant=acme")).content.decode()
    assert "Checked 5 of 43 live records — a bounded scan" in html


def test_several_grants_pick_a_scope_and_bad_scopes_are_400(officer: Client) -> None:
    assert "Pick a scope to start" in officer.get(reverse("dashboard:health")).content.decode()
    assert officer.get(health_url("user=dana")).status_code == 400


def test_actions_follow_the_role(client_for: MakeClient, demo_store: InMemoryMemoryStore) -> None:
    viewer = client_for("viewer", "tenant=acme").get(health_url("tenant=acme")).content.decode()
    curator = client_for("curator", "tenant=acme").get(health_url("tenant=acme")).content.decode()
    assert "Sweep 3" not in viewer and "invalidate…" not in viewer and "A privacy officer can sweep them" in viewer
    assert "Sweep 3" not in curator and "invalidate…" in curator


def test_a_sweep_takes_the_swept_records_words_out_of_every_reason(
    client_for: MakeClient, demo_store: InMemoryMemoryStore
) -> None:
    expired = find(demo_store, "tenant=acme,user=mei", "covering Ravi's code reviews")
    demo_store.write(
        [{"scope": {"tenant": "acme"}, "kind": "fact", "content": "Lunch is at noon.", "provenance": {"source": "t"}}]
    )
    curator = client_for("curator", "tenant=acme")
    lunch = find(demo_store, "tenant=acme", "Lunch is at noon")
    said = "Mei covers reviews now"  # another record's entry naming what the expired one said
    assert curator.post(reverse("dashboard:invalidate_run", args=[lunch.id]), {"reason": said}).status_code == 303
    officer = client_for("privacy-officer", "tenant=acme")
    assert officer.post(reverse("dashboard:sweep"), {"scope": "tenant=acme"}).status_code == 303
    assert demo_store.get(expired.id) is None
    assert AuditEntry.objects.get(action="invalidate").reason == "[forgotten] covers [forgotten] now"


def test_sweep_deletes_only_expired_records_under_the_scope(officer: Client, demo_store: InMemoryMemoryStore) -> None:
    before = {t: demo_store.count_records({"tenant": t}) for t in ("acme", "initech")}
    response = officer.post(reverse("dashboard:sweep"), {"scope": "tenant=acme"})
    assert response.status_code == 303 and response["Location"] == health_url("tenant=acme")
    after = demo_store.count_records({"tenant": "acme"})
    assert after.expired == 0 and after.total == before["acme"].total - 3 and after.live == before["acme"].live
    assert demo_store.count_records({"tenant": "initech"}) == before["initech"]  # another tenant's stay
    page = officer.get(response["Location"]).content.decode()
    assert "Swept 3 expired records" in page and 'Expired, not yet swept <span class="count">0</span>' in page
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.counts, entry.scope) == ("sweep", {"records": 3}, {"tenant": "acme"})
    bad = officer.post(reverse("dashboard:sweep"), {"scope": ""})
    assert bad.status_code == 303 and AuditEntry.objects.count() == 1


# --- corrupt rows in a real SQLite file ---------------------------------------------------


def test_a_corrupt_row_is_listed_and_can_be_deleted(
    sqlite_store: SqliteMemoryStore, tmp_path: Path, client_for: MakeClient
) -> None:
    u1 = {"tenant": "t", "user": "u1"}
    sqlite_store.write(
        [
            {"scope": u1, "kind": "fact", "content": f"Healthy fact {i}.", "provenance": {"source": "s"}}
            for i in range(3)
        ]
    )
    [victim] = sqlite_store.write(
        [{"scope": u1, "kind": "fact", "content": "Soon corrupt.", "provenance": {"source": "s"}}]
    )
    with sqlite3.connect(tmp_path / "memory.sqlite3") as raw:
        terms.register(raw)  # the index's update trigger computes its terms in Python
        raw.execute("UPDATE memory_records SET kind = 'belief' WHERE rid = (SELECT max(rid) FROM memory_records)")
    officer = client_for("privacy-officer", "tenant=t")
    response = officer.get(health_url("tenant=t"))
    html = response.content.decode()
    assert response.status_code == 200  # the report that finds corruption does not die of it
    assert 'Rows that fail validation <span class="count">1</span>' in html and victim.id in html
    assert "so the record checks could not run" in html
    delete_page = officer.get(reverse("dashboard:delete", args=[victim.id]))
    assert delete_page.status_code == 200 and "no longer validates" in delete_page.content.decode()
    assert (
        client_for("privacy-officer", "tenant=other").get(reverse("dashboard:delete", args=[victim.id])).status_code
        == 404
    )
    done = officer.post(
        reverse("dashboard:delete_run", args=[victim.id]), {"confirm_id": victim.id, "reason": "corrupt row"}
    )
    assert done.status_code == 303 and sqlite_store.find_corrupt(u1).corrupt == []
    assert (
        'Rows that fail validation <span class="count">0</span>' in officer.get(health_url("tenant=t")).content.decode()
    )


def test_events_dropped_by_a_writer_that_fell_behind_are_reported(
    officer: Client, demo_store: InMemoryMemoryStore
) -> None:
    html = officer.get(health_url("tenant=acme")).content.decode()
    assert 'Events missing from the log <span class="count">0</span>' in html and "None dropped." in html
    demo_store._commit_events([], 7)  # what a buffer that dropped seven events reports with its next batch
    html = officer.get(health_url("tenant=acme")).content.decode()
    assert 'Events missing from the log <span class="count">7</span>' in html and "7 events dropped" in html
    assert "withheld" not in html


def test_events_withheld_after_a_forgetting_are_reported_apart(
    officer: Client, demo_store: InMemoryMemoryStore
) -> None:
    [hit] = demo_store.search({"scope": {"tenant": "acme"}, "limit": 1}, emit_event=False)
    before = demo_store.event_log_stats()
    demo_store.delete(hit.record.id)
    demo_store.emit(MemorySearchEvent(  # a search that read it a moment before, on its way to the log
        at=hit.record.created_at, scope=hit.record.scope, query_preview="found it", count=1, limit=1,
        record_ids=[hit.record.id], duration_ms=0.1,
    ))  # fmt: skip
    demo_store.flush_events()
    missing = before.dropped + before.withheld + 1
    html = officer.get(health_url("tenant=acme")).content.decode()
    assert f'Events missing from the log <span class="count">{missing}</span>' in html
    assert "1 event withheld: it reached the log after a delete or erasure in its tenant" in html
