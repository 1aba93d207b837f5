"""Settings shared by every environment; each value can come from the environment."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path
from typing import Any

import dj_database_url

BASE_DIR = Path(__file__).resolve().parents[3]
APP_DIR = Path(__file__).resolve().parents[1]
# A checkout keeps templates/ and static/ at the top level (and its state in ./var); the
# wheel carries them inside the dashboard app, where APP_DIRS and the app-directories
# static finder find them, and an installed copy keeps its state in the user's state
# directory, beside the store's default memory file.
INSTALLED_LAYOUT = (APP_DIR / "templates").is_dir()
_STATE_HOME = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
VAR_DIR = Path(
    os.environ.get("MEMORY_ADMIN_VAR_DIR") or (_STATE_HOME / "memory_admin" if INSTALLED_LAYOUT else BASE_DIR / "var")
)


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in ("1", "true", "yes", "on")


def env_list(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    return [item.strip() for item in value.split(",") if item.strip()] if value else default


SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "insecure-development-key-change-me")
# The key of the audit log's hashes of erased scope values (docs/privacy.md); derived
# from SECRET_KEY when empty. Set it to keep lookups working across SECRET_KEY rotations.
MEMORY_ADMIN_AUDIT_KEY = os.environ.get("MEMORY_ADMIN_AUDIT_KEY", "")
DEBUG = env_bool("DJANGO_DEBUG", False)
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])

# The memory file the agents write; the dashboard reads the very same one.
MEMORY_STORE_URL = os.environ.get("MEMORY_STORE_URL", f"sqlite:///{VAR_DIR / 'memory.sqlite3'}")

INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django_htmx",
    "template_partials",
    "memory_admin.dashboard",
    "axes",
]

MIDDLEWARE = [
    # first, so every response carries it: pages, redirects, errors and static files
    "memory_admin.dashboard.middleware.ContentSecurityPolicyMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # every page needs a sign-in unless its view says otherwise (the login page does)
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # a single sign-on session asks the provider again every OIDC_RECHECK_SECONDS
    "memory_admin.dashboard.sso.session.ProviderRecheckMiddleware",
    "memory_admin.dashboard.middleware.HtmxSignInRedirectMiddleware",
    "memory_admin.dashboard.middleware.EmptyParametersMiddleware",
    # the memory library's typed errors → HTTP, in one place
    "memory_admin.dashboard.errors.StoreErrorMiddleware",
    # sign-in throttling (below): last, as django-axes asks
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "memory_admin.dashboard.urls"
WSGI_APPLICATION = "memory_admin.dashboard.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [] if INSTALLED_LAYOUT else [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            # |isolate (user text in <bdi>, direction controls shown) in every template
            "builtins": ["memory_admin.dashboard.templatetags.memory"],
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "memory_admin.dashboard.permissions.access_context",
            ],
        },
    },
]

# The dashboard's own tables (users, sessions, grants, audit) live in their own file,
# never in the memory file — or, with DATABASE_URL (postgresql://…, sqlite:////path),
# in any database Django supports, e.g. PostgreSQL beside a PostgreSQL memory store.
DATABASES: dict[str, Any] = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("DASHBOARD_DB_PATH", str(VAR_DIR / "dashboard.sqlite3")),
    }
}
if os.environ.get("DATABASE_URL"):
    DATABASES["default"] = dj_database_url.parse(
        os.environ["DATABASE_URL"],
        conn_max_age=int(os.environ.get("DATABASE_CONN_MAX_AGE", "60")),
        conn_health_checks=True,
    )

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [] if INSTALLED_LAYOUT else [BASE_DIR / "static"]
STATIC_ROOT: Path | None = Path(os.environ.get("DJANGO_STATIC_ROOT", VAR_DIR / "staticfiles"))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
# runserver and the test server serve static files from the app and project folders;
# production serves the collected, hashed, compressed copies (prod.py)
WHITENOISE_USE_FINDERS = True

LOGIN_URL = "login"

# Sign-in throttling (django-axes): after AXES_FAILURE_LIMIT wrong passwords for one
# username from one address, that pair is locked out — the right password fails too —
# until the cool-off has passed (or `memory-admin manage axes_reset_username NAME`). Attempts
# live in the dashboard database, so every server worker counts the same ones.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",  # first: refuses a locked-out pair before any password check
    # passwords, while MEMORY_ADMIN_LOCAL_SIGNIN is on (Django's model backend behind the switch)
    "memory_admin.dashboard.sso.backend.LocalPasswordBackend",
    # single sign-on (below): only its callback view signs anyone in through it
    "memory_admin.dashboard.sso.backend.ProviderBackend",
]
AXES_FAILURE_LIMIT = int(os.environ.get("DASHBOARD_SIGNIN_FAILURES", "5"))
AXES_COOLOFF_TIME = timedelta(minutes=int(os.environ.get("DASHBOARD_SIGNIN_COOLOFF_MINUTES", "15")))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_DISABLE_ACCESS_LOG = True  # no log of successful sign-ins: the dashboard keeps what it needs only
AXES_LOCKOUT_CALLABLE = "memory_admin.dashboard.views.signin.locked_out"
LOGIN_REDIRECT_URL = "dashboard:browse"
LOGOUT_REDIRECT_URL = "login"

# Single sign-on through an OpenID Connect provider (docs/deploy.md, "Single sign-on"):
# on when OIDC_ISSUER is set, configured from the issuer's discovery document. Each
# value comes from the environment variable of its name; a settings module of your own
# may set any of them (OIDC_ROLE_MAP, OIDC_GRANT_MAP and OIDC_ENDPOINTS as dicts).
OIDC_ISSUER = os.environ.get("OIDC_ISSUER", "")
OIDC_CLIENT_ID = os.environ.get("OIDC_CLIENT_ID", "")
OIDC_CLIENT_SECRET = os.environ.get("OIDC_CLIENT_SECRET", "")
OIDC_PROVIDER_NAME = os.environ.get("OIDC_PROVIDER_NAME", "")  # the button: "Sign in with <name>"
OIDC_SCOPES = os.environ.get("OIDC_SCOPES", "openid email profile")
OIDC_GROUPS_CLAIM = os.environ.get("OIDC_GROUPS_CLAIM", "groups")  # dots walk nested claims: realm_access.roles
OIDC_GRANTS_CLAIM = os.environ.get("OIDC_GRANTS_CLAIM", "")  # empty: grants come from the groups claim
OIDC_GROUP_PREFIX = os.environ.get("OIDC_GROUP_PREFIX", "memory-admin:")
OIDC_ROLE_MAP: str | dict[str, str] = os.environ.get("OIDC_ROLE_MAP", "")  # JSON: {"group id": "curator"}
OIDC_GRANT_MAP: str | dict[str, Any] = os.environ.get("OIDC_GRANT_MAP", "")  # JSON: {"group id": ["tenant=acme"]}
OIDC_MAX_GROUPS = int(os.environ.get("OIDC_MAX_GROUPS", "200"))
OIDC_USERNAME_CLAIM = os.environ.get("OIDC_USERNAME_CLAIM", "preferred_username")
OIDC_RECHECK_SECONDS = int(os.environ.get("OIDC_RECHECK_SECONDS", "300"))
OIDC_TIMEOUT_SECONDS = int(os.environ.get("OIDC_TIMEOUT_SECONDS", "10"))
OIDC_DISCOVERY_CACHE_SECONDS = int(os.environ.get("OIDC_DISCOVERY_CACHE_SECONDS", "3600"))
OIDC_ENDPOINTS: str | dict[str, str] = os.environ.get("OIDC_ENDPOINTS", "")  # JSON: endpoints that win over discovery
OIDC_CALLBACK_URL = os.environ.get("OIDC_CALLBACK_URL", "")  # default: this host's /accounts/sso/callback/
# the username-and-password form; 0 leaves single sign-on the only way in
MEMORY_ADMIN_LOCAL_SIGNIN = env_bool("MEMORY_ADMIN_LOCAL_SIGNIN", True)

# The dashboard's own knobs
DASHBOARD_PAGE_SIZE = int(os.environ.get("DASHBOARD_PAGE_SIZE", "25"))

# Scripts (htmx, Chart.js, the dashboard's own), styles and requests: this site only.
# No inline script or style anywhere; data for the charts travels in
# <script type="application/json"> blocks, which are never executed.
DASHBOARD_CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "font-src 'self'",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "loggers": {"memory_admin": {"handlers": ["console"], "level": os.environ.get("MEMORY_ADMIN_LOG_LEVEL", "INFO")}},
}
