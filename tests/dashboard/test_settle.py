"""A dashboard process's start-up is set aside from the garbage collector (``settle``)."""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator

import pytest

from memory_admin.dashboard.settle import GC_THRESHOLDS, settle


@pytest.fixture
def unfrozen() -> Iterator[None]:
    thresholds = gc.get_threshold()
    gc.unfreeze()
    yield
    gc.unfreeze()  # the rest of the run collects as usual
    gc.set_threshold(*thresholds)


def test_settle_loads_every_view_freezes_it_and_spaces_collections_out(unfrozen: None) -> None:
    def walked(thing: object) -> bool:
        """Whether a full collection would walk ``thing``."""
        return any(o is thing for o in gc.get_objects())

    assert gc.get_freeze_count() == 0 and walked(sys.modules)
    frozen = settle()
    # a frozen object still goes when its last reference does (another thread's, say), so
    # the count can only fall after settle() has reported it
    assert frozen >= gc.get_freeze_count() > 10_000
    assert "memory_admin.dashboard.views.learnings" in sys.modules  # the URLconf imported the views
    assert not walked(sys.modules) and not walked(sys.modules["memory_admin.dashboard.views.learnings"].__dict__)
    assert gc.get_threshold() == GC_THRESHOLDS and GC_THRESHOLDS[0] > 700  # collections spaced out
