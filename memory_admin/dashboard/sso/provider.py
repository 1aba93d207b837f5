"""The provider as its discovery document describes it, and its signing keys.

Configured from the issuer URL alone: ``<issuer>/.well-known/openid-configuration``
names the endpoints and the key set (``jwks_uri``). Both are fetched on first use and
kept in this process: the document for ``OIDC_DISCOVERY_CACHE_SECONDS`` (a stale copy
serves on while the provider does not answer), the keys until a token is signed by a
key they do not hold — then they are fetched again, once, so a provider that rotates
its keys is followed without a restart.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jwt
import requests
from django.core.exceptions import ImproperlyConfigured

from memory_admin.dashboard.sso.config import ProviderConfig, require_secure_url
from memory_admin.dashboard.sso.failures import Failure, SignInFailed

log = logging.getLogger(__name__)

# asymmetric signatures only: an HMAC "signature" keyed with the client secret proves
# nothing about the provider, and "none" is no signature at all
SIGNING_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
MAX_DOCUMENT_BYTES = 512 * 1024


@dataclass(frozen=True)
class ProviderMetadata:
    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    userinfo_endpoint: str | None
    end_session_endpoint: str | None
    algorithms: tuple[str, ...]
    token_auth_basic: bool  # client_secret_basic (the spec's default) rather than client_secret_post


def discovery_url(issuer: str) -> str:
    return issuer.rstrip("/") + "/.well-known/openid-configuration"


_lock = threading.Lock()
_documents: dict[str, tuple[float, ProviderMetadata]] = {}
_key_sets: dict[str, tuple[float, list[dict[str, Any]]]] = {}


def forget_cached() -> None:
    """Drop every cached document and key set (tests; a settings change)."""
    with _lock:
        _documents.clear()
        _key_sets.clear()


def metadata(config: ProviderConfig) -> ProviderMetadata:
    """The provider's metadata, from the cache or fetched.

    Raises :class:`SignInFailed` (``PROVIDER_DOWN``, ``PROVIDER_MISCONFIGURED``).
    """
    key = f"{config.issuer}|{sorted(config.endpoints.items())}"
    now = time.monotonic()
    with _lock:
        cached = _documents.get(key)
    if cached is not None and now - cached[0] < config.discovery_cache_seconds:
        return cached[1]
    try:
        found = _fetch_metadata(config)
    except SignInFailed:
        if cached is not None:
            log.warning("discovery at %s failed; the copy fetched earlier serves on", discovery_url(config.issuer))
            return cached[1]
        raise
    with _lock:
        _documents[key] = (now, found)
    return found


def _fetch_metadata(config: ProviderConfig) -> ProviderMetadata:
    url = discovery_url(config.issuer)
    document = fetch_json(url, config.timeout_seconds)
    issuer = document.get("issuer")
    # OpenID Connect Discovery §4.3: the document's issuer is exactly the one asked for
    # (a trailing slash forgiven, since operators copy URLs both ways)
    if not isinstance(issuer, str) or issuer.rstrip("/") != config.issuer.rstrip("/"):
        raise SignInFailed(
            Failure.PROVIDER_MISCONFIGURED,
            log=f"discovery at {url} names the issuer {issuer!r}, not OIDC_ISSUER={config.issuer!r}",
        )
    merged = {**document, **config.endpoints}

    def endpoint(name: str, *, required: bool = True) -> str | None:
        value = merged.get(name)
        if value is None and not required:
            return None
        if not isinstance(value, str) or not value:
            raise SignInFailed(Failure.PROVIDER_MISCONFIGURED, log=f"discovery at {url} has no {name}")
        try:
            return require_secure_url(value, f"the provider's {name}")
        except ImproperlyConfigured as exc:
            raise SignInFailed(Failure.PROVIDER_MISCONFIGURED, log=str(exc)) from exc

    offered = document.get("id_token_signing_alg_values_supported") or ["RS256"]
    algorithms = tuple(alg for alg in SIGNING_ALGORITHMS if isinstance(offered, list) and alg in offered)
    if not algorithms:
        raise SignInFailed(
            Failure.PROVIDER_MISCONFIGURED,
            log=f"the provider signs ID tokens with {offered!r}: no asymmetric algorithm",
        )
    methods = document.get("token_endpoint_auth_methods_supported") or ["client_secret_basic"]
    basic = not isinstance(methods, list) or "client_secret_basic" in methods or "client_secret_post" not in methods
    authorization = endpoint("authorization_endpoint")
    token = endpoint("token_endpoint")
    jwks = endpoint("jwks_uri")
    assert authorization is not None and token is not None and jwks is not None
    return ProviderMetadata(
        issuer=issuer,
        authorization_endpoint=authorization,
        token_endpoint=token,
        jwks_uri=jwks,
        userinfo_endpoint=endpoint("userinfo_endpoint", required=False),
        end_session_endpoint=endpoint("end_session_endpoint", required=False),
        algorithms=algorithms,
        token_auth_basic=basic,
    )


def fetch_json(url: str, timeout: float) -> dict[str, Any]:
    """GET ``url`` for a JSON object; the provider not answering (or answering
    nonsense) is a :class:`SignInFailed`, never an exception into a view."""
    try:
        response = requests.get(url, timeout=timeout, headers={"Accept": "application/json"})
    except requests.RequestException as exc:
        raise SignInFailed(Failure.PROVIDER_DOWN, log=f"GET {url}: {type(exc).__name__}: {exc}") from exc
    if response.status_code >= 500:
        raise SignInFailed(Failure.PROVIDER_DOWN, log=f"GET {url}: HTTP {response.status_code}")
    if response.status_code != 200:
        raise SignInFailed(Failure.PROVIDER_MISCONFIGURED, log=f"GET {url}: HTTP {response.status_code}")
    if len(response.content) > MAX_DOCUMENT_BYTES:
        raise SignInFailed(Failure.PROVIDER_MISCONFIGURED, log=f"GET {url}: over {MAX_DOCUMENT_BYTES} bytes")
    try:
        document = response.json()
    except ValueError as exc:
        raise SignInFailed(Failure.PROVIDER_MISCONFIGURED, log=f"GET {url}: not JSON") from exc
    if not isinstance(document, dict):
        raise SignInFailed(Failure.PROVIDER_MISCONFIGURED, log=f"GET {url}: not a JSON object")
    return document


# --- signing keys ----------------------------------------------------------------------


def _key_set(jwks_uri: str, timeout: float, *, refresh: bool) -> list[dict[str, Any]]:
    with _lock:
        cached = _key_sets.get(jwks_uri)
    if cached is not None and not refresh:
        return cached[1]
    document = fetch_json(jwks_uri, timeout)
    keys = document.get("keys")
    if not isinstance(keys, list):
        raise SignInFailed(Failure.PROVIDER_MISCONFIGURED, log=f"{jwks_uri} holds no key list")
    usable = [key for key in keys if isinstance(key, dict) and key.get("use", "sig") == "sig"]
    with _lock:
        _key_sets[jwks_uri] = (time.monotonic(), usable)
    log.info("fetched %d signing keys from %s", len(usable), jwks_uri)
    return usable


def _candidates(keys: Sequence[Mapping[str, Any]], kid: str | None, alg: str) -> list[jwt.PyJWK]:
    found = []
    for key in keys:
        if kid is not None and key.get("kid") != kid:
            continue
        if "alg" in key and key["alg"] != alg:
            continue
        try:
            found.append(jwt.PyJWK(dict(key), algorithm=alg))
        except jwt.PyJWTError:
            continue  # a key of another type, or one this machine cannot use
    return found


def verify_signed(
    token: str,
    metadata: ProviderMetadata,
    *,
    audience: str,
    timeout: float,
    require: Sequence[str],
) -> dict[str, Any]:
    """The claims of ``token`` once its signature (by one of the provider's keys), issuer,
    audience and times check out; otherwise :class:`SignInFailed` naming which failed.

    A token signed by a key the cached set does not hold (a new ``kid``, or no ``kid``
    and no cached key that verifies it) fetches the key set again, once.
    """
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError as exc:
        raise SignInFailed(Failure.BAD_TOKEN, log=f"unreadable token header: {exc}") from exc
    alg = header.get("alg")
    if alg not in metadata.algorithms:
        raise SignInFailed(Failure.BAD_TOKEN, log=f"token signed with {alg!r}; accepted: {metadata.algorithms}")
    kid = header.get("kid")
    kid = kid if isinstance(kid, str) else None
    for refresh in (False, True):
        keys = _candidates(_key_set(metadata.jwks_uri, timeout, refresh=refresh), kid, str(alg))
        for key in keys:
            try:
                claims: dict[str, Any] = jwt.decode(
                    token,
                    key,
                    algorithms=[str(alg)],
                    audience=audience,
                    issuer=metadata.issuer,
                    leeway=60,
                    options={"require": list(require)},
                )
            except jwt.InvalidSignatureError:
                continue
            except jwt.InvalidAudienceError as exc:
                raise SignInFailed(Failure.WRONG_AUDIENCE, log=f"token audience: {exc}") from exc
            except jwt.InvalidIssuerError as exc:
                raise SignInFailed(Failure.WRONG_ISSUER, log=f"token issuer: {exc}") from exc
            except jwt.PyJWTError as exc:
                raise SignInFailed(Failure.BAD_TOKEN, log=f"token: {type(exc).__name__}: {exc}") from exc
            _check_authorized_party(claims, audience)
            return claims
    raise SignInFailed(Failure.BAD_TOKEN, log=f"no key of {metadata.jwks_uri} verifies the token (kid {kid!r})")


def _check_authorized_party(claims: Mapping[str, Any], client_id: str) -> None:
    # OpenID Connect Core §3.1.3.7: a token for several audiences names the one it was
    # issued to (azp), and it must be this client
    audiences = claims.get("aud")
    azp = claims.get("azp")
    if (isinstance(audiences, list) and len(audiences) > 1 and azp is None) or (azp is not None and azp != client_id):
        raise SignInFailed(Failure.WRONG_AUDIENCE, log=f"token issued to {azp!r}, not {client_id!r}")
