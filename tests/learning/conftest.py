from __future__ import annotations

from collections.abc import Iterator

import pytest

from memory_admin.composition import AgentComposition
from memory_admin.conformance import FakeClock
from memory_admin.store import BaseMemoryStore
from tests.support.compositions import example_composition
from tests.support.stores import backends, open_backend


@pytest.fixture(params=backends("memory", "sqlite", "postgres"))
def learning_store(request: pytest.FixtureRequest, clock: FakeClock) -> Iterator[BaseMemoryStore]:
    """An empty store of every backend: the acting layer is written once over the protocol,
    and run on each."""
    made = open_backend(request.param, request, clock=clock)
    yield made
    made.close()


@pytest.fixture
def composition() -> AgentComposition:
    return example_composition()
