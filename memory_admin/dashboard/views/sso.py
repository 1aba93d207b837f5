"""Single sign-on's pages: start, the provider's callback, sign-out, and why access ended.

A sign-in starts with a POST (``/accounts/sso/start/``, CSRF-checked) that keeps a
fresh state, nonce and PKCE verifier in the session and sends the browser to the
provider; the provider sends it back to ``/accounts/sso/callback/``. Each state works
once and for ten minutes. Whatever goes wrong is a page inside the dashboard's layout
(``registration/sso_failure.html``) with its own status, and nothing is created or
granted by a sign-in that did not complete.
"""

from __future__ import annotations

import hashlib
import logging
import time
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_not_required
from django.contrib.auth.views import LogoutView
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render, resolve_url
from django.urls import reverse
from django.utils.crypto import get_random_string
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST
from mozilla_django_oidc.utils import add_state_and_verifier_and_nonce_to_session, generate_code_challenge

from memory_admin.dashboard.sso import config as sso_config
from memory_admin.dashboard.sso import session as sso_session
from memory_admin.dashboard.sso.backend import PROVIDER_BACKEND, ProviderBackend
from memory_admin.dashboard.sso.config import ProviderConfig
from memory_admin.dashboard.sso.failures import Failure, SignInFailed, failure_page
from memory_admin.dashboard.sso.provider import metadata
from memory_admin.dashboard.sso.sync import complete_sign_in

log = logging.getLogger(__name__)

STATES = "oidc_states"  # mozilla-django-oidc's session key: state → nonce, PKCE verifier, when
SPENT = "sso_spent_states"  # digests of the states already used, to tell a replay from a stranger
STATE_MAX_AGE = 600
KEEP_SPENT = 20
FAILURE = "registration/sso_failure.html"


def sign_in_options() -> dict[str, Any]:
    """What the sign-in page offers: the provider's button, the password form, or both."""
    try:
        config = sso_config.provider_config()
        problem = ""
    except ImproperlyConfigured as exc:
        config, problem = None, str(exc)
        log.error("single sign-on is misconfigured: %s", exc)
    return {
        "sso": config,
        "sso_problem": problem,
        "local_signin": sso_config.local_signin_enabled(),
    }


def _failure(request: HttpRequest, failure: Failure, *, detail: str = "", log_text: str = "") -> HttpResponse:
    options = sign_in_options()
    config = options["sso"]
    name = config.name if isinstance(config, ProviderConfig) else "the identity provider"
    page = failure_page(failure, provider=name, detail=detail)
    if failure in (Failure.PROVIDER_DOWN, Failure.PROVIDER_MISCONFIGURED):
        log.error("single sign-on: %s (%s)", failure.value, log_text)
    else:
        log.warning("single sign-on refused: %s (%s)", failure.value, log_text or detail)
    return render(request, FAILURE, {**options, "failure": page, "kind": failure.value}, status=page.status)


def _callback_uri(request: HttpRequest, config: ProviderConfig) -> str:
    return config.callback_url or request.build_absolute_uri(reverse("sso_callback"))


def _safe_next(request: HttpRequest, value: str) -> str:
    if value and url_has_allowed_host_and_scheme(value, allowed_hosts={request.get_host()}, require_https=False):
        return value
    return ""


def _digest(state: str) -> str:
    return hashlib.sha256(state.encode()).hexdigest()[:32]


@login_not_required
@require_POST
def start(request: HttpRequest) -> HttpResponse:
    """Send the browser to the provider with a state, nonce and PKCE challenge kept here."""
    try:
        config = sso_config.provider_config()
    except ImproperlyConfigured as exc:
        return _failure(request, Failure.PROVIDER_MISCONFIGURED, log_text=str(exc))
    if config is None:
        return _failure(request, Failure.OFF)
    try:
        provider = metadata(config)
    except SignInFailed as failed:
        return _failure(request, failed.failure, log_text=failed.log)
    state = get_random_string(32)
    verifier = get_random_string(64)
    params = {
        "response_type": "code",
        "scope": config.scopes,
        "client_id": config.client_id,
        "redirect_uri": _callback_uri(request, config),
        "state": state,
        "nonce": get_random_string(32),
        "code_challenge": generate_code_challenge(verifier, "S256"),
        "code_challenge_method": "S256",
    }
    add_state_and_verifier_and_nonce_to_session(request, state, params, verifier)
    # the page to land on travels with the state: signing in may start a new session
    request.session[STATES][state]["next"] = _safe_next(request, request.POST.get("next", ""))
    request.session.modified = True
    endpoint = provider.authorization_endpoint
    return HttpResponseRedirect(f"{endpoint}{'&' if '?' in endpoint else '?'}{urlencode(params)}")


@login_not_required
@require_GET
def callback(request: HttpRequest) -> HttpResponse:
    """The provider's answer: check it, exchange the code, map the claims, sign in."""
    try:
        config = sso_config.provider_config()
    except ImproperlyConfigured as exc:
        return _failure(request, Failure.PROVIDER_MISCONFIGURED, log_text=str(exc))
    if config is None:
        return _failure(request, Failure.OFF)
    state = request.GET.get("state", "")
    states = request.session.get(STATES)
    entry = None
    if state and isinstance(states, dict) and isinstance(states.get(state), dict):
        # spent before anything else happens, so the same answer never works twice
        entry = states.pop(state)
        spent = [digest for digest in request.session.get(SPENT, []) if isinstance(digest, str)]
        request.session[SPENT] = [*spent, _digest(state)][-KEEP_SPENT:]
        request.session.save()

    error = request.GET.get("error", "")
    if error:
        text = error if error.isascii() and len(error) <= 64 else "an unreadable error"
        if error == "access_denied":
            return _failure(request, Failure.DENIED, log_text=text)
        if error in ("temporarily_unavailable", "server_error"):
            return _failure(request, Failure.PROVIDER_DOWN, log_text=text)
        return _failure(request, Failure.PROVIDER_ERROR, log_text=text)
    code = request.GET.get("code", "")
    if entry is None:
        if state and _digest(state) in request.session.get(SPENT, []):
            return _failure(request, Failure.REPLAYED)
        if not states:
            return _failure(request, Failure.NO_SESSION)
        return _failure(request, Failure.BAD_STATE, log_text="the callback's state is not one this session holds")
    if not code:
        return _failure(request, Failure.PROVIDER_ERROR, log_text="a callback without a code")
    added = entry.get("added_on")
    if not isinstance(added, int | float) or time.time() - added > STATE_MAX_AGE:
        return _failure(request, Failure.EXPIRED_STATE)

    try:
        verified = ProviderBackend().sign_in(
            code=code,
            nonce=str(entry.get("nonce") or ""),
            code_verifier=entry.get("code_verifier"),
            redirect_uri=_callback_uri(request, config),
        )
        signed = complete_sign_in(config, verified)
    except SignInFailed as failed:
        return _failure(request, failed.failure, detail=failed.detail, log_text=failed.log)

    login(request, signed.user, backend=PROVIDER_BACKEND)
    sso_session.remember(request, verified, config.issuer)
    if signed.changes:
        messages.info(request, f"{config.name} changed your access: {'; '.join(map(str, signed.changes))}.")
    return HttpResponseRedirect(str(entry.get("next") or "") or resolve_url(settings.LOGIN_REDIRECT_URL))


@login_not_required
@require_GET
def ended(request: HttpRequest) -> HttpResponse:
    """Why a provider session ended (the re-check's redirect)."""
    options = sign_in_options()
    config = options["sso"]
    name = config.name if isinstance(config, ProviderConfig) else "the identity provider"
    text = sso_session.ended_text(request.GET.get("why", ""), name)
    title, message = text or ("Signed out", "You have been signed out of the dashboard.")
    return render(request, "registration/sso_ended.html", {**options, "title": title, "message": message})


class SignOutView(LogoutView):
    """Django's sign-out, then — for a provider session, when the provider's discovery
    names an end-session endpoint — the provider's too (RP-initiated logout), which
    sends the browser back to the sign-in page."""

    provider_logout = ""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        self.provider_logout = _provider_logout_url(request)
        response = super().post(request, *args, **kwargs)
        # the sign-in page says why it is there (a cookie message: the session is gone)
        messages.info(request, "You are signed out. Sign in again to continue.")
        return response

    def get_success_url(self) -> str:
        return self.provider_logout or super().get_success_url()


def _provider_logout_url(request: HttpRequest) -> str:
    if not sso_session.is_provider_session(request):
        return ""
    try:
        config = sso_config.provider_config()
        provider = metadata(config) if config is not None else None
    except (ImproperlyConfigured, SignInFailed) as exc:
        log.warning("signing out of the dashboard only: the provider's end-session endpoint is unknown (%s)", exc)
        return ""
    if config is None or provider is None or provider.end_session_endpoint is None:
        return ""
    params = {"client_id": config.client_id, "post_logout_redirect_uri": request.build_absolute_uri(reverse("login"))}
    hint = sso_session.id_token_hint(request)
    if hint:
        params["id_token_hint"] = hint
    endpoint = provider.end_session_endpoint
    return f"{endpoint}{'&' if '?' in endpoint else '?'}{urlencode(params)}"
