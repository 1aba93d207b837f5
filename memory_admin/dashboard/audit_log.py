"""The audit log: every curation and privacy action, written around the store call.

:func:`audited` opens an entry before the store is touched and closes it after, so a
failure is recorded as such and an action that dies half-way still leaves a trace.
Entries hold ids, scopes, reasons and counts — never memory content.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from memory_admin.dashboard.formats import csv_cells
from memory_admin.dashboard.models import AuditEntry
from memory_admin.dashboard.permissions import Access
from memory_admin.dashboard.redaction import grant_covers
from memory_admin.errors import MemoryStoreError
from memory_admin.scope import TENANT_KEY, canonical_scope, scope_json

MAX_ERROR_CHARS = 500
MAX_SCAN = 5000  # entries read per audit page for a user with grants (filtered in Python)


def start(
    access: Access,
    action: AuditEntry.Action,
    scope: Mapping[str, str],
    *,
    reason: str = "",
    record_ids: Sequence[str] = (),
    backend: str = "",
) -> AuditEntry:
    """Open an entry (``started``) before the store is touched. An empty ``scope`` is
    an action across every tenant (an admin's audit log export)."""
    canonical = canonical_scope(scope) if scope else {}
    return AuditEntry.objects.create(
        at=timezone.now(),
        actor=access.username,
        role=access.role.group if access.role else "",
        action=action,
        tenant=canonical.get(TENANT_KEY, ""),
        scope_json=scope_json(canonical),
        record_ids=list(record_ids),
        reason=reason,
        backend=backend,
    )


@contextmanager
def audited(
    access: Access,
    action: AuditEntry.Action,
    scope: Mapping[str, str],
    *,
    reason: str = "",
    record_ids: Sequence[str] = (),
    backend: str = "",
) -> Iterator[AuditEntry]:
    """An audit entry for one action: ``started`` now, ``done`` when the block ends,
    ``failed`` (with the error, and re-raised) when it raises. The block may set
    ``entry.counts`` and ``entry.record_ids``."""
    entry = start(access, action, scope, reason=reason, record_ids=record_ids, backend=backend)
    try:
        yield entry
    except BaseException as exc:
        finish(entry, AuditEntry.Outcome.FAILED, error=describe(exc))
        raise
    finish(entry, AuditEntry.Outcome.DONE)


def export_started(
    access: Access,
    scope: Mapping[str, str] | None,
    fmt: str,
    *,
    action: AuditEntry.Action = AuditEntry.Action.EXPORT,
    backend: str = "",
) -> AuditEntry:
    """The entry for one export download: a new one, or — for the same user, action and
    scope within the same minute — the one already written, its ``exports`` count
    raised, so reloading an export cannot flood the log. ``scope`` is ``None`` for an
    export across every tenant (an admin's audit log export)."""
    now = timezone.now()
    minute = now.replace(second=0, microsecond=0)
    canonical = canonical_scope(scope) if scope is not None else {}
    with transaction.atomic():
        entry = (
            AuditEntry.objects.select_for_update()
            .filter(
                action=action,
                actor=access.username,
                scope_json=scope_json(canonical),
                at__gte=minute,
                at__lt=minute + timedelta(minutes=1),
            )
            .order_by("-id")
            .first()
        )
        if entry is None:
            entry = start(access, action, canonical, backend=backend)
            entry.counts = {"format": fmt, "exports": 1}
            entry.save(update_fields=["counts"])
            return entry
        formats = sorted({*str(entry.counts.get("format", "")).split(", "), fmt} - {""})
        entry.counts = {
            **entry.counts,
            "format": ", ".join(formats),
            "exports": int(entry.counts.get("exports", 1)) + 1,
        }
        entry.outcome = AuditEntry.Outcome.STARTED
        entry.error = ""
        entry.save(update_fields=["counts", "outcome", "error"])
        return entry


def finish(entry: AuditEntry, outcome: AuditEntry.Outcome, *, error: str = "", **counts: Any) -> None:
    """Close ``entry`` with ``outcome`` (and any further counts)."""
    entry.outcome = outcome
    entry.error = error
    entry.finished_at = timezone.now()
    entry.counts = {**entry.counts, **counts}
    entry.save(update_fields=["outcome", "error", "finished_at", "counts", "record_ids"])


def describe(exc: BaseException) -> str:
    # the library's messages name ids and limits, never a record's content
    text = exc.message if isinstance(exc, MemoryStoreError) else type(exc).__name__
    return text[:MAX_ERROR_CHARS]


def confined(access: Access, entries: QuerySet[AuditEntry]) -> QuerySet[AuditEntry]:
    """``entries`` narrowed, in SQL, to the tenants of ``access``'s grants (the exact
    check, :func:`entry_visible`, runs on each row)."""
    if access.all_tenants:
        return entries
    return entries.filter(tenant__in={grant[TENANT_KEY] for grant in access.grants})


def visible_entries(
    access: Access, entries: QuerySet[AuditEntry], keep: Callable[[AuditEntry], bool] = lambda entry: True
) -> Iterator[AuditEntry]:
    """Every entry of ``entries`` that ``access`` may see and ``keep`` keeps, newest
    first, read in chunks (an export's stream)."""
    for entry in confined(access, entries).iterator():
        if entry_visible(access, entry) and keep(entry):
            yield entry


def entries_for(
    access: Access,
    *,
    entries: QuerySet[AuditEntry] | None = None,
    keep: Callable[[AuditEntry], bool] = lambda entry: True,
    before: int | None = None,
    limit: int = 50,
) -> tuple[list[AuditEntry], int | None]:
    """A page of the newest ``entries`` (default: all) ``access`` may see (their scope
    inside a grant; admins see all) and ``keep`` keeps, and the ``before`` cursor of the
    next page (``None`` on the last page). At most :data:`MAX_SCAN` rows are read per
    page; a scan that stops there goes on from where it stopped."""
    rows = confined(access, AuditEntry.objects.all() if entries is None else entries)
    if before is not None:
        rows = rows.filter(id__lt=before)
    shown: list[AuditEntry] = []
    scanned = 0
    last_id: int | None = None
    for entry in rows[:MAX_SCAN].iterator():
        scanned += 1
        last_id = entry.id
        if entry_visible(access, entry) and keep(entry):
            if len(shown) == limit:
                return shown, shown[-1].id
            shown.append(entry)
    return shown, last_id if scanned == MAX_SCAN else None


# --- the audit log as a file ---------------------------------------------------------------

EXPORT_COLUMNS: tuple[tuple[str, Callable[[AuditEntry], Any]], ...] = (
    ("id", lambda e: e.pk),
    ("at", lambda e: e.at.isoformat()),
    ("finished_at", lambda e: e.finished_at.isoformat() if e.finished_at else None),
    ("actor", lambda e: e.actor),
    ("role", lambda e: e.role),
    ("action", lambda e: e.action),
    ("scope", lambda e: e.scope_text),
    ("record_ids", lambda e: " ".join(e.record_ids)),
    ("reason", lambda e: e.reason),
    ("counts", lambda e: json.dumps(e.counts, ensure_ascii=False, sort_keys=True) if e.counts else None),
    ("outcome", lambda e: e.outcome),
    ("error", lambda e: e.error),
    ("backend", lambda e: e.backend),
)


def export_rows(entries: Iterable[AuditEntry]) -> Iterator[list[str]]:
    """One CSV row of :data:`EXPORT_COLUMNS` per entry."""
    for entry in entries:
        yield csv_cells(read(entry) for _, read in EXPORT_COLUMNS)


def export_object(entry: AuditEntry) -> dict[str, Any]:
    """One entry as a JSON object (scope and counts as objects, ids as a list)."""
    return {
        "id": entry.pk,
        "at": entry.at.isoformat(),
        "finished_at": entry.finished_at.isoformat() if entry.finished_at else None,
        "actor": entry.actor,
        "role": entry.role,
        "action": entry.action,
        "scope": entry.scope,
        "record_ids": list(entry.record_ids),
        "reason": entry.reason,
        "counts": entry.counts,
        "outcome": entry.outcome,
        "error": entry.error,
        "backend": entry.backend,
    }


def visible_entry(access: Access, entry_id: int) -> AuditEntry | None:
    entry = AuditEntry.objects.filter(id=entry_id).first()
    return entry if entry is not None and entry_visible(access, entry) else None


def entry_visible(access: Access, entry: AuditEntry) -> bool:
    """True when ``entry``'s scope lies inside a grant — hashed values (an erased
    scope's) compared as the grant's values hashed."""
    return access.all_tenants or any(grant_covers(grant, entry.scope) for grant in access.grants)
