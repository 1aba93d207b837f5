"""A dashboard process's start-up, set aside from the garbage collector.

CPython's collector walks every object it tracks in a full collection. A dashboard
process holds about 100,000 objects from start-up alone — Django, pydantic's schemas,
the store's and the views' modules — none of which ever becomes garbage, and tens of
thousands more in the store's caches as requests fill them; a full collection over all
of them stops a request for 40–90 ms. :func:`settle` loads what every request needs (the
URLconf imports every view), moves all of it to the collector's permanent generation
(:func:`gc.freeze`), and spaces the collections out (:data:`GC_THRESHOLDS`). On the
dashboard benchmark's 1,000,000-record file (its 18 pages, 120 requests each, a process
left as it starts and a settled one, one after the other on a quiet machine), the mean
over the pages of p99 went from 58.9 to 37.8 ms and of max from 74.5 to 41.7 ms, medians
and p95 unchanged (32.1 → 31.1, 35.6 → 35.0 ms): one learning's page p99 96.7 → 24.0 ms,
the learnings inbox's 127.1 → 56.5 ms. Freezing alone, or a young generation of 50,000,
left more of the tail. Cyclic garbage waits a little longer to be freed.

``memory-admin serve`` settles each gunicorn worker once its application is loaded; the
dashboard benchmark settles its process the same way.
"""

from __future__ import annotations

import gc

from django.urls import get_resolver

GC_THRESHOLDS = (10_000, 10, 10)
"""The collector's thresholds once settled (:func:`gc.set_threshold`): new objects before
a young collection (CPython's default is 700), young collections before a middle one,
middle ones before a full one."""


def settle() -> int:
    """Load every view, freeze what is loaded and space the collections out; returns how
    many objects were set aside."""
    get_resolver().url_patterns  # noqa: B018  # imports the URLconf, hence every view and form
    gc.collect()  # garbage left by start-up is freed, not frozen
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    return gc.get_freeze_count()
