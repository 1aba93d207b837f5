"""Reports over a memory store, for people rather than agents: the gardening report
(:mod:`~memory_admin.reports.health`), invalidation chains as timelines
(:mod:`~memory_admin.reports.timeline`), recall events over time
(:mod:`~memory_admin.reports.recall_stats`), one recall entry by entry
(:mod:`~memory_admin.reports.recall_entries`) and whether a scope's profile fits
recall's slice (:mod:`~memory_admin.reports.profile_slice`).

No Django here (a test proves it): the dashboard renders these; a CLI or a notebook can
use them as they are. Each takes the narrowest store protocol it reads through, and a
``visible``/``allows`` predicate where a reader's grants must confine what it shows.
"""
