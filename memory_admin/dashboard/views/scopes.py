"""``/scopes/?scope=…`` — one scope's summary: counts, the profile tier, recent writes."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from memory_admin.dashboard.forms import ScopeForm
from memory_admin.dashboard.permissions import Access, AmbiguousScope, access_for
from memory_admin.dashboard.views.browse import ScopeChoice, scope_choices
from memory_admin.dashboard.views.common import admin_store, render_region
from memory_admin.reports.profile_slice import profile_slice
from memory_admin.scope import Scope, format_scope
from memory_admin.store import BaseMemoryStore, RecordListQuery

TEMPLATE = "dashboard/scope.html"
RECENT_WRITES = 10
PROFILE_LIMIT = 200


@require_GET
def scope_summary(request: HttpRequest) -> HttpResponse:
    access = access_for(request)
    form = ScopeForm(request.GET)
    if not form.is_valid():
        return render_region(request, TEMPLATE, "summary", {"form": form, "access": access}, status=400)
    context = scope_context(admin_store(), access, form.cleaned_data["scope"])
    return render_region(request, TEMPLATE, "summary", {"form": form, **context})


def scope_context(store: BaseMemoryStore, access: Access, requested: Scope | None) -> dict[str, Any]:
    context: dict[str, Any] = {"access": access}
    if requested is None:
        return {**context, "choices": scope_choices(store, access)} if access.sees_anything else context
    try:
        resolution = access.resolve(requested)
    except AmbiguousScope as exc:
        return {**context, "choices": [ScopeChoice(s) for s in exc.options], "ambiguous": True}
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
        "scope": scope,
        "scope_text": format_scope(scope),
        "narrowed_by": format_scope(resolution.narrowed_by) if resolution.narrowed_by else None,
        "counts": store.count_records(scope),
        "profile": profile_slice([hit.record for hit in profiles if access.allows(hit.record.scope)]),
        "recent": [hit.record for hit in recent if access.allows(hit.record.scope)],
    }
