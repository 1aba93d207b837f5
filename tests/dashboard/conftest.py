"""Fixtures for the dashboard: the demo corpus in an in-memory store, and signed-in users."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client

from memory_admin.dashboard import stores
from memory_admin.dashboard.permissions import add_grants, role_named, set_role
from memory_admin.records import MemoryRecord
from memory_admin.scope import parse_scope_text
from memory_admin.store import AdminMemoryStore, InMemoryMemoryStore, RecordListQuery, SqliteMemoryStore
from tests.support.optional import needs_extra, unavailable
from tests.support.stores import demo_memory

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

MakeClient = Callable[..., Client]


@pytest.fixture
def demo_store(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemoryMemoryStore]:
    """The demo corpus, served to the dashboard as its configured store."""
    with demo_memory() as store:
        monkeypatch.setitem(stores._stores, settings.MEMORY_STORE_URL, store)
        yield store


@pytest.fixture
def sqlite_store(tmp_path: Path, settings: Any) -> Iterator[SqliteMemoryStore]:
    """A SQLite memory file in the test's folder, served to the dashboard as its configured store."""
    url = f"sqlite:///{tmp_path / 'memory.sqlite3'}"
    settings.MEMORY_STORE_URL = url
    stores.reset_stores()
    store = stores.get_store(url)
    assert isinstance(store, SqliteMemoryStore)
    yield store
    stores.reset_stores()


PASSWORD = "pw-for-tests-only"
"""Every test user's password."""


def make_user(username: str, role: str | None, grants: tuple[str, ...] = ()) -> User:
    user = User.objects.create_user(username=username, password=PASSWORD)
    if role is not None:
        set_role(user, role_named(role))
    add_grants(user, [parse_scope_text(text) for text in grants])
    return user


@pytest.fixture
def client_for(db: None) -> MakeClient:
    """``client_for("viewer", "tenant=acme")``: a client signed in as a new user with that role and grants."""
    made = 0

    def make(role: str | None, *grants: str) -> Client:
        nonlocal made
        made += 1
        client = Client()
        client.force_login(make_user(f"user{made}", role, grants))
        return client

    return make


def _signed_in(name: str, role: str, grant: str) -> Any:
    def client(client_for: MakeClient, demo_store: InMemoryMemoryStore) -> Client:
        return client_for(role, grant)

    client.__doc__ = f"A client signed in as a {role} of {grant}, over the demo corpus."
    return pytest.fixture(client, name=name)


curator = _signed_in("curator", "curator", "tenant=acme")
officer = _signed_in("officer", "privacy-officer", "tenant=acme")
acme_viewer = _signed_in("acme_viewer", "viewer", "tenant=acme")
dana_viewer = _signed_in("dana_viewer", "viewer", "tenant=acme,user=dana")


def find(store: AdminMemoryStore, scope: str, text: str) -> MemoryRecord:
    """The one record under ``scope`` (any state) whose content contains ``text``."""
    query = RecordListQuery.model_validate(
        {
            "search": {"scope": parse_scope_text(scope), "include_invalidated": True, "limit": 1000},
            "include_expired": True,
        }
    )
    found = [hit.record for hit in store.list_records(query).hits if text in hit.record.content]
    assert len(found) == 1, f"{len(found)} records under {scope} contain {text!r}"
    return found[0]


# --- the browser (Debian's Chromium driven by Playwright) ------------------------------

CHROMIUM = Path(os.environ.get("MEMORY_ADMIN_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def browser(monkeypatch_module: pytest.MonkeyPatch) -> Iterator[Browser]:
    """One headless Chromium per browser-test module (Debian's, never a downloaded one).

    Module-scoped rather than session-scoped on purpose: until it stops, Playwright's
    sync API leaves an event loop marked as running in this thread, which breaks every
    later test that runs an asyncio loop of its own.
    """
    sync_playwright = pytest.importorskip("playwright.sync_api", reason=needs_extra("browser")).sync_playwright
    if not CHROMIUM.exists():
        unavailable(f"no Chromium at {CHROMIUM} (apt-get install chromium, or scripts/ensure-system-deps.sh)")
    # the ORM calls tests make between browser steps are plain blocking calls; Django
    # would refuse them while Playwright's loop counts as running
    monkeypatch_module.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as playwright:
        try:
            launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        except Exception as exc:
            unavailable(f"browser tests cannot run: Chromium did not start: {exc}")
        yield launched
        launched.close()


@pytest.fixture
def site(live_server: Any, demo_store: InMemoryMemoryStore) -> str:
    """The live server over the demo corpus, with a user of each role to sign in as: ada
    (admin), and vera, cora and pat (viewer, curator and privacy officer of tenant acme)."""
    make_user("ada", "admin")
    make_user("vera", "viewer", ("tenant=acme",))
    make_user("cora", "curator", ("tenant=acme",))
    make_user("pat", "privacy-officer", ("tenant=acme",))
    return str(live_server.url)


DESKTOP = {"width": 1280, "height": 900}


@pytest.fixture
def page(browser: Browser, site: str, request: pytest.FixtureRequest) -> Iterator[Page]:
    """A tab on :func:`site`, its viewport the test module's ``VIEWPORT`` (else :data:`DESKTOP`)."""
    with opened_page(browser, site, viewport=getattr(request.module, "VIEWPORT", DESKTOP)) as tab:
        yield tab


@contextmanager
def opened_page(browser: Browser, base_url: str, *, timeout_ms: float = 10_000, **options: Any) -> Iterator[Page]:
    """A tab in a browser context of its own (its own cookies) at ``base_url``, each wait
    up to ``timeout_ms``; ``options`` are Playwright's (``viewport``, ``java_script_enabled``).
    The context is closed afterwards."""
    context = browser.new_context(base_url=base_url, **options)
    context.set_default_timeout(timeout_ms)
    try:
        yield context.new_page()
    finally:
        context.close()


@pytest.fixture(scope="module")
def monkeypatch_module() -> Iterator[pytest.MonkeyPatch]:
    with pytest.MonkeyPatch.context() as patch:
        yield patch


try:
    from playwright.sync_api import expect
except ImportError:  # the browser fixture skips (or fails, in CI) with the reason
    expect = None  # type: ignore[assignment]


def sign_in(page: Page, username: str) -> None:
    """Sign in through the form, as a person would."""
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile(r"/(\?.*)?$"))


def deployment_env(folder: Path, memory_url: str | None = None) -> dict[str, str]:
    """The environment of a dashboard process of its own, as a deployment runs it: its
    database and memory file in ``folder``, this checkout importable."""
    return {
        **{k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR")},
        "DJANGO_SETTINGS_MODULE": "memory_admin.dashboard.settings.dev",
        "DJANGO_ALLOWED_HOSTS": "testserver",
        "DJANGO_SECRET_KEY": "a-secret-key-for-this-test-only-" + "x" * 30,
        "MEMORY_ADMIN_VAR_DIR": str(folder),
        "DASHBOARD_DB_PATH": str(folder / "dashboard.sqlite3"),
        "MEMORY_STORE_URL": memory_url or f"sqlite:///{folder / 'memory.sqlite3'}",
        "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
    }
