"""A real OpenID Connect provider in this process, on loopback: oidc-provider-mock (an
authlib server) on a werkzeug thread, with what the single sign-on tests need around it.

- ``set_user(sub, **claims)``: the person and the claims (``groups`` …) their next
  token carries (the provider's own ``PUT /users/<sub>``);
- ``revoke(sub)``: de-provisioning — every token of theirs refused from now on;
- ``rotate_keys()``: the provider signs with a new key and publishes only it;
- ``stop()``: the provider goes away (its port refuses connections);
- ``hits``: requests by path, to see what the dashboard fetched.

Its consent page (``/oauth2/authorize``) is a form: ``sub`` to sign in, ``action=deny``
to refuse. ``approve(url, sub)`` does what a person does there and returns where the
provider sends the browser back to.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import re
import threading
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import requests
import werkzeug.debug
import werkzeug.serving

CLIENT_ID = "memory-dashboard"
CLIENT_SECRET = "a-client-secret-for-tests"

Wsgi = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


@dataclass
class Provider:
    url: str
    server: werkzeug.serving.BaseWSGIServer
    thread: threading.Thread
    app: Any
    hits: Counter[str] = field(default_factory=Counter)
    _storage: Any = None

    @property
    def storage(self) -> Any:
        assert self._storage is not None, "the provider has not answered a request yet"
        return self._storage

    def set_user(self, sub: str, **claims: Any) -> None:
        response = requests.put(f"{self.url}/users/{sub}", json=claims, timeout=10)
        assert response.status_code == 204, response.text

    def revoke(self, sub: str) -> None:
        response = requests.post(f"{self.url}/users/{sub}/revoke-tokens", timeout=10)
        assert response.status_code == 204, response.text

    def rotate_keys(self) -> str:
        """A new signing key; the old one is gone from the key set. Returns the new key's id."""
        from authlib import jose

        self.storage.jwk = jose.RSAKey.generate_key(is_private=True)
        kid: str = self.storage.jwk.as_dict()["kid"]
        return kid

    def key_ids(self) -> list[str]:
        return [key["kid"] for key in requests.get(f"{self.url}/jwks", timeout=10).json()["keys"]]

    def stop(self) -> None:
        if self.thread.is_alive():
            self.server.shutdown()
            self.thread.join(5)
        self.server.server_close()

    def approve(self, authorize_url: str, sub: str) -> str:
        """Consent as ``sub`` on the provider's page; the URL it redirects the browser to."""
        response = requests.post(authorize_url, data={"sub": sub}, allow_redirects=False, timeout=10)
        assert response.status_code == 302, response.text
        return response.headers["Location"]

    def deny(self, authorize_url: str) -> str:
        response = requests.post(authorize_url, data={"action": "deny"}, allow_redirects=False, timeout=10)
        assert response.status_code == 302, response.text
        return response.headers["Location"]


@contextlib.contextmanager
def running_provider(
    *,
    wrap: Callable[[Wsgi], Wsgi] | None = None,
    host: str = "127.0.0.1",
    refresh_tokens: bool = True,
    token_lifetime: timedelta = timedelta(hours=1),
) -> Iterator[Provider]:
    """The provider on a free loopback port until the block ends.

    ``wrap`` puts a WSGI middleware in front of it (a provider that misbehaves in a way
    the test needs); ``refresh_tokens`` and ``token_lifetime`` are the provider's own
    options (its tokens' lifetime, and whether it issues refresh tokens).
    """
    import authlib.deprecate  # noqa: F401 (it turns authlib's warnings on, for good, when first imported)
    import flask

    with warnings.catch_warnings():
        # the provider imports authlib's older JOSE module, which warns that it is old
        warnings.simplefilter("ignore")
        import oidc_provider_mock

    app = oidc_provider_mock.app(issue_refresh_token=refresh_tokens, access_token_max_age=token_lifetime)
    # the package wraps its app in werkzeug's interactive debugger; a test has no use
    # for a console that runs code
    app.debug = False
    if isinstance(app.wsgi_app, werkzeug.debug.DebuggedApplication):
        app.wsgi_app = app.wsgi_app.app
    holder: dict[str, Any] = {}
    hits: Counter[str] = Counter()

    @app.before_request
    def _note() -> None:
        holder.setdefault("storage", flask.g.oidc_provider_mock_storage)
        hits[flask.request.path] += 1

    served: Wsgi = offline(app.wsgi_app if wrap is None else wrap(app.wsgi_app))
    app.wsgi_app = served  # type: ignore[method-assign]
    server = werkzeug.serving.make_server(host, 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    provider = Provider(url=f"http://{host}:{server.server_port}", server=server, thread=thread, app=app, hits=hits)
    # one request, so the provider's storage (its users and keys) is in reach
    assert requests.get(f"{provider.url}/.well-known/openid-configuration", timeout=10).status_code == 200
    provider._storage = holder["storage"]
    hits.clear()
    try:
        yield provider
    finally:
        provider.stop()


_EXTERNAL = re.compile(rb"<link[^>]*href=\"https?://[^\"]*\"[^>]*>", re.IGNORECASE)


def offline(app: Wsgi) -> Wsgi:
    """The provider's pages without the stylesheet they link from a CDN: a browser test
    reaches nothing beyond this machine's loopback."""

    def middleware(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        captured: dict[str, Any] = {}

        def keep(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Callable[[bytes], None]:
            captured["status"], captured["headers"] = status, headers
            return lambda data: None

        body = b"".join(app(environ, keep))
        headers = captured["headers"]
        if any(name.lower() == "content-type" and "text/html" in value for name, value in headers):
            body = _EXTERNAL.sub(b"", body)
            headers = [(n, v) for n, v in headers if n.lower() != "content-length"]
            headers.append(("Content-Length", str(len(body))))
        start_response(captured["status"], headers)
        return [body]

    return middleware


def another_client(client_id: str = "another-app") -> Callable[[Wsgi], Wsgi]:
    """A provider that issues its tokens to ``client_id`` whoever asks: the dashboard's
    client id is replaced in the authorization request and at the token endpoint, so the
    ID token it gets back is for another application."""

    def wrap(app: Wsgi) -> Wsgi:
        def middleware(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
            if environ.get("QUERY_STRING"):
                pairs = [(k, client_id if k == "client_id" else v) for k, v in parse_qsl(environ["QUERY_STRING"])]
                environ["QUERY_STRING"] = urlencode(pairs)
            if environ.get("PATH_INFO") == "/oauth2/token":
                length = int(environ.get("CONTENT_LENGTH") or 0)
                body = environ["wsgi.input"].read(length).decode()
                pairs = [(k, client_id if k == "client_id" else v) for k, v in parse_qsl(body)]
                data = urlencode(pairs).encode()
                environ["wsgi.input"] = io.BytesIO(data)
                environ["CONTENT_LENGTH"] = str(len(data))
                auth = environ.get("HTTP_AUTHORIZATION", "")
                if auth.startswith("Basic "):
                    _, _, secret = base64.b64decode(auth[6:]).decode().partition(":")
                    environ["HTTP_AUTHORIZATION"] = (
                        "Basic " + base64.b64encode(f"{client_id}:{secret}".encode()).decode()
                    )
            return app(environ, start_response)

        return middleware

    return wrap


def naming_issuer(issuer: str) -> Callable[[Wsgi], Wsgi]:
    """A provider whose discovery document names another issuer than the URL it is at."""

    def wrap(app: Wsgi) -> Wsgi:
        def middleware(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
            if environ.get("PATH_INFO") != "/.well-known/openid-configuration":
                return app(environ, start_response)
            captured: dict[str, Any] = {}

            def keep(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> None:
                captured["status"] = status

            document = json.loads(b"".join(app(environ, keep)))
            body = json.dumps({**document, "issuer": issuer}).encode()
            start_response(
                captured["status"], [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
            )
            return [body]

        return middleware

    return wrap


def query(url: str) -> dict[str, str]:
    return dict(parse_qsl(urlsplit(url).query))


def path_and_query(url: str) -> str:
    parts = urlsplit(url)
    return parts.path + ("?" + parts.query if parts.query else "")


def with_param(url: str, **changes: str) -> str:
    """``url`` with query parameters replaced."""
    parts = urlsplit(url)
    pairs = dict(parse_qsl(parts.query))
    pairs.update(changes)
    return parts._replace(query=urlencode(pairs)).geturl()
