"""Forgetting in real Chromium, under the settings ``make run`` uses (``settings.dev``,
served by ``manage.py runserver``) and the production settings (``memory-admin serve``):
a refused deletion comes back with what the officer typed, from their own browser and
never the server's session store, once; a short identifier a curator's reason held does
not outlive the erasure of its record; and the erasure's receipt reads as the officer
typed it right after acting, once, while the log keeps only keyed hashes."""

from __future__ import annotations

import base64
import re
import sqlite3
import sys
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from memory_admin.store import SqliteMemoryStore
from tests.dashboard.conftest import deployment_env, expect, find
from tests.dashboard.deployed import runserver
from tests.dashboard.server import PASSWORD, ROOT, production_env, run, serving

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

pytestmark = [pytest.mark.browser, pytest.mark.slow]

MEMORY_ADMIN = [sys.executable, "-m", "memory_admin"]


@dataclass
class Site:
    url: str
    folder: Path

    def dashboard_bytes(self) -> bytes:
        path = self.folder / "dashboard.sqlite3"
        return b"".join(p.read_bytes() for p in (path, *self.folder.glob("dashboard.sqlite3-*")) if p.exists())

    def sessions(self) -> list[str]:
        """What the server's session store holds, read as anyone with the file could."""
        with sqlite3.connect(self.folder / "dashboard.sqlite3") as conn:
            return [_unsigned(row[0]) for row in conn.execute("SELECT session_data FROM django_session")]


def _unsigned(signed: str) -> str:
    """A value Django signed (``payload:timestamp:signature``, the payload base64 JSON,
    zlib-compressed when it starts with a dot), read without checking the signature."""
    payload = signed.split(":", 1)[0]
    raw = base64.urlsafe_b64decode(payload.lstrip(".") + "=" * (-len(payload.lstrip(".")) % 4))
    return (zlib.decompress(raw) if payload.startswith(".") else raw).decode()


@pytest.fixture(scope="module", params=["dev", "prod"])
def site(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    folder = tmp_path_factory.mktemp(f"forgetting-{request.param}")
    if request.param == "dev":
        env = {**deployment_env(folder), "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost"}
        command = [sys.executable, "manage.py"]
    else:
        # Chromium talks plain HTTP to 127.0.0.1 here (the cookies stay Secure)
        env = production_env(folder, DJANGO_SECURE_SSL_REDIRECT="0")
        command = [*MEMORY_ADMIN, "manage"]
    run([*command, "migrate", "--verbosity", "0"], env, cwd=ROOT)
    run([*command, "memory_demo"], env, cwd=ROOT)
    pat = ["pat", "--role", "privacy-officer", "--grant", "tenant=acme", "--password", PASSWORD]
    run([*command, "memory_user", "create", *pat], env, cwd=ROOT)
    if request.param == "dev":
        with runserver(env, folder / "runserver.log") as url:
            yield Site(url, folder)
    else:
        with serving(MEMORY_ADMIN, env) as server:
            yield Site(server.url, folder)


@pytest.fixture
def page(browser: Browser, site: Site) -> Iterator[Page]:
    context = browser.new_context(base_url=site.url, viewport={"width": 1280, "height": 900})
    context.set_default_timeout(15_000)
    tab = context.new_page()
    tab.goto("/accounts/login/")
    tab.get_by_label("Username").fill("pat")
    tab.get_by_label("Password").fill(PASSWORD)
    tab.get_by_role("button", name="Sign in").click()
    tab.wait_for_url(re.compile(r"/(\?.*)?$"))
    yield tab
    context.close()


def _memory(site: Site) -> SqliteMemoryStore:
    return SqliteMemoryStore(site.folder / "memory.sqlite3", persist_events=False)


def test_a_refused_deletion_comes_back_once_from_the_browser_alone(page: Page, site: Site) -> None:
    with _memory(site) as store:
        record = find(store, "tenant=acme,user=ravi", "back from leave")
    form_page = f"/records/{record.id}/delete/"
    page.goto(form_page)
    token = page.locator("form input[name=csrfmiddlewaretoken]").first.input_value()
    typed = {"confirm_id": "mem_NOTTHISONE", "reason": "zqxslip: Ravi asked on the phone"}
    # the form posted from this browser (its cookies), the refusal's redirect not followed
    refused = page.request.post(
        f"{form_page}run/",
        form={**typed, "csrfmiddlewaretoken": token},
        headers={"Referer": site.url + form_page},
        max_redirects=0,
    )
    assert refused.status == 303 and refused.headers["location"] == form_page
    sessions = site.sessions()
    assert sessions and not [data for data in sessions if "zqxslip" in data], sessions
    page.goto(form_page)  # followed later
    expect(page.locator("[role=alert]").first).to_contain_text("not the id of this record")
    expect(page.get_by_label("Reason")).to_have_value("zqxslip: Ravi asked on the phone")
    page.reload()  # shown once: a reload is a fresh form
    expect(page.get_by_label("Reason")).to_have_value("")
    with _memory(site) as store:
        assert store.get(record.id) is not None


def test_an_erasure_forgets_every_fragment_and_its_receipt_reads_as_typed_once(page: Page, site: Site) -> None:
    with _memory(site) as store:
        ravis = find(store, "tenant=acme,user=ravi", "refunds endpoint")
    page.goto(f"/records/{ravis.id}/invalidate/")
    page.get_by_label("Reason").fill("Moved to Chen, ledger")  # Mei's surname, in another person's entry
    page.get_by_role("button", name="Invalidate the record").click()
    page.wait_for_url(re.compile(rf"/records/{ravis.id}/$"))
    assert b"Moved to Chen" in site.dashboard_bytes()
    page.goto("/scopes/erase/confirm/?scope=tenant%3Dacme%2Cuser%3Dmei")
    page.get_by_label("Type the scope").fill("tenant=acme,user=mei")
    page.get_by_label("Reason").fill("Mei asked us to forget her (Chen).")
    page.get_by_role("button", name="Erase the scope").click()
    page.wait_for_url(re.compile(r"/audit/\d+/$"))
    reason = page.locator("article.receipt dd").filter(has_text="As you typed it")
    # right after acting: the officer's own words, the erased records' words still removed
    expect(reason).to_contain_text("Mei asked us to forget her ([forgotten]).")
    expect(reason).to_contain_text(re.compile(r"keeps “hmac:[0-9a-f]{24} asked us to forget her \(\[forgotten\]\)\.”"))
    page.reload()
    receipt = page.locator("article.receipt")
    expect(receipt).to_contain_text(re.compile(r"hmac:[0-9a-f]{24} asked us to forget her \(\[forgotten\]\)\."))
    assert "mei" not in receipt.inner_text().casefold() and "As you typed it" not in receipt.inner_text()
    page.goto("/audit/")
    log = page.locator("main").inner_text()
    assert "Moved to [forgotten]" in log and "chen" not in log.casefold()
    stored = site.dashboard_bytes()
    assert b"Chen" not in stored and b"Mei asked" not in stored
