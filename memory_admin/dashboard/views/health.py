"""``/health/?scope=…`` — the gardening report for one scope (read-only), and the one
one-click action it offers: sweeping expired records (a POST, for privacy officers)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpResponse
from django.urls import reverse
from django.utils.html import format_html
from django.utils.http import urlencode
from django.views.decorators.http import require_GET, require_POST

from memory_admin.dashboard import actions
from memory_admin.dashboard.forms import ScopeForm, SweepForm
from memory_admin.dashboard.permissions import Ability, Access, access_for
from memory_admin.dashboard.scope_resolver import PickScope, resolve_scope, scope_context
from memory_admin.dashboard.views.common import HtmxHttpRequest, admin_store, audit_link, query_page, see_other
from memory_admin.records import utc_now
from memory_admin.reports.health import OVERVIEW_TENANTS, build_health, tenant_overview
from memory_admin.reports.learnings import pending_proposals
from memory_admin.scope import TENANT_KEY, format_scope

TEMPLATE = "dashboard/health.html"
PROPOSALS_SHOWN = 50


@require_GET
def health(request: HtmxHttpRequest) -> HttpResponse:
    return query_page(request, ScopeForm(request.GET), TEMPLATE, "health", health_context)


def health_context(access: Access, form: ScopeForm) -> dict[str, Any]:
    context: dict[str, Any] = {
        "access": access,
        "can_curate": access.can(Ability.CURATE),
        "can_forget": access.can(Ability.FORGET),
    }
    if not access.sees_anything:
        return context
    store = admin_store()
    resolution = resolve_scope(store, access, form.cleaned_data["scope"])
    context.update(scope_context(resolution))
    if isinstance(resolution, PickScope):
        if access.all_tenants and not resolution.ambiguous and resolution.choices:
            # an admin without a scope: every tenant's report in numbers
            tenants = [choice.scope[TENANT_KEY] for choice in resolution.choices]
            context["overview"] = tenant_overview(store, tenants, utc_now(), visible=access.allows)
            context["overview_cut"] = len(tenants) > OVERVIEW_TENANTS
        return context
    return {
        **context,
        "report": build_health(store, resolution.scope, utc_now(), visible=access.allows),
        "event_log": store.event_log_stats() if store.capabilities().events else None,
        "proposals": (
            pending_proposals(store, resolution.scope, visible=access.allows, limit=PROPOSALS_SHOWN)
            if store.capabilities().promotion
            else None
        ),
    }


@require_POST
def sweep(request: HtmxHttpRequest) -> HttpResponse:
    access = access_for(request)
    access.require(Ability.FORGET)
    form = SweepForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Nothing was swept: the scope was missing or malformed.")
        return see_other(reverse("dashboard:health"))
    scope = form.cleaned_data["scope"]
    entry = actions.sweep_expired(admin_store(), access, scope)
    swept = entry.counts["records"]
    plural = "s" if swept != 1 else ""
    messages.success(request, format_html("Swept {} expired record{} ({}).", swept, plural, audit_link(entry.pk)))
    return see_other(reverse("dashboard:health") + "?" + urlencode({"scope": format_scope(scope)}))
