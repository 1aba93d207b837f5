"""The integrations are optional: importing memory_admin never loads a framework, and an
integration without its framework says which extra to install."""

from __future__ import annotations

import subprocess
import sys

import pytest

FRAMEWORKS = ("langgraph", "langchain_core", "langmem", "pydantic_ai", "agents")

LEAN = """
import sys
import memory_admin, memory_admin.store, memory_admin.toolbox, memory_admin.recall, memory_admin.integrations
print(sorted(m for m in sys.modules if m.split(".")[0] in {frameworks!r}))
"""

BLOCKED = """
import sys
sys.modules[{blocked!r}] = None  # as if the extra were not installed
try:
    import {module}
except ImportError as exc:
    print(exc)
else:
    print("imported")
"""


def test_importing_memory_admin_loads_no_framework() -> None:
    code = LEAN.format(frameworks=set(FRAMEWORKS))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("module", "blocked", "extra"),
    [
        ("memory_admin.integrations.langgraph", "langgraph", "langgraph"),
        ("memory_admin.integrations.pydantic_ai", "pydantic_ai", "pydantic-ai"),
        ("memory_admin.integrations.openai_agents", "agents", "openai-agents"),
    ],
)
def test_an_integration_without_its_framework_names_the_extra(module: str, blocked: str, extra: str) -> None:
    code = BLOCKED.format(blocked=blocked, module=module)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert f"pip install 'memory-admin[{extra}]'" in done.stdout
