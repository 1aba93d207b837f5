"""The agent surfaces belong to the store library: importing them never pulls in Django."""

from __future__ import annotations

import subprocess
import sys

import pytest

MODULES = [
    "memory_admin.recall",
    "memory_admin.toolbox",
    "memory_admin.retention",
    "memory_admin.mcp_server",
    "bench.locomo",
]


@pytest.mark.parametrize("module", MODULES)
def test_module_imports_without_django(module: str) -> None:
    code = f"import sys, {module}; print(sorted(m for m in sys.modules if m.split('.')[0] == 'django'))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
