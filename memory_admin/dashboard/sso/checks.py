"""``manage.py check`` (and ``memory-admin serve``, which runs it) says what is wrong with
single sign-on's settings before anyone tries to sign in."""

from __future__ import annotations

from typing import Any

from django.core.checks import CheckMessage, Error, Warning, register
from django.core.exceptions import ImproperlyConfigured

from memory_admin.dashboard.sso import config


@register("security")
def check_single_sign_on(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    try:
        provider = config.provider_config()
    except ImproperlyConfigured as exc:
        return [Error(str(exc), hint="docs/deploy.md, single sign-on", id="memory_admin.E101")]
    if provider is None:
        if not config.local_signin_enabled():
            return [
                Error(
                    "MEMORY_ADMIN_LOCAL_SIGNIN is off and OIDC_ISSUER is not set: nobody can sign in.",
                    id="memory_admin.E102",
                )
            ]
        return []
    messages: list[CheckMessage] = []
    if not provider.client_secret:
        messages.append(
            Warning(
                "OIDC_CLIENT_SECRET is empty: the dashboard signs in as a public client (PKCE only).",
                hint="Most providers issue a secret to a web application; set it.",
                id="memory_admin.W101",
            )
        )
    return messages
