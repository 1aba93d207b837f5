"""Real-browser checks that every page holds up: a bad filter renders its error inside
the page (nav, form and styles stay), and every page fits a 375 px phone without
sideways scrolling while 1366 px stays laid out as before.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest

from memory_admin.store import InMemoryMemoryStore
from tests.dashboard.conftest import expect, opened_page, sign_in
from tests.dashboard.pages import every_page

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page


pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


VIEWPORT = {"width": 1366, "height": 900}
"""The ``page`` fixture's (conftest): a common laptop's."""


@pytest.fixture
def phone(browser: Browser, site: str) -> Iterator[Page]:
    with opened_page(browser, site, viewport={"width": 375, "height": 800}) as tab:
        yield tab


# --- 1. a bad filter never wipes the page ---------------------------------------------

FORMS = [
    pytest.param("/", "Apply", id="browse"),
    pytest.param("/recall/", "Show", id="recall"),
    pytest.param("/health/", "Check", id="health"),
    pytest.param("/scopes/", "Show", id="scopes"),
    pytest.param("/recall/preview/", "Run the preview", id="preview"),
]


def assert_error_in_layout(page: Page, text: str) -> None:
    """The error shows in the page's error region, next to a form that still works."""
    error = page.locator("[role=alert]").filter(has_text=text)
    expect(error).to_be_visible()
    assert page.locator("header.topbar nav").is_visible()  # the nav survived the swap
    assert page.get_by_label("Scope", exact=True).is_visible()  # so did the form
    # and the stylesheet still applies (an unstyled page has a white, not dark, bar)
    bar = page.locator("header.topbar").evaluate("el => getComputedStyle(el).backgroundColor")
    assert bar == "rgb(29, 35, 43)"


@pytest.mark.parametrize(
    ("user", "scope", "error"),
    [("ada", "acme", "key=value"), ("vera", "tenant=globex", "outside the scopes you may see")],
    ids=["malformed", "outside-the-grants"],
)
@pytest.mark.parametrize(("path", "button"), FORMS)
def test_a_bad_scope_shows_its_error_inside_the_page(
    page: Page, path: str, button: str, user: str, scope: str, error: str
) -> None:
    sign_in(page, user)
    page.goto(path)
    page.get_by_label("Scope", exact=True).fill(scope)
    page.get_by_role("button", name=button, exact=True).click()
    assert_error_in_layout(page, error)
    # the form still works afterwards: a good scope replaces the error
    page.get_by_label("Scope", exact=True).fill("tenant=acme")
    page.get_by_role("button", name=button, exact=True).click()
    expect(page.locator("[role=alert]").filter(has_text=error)).to_have_count(0)


def test_a_full_page_error_stays_styled(page: Page) -> None:
    sign_in(page, "vera")
    page.goto("/records/mem_missing/")
    expect(page.locator("#error")).to_contain_text("outside the scopes you may see")
    assert page.locator("header.topbar nav").is_visible()
    assert page.locator("#error").evaluate("el => getComputedStyle(el).borderRadius") == "8px"  # a card
    for query in ("scope=tenant%3Dglobex", "scope=acme"):  # reloading a bad filter: the page, with its form
        page.goto(f"/?{query}")
        assert_error_in_layout(page, "key=value" if "acme" in query else "outside the scopes")


def test_an_htmx_error_goes_to_the_error_region_and_the_next_answer_clears_it(page: Page) -> None:
    sign_in(page, "vera")
    page.goto("/?scope=tenant%3Dacme%2Cuser%3Ddana")
    record = page.locator("section.results td.content a").first.get_attribute("href")
    # a viewer asking for a curator's form, as an htmx request aimed at the browser region
    page.evaluate("url => htmx.ajax('GET', url, {target: '#browse', swap: 'outerHTML'})", f"{record}invalidate/")
    expect(page.locator("#htmx-error [role=alert]")).to_contain_text("needs the curator role")
    assert page.get_by_label("Scope", exact=True).is_visible()  # the region that asked is untouched
    page.get_by_label("Search").fill("tea")
    page.get_by_label("Search").press("Enter")
    page.wait_for_url(re.compile(r"q=tea"))
    expect(page.locator("#htmx-error")).to_be_empty()


# --- 2. every page at 375 px and at 1366 px -------------------------------------------


def page_width(page: Page) -> int:
    return int(page.evaluate("document.documentElement.scrollWidth"))


# the elements whose right edge passes the viewport, outermost first (for the failure message)
OVERFLOWING = """() => [...document.querySelectorAll("body *")]
  .filter(el => el.getBoundingClientRect().right > window.innerWidth + 0.5)
  .filter(el => !el.closest("[data-scrolls]") || el.matches("[data-scrolls]"))
  .slice(0, 6)
  .map(el => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "")
    + (el.className ? "." + String(el.className).replace(/ /g, ".") : "")
    + " " + Math.round(el.getBoundingClientRect().right))"""


def overflowing(page: Page) -> list[str]:
    return [str(item) for item in page.evaluate(OVERFLOWING)]


def test_every_page_fits_a_375_px_phone(phone: Page, demo_store: InMemoryMemoryStore) -> None:
    urls = [url for _name, url in every_page(demo_store)]
    sign_in(phone, "ada")
    too_wide = {}
    for url in urls:
        phone.goto(url)
        if url == "/accounts/login/":
            continue  # signed in already: it shows the browser
        if page_width(phone) > 375:
            too_wide[url] = overflowing(phone)
        # every nav entry, the user's name and Sign out stay on the dark bar, on screen
        bar = phone.locator("header.topbar").bounding_box()
        assert bar is not None
        for item in phone.locator("header.topbar a, header.topbar .who span, header.topbar button").all():
            box = item.bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 375, url
            assert box["y"] >= bar["y"] and box["y"] + box["height"] <= bar["y"] + bar["height"] + 1, url
    assert too_wide == {}


def test_every_page_still_fits_1366_px(page: Page, demo_store: InMemoryMemoryStore) -> None:
    urls = [url for _name, url in every_page(demo_store)]
    sign_in(page, "ada")
    for url in urls:
        page.goto(url)
        assert page_width(page) <= 1366, url
        # the nav stays one row on a laptop
        assert page.locator("header.topbar").evaluate("el => el.getBoundingClientRect().height") < 60, url


def test_the_sign_in_page_fits_a_phone(phone: Page) -> None:
    phone.goto("/accounts/login/")
    assert page_width(phone) <= 375


# --- 3. counts; 4. as-of --------------------------------------------------------------


def test_browse_says_how_many_and_what_it_hides(page: Page, settings: Any, demo_store: InMemoryMemoryStore) -> None:
    settings.DASHBOARD_PAGE_SIZE = 5
    every = demo_store.count_records({"tenant": "acme", "user": "dana"})
    live = every.total - every.invalidated - every.expired
    sign_in(page, "ada")
    page.goto("/?scope=tenant%3Dacme%2Cuser%3Ddana")
    count = page.locator("#listing-count")
    expect(count).to_contain_text(f"1–5 of {live}")
    expect(count).to_contain_text(
        f"{live} live of {every.total} — {every.invalidated} invalidated, {every.expired} expired, hidden"
    )
    # the facet panel counts every state: its number is the "of" above
    dana = page.locator(".facet li.selected", has_text="dana").locator(".count")
    assert dana.inner_text() == str(every.total)
    page.get_by_role("link", name="Next page »").click()
    expect(count).to_contain_text(f"6–10 of {live}")
    count.get_by_role("link", name="show invalidated").click()
    expect(count).to_contain_text(f"1–5 of {every.total - every.expired}")
    assert page.locator("section.results tbody tr").count() == 5


def test_as_of_shows_the_past_and_says_so(page: Page, demo_store: InMemoryMemoryStore) -> None:
    from tests.dashboard.conftest import find
    from tests.dashboard.pages import as_of_text

    espresso = find(demo_store, "tenant=acme,user=dana", "Dana drinks espresso, no milk.")
    assert espresso.invalid_at is not None
    moment = espresso.invalid_at - timedelta(minutes=1)
    sign_in(page, "ada")
    page.goto("/?scope=tenant%3Dacme%2Cuser%3Ddana")
    expect(page.locator("#as-of-banner")).to_have_count(0)
    field = page.get_by_label("As of (UTC)")
    assert field.get_attribute("type") == "text"  # never a locale-formatted 12-hour picker
    field.fill(moment.strftime("%Y-%m-%d %H:%M"))
    page.get_by_role("button", name="Apply").click()
    banner = page.locator("#as-of-banner")
    expect(banner).to_contain_text(f"{moment:%Y-%m-%d %H:%M} UTC")
    expect(banner).to_contain_text("The past")
    row = page.locator("section.results tbody tr", has_text="Dana drinks espresso, no milk.")
    expect(row.locator(".badge")).to_have_text("live")  # as it was then, not "superseded" as now
    assert page.get_by_label("As of (UTC)").input_value() == moment.strftime("%Y-%m-%d %H:%M")
    later = as_of_text(espresso.invalid_at + timedelta(minutes=1))
    page.goto(f"/?scope=tenant%3Dacme%2Cuser%3Ddana&invalidated=1&as_of={later}")
    row = page.locator("section.results tbody tr", has_text="Dana drinks espresso, no milk.")
    expect(row.locator(".badge")).to_have_text("superseded")
    banner.get_by_role("link", name="Show memory now").click()
    expect(page.locator("#as-of-banner")).to_have_count(0)


# --- 5. after a correction; a refused delete ------------------------------------------


def test_a_correction_names_the_new_record_in_the_breadcrumb_and_title(
    page: Page, demo_store: InMemoryMemoryStore
) -> None:
    from tests.dashboard.conftest import find

    record = find(demo_store, "tenant=acme,user=ravi", "back from leave")
    sign_in(page, "cora")
    page.goto(f"/records/{record.id}/")
    expect(page).to_have_title(re.compile(record.id))
    page.get_by_role("link", name="Correct…").click()  # opens in place (htmx)
    page.get_by_label("Corrected content").fill("Ravi works on Berlin time, Monday to Friday.")
    page.get_by_label("Reason").fill("Ravi went back to five days.")
    page.get_by_role("button", name="Write the correction").click()
    expect(page.locator("#notice")).to_contain_text("Corrected")
    page.wait_for_url(re.compile(r"/records/mem_\w+/$"))
    new_id = page.url.rstrip("/").rsplit("/", 1)[1]
    assert new_id != record.id
    expect(page.locator("nav.crumbs [aria-current=page]")).to_have_text(new_id)
    expect(page).to_have_title(re.compile(new_id))
    assert page.locator("nav.crumbs").count() == 1


def test_a_refused_delete_does_not_leave_the_address_bar_on_run(page: Page, demo_store: InMemoryMemoryStore) -> None:
    from tests.dashboard.conftest import find

    record = find(demo_store, "tenant=acme,user=dana", "oat flat white in the mornings")
    sign_in(page, "pat")
    page.goto(f"/records/{record.id}/delete/")
    page.get_by_label(re.compile("Type the record id")).fill("mem_nope")
    page.get_by_label("Reason").fill("GDPR request 41")
    page.get_by_role("button", name="Delete the record").click()
    expect(page.locator("[role=alert]")).to_contain_text("not the id of this record")
    assert page.url.endswith(f"/records/{record.id}/delete/")  # not …/delete/run/
    assert page.get_by_label("Reason").input_value() == "GDPR request 41"  # what was typed is kept
    page.reload()  # no resubmission: a fresh form
    expect(page.locator("[role=alert]")).to_have_count(0)
    assert demo_store.get(record.id) is not None


# --- 6. smaller -------------------------------------------------------------------------

EMPTY = re.compile(r"[?&][a-z_]+=(&|$)")


@pytest.mark.parametrize("javascript", [True, False], ids=["htmx", "no-js"])
def test_urls_carry_no_empty_parameters(browser: Browser, site: str, javascript: bool) -> None:
    with opened_page(browser, site, java_script_enabled=javascript) as tab:
        sign_in(tab, "ada")
        tab.goto("/?scope=tenant%3Dacme")
        tab.get_by_label("Search").fill("aisle")
        tab.get_by_role("button", name="Apply").click()
        tab.wait_for_url(re.compile(r"q=aisle"))
        expect(tab.locator("section.results")).to_contain_text("aisle seats")
        assert not EMPTY.search(tab.url), tab.url
        links = tab.locator("section.results a[href*='?'], .facets a[href*='?']")
        for href in [links.nth(i).get_attribute("href") for i in range(links.count())]:
            assert href is not None and not EMPTY.search(href), href


def test_recall_buckets_apply_on_change(page: Page) -> None:
    sign_in(page, "ada")
    page.goto("/recall/")
    page.get_by_label("Buckets").select_option("day")
    page.wait_for_url(re.compile(r"bucket=day"))
    expect(page.locator("#buckets-heading")).to_have_text("By day")


# --- 7. health --------------------------------------------------------------------------


def test_health_overview_and_the_recall_window(page: Page, demo_store: InMemoryMemoryStore) -> None:
    sign_in(page, "ada")
    page.goto("/health/")
    overview = page.locator("#tenant-overview")
    rows = overview.locator("tbody tr")
    expect(rows).to_have_count(3)  # acme, globex, initech
    acme = rows.filter(has_text="tenant=acme")
    counts = demo_store.count_records({"tenant": "acme"})
    cells = acme.locator("td")
    assert cells.nth(1).inner_text() == str(counts.total) and cells.nth(2).inner_text() == str(counts.live)
    acme.get_by_role("link", name="tenant=acme").click()
    page.wait_for_url(re.compile(r"/health/\?scope=tenant%3Dacme$"))
    window = page.locator("#recall-window")
    expect(window).to_contain_text("Window checked:")
    expect(window).to_contain_text("too new to judge")
    # the demo's marker record is written after the last recall: not a candidate for invalidation
    expect(page.locator("#h-unused")).not_to_contain_text("The demo corpus (v3) was loaded")


# --- 8. the recall preview's accounting, readable charts ---------------------------------


def test_the_preview_accounts_for_the_profile_summary(page: Page) -> None:
    sign_in(page, "ada")
    page.goto("/recall/preview/")
    page.get_by_label("Scope", exact=True).fill("tenant=acme,user=dana")
    page.get_by_label("Budget (characters)").fill("1500")
    page.get_by_label("First user message").fill("Book me a flight to Berlin next week")
    page.get_by_role("button", name="Run the preview").click()
    expect(page.locator("#unread")).to_contain_text("profile.summary")
    deferred = page.locator("#deferred-heading + p + .table-box table tbody tr").count()
    block = page.locator("pre.block").inner_text()
    assert f"[… {deferred} more memories did not fit the recall budget]" in block
    expect(page.locator("#deferred-heading + p")).to_contain_text(f"counts exactly these {deferred}")


CHART_FACTS = """() => {
  const chart = Chart.getChart(document.getElementById("chart-truncation"));
  const chars = Chart.getChart(document.getElementById("chart-chars"));
  const data = JSON.parse(document.getElementById("recall-series").textContent);
  const one = data.recalls.findIndex(n => n > 0 && n < data.small_sample);
  const empty = data.empty.indexOf(true);
  const label = chart.options.plugins.tooltip.callbacks.label;
  const ticks = chart.scales.x.ticks.filter(t => t.label !== "").length;
  return {
    width: chart.width, main: document.querySelector("main").clientWidth,
    xTitle: chart.options.scales.x.title.text, yTitle: chart.options.scales.y.title.text,
    charsY: chars.options.scales.y.title.text,
    budgetStyle: chars.data.datasets.find(d => d.label === "budget").pointStyle,
    usePointStyle: chars.options.plugins.legend.labels.usePointStyle,
    legends: chars.legend.legendItems.map(i => i.text),
    emptyMark: chart.data.datasets.find(d => d.label === "no recalls").data[empty],
    emptyBar: chart.data.datasets[0].data[empty],
    small: label({dataIndex: one, formattedValue: "100", dataset: chart.data.datasets[0]}),
    buckets: data.labels.length, ticks: ticks,
  };
}"""


def test_recall_charts_are_readable(page: Page) -> None:
    sign_in(page, "ada")
    page.goto("/recall/?bucket=6h")
    expect(page.locator("html[data-charts]")).to_have_count(1)
    facts = page.evaluate(CHART_FACTS)
    assert facts["width"] > 0.9 * (facts["main"] - 60)  # the chart spans the page
    assert "UTC" in facts["xTitle"] and "6 hours" in facts["xTitle"]
    assert facts["yTitle"] == "% of recalls truncated" and facts["charsY"] == "characters per recall"
    assert facts["budgetStyle"] == "line" and facts["usePointStyle"] is True  # the legend draws a dashed line
    assert {"budget", "largest block", "no recalls"} <= set(facts["legends"])
    assert facts["emptyMark"] == 0 and facts["emptyBar"] is None  # an empty bucket is marked, not a 0 % bar
    assert re.fullmatch(r"\d+ of \d truncated", facts["small"])  # a small sample in counts, no bare %
    assert facts["buckets"] > 10 and facts["ticks"] >= 8  # thinned evenly, not down to four
    # the table gives counts too
    expect(page.locator("#buckets-heading ~ .table-box table tbody tr").first).to_contain_text(" of ")
    # four summary cards on one row at 1366 px
    tops = page.locator(".cards.totals .stat").evaluate_all("cards => cards.map(c => c.getBoundingClientRect().top)")
    assert len(set(tops)) == 1


def test_audit_ids_link_and_the_log_filters(page: Page, demo_store: InMemoryMemoryStore) -> None:
    from tests.dashboard.conftest import find

    record = find(demo_store, "tenant=acme,user=dana", "green tea")
    sign_in(page, "cora")
    page.goto(f"/records/{record.id}/")
    page.get_by_role("link", name="Invalidate…").click()
    page.get_by_label("Reason").fill("Dana stopped drinking tea.")
    page.get_by_role("button", name="Invalidate the record").click()
    link = page.locator("#notice").get_by_role("link", name=re.compile(r"audit entry #\d+"))
    link.click()  # the notice's audit id is a link to the entry
    page.wait_for_url(re.compile(r"/audit/\d+/$"))
    page.goto("/audit/")
    page.get_by_label("What").select_option("erase")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url(re.compile(r"action=erase"))
    expect(page.get_by_role("heading", name="No entries match")).to_be_visible()
    page.get_by_label("What").select_option("invalidate")
    page.get_by_label("Who").fill("cora")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url(re.compile(r"actor=cora"))
    expect(page.locator("table.audit tbody tr")).to_have_count(1)
    row = page.locator("table.audit tbody tr")
    expect(row).to_contain_text("Dana stopped drinking tea.")
    row.get_by_role("link", name=record.id).click()  # record ids link to their records
    page.wait_for_url(re.compile(rf"/records/{record.id}/$"))


# --- the recall inspector: ranks, replay now; the audit export; a record as of a moment --


def test_the_preview_explains_ranks_at_375_px(phone: Page) -> None:
    sign_in(phone, "ada")
    phone.goto("/recall/preview/?scope=tenant%3Dacme%2Cuser%3Ddana&message=Book+me+a+flight+to+Berlin+next+week")
    hits = phone.locator("#in-heading ~ .table-box td.why", has_text="hits")
    expect(hits.first).to_contain_text("matched")
    expect(hits.first).to_contain_text(re.compile(r"score \d+\.\d\d"))
    expect(phone.locator("#others-heading")).to_contain_text("under this scope")
    assert page_width(phone) <= 375, overflowing(phone)


@pytest.mark.parametrize("javascript", [True, False], ids=["htmx", "no-js"])
def test_replay_now_diffs_without_logging(
    browser: Browser, site: str, demo_store: InMemoryMemoryStore, javascript: bool
) -> None:
    from memory_admin.events import MemoryRecallEvent

    stored = next(
        s
        for s in demo_store.query_events(
            {"types": ["agent.memory.recall"], "scope": {"tenant": "acme", "user": "dana"}}
        )
        if isinstance(s.event, MemoryRecallEvent) and s.event.record_ids
    )
    assert isinstance(stored.event, MemoryRecallEvent)
    demo_store.invalidate(stored.event.record_ids[-1], "out of date")
    logged = len(demo_store.query_events({"limit": 10_000, "include_previews": True}))
    with opened_page(browser, site, java_script_enabled=javascript, viewport={"width": 375, "height": 800}) as tab:
        sign_in(tab, "ada")
        tab.goto(f"/recall/events/{stored.id}/")
        tab.get_by_role("button", name="Replay now").click()
        tab.wait_for_url(re.compile(r"replay=1"))
        expect(tab.locator("#replay-summary")).to_contain_text("no longer in")
        expect(tab.locator("#replay-removed")).to_contain_text("invalidated since")
        expect(tab.locator("#replay-removed")).to_contain_text(stored.event.record_ids[-1])
        expect(tab.locator("#event")).to_have_count(1)  # swapped into the page, not over it
        assert page_width(tab) <= 375, overflowing(tab)
        assert len(demo_store.query_events({"limit": 10_000, "include_previews": True})) == logged


def test_a_record_as_of_a_moment(phone: Page, demo_store: InMemoryMemoryStore) -> None:
    from tests.dashboard.conftest import find

    espresso = find(demo_store, "tenant=acme,user=dana", "Dana drinks espresso, no milk.")
    assert espresso.invalid_at is not None
    moment = espresso.invalid_at - timedelta(minutes=1)
    sign_in(phone, "ada")
    phone.goto(f"/records/{espresso.id}/")
    expect(phone.locator("#as-of-banner")).to_have_count(0)
    expect(phone.locator("header.page-head .badge")).to_have_text("superseded")
    field = phone.get_by_label("As of (UTC)")
    assert field.get_attribute("type") == "text"
    field.fill(moment.strftime("%Y-%m-%d %H:%M"))
    phone.get_by_role("button", name="Show").click()
    expect(phone.locator("#as-of-banner")).to_contain_text(f"{moment:%Y-%m-%d %H:%M} UTC")
    expect(phone.locator("header.page-head .badge")).to_have_text("live")  # as it was then
    expect(phone.locator(f"#v-{espresso.id}")).to_contain_text("live at the as-of time")
    assert page_width(phone) <= 375, overflowing(phone)
    phone.locator("#as-of-banner").get_by_role("link", name="Show the record now").click()
    expect(phone.locator("#as-of-banner")).to_have_count(0)
    expect(phone.locator("header.page-head .badge")).to_have_text("superseded")


def test_the_audit_export_downloads_the_filtered_log(page: Page, demo_store: InMemoryMemoryStore) -> None:
    import csv
    import io
    from pathlib import Path

    from memory_admin.dashboard.models import AuditEntry

    every_page(demo_store)  # one invalidation by "ada"
    sign_in(page, "ada")
    page.goto("/audit/")
    page.get_by_label("What").select_option("invalidate")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url(re.compile(r"action=invalidate"))
    with page.expect_download() as download:
        page.locator("#audit-export").get_by_role("link", name="CSV").click()
    rows = list(csv.DictReader(io.StringIO(Path(download.value.path()).read_text())))
    assert rows and {row["action"] for row in rows} == {"invalidate"}
    assert download.value.suggested_filename.startswith("audit-every-tenant-")
    [noted] = AuditEntry.objects.filter(action=AuditEntry.Action.EXPORT_AUDIT)
    assert noted.counts["entries"] == len(rows) and noted.actor == "ada"
