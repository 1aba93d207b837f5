"""Both branches of a filter page whose scope is outside the user's grants: the page and
its fragment keep the form and say why beside the scope field (404, never which)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from memory_admin.store import InMemoryMemoryStore
from tests.dashboard.conftest import MakeClient

pytestmark = pytest.mark.usefixtures("demo_store")

PAGES = ["dashboard:browse", "dashboard:recall", "dashboard:health", "dashboard:scope", "dashboard:recall_preview"]


@pytest.mark.parametrize("name", PAGES)
@pytest.mark.parametrize("htmx", [False, True], ids=["page", "fragment"])
def test_a_scope_outside_the_grants_is_a_form_error(
    client_for: MakeClient, demo_store: InMemoryMemoryStore, name: str, htmx: bool
) -> None:
    viewer = client_for("viewer", "tenant=acme")
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    response = viewer.get(reverse(name), {"scope": "tenant=globex"}, **headers)
    body = response.content.decode()
    assert response.status_code == 404
    assert ("<html" in body) is not htmx
    assert 'name="scope"' in body and 'aria-invalid="true"' in body
    assert "Scope tenant=globex does not exist, or is outside the scopes you may see." in body
    assert "HX-Retarget" not in response  # the region itself carries the error


def test_a_fragment_clears_the_error_region(client_for: MakeClient) -> None:
    viewer = client_for("viewer", "tenant=acme")
    fragment = viewer.get(reverse("dashboard:browse"), HTTP_HX_REQUEST="true").content.decode()
    assert fragment.endswith('<div id="htmx-error" hx-swap-oob="innerHTML"></div>')
    page = viewer.get(reverse("dashboard:browse")).content.decode()
    assert page.count('id="htmx-error"') == 1 and "hx-swap-oob" not in page


@pytest.mark.parametrize("htmx", [False, True], ids=["page", "fragment"])
def test_browse_counts_its_rows(client_for: MakeClient, demo_store: InMemoryMemoryStore, htmx: bool) -> None:
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    viewer = client_for("viewer", "tenant=acme")
    body = viewer.get(reverse("dashboard:browse"), {"scope": "tenant=acme,user=dana"}, **headers).content.decode()
    every = demo_store.count_records({"tenant": "acme", "user": "dana"})
    live = every.total - every.invalidated - every.expired
    assert f"<strong>1–{live} of {live}</strong>" in body
    assert f"{live} live of {every.total} — {every.invalidated} invalidated, {every.expired} expired, hidden" in body


def test_a_plain_request_with_empty_parameters_is_redirected_without_them(client_for: MakeClient) -> None:
    viewer = client_for("viewer", "tenant=acme")
    response = viewer.get("/?scope=tenant%3Dacme&q=&tag=&key=&as_of=&kind=fact&kind=")
    assert response.status_code == 302 and response["Location"] == "/?scope=tenant%3Dacme&kind=fact"
    assert viewer.get("/recall/?scope=&agent=")["Location"] == "/recall/"
    # htmx requests are left alone (the page's script never sends empty fields)
    assert viewer.get("/?scope=tenant%3Dacme&q=", HTTP_HX_REQUEST="true").status_code == 200


@pytest.mark.parametrize("htmx", [False, True], ids=["page", "fragment"])
def test_admins_get_a_health_overview_of_every_tenant(client_for: MakeClient, htmx: bool) -> None:
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    body = client_for("admin").get(reverse("dashboard:health"), **headers).content.decode()
    assert 'id="tenant-overview"' in body
    for tenant in ("acme", "globex", "initech"):
        assert f'href="/health/?scope=tenant%3D{tenant}"' in body
    # a tenant-limited user picks from their grants instead
    viewer = client_for("viewer", "tenant=acme", "tenant=globex").get(reverse("dashboard:health"), **headers)
    assert 'id="tenant-overview"' not in viewer.content.decode()
