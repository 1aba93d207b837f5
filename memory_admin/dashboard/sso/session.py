"""A session signed in through the provider, and the re-check that ends it.

The session keeps the provider's subject and tokens (in the dashboard's database, like
the rest of the session; never in the cookie). At most every ``OIDC_RECHECK_SECONDS``
a request asks the provider again, server to server: the refresh token (or, without
one, the access token while it lasts) and the userinfo endpoint. The provider refusing
— the person de-provisioned, their session there ended — signs them out of the
dashboard at once, and new claims re-synchronise roles and grants as a sign-in does.
A provider that does not answer lets no request through (a 503 page) but keeps the
session, so an outage there does not sign everyone out.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import asdict
from enum import StrEnum

from django.contrib.auth import logout
from django.contrib.auth.models import User
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.http import urlencode
from django_htmx.http import HttpResponseClientRedirect

from memory_admin.dashboard.errors import ErrorPage, render_error
from memory_admin.dashboard.models import IdentityLink
from memory_admin.dashboard.sso import config as sso_config
from memory_admin.dashboard.sso.backend import (
    ProviderBackend,
    ProviderRefused,
    ProviderTokens,
    RenewalNeeded,
    VerifiedSignIn,
)
from memory_admin.dashboard.sso.claims import ClaimsRefused, MappedAccess, Refusal, map_claims
from memory_admin.dashboard.sso.failures import SignInFailed
from memory_admin.dashboard.sso.sync import record_ended, synchronise

log = logging.getLogger(__name__)

SUBJECT = "sso_subject"
ISSUER = "sso_issuer"
TOKENS = "sso_tokens"
CHECKED_AT = "sso_checked_at"


class Ended(StrEnum):
    """Why a session the provider vouched for ended (``/accounts/sso/ended/?why=…``)."""

    REFUSED = "refused"
    NO_ROLE = "no_role"
    CLAIMS = "claims"
    RENEW = "renew"


ENDED_TEXT = {
    Ended.REFUSED: (
        "Your sign-in has ended",
        "{provider} no longer vouches for this sign-in: your account there may have been switched off, "
        "or your session there ended. You have been signed out of the dashboard.",
    ),
    Ended.NO_ROLE: (
        "You no longer have a dashboard role",
        "{provider} says you are no longer in any of the dashboard's groups, so the roles and grants it "
        "gave you were taken away and you have been signed out.",
    ),
    Ended.CLAIMS: (
        "Your groups did not arrive",
        "{provider} stopped sending the groups the dashboard needs to know your role, so you have been "
        "signed out. Nothing was changed.",
    ),
    Ended.RENEW: (
        "Your sign-in needs renewing",
        "The dashboard can no longer confirm your sign-in with {provider} without you: sign in again.",
    ),
}


def remember(request: HttpRequest, verified: VerifiedSignIn, issuer: str) -> None:
    """Keep what a re-check needs, in the session of the user just signed in."""
    request.session[SUBJECT] = verified.subject
    request.session[ISSUER] = issuer
    request.session[TOKENS] = asdict(verified.tokens)
    request.session[CHECKED_AT] = time.time()


def id_token_hint(request: HttpRequest) -> str:
    tokens = request.session.get(TOKENS)
    return str(tokens.get("id_token", "")) if isinstance(tokens, dict) else ""


def is_provider_session(request: HttpRequest) -> bool:
    return SUBJECT in request.session


def ended_url(why: Ended) -> str:
    return f"{reverse('sso_ended')}?{urlencode({'why': why.value})}"


class ProviderRecheckMiddleware:
    """Re-checks a provider session with the provider once its window has passed."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated and is_provider_session(request):
            answer = self._recheck(request)
            if answer is not None:
                return answer
        return self.get_response(request)

    def _recheck(self, request: HttpRequest) -> HttpResponse | None:
        try:
            config = sso_config.provider_config()
        except ImproperlyConfigured:  # the system check says what; no provider session may go on
            config = None
        if config is None or request.session.get(ISSUER) != config.issuer:
            return _end(request, Ended.RENEW, config_name="the identity provider")
        checked = request.session.get(CHECKED_AT)
        if isinstance(checked, int | float) and time.time() - checked < config.recheck_seconds:
            return None
        user = request.user
        assert isinstance(user, User)
        subject = str(request.session[SUBJECT])
        link = IdentityLink.objects.filter(user=user, issuer=config.issuer, subject=subject).first()
        if link is None:
            return _end(request, Ended.RENEW, config_name=config.name)
        stored = request.session.get(TOKENS)
        tokens = ProviderTokens(**stored) if isinstance(stored, dict) else ProviderTokens("", "", "", None)
        backend = ProviderBackend()
        try:
            tokens, claims = backend.refresh(tokens, subject)
        except RenewalNeeded:
            return _end(request, Ended.RENEW, config_name=config.name)
        except ProviderRefused as refused:
            log.info("the provider refused %s's re-check: %s", user.get_username(), refused)
            record_ended(user, config, f"the provider refused the re-check ({refused})")
            return _end(request, Ended.REFUSED, config_name=config.name)
        except SignInFailed as failed:
            log.warning("re-check of %s with the provider failed: %s", user.get_username(), failed.log or failed)
            return render_error(
                request,
                ErrorPage(
                    503,
                    "Cannot confirm your sign-in",
                    f"The dashboard could not confirm your sign-in with {config.name}, which does not answer "
                    "as it should. Nothing was changed, and you are still signed in.",
                    "Try again in a moment.",
                ),
            )
        if claims is not None:
            try:
                mapped = map_claims(claims, config.rules)
            except ClaimsRefused as refused:
                with transaction.atomic():
                    if refused.reason is Refusal.NO_ROLE:
                        synchronise(config, link, MappedAccess(roles={}, grants={}), when="at a re-check")
                    record_ended(user, config, refused.detail)
                why = Ended.NO_ROLE if refused.reason is Refusal.NO_ROLE else Ended.CLAIMS
                return _end(request, why, config_name=config.name)
            synchronise(config, link, mapped, when="at a re-check")
        request.session[TOKENS] = asdict(tokens)
        request.session[CHECKED_AT] = time.time()
        return None


def _end(request: HttpRequest, why: Ended, *, config_name: str) -> HttpResponse:
    log.info("ended a single sign-on session (%s, %s)", why.value, config_name)
    logout(request)
    url = ended_url(why)
    if getattr(request, "htmx", False):
        return HttpResponseClientRedirect(url)
    return HttpResponseRedirect(url)


def ended_text(why: str, provider: str) -> tuple[str, str] | None:
    try:
        title, message = ENDED_TEXT[Ended(why)]
    except ValueError:
        return None
    return title, message.format(provider=provider)
