"""Real-browser flows for Dashboard II in headless Chromium (the ``browser`` fixture in
conftest): invalidate with a reason and watch the timeline update in place; erase a
scope through preview → confirmation → receipt; read the recall graphs for the demo
data and drill into one event. Every page runs under the dashboard's CSP, and a
violation fails the test.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from memory_admin.events import MemoryRecallEvent
from memory_admin.store import InMemoryMemoryStore
from tests.dashboard.conftest import expect, find, opened_page, sign_in

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page


pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def console() -> list[str]:
    return []


@pytest.fixture
def page(browser: Browser, site: str, console: list[str]) -> Iterator[Page]:
    with opened_page(browser, site, viewport={"width": 1280, "height": 900}) as tab:
        tab.on("console", lambda message: console.append(f"{message.type}: {message.text}"))
        tab.on("pageerror", lambda error: console.append(f"pageerror: {error}"))
        yield tab
    violations = [line for line in console if "Content Security Policy" in line or line.startswith("pageerror")]
    assert violations == [], violations


def test_invalidate_with_a_reason_updates_the_timeline(page: Page, demo_store: InMemoryMemoryStore) -> None:
    record = find(demo_store, "tenant=acme,user=dana", "green tea")
    sign_in(page, "cora")
    page.goto(f"/records/{record.id}/")
    page.evaluate("window.__noReload = true")
    timeline = page.locator("#timeline")
    expect(timeline.locator("li.version.current .badge")).to_have_text("live")
    page.get_by_role("link", name="Invalidate…").click()  # the form opens in place
    reason = page.get_by_label("Reason")
    expect(reason).to_be_visible()
    reason.fill("   ")  # passes the browser's "required" check, not the server's
    page.get_by_role("button", name="Invalidate the record").click()
    expect(page.locator("#action-form [role=alert]")).to_contain_text("Give a reason")
    page.get_by_label("Reason").fill("Dana stopped drinking tea in January.")
    page.get_by_role("button", name="Invalidate the record").click()
    expect(page.locator("#notice")).to_contain_text("Invalidated")
    current = page.locator("#timeline li.version.current")
    expect(current.locator(".badge")).to_have_text("invalidated")
    expect(current.locator(".ended")).to_contain_text("Dana stopped drinking tea in January.")
    assert page.evaluate("window.__noReload") is True  # htmx swapped the record in place
    stored = demo_store.get(record.id)
    assert stored is not None and stored.invalid_reason == "Dana stopped drinking tea in January."
    page.reload()  # and it is really stored: a fresh page shows the same
    expect(page.locator("#timeline li.version.current .ended")).to_contain_text("stopped drinking tea")


def test_correct_without_javascript(browser: Browser, site: str, demo_store: InMemoryMemoryStore) -> None:
    with opened_page(browser, site, java_script_enabled=False) as page:
        record = find(demo_store, "tenant=acme,user=ravi", "back from leave")
        sign_in(page, "cora")
        page.goto(f"/records/{record.id}/")
        page.get_by_role("link", name="Correct…").click()
        page.wait_for_url(re.compile(r"/correct/$"))
        page.get_by_label("Corrected content").fill("Ravi works on Berlin time, Monday to Friday.")
        page.get_by_label("Reason").fill("Ravi went back to five days.")
        page.get_by_role("button", name="Write the correction").click()
        page.wait_for_url(re.compile(r"/records/mem_\w+/$"))
        assert record.id not in page.url
        assert "Corrected" in page.locator(".messages").inner_text()
        assert page.locator("#timeline li.version").count() == 6
        assert page.locator("blockquote.content").inner_text() == "Ravi works on Berlin time, Monday to Friday."
        assert page.locator("#timeline li.version.current ins").last.inner_text() == "Friday."


def test_erase_a_scope_preview_confirm_receipt(page: Page, demo_store: InMemoryMemoryStore) -> None:
    before = demo_store.count_records({"tenant": "acme", "user": "mei"})
    assert before.total > 0
    sign_in(page, "pat")
    page.goto("/scopes/?scope=tenant%3Dacme%2Cuser%3Dmei")
    page.get_by_role("link", name="Erase this scope…").click()
    page.wait_for_url(re.compile(r"/scopes/erase/\?scope="))
    assert "Step 1 of 3" in page.content()
    expect(page.get_by_role("row", name="Records")).to_contain_text(str(before.total))
    expect(page.locator(".scope-list")).to_contain_text("tenant=acme,user=mei")
    assert demo_store.count_records({"tenant": "acme", "user": "mei"}) == before  # the preview is a dry run
    page.get_by_role("link", name="Continue to the confirmation").click()
    page.wait_for_url(re.compile(r"/scopes/erase/confirm/"))
    page.get_by_label("Type the scope").fill("tenant=acme,user=ravi")  # a slip
    page.get_by_label("Reason").fill("Mei asked to be forgotten (ticket 88).")
    page.get_by_role("button", name="Erase the scope").click()
    expect(page.locator("[role=alert]").first).to_contain_text("not the scope being erased")
    assert demo_store.count_records({"tenant": "acme", "user": "mei"}) == before
    page.get_by_label("Type the scope").fill("tenant=acme,user=mei")
    page.get_by_role("button", name="Erase the scope").click()
    page.wait_for_url(re.compile(r"/audit/\d+/$"))
    receipt = page.locator("article.receipt")
    expect(receipt.locator("h1")).to_contain_text("Receipt: Erase a scope")
    expect(receipt).to_contain_text(f"{before.total} records")
    expect(receipt).to_contain_text("pat (privacy officer)")
    # the reason as typed, shown once; the log keeps the erased scope's value in it as a keyed hash
    expect(receipt).to_contain_text("Mei asked to be forgotten (ticket 88).")
    expect(receipt).to_contain_text(re.compile(r"hmac:[0-9a-f]{24} asked to be forgotten \(ticket 88\)\."))
    page.reload()
    receipt = page.locator("article.receipt")
    expect(receipt).to_contain_text(re.compile(r"hmac:[0-9a-f]{24} asked to be forgotten \(ticket 88\)\."))
    assert (
        "vegetarian" not in receipt.inner_text() and "mei" not in receipt.inner_text().casefold()
    )  # never the erased content
    assert demo_store.count_records({"tenant": "acme", "user": "mei"}).total == 0
    assert find(demo_store, "tenant=acme,user=ravi", "refunds endpoint")  # the neighbours stay


def test_recall_graphs_and_drill_down(page: Page, demo_store: InMemoryMemoryStore) -> None:
    acme = [
        s
        for s in demo_store.query_events({"types": ["agent.memory.recall"], "scope": {"tenant": "acme"}, "limit": 100})
    ]
    sign_in(page, "vera")
    page.get_by_role("link", name="Recall", exact=True).click()
    page.wait_for_url(re.compile(r"/recall/"))
    expect(page.locator("html")).to_have_attribute("data-charts", "1")
    drawn = page.evaluate(
        "['chart-records', 'chart-chars', 'chart-truncation'].map(id => {"
        "  const chart = window.Chart.getChart(document.getElementById(id));"
        "  return chart ? chart.data.datasets[0].data.filter(v => v !== null).length : -1; })"
    )
    assert all(n > 0 for n in drawn), drawn  # every graph has points
    recalls = page.evaluate(
        "JSON.parse(document.getElementById('recall-series').textContent).recalls.reduce((a, b) => a + b, 0)"
    )
    assert recalls == len(acme) == 10
    width = page.evaluate("document.getElementById('chart-chars').getBoundingClientRect().width")
    assert width > 100  # really laid out, not a zero-sized canvas
    page.get_by_label("Agent").fill("planner")  # filtering swaps the region and redraws
    page.get_by_role("button", name="Show").click()
    page.wait_for_url(re.compile(r"agent=planner"))
    expect(page.locator("html")).to_have_attribute("data-charts", "2")  # redrawn after the swap
    planned = sum(1 for s in acme if s.event.agent == "planner")
    expect(page.locator("section.totals")).to_contain_text(f"{planned}\nrecall")
    planner_points = page.evaluate(
        "window.Chart.getChart(document.getElementById('chart-records'))"
        ".data.datasets[0].data.filter(v => v !== null).length"
    )
    assert planner_points >= 1
    # drill into the newest truncated recall
    page.locator("table").last.get_by_text("1 deferred").first.locator("xpath=ancestor::tr/td[1]//a").click()
    page.wait_for_url(re.compile(r"/recall/events/\d+/$"))
    event_id = int(page.url.rstrip("/").split("/")[-1])
    stored = demo_store.get_event(event_id)
    assert stored is not None and isinstance(stored.event, MemoryRecallEvent)
    expect(page.locator("#size-text")).to_contain_text(f"{stored.event.chars} of {stored.event.budget_chars}")
    assert page.locator("#in-heading + .table-box table tbody tr").count() == stored.event.count
    expect(page.locator("#deferred-heading + p + .table-box table")).to_contain_text("profile slice")


def test_recall_numbers_without_javascript(browser: Browser, site: str) -> None:
    with opened_page(browser, site, java_script_enabled=False) as page:
        sign_in(page, "vera")
        page.goto("/recall/")
        assert page.locator("table.numbers tbody tr").count() >= 5  # the graphs' numbers, as a table
        assert "10\nrecalls" in page.locator("section.totals").inner_text()
