"""``/health/?scope=…`` — the gardening report for one scope (read-only), and the one
one-click action it offers: sweeping expired records (a POST, for privacy officers)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_GET, require_POST

from memory_admin.dashboard import curation
from memory_admin.dashboard.forms import ScopeForm, SweepForm
from memory_admin.dashboard.health import build_health
from memory_admin.dashboard.permissions import Ability, Access, access_for
from memory_admin.dashboard.views.browse import PickScope, resolve_scope
from memory_admin.dashboard.views.common import admin_store, render_region, see_other
from memory_admin.records import utc_now
from memory_admin.scope import Scope, format_scope
from memory_admin.store import BaseMemoryStore

TEMPLATE = "dashboard/health.html"


@require_GET
def health(request: HttpRequest) -> HttpResponse:
    access = access_for(request)
    form = ScopeForm(request.GET)
    if not form.is_valid():
        return render_region(request, TEMPLATE, "health", {"form": form, "access": access}, status=400)
    context = health_context(admin_store(), access, form.cleaned_data["scope"])
    return render_region(request, TEMPLATE, "health", {"form": form, **context})


def health_context(store: BaseMemoryStore, access: Access, requested: Scope | None) -> dict[str, Any]:
    context: dict[str, Any] = {
        "access": access,
        "can_curate": access.can(Ability.CURATE),
        "can_forget": access.can(Ability.FORGET),
    }
    if not access.sees_anything:
        return context
    resolution = resolve_scope(store, access, requested)
    if isinstance(resolution, PickScope):
        return {**context, **resolution.context()}
    report = build_health(store, resolution.scope, utc_now(), visible=access.allows)
    return {
        **context,
        "scope": resolution.scope,
        "scope_text": format_scope(resolution.scope),
        "narrowed_by": format_scope(resolution.narrowed_by) if resolution.narrowed_by else None,
        "report": report,
        "event_log": store.event_log_stats() if store.capabilities().events else None,
    }


@require_POST
def sweep(request: HttpRequest) -> HttpResponse:
    access = access_for(request)
    access.require(Ability.FORGET)
    form = SweepForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Nothing was swept: the scope was missing or malformed.")
        return see_other(reverse("dashboard:health"))
    scope = form.cleaned_data["scope"]
    entry = curation.sweep_expired(admin_store(), access, scope)
    swept = entry.counts["records"]
    messages.success(request, f"Swept {swept} expired record{'s' if swept != 1 else ''} (audit entry #{entry.pk}).")
    return see_other(reverse("dashboard:health") + "?" + urlencode({"scope": format_scope(scope)}))
