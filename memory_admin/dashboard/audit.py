"""The audit log: every curation and privacy action, written around the store call.

:func:`audited` opens an entry before the store is touched and closes it after, so a
failure is recorded as such and an action that dies half-way still leaves a trace.
Entries hold ids, scopes, reasons and counts — never memory content.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

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
    """Open an entry (``started``) before the store is touched."""
    canonical = canonical_scope(scope)
    return AuditEntry.objects.create(
        at=timezone.now(),
        actor=access.username,
        role=access.role.group if access.role else "",
        action=action,
        tenant=canonical[TENANT_KEY],
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


def export_started(access: Access, scope: Mapping[str, str], fmt: str, *, backend: str = "") -> AuditEntry:
    """The entry for one export download: a new one, or — for the same user and scope
    within the same minute — the one already written, its ``exports`` count raised, so
    reloading an export cannot flood the log."""
    now = timezone.now()
    minute = now.replace(second=0, microsecond=0)
    canonical = canonical_scope(scope)
    with transaction.atomic():
        entry = (
            AuditEntry.objects.select_for_update()
            .filter(
                action=AuditEntry.Action.EXPORT,
                actor=access.username,
                scope_json=scope_json(canonical),
                at__gte=minute,
                at__lt=minute + timedelta(minutes=1),
            )
            .order_by("-id")
            .first()
        )
        if entry is None:
            entry = start(access, AuditEntry.Action.EXPORT, canonical, backend=backend)
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


def entries_for(access: Access, *, before: int | None = None, limit: int = 50) -> tuple[list[AuditEntry], int | None]:
    """The newest entries ``access`` may see (their scope inside a grant; admins see
    all), and the ``before`` cursor of the next page (``None`` on the last page)."""
    entries = AuditEntry.objects.all()
    if before is not None:
        entries = entries.filter(id__lt=before)
    if not access.all_tenants:
        entries = entries.filter(tenant__in={grant[TENANT_KEY] for grant in access.grants})
    shown: list[AuditEntry] = []
    scanned = 0
    last_id: int | None = None
    for entry in entries[:MAX_SCAN].iterator():
        scanned += 1
        last_id = entry.id
        if entry_visible(access, entry):
            if len(shown) == limit:
                return shown, shown[-1].id
            shown.append(entry)
    # a scan that stopped at its bound goes on from where it stopped
    return shown, last_id if scanned == MAX_SCAN else None


def visible_entry(access: Access, entry_id: int) -> AuditEntry | None:
    entry = AuditEntry.objects.filter(id=entry_id).first()
    return entry if entry is not None and entry_visible(access, entry) else None


def entry_visible(access: Access, entry: AuditEntry) -> bool:
    """True when ``entry``'s scope lies inside a grant — hashed values (an erased
    scope's) compared as the grant's values hashed."""
    return access.all_tenants or any(grant_covers(grant, entry.scope) for grant in access.grants)
