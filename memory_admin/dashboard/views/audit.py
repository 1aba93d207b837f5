"""``/audit/`` — who did what, when, to which ids or scope, why, with what counts;
``/audit/<n>/`` — one entry (an erasure's or deletion's receipt). Curators and up,
confined to their grants. Entries never hold memory content."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.views.decorators.http import require_GET

from memory_admin.dashboard.audit import entries_for, visible_entry
from memory_admin.dashboard.forms import CursorForm
from memory_admin.dashboard.permissions import Ability, Access, NotVisible, access_for
from memory_admin.dashboard.views.common import HtmxHttpRequest, query_page, render_region

LOG = "dashboard/audit.html"
ENTRY = "dashboard/audit_entry.html"
PAGE = 50


@require_GET
def audit_log(request: HtmxHttpRequest) -> HttpResponse:
    access_for(request).require(Ability.CURATE)
    return query_page(request, CursorForm(request.GET), LOG, "log", _log_context)


def _log_context(access: Access, form: CursorForm) -> dict[str, Any]:
    entries, older = entries_for(access, before=form.cleaned_data["before"], limit=PAGE)
    return {"access": access, "entries": entries, "older": older}


@require_GET
def audit_entry(request: HtmxHttpRequest, entry_id: int) -> HttpResponse:
    access = access_for(request)
    access.require(Ability.CURATE)
    entry = visible_entry(access, entry_id)
    if entry is None:
        raise NotVisible(f"Audit entry {entry_id}")
    return render_region(request, ENTRY, "entry", {"access": access, "entry": entry})
