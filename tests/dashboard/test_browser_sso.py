"""Single sign-on in real Chromium, under the settings ``make run`` uses
(``settings.dev``, served by ``manage.py runserver``) and the production settings
(``settings.prod``, served by ``memory-admin serve``): each a dashboard process of its
own, talking over loopback to a real OpenID Connect provider running in this test
process (oidc-provider-mock).

The browser presses "Sign in with …", consents on the provider's own page and comes
back signed in with the role and grant its groups give; a second sign-in with other
groups changes them; sign-out goes through the provider's end-session page back to the
sign-in page; a denied consent, a replayed callback and a person with no mapped role
are styled pages inside the layout; a de-provisioned person is signed out at the next
re-check. Every dashboard page runs under the CSP — ``form-action`` must let the
sign-in and sign-out forms reach the provider — and a violation fails the test.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.dashboard.conftest import deployment_env, expect
from tests.dashboard.deployed import runserver
from tests.dashboard.oidc_provider import CLIENT_ID, CLIENT_SECRET, Provider, running_provider
from tests.dashboard.server import production_env, run, serving

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
MEMORY_ADMIN = [sys.executable, "-m", "memory_admin"]
RECHECK_SECONDS = 2


@dataclass
class Site:
    url: str
    provider: Provider
    settings: str


def sso_env(provider: Provider) -> dict[str, str]:
    return {
        "OIDC_ISSUER": provider.url,
        "OIDC_CLIENT_ID": CLIENT_ID,
        "OIDC_CLIENT_SECRET": CLIENT_SECRET,
        "OIDC_PROVIDER_NAME": "Acme SSO",
        "OIDC_RECHECK_SECONDS": str(RECHECK_SECONDS),
    }


@pytest.fixture(scope="module", params=["dev", "prod"])
def site(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    folder = tmp_path_factory.mktemp(f"sso-{request.param}")
    with running_provider() as provider:
        if request.param == "dev":
            env = {
                **deployment_env(folder),
                "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
                **sso_env(provider),
            }
            run([sys.executable, "manage.py", "migrate", "--verbosity", "0"], env, cwd=ROOT)
            run([sys.executable, "manage.py", "memory_demo"], env, cwd=ROOT)
            with runserver(env, folder / "runserver.log") as url:
                yield Site(url, provider, "dev")
        else:
            # Chromium talks plain HTTP to 127.0.0.1 here (the cookies stay Secure)
            env = production_env(folder, DJANGO_SECURE_SSL_REDIRECT="0", **sso_env(provider))
            run([*MEMORY_ADMIN, "migrate", "--verbosity", "0"], env)
            run([*MEMORY_ADMIN, "demo"], env)
            with serving(MEMORY_ADMIN, env) as server:
                yield Site(server.url, provider, "prod")


@pytest.fixture
def console() -> list[str]:
    return []


@pytest.fixture
def page(browser: Browser, site: Site, console: list[str]) -> Iterator[Page]:
    context = browser.new_context(base_url=site.url, viewport={"width": 1280, "height": 900})
    context.set_default_timeout(15_000)

    # nothing leaves loopback, whatever a page links to
    def only_loopback(route: object) -> None:
        from playwright.sync_api import Route

        assert isinstance(route, Route)
        if re.match(r"^https?://(127\.0\.0\.1|localhost)(:\d+)?/", route.request.url):
            route.continue_()
        else:
            console.append(f"blocked: {route.request.url}")
            route.abort()

    context.route("**/*", only_loopback)
    tab = context.new_page()
    tab.on("console", lambda message: console.append(f"{message.type}: {message.text}"))
    tab.on("pageerror", lambda error: console.append(f"pageerror: {error}"))
    yield tab
    context.close()
    violations = [line for line in console if "Content Security Policy" in line or line.startswith("pageerror")]
    assert violations == [], violations


def consent(page: Page, sub: str) -> None:
    """On the provider's own page: sign in as ``sub``."""
    expect(page.get_by_role("heading", name="Authorize Client")).to_be_visible()
    page.get_by_placeholder("sub").fill(sub)
    page.get_by_role("button", name="Authorize").click()


def sign_in(page: Page, site: Site, sub: str, groups: list[str]) -> None:
    site.provider.set_user(sub, preferred_username=sub, email=f"{sub}@example.org", groups=groups)
    page.goto("/")
    assert "/accounts/login/" in page.url
    page.get_by_role("button", name="Sign in with Acme SSO").click()
    page.wait_for_url(f"{site.provider.url}/oauth2/authorize?*")
    consent(page, sub)


def test_sign_in_through_the_provider_and_out_again(page: Page, site: Site) -> None:
    sub = f"dana-{site.settings}"
    sign_in(page, site, sub, ["memory-admin:viewer", "memory-admin:grant:tenant=acme", "everyone"])
    page.wait_for_url(re.compile(r"/(\?.*)?$"))
    expect(page.get_by_role("heading", name="Memory", exact=True)).to_be_visible()
    expect(page.locator(".who")).to_contain_text(f"{sub} · viewer")
    expect(page.locator(".messages")).to_contain_text("Acme SSO changed your access: viewer added; tenant=acme added.")
    expect(page.locator(".facets h2")).to_contain_text("tenant=acme")
    page.goto("/?scope=tenant%3Dglobex")
    expect(page.locator("#id_scope-error")).to_contain_text("outside the scopes you may see")  # beside the field

    # the groups change at the provider; the next sign-in brings them
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="End Session")).to_be_visible()  # the provider's page
    assert page.url.startswith(f"{site.provider.url}/oauth2/end_session?")
    page.get_by_role("button", name="End session").click()
    page.wait_for_url(re.compile(r"/accounts/login/$"))
    page.goto("/")
    assert "/accounts/login/" in page.url  # signed out of the dashboard

    sign_in(page, site, sub, ["memory-admin:curator", "memory-admin:grant:tenant=globex"])
    page.wait_for_url(re.compile(r"/(\?.*)?$"))
    expect(page.locator(".who")).to_contain_text(f"{sub} · curator")
    changes = "curator added; viewer removed; tenant=globex added; tenant=acme removed"
    expect(page.locator(".messages")).to_contain_text(changes)
    page.goto("/?scope=tenant%3Dglobex")
    expect(page.locator(".facets h2")).to_contain_text("tenant=globex")
    expect(page.get_by_role("link", name="Audit log")).to_be_visible()  # curators read it


def test_failures_are_pages_inside_the_layout(page: Page, site: Site) -> None:
    site.provider.set_user("olaf", groups=["everyone"])
    page.goto("/accounts/login/")
    page.get_by_role("button", name="Sign in with Acme SSO").click()
    expect(page.get_by_role("heading", name="Authorize Client")).to_be_visible()
    page.get_by_role("button", name="Deny").click()
    failure = page.locator("section.sso-failure")
    expect(failure.get_by_role("heading")).to_contain_text("Sign-in was declined")
    assert "/accounts/sso/callback/?" in page.url and "error=access_denied" in page.url
    expect(page.locator("header.topbar .brand")).to_be_visible()
    # the stylesheet applied: the card is a card, not unstyled text (once it has loaded: a
    # heading is visible before a busy server has sent the stylesheet)
    page.wait_for_load_state("load")
    assert page.locator("section.sso-failure").evaluate("e => getComputedStyle(e).borderRadius") != "0px"

    # try again from the failure page; no dashboard role for this person
    failure.get_by_role("button", name="Sign in with Acme SSO").click()
    consent(page, "olaf")
    expect(page.locator("section.sso-failure h1")).to_contain_text("No dashboard role")
    callback = page.url
    # the same callback again (a reload): refused, never a second sign-in
    page.goto(callback)
    expect(page.locator("section.sso-failure h1")).to_contain_text("already used")
    page.goto("/")
    assert "/accounts/login/" in page.url


def test_a_de_provisioned_person_is_signed_out_at_the_next_re_check(page: Page, site: Site) -> None:
    sub = f"omar-{site.settings}"
    sign_in(page, site, sub, ["memory-admin:viewer", "memory-admin:grant:tenant=acme"])
    page.wait_for_url(re.compile(r"/(\?.*)?$"))
    expect(page.locator(".who")).to_contain_text(sub)
    time.sleep(RECHECK_SECONDS + 0.5)
    page.reload()
    expect(page.locator(".who")).to_contain_text(sub)  # re-checked, still vouched for

    site.provider.revoke(sub)
    time.sleep(RECHECK_SECONDS + 0.5)
    page.get_by_role("link", name="Scopes").click()
    page.wait_for_url(re.compile(r"/accounts/sso/ended/\?why=refused$"))
    expect(page.get_by_role("heading", name="Your sign-in has ended")).to_be_visible()
    expect(page.get_by_text("Acme SSO no longer vouches for this sign-in")).to_be_visible()
    page.goto("/")
    assert "/accounts/login/" in page.url
