"""Single sign-on against a real OpenID Connect provider running in this process on
loopback (oidc-provider-mock: ``tests/dashboard/oidc_provider.py``), driven with
Django's test client: the dashboard's own views, middleware and database, the
provider's own consent form, token, userinfo, key set and end-session endpoints.

Covered: the first sign-in creating a user with roles and grants from the groups
claim; claims changing between two sign-ins; local roles and grants left alone;
refusals (no mapped role, a missing, oversized or malformed claim, a switched-off
account); every failure a page with nothing created (the provider down at the start
and at the callback, consent denied, a bad state, a replayed callback, another
attempt's nonce, a token from another issuer, one for another audience, a sign-in
that took too long); discovery and key caching with rotation; the re-check ending a
de-provisioned person's access and re-synchronising changed claims; sign-out at the
provider; the password switch; the CSP's form-action.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
import requests
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.test import Client
from django.urls import reverse

from memory_admin.dashboard.models import AuditEntry, IdentityLink, ProviderGrant, ScopeGrant
from memory_admin.dashboard.permissions import add_grants, grants_of, role_of
from memory_admin.dashboard.sso.provider import forget_cached
from memory_admin.scope import format_scope, parse_scope_text
from tests.dashboard.conftest import PASSWORD, make_user
from tests.dashboard.oidc_provider import (
    CLIENT_ID,
    CLIENT_SECRET,
    Provider,
    another_client,
    naming_issuer,
    path_and_query,
    query,
    running_provider,
    with_param,
)
from tests.dashboard.test_security import assert_strict_csp

pytestmark = pytest.mark.django_db

VIEWER_ACME = ["memory-admin:viewer", "memory-admin:grant:tenant=acme", "everyone", "wiki-editors"]


def configure(settings: Any, provider: Provider) -> None:
    settings.OIDC_ISSUER = provider.url
    settings.OIDC_CLIENT_ID = CLIENT_ID
    settings.OIDC_CLIENT_SECRET = CLIENT_SECRET
    settings.OIDC_PROVIDER_NAME = "Acme SSO"
    forget_cached()


@pytest.fixture
def provider(settings: Any) -> Iterator[Provider]:
    with running_provider() as running:
        configure(settings, running)
        yield running
    forget_cached()


def start(client: Client, next_url: str = "") -> str:
    """Press "Sign in with …": the URL the dashboard sends the browser to."""
    response = client.post(reverse("sso_start"), {"next": next_url})
    assert response.status_code == 302, response.content.decode()[:2000]
    return str(response["Location"])


def sign_in(client: Client, provider: Provider, sub: str, groups: list[str] | None = None, **claims: Any) -> Any:
    """A whole sign-in as ``sub`` with these claims; the callback's response."""
    if groups is not None:
        claims["groups"] = groups
    claims.setdefault("preferred_username", sub)
    claims.setdefault("email", f"{sub}@example.org")
    provider.set_user(sub, **claims)
    back = provider.approve(start(client), sub)
    assert back.startswith("http://testserver/accounts/sso/callback/"), back
    return client.get(path_and_query(back))


def page(response: Any) -> str:
    return str(response.content.decode())


def assert_failure(response: Any, status: int, kind: str, words: str) -> None:
    text = page(response)
    assert response.status_code == status, text[:3000]
    assert f'data-failure="{kind}"' in text, text[:3000]
    assert words in text
    # inside the layout: the bar, the stylesheet, a way to try again
    assert '<header class="topbar">' in text and "dashboard/style.css" in text
    assert "Sign in with Acme SSO" in text and 'href="/accounts/login/"' in text
    assert "Traceback" not in text


def actions(username: str | None = None) -> list[tuple[str, str, str]]:
    entries = AuditEntry.objects.order_by("id")
    if username is not None:
        entries = entries.filter(actor=username)
    return [(e.action, e.scope_text, e.counts.get("role", "")) for e in entries]


def provider_grants(user: User) -> set[str]:
    return {
        format_scope(json.loads(text))
        for text in ProviderGrant.objects.filter(grant__user=user).values_list("grant__scope_json", flat=True)
    }


def signed_in_user(client: Client) -> User | None:
    user_id = client.session.get("_auth_user_id")
    return User.objects.filter(pk=user_id).first() if user_id else None


# --- signing in -----------------------------------------------------------------------------


def test_the_sign_in_page_offers_the_provider_only_when_configured(client: Client, settings: Any) -> None:
    assert "Sign in with" not in page(client.get(reverse("login")))  # off by default
    with running_provider() as running:
        configure(settings, running)
        html = page(Client().get(reverse("login")))
    assert "Sign in with Acme SSO" in html and 'action="/accounts/sso/start/"' in html
    assert 'name="password"' in html  # the password form stays (break-glass admin)


def test_a_first_sign_in_creates_the_user_with_role_and_grant_from_the_groups_claim(
    client: Client, provider: Provider
) -> None:
    authorize = start(client)
    sent = query(authorize)
    assert authorize.startswith(f"{provider.url}/oauth2/authorize?")
    assert (
        sent["client_id"] == CLIENT_ID and sent["response_type"] == "code" and sent["scope"] == "openid email profile"
    )
    assert sent["redirect_uri"] == "http://testserver/accounts/sso/callback/"
    assert sent["code_challenge_method"] == "S256" and len(sent["code_challenge"]) == 43  # PKCE
    assert len(sent["state"]) >= 32 and len(sent["nonce"]) >= 32

    response = sign_in(client, provider, "dana", VIEWER_ACME)
    assert response.status_code == 302 and response["Location"] == "/"
    user = User.objects.get(username="dana")
    assert signed_in_user(client) == user and user.email == "dana@example.org"
    assert not user.has_usable_password()  # never a password to guess
    assert role_of(user) is not None and role_of(user).slug == "viewer"  # type: ignore[union-attr]
    assert [format_scope(g) for g in grants_of(user)] == ["tenant=acme"]
    assert provider_grants(user) == {"tenant=acme"}
    link = IdentityLink.objects.get(user=user)
    assert (link.issuer, link.subject, link.managed_roles) == (provider.url, "dana", ["viewer"])
    assert actions("dana") == [
        ("sso_user", "", ""),
        ("sso_role_add", "", "viewer"),
        ("sso_grant_add", "tenant=acme", ""),
    ]
    assert AuditEntry.objects.filter(outcome="done").count() == 3
    browse = client.get("/?scope=tenant%3Dacme")
    assert browse.status_code == 200 and "dana" in page(browse)
    assert "Acme SSO changed your access: viewer added; tenant=acme added." in page(browse)


def test_claims_changing_between_two_sign_ins_change_roles_and_grants(client: Client, provider: Provider) -> None:
    sign_in(client, provider, "dana", VIEWER_ACME)
    AuditEntry.objects.all().delete()
    response = sign_in(
        Client(), provider, "dana", ["memory-admin:curator", "memory-admin:grant:tenant=globex,user=ravi"]
    )
    assert response.status_code == 302
    user = User.objects.get(username="dana")
    assert role_of(user).slug == "curator"  # type: ignore[union-attr]
    assert set(user.groups.values_list("name", flat=True)) == {"curator"}  # viewer taken away
    assert [format_scope(g) for g in grants_of(user)] == ["tenant=globex,user=ravi"]
    assert IdentityLink.objects.get(user=user).managed_roles == ["curator"]
    assert sorted(actions("dana")) == sorted(
        [
            ("sso_role_add", "", "curator"),
            ("sso_role_remove", "", "viewer"),
            ("sso_grant_add", "tenant=globex,user=ravi", ""),
            ("sso_grant_remove", "tenant=acme", ""),
        ]
    )
    assert User.objects.count() == 1  # the same person, found by subject


def test_local_roles_and_grants_are_never_taken_away_by_the_provider(client: Client, provider: Provider) -> None:
    sign_in(client, provider, "dana", [*VIEWER_ACME, "memory-admin:grant:tenant=globex"])
    user = User.objects.get(username="dana")
    # an admin gives Dana more, locally: a role, a grant, and takes over the globex grant
    from django.contrib.auth.models import Group

    user.groups.add(Group.objects.get(name="privacy officer"))
    add_grants(user, [parse_scope_text("tenant=initech")])
    ScopeGrant.objects.filter(user=user, scope_json='{"tenant":"globex"}').delete()
    add_grants(user, [parse_scope_text("tenant=globex")])

    sign_in(Client(), provider, "dana", ["memory-admin:curator"])
    user.refresh_from_db()
    assert set(user.groups.values_list("name", flat=True)) == {"curator", "privacy officer"}
    assert sorted(format_scope(g) for g in grants_of(user)) == ["tenant=globex", "tenant=initech"]
    assert provider_grants(user) == set()
    assert IdentityLink.objects.get(user=user).managed_roles == ["curator"]
    # the provider naming a role someone already holds locally does not make it the provider's
    sign_in(Client(), provider, "dana", ["memory-admin:curator", "memory-admin:privacy-officer"])
    sign_in(Client(), provider, "dana", ["memory-admin:curator"])
    assert set(user.groups.values_list("name", flat=True)) == {"curator", "privacy officer"}


def test_memory_user_show_says_what_came_from_the_provider(client: Client, provider: Provider) -> None:
    sign_in(client, provider, "dana", VIEWER_ACME)
    add_grants(User.objects.get(username="dana"), [parse_scope_text("tenant=initech")])
    out = io.StringIO()
    call_command("memory_user", "show", "dana", stdout=out)
    assert out.getvalue().strip() == (
        "dana: viewer — sees tenant=acme, tenant=initech (single sign-on; from the provider: viewer, tenant=acme)"
    )


def test_an_existing_local_username_is_not_taken_over(client: Client, provider: Provider) -> None:
    local = make_user("dana", "admin")
    response = sign_in(client, provider, "dana-sub", VIEWER_ACME, preferred_username="dana")
    assert response.status_code == 302
    made = signed_in_user(client)
    assert made is not None and made.username == "dana-2" and made != local
    local.refresh_from_db()
    assert role_of(local).slug == "admin" and local.check_password(PASSWORD)  # type: ignore[union-attr]


def test_the_page_to_land_on_travels_through_the_sign_in(client: Client, provider: Provider) -> None:
    provider.set_user("dana", groups=VIEWER_ACME)
    back = provider.approve(start(client, next_url="/recall/?scope=tenant%3Dacme"), "dana")
    assert client.get(path_and_query(back))["Location"] == "/recall/?scope=tenant%3Dacme"
    other = Client()
    back = provider.approve(start(other, next_url="https://elsewhere.example/"), "dana")
    assert other.get(path_and_query(back))["Location"] == "/"  # never off this site


def test_starting_a_sign_in_is_a_post(client: Client, provider: Provider) -> None:
    assert client.get(reverse("sso_start")).status_code == 405
    csrf = Client(enforce_csrf_checks=True)
    assert csrf.post(reverse("sso_start")).status_code == 403


def test_the_token_request_proves_the_pkce_verifier(settings: Any) -> None:
    bodies: list[str] = []

    def record(app: Any) -> Any:
        def middleware(environ: dict[str, Any], start_response: Any) -> Any:
            if environ.get("PATH_INFO") == "/oauth2/token":
                body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
                bodies.append(body.decode())
                environ["wsgi.input"] = io.BytesIO(body)
            return app(environ, start_response)

        return middleware

    with running_provider(wrap=record) as running:
        configure(settings, running)
        client = Client()
        running.set_user("dana", groups=VIEWER_ACME)
        authorize = start(client)
        assert client.get(path_and_query(running.approve(authorize, "dana"))).status_code == 302
    (body,) = bodies
    verifier = dict(pair.split("=", 1) for pair in body.split("&"))["code_verifier"]
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    assert challenge == query(authorize)["code_challenge"]
    assert "client_secret" not in body  # sent as HTTP Basic, the provider's default method


# --- refusals -------------------------------------------------------------------------------


def test_a_person_with_no_mapped_role_is_refused_and_nothing_is_created(client: Client, provider: Provider) -> None:
    response = sign_in(client, provider, "olaf", ["everyone", "memory-admin:grant:tenant=acme", "memory-admin:chief"])
    assert_failure(response, 403, "no_role", "none of your groups gives you a role")
    assert not User.objects.exists() and not ScopeGrant.objects.exists() and not AuditEntry.objects.exists()
    assert signed_in_user(client) is None


def test_a_known_person_who_loses_every_role_loses_what_the_provider_gave(client: Client, provider: Provider) -> None:
    sign_in(client, provider, "dana", VIEWER_ACME)
    user = User.objects.get(username="dana")
    add_grants(user, [parse_scope_text("tenant=initech")])  # local
    AuditEntry.objects.all().delete()
    other = Client()
    response = sign_in(other, provider, "dana", ["everyone"])
    assert_failure(response, 403, "no_role", "none of your groups gives you a role")
    assert signed_in_user(other) is None
    assert not user.groups.exists() and [format_scope(g) for g in grants_of(user)] == ["tenant=initech"]
    assert sorted(actions("dana")) == sorted(
        [("sso_refused", "", ""), ("sso_role_remove", "", "viewer"), ("sso_grant_remove", "tenant=acme", "")]
    )


@pytest.mark.parametrize(
    ("claims", "kind", "words"),
    [
        ({}, "claims_missing", "did not send the &#x27;groups&#x27; claim"),
        (
            {"_claim_names": {"groups": "src1"}, "_claim_sources": {"src1": {"endpoint": "https://graph.example"}}},
            "claims_missing",
            "in too many groups to fit in a token",
        ),
        ({"groups": [f"g{n}" for n in range(6)] + ["memory-admin:admin"]}, "claims_oversized", "lists 7 values"),
        ({"groups": [{"name": "memory-admin:admin"}]}, "claims_malformed", "is not a list of names"),
        ({"groups": "memory-admin:admin,memory-admin:viewer"}, "no_role", "none of your groups"),
    ],
    ids=["missing", "entra-overage", "oversized", "malformed", "one-string"],
)
def test_a_missing_oversized_or_malformed_groups_claim_fails_closed(
    client: Client, provider: Provider, settings: Any, claims: dict[str, Any], kind: str, words: str
) -> None:
    settings.OIDC_MAX_GROUPS = 6
    sign_in(client, provider, "dana", VIEWER_ACME)
    before = (list(User.objects.get().groups.values_list("name", flat=True)), ScopeGrant.objects.count())
    other = Client()
    response = sign_in(other, provider, "dana", **claims)
    assert_failure(response, 403, kind, words)
    assert signed_in_user(other) is None
    user = User.objects.get()
    if kind != "no_role":  # a claim that cannot be trusted removes nothing either
        assert (list(user.groups.values_list("name", flat=True)), ScopeGrant.objects.count()) == before
    # and for someone new, it creates nothing
    response = sign_in(Client(), provider, "newcomer", **claims)
    assert response.status_code == 403 and not User.objects.filter(username="newcomer").exists()


def test_an_account_switched_off_locally_stays_off(client: Client, provider: Provider) -> None:
    sign_in(client, provider, "dana", VIEWER_ACME)
    User.objects.filter(username="dana").update(is_active=False)
    response = sign_in(Client(), provider, "dana", VIEWER_ACME)
    assert_failure(response, 403, "account_disabled", "has been switched off")


# --- failures: each a page, nothing created -----------------------------------------------------


def assert_nothing_created() -> None:
    assert not User.objects.exists() and not ScopeGrant.objects.exists() and not IdentityLink.objects.exists()


def test_denied_consent_is_a_page(client: Client, provider: Provider) -> None:
    back = provider.deny(start(client))
    assert query(back)["error"] == "access_denied"
    response = client.get(path_and_query(back))
    assert_failure(response, 403, "denied", "did not let the dashboard sign you in")
    assert_nothing_created()
    # the state went with the refusal: the same answer again is a replay
    assert_failure(client.get(path_and_query(back)), 403, "denied", "did not let")


def test_a_state_this_browser_did_not_start_is_refused(client: Client, provider: Provider) -> None:
    provider.set_user("dana", groups=VIEWER_ACME)
    back = provider.approve(start(client), "dana")
    response = client.get(path_and_query(with_param(back, state="x" * 32)))
    assert_failure(response, 400, "bad_state", "does not belong to a sign-in this browser started")
    assert_nothing_created()
    # a browser that started nothing at all
    response = Client().get(path_and_query(back))
    assert_failure(response, 400, "no_session", "without the sign-in this dashboard started")
    assert_nothing_created()


def test_a_replayed_callback_is_refused(client: Client, provider: Provider) -> None:
    provider.set_user("dana", groups=VIEWER_ACME)
    back = provider.approve(start(client), "dana")
    assert client.get(path_and_query(back)).status_code == 302
    client.logout()
    entries = AuditEntry.objects.count()
    response = client.get(path_and_query(back))
    assert_failure(response, 400, "no_session", "without the sign-in")  # logging out emptied the session
    # in the same session, still signed in: recognised as a replay
    second = Client()
    back = provider.approve(start(second), "dana")
    assert second.get(path_and_query(back)).status_code == 302
    assert_failure(second.get(path_and_query(back)), 400, "replayed", "has been used already")
    assert AuditEntry.objects.count() == entries  # nothing synchronised again


def test_a_token_made_for_another_sign_in_attempt_is_refused(client: Client, provider: Provider) -> None:
    provider.set_user("dana", groups=VIEWER_ACME)
    authorize = with_param(start(client), nonce="n" * 32)  # the provider embeds this nonce instead
    response = client.get(path_and_query(provider.approve(authorize, "dana")))
    assert_failure(response, 400, "bad_nonce", "made for a different sign-in attempt")
    assert_nothing_created()


def test_a_token_from_another_issuer_is_refused(client: Client, provider: Provider, settings: Any) -> None:
    # the provider names itself by the host it is asked at: its token endpoint reached
    # as localhost issues tokens from "http://localhost:…", signed with the same key
    port = provider.url.rsplit(":", 1)[1]
    settings.OIDC_ENDPOINTS = {"token_endpoint": f"http://localhost:{port}/oauth2/token"}
    forget_cached()
    response = sign_in(client, provider, "dana", VIEWER_ACME)
    assert_failure(response, 400, "wrong_issuer", "not issued by Acme SSO")
    assert_nothing_created()


def test_a_token_for_another_application_is_refused(settings: Any) -> None:
    with running_provider(wrap=another_client("another-app")) as running:
        configure(settings, running)
        client = Client()
        response = sign_in(client, running, "dana", VIEWER_ACME)
    assert_failure(response, 400, "wrong_audience", "issued the token to another application")
    assert_nothing_created()


def test_the_provider_down_when_a_sign_in_starts_is_a_page(client: Client, provider: Provider) -> None:
    provider.stop()
    response = client.post(reverse("sso_start"))
    assert_failure(response, 503, "provider_down", "could not reach Acme SSO")


def test_the_provider_down_at_the_callback_is_a_page(client: Client, provider: Provider) -> None:
    provider.set_user("dana", groups=VIEWER_ACME)
    back = provider.approve(start(client), "dana")
    provider.stop()
    response = client.get(path_and_query(back))
    assert_failure(response, 503, "provider_down", "could not reach Acme SSO")
    assert_nothing_created()


def test_a_discovery_document_for_another_issuer_is_refused(settings: Any) -> None:
    with running_provider(wrap=naming_issuer("https://login.example.org")) as running:
        configure(settings, running)
        response = Client().post(reverse("sso_start"))
    assert_failure(response, 503, "provider_misconfigured", "not as the dashboard is configured to expect")


def test_a_sign_in_that_took_too_long_is_refused(client: Client, provider: Provider) -> None:
    provider.set_user("dana", groups=VIEWER_ACME)
    back = provider.approve(start(client), "dana")
    session = client.session
    for entry in session["oidc_states"].values():
        entry["added_on"] = time.time() - 601
    session.save()
    assert_failure(client.get(path_and_query(back)), 400, "expired_state", "more than ten minutes ago")
    assert_nothing_created()


def test_the_provider_refusing_the_code_is_a_page(client: Client, provider: Provider) -> None:
    provider.set_user("dana", groups=VIEWER_ACME)
    back = provider.approve(start(client), "dana")
    response = client.get(path_and_query(with_param(back, code="not-a-code-it-issued")))
    assert_failure(response, 400, "code_refused", "would not exchange the code")
    assert_nothing_created()


def test_single_sign_on_off_answers_404_pages(client: Client) -> None:
    response = client.post(reverse("sso_start"))
    assert response.status_code == 404 and "Single sign-on is off" in page(response)
    assert client.get(reverse("sso_callback") + "?code=x&state=y").status_code == 404


# --- discovery and keys ------------------------------------------------------------------------


def test_discovery_and_keys_are_fetched_once_and_keys_again_after_a_rotation(provider: Provider) -> None:
    for _ in range(2):
        assert sign_in(Client(), provider, "dana", VIEWER_ACME).status_code == 302
    assert provider.hits["/.well-known/openid-configuration"] == 1
    assert provider.hits["/jwks"] == 1
    old = provider.key_ids()
    new = provider.rotate_keys()
    assert provider.key_ids() == [new] != old
    fetched = provider.hits["/jwks"]  # the two looks above included
    assert sign_in(Client(), provider, "dana", VIEWER_ACME).status_code == 302  # signed with the new key
    assert provider.hits["/jwks"] == fetched + 1  # fetched again, once
    assert sign_in(Client(), provider, "dana", VIEWER_ACME).status_code == 302
    assert provider.hits["/jwks"] == fetched + 1


# --- access that ends -------------------------------------------------------------------------


def test_a_de_provisioned_person_loses_access_at_the_next_re_check(
    client: Client, provider: Provider, settings: Any
) -> None:
    sign_in(client, provider, "dana", VIEWER_ACME)
    assert client.get("/").status_code == 200
    tokens_asked = provider.hits["/oauth2/token"]
    assert client.get("/").status_code == 200
    assert provider.hits["/oauth2/token"] == tokens_asked  # within the window: the provider is not asked

    settings.OIDC_RECHECK_SECONDS = 0
    assert client.get("/").status_code == 200  # asked, and still vouched for
    assert provider.hits["/oauth2/token"] == tokens_asked + 1 and provider.hits["/userinfo"] >= 2

    provider.revoke("dana")
    response = client.get("/?scope=tenant%3Dacme")
    assert response.status_code == 302 and response["Location"] == "/accounts/sso/ended/?why=refused"
    assert signed_in_user(client) is None
    ended = client.get(response["Location"])
    assert ended.status_code == 200 and "Acme SSO no longer vouches for this sign-in" in page(ended)
    assert client.get("/").status_code == 302  # signed out
    assert actions("dana")[-1] == ("sso_ended", "", "")


def test_an_htmx_request_is_sent_to_the_ended_page(client: Client, provider: Provider, settings: Any) -> None:
    sign_in(client, provider, "dana", VIEWER_ACME)
    settings.OIDC_RECHECK_SECONDS = 0
    provider.revoke("dana")
    response = client.get("/?scope=tenant%3Dacme", HTTP_HX_REQUEST="true")
    assert response["HX-Redirect"] == "/accounts/sso/ended/?why=refused"


def test_a_re_check_applies_changed_claims(client: Client, provider: Provider, settings: Any) -> None:
    sign_in(client, provider, "dana", VIEWER_ACME)
    settings.OIDC_RECHECK_SECONDS = 0
    provider.set_user("dana", groups=["memory-admin:curator", "memory-admin:grant:tenant=globex"])
    assert client.get("/").status_code == 200
    user = User.objects.get(username="dana")
    assert role_of(user).slug == "curator"  # type: ignore[union-attr]
    assert [format_scope(g) for g in grants_of(user)] == ["tenant=globex"]
    assert ("sso_role_add", "", "curator") in actions("dana")
    assert "at a re-check" in AuditEntry.objects.filter(action="sso_role_add").first().reason  # type: ignore[union-attr]

    provider.set_user("dana", groups=["everyone"])  # removed from every dashboard group
    response = client.get("/")
    assert response["Location"] == "/accounts/sso/ended/?why=no_role"
    assert not user.groups.exists() and not grants_of(user)


def test_without_a_refresh_token_the_session_lasts_as_long_as_the_access_token(settings: Any) -> None:
    with running_provider(refresh_tokens=False, token_lifetime=timedelta(seconds=2)) as running:
        configure(settings, running)
        client = Client()
        sign_in(client, running, "dana", VIEWER_ACME)
        assert client.session["sso_tokens"]["refresh_token"] == ""
        settings.OIDC_RECHECK_SECONDS = 0
        assert client.get("/").status_code == 200  # the access token still works at userinfo
        assert running.hits["/oauth2/token"] == 1
        time.sleep(2.1)
        response = client.get("/")
    assert response["Location"] == "/accounts/sso/ended/?why=renew"
    ended = client.get(response["Location"])
    assert "Your sign-in needs renewing" in page(ended) and "Sign in with Acme SSO" in page(ended)
    assert User.objects.get(username="dana").groups.exists()  # nothing taken away: only renewed


def test_the_provider_down_at_a_re_check_lets_nothing_through_but_keeps_the_session(
    client: Client, provider: Provider, settings: Any
) -> None:
    sign_in(client, provider, "dana", VIEWER_ACME)
    settings.OIDC_RECHECK_SECONDS = 0
    provider.stop()
    response = client.get("/?scope=tenant%3Dacme")
    assert response.status_code == 503 and "could not confirm your sign-in with Acme SSO" in page(response)
    assert "green tea" not in page(response) and signed_in_user(client) is not None
    fragment = client.get("/?scope=tenant%3Dacme", HTTP_HX_REQUEST="true")
    assert fragment.status_code == 503 and fragment["HX-Retarget"] == "#htmx-error"


def test_signing_out_signs_out_of_the_provider_too(client: Client, provider: Provider) -> None:
    sign_in(client, provider, "dana", VIEWER_ACME)
    id_token = client.session["sso_tokens"]["id_token"]
    response = client.post(reverse("logout"))
    assert response.status_code == 302
    location = str(response["Location"])
    assert location.startswith(f"{provider.url}/oauth2/end_session?")
    assert query(location) == {
        "client_id": CLIENT_ID,
        "id_token_hint": id_token,
        "post_logout_redirect_uri": "http://testserver/accounts/login/",
    }
    assert signed_in_user(client) is None
    assert requests.get(location, timeout=10).status_code == 200  # the provider's own sign-out page


def test_a_password_session_signs_out_locally(client: Client, provider: Provider) -> None:
    make_user("lena", "admin")
    assert client.post(reverse("login"), {"username": "lena", "password": PASSWORD}).status_code == 302
    assert client.post(reverse("logout"))["Location"] == "/accounts/login/"


# --- the password switch and the policy ------------------------------------------------------------


def test_password_sign_in_switched_off(client: Client, provider: Provider, settings: Any) -> None:
    make_user("lena", "admin")
    signed = Client()
    assert signed.post(reverse("login"), {"username": "lena", "password": PASSWORD}).status_code == 302
    settings.MEMORY_ADMIN_LOCAL_SIGNIN = False
    html = page(client.get(reverse("login")))
    assert "Sign in with Acme SSO" in html and 'name="password"' not in html
    refused = client.post(reverse("login"), {"username": "lena", "password": PASSWORD})
    assert refused.status_code == 403 and "Signing in with a password is switched off" in page(refused)
    assert signed_in_user(client) is None
    assert signed.get("/").status_code == 302  # a password session made before ends too
    assert sign_in(Client(), provider, "dana", VIEWER_ACME).status_code == 302  # the provider still works


def test_the_policy_lets_forms_reach_the_provider_and_nothing_else(client: Client, provider: Provider) -> None:
    response = client.get(reverse("login"))
    assert_strict_csp(response)
    policy = response["Content-Security-Policy"]
    assert f"form-action 'self' {provider.url};" in policy
    assert policy.count("form-action") == 1 and "default-src 'self'" in policy


def test_misconfiguration_is_a_system_check_error(settings: Any) -> None:
    settings.OIDC_ISSUER = "https://login.example.org/realms/acme"
    settings.OIDC_CLIENT_ID = ""
    with pytest.raises(SystemCheckError, match="OIDC_CLIENT_ID is not"):
        call_command("check")
    settings.OIDC_ISSUER = "http://login.example.org"
    settings.OIDC_CLIENT_ID = CLIENT_ID
    with pytest.raises(SystemCheckError, match="must be an https:// URL"):
        call_command("check")
    settings.OIDC_ISSUER = "https://login.example.org"
    settings.OIDC_ROLE_MAP = '{"ops": "chief"}'
    with pytest.raises(SystemCheckError, match="unknown role 'chief'"):
        call_command("check")
    settings.OIDC_ROLE_MAP = "{"
    with pytest.raises(SystemCheckError, match="OIDC_ROLE_MAP is not valid JSON"):
        call_command("check")
    settings.OIDC_ROLE_MAP = ""
    settings.OIDC_CLIENT_SECRET = "s"
    call_command("check")
    settings.OIDC_ISSUER = ""
    settings.MEMORY_ADMIN_LOCAL_SIGNIN = False
    with pytest.raises(SystemCheckError, match="nobody can sign in"):
        call_command("check")


def test_a_misconfigured_provider_is_not_offered(client: Client, settings: Any) -> None:
    settings.OIDC_ISSUER = "http://login.example.org"
    settings.OIDC_CLIENT_ID = CLIENT_ID
    html = page(client.get(reverse("login")))
    assert "Single sign-on is not set up correctly" in html and 'name="password"' in html
