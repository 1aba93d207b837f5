"""The conformance cases. See :mod:`memory_admin.conformance` for how to use them.

The cases live in groups, one module each (``cases_write``, ``cases_search``,
``cases_admin``, ``cases_events``, ``cases_matching``, ``cases_semantic``,
``cases_promotion``) over the shared fixtures of :mod:`.base`;
:class:`MemoryStoreConformance` is all of them at once.
"""

from __future__ import annotations

from memory_admin.conformance.cases_admin import ExtensionCases
from memory_admin.conformance.cases_events import EventCases
from memory_admin.conformance.cases_matching import MatchingCases
from memory_admin.conformance.cases_promotion import PromotionCases
from memory_admin.conformance.cases_search import SearchCases
from memory_admin.conformance.cases_semantic import SemanticCases
from memory_admin.conformance.cases_write import WriteCases


class MemoryStoreConformance(
    WriteCases, SearchCases, ExtensionCases, EventCases, MatchingCases, SemanticCases, PromotionCases
):
    """Subclass and implement :meth:`make_store` to hold a backend to the contract."""


__all__ = ["MemoryStoreConformance"]
