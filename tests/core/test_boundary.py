"""The store library never imports Django (nor the single sign-on client and its JWT
library): only memory_admin.dashboard may."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import memory_admin

CORE_MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(memory_admin.__path__, prefix="memory_admin.")
    if not info.name.startswith("memory_admin.dashboard")
)

FORBIDDEN = ("django", "django_htmx", "whitenoise", "mozilla_django_oidc", "jwt")

PROBE = f"""
import importlib, json, sys
FORBIDDEN = {FORBIDDEN!r}
try:
    importlib.import_module(sys.argv[1])
except ImportError as exc:  # an integration whose framework's extra is not installed here
    if "pip install 'memory-admin[" not in str(exc):
        raise
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in FORBIDDEN)))
"""


def test_the_core_modules_are_found() -> None:
    assert {
        "memory_admin.records",
        "memory_admin.store.sqlite",
        "memory_admin.conformance.kit",
        "memory_admin.reports.health",
        "memory_admin.reports.recall_stats",
    } <= set(CORE_MODULES)


@pytest.mark.parametrize("module", CORE_MODULES)
def test_importing_a_core_module_never_imports_django(module: str) -> None:
    result = subprocess.run([sys.executable, "-c", PROBE, module], capture_output=True, text=True, check=True)
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []


RUN_WITHOUT_DJANGO = f"""
import sys, pytest
FORBIDDEN = {FORBIDDEN!r}
code = pytest.main(["-q", "-p", "no:django", "-p", "no:cacheprovider", sys.argv[1]])
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in FORBIDDEN)))
sys.exit(int(code))
"""


def test_the_reports_are_tested_without_django() -> None:
    """The reports' tests pass with pytest-django switched off, and nothing imports Django."""
    tests = Path(__file__).parents[1] / "reports"
    result = subprocess.run(
        [sys.executable, "-c", "import json\n" + RUN_WITHOUT_DJANGO, str(tests)],
        capture_output=True,
        text=True,
        cwd=tests.parents[1],
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []
