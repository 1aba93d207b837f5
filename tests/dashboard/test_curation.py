"""Curation and privacy through the dashboard: invalidate and correct (both visible in
the chain timeline), delete one record, erase a scope through preview → confirmation →
receipt, and the audit log that records each — never the content."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client
from django.urls import reverse
from django.utils.http import urlencode

from memory_admin.dashboard.models import AuditEntry
from memory_admin.dashboard.redaction import hashed_scope
from memory_admin.scope import format_scope
from memory_admin.store import InMemoryMemoryStore
from tests.dashboard.conftest import MakeClient, find

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}
DANA = "tenant=acme,user=dana"


def audit_text() -> str:
    """Everything the audit log holds, as one string."""
    return repr(list(AuditEntry.objects.values()))


# --- invalidate ---------------------------------------------------------------------------


def test_invalidate_with_a_reason(curator: Client, demo_store: InMemoryMemoryStore) -> None:
    record = find(demo_store, DANA, "green tea")
    form = curator.get(reverse("dashboard:invalidate", args=[record.id]))
    assert form.status_code == 200
    page = form.content.decode()
    assert "What will happen" in page and record.content in page and 'name="reason"' in page
    response = curator.post(reverse("dashboard:invalidate_run", args=[record.id]), {"reason": "Dana is off tea again"})
    assert response.status_code == 303 and response["Location"] == reverse("dashboard:record", args=[record.id])
    stored = demo_store.get(record.id)
    assert stored is not None and stored.invalid_at is not None and stored.invalid_reason == "Dana is off tea again"
    timeline = curator.get(response["Location"]).content.decode()
    assert "Ended" in timeline and "Dana is off tea again" in timeline and "Invalidated." in timeline
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.outcome, entry.record_ids, entry.reason) == (
        "invalidate",
        "done",
        [record.id],
        "Dana is off tea again",
    )
    assert entry.scope == {"tenant": "acme", "user": "dana"} and entry.actor == "user1" and entry.role == "curator"
    assert record.content not in audit_text()


def test_invalidate_over_htmx_rerenders_the_record(curator: Client, demo_store: InMemoryMemoryStore) -> None:
    record = find(demo_store, DANA, "aisle seats on every flight")
    inline = curator.get(reverse("dashboard:invalidate", args=[record.id]), **HTMX).content.decode()
    assert "<html" not in inline and 'hx-post="' in inline and 'hx-target="#record"' in inline
    response = curator.post(reverse("dashboard:invalidate_run", args=[record.id]), {"reason": "knee healed"}, **HTMX)
    assert response.status_code == 200 and response["HX-Push-Url"] == reverse("dashboard:record", args=[record.id])
    html = response.content.decode()
    # the record region, led by the tab title htmx sets from it
    title = f"<title>Record {record.id} · memory_admin</title>"
    assert html.lstrip().startswith(f'{title}\n<article class="record" id="record"')
    assert 'id="timeline"' in html and "knee healed" in html and "badge-invalidated" in html


def test_a_reason_is_required(curator: Client, demo_store: InMemoryMemoryStore) -> None:
    record = find(demo_store, DANA, "green tea")
    url = reverse("dashboard:invalidate_run", args=[record.id])
    plain = curator.post(url, {"reason": "  "})
    assert plain.status_code == 400 and "Give a reason" in plain.content.decode()
    inline = curator.post(url, {"reason": ""}, **HTMX)
    assert inline.status_code == 400 and inline["HX-Retarget"] == "#action-form"
    assert demo_store.get(record.id).invalid_at is None  # type: ignore[union-attr]
    assert not AuditEntry.objects.exists()


def test_invalidating_twice_is_refused(curator: Client, demo_store: InMemoryMemoryStore) -> None:
    record = find(demo_store, DANA, "Dana owns the fraud-rules service")
    response = curator.post(reverse("dashboard:invalidate_run", args=[record.id]), {"reason": "again"})
    assert response.status_code == 400 and "already invalid" in response.content.decode()
    assert demo_store.get(record.id).invalid_reason.startswith("Wrong person")  # type: ignore[union-attr]


# --- correct by supersede -----------------------------------------------------------------


def test_correct_writes_a_superseding_version(curator: Client, demo_store: InMemoryMemoryStore) -> None:
    old = find(demo_store, DANA, "green tea")
    form = curator.get(reverse("dashboard:correct", args=[old.id])).content.decode()
    assert "supersedes" in form and old.content in form
    response = curator.post(
        reverse("dashboard:correct_run", args=[old.id]),
        {"content": "Dana drinks rooibos; no caffeine at all.", "reason": "Dana said so on 5 Jan"},
    )
    assert response.status_code == 303
    new_id = response["Location"].split("/")[-2]
    new = demo_store.get(new_id)
    assert new is not None and new.content == "Dana drinks rooibos; no caffeine at all."
    assert (new.supersedes, new.key, new.kind, new.scope, new.tags) == (old.id, old.key, old.kind, old.scope, old.tags)
    assert new.provenance.author == "user1" and new.provenance.source == "dashboard"
    entry = AuditEntry.objects.get()
    assert new.provenance.run_id == f"audit-{entry.pk}" and entry.record_ids == [old.id, new.id]
    retired = demo_store.get(old.id)
    assert retired is not None and retired.superseded_by == new.id and retired.content == old.content  # not edited
    page = curator.get(response["Location"]).content.decode()
    assert "5 versions" in page and "<del>has switched to green tea; </del><ins>drinks rooibos; </ins>" in page
    assert f"Written by <bdi>user1</bdi> · via <bdi>dashboard</bdi> · run <bdi>audit-{entry.pk}</bdi>" in page
    assert "rooibos" not in audit_text()


def test_correct_over_htmx_shows_the_new_version(curator: Client, demo_store: InMemoryMemoryStore) -> None:
    old = find(demo_store, DANA, "green tea")
    response = curator.post(
        reverse("dashboard:correct_run", args=[old.id]), {"content": "Dana drinks mate.", "reason": "r"}, **HTMX
    )
    assert response.status_code == 200
    assert response["HX-Push-Url"].startswith("/records/mem_") and old.id not in response["HX-Push-Url"]
    assert "Dana drinks mate." in response.content.decode() and "5 versions" in response.content.decode()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"content": "Dana has switched to green tea; no coffee at all.", "reason": "r"},
            "exactly what the record says",
        ),
        ({"content": "", "reason": "r"}, "required"),
        ({"content": "x" * 10_001, "reason": "r"}, "at most 10000"),
        ({"content": "Fine.", "reason": ""}, "Give a reason"),
    ],
)
def test_bad_corrections_change_nothing(
    curator: Client, demo_store: InMemoryMemoryStore, data: dict[str, str], message: str
) -> None:
    old = find(demo_store, DANA, "green tea")
    response = curator.post(reverse("dashboard:correct_run", args=[old.id]), data)
    assert response.status_code == 400 and message in response.content.decode()
    assert demo_store.get(old.id) == old and not AuditEntry.objects.exists()


def test_an_old_version_cannot_be_corrected(curator: Client, demo_store: InMemoryMemoryStore) -> None:
    first = find(demo_store, DANA, "espresso")
    page = curator.get(reverse("dashboard:record", args=[first.id])).content.decode()
    assert "Correct…" not in page and "its successor" in page
    response = curator.post(reverse("dashboard:correct_run", args=[first.id]), {"content": "Tea.", "reason": "r"})
    assert response.status_code == 400 and "no longer current" in response.content.decode()


def test_the_record_page_offers_actions_by_role(client_for: MakeClient, demo_store: InMemoryMemoryStore) -> None:
    record = find(demo_store, DANA, "green tea")
    url = reverse("dashboard:record", args=[record.id])
    viewer = client_for("viewer", "tenant=acme").get(url).content.decode()
    curator = client_for("curator", "tenant=acme").get(url).content.decode()
    officer = client_for("privacy-officer", "tenant=acme").get(url).content.decode()
    assert "Invalidate…" not in viewer and "Delete…" not in viewer
    assert "Invalidate…" in curator and "Correct…" in curator and "Delete…" not in curator
    assert "Invalidate…" in officer and "Delete…" in officer


# --- delete one record --------------------------------------------------------------------


def test_delete_asks_for_the_id_and_a_reason(officer: Client, demo_store: InMemoryMemoryStore) -> None:
    record = find(demo_store, "tenant=acme,user=dana", "oat flat white in the mornings")
    page = officer.get(reverse("dashboard:delete", args=[record.id])).content.decode()
    assert record.content in page and "content-free tombstone" in page and "Type the record id" in page
    url = reverse("dashboard:delete_run", args=[record.id])
    # a refusal is a redirect back to the form page (never a page at …/run/ that a reload
    # posts again), which shows the refused submission and its errors once
    wrong = officer.post(url, {"confirm_id": "mem_nope", "reason": "GDPR request 41"}, follow=True)
    assert wrong.redirect_chain == [(reverse("dashboard:delete", args=[record.id]), 303)]
    assert wrong.status_code == 400 and "not the id of this record" in wrong.content.decode()
    assert 'value="GDPR request 41"' in wrong.content.decode() or "GDPR request 41</textarea>" in wrong.content.decode()
    again = officer.get(reverse("dashboard:delete", args=[record.id]))
    assert again.status_code == 200 and "not the id of this record" not in again.content.decode()
    no_reason = officer.post(url, {"confirm_id": record.id, "reason": ""}, follow=True)
    assert no_reason.status_code == 400
    assert demo_store.get(record.id) is not None and not AuditEntry.objects.exists()
    done = officer.post(url, {"confirm_id": record.id, "reason": "GDPR request 41"})
    assert done.status_code == 303 and done["Location"].startswith("/audit/")
    assert demo_store.get(record.id) is None
    receipt = officer.get(done["Location"]).content.decode()
    assert "Receipt" in receipt and record.id in receipt and "GDPR request 41" in receipt and "1 record" in receipt
    assert record.content not in receipt and record.content not in audit_text()
    neighbour = find(demo_store, "tenant=acme,user=dana", "green tea")
    timeline = officer.get(reverse("dashboard:record", args=[neighbour.id])).content.decode()
    assert "Deleted version" in timeline and record.id in timeline and record.content not in timeline


# --- erase a scope ------------------------------------------------------------------------


@pytest.fixture
def lookalike(demo_store: InMemoryMemoryStore) -> str:
    """A neighbour whose scope value starts like Dana's: erasure must not touch it."""
    demo_store.write(
        [
            {
                "scope": {"tenant": "acme", "user": "dana2"},
                "kind": "fact",
                "content": "Dana2 keeps bees.",
                "provenance": {"source": "t"},
            }
        ]
    )
    return "Dana2 keeps bees."


def test_erase_preview_confirm_receipt(officer: Client, demo_store: InMemoryMemoryStore, lookalike: str) -> None:
    counts = demo_store.count_records({"tenant": "acme", "user": "dana"})
    events = demo_store.query_events({"scope": {"tenant": "acme", "user": "dana"}, "limit": 10_000})
    preview = officer.get(reverse("dashboard:erase") + "?" + urlencode({"scope": DANA})).content.decode()
    assert f'<th scope="row">Records</th><td>{counts.total}</td>' in preview
    assert f"<td>{len(events)}</td>" in preview
    assert (
        "<code>tenant=acme,user=dana</code>" in preview
        and "<code>tenant=acme,agent=planner,user=dana</code>" in preview
    )
    assert "user=dana2</code></li>" not in preview  # exactly the scopes that go
    assert demo_store.count_records({"tenant": "acme", "user": "dana"}) == counts  # a dry run
    confirm = officer.get(reverse("dashboard:erase_confirm") + "?" + urlencode({"scope": DANA})).content.decode()
    assert "Type the scope" in confirm and f"{counts.total} records" in confirm and "cannot be undone" in confirm
    url = reverse("dashboard:erase_run")
    mistyped = officer.post(
        url, {"scope": DANA, "confirm_scope": "tenant=acme", "reason": "Art. 17 request"}, follow=True
    )
    assert mistyped.redirect_chain[0][1] == 303 and mistyped.redirect_chain[0][0].startswith(
        reverse("dashboard:erase_confirm")
    )
    assert mistyped.status_code == 400 and "not the scope being erased" in mistyped.content.decode()
    assert demo_store.count_records({"tenant": "acme", "user": "dana"}) == counts
    done = officer.post(url, {"scope": DANA, "confirm_scope": " user=dana , tenant=acme ", "reason": "Art. 17 request"})
    assert done.status_code == 303
    assert demo_store.count_records({"tenant": "acme", "user": "dana"}).total == 0
    assert demo_store.query_events({"scope": {"tenant": "acme", "user": "dana"}, "limit": 10}) == []
    assert find(demo_store, "tenant=acme,user=dana2", "bees")  # the look-alike stays
    assert find(demo_store, "tenant=acme", "Expense reports")  # and the tenant-wide records
    receipt = officer.get(done["Location"]).content.decode()
    assert "Receipt: Erase a scope" in receipt and "<bdi>user1</bdi> (privacy officer)" in receipt
    assert f"{counts.total} records" in receipt and f"{len(events)} events" in receipt and "Art. 17 request" in receipt
    # the receipt names the scopes by keyed hashes of their values, never the values
    assert "tenant=acme,agent=planner,user=dana" not in receipt
    hashed = format_scope(hashed_scope({"tenant": "acme", "user": "dana", "agent": "planner"}))
    assert hashed.startswith("tenant=acme,agent=hmac:") and hashed in receipt
    entry = AuditEntry.objects.get(action="erase")
    assert entry.counts["records"] == counts.total and entry.counts["by_kind"]["profile"] == 12
    assert "green tea" not in audit_text() and "Dana Whitfield" not in audit_text()


def test_erase_of_an_empty_scope_says_so(officer: Client) -> None:
    html = officer.get(
        reverse("dashboard:erase") + "?" + urlencode({"scope": "tenant=acme,user=nobody"})
    ).content.decode()
    assert "nothing to erase" in html and "Continue to the confirmation" not in html


def test_erase_without_a_scope_asks_for_one(officer: Client) -> None:
    html = officer.get(reverse("dashboard:erase")).content.decode()
    assert 'name="scope"' in html and "Scope to erase" in html
    response = officer.post(reverse("dashboard:erase_run"), {"scope": "", "confirm_scope": "", "reason": "x"})
    assert response.status_code == 400 and "nothing was erased" in response.content.decode()


def test_the_scope_page_links_to_erase_for_privacy_officers(
    client_for: MakeClient, demo_store: InMemoryMemoryStore
) -> None:
    url = reverse("dashboard:scope") + "?" + urlencode({"scope": DANA})
    assert "Erase this scope" not in client_for("curator", "tenant=acme").get(url).content.decode()
    assert "Erase this scope" in client_for("privacy-officer", "tenant=acme").get(url).content.decode()


# --- the audit log ------------------------------------------------------------------------


def test_audit_log_lists_actions_newest_first(officer: Client, demo_store: InMemoryMemoryStore) -> None:
    record = find(demo_store, DANA, "green tea")
    officer.post(reverse("dashboard:invalidate_run", args=[record.id]), {"reason": "first"})
    officer.post(reverse("dashboard:sweep"), {"scope": "tenant=acme"})
    page = officer.get(reverse("dashboard:audit")).content.decode()
    html = page[page.index("<tbody>") :]  # the rows (the filter's action menu names every action too)
    assert html.index("sweep expired records") < html.index("invalidate a record")
    assert "first" in html and "3 records" in html  # the demo's three expired acme records
    assert officer.get(reverse("dashboard:audit"), **HTMX).content.decode().lstrip().startswith('<div id="log"')


def test_audit_log_pages_and_grants(client_for: MakeClient, demo_store: InMemoryMemoryStore) -> None:
    from memory_admin.dashboard.views import audit

    def entry(action: str, user: str, reason: str) -> None:
        scope = f'{{"tenant":"acme","user":"{user}"}}'
        at = "2026-01-05T09:00:00Z"
        AuditEntry.objects.create(
            at=at, actor="a", action=action, tenant="acme", scope_json=scope, reason=reason, outcome="done"
        )

    for i in range(5):
        entry("invalidate", "dana", f"reason {i}")
    entry("erase", "ravi", "ravi's erasure")
    dana_curator = client_for("curator", DANA)
    page_size = audit.PAGE
    try:
        audit.PAGE = 3
        first = dana_curator.get(reverse("dashboard:audit")).content.decode()
        assert first.count("reason ") == 3 and "ravi's erasure" not in first
        older = re.search(r'href="\?before=(\d+)"', first)
        assert older
        second = dana_curator.get(reverse("dashboard:audit") + f"?before={older.group(1)}").content.decode()
        assert second.count("reason ") == 2 and "Newest entries" in second
    finally:
        audit.PAGE = page_size
    assert dana_curator.get(reverse("dashboard:audit") + "?before=x").status_code == 400


def test_a_failed_action_is_audited_as_failed(
    curator: Client, demo_store: InMemoryMemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memory_admin.errors import MemoryBusyError

    record = find(demo_store, DANA, "green tea")

    def busy(*args: object, **kwargs: object) -> None:
        raise MemoryBusyError("The memory store is busy (locked by another writer).")

    monkeypatch.setattr(demo_store, "invalidate", busy)
    response = curator.post(reverse("dashboard:invalidate_run", args=[record.id]), {"reason": "try"})
    assert response.status_code == 503 and "busy" in response.content.decode()
    entry = AuditEntry.objects.get()
    assert entry.outcome == "failed" and "busy" in entry.error and entry.finished_at is not None


def test_erase_preview_lists_records_elsewhere_that_mention_the_person(
    officer: Client, demo_store: InMemoryMemoryStore
) -> None:
    preview = officer.get(reverse("dashboard:erase"), {"scope": "tenant=acme,user=mei"}).content.decode()
    assert "Other records that mention this scope" in preview
    dana = find(demo_store, "tenant=acme,user=dana", "Mei (ledger)")
    assert reverse("dashboard:record", args=[dana.id]) in preview
    assert preview.count('class="sample mentions"') == 1


@pytest.mark.parametrize("value", ["dana,", "x,team=ops", "50%", "a=b"])
def test_every_scope_the_store_holds_can_be_browsed_previewed_and_erased(
    officer: Client, demo_store: InMemoryMemoryStore, value: str
) -> None:
    """Scope values holding the text form's own syntax are escaped in every link and form,
    so they reach exactly their scope — never Dana's, never nothing."""
    from memory_admin.scope import format_scope

    odd = {"tenant": "acme", "user": value}
    [record] = demo_store.write(
        [{"scope": odd, "kind": "fact", "content": "Odd scope note.", "provenance": {"source": "t"}}]
    )
    text = format_scope(odd)
    browse = officer.get(reverse("dashboard:browse"), {"scope": text}).content.decode()
    assert "Odd scope note." in browse and "Dana" not in browse
    preview = officer.get(reverse("dashboard:erase"), {"scope": text}).content.decode()
    assert "Odd scope note." in preview and '<th scope="row">Records</th><td>1</td>' in preview
    done = officer.post(reverse("dashboard:erase_run"), {"scope": text, "confirm_scope": text, "reason": "asked"})
    assert done.status_code == 303
    assert demo_store.get(record.id) is None
    assert demo_store.count_records({"tenant": "acme", "user": "dana"}).total > 0, "Dana's records stay"


@pytest.mark.parametrize("htmx", [False, True], ids=["page", "fragment"])
def test_audit_log_filters(client_for: MakeClient, demo_store: InMemoryMemoryStore, htmx: bool) -> None:
    rows = [
        ("ann", "invalidate", '{"tenant":"acme","user":"dana"}', "2026-01-05T09:00:00Z", "dana one"),
        ("ann", "erase", '{"tenant":"acme","user":"ravi"}', "2026-01-06T09:00:00Z", "ravi two"),
        ("bob", "invalidate", '{"tenant":"acme","user":"dana"}', "2026-01-07T09:00:00Z", "dana three"),
        ("bob", "invalidate", '{"tenant":"globex"}', "2026-01-07T10:00:00Z", "globex four"),
    ]
    for actor, action, scope, at, reason in rows:
        tenant = json.loads(scope)["tenant"]
        AuditEntry.objects.create(
            at=at, actor=actor, action=action, tenant=tenant, scope_json=scope, reason=reason, outcome="done"
        )
    headers = HTMX if htmx else {}
    admin = client_for("admin")

    def shown(**params: str) -> set[str]:
        html = admin.get(reverse("dashboard:audit"), params, **headers).content.decode()
        return {reason for *_, reason in rows if reason in html}

    assert shown(actor="ann") == {"dana one", "ravi two"}
    assert shown(action="invalidate") == {"dana one", "dana three", "globex four"}
    assert shown(scope="tenant=acme,user=dana") == {"dana one", "dana three"}
    assert shown(scope="tenant=acme") == {"dana one", "ravi two", "dana three"}
    assert shown(since="2026-01-06 00:00", until="2026-01-07 09:30") == {"ravi two", "dana three"}
    assert shown(actor="bob", action="erase") == set()
    # a curator granted tenant=acme filters within it only
    curator = client_for("curator", "tenant=acme")
    html = curator.get(reverse("dashboard:audit"), {"actor": "bob"}, **headers).content.decode()
    assert "dana three" in html and "globex four" not in html
    bad = admin.get(reverse("dashboard:audit"), {"since": "yesterday"}, **headers)
    assert bad.status_code == 400 and 'name="since"' in bad.content.decode()
    # a scope outside the grants is a 404, as its export is, said beside the scope field
    outside = curator.get(reverse("dashboard:audit"), {"scope": "tenant=globex"}, **headers)
    assert outside.status_code == 404 and "globex four" not in outside.content.decode()
    assert 'name="scope"' in outside.content.decode() and "No entries match" not in outside.content.decode()
    assert curator.get(reverse("dashboard:audit_export_csv"), {"scope": "tenant=globex"}).status_code == 404
    dana_only = client_for("curator", DANA)  # a broader scope than the grant shows what the grant covers
    broader = dana_only.get(reverse("dashboard:audit"), {"scope": "tenant=acme"}, **headers).content.decode()
    assert "dana one" in broader and "ravi two" not in broader
