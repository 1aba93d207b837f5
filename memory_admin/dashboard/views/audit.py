"""``/audit/`` — who did what, when, to which ids or scope, why, with what counts;
``/audit/<n>/`` — one entry (an erasure's or deletion's receipt). Curators and up,
confined to their grants. Entries never hold memory content."""

from __future__ import annotations

from django.http import HttpResponse
from django.views.decorators.http import require_GET

from memory_admin.dashboard.audit import entries_for, visible_entry
from memory_admin.dashboard.forms import CursorForm
from memory_admin.dashboard.permissions import Ability, NotVisible, access_for
from memory_admin.dashboard.views.common import HtmxHttpRequest, render_region

LOG = "dashboard/audit.html"
ENTRY = "dashboard/audit_entry.html"
PAGE = 50


@require_GET
def audit_log(request: HtmxHttpRequest) -> HttpResponse:
    access = access_for(request)
    access.require(Ability.CURATE)
    form = CursorForm(request.GET)
    if not form.is_valid():
        return render_region(request, LOG, "log", {"form": form, "access": access}, status=400)
    entries, older = entries_for(access, before=form.cleaned_data["before"], limit=PAGE)
    context = {"access": access, "form": form, "entries": entries, "older": older}
    return render_region(request, LOG, "log", context)


@require_GET
def audit_entry(request: HtmxHttpRequest, entry_id: int) -> HttpResponse:
    access = access_for(request)
    access.require(Ability.CURATE)
    entry = visible_entry(access, entry_id)
    if entry is None:
        raise NotVisible(f"Audit entry {entry_id}")
    return render_region(request, ENTRY, "entry", {"access": access, "entry": entry})
