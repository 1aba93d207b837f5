"""``/records/<id>/`` — one record, every field, and its invalidation chain as a timeline."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.views.decorators.http import require_GET

from memory_admin.dashboard.permissions import Ability, Access, access_for
from memory_admin.dashboard.views.common import HtmxHttpRequest, admin_store, render_region
from memory_admin.records import MemoryRecord, utc_now
from memory_admin.reports.timeline import build_timeline
from memory_admin.scope import format_scope
from memory_admin.store import AdminMemoryStore

TEMPLATE = "dashboard/record.html"


@require_GET
def record_detail(request: HtmxHttpRequest, record_id: str) -> HttpResponse:
    access = access_for(request)
    store = admin_store()
    record = access.visible_record(store.get(record_id), record_id)
    return render_region(request, TEMPLATE, "timeline", record_context(store, access, record))


def record_context(store: AdminMemoryStore, access: Access, record: MemoryRecord) -> dict[str, Any]:
    """The record page's context: the record, its chain timeline and what the user may do."""
    timeline = build_timeline(store.chain(record.id), record.id, lambda r: access.allows(r.scope))
    return {
        "access": access,
        "record": record,
        "scope_text": format_scope(record.scope),
        "timeline": timeline,
        "can_curate": access.can(Ability.CURATE),
        "can_forget": access.can(Ability.FORGET),
        "correctable": record.is_live(utc_now()),
    }
