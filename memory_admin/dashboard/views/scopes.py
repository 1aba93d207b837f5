"""``/scopes/?scope=…`` — one scope's summary: counts, the profile tier, recent writes."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.views.decorators.http import require_GET

from memory_admin.dashboard.forms import ScopeForm
from memory_admin.dashboard.permissions import Access
from memory_admin.dashboard.scope_resolver import PickScope, resolve_scope, scope_context
from memory_admin.dashboard.views.common import HtmxHttpRequest, admin_store, query_page
from memory_admin.reports.profile_slice import profile_slice, truncation
from memory_admin.store import RecordListQuery

TEMPLATE = "dashboard/scope.html"
RECENT_WRITES = 10
PROFILE_LIMIT = 200


@require_GET
def scope_summary(request: HtmxHttpRequest) -> HttpResponse:
    return query_page(request, ScopeForm(request.GET), TEMPLATE, "summary", summary_context)


def summary_context(access: Access, form: ScopeForm) -> dict[str, Any]:
    context: dict[str, Any] = {"access": access}
    store = admin_store()
    resolution = resolve_scope(store, access, form.cleaned_data["scope"], take_only_choice=False)
    context.update(scope_context(resolution))
    if isinstance(resolution, PickScope):
        return context
    scope = resolution.scope
    # the profile tier recall would load for this scope: shared records and the scope's own
    profiles = store.list_records(
        RecordListQuery.model_validate(
            {"search": {"scope": scope, "scope_match": "visible", "kinds": ["profile"], "limit": PROFILE_LIMIT}}
        )
    ).hits
    recent = store.list_records(
        RecordListQuery.model_validate(
            {"search": {"scope": scope, "include_invalidated": True, "limit": RECENT_WRITES}, "include_expired": True}
        )
    ).hits
    return {
        **context,
        "counts": store.count_records(scope),
        "truncation": truncation(
            store if store.capabilities().events else None,
            scope,
            profile_slice([hit.record for hit in profiles if access.allows(hit.record.scope)]),
        ),
        "recent": [hit.record for hit in recent if access.allows(hit.record.scope)],
    }
