"""Single sign-on's settings: on when ``OIDC_ISSUER`` is set, checked as a whole.

Every value is a Django setting (``settings/base.py`` reads each from the environment
variable of the same name), so a settings module of one's own may override any of them.
They are read at the moment of use, not at import: the tests (and an operator's own
settings module) change them without a restart of anything else.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from memory_admin.dashboard.sso.claims import ClaimRules, parse_grant_map, parse_role_map

ENDPOINT_NAMES = ("authorization_endpoint", "token_endpoint", "userinfo_endpoint", "jwks_uri", "end_session_endpoint")


@dataclass(frozen=True)
class ProviderConfig:
    """One OpenID Connect provider, as the dashboard is configured to trust it."""

    issuer: str
    client_id: str
    client_secret: str
    name: str
    scopes: str
    rules: ClaimRules
    username_claim: str
    recheck_seconds: int
    timeout_seconds: float
    discovery_cache_seconds: int
    # endpoints named here win over the discovery document's (a provider whose document is wrong)
    endpoints: Mapping[str, str]
    # the absolute callback URL registered at the provider, when the request's own host is not it
    callback_url: str


def local_signin_enabled() -> bool:
    """Whether the username-and-password form works (``MEMORY_ADMIN_LOCAL_SIGNIN``)."""
    return bool(getattr(settings, "MEMORY_ADMIN_LOCAL_SIGNIN", True))


def provider_config() -> ProviderConfig | None:
    """The provider, or ``None`` when single sign-on is off (no ``OIDC_ISSUER``).

    Raises :class:`ImproperlyConfigured` naming what is wrong when it is half set up;
    the system check (``checks.py``) says the same at start-up.
    """
    raw = tuple(_setting(name) for name in _SETTING_NAMES)
    return _build(raw)


def enabled() -> bool:
    return bool(_setting("OIDC_ISSUER"))


def form_action_origins() -> list[str]:
    """The origins forms may lead to besides the dashboard's own: the provider's.

    Starting a sign-in is a POST whose answer redirects to the authorization endpoint,
    and signing out redirects to the provider's end-session endpoint; browsers hold
    both redirects to the policy's ``form-action``.
    """
    try:
        config = provider_config()
    except ImproperlyConfigured:
        return []
    if config is None:
        return []
    urls = [
        config.issuer,
        *(config.endpoints.get(name, "") for name in ("authorization_endpoint", "end_session_endpoint")),
    ]
    origins: list[str] = []
    for url in urls:
        if url and origin(url) not in origins:
            origins.append(origin(url))
    return origins


def origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def is_loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def require_secure_url(url: str, what: str) -> str:
    """``url`` if it is HTTPS (or plain HTTP on this machine's loopback); otherwise the
    tokens would cross the network in the clear."""
    parts = urlsplit(url)
    if parts.scheme == "https" and parts.netloc:
        return url
    if parts.scheme == "http" and parts.netloc and is_loopback(url):
        return url
    raise ImproperlyConfigured(f"{what} must be an https:// URL (plain http only on loopback), not {url!r}.")


_SETTING_NAMES = (
    "OIDC_ISSUER",
    "OIDC_CLIENT_ID",
    "OIDC_CLIENT_SECRET",
    "OIDC_PROVIDER_NAME",
    "OIDC_SCOPES",
    "OIDC_GROUPS_CLAIM",
    "OIDC_GRANTS_CLAIM",
    "OIDC_GROUP_PREFIX",
    "OIDC_ROLE_MAP",
    "OIDC_GRANT_MAP",
    "OIDC_MAX_GROUPS",
    "OIDC_USERNAME_CLAIM",
    "OIDC_RECHECK_SECONDS",
    "OIDC_TIMEOUT_SECONDS",
    "OIDC_DISCOVERY_CACHE_SECONDS",
    "OIDC_ENDPOINTS",
    "OIDC_CALLBACK_URL",
)
_DEFAULTS: dict[str, Any] = {
    "OIDC_SCOPES": "openid email profile",
    "OIDC_GROUPS_CLAIM": "groups",
    "OIDC_GROUP_PREFIX": "memory-admin:",
    "OIDC_MAX_GROUPS": 200,
    "OIDC_USERNAME_CLAIM": "preferred_username",
    "OIDC_RECHECK_SECONDS": 300,
    "OIDC_TIMEOUT_SECONDS": 10,
    "OIDC_DISCOVERY_CACHE_SECONDS": 3600,
}


def _setting(name: str) -> Any:
    value = getattr(settings, name, None)
    if value is None or value == "":
        value = _DEFAULTS.get(name, "")
    # the cache below needs hashable keys: mappings travel as sorted JSON
    if isinstance(value, Mapping):
        return json.dumps(value, sort_keys=True)
    return value


@lru_cache(maxsize=16)
def _build(raw: tuple[Any, ...]) -> ProviderConfig | None:
    values = dict(zip(_SETTING_NAMES, raw, strict=True))
    issuer = str(values["OIDC_ISSUER"]).strip()
    if not issuer:
        return None
    require_secure_url(issuer, "OIDC_ISSUER")
    client_id = str(values["OIDC_CLIENT_ID"]).strip()
    if not client_id:
        raise ImproperlyConfigured(
            "OIDC_ISSUER is set but OIDC_CLIENT_ID is not: set the client id the provider issued."
        )
    scopes = str(values["OIDC_SCOPES"]).split()
    if "openid" not in scopes:
        raise ImproperlyConfigured(f"OIDC_SCOPES must include 'openid' (it is {' '.join(scopes)!r}).")
    endpoints = _json_object(values["OIDC_ENDPOINTS"], "OIDC_ENDPOINTS")
    for name, url in endpoints.items():
        if name not in ENDPOINT_NAMES:
            raise ImproperlyConfigured(f"OIDC_ENDPOINTS: unknown endpoint {name!r}; use {', '.join(ENDPOINT_NAMES)}.")
        require_secure_url(str(url), f"OIDC_ENDPOINTS[{name!r}]")
    callback_url = str(values["OIDC_CALLBACK_URL"]).strip()
    if callback_url:
        require_secure_url(callback_url, "OIDC_CALLBACK_URL")
    grants_claim = str(values["OIDC_GRANTS_CLAIM"]).strip()
    rules = ClaimRules(
        groups_claim=str(values["OIDC_GROUPS_CLAIM"]).strip(),
        grants_claim=grants_claim or None,
        prefix=str(values["OIDC_GROUP_PREFIX"]),
        role_map=parse_role_map(_json_object(values["OIDC_ROLE_MAP"], "OIDC_ROLE_MAP")),
        grant_map=parse_grant_map(_json_object(values["OIDC_GRANT_MAP"], "OIDC_GRANT_MAP")),
        max_values=_positive(values["OIDC_MAX_GROUPS"], "OIDC_MAX_GROUPS"),
    )
    return ProviderConfig(
        issuer=issuer,
        client_id=client_id,
        client_secret=str(values["OIDC_CLIENT_SECRET"]),
        name=str(values["OIDC_PROVIDER_NAME"]).strip() or (urlsplit(issuer).hostname or issuer),
        scopes=" ".join(scopes),
        rules=rules,
        username_claim=str(values["OIDC_USERNAME_CLAIM"]).strip(),
        recheck_seconds=_positive(values["OIDC_RECHECK_SECONDS"], "OIDC_RECHECK_SECONDS", zero=True),
        timeout_seconds=float(_positive(values["OIDC_TIMEOUT_SECONDS"], "OIDC_TIMEOUT_SECONDS")),
        discovery_cache_seconds=_positive(values["OIDC_DISCOVERY_CACHE_SECONDS"], "OIDC_DISCOVERY_CACHE_SECONDS"),
        endpoints={str(name): str(url) for name, url in endpoints.items()},
        callback_url=callback_url,
    )


def _json_object(value: Any, name: str) -> dict[str, Any]:
    """A mapping setting: a dict in a settings module, a JSON object in the environment."""
    if not value:
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ImproperlyConfigured(f"{name} is not valid JSON ({exc.msg} at character {exc.pos}).") from exc
    if not isinstance(value, dict):
        raise ImproperlyConfigured(f"{name} must be a JSON object mapping names to values.")
    return value


def _positive(value: Any, name: str, *, zero: bool = False) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError) as exc:
        raise ImproperlyConfigured(f"{name} must be a whole number, not {value!r}.") from exc
    if number < 0 or (number == 0 and not zero):
        raise ImproperlyConfigured(f"{name} must be {'zero or more' if zero else 'at least 1'}, not {number}.")
    return number
