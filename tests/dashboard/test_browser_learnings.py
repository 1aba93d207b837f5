"""The review of what agents learned, in real Chromium, under the settings ``make run`` uses
(``settings.dev``, ``manage.py runserver``) and the production settings (``memory-admin
serve``), each with and without JavaScript: a dashboard process of its own over the demo
corpus in a SQLite memory file.

A curator walks the whole review — approve, reject (a reason required), a bulk rejection
from the inbox, edit then approve, pick a conflict's survivor, a stale decision refused
with what moved, a roll-back from the composition's page — and the composed prompt
changes accordingly at each step. A viewer sees and cannot decide; a curator of one tenant
never sees another's learnings; every learnings page fits a 375 px phone. Every page runs
under the Content-Security-Policy, and a violation fails the test.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.dashboard.conftest import PASSWORD, deployment_env, expect
from tests.dashboard.server import production_env, run, serving
from tests.dashboard.test_browser_sso import runserver

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
MEMORY_ADMIN = [sys.executable, "-m", "memory_admin"]
USERS = {"ada": ("admin", None), "vera": ("viewer", "tenant=acme"), "cora": ("curator", "tenant=acme")}

PENDING = "Refund requests must quote the booking reference"
HELD = "Check the booking tool before asking"
HELD_EXAMPLE = "Asking for the booking reference before the refund"
CONFLICT = "Refund more than the fare paid when the delay passed six hours."
PICKABLE = "The booking tool answers itinerary lookups; it cannot change a booking."
DEMOTED = "Quote refund times in business days."
REJECTED = "Escalate every refund above 200 EUR to a supervisor."
PROMOTED = "Offer a travel voucher before a cash refund when the fare is non-refundable."
GLOBEX = "Never reopen a ticket the customer closed themselves."
COMPOSITION = "/compositions/prompt/?scope=tenant%3Dacme%2Cagent%3Dsupport"


@dataclass(frozen=True)
class Site:
    url: str
    settings: str
    javascript: bool


def _users(command: list[str], env: dict[str, str]) -> None:
    for name, (role, grant) in USERS.items():
        grants = ["--grant", grant] if grant else []
        run([*command, "create", name, "--role", role, *grants, "--password", PASSWORD], env, cwd=ROOT)


@pytest.fixture(
    scope="module",
    params=[("dev", True), ("dev", False), ("prod", True), ("prod", False)],
    ids=["dev-js", "dev-nojs", "prod-js", "prod-nojs"],
)
def site(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    settings, javascript = request.param
    folder = tmp_path_factory.mktemp(f"learnings-{settings}")
    if settings == "dev":
        env = {**deployment_env(folder), "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost"}
        manage = [sys.executable, "manage.py"]
        run([*manage, "migrate", "--verbosity", "0"], env, cwd=ROOT)
        run([*manage, "memory_demo"], env, cwd=ROOT)
        _users([*manage, "memory_user"], env)
        with runserver(env, folder / "runserver.log") as url:
            yield Site(url, settings, javascript)
    else:
        # Chromium talks plain HTTP to 127.0.0.1 here (the cookies stay Secure)
        env = production_env(folder, DJANGO_SECURE_SSL_REDIRECT="0")
        run([*MEMORY_ADMIN, "migrate", "--verbosity", "0"], env)
        run([*MEMORY_ADMIN, "demo"], env)
        _users([*MEMORY_ADMIN, "user"], env)
        with serving(MEMORY_ADMIN, env) as server:
            yield Site(server.url, settings, javascript)


@dataclass
class Tabs:
    browser: Browser
    site: Site
    console: list[str]

    def open(self, user: str, *, width: int = 1280) -> Page:
        context = self.browser.new_context(
            base_url=self.site.url,
            viewport={"width": width, "height": 900},
            java_script_enabled=self.site.javascript,
        )
        context.set_default_timeout(15_000)
        tab = context.new_page()
        tab.on("console", lambda message: self.console.append(f"{message.type}: {message.text}"))
        tab.on("pageerror", lambda error: self.console.append(f"pageerror: {error}"))
        tab.goto("/accounts/login/")
        tab.get_by_label("Username").fill(user)
        tab.get_by_label("Password").fill(PASSWORD)
        tab.get_by_role("button", name="Sign in").click()
        tab.wait_for_url(re.compile(r"/(\?.*)?$"))
        return tab


@pytest.fixture
def tabs(browser: Browser, site: Site) -> Iterator[Tabs]:
    opened = Tabs(browser, site, [])
    yield opened
    for context in browser.contexts:
        context.close()
    violations = [line for line in opened.console if "Content Security Policy" in line or "pageerror" in line]
    assert violations == [], violations


def open_learning(tab: Page, text: str, **filters: str) -> None:
    """From the review inbox (filtered), to the learning that says ``text``."""
    query = "&".join(f"{name}={value}" for name, value in filters.items())
    tab.goto(f"/learnings/?scope=tenant%3Dacme{'&' + query if query else ''}")
    tab.get_by_role("link", name=text).first.click()
    expect(tab.get_by_role("heading", name=re.compile("^Learning"))).to_be_visible()
    expect(tab.locator("blockquote.content")).to_contain_text(text)


def decide(tab: Page, button: str, reason: str = "") -> None:
    tab.get_by_label("Reason", exact=True).fill(reason)
    tab.locator("#decide").get_by_role("button", name=button, exact=True).click()


def prompt(tab: Page) -> str:
    tab.goto(COMPOSITION)
    expect(tab.get_by_role("heading", name="The prompt")).to_be_visible()
    return tab.locator("#prompt").inner_text()


def learned_line(tab: Page, text: str) -> None:
    """``text`` is a learned line of the composed prompt, linked to its learning."""
    line = tab.locator("#prompt li.pl-learned", has_text=text)
    expect(line).to_have_count(1)
    expect(line.locator(".src")).to_have_text("learned")
    expect(line.get_by_role("link").first).to_have_attribute("href", re.compile(r"^/learnings/mem_"))


def test_a_curator_walks_the_whole_review(tabs: Tabs) -> None:
    tab = tabs.open("cora")
    assert PENDING not in prompt(tab)

    # approve a guarded learning waiting for a person
    open_learning(tab, PENDING, state="pending_review")
    expect(tab.locator("#effect")).to_contain_text("If it were approved: it enters judgment.refunds.constraints")
    decide(tab, "Approve", "matches the finance policy")
    expect(tab.get_by_text("Approved: it is part of the composition now")).to_be_visible()
    expect(tab.locator("h1 .badge.state")).to_have_text("promoted")
    assert PENDING in prompt(tab)
    learned_line(tab, PENDING)

    # reject: a reason is required, and what was typed stays
    open_learning(tab, HELD, state="held")
    decide(tab, "Reject")
    expect(tab.locator("#refusal")).to_contain_text("Give a reason")
    expect(tab.locator("h1 .badge.state")).to_have_text("held")
    decide(tab, "Reject", "duplicates an authored heuristic")
    expect(tab.get_by_text("Rejected (audit entry")).to_be_visible()
    expect(tab.locator("h1 .badge.state")).to_have_text("rejected")

    # a bulk rejection of a filtered page of the inbox
    tab.goto("/learnings/?scope=tenant%3Dacme&state=held")
    row = tab.locator("tr", has_text=HELD_EXAMPLE)
    row.get_by_role("checkbox").check()
    tab.get_by_label("Reason", exact=True).fill("an example needs its bad answer too")
    tab.get_by_role("button", name="Reject ticked").click()
    expect(tab.get_by_text("Rejected 1 learning")).to_be_visible()
    expect(tab.get_by_role("link", name=HELD_EXAMPLE)).to_have_count(0)

    # edit, then approve: the edit supersedes the agent's text, which leaves the prompt
    open_learning(tab, CONFLICT, state="conflict")
    expect(tab.locator("#conflict")).to_contain_text("Never refund more than the fare paid.")
    tab.get_by_role("link", name="Edit, then approve…").click()
    edited = "Pay the delay compensation on top of the fare refund when the delay passed six hours."
    tab.get_by_label("The learning, as it should read").fill(edited)
    tab.get_by_role("button", name="Write the edit and approve it").click()
    expect(tab.get_by_text("Edited and approved")).to_be_visible()
    text = prompt(tab)
    assert edited in text and CONFLICT not in text
    learned_line(tab, edited)

    # a conflict between two learnings: keep the newer one
    open_learning(tab, PICKABLE, state="conflict")
    expect(tab.locator("#conflict")).to_contain_text("The booking tool can be queried read-only")
    decide(tab, "Keep this learning", "changes go through the agent desk now")
    expect(tab.get_by_text("the other learning left")).to_be_visible()
    text = prompt(tab)
    assert "Itinerary lookups only" in text and "Read-only itinerary lookup" not in text

    # a stale decision: another person approves something first, so the prompt this page
    # showed is gone; the decision is refused and the page shows what moved
    open_learning(tab, DEMOTED, state="demoted")
    other = tabs.open("ada")
    open_learning(other, REJECTED, state="rejected")
    decide(other, "Approve", "500 EUR was a typo: 200 it is")
    expect(other.get_by_text("Approved: it is part of the composition now")).to_be_visible()
    before = prompt(other)
    decide(tab, "Approve", "calendar days were a misunderstanding")
    refusal = tab.locator("#refusal")
    expect(refusal).to_contain_text("moved since you looked")
    expect(refusal.locator("#moved")).to_contain_text(REJECTED)  # the difference the page did not show
    expect(tab.locator("h1 .badge.state")).to_have_text("demoted")
    assert prompt(tab) == before, "nothing was applied"

    # roll back from the composition's page: the learning leaves the prompt, and stays a record
    learned_line(tab, PROMOTED)
    tab.locator("#prompt li.pl-learned", has_text=PROMOTED).get_by_role("link", name="Roll back…").click()
    expect(tab.get_by_role("heading", name="Roll back this learning?")).to_be_visible()
    tab.get_by_role("button", name="Roll it back").click()
    expect(tab.locator("#refusal, .alert").first).to_contain_text("reason")
    tab.get_by_label("Reason", exact=True).fill("travellers complained about vouchers")
    tab.get_by_role("button", name="Roll it back").click()
    tab.wait_for_url(re.compile(r"/compositions/prompt/"))
    expect(tab.get_by_text("Rolled back")).to_be_visible()
    assert PROMOTED not in tab.locator("#prompt").inner_text()
    tab.goto("/learned/?scope=tenant%3Dacme")
    if tabs.site.javascript:
        expect(tab.locator("html")).to_have_attribute("data-learned-chart", "drawn")
    changes = tab.locator("table.learned-table")
    expect(changes).to_contain_text("travellers complained about vouchers")
    expect(changes).to_contain_text("cora")


def test_a_viewer_sees_the_review_and_cannot_decide(tabs: Tabs) -> None:
    tab = tabs.open("vera")
    tab.goto("/learnings/?scope=tenant%3Dacme")
    expect(tab.get_by_role("link", name=re.compile("Refund requests must quote"))).to_be_visible()
    expect(tab.get_by_role("checkbox")).to_have_count(0)
    expect(tab.get_by_role("button", name="Approve ticked")).to_have_count(0)
    tab.get_by_role("link", name=re.compile("Refund requests must quote")).click()
    expect(tab.locator("#decide")).to_contain_text("a curator decides on it")
    expect(tab.get_by_role("button", name="Approve")).to_have_count(0)
    tab.goto(COMPOSITION)
    expect(tab.get_by_role("link", name="Roll back…")).to_have_count(0)


def test_a_curator_of_one_tenant_never_sees_anothers_learnings(tabs: Tabs) -> None:
    tab = tabs.open("cora")
    for url in (
        "/learnings/?scope=tenant%3Dglobex",
        "/compositions/prompt/?scope=tenant%3Dglobex%2Cagent%3Dsupport",
        "/learned/?scope=tenant%3Dglobex",
    ):
        tab.goto(url)
        expect(tab.get_by_text("outside the scopes you may see").first).to_be_visible()
        assert GLOBEX not in tab.content()
    tab.goto("/learnings/")
    expect(tab.get_by_role("heading", name=re.compile("Learnings"))).to_contain_text("tenant=acme")
    assert GLOBEX not in tab.content() and "globex-support" not in tab.content()


def test_every_learnings_page_fits_a_phone(tabs: Tabs) -> None:
    tab = tabs.open("cora", width=375)
    tab.goto("/learnings/?scope=tenant%3Dacme")
    links = [tab.get_by_role("link", name=text).first.get_attribute("href") for text in (PENDING, DEMOTED, PICKABLE)]
    pages = [
        "/learnings/?scope=tenant%3Dacme",
        *[str(link) for link in links],
        f"{links[0]}edit/",
        f"{links[0]}rollback/",
        "/compositions/?scope=tenant%3Dacme",
        COMPOSITION,
        "/compositions/diff/?scope=tenant%3Dacme%2Cagent%3Dsupport",
        "/learned/?scope=tenant%3Dacme",
        "/health/?scope=tenant%3Dacme",
    ]
    too_wide = {}
    for url in pages:
        response = tab.goto(url)
        assert response is not None and response.status == 200, url
        width = int(tab.evaluate("document.documentElement.scrollWidth"))
        if width > 375:
            too_wide[url] = width
    assert too_wide == {}
