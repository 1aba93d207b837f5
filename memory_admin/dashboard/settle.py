"""A dashboard process's start-up, set aside from the garbage collector.

CPython's collector now and then walks every object it tracks (a full collection). A
dashboard process holds about 100,000 of them from start-up alone — Django, pydantic's
schemas, the store's and the views' modules — none of which ever becomes garbage, and
walking them cost single requests 40–50 ms: on the dashboard benchmark at 1,000,000
records one learning's page had p95 59 ms against a median of 16. :func:`settle` loads
what every request needs (the URLconf imports every view) and moves all of it to the
collector's permanent generation (:func:`gc.freeze`), so a full collection walks only
what requests made since: that page's p95 became 18 ms, the inbox's p99 91 → 54 ms
(docs/benchmarks/dashboard.md). ``memory-admin serve`` settles each gunicorn worker
once its application is loaded; the benchmark settles its process the same way.
"""

from __future__ import annotations

import gc

from django.urls import get_resolver


def settle() -> int:
    """Load every view, then freeze what is loaded; returns how many objects were set aside."""
    get_resolver().url_patterns  # noqa: B018  # imports the URLconf, hence every view and form
    gc.collect()  # garbage left by start-up is freed, not frozen
    gc.freeze()
    return gc.get_freeze_count()
