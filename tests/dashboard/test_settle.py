"""A dashboard process's start-up is set aside from the garbage collector (``settle``)."""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator

import pytest

from memory_admin.dashboard.settle import settle


@pytest.fixture
def unfrozen() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()  # the rest of the run collects as usual


def test_settle_loads_every_view_and_freezes_what_is_loaded(unfrozen: None) -> None:
    def walked(thing: object) -> bool:
        """Whether a full collection would walk ``thing``."""
        return any(o is thing for o in gc.get_objects())

    assert gc.get_freeze_count() == 0 and walked(sys.modules)
    frozen = settle()
    assert frozen == gc.get_freeze_count() > 10_000
    assert "memory_admin.dashboard.views.learnings" in sys.modules  # the URLconf imported the views
    assert not walked(sys.modules) and not walked(sys.modules["memory_admin.dashboard.views.learnings"].__dict__)
