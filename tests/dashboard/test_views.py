"""Every htmx view as a full page and as a fragment, and what each shows."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import urlencode

import pytest
from django.test import Client
from django.urls import reverse

from memory_admin.store import InMemoryMemoryStore
from tests.dashboard.conftest import MakeClient, find

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


def browse_url(**params: str) -> str:
    return reverse("dashboard:browse") + ("?" + urlencode(params) if params else "")


def scope_url(scope: str) -> str:
    return reverse("dashboard:scope") + "?" + urlencode({"scope": scope})


def body(response: object) -> str:
    return response.content.decode()  # type: ignore[attr-defined,no-any-return]


@pytest.fixture
def admin(client_for: MakeClient, demo_store: InMemoryMemoryStore) -> Client:
    return client_for("admin")


# --- page and fragment ------------------------------------------------------------------


def test_browse_full_page(admin: Client) -> None:
    response = admin.get(browse_url(scope="tenant=acme,user=dana"))
    assert response.status_code == 200
    html = body(response)
    assert "<html" in html and 'id="browse"' in html
    assert "Dana has switched to green tea" in html
    assert "htmx" in html  # the vendored script is on the page
    assert "HX-Request" in response["Vary"]


def test_browse_fragment_is_the_region_only(admin: Client) -> None:
    response = admin.get(browse_url(scope="tenant=acme,user=dana"), **HTMX)
    assert response.status_code == 200
    html = body(response)
    assert "<html" not in html and "<header" not in html
    assert html.lstrip().startswith('<div id="browse"')
    assert "Dana has switched to green tea" in html
    assert "HX-Request" in response["Vary"]


def test_history_restore_gets_the_whole_page(admin: Client) -> None:
    response = admin.get(
        browse_url(scope="tenant=acme"), HTTP_HX_REQUEST="true", HTTP_HX_HISTORY_RESTORE_REQUEST="true"
    )
    assert response.status_code == 200 and "<html" in body(response)


def test_record_full_page_and_timeline_fragment(admin: Client, demo_store: InMemoryMemoryStore) -> None:
    record = find(demo_store, "tenant=acme,user=dana", "green tea")
    url = reverse("dashboard:record", args=[record.id])
    page = admin.get(url)
    assert page.status_code == 200
    assert "<html" in body(page) and 'class="fields"' in body(page)
    fragment = admin.get(url, **HTMX)
    assert fragment.status_code == 200
    html = body(fragment)
    assert "<html" not in html and 'class="fields"' not in html
    assert html.lstrip().startswith('<section id="timeline"')
    assert "HX-Request" in fragment["Vary"]


def test_scope_full_page_and_fragment(admin: Client) -> None:
    page = admin.get(scope_url("tenant=acme,user=dana"))
    assert page.status_code == 200 and "<html" in body(page)
    fragment = admin.get(scope_url("tenant=acme,user=dana"), **HTMX)
    assert fragment.status_code == 200
    assert "<html" not in body(fragment) and body(fragment).lstrip().startswith('<div id="summary"')
    assert "HX-Request" in fragment["Vary"]


# --- sign-in ----------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/", "/scopes/", "/records/mem_0001/"])
def test_anonymous_is_sent_to_sign_in(client: Client, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login") + "?next=")


def test_expired_session_sends_htmx_to_sign_in(client: Client) -> None:
    response = client.get(browse_url(scope="tenant=acme"), **HTMX)
    assert response.status_code == 200
    assert response["HX-Redirect"].startswith(reverse("login") + "?next=")


def test_sign_in_and_out(client: Client, client_for: MakeClient) -> None:
    client_for("viewer", "tenant=acme")  # user1
    assert client.get(reverse("login")).status_code == 200
    response = client.post(reverse("login"), {"username": "user1", "password": "pw-for-tests-only"})
    assert response.status_code == 302 and response["Location"] == reverse("dashboard:browse")
    assert client.get("/").status_code == 200
    assert client.post(reverse("logout")).status_code == 302
    assert client.get("/").status_code == 302


def test_wrong_password_is_refused(client: Client, client_for: MakeClient) -> None:
    client_for("viewer", "tenant=acme")
    response = client.post(reverse("login"), {"username": "user1", "password": "nope"})
    assert response.status_code == 200
    assert "Please enter a correct username and password" in body(response)


# --- browse -----------------------------------------------------------------------------


def test_facets_count_scope_values(admin: Client) -> None:
    html = body(admin.get(browse_url(scope="tenant=acme")))
    assert "Scopes within <code>tenant=acme</code>" in html
    for user in ("dana", "ravi", "mei"):
        assert f"scope=tenant%3Dacme%2Cuser%3D{user}" in html  # a facet link narrows the scope


def test_search_finds_words(admin: Client) -> None:
    html = body(admin.get(browse_url(scope="tenant=acme", q="aisle seat")))
    assert "Dana prefers aisle seats on every flight" in html
    assert "Dana drinks" not in html


def test_invalidated_hidden_unless_asked(admin: Client) -> None:
    assert "Dana owns the fraud-rules service" not in body(admin.get(browse_url(scope="tenant=acme,user=dana")))
    shown = body(admin.get(browse_url(scope="tenant=acme,user=dana", invalidated="1")))
    assert "Dana owns the fraud-rules service" in shown


def test_expired_hidden_unless_asked(admin: Client) -> None:
    text = "Dana is in Berlin for the payments offsite"
    assert text not in body(admin.get(browse_url(scope="tenant=acme,user=dana")))
    assert text in body(admin.get(browse_url(scope="tenant=acme,user=dana", expired="1")))


def test_kind_tag_and_key_filters(admin: Client) -> None:
    html = body(admin.get(browse_url(scope="tenant=acme,user=dana", kind="preference")))
    assert "green tea" in html and "staff engineer" not in html
    html = body(admin.get(browse_url(scope="tenant=acme,user=dana", tag="deploys")))
    assert "staging deploys" in html and "green tea" not in html
    html = body(admin.get(browse_url(scope="tenant=acme,user=dana", key="travel.*")))
    assert "aisle seats on every flight" in html and "green tea" not in html
    html = body(admin.get(browse_url(scope="tenant=acme,user=dana", key="drink")))
    assert "green tea" in html and "aisle" not in html


def test_more_filters_open_when_one_is_in_use_or_wrong(admin: Client) -> None:
    dana = "tenant=acme,user=dana"
    folded = body(admin.get(browse_url(scope=dana, q="tea")))
    assert '<details class="more-filters">' in folded and "in use" not in folded
    used = body(admin.get(browse_url(scope=dana, kind="preference", tag="deploys", expired="on")))
    assert '<details class="more-filters" open>' in used and "3 in use" in used
    response = admin.get(browse_url(scope=dana, as_of="2026-13-45"))
    assert response.status_code == 400
    assert '<details class="more-filters" open>' in body(response)  # the error is in view
    assert "1 in use" in body(response)


@pytest.mark.parametrize(
    ("path", "plain", "used", "count", "wrong"),
    [
        ("/learnings/", {"scope": "tenant=acme"}, {"agent": "support", "tier": "auto"}, 2, {"state": "nope"}),
        ("/audit/", {}, {"actor": "ada", "action": "erase"}, 2, {"until": "2026-13-45"}),
        ("/recall/", {"scope": "tenant=acme"}, {"agent": "support", "bucket": "day"}, 2, {"bucket": "minute"}),
        # a range the wrong way round: both ends are folded filters in use, so they show
        (
            "/learned/",
            {"scope": "tenant=acme"},
            {"since": "2026-01-05"},
            1,
            {"since": "2026-01-05", "until": "2026-01-04"},
        ),
        (
            "/recall/preview/",
            {"scope": "tenant=acme,user=dana", "message": "Book me a flight"},
            {"budget": "1500", "profile": "20"},
            2,
            {"profile": "101"},
        ),
        (
            "/compositions/prompt/",
            {"scope": "tenant=acme,agent=support"},
            {"as_of": "2026-12-01", "version": "c21f0823eb65"},
            2,
            {"as_of": "2026-13-45"},
        ),
    ],
    ids=["learnings", "audit", "recall", "learned", "preview", "composition"],
)
def test_other_filter_forms_fold_their_more_filters_too(
    admin: Client, path: str, plain: dict[str, str], used: dict[str, str], count: int, wrong: dict[str, str]
) -> None:
    folded = body(admin.get(path, plain))
    assert '<details class="more-filters">' in folded and "in use" not in folded
    assert '<details class="more-filters" open>' in body(admin.get(path, {**plain, **used}))
    assert f"{count} in use" in body(admin.get(path, {**plain, **used}))
    response = admin.get(path, {**plain, **wrong})
    assert response.status_code == 400
    assert '<details class="more-filters" open>' in body(response)  # the error is in view


def test_as_of_shows_what_was_believed(admin: Client, demo_store: InMemoryMemoryStore) -> None:
    decaf = find(demo_store, "tenant=acme,user=dana", "decaf")
    moment = (decaf.created_at + timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M")
    html = body(admin.get(browse_url(scope="tenant=acme,user=dana", key="drink", as_of=moment)))
    assert "decaf oat flat white" in html and "green tea" not in html


def test_visible_match_shows_shared_and_own(admin: Client) -> None:
    html = body(admin.get(browse_url(scope="tenant=acme,user=dana", match="visible")))
    assert "Acme freezes production deploys" in html  # tenant-wide
    assert "green tea" in html  # dana's own
    assert "Ravi is the owner of the refunds endpoint" not in html  # not another user's


def test_paging_walks_every_record_once(admin: Client, settings: object, demo_store: InMemoryMemoryStore) -> None:
    settings.DASHBOARD_PAGE_SIZE = 4  # type: ignore[attr-defined]
    seen: list[str] = []
    url = browse_url(scope="tenant=acme", invalidated="1", expired="1")
    for _ in range(30):
        response = admin.get(url, **HTMX)
        assert response.status_code == 200
        html = body(response)
        seen += [part.split('/"')[0] for part in html.split('href="/records/')[1:]]
        if 'rel="next"' not in html:
            break
        url = "/" + html.split('rel="next"')[0].rsplit('href="', 1)[1].split('"')[0].replace("&amp;", "&")
    expected = demo_store.count_records({"tenant": "acme"}).total
    assert len(seen) == expected and len(set(seen)) == expected


def test_ranked_results_page_too(admin: Client, settings: object) -> None:
    settings.DASHBOARD_PAGE_SIZE = 2  # type: ignore[attr-defined]
    first = body(admin.get(browse_url(scope="tenant=acme", q="Dana")))
    assert 'rel="next"' in first and "after=o2" in first
    second = admin.get(browse_url(scope="tenant=acme", q="Dana", after="o2"))
    assert second.status_code == 200 and "First page" in body(second)


def test_empty_results_explain_what_to_try(admin: Client) -> None:
    html = body(admin.get(browse_url(scope="tenant=acme,user=dana", q="zeppelin")))
    assert "No records match" in html and "Include invalidated records" in html


def test_admin_without_scope_picks_a_tenant(admin: Client) -> None:
    html = body(admin.get(browse_url()))
    assert "Pick a scope to start" in html
    for tenant in ("acme", "globex", "initech"):
        assert f"tenant={tenant}</code>" in html


def test_empty_store_says_how_to_fill_it(client_for: MakeClient, monkeypatch: pytest.MonkeyPatch) -> None:
    from django.conf import settings

    from memory_admin.dashboard import stores

    monkeypatch.setitem(stores._stores, settings.MEMORY_STORE_URL, InMemoryMemoryStore())
    html = body(client_for("admin").get(browse_url()))
    assert "The memory store is empty" in html and "memory_demo" in html


# --- record page ------------------------------------------------------------------------


def test_record_shows_every_field(admin: Client, demo_store: InMemoryMemoryStore) -> None:
    record = find(demo_store, "tenant=acme,agent=support", "halved refund handling")
    html = body(admin.get(reverse("dashboard:record", args=[record.id])))
    for expected in (
        record.id,
        "agent=support",
        "episode",
        "via <bdi>support-agent</bdi>",
        "judgment_domain",
        "refunds",
    ):
        assert expected in html
    assert "Read-only" not in html  # another record's payload
    assert "Ask for the six-letter booking reference first" in html  # this payload


def test_chain_timeline_versions_reasons_and_diff(admin: Client, demo_store: InMemoryMemoryStore) -> None:
    latest = find(demo_store, "tenant=acme,user=dana", "green tea")
    html = body(admin.get(reverse("dashboard:record", args=[latest.id])))
    timeline = html.split('id="timeline"')[1]
    assert "4 versions" in timeline
    for version in ("Dana drinks espresso, no milk.", "an oat flat white in the mornings.", "a decaf "):
        assert version in timeline
    assert timeline.count("superseded") >= 3
    assert "<ins>" in timeline and "<del>" in timeline
    last = timeline.split('<li class="version')[-1]
    assert "current" in last.split(">")[0]
    assert "<ins>has switched to green tea; " in last and "<del>drinks a decaf " in last


def test_deleted_version_is_a_tombstone(admin: Client, demo_store: InMemoryMemoryStore) -> None:
    current = find(demo_store, "tenant=acme,user=mei", "corporate Amex")
    assert current.supersedes is not None and demo_store.get(current.supersedes) is None
    html = body(admin.get(reverse("dashboard:record", args=[current.id])))
    assert "Deleted version" in html and current.supersedes in html
    assert "4421" not in html


def test_invalidated_fact_shows_its_reason(admin: Client, demo_store: InMemoryMemoryStore) -> None:
    record = find(demo_store, "tenant=globex", "within 4 hours")
    html = body(admin.get(reverse("dashboard:record", args=[record.id])))
    assert "Contract renewed" in html and "invalidated" in html


# --- scope page -------------------------------------------------------------------------


def test_scope_counts_and_profile_overflow(admin: Client, demo_store: InMemoryMemoryStore) -> None:
    counts = demo_store.count_records({"tenant": "acme", "user": "dana"})
    html = body(admin.get(scope_url("tenant=acme,user=dana")))
    assert f'<th scope="row">Total</th><td>{counts.total}</td>' in html
    assert f'<th scope="row">Expired</th><td>{counts.expired}</td>' in html
    assert "do not fit the profile slice" in html and "unless its message matches them" in html
    assert "Most recent writes" in html


def test_scope_profile_fits(admin: Client) -> None:
    html = body(admin.get(scope_url("tenant=acme,user=ravi")))
    assert "Fits: every profile record enters the recall block" in html
    assert "do not fit the profile slice" not in html


def test_scope_page_without_scope_lists_choices(admin: Client) -> None:
    html = body(admin.get(reverse("dashboard:scope")))
    assert "Pick a scope to start" in html and "tenant=globex" in html


def test_selected_facet_can_be_removed(admin: Client) -> None:
    html = body(admin.get(browse_url(scope="tenant=acme,user=dana")))
    assert 'aria-label="Remove user=dana from the scope"' in html
    assert "scope=tenant%3Dacme&amp;" in html or 'scope=tenant%3Dacme"' in html
    assert 'aria-label="Remove tenant=acme' not in html


def test_a_record_as_of_shows_its_state_and_chain_then(admin: Client, demo_store: InMemoryMemoryStore) -> None:
    espresso = find(demo_store, "tenant=acme,user=dana", "Dana drinks espresso, no milk.")
    assert espresso.invalid_at is not None and espresso.superseded_by
    url = reverse("dashboard:record", args=[espresso.id])
    assert 'id="as-of-banner"' not in body(admin.get(url))
    before = espresso.invalid_at - timedelta(minutes=1)
    html = body(admin.get(url + f"?as_of={before:%Y-%m-%dT%H:%M}"))
    banner = html.split('id="as-of-banner"')[1].split("</p>")[0]
    assert f"{before:%Y-%m-%d %H:%M} UTC" in banner and "Show the record now" in banner
    head = html.split('<header class="page-head">')[1].split("</header>")[0]
    assert "badge-live" in head and "superseded" not in head  # its state then, not now
    assert f'class="version current then" id="v-{espresso.id}"' in html
    assert f"/records/{espresso.superseded_by}/?as_of={before:%Y-%m-%dT%H:%M}" in html  # the chain keeps the moment
    after = espresso.invalid_at + timedelta(minutes=1)
    html = body(admin.get(url + f"?as_of={after:%Y-%m-%dT%H:%M}"))
    note = html.split('id="as-of-version"')[1].split("</p>")[0]
    assert espresso.superseded_by in note and "version live" in note
    earlier = espresso.created_at - timedelta(days=1)
    html = body(admin.get(url + f"?as_of={earlier:%Y-%m-%dT%H:%M}"))
    assert "badge-unwritten" in html and "this record was written later" in html
    bad = admin.get(url + "?as_of=yesterday")
    assert (
        bad.status_code == 400 and "Enter a valid date/time" in bad.content.decode() and "<nav" in bad.content.decode()
    )
    assert admin.get(url + "?bogus=1").status_code == 400


def test_browse_as_of_links_records_at_the_same_moment(admin: Client, demo_store: InMemoryMemoryStore) -> None:
    decaf = find(demo_store, "tenant=acme,user=dana", "decaf")
    moment = (decaf.created_at + timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M")
    html = body(admin.get(browse_url(scope="tenant=acme,user=dana", key="drink", as_of=moment)))
    assert f'href="/records/{decaf.id}/?as_of={moment}"' in html


def test_an_erased_scope_says_so_once(officer: Client, demo_store: InMemoryMemoryStore) -> None:
    demo_store.erase({"tenant": "acme", "user": "mei"})
    html = body(officer.get(browse_url(scope="tenant=acme,user=mei")))
    assert html.count('class="empty"') == 1 and 'id="nothing-stored"' in html
    assert "No records match" not in html and "Scopes within" not in html
