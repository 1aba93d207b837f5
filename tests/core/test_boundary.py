"""The store library never imports Django: only memory_admin.dashboard may."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys

import pytest

import memory_admin

CORE_MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(memory_admin.__path__, prefix="memory_admin.")
    if not info.name.startswith("memory_admin.dashboard")
)

PROBE = """
import importlib, json, sys
importlib.import_module(sys.argv[1])
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in ("django", "django_htmx", "whitenoise"))))
"""


def test_the_core_modules_are_found() -> None:
    assert {"memory_admin.records", "memory_admin.store.sqlite", "memory_admin.conformance.kit"} <= set(CORE_MODULES)


@pytest.mark.parametrize("module", CORE_MODULES)
def test_importing_a_core_module_never_imports_django(module: str) -> None:
    result = subprocess.run([sys.executable, "-c", PROBE, module], capture_output=True, text=True, check=True)
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []
