"""The dashboard in real Chromium under the settings people run — ``make run``'s
development settings and the production settings (:mod:`tests.dashboard.deployed`) —
never only the test settings: a refusal or a bad value keeps the page (its menu, its
stylesheet, the error beside its field) on every page, for every role, at 375 and
1366 px; and the pages tell the truth about what they show.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.dashboard.conftest import expect, opened_page, sign_in
from tests.dashboard.deployed import SETTINGS, Deployed, deployed
from tests.support.optional import needs_extra

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

pytestmark = [pytest.mark.browser, pytest.mark.slow]

DANA = "scope=tenant%3Dacme%2Cuser%3Ddana"
PHONE = {"width": 375, "height": 800}
LAPTOP = {"width": 1366, "height": 900}


@pytest.fixture(scope="module", params=SETTINGS)
def site(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployed]:
    if request.param == "dev":  # make run searches by meaning with the local model
        pytest.importorskip("onnxruntime", reason=needs_extra("semantic"))
    with deployed(request.param, tmp_path_factory.mktemp(f"deployed-{request.param}")) as running:
        yield running


@pytest.fixture
def console() -> list[str]:
    return []


def _tab(browser: Browser, site: Deployed, console: list[str], viewport: dict[str, int]) -> Iterator[Page]:
    with opened_page(browser, site.url, timeout_ms=15_000, viewport=viewport) as tab:
        tab.on("console", lambda message: console.append(f"{message.type}: {message.text}"))
        tab.on("pageerror", lambda error: console.append(f"pageerror: {error}"))
        yield tab
    broken = [line for line in console if "Content Security Policy" in line or line.startswith("pageerror")]
    assert broken == [], broken


@pytest.fixture
def page(browser: Browser, site: Deployed, console: list[str]) -> Iterator[Page]:
    yield from _tab(browser, site, console, LAPTOP)


@pytest.fixture
def phone(browser: Browser, site: Deployed, console: list[str]) -> Iterator[Page]:
    yield from _tab(browser, site, console, PHONE)


# --- what every answer keeps ------------------------------------------------------------

TOPBAR = "rgb(29, 35, 43)"  # the stylesheet's dark bar; an unstyled page has none


def layout_problems(page: Page) -> list[str]:
    """What is missing of the layout: the menu, the stylesheet, a page that fits."""
    problems = []
    if not page.locator("header.topbar nav").is_visible():
        problems.append("no menu")
    if page.locator("link[rel=stylesheet]").count() != 1:
        problems.append("no stylesheet link")
    elif page.locator("header.topbar").count() and (
        page.locator("header.topbar").evaluate("el => getComputedStyle(el).backgroundColor") != TOPBAR
    ):
        problems.append("unstyled")
    width = page.evaluate("window.innerWidth")
    if page.evaluate("document.documentElement.scrollWidth") > width:
        problems.append(f"wider than {width} px")
    return problems


def error_beside(page: Page, label: str, text: str | re.Pattern[str]) -> None:
    """The field labelled ``label`` (or matched by the CSS selector ``label`` when it
    starts with ``#``) says ``text`` right under it, and the page keeps its layout."""
    field = page.locator(label) if label.startswith("#") else page.get_by_label(label, exact=True)
    field_id = field.get_attribute("id")
    error = page.locator(f"#{field_id}-error")
    expect(error).to_contain_text(text)
    # the error shows as the page is parsed; measured before its stylesheet has loaded,
    # the boxes are the unstyled page's (under load the development server is slow to serve it)
    page.wait_for_load_state("load")
    field_box, error_box = field.bounding_box(), error.bounding_box()
    assert field_box is not None and error_box is not None
    gap = error_box["y"] - (field_box["y"] + field_box["height"])
    assert -1 <= gap < 40, f"the error under {label!r} is {gap:.0f} px from its field"
    assert field.get_attribute("aria-invalid") == "true"
    assert layout_problems(page) == []


# --- 1. a refusal never wipes the page --------------------------------------------------


def test_a_refused_invalidation_stays_in_the_record_page(page: Page, site: Deployed) -> None:
    sign_in(page, "cora")
    page.goto(f"/?{DANA}&q=green+tea&mode=keyword")
    page.locator("section.results td.content a").first.click()
    quote = page.locator("header.page-head blockquote.content").inner_text()
    page.get_by_role("link", name="Invalidate…").click()  # opens in place (htmx)
    page.get_by_label("Reason").fill(f"Out of date: {quote}")
    page.get_by_role("button", name="Invalidate the record").click()
    error_beside(page, "Reason", "quotes")
    expect(page.locator("header.page-head .badge")).to_have_text("live")  # nothing changed


@pytest.mark.parametrize(
    ("user", "scope", "text"),
    [("vera", "tenant=globex", "outside the scopes you may see"), ("ada", "acme", "key=value")],
    ids=["outside-the-grants", "malformed"],
)
def test_a_bad_scope_in_browse_stays_in_the_page(page: Page, user: str, scope: str, text: str) -> None:
    sign_in(page, user)
    page.goto("/")
    page.get_by_label("Scope", exact=True).fill(scope)
    page.get_by_role("button", name="Apply").click()
    error_beside(page, "Scope", text)
    page.get_by_label("Scope", exact=True).fill("tenant=acme")  # the form still works
    page.get_by_role("button", name="Apply").click()
    expect(page.locator("#id_scope-error")).to_have_count(0)
    expect(page.locator("#listing-count")).to_be_visible()


# --- 2. the erasure dry run's mentions name the person ------------------------------------


def test_the_erasure_dry_run_lists_records_that_name_the_person(page: Page) -> None:
    sign_in(page, "pat")
    page.goto("/scopes/erase/?scope=tenant%3Dacme%2Cuser%3Dmei")
    mentions = page.locator("ul.mentions li")
    expect(mentions.first).to_be_visible()
    texts = mentions.all_inner_texts()
    assert all("mei" in text.lower() for text in texts), texts  # by a word, never a neighbour by meaning
    assert not any("Ravi moved to Berlin" in text for text in texts), texts
    expect(mentions.first.locator("code.word")).to_have_text("mei")  # the word it names, shown
    page.goto(f"/scopes/erase/?{DANA}")  # nobody outside Dana's own scopes names her
    expect(page.locator("#no-mentions")).to_contain_text("No record in another scope")
    expect(page.locator("ul.mentions")).to_have_count(0)


# --- 4. a search returns what matches and says how many ----------------------------------


def listed(page: Page) -> int:
    text = page.locator("#listing-count strong").first.inner_text()
    found = re.search(r"of (\d+)", text)
    return int(found.group(1)) if found else 0


def test_a_search_returns_what_matches_and_says_how_many(page: Page, site: Deployed) -> None:
    from memory_admin import tuning

    sign_in(page, "ada")
    page.goto(f"/?{DANA}")
    live = listed(page)
    page.goto(f"/?{DANA}&q=aisle+seat&mode=keyword")
    by_words = listed(page)
    assert 0 < by_words < live
    expect(page.locator("#matched")).to_contain_text("matching")
    if not site.embeds:  # deploy.md's keyword-only store: asking for meaning is said beside "By"
        page.goto(f"/?{DANA}&q=aisle+seat&mode=semantic")
        error_beside(page, "By", "searches by words only")
        assert listed(page) == by_words
        return
    floor = tuning.RELEVANCE_FLOOR
    assert floor is not None
    for query, mode in (("aisle seat", "hybrid"), ("what does dana drink", "semantic")):
        page.goto(f"/?{DANA}&q={query.replace(' ', '+')}&mode={mode}")
        count = listed(page)
        assert 0 < count < live, f"{query!r} ({mode}) lists {count} of {live}: the whole scope"
        cells = page.locator("section.results td.match").all_inner_texts()
        for cell in cells:
            words = re.search(r"words ([\d.]+|–)", cell)
            meaning = re.search(r"meaning (-?[\d.]+)", cell)
            assert (words and words.group(1) != "–") or (meaning and float(meaning.group(1)) >= floor), cell
        if mode == "hybrid" and count > 1:  # a fusion weighs how much each record says
            assert any(re.search(r"length -?\d+\.\d\d", cell) for cell in cells), cells
        with page.expect_download() as download:
            page.locator("p.exports").get_by_role("link", name="CSV").click()
        rows = Path(download.value.path()).read_text().strip().splitlines()
        assert len(rows) - 1 == count, "the export holds exactly what matched"


# --- 3. one truncation story ---------------------------------------------------------------


def test_every_page_tells_one_truncation_story(page: Page) -> None:
    sign_in(page, "ada")
    page.goto(f"/scopes/?{DANA}")
    story = page.locator("#truncation").inner_text()
    told = re.search(r"Of the (\d+) recalls? logged here, (\d+) (?:was|were) truncated", story)
    assert told, story
    recalls, truncated = int(told.group(1)), int(told.group(2))
    assert "unless its message matches" in story and "every recall here is truncated" not in story
    page.goto(f"/recall/?{DANA}")
    expect(page.locator(".cards.totals .stat").nth(3)).to_contain_text(f"{truncated} of {recalls}")
    badges = page.locator("#events-heading ~ table tbody td[data-label=Truncated] .badge")
    assert badges.count() == truncated
    page.goto("/health/?scope=tenant%3Dacme")
    dana = page.locator("#h-profile li", has_text="tenant=acme,user=dana")
    expect(dana).to_contain_text(f"Of the {recalls} recall")
    expect(dana).to_contain_text(f"{truncated} {'was' if truncated == 1 else 'were'} truncated")
    expect(page.locator("#h-profile")).not_to_contain_text("deferred on every recall")


# --- 5. at 375 px the recall tables become cards ------------------------------------------

CARD_FACTS = """table => [...table.querySelectorAll("tbody tr")].slice(0, 5).map(row => ({
  display: getComputedStyle(row).display,
  content: (row.querySelector("td.content") || row).getBoundingClientRect().width,
  kinds: [...row.querySelectorAll(".kind")].map(k => k.getBoundingClientRect().height
    / parseFloat(getComputedStyle(k).lineHeight || "16")),
}))"""


def test_recall_tables_become_cards_on_a_phone(phone: Page) -> None:
    sign_in(phone, "ada")
    phone.goto(f"/recall/?{DANA}")
    phone.locator("#events-heading ~ table tbody tr a").first.click()
    phone.wait_for_url(re.compile(r"/recall/events/\d+/$"))
    for url in (phone.url, f"/recall/preview/?{DANA}&message=Book+me+a+flight+to+Berlin+next+week&budget=1500"):
        phone.goto(url)
        tables = phone.locator("#in-heading ~ .table-box table, #deferred-heading ~ .table-box table")
        assert tables.count() >= 1, url
        for table in tables.all():
            for row in table.evaluate(CARD_FACTS):
                assert row["display"] == "block", (url, row)  # a card, not a squeezed row
                assert row["content"] > 250, (url, row)  # the record reads across the card
                assert all(lines < 1.6 for lines in row["kinds"]), (url, row)  # "profile" on one line
        assert layout_problems(phone) == [], url


def test_the_browser_s_results_start_on_a_phone_s_first_screen(phone: Page, page: Page) -> None:
    sign_in(phone, "ada")
    phone.goto(f"/?{DANA}")
    first = phone.locator("section.results tbody tr").first
    box = first.bounding_box()
    assert box is not None and box["y"] + 60 < PHONE["height"], box  # a result shows before any scrolling
    more = phone.locator("details.more-filters")
    expect(phone.get_by_label("Tag", exact=True)).to_be_hidden()
    summary = more.locator("summary")
    expect(summary).to_have_text("More filters")
    summary.focus()  # a keyboard opens it
    phone.keyboard.press("Enter")
    phone.get_by_label("Match", exact=True).select_option("visible")  # swaps the results in
    phone.wait_for_url(re.compile(r"match=visible"))
    expect(more).to_have_attribute("open", "")  # left open as the person left it
    phone.get_by_label("Tag", exact=True).fill("travel")
    phone.get_by_role("button", name="Apply", exact=True).click()
    phone.wait_for_url(re.compile(r"tag=travel"))
    expect(more).to_have_attribute("open", "")  # a filter in use stays in view
    expect(summary).to_contain_text("1 in use")
    expect(phone.locator("section.results tbody tr")).not_to_have_count(0)
    for row in phone.locator("section.results tbody tr").all():
        expect(row).to_contain_text("#travel")
    assert layout_problems(phone) == []
    # a laptop shows every filter, nothing to unfold
    sign_in(page, "ada")
    page.goto(f"/?{DANA}")
    expect(page.locator("details.more-filters summary")).to_be_hidden()
    expect(page.get_by_label("Tag", exact=True)).to_be_visible()
    expect(page.get_by_label("As of (UTC)", exact=True)).to_be_visible()


def test_the_learnings_inbox_and_the_audit_log_start_on_a_phone_s_first_screen(phone: Page, page: Page) -> None:
    sign_in(phone, "ada")
    phone.goto("/learnings/?scope=tenant%3Dacme")
    first = phone.locator("table.learnings-table tbody tr").first
    box = first.bounding_box()
    assert box is not None and box["y"] + 60 < PHONE["height"], box  # a learning shows before any scrolling
    expect(phone.get_by_label("Agent", exact=True)).to_be_hidden()  # folded under More filters
    expect(phone.locator("nav.state-tabs")).to_be_visible()  # what State filters stays in view
    proposals = phone.locator("details#proposals")
    accept = proposals.get_by_role("button", name="Accept")
    expect(accept.first).to_be_hidden()  # the gardening proposals fold under their heading
    proposals.locator("summary").focus()  # a keyboard opens them
    phone.keyboard.press("Enter")
    expect(accept.first).to_be_visible()
    more = phone.locator("details.more-filters")
    more.locator("summary").click()
    phone.get_by_label("Tier", exact=True).select_option("guarded")
    phone.get_by_role("button", name="Show", exact=True).click()
    phone.wait_for_url(re.compile(r"tier=guarded"))
    expect(more).to_have_attribute("open", "")  # a filter in use stays in view
    expect(more.locator("summary")).to_contain_text("1 in use")
    expect(phone.locator("table.learnings-table tbody tr")).not_to_have_count(0)
    for row in phone.locator("table.learnings-table tbody tr").all():
        expect(row).to_contain_text("guarded")
    assert layout_problems(phone) == []
    phone.goto("/audit/")
    expect(phone.get_by_label("Who", exact=True)).to_be_hidden()
    expect(phone.get_by_label("Scope", exact=True)).to_be_visible()
    filters = phone.locator("form.filters").bounding_box()
    assert filters is not None and filters["height"] < 200, filters  # the scope and its button, one row
    phone.locator("details.more-filters summary").click()
    phone.get_by_label("From (UTC)", exact=True).fill("2026-13-45")
    phone.get_by_role("button", name="Filter", exact=True).click()
    expect(phone.locator("details.more-filters")).to_have_attribute("open", "")  # its error in view
    expect(phone.get_by_label("From (UTC)", exact=True)).to_have_attribute("aria-invalid", "true")
    assert layout_problems(phone) == []
    # a laptop shows every filter and every proposal, nothing to unfold
    sign_in(page, "ada")
    page.goto("/learnings/?scope=tenant%3Dacme")
    expect(page.get_by_label("Agent", exact=True)).to_be_visible()
    expect(page.locator("details#proposals").get_by_role("button", name="Accept").first).to_be_visible()
    expect(page.locator("details#proposals")).to_have_attribute("open", "")  # told expanded, as it shows
    page.goto("/audit/")
    expect(page.get_by_label("Who", exact=True)).to_be_visible()
    expect(page.locator("details.more-filters summary")).to_be_hidden()


def test_the_recall_page_s_figures_and_a_preview_start_on_a_phone_s_first_screen(phone: Page) -> None:
    sign_in(phone, "ada")
    phone.goto("/recall/?scope=tenant%3Dacme")
    cards = phone.locator("section.cards").bounding_box()
    assert cards is not None and cards["y"] + 60 < PHONE["height"], cards  # the figures before any scrolling
    expect(phone.get_by_label("Buckets", exact=True)).to_be_hidden()
    expect(phone.locator("p.presets")).to_be_visible()  # a range is one tap away
    phone.locator("details.more-filters summary").click()
    phone.get_by_label("Buckets", exact=True).select_option("day")  # swaps the page in
    phone.wait_for_url(re.compile(r"bucket=day"))
    expect(phone.locator("details.more-filters")).to_have_attribute("open", "")
    expect(phone.locator("details.more-filters summary")).to_contain_text("1 in use")
    assert layout_problems(phone) == []
    phone.goto("/recall/preview/?scope=tenant%3Dacme%2Cuser%3Ddana")
    expect(phone.get_by_label("Budget (characters)", exact=True)).to_be_hidden()  # under More options
    phone.get_by_label("First user message", exact=True).fill("Book me a flight to Berlin next week")
    phone.get_by_role("button", name="Run the preview").click()
    # a scope alone is previewed already: measure the answer to this message, once swapped in
    phone.wait_for_url(re.compile(r"message=Book"))
    answer = phone.locator("div.cards").first
    expect(answer).to_be_visible()
    blocks = answer.bounding_box()
    assert blocks is not None and blocks["y"] + 60 < PHONE["height"], blocks  # the preview's answer in view
    assert layout_problems(phone) == []


PAIRS = [
    # (page, the fields a phone shows side by side)
    ("/learnings/?scope=tenant%3Dacme", [("Target", "Tier")]),  # "pending review" needs State whole
    ("/recall/preview/", [("Budget (characters)", "Profile slice (%)")]),
    (f"/?{DANA}&tag=travel", [("Tag", "Key")]),
]


def test_short_filters_sit_two_by_two_on_a_phone_and_read_whole(phone: Page) -> None:
    sign_in(phone, "ada")
    for url, pairs in PAIRS:
        phone.goto(url)
        for left, right in pairs:
            if not phone.get_by_label(left, exact=True).is_visible():
                phone.locator("details.more-filters summary").click()  # folded on a phone
            one = phone.get_by_label(left, exact=True).bounding_box()
            two = phone.get_by_label(right, exact=True).bounding_box()
            assert one and two, (url, left)
            same_row = abs((one["y"] + one["height"]) - (two["y"] + two["height"])) < 4  # bottoms aligned
            assert same_row and one["x"] + one["width"] <= two["x"], (url, left, one, two)
            for label in (left, right):
                field = phone.get_by_label(label, exact=True)
                if field.evaluate("el => el.tagName") == "SELECT":
                    assert field.evaluate(CHOICES_CUT) == [], (url, label)  # every choice shows whole
        assert layout_problems(phone) == [], url


def test_a_conversation_s_turns_from_its_first_recall_to_a_later_one(page: Page) -> None:
    sign_in(page, "ada")
    page.goto(f"/recall/?{DANA}")
    page.get_by_role("link", name="conversation c-berlin-trip: its later turns").click()
    page.wait_for_url(re.compile(r"/recall/events/\d+/#turns-heading$"))
    turns = page.locator("#turns-heading ~ .table-box table tbody tr")
    expect(turns).to_have_count(3)
    expect(turns.nth(0)).to_contain_text("(this page)")
    page.get_by_role("link", name="turn 2", exact=True).click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("Recall at turn 2")
    expect(page.locator("#again-heading")).to_contain_text("Found again, left out")
    expect(page.locator("#in-heading ~ .table-box")).to_contain_text("Booked TAP TP 534")  # saved after turn 1
    page.get_by_role("link", name="turn 3", exact=True).focus()  # the turns are links a keyboard reaches
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", level=1)).to_contain_text("Recall at turn 3")
    expect(page.locator("#in-heading ~ p.empty")).to_contain_text("already in the conversation")
    assert layout_problems(page) == []


def test_a_conversation_s_turns_are_cards_on_a_phone(phone: Page) -> None:
    sign_in(phone, "ada")
    phone.goto(f"/recall/?{DANA}")
    phone.get_by_role("link", name="conversation c-berlin-trip: its later turns").click()
    phone.get_by_role("link", name="turn 2", exact=True).click()
    expect(phone.get_by_role("heading", level=1)).to_contain_text("Recall at turn 2")
    for selector in ("#turns-heading ~ .table-box table", "#in-heading ~ .table-box table"):
        for row in phone.locator(selector).evaluate(CARD_FACTS):
            assert row["display"] == "block", (selector, row)
            assert row["content"] > 250, (selector, row)
    assert layout_problems(phone) == []


# --- 6. smaller findings ---------------------------------------------------------------------


def test_smaller_findings(page: Page) -> None:
    sign_in(page, "vera")
    page.goto("/audit/")  # a viewer's refusal speaks of the audit log, inside the layout
    expect(page.locator("#error")).to_contain_text("audit log")
    expect(page.locator("#error")).not_to_contain_text("invalidating")
    expect(page.locator("header.topbar .who")).to_contain_text("vera · viewer")  # the role, on an error page too
    assert layout_problems(page) == []
    page.get_by_role("button", name="Sign out").click()
    expect(page.locator(".messages")).to_contain_text("You are signed out")
    sign_in(page, "ada")
    page.goto(f"/scopes/?{DANA}")
    expect(page.locator("#recent-heading ~ table")).not_to_contain_text("By by")
    page.goto("/recall/")
    since = page.locator(".presets a", has_text="last 24 hours").get_attribute("href") or ""
    assert re.search(r"since=\d{4}-\d{2}-\d{2}\+\d{2}%3A\d{2}", since), since  # the hint's format
    page.goto("/health/")
    expect(page.locator("#tenant-overview thead")).to_contain_text("No provenance")
    initech = page.locator("#tenant-overview tbody tr", has_text="tenant=initech")
    expect(initech.locator("td[data-label='No provenance']")).to_have_text("1")
    page.goto(f"/recall/preview/?{DANA}&message=What+should+I+order+for+the+team+dinner%3F")
    expect(page.locator("pre.block")).not_to_contain_text("The demo corpus")  # the seed record stays out


# --- the sweep: every page, every role, every form, at 375 and 1366 px -----------------------

BAD_FORMS = [
    # (path or "{record}", the field, a bad value, the button, what the error says)
    ("/", "Scope", "acme", "Apply", "key=value"),
    ("/", "As of (UTC)", "2026-13-45", "Apply", "valid"),
    ("/scopes/", "Scope", "acme", "Show", "key=value"),
    ("/health/", "Scope", "acme", "Check", "key=value"),
    ("/recall/", "From (UTC)", "2026-13-45", "Show", "valid"),
    ("/recall/preview/", "Scope", "tenant=acme,user", "Run the preview", "key=value"),
    ("/audit/", "From (UTC)", "2026-13-45", "Filter", "valid"),
    ("{record}", "As of (UTC)", "2026-13-45", "Show", "valid"),
    ("/scopes/erase/", "Scope to erase", "acme", "Preview", "key=value"),
    ("{record}delete/", "#id_confirm_id", "mem_nope", "Delete the record", "not the id"),
]


def _pages(page: Page) -> list[str]:
    """Every page of the dashboard over the demo, as URLs (an admin finds the ids)."""
    page.goto(f"/?{DANA}&q=green+tea&mode=keyword")
    record = page.locator("section.results td.content a").first.get_attribute("href") or ""
    record = record.split("?")[0]
    page.goto(f"/recall/?{DANA}")
    event = page.locator("#events-heading ~ table tbody tr a").first.get_attribute("href") or ""
    return [
        "/",
        f"/?{DANA}",
        f"/?{DANA}&q=aisle+seat",
        record,
        f"{record}invalidate/",
        f"{record}correct/",
        f"{record}delete/",
        "/scopes/",
        f"/scopes/?{DANA}",
        f"/scopes/erase/?{DANA}",
        f"/scopes/erase/confirm/?{DANA}",
        "/recall/",
        event,
        f"{event}?replay=1",
        "/recall/preview/",
        f"/recall/preview/?{DANA}&message=Book+me+a+flight+to+Berlin+next+week&budget=1500",
        "/health/",
        "/health/?scope=tenant%3Dacme",
        "/audit/",
        "/records/mem_missing/",
    ]


@pytest.mark.parametrize("viewport", [PHONE, LAPTOP], ids=["375", "1366"])
def test_every_page_and_every_bad_value_keeps_the_layout(
    browser: Browser, site: Deployed, console: list[str], viewport: dict[str, int]
) -> None:
    broken: dict[str, list[str]] = {}
    for tab in _tab(browser, site, console, viewport):
        sign_in(tab, "ada")
        urls = _pages(tab)
        record = urls[3]
        for user in ("ada", "vera", "cora", "pat"):
            if user != "ada":
                tab.get_by_role("button", name="Sign out").click()
                sign_in(tab, user)
            for url in urls:
                tab.goto(url)
                if problems := layout_problems(tab):
                    broken[f"{user} {url}"] = problems
                expect(tab.locator("header.topbar .who")).to_contain_text(f"{user} · ")
        tab.get_by_role("button", name="Sign out").click()
        sign_in(tab, "ada")
        for path, field, value, button, text in BAD_FORMS:
            tab.goto(path.format(record=record))
            target = tab.locator(field) if field.startswith("#") else tab.get_by_label(field, exact=True)
            if not target.is_visible() and tab.locator("details.more-filters summary").is_visible():
                tab.locator("details.more-filters summary").click()  # a phone folds the browser's more filters
            target.fill(value)
            if path.endswith("delete/"):
                tab.get_by_label("Reason").fill("A bad confirmation")
            tab.get_by_role("button", name=button, exact=True).click()
            try:
                error_beside(tab, field, text)
            except AssertionError as exc:
                broken[f"{path} {field}={value!r}"] = [str(exc).splitlines()[0]]
    assert broken == {}


TICKS = """() => {
  const chart = Chart.getChart(document.getElementById("chart-truncation"));
  const x = chart.scales.x;
  chart.ctx.font = Chart.helpers.toFont(x.options.ticks.font).string;
  return x.ticks.map((tick, i) => ({label: tick.label, at: x.getPixelForTick(i)}))
    .filter(tick => tick.label)
    .map(tick => ({at: tick.at, width: chart.ctx.measureText(tick.label).width}));
}"""

BUDGET = """() => {
  const chart = Chart.getChart(document.getElementById("chart-chars"));
  const budget = chart.data.datasets.find(d => d.label === "budget");
  return {buckets: chart.data.labels.length, radius: budget.pointRadius, value: budget.data[0]};
}"""


def test_recall_charts_read_on_a_phone(phone: Page) -> None:
    sign_in(phone, "ada")
    phone.goto("/recall/?bucket=6h")
    expect(phone.locator("html[data-charts]")).to_have_count(1)
    ticks = phone.evaluate(TICKS)
    assert len(ticks) >= 3
    for before, after in itertools.pairwise(ticks):
        assert after["at"] - before["at"] > (before["width"] + after["width"]) / 2, (before, after)  # no overlap
    day = phone.locator("#events-heading ~ table tbody tr time").first.get_attribute("datetime") or ""
    phone.goto(f"/recall/?since={day[:10]}+00%3A00&until={day[:10]}+23%3A59&bucket=day")
    expect(phone.locator("html[data-charts]")).to_have_count(1)
    one = phone.evaluate(BUDGET)
    assert one["buckets"] == 1 and one["value"] and one["radius"] > 0  # the budget is drawn for one bucket too


CHOICES_CUT = """el => {
  const style = getComputedStyle(el);
  const ctx = document.createElement("canvas").getContext("2d");
  ctx.font = style.font;
  const room = el.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight) - 20;
  return [...el.options].map(option => ({choice: option.text, text: ctx.measureText(option.text).width, room}))
    .filter(shown => shown.text > shown.room);
}"""
"""A select's choices that would not show whole when chosen (the arrow takes 20 px)."""


def test_smaller_findings_on_a_phone(phone: Page, browser: Browser, site: Deployed) -> None:
    sign_in(phone, "ada")
    if site.embeds:  # the "By" select shows its choice whole
        phone.goto(f"/?{DANA}&q=aisle+seat")
        by = phone.get_by_label("By", exact=True)
        assert by.locator("option").count() == 4 and by.evaluate(CHOICES_CUT) == []
    phone.goto(f"/?{DANA}")
    labels = phone.locator("section.results td[data-label='Key · tags']")
    assert all(text.strip() for text in labels.all_inner_texts())  # no label over an empty cell
    results = phone.locator("section.results").bounding_box()
    facets = phone.locator("aside.facets").bounding_box()
    assert results is not None and facets is not None and results["y"] < facets["y"]  # results first
    phone.goto("/?scope=tenant%3Dacme%2Cuser%3Dmei&q=Amex&mode=keyword")
    phone.locator("section.results td.content a").first.click()
    supersedes = phone.locator("dl.fields dt:text-is('Supersedes') + dd")
    expect(supersedes).to_contain_text("deleted")  # the card-number version was deleted
    expect(supersedes.locator("a")).to_have_count(0)  # no link to a 404
    record = phone.url.split("?")[0]
    phone.goto(f"{record}?as_of=2000-01-01")
    unwritten = phone.locator("header.page-head .badge")
    expect(unwritten).to_have_text("unwritten")
    assert unwritten.evaluate("el => getComputedStyle(el).borderStyle") == "dashed"  # styled like its peers
    with opened_page(browser, site.url, java_script_enabled=False, viewport=PHONE) as plain:
        sign_in(plain, "ada")
        plain.goto("/recall/")
        expect(plain.locator("#charts-need-js")).to_contain_text("table below")
