"""Bad query parameters get a 400 with a readable message (or just work), never a 500."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from django.test import Client
from django.urls import reverse

from memory_admin.store import InMemoryMemoryStore
from tests.dashboard.conftest import MakeClient

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}
ACME = "tenant=acme"


@pytest.fixture
def viewer(client_for: MakeClient, demo_store: InMemoryMemoryStore) -> Client:
    return client_for("viewer", ACME)


BAD_BROWSE = [
    pytest.param({"scope": ACME, "colour": "red"}, "Unknown parameter: colour", id="unknown-key"),
    pytest.param({"scope": "tenant"}, "needs the form key=value", id="scope-without-equals"),
    pytest.param({"scope": "user=dana"}, "needs a non-blank tenant", id="scope-without-tenant"),
    pytest.param({"scope": "Tenant=acme"}, "scope keys look like", id="scope-bad-key"),
    pytest.param({"scope": "tenant=acme,tenant=globex"}, "given twice", id="scope-duplicate-key"),
    pytest.param({"scope": "tenant=" + "a" * 2000}, "at most 1000 characters", id="scope-huge"),
    pytest.param({"scope": ACME, "as_of": "2026-13-45"}, "Enter a valid date/time", id="as-of-malformed"),
    pytest.param({"scope": ACME, "as_of": "yesterday"}, "Enter a valid date/time", id="as-of-words"),
    pytest.param({"scope": ACME, "q": "x" * 10_000}, "at most 500 characters", id="query-huge"),
    pytest.param({"scope": ACME, "q": "nul\x00byte"}, "Null characters are not allowed", id="query-nul"),
    pytest.param({"scope": ACME, "kind": "secret"}, "Select a valid choice", id="kind-unknown"),
    pytest.param({"scope": ACME, "match": "everything"}, "Select a valid choice", id="match-unknown"),
    pytest.param({"scope": ACME, "tag": "t" * 65}, "at most", id="tag-huge"),
    pytest.param({"scope": ACME, "key": "two words"}, "must not contain spaces", id="key-with-space"),
    pytest.param({"scope": ACME, "after": "not-a-cursor"}, "not one this store issued", id="cursor-garbage"),
    pytest.param({"scope": ACME, "after": "r12.x"}, "not one this store issued", id="cursor-truncated"),
    pytest.param({"scope": ACME, "after": "o5"}, "belongs to a different listing", id="cursor-ranked-for-recency"),
    pytest.param({"scope": ACME, "after": "r" + "9" * 199}, "", id="cursor-huge-number"),
    pytest.param({"scope": ACME, "after": "c" * 201}, "at most 200 characters", id="cursor-too-long"),
]


@pytest.mark.parametrize(("params", "message"), BAD_BROWSE)
@pytest.mark.parametrize("htmx", [False, True], ids=["page", "fragment"])
def test_bad_browse_parameters_are_400(viewer: Client, params: dict[str, str], message: str, htmx: bool) -> None:
    response = viewer.get(reverse("dashboard:browse") + "?" + urlencode(params), **(HTMX if htmx else {}))
    html = response.content.decode()
    assert response.status_code == 400, html[:2000]
    assert message in html
    assert ("<html" in html) is not htmx


@pytest.mark.parametrize(
    "query",
    [
        '"unbalanced',
        "seat AND (window OR",
        "NEAR(aisle seat, 2)",
        "travel* -espresso ^start",
        "tags:travel content:seat",
        "{content tags} : aisle",
        "'; DROP TABLE memory_records; --",
        "…—✓ 日本語 émigré",
        "***",
    ],
)
def test_search_text_is_never_syntax(viewer: Client, query: str) -> None:
    response = viewer.get(reverse("dashboard:browse") + "?" + urlencode({"scope": ACME, "q": query}))
    assert response.status_code == 200


def test_syntax_looking_query_still_matches_words(viewer: Client) -> None:
    response = viewer.get(reverse("dashboard:browse") + "?" + urlencode({"scope": ACME, "q": "NEAR(aisle"}))
    assert "Dana prefers aisle seats on every flight" in response.content.decode()


@pytest.mark.parametrize(
    "params",
    [
        pytest.param({"scope": "tenant"}, id="malformed"),
        pytest.param({"scope": ACME, "q": "seat"}, id="unknown-key"),
        pytest.param({"scope": "x" * 5000}, id="huge"),
    ],
)
def test_bad_scope_page_parameters_are_400(viewer: Client, params: dict[str, str]) -> None:
    response = viewer.get(reverse("dashboard:scope") + "?" + urlencode(params))
    assert response.status_code == 400
    assert 'role="alert"' in response.content.decode()


@pytest.mark.parametrize(
    "record_id",
    ["x" * 65, "mem_<script>", "..", "mem_0001;drop", "%00"],
)
def test_odd_record_ids_are_404(viewer: Client, record_id: str) -> None:
    response = viewer.get(f"/records/{record_id}/")
    assert response.status_code == 404


def test_store_errors_map_to_http(
    viewer: Client, monkeypatch: pytest.MonkeyPatch, demo_store: InMemoryMemoryStore
) -> None:
    from memory_admin.errors import MemoryBusyError, MemoryCorruptionError

    def busy(*args: object, **kwargs: object) -> None:
        raise MemoryBusyError("locked for 30s")

    monkeypatch.setattr(demo_store, "list_records", busy)
    response = viewer.get(reverse("dashboard:browse") + "?scope=tenant=acme")
    assert response.status_code == 503 and "The memory store is busy" in response.content.decode()

    def corrupt(*args: object, **kwargs: object) -> None:
        raise MemoryCorruptionError("mem_bad", {"id": "mem_bad"}, "kind: bad value")

    monkeypatch.setattr(demo_store, "list_records", corrupt)
    response = viewer.get(reverse("dashboard:browse") + "?scope=tenant=acme")
    assert response.status_code == 500 and "mem_bad" in response.content.decode()


@pytest.mark.parametrize(
    ("url_name", "role"),
    [
        ("dashboard:recall", "viewer"),
        ("dashboard:recall", "admin"),
        ("dashboard:audit", "curator"),
        ("dashboard:audit", "admin"),
        ("dashboard:audit_export_csv", "curator"),
    ],
)
@pytest.mark.parametrize("before", ["9" * 30, str(2**63)])
def test_a_page_cursor_past_every_stored_id_is_400(
    client_for: MakeClient, demo_store: InMemoryMemoryStore, url_name: str, role: str, before: str
) -> None:
    response = client_for(role, ACME).get(reverse(url_name) + "?" + urlencode({"scope": ACME, "before": before}))
    assert response.status_code == 400, response.content.decode()[:2000]
    assert "less than or equal to 9223372036854775807" in response.content.decode()
