"""Real-browser flows in headless Chromium: sign in, filter by scope, search, open a
record, read its chain timeline, page through results — with and without JavaScript.

Debian's chromium at /usr/bin/chromium, driven by Playwright (never `playwright install`).
Pages run under the dashboard's Content-Security-Policy (no eval), so waits are
Playwright's ``expect`` assertions, never ``wait_for_function`` with JavaScript text;
the ``browser`` fixture (conftest) skips locally when it is missing and fails under
MEMORY_ADMIN_REQUIRE_ALL=1 (CI).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import pytest

from memory_admin.store import InMemoryMemoryStore
from tests.dashboard.conftest import PASSWORD, expect, opened_page

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page


pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def sign_in(page: Page, username: str = "vera") -> None:
    page.goto("/")
    assert "/accounts/login/" in page.url
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile(r"/(\?.*)?$"))


def results_text(page: Page) -> str:
    return page.locator("section.results").inner_text()


def test_sign_in_lands_on_the_granted_scope(page: Page) -> None:
    sign_in(page)
    assert page.get_by_role("heading", name="Memory", exact=True).is_visible()
    assert "tenant=acme" in page.locator(".facets h2").inner_text()
    assert "vera" in page.locator(".who").inner_text()


def test_wrong_password_stays_on_sign_in(page: Page) -> None:
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill("vera")
    page.get_by_label("Password").fill("wrong")
    page.get_by_role("button", name="Sign in").click()
    # the click returns before the refused sign-in's page arrives: wait for it, don't race it
    expect(page.get_by_role("alert")).to_contain_text("Please enter a correct username and password")
    assert "/accounts/login/" in page.url


def test_filter_by_scope_swaps_results_in_place(page: Page) -> None:
    sign_in(page)
    page.evaluate("window.__noReload = true")
    page.get_by_label("Scope", exact=True).fill("tenant=acme,user=dana")
    page.get_by_label("Scope", exact=True).press("Enter")
    page.wait_for_url(re.compile(r"scope=tenant%3Dacme%2Cuser%3Ddana"))
    expect(page.locator(".facets h2")).to_contain_text("user=dana")
    assert "green tea" in results_text(page)
    assert "Ravi is the owner" not in results_text(page)
    assert page.evaluate("window.__noReload") is True  # htmx swapped the region; no full reload
    page.get_by_role("link", name="planner").click()  # a facet narrows further
    page.wait_for_url(re.compile(r"agent%3Dplanner"))
    expect(page.locator(".facets h2")).to_contain_text("agent=planner")
    assert "07:10 train" in results_text(page) and "green tea" not in results_text(page)
    page.go_back()  # the pushed URL is a real history entry
    expect(page.locator(".facets h2")).not_to_contain_text("agent=planner")
    assert page.locator("header.topbar").is_visible()  # a history restore is a whole page, not a fragment


def test_search(page: Page) -> None:
    sign_in(page)
    page.get_by_label("Search").fill("aisle")
    page.get_by_label("Search").press("Enter")
    page.wait_for_url(re.compile(r"q=aisle"))
    expect(page.locator("section.results")).to_contain_text("aisle seats")
    text = results_text(page)
    assert "aisle seats on every flight" in text and "green tea" not in text


def test_open_a_record_and_read_its_chain(page: Page) -> None:
    sign_in(page)
    page.goto("/?scope=tenant%3Dacme%2Cuser%3Ddana&key=drink")
    page.get_by_role("link", name=re.compile("switched to green tea")).click()
    page.wait_for_url(re.compile(r"/records/mem_"))
    timeline = page.locator("#timeline")
    assert "4 versions" in timeline.locator("h2").inner_text()
    versions = timeline.locator("li.version")
    assert versions.count() == 4
    assert "Dana drinks espresso, no milk." in versions.nth(0).inner_text()
    assert "superseded" in versions.nth(0).inner_text()
    assert versions.nth(3).locator("ins").first.inner_text().startswith("has switched to green tea")
    first = versions.nth(0).get_by_role("link", name="Version 1")
    href = str(first.get_attribute("href"))
    assert href.startswith("/records/mem_") and not page.url.endswith(href)
    first.click()  # earlier versions are pages of their own
    page.wait_for_url(f"**{href}")  # the link's own page, not the one it was clicked on
    assert "Dana drinks espresso, no milk." in page.locator("blockquote.content").inner_text()


def test_a_deleted_version_is_a_tombstone(page: Page) -> None:
    sign_in(page)
    page.goto("/?scope=tenant%3Dacme%2Cuser%3Dmei&key=payment")
    page.get_by_role("link", name=re.compile("corporate Amex")).click()
    tomb = page.locator("#timeline li.tombstone")
    expect(tomb).to_have_count(1)  # waits for the record page to load
    assert "Deleted version" in tomb.inner_text()
    assert "4421" not in page.content()


def test_page_through_results(page: Page, settings: Any, demo_store: InMemoryMemoryStore) -> None:
    settings.DASHBOARD_PAGE_SIZE = 5
    sign_in(page)
    page.goto("/?scope=tenant%3Dacme&invalidated=1")
    seen: list[str] = []
    for _ in range(20):
        links = page.locator("section.results td.content a")
        seen += [str(links.nth(i).get_attribute("href")) for i in range(links.count())]
        following = page.get_by_role("link", name="Next page »")
        if following.count() == 0:
            break
        before = links.first.get_attribute("href")
        following.click()
        page.wait_for_url(re.compile(r"after="))
        expect(page.locator("section.results td.content a").first).not_to_have_attribute("href", str(before))
    counts = demo_store.count_records({"tenant": "acme"})
    expected = counts.total - counts.expired
    assert len(seen) == expected and len(set(seen)) == expected
    assert page.get_by_role("link", name="« First page").is_visible()


def test_everything_works_without_javascript(browser: Browser, site: str) -> None:
    with opened_page(browser, site, java_script_enabled=False) as page:
        sign_in(page)
        page.get_by_label("Scope", exact=True).fill("tenant=acme,user=ravi")
        page.get_by_role("button", name="Apply").click()
        page.wait_for_url(re.compile(r"scope=tenant%3Dacme%2Cuser%3Dravi"))
        assert "Ravi is the owner of the refunds endpoint" in results_text(page)
        page.get_by_role("link", name=re.compile("Ravi is back from leave")).click()
        expect(page.locator("#timeline li.version")).to_have_count(5)  # waits for the record page to load


def test_a_direction_override_cannot_spoof_the_author_line(page: Page, demo_store: InMemoryMemoryStore) -> None:
    # an author that reverses what follows, so "· via chat" would read as if from the dashboard
    spoof = "support-bot \u202edraobhsad aiv"
    [record] = demo_store.write(
        [
            {
                "scope": {"tenant": "acme", "user": "dana"},
                "kind": "fact",
                "content": "Dana's \u202etnemyap\u202c is due.",
                "tags": ["\u202egat"],
                "key": "\u2067k",
                "provenance": {"source": "chat", "author": spoof},
            }
        ]
    )
    sign_in(page)
    page.goto(f"/records/{record.id}/")
    who = page.locator("#timeline p.who").first
    expect(who).to_contain_text("⟨U+202E⟩")  # the control is shown, not obeyed
    author, source = who.locator("bdi").nth(0), who.locator("bdi").nth(1)
    assert author.inner_text() == "support-bot ⟨U+202E⟩draobhsad aiv" and source.inner_text() == "chat"
    author_box, source_box = author.bounding_box(), source.bounding_box()
    assert author_box is not None and source_box is not None
    # isolated: the author's text ends before the source begins, left to right as written
    assert author_box["x"] + author_box["width"] <= source_box["x"]
    html = page.content()
    assert "\u202e" not in html and "\u2067" not in html  # nowhere on the page is one obeyed
    for marker in ("⟨U+202E⟩", "⟨U+202C⟩", "⟨U+2067⟩"):
        assert marker in page.locator("main").inner_text()
