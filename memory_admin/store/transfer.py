"""Moving a store's contents to another store (SQLite to PostgreSQL, typically).

:func:`copy_store` streams every record of every tenant — live, invalidated and expired —
and the whole event log from one store into another, page by page, through the
verbatim imports (:meth:`~BaseMemoryStore.import_records`,
:meth:`~BaseMemoryStore.import_events`): ids, timestamps, invalidation chains and their
tombstones, and event ids arrive unchanged, so links and dashboard URLs keep working.
Learnings travel too (:meth:`~BaseMemoryStore.import_learnings`): every candidate's
promotion history and the compositions registered, with their times. Gardening proposals
waiting for a person do not: run the pass again on the copy.
Stop the writers first: a record invalidated after it was copied stays valid in the copy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from urllib.parse import urlsplit

from memory_admin.errors import MemoryConflictError
from memory_admin.events import EventQuery
from memory_admin.records import MemoryRecord
from memory_admin.scope import TENANT_KEY
from memory_admin.store.arguments import check_count
from memory_admin.store.base import BaseMemoryStore
from memory_admin.store.protocol import MemoryNeeds, RecordListQuery, require_memory

EVENT_PAGE = 1000


@dataclass
class CopyReport:
    """What a copy moved so far (also handed to the progress callback after each batch)."""

    tenants: int = 0
    records: int = 0
    skipped: int = 0
    events: int = 0
    histories: int = 0
    """Promotion histories restored (one per targeted record)."""


def copy_store(
    source: BaseMemoryStore,
    target: BaseMemoryStore,
    *,
    batch_size: int = 500,
    resume: bool = False,
    progress: Callable[[CopyReport], object] | None = None,
) -> CopyReport:
    """Copy every record and event of ``source`` into ``target``, in bounded memory.

    ``target`` must be empty unless ``resume`` (continuing an interrupted copy: records
    and events already there are skipped). Each batch is one transaction in the target.
    """
    check_count(batch_size, "batch_size")
    require_memory(source, MemoryNeeds(admin=True))
    with_events = source.capabilities().events
    require_memory(target, MemoryNeeds(admin=True, events=with_events))
    if not resume and _holds_anything(target):
        raise MemoryConflictError(
            "The target store already holds records or events. Copy into an empty store, "
            "or pass resume to continue an interrupted copy."
        )
    report = CopyReport()
    limit = min(batch_size, source.capabilities().max_limit)
    max_batch = target.capabilities().max_batch
    for tenant in _tenants(source):
        report.tenants += 1
        listing = RecordListQuery(
            search={"scope": {TENANT_KEY: tenant}, "include_invalidated": True}, include_expired=True
        )
        pending: list[MemoryRecord] = []
        for group in _batch_ties(source.iter_records(listing, page_size=limit)):
            if pending and len(pending) + len(group) > max_batch:
                _flush(target, pending, resume, report, progress)
            # the listing is newest first; a batch tie goes in oldest first to keep its order
            pending.extend(reversed(group))
            if len(pending) >= batch_size:
                _flush(target, pending, resume, report, progress)
        _flush(target, pending, resume, report, progress)
        if source.capabilities().promotion and target.capabilities().promotion:
            _copy_learnings(source, target, tenant, report)
    if with_events:
        before: int | None = None
        while page := source.query_events(EventQuery(before_id=before, limit=EVENT_PAGE, include_previews=True)):
            report.events += target.import_events(page)
            before = page[-1].id
            if progress is not None:
                progress(report)
    return report


def _flush(
    target: BaseMemoryStore,
    pending: list[MemoryRecord],
    resume: bool,
    report: CopyReport,
    progress: Callable[[CopyReport], object] | None,
) -> None:
    if not pending:
        return
    written = target.import_records(pending, skip_existing=resume)
    report.records += written
    report.skipped += len(pending) - written
    pending.clear()
    if progress is not None:
        progress(report)


def _copy_learnings(source: BaseMemoryStore, target: BaseMemoryStore, tenant: str, report: CopyReport) -> None:
    """A tenant's promotion histories and composition registrations, after its records."""
    scope = {TENANT_KEY: tenant}
    cursor: str | None = None
    while True:
        page = source.promotions(scope, include_invalidated=True, limit=500, cursor=cursor)
        histories = [source.promotion_history(p.record_id) for p in page.promotions]
        if histories:
            report.histories += target.import_learnings(histories)
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    registrations = []
    for use in reversed(source.compositions(scope)):  # oldest first, as they were made
        composition = source.composition(use.version)
        if composition is not None:
            registrations.append((composition, use))
    if registrations:
        target.import_learnings([], registrations)


def _tenants(store: BaseMemoryStore) -> list[str]:
    facets = store.scope_facets(values_per_key=2**31)
    return sorted(value.value for facet in facets if facet.key == TENANT_KEY for value in facet.values)


def _batch_ties(records: Iterable[MemoryRecord]) -> Iterator[list[MemoryRecord]]:
    """Consecutive records sharing ``created_at`` (one write batch), kept together."""
    group: list[MemoryRecord] = []
    for record in records:
        if group and record.created_at != group[0].created_at:
            yield group
            group = []
        group.append(record)
    if group:
        yield group


def _holds_anything(store: BaseMemoryStore) -> bool:
    if store.scope_facets(values_per_key=1):
        return True
    return store.capabilities().events and bool(store.query_events(EventQuery(limit=1, include_previews=True)))


def store_location(url: str) -> str:
    """A store URL fit to print: no user name or password."""
    parts = urlsplit(url)
    if parts.scheme.lower() in ("postgres", "postgresql"):
        from memory_admin.store.postgres import describe

        return describe(url)
    return url


__all__ = ["CopyReport", "copy_store", "store_location"]
