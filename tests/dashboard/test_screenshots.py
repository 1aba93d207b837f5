"""Screenshots of every page at 1366 and 375 px, for reviewers who would rather not run
anything: ``make screenshots`` (or ``MEMORY_ADMIN_SCREENSHOTS=docs/screenshots pytest
tests/dashboard/test_screenshots.py``). Skipped unless that variable names a folder."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from memory_admin.store import InMemoryMemoryStore
from tests.dashboard.conftest import make_user, opened_page
from tests.dashboard.pages import every_page

if TYPE_CHECKING:
    from playwright.sync_api import Browser

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTHS = (1366, 375)


@pytest.fixture
def folder() -> Path:
    named = os.environ.get("MEMORY_ADMIN_SCREENSHOTS")
    if not named:
        pytest.skip("set MEMORY_ADMIN_SCREENSHOTS to a folder to take screenshots")
    path = Path(named)
    path.mkdir(parents=True, exist_ok=True)
    return path


def test_screenshot_every_page(
    folder: Path, browser: Browser, live_server: Any, demo_store: InMemoryMemoryStore
) -> None:
    make_user("ada", "admin")
    pages = every_page(demo_store)
    for width in WIDTHS:
        with opened_page(browser, live_server.url, viewport={"width": width, "height": 900}) as tab:
            for name, url in pages:
                if name == "sign-in":
                    tab.goto(url)
                    tab.screenshot(path=str(folder / f"{name}-{width}.png"), full_page=True)
                    tab.get_by_label("Username").fill("ada")
                    tab.get_by_label("Password").fill("pw-for-tests-only")
                    tab.get_by_role("button", name="Sign in").click()
                    tab.wait_for_url(f"{live_server.url}/")
                    continue
                tab.goto(url)
                if name == "recall":
                    tab.wait_for_selector("html[data-charts]")
                if name == "learned":
                    tab.wait_for_selector("html[data-learned-chart]")
                tab.screenshot(path=str(folder / f"{name}-{width}.png"), full_page=True, animations="disabled")
