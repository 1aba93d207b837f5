# mypy: disable-error-code="misc"
# (mozilla-django-oidc ships no type hints: its backend is an Any to subclass)
"""The two ways into the dashboard: the provider, and the local password.

:class:`ProviderBackend` is mozilla-django-oidc's backend — its token exchange (PKCE's
verifier included) and userinfo call — with what it leaves out added: the endpoints
from discovery, the ID token's issuer, audience and authorized party checked against
the provider's rotating keys, and people found by the provider's subject (never by
an e-mail address, which another account may share). It signs no one in through
Django's ``authenticate()``: only the callback view calls :meth:`ProviderBackend.sign_in`,
so a password form can never reach it.

:class:`LocalPasswordBackend` is Django's model backend behind the
``MEMORY_ADMIN_LOCAL_SIGNIN`` switch: off, no password signs in and no session made
with one stays signed in.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import requests
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import User
from django.http import HttpRequest
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.utils import import_from_settings

from memory_admin.dashboard.sso import config as sso_config
from memory_admin.dashboard.sso.config import ProviderConfig
from memory_admin.dashboard.sso.failures import Failure, SignInFailed
from memory_admin.dashboard.sso.provider import ProviderMetadata, metadata, verify_signed

log = logging.getLogger(__name__)

PROVIDER_BACKEND = "memory_admin.dashboard.sso.backend.ProviderBackend"
ID_TOKEN_CLAIMS = ("iss", "aud", "sub", "exp", "iat")


class LocalPasswordBackend(ModelBackend):
    """Usernames and passwords, while ``MEMORY_ADMIN_LOCAL_SIGNIN`` is on."""

    def authenticate(
        self, request: HttpRequest | None, username: str | None = None, password: str | None = None, **kwargs: Any
    ) -> User | None:
        if not sso_config.local_signin_enabled():
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)

    def get_user(self, user_id: int) -> User | None:
        if not sso_config.local_signin_enabled():
            return None
        return super().get_user(user_id)


@dataclass(frozen=True)
class ProviderTokens:
    access_token: str
    refresh_token: str
    id_token: str
    expires_at: float | None  # the access token's, on this machine's clock


@dataclass(frozen=True)
class VerifiedSignIn:
    """What the provider vouched for: its claims (the ID token's, with userinfo's over
    them) and the tokens to re-check with later."""

    subject: str
    claims: Mapping[str, Any]
    tokens: ProviderTokens


class ProviderRefused(Exception):
    """The provider answered a refresh or userinfo call with a refusal: it no longer
    vouches for the person (de-provisioned, session ended there)."""


class RenewalNeeded(Exception):
    """Nothing left to ask the provider with (no refresh token, the access token
    expired): only a new sign-in can confirm the person."""


class ProviderBackend(OIDCAuthenticationBackend):
    """Sign-in through the provider (see the module's docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # mozilla-django-oidc reads every endpoint from the settings here; this one
        # reads them from discovery when first needed, so building the backend (which
        # Django does for every password sign-in too) never waits for the provider
        from django.contrib.auth import get_user_model

        self.UserModel = get_user_model()
        self._config: ProviderConfig | None = None
        self._metadata: ProviderMetadata | None = None

    # --- what mozilla-django-oidc's methods read ---------------------------------------

    @property
    def config(self) -> ProviderConfig:
        if self._config is None:
            config = sso_config.provider_config()
            if config is None:
                raise SignInFailed(Failure.OFF)
            self._config = config
        return self._config

    @property
    def provider(self) -> ProviderMetadata:
        if self._metadata is None:
            self._metadata = metadata(self.config)
        return self._metadata

    @property
    def OIDC_OP_TOKEN_ENDPOINT(self) -> str:  # the library's attribute names
        return self.provider.token_endpoint

    @property
    def OIDC_OP_USER_ENDPOINT(self) -> str | None:
        return self.provider.userinfo_endpoint

    @property
    def OIDC_RP_CLIENT_ID(self) -> str:
        return self.config.client_id

    @property
    def OIDC_RP_CLIENT_SECRET(self) -> str:
        return self.config.client_secret

    def get_settings(self, attr: str, *default: Any) -> Any:
        if attr == "OIDC_TIMEOUT":
            return self.config.timeout_seconds
        if attr == "OIDC_TOKEN_USE_BASIC_AUTH":
            return self.provider.token_auth_basic and bool(self.config.client_secret)
        if attr == "OIDC_VERIFY_SSL":
            return True
        if attr == "OIDC_PROXY":
            return None
        return import_from_settings(attr, *default)

    # --- Django's authentication backend interface --------------------------------------

    def authenticate(self, request: HttpRequest | None, **credentials: Any) -> None:
        return None  # only the callback view signs in through the provider (sign_in)

    def get_user(self, user_id: int) -> User | None:
        if not sso_config.enabled():
            return None  # single sign-on switched off: its sessions end
        user = self.UserModel.objects.filter(pk=user_id).first()
        return user if isinstance(user, User) and self.user_can_authenticate(user) else None

    # --- the sign-in ---------------------------------------------------------------------

    def verify_token(self, token: str, **kwargs: Any) -> dict[str, Any]:
        """mozilla-django-oidc's check, with issuer, audience and key rotation (see
        ``provider.verify_signed``); ``nonce`` is checked when given. A signed userinfo
        answer comes here too, and needs no times."""
        nonce = kwargs.get("nonce")
        require = kwargs.get("require", ("iss", "aud", "sub"))
        claims = verify_signed(
            token,
            self.provider,
            audience=self.config.client_id,
            timeout=self.config.timeout_seconds,
            require=require,
        )
        if "nonce" in kwargs and claims.get("nonce") != nonce:
            raise SignInFailed(Failure.BAD_NONCE, log="the ID token's nonce is not the one this sign-in sent")
        return claims

    def sign_in(self, *, code: str, nonce: str, code_verifier: str | None, redirect_uri: str) -> VerifiedSignIn:
        """Exchange the callback's ``code`` and check everything the provider sent.

        Writes nothing: the caller maps the claims and only then creates or changes a
        user. Raises :class:`SignInFailed`.
        """
        payload = {
            "client_id": self.config.client_id,
            "client_secret": self.config.client_secret,
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
        }
        if code_verifier is not None:
            payload["code_verifier"] = code_verifier
        token_info = self._token_request(payload, refused=Failure.CODE_REFUSED)
        id_token = token_info.get("id_token")
        access_token = token_info.get("access_token")
        if not isinstance(id_token, str) or not isinstance(access_token, str):
            raise SignInFailed(Failure.PROVIDER_ERROR, log="the token answer holds no ID token or access token")
        claims = self.verify_token(id_token, nonce=nonce, require=ID_TOKEN_CLAIMS)
        subject = claims.get("sub")
        if not isinstance(subject, str) or not subject:
            raise SignInFailed(Failure.BAD_TOKEN, log="the ID token names no subject")
        merged = {**claims, **self.userinfo(access_token, subject, refusal=Failure.PROVIDER_ERROR)}
        return VerifiedSignIn(subject, merged, self._tokens(token_info, previous=None))

    def refresh(self, tokens: ProviderTokens, subject: str) -> tuple[ProviderTokens, dict[str, Any] | None]:
        """Ask the provider again, with the refresh token (or, without one, the access
        token while it lasts): the tokens to keep, and the claims it sends now (``None``
        when it sent none: no new ID token and no userinfo endpoint).

        Raises :class:`ProviderRefused` when the provider no longer vouches for
        ``subject``, :class:`RenewalNeeded` when there is nothing to ask it with, and
        :class:`SignInFailed` (``PROVIDER_DOWN`` and the like) when it cannot be asked.
        """
        claims: dict[str, Any] | None = None
        if tokens.refresh_token:
            payload = {
                "client_id": self.config.client_id,
                "client_secret": self.config.client_secret,
                "grant_type": "refresh_token",
                "refresh_token": tokens.refresh_token,
            }
            try:
                token_info = self._token_request(payload, refused=Failure.CODE_REFUSED)
            except SignInFailed as failed:
                if failed.failure is Failure.CODE_REFUSED:
                    raise ProviderRefused(failed.log) from failed
                raise
            tokens = self._tokens(token_info, previous=tokens)
            id_token = token_info.get("id_token")
            if isinstance(id_token, str):
                claims = self.verify_token(id_token, require=ID_TOKEN_CLAIMS)
                if claims.get("sub") != subject:
                    raise ProviderRefused("the refreshed ID token names another subject")
        elif not tokens.access_token or (tokens.expires_at is not None and tokens.expires_at <= time.time()):
            raise RenewalNeeded("the access token has expired and there is no refresh token")
        info = self.userinfo(tokens.access_token, subject, refusal=None)
        if info:
            claims = {**(claims or {}), **info}
        return tokens, claims

    def userinfo(self, access_token: str, subject: str, *, refusal: Failure | None) -> dict[str, Any]:
        """The userinfo endpoint's claims (``{}`` when the provider has none).

        A refusal (HTTP 4xx) is :class:`SignInFailed` with ``refusal``, or — for a
        re-check, ``refusal=None`` — :class:`ProviderRefused`.
        """
        if self.provider.userinfo_endpoint is None:
            return {}
        try:
            info = self.get_userinfo(access_token, None, None)
        except requests.HTTPError as exc:
            status = exc.response.status_code if exc.response is not None else 0
            message = f"userinfo: HTTP {status}"
            if 400 <= status < 500:
                if refusal is None:
                    raise ProviderRefused(message) from exc
                raise SignInFailed(refusal, log=message) from exc
            raise SignInFailed(Failure.PROVIDER_DOWN, log=message) from exc
        except requests.JSONDecodeError as exc:
            raise SignInFailed(Failure.PROVIDER_ERROR, log="userinfo: not JSON") from exc
        except requests.RequestException as exc:
            raise SignInFailed(Failure.PROVIDER_DOWN, log=f"userinfo: {type(exc).__name__}: {exc}") from exc
        if not isinstance(info, dict):
            raise SignInFailed(Failure.PROVIDER_ERROR, log="userinfo: not a JSON object")
        # OpenID Connect Core §5.3.2: userinfo about anyone else is not to be used
        if info.get("sub") != subject:
            if refusal is None:
                raise ProviderRefused("userinfo names another subject")
            raise SignInFailed(Failure.BAD_TOKEN, log="userinfo names another subject than the ID token")
        return info

    def _token_request(self, payload: dict[str, str], *, refused: Failure) -> dict[str, Any]:
        try:
            answer = self.get_token(payload)
        except requests.HTTPError as exc:
            response = exc.response
            status = response.status_code if response is not None else 0
            error = _oauth_error(response)
            message = f"token endpoint: HTTP {status} {error or ''}".strip()
            if status >= 500 or status == 0:
                raise SignInFailed(Failure.PROVIDER_DOWN, log=message) from exc
            if error == "invalid_client":
                raise SignInFailed(Failure.PROVIDER_MISCONFIGURED, log=message) from exc
            if status in (400, 401) or error in ("invalid_grant", "invalid_request", "unauthorized_client"):
                raise SignInFailed(refused, log=message) from exc
            raise SignInFailed(Failure.PROVIDER_ERROR, log=message) from exc
        except requests.JSONDecodeError as exc:
            raise SignInFailed(Failure.PROVIDER_ERROR, log="token endpoint: not JSON") from exc
        except requests.RequestException as exc:
            raise SignInFailed(Failure.PROVIDER_DOWN, log=f"token endpoint: {type(exc).__name__}: {exc}") from exc
        if not isinstance(answer, dict):
            raise SignInFailed(Failure.PROVIDER_ERROR, log="token endpoint: not a JSON object")
        return answer

    @staticmethod
    def _tokens(token_info: Mapping[str, Any], *, previous: ProviderTokens | None) -> ProviderTokens:
        expires_in = token_info.get("expires_in")
        expires_at = time.time() + float(expires_in) if isinstance(expires_in, int | float) else None

        def text(name: str) -> str:
            value = token_info.get(name)
            if isinstance(value, str):
                return value
            return getattr(previous, name, "") if previous is not None else ""

        return ProviderTokens(
            access_token=text("access_token"),
            refresh_token=text("refresh_token"),
            id_token=text("id_token"),
            expires_at=expires_at,
        )


def _oauth_error(response: requests.Response | None) -> str | None:
    if response is None:
        return None
    try:
        body = response.json()
    except ValueError:
        return None
    error = body.get("error") if isinstance(body, dict) else None
    return error if isinstance(error, str) and error.isascii() and len(error) <= 64 else None
