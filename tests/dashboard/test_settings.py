"""Settings come from the environment; production serves hashed, compressed static files."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.child import report, run_python

READ = (
    "import json; from django.conf import settings; "
    "print(json.dumps({'storage': settings.STORAGES['staticfiles']['BACKEND'], 'debug': settings.DEBUG, "
    "'hosts': settings.ALLOWED_HOSTS, 'store': settings.MEMORY_STORE_URL, 'secure': settings.SESSION_COOKIE_SECURE}))"
)


def settings_of(module: str, **env: str) -> dict[str, object]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "MEMORY_STORE"))}
    environment.update(DJANGO_SETTINGS_MODULE=module, **env)
    loaded: dict[str, object] = report(run_python(READ, env=environment, timeout=60))
    return loaded


def test_production_settings_from_the_environment() -> None:
    found = settings_of(
        "memory_admin.dashboard.settings.prod",
        DJANGO_SECRET_KEY="x" * 60,
        DJANGO_ALLOWED_HOSTS="memory.example.org, admin.example.org",
        MEMORY_STORE_URL="postgresql://memory@db/memory",
    )
    assert found["storage"] == "whitenoise.storage.CompressedManifestStaticFilesStorage"
    assert found["debug"] is False and found["secure"] is True
    assert found["hosts"] == ["memory.example.org", "admin.example.org"]
    assert found["store"] == "postgresql://memory@db/memory"


def test_production_refuses_a_missing_secret_key() -> None:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")}
    environment["DJANGO_SETTINGS_MODULE"] = "memory_admin.dashboard.settings.prod"
    done = subprocess.run([sys.executable, "-c", READ], env=environment, capture_output=True, text=True, check=False)
    assert done.returncode != 0 and "DJANGO_SECRET_KEY" in done.stderr


@pytest.mark.parametrize(("value", "debug"), [("1", True), ("0", False)])
def test_debug_from_the_environment(value: str, debug: bool) -> None:
    assert settings_of("memory_admin.dashboard.settings.dev", DJANGO_DEBUG=value)["debug"] is debug
