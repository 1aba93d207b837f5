"""``/audit/`` — who did what, when, to which ids or scope, why, with what counts;
``/audit/<n>/`` — one entry (an erasure's or deletion's receipt). Curators and up,
confined to their grants. Entries never hold memory content."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.views.decorators.http import require_GET

from memory_admin.dashboard.audit import MAX_SCAN, entries_for, visible_entry
from memory_admin.dashboard.forms import AuditLogForm
from memory_admin.dashboard.models import AuditEntry
from memory_admin.dashboard.permissions import Ability, Access, NotVisible, access_for
from memory_admin.dashboard.views.common import HtmxHttpRequest, query_page, render_region
from memory_admin.scope import TENANT_KEY

LOG = "dashboard/audit.html"
ENTRY = "dashboard/audit_entry.html"
PAGE = 50


@require_GET
def audit_log(request: HtmxHttpRequest) -> HttpResponse:
    access_for(request).require(Ability.CURATE)
    return query_page(request, AuditLogForm(request.GET), LOG, "log", _log_context)


def _log_context(access: Access, form: AuditLogForm) -> dict[str, Any]:
    before = form.cleaned_data["before"]
    if form.filtering:
        entries, older = _filtered(access, form, before)
    else:
        entries, older = entries_for(access, before=before, limit=PAGE)
    return {"access": access, "entries": entries, "older": older, "filtering": form.filtering}


def _filtered(access: Access, form: AuditLogForm, before: int | None) -> tuple[list[AuditEntry], int | None]:
    """A page of the entries the filters select, confined as the unfiltered log is;
    like it, a scan that stops at its bound goes on from where it stopped."""
    rows = form.narrow(AuditEntry.objects.all())
    if before is not None:
        rows = rows.filter(id__lt=before)
    if not access.all_tenants:
        rows = rows.filter(tenant__in={grant[TENANT_KEY] for grant in access.grants})
    shown: list[AuditEntry] = []
    scanned, last_id = 0, None
    for entry in rows[:MAX_SCAN].iterator():
        scanned, last_id = scanned + 1, entry.id
        if (access.all_tenants or access.allows(entry.scope)) and form.matches(entry.scope):
            if len(shown) == PAGE:
                return shown, shown[-1].id
            shown.append(entry)
    return shown, last_id if scanned == MAX_SCAN else None


@require_GET
def audit_entry(request: HtmxHttpRequest, entry_id: int) -> HttpResponse:
    access = access_for(request)
    access.require(Ability.CURATE)
    entry = visible_entry(access, entry_id)
    if entry is None:
        raise NotVisible(f"Audit entry {entry_id}")
    return render_region(request, ENTRY, "entry", {"access": access, "entry": entry})
