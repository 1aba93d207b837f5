"""Grant confinement for every view: in-grant, out-of-grant, no grant, no role."""

from __future__ import annotations

import re
from urllib.parse import urlencode

import pytest
from django.test import Client
from django.urls import reverse

from memory_admin.dashboard.demo import CORPUS_VERSION
from memory_admin.dashboard.permissions import Ability, Access, AmbiguousScope, NotVisible
from memory_admin.store import InMemoryMemoryStore
from tests.dashboard.conftest import MakeClient, find

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}
GLOBEX_SECRET = "Sam wants shift handovers"
RAVI_FACT = "Ravi is the owner of the refunds endpoint"


def browse(client: Client, htmx: bool = False, **params: str) -> tuple[int, str]:
    response = client.get(reverse("dashboard:browse") + "?" + urlencode(params), **(HTMX if htmx else {}))
    return response.status_code, response.content.decode()


def scope_page(client: Client, scope: str, htmx: bool = False) -> tuple[int, str]:
    # follow: an empty scope is redirected to the page without the parameter
    response = client.get(
        reverse("dashboard:scope") + "?" + urlencode({"scope": scope}), follow=True, **(HTMX if htmx else {})
    )
    return response.status_code, response.content.decode()


def record_page(client: Client, record_id: str, htmx: bool = False) -> tuple[int, str]:
    response = client.get(reverse("dashboard:record", args=[record_id]), **(HTMX if htmx else {}))
    return response.status_code, response.content.decode()


# --- in grant ---------------------------------------------------------------------------


@pytest.mark.parametrize("htmx", [False, True], ids=["page", "fragment"])
def test_in_grant_everything_shows(acme_viewer: Client, demo_store: InMemoryMemoryStore, htmx: bool) -> None:
    status, html = browse(acme_viewer, htmx, scope="tenant=acme,user=ravi")
    assert status == 200 and RAVI_FACT in html
    status, html = scope_page(acme_viewer, "tenant=acme", htmx)
    assert status == 200 and "Most recent writes" in html
    record = find(demo_store, "tenant=acme,user=ravi", "refunds endpoint")
    status, html = record_page(acme_viewer, record.id, htmx)
    assert status == 200 and RAVI_FACT in html


def test_single_grant_is_the_starting_scope(acme_viewer: Client) -> None:
    status, html = browse(acme_viewer)
    assert status == 200 and "Scopes within <code>tenant=acme</code>" in html
    assert f"The demo corpus ({CORPUS_VERSION}) was loaded" in html


def test_facets_never_name_other_tenants(acme_viewer: Client) -> None:
    _, html = browse(acme_viewer, scope="tenant=acme")
    assert "globex" not in html and "initech" not in html


# --- out of grant -----------------------------------------------------------------------


@pytest.mark.parametrize("htmx", [False, True], ids=["page", "fragment"])
def test_out_of_grant_is_404_everywhere(acme_viewer: Client, demo_store: InMemoryMemoryStore, htmx: bool) -> None:
    for status, html in (
        browse(acme_viewer, htmx, scope="tenant=globex"),
        browse(acme_viewer, htmx, scope="tenant=globex,user=sam", q="handovers"),
        browse(acme_viewer, htmx, scope="tenant=globex", match="visible"),
        scope_page(acme_viewer, "tenant=globex,user=sam", htmx),
        record_page(acme_viewer, find(demo_store, "tenant=globex,user=sam", "open priority tickets").id, htmx),
    ):
        assert status == 404
        assert GLOBEX_SECRET not in html and "globex" not in html.lower().replace("tenant=globex", "")
        assert "outside the scopes you may see" in html
        assert ("<html" in html) is not htmx


def test_missing_and_forbidden_records_look_the_same(acme_viewer: Client, demo_store: InMemoryMemoryStore) -> None:
    foreign = find(demo_store, "tenant=globex,user=sam", "open priority tickets")
    status_foreign, html_foreign = record_page(acme_viewer, foreign.id)
    status_missing, html_missing = record_page(acme_viewer, "mem_00000000000000000000000000")
    assert status_foreign == status_missing == 404

    def normal(html: str, record_id: str) -> str:
        return re.sub(r"[A-Za-z0-9]{64}", "CSRF", html.replace(record_id, "X"))  # masked tokens differ

    assert normal(html_foreign, foreign.id) == normal(html_missing, "mem_00000000000000000000000000")


def test_user_grant_narrows_a_tenant_filter(dana_viewer: Client) -> None:
    status, html = browse(dana_viewer, scope="tenant=acme")
    assert status == 200
    assert "Narrowed to your grant" in html and "green tea" in html
    assert RAVI_FACT not in html
    assert "Acme freezes production deploys" not in html  # tenant-wide: outside a user grant


def test_user_grant_visible_match_drops_shared_records(dana_viewer: Client) -> None:
    status, html = browse(dana_viewer, scope="tenant=acme,user=dana", match="visible")
    assert status == 200 and "green tea" in html
    assert "Acme freezes production deploys" not in html


def test_user_grant_search_and_record_confined(dana_viewer: Client, demo_store: InMemoryMemoryStore) -> None:
    _, html = browse(dana_viewer, scope="tenant=acme", q="refunds endpoint Dana")
    assert RAVI_FACT not in html
    status, _ = browse(dana_viewer, scope="tenant=acme,user=ravi")
    assert status == 404
    status, _ = record_page(dana_viewer, find(demo_store, "tenant=acme,user=ravi", "refunds endpoint").id)
    assert status == 404
    status, _ = record_page(dana_viewer, find(demo_store, "tenant=acme", "Expense reports").id)
    assert status == 404


def test_user_grant_scope_page_counts_only_the_grant(dana_viewer: Client, demo_store: InMemoryMemoryStore) -> None:
    counts = demo_store.count_records({"tenant": "acme", "user": "dana"})
    status, html = scope_page(dana_viewer, "tenant=acme")
    assert status == 200 and f'<th scope="row">Total</th><td>{counts.total}</td>' in html
    assert "Acme Travel sells corporate travel" not in html  # a tenant-wide profile, outside the grant


def test_several_grants_ask_which(client_for: MakeClient, demo_store: InMemoryMemoryStore) -> None:
    client = client_for("viewer", "tenant=acme,user=dana", "tenant=acme,user=ravi")
    status, html = browse(client, scope="tenant=acme")
    assert status == 200 and "spans several of your grants" in html
    assert "tenant=acme,user=dana" in html and "tenant=acme,user=ravi" in html
    assert RAVI_FACT not in html and "green tea" not in html
    status, html = browse(client)
    assert "Pick a scope to start" in html


def test_timeline_hides_links_outside_the_grant() -> None:
    access = Access(
        username="x", role=None, abilities=frozenset({Ability.BROWSE}), grants=({"tenant": "acme", "user": "u1"},)
    )
    assert access.allows({"tenant": "acme", "user": "u1", "agent": "a"})
    assert not access.allows({"tenant": "acme"})
    assert not access.allows({"tenant": "acme", "user": "u10"})
    with pytest.raises(NotVisible):
        access.resolve({"tenant": "globex"})
    with pytest.raises(NotVisible):
        access.resolve({"tenant": "acme", "user": "u2"})
    assert access.resolve({"tenant": "acme"}).scope == {"tenant": "acme", "user": "u1"}
    wider = Access(
        username="y",
        role=None,
        abilities=frozenset({Ability.BROWSE}),
        grants=({"tenant": "acme", "user": "u1"}, {"tenant": "acme", "user": "u2"}),
    )
    with pytest.raises(AmbiguousScope):
        wider.resolve({"tenant": "acme"})


# --- no grant, no role --------------------------------------------------------------------


@pytest.mark.parametrize("htmx", [False, True], ids=["page", "fragment"])
def test_no_grant_sees_nothing(client_for: MakeClient, demo_store: InMemoryMemoryStore, htmx: bool) -> None:
    client = client_for("curator")
    status, html = browse(client, htmx)
    assert status == 200 and "No scopes granted yet" in html and "memory_user grant" in html
    status, html = browse(client, htmx, scope="tenant=acme")
    assert status == 404 and "green tea" not in html
    status, html = scope_page(client, "tenant=acme", htmx)
    assert status == 404
    status, html = scope_page(client, "", htmx)
    assert status == 200 and "No scopes granted yet" in html
    status, _ = record_page(client, find(demo_store, "tenant=acme,user=dana", "green tea").id, htmx)
    assert status == 404


@pytest.mark.parametrize("htmx", [False, True], ids=["page", "fragment"])
def test_an_account_without_a_role_gets_one_answer_on_every_page(
    client_for: MakeClient, demo_store: InMemoryMemoryStore, htmx: bool
) -> None:
    client = client_for(None, "tenant=acme")  # a grant, but no role
    record = find(demo_store, "tenant=acme,user=dana", "green tea").id
    event = demo_store.query_events({"limit": 1})[0].id
    scope = "?" + urlencode({"scope": "tenant=acme"})
    pages = [
        ("get", reverse("dashboard:browse")),
        ("get", reverse("dashboard:browse") + scope),
        ("get", reverse("dashboard:record", args=[record])),
        ("get", reverse("dashboard:scope") + scope),
        ("get", reverse("dashboard:invalidate", args=[record])),
        ("get", reverse("dashboard:delete", args=[record])),
        ("get", reverse("dashboard:erase") + scope),
        ("get", reverse("dashboard:recall")),
        ("get", reverse("dashboard:recall_event", args=[event])),
        ("get", reverse("dashboard:recall_preview")),
        ("get", reverse("dashboard:health")),
        ("get", reverse("dashboard:audit")),
        ("get", reverse("dashboard:audit_entry", args=[1])),
        ("get", reverse("dashboard:export_csv") + scope),
        ("get", reverse("dashboard:audit_export_jsonl")),
        ("post", reverse("dashboard:invalidate_run", args=[record])),
        ("post", reverse("dashboard:erase_run")),
        ("post", reverse("dashboard:sweep")),
    ]
    for method, url in pages:
        response = getattr(client, method)(url, **(HTMX if htmx else {}))
        html = response.content.decode()
        assert response.status_code == 403, url
        assert "has no dashboard role yet" in html and "memory-admin user role user1 viewer" in html, url
        assert "green tea" not in html and "Dana" not in html, url
    assert demo_store.get(record) is not None and demo_store.get(record).invalid_at is None  # type: ignore[union-attr]


def test_admin_sees_every_tenant(client_for: MakeClient, demo_store: InMemoryMemoryStore) -> None:
    client = client_for("admin")
    status, html = browse(client, scope="tenant=globex,user=sam")
    assert status == 200 and GLOBEX_SECRET in html
    status, _ = record_page(client, find(demo_store, "tenant=initech", "Python 3.12").id)
    assert status == 200


def test_superuser_is_admin(db: None, demo_store: InMemoryMemoryStore) -> None:
    from django.contrib.auth.models import User

    client = Client()
    client.force_login(User.objects.create_superuser("root", password="pw"))
    status, html = browse(client, scope="tenant=globex")
    assert status == 200 and "admin" in html
