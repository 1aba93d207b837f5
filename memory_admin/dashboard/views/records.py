"""``/records/<id>/`` — one record, every field, and its invalidation chain as a timeline;
``?as_of=`` shows the record's state and its chain's at that moment, as the browser does."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.http import HttpResponse
from django.views.decorators.http import require_GET

from memory_admin.dashboard.forms import RecordForm
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
    form = RecordForm(request.GET)
    if not form.is_valid():
        # the record as it is now, the as-of field saying what is wrong with the moment typed
        context = record_context(store, access, record, form=form)
        return render_region(request, TEMPLATE, "record", context, status=400)
    context = record_context(store, access, record, as_of=form.cleaned_data["as_of"], form=form)
    return render_region(request, TEMPLATE, "timeline", context)


def record_context(
    store: AdminMemoryStore,
    access: Access,
    record: MemoryRecord,
    *,
    as_of: datetime | None = None,
    form: RecordForm | None = None,
) -> dict[str, Any]:
    """The record page's context: the record, its chain timeline (with each version's
    state at ``as_of``, when given) and what the user may do."""
    timeline = build_timeline(store.chain(record.id), record.id, lambda r: access.allows(r.scope), at=as_of)
    return {
        "as_of": as_of,
        "as_of_form": form or RecordForm(),
        "live_then": next((version for version in timeline if version.live_then), None),
        "access": access,
        "record": record,
        "scope_text": format_scope(record.scope),
        "timeline": timeline,
        "can_curate": access.can(Ability.CURATE),
        "can_forget": access.can(Ability.FORGET),
        "correctable": record.is_live(utc_now()),
        # a deleted predecessor leaves only its id in the chain: no link to a 404
        "supersedes_gone": record.supersedes is not None
        and all(v.id != record.supersedes or v.tombstone for v in timeline),
    }
