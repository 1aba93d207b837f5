"""``/`` — the memory browser, the operators' home."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest, HttpResponse, QueryDict
from django.views.decorators.http import require_GET

from memory_admin.dashboard.forms import BrowseFilters, BrowseForm
from memory_admin.dashboard.permissions import Access, AmbiguousScope, ScopeResolution, access_for
from memory_admin.dashboard.views.common import admin_store, page_size, render_region
from memory_admin.records import MemoryHit
from memory_admin.scope import TENANT_KEY, Scope, format_scope
from memory_admin.store import BaseMemoryStore, ScopeFacet

TEMPLATE = "dashboard/browse.html"
FACET_VALUES = 20
TENANT_CHOICES = 200


@dataclass(frozen=True)
class FacetValue:
    value: str
    records: int
    href: str  # this page narrowed to the value (first page)
    selected: bool
    remove_href: str | None = None  # this page without the pair (never without the tenant)


@dataclass(frozen=True)
class Facet:
    key: str
    records: int
    values: list[FacetValue]
    more_values: bool


@dataclass(frozen=True)
class ScopeChoice:
    scope: Scope
    records: int | None = None

    @property
    def scope_text(self) -> str:
        return format_scope(self.scope)


@require_GET
def browse(request: HttpRequest) -> HttpResponse:
    access = access_for(request)
    form = BrowseForm(request.GET)
    if not form.is_valid():
        return render_region(request, TEMPLATE, "browse", {"form": form, "access": access}, status=400)
    context = browse_context(admin_store(), access, form.filters(), request.GET)
    return render_region(request, TEMPLATE, "browse", {"form": form, **context})


def browse_context(
    store: BaseMemoryStore, access: Access, filters: BrowseFilters, params: QueryDict | None = None
) -> dict[str, Any]:
    """Everything the browser shows for ``filters``, confined to ``access``."""
    context: dict[str, Any] = {"access": access, "filters": filters}
    if filters.scope is None and not access.sees_anything:
        return context
    resolution = resolve_scope(store, access, filters.scope)
    if isinstance(resolution, PickScope):
        return {**context, **resolution.context()}
    page = store.list_records(filters.list_query(resolution.scope, page_size()))
    hits: list[MemoryHit] = [hit for hit in page.hits if access.allows(hit.record.scope)]
    facets = store.scope_facets(resolution.scope, values_per_key=FACET_VALUES)
    return {
        **context,
        "scope": resolution.scope,
        "scope_text": format_scope(resolution.scope),
        "narrowed_by": format_scope(resolution.narrowed_by) if resolution.narrowed_by else None,
        "hits": hits,
        "next_cursor": page.next_cursor,
        "facets": [_facet(f, resolution.scope, params or QueryDict()) for f in facets],
    }


@dataclass(frozen=True)
class PickScope:
    """No single scope to show: the user picks one of ``choices``."""

    choices: list[ScopeChoice]
    ambiguous: bool = False

    def context(self) -> dict[str, Any]:
        return {"choices": self.choices, "ambiguous": self.ambiguous}


def resolve_scope(store: BaseMemoryStore, access: Access, requested: Scope | None) -> ScopeResolution | PickScope:
    """The scope a page shows: the one requested, narrowed to the grants; with none
    requested, the user's only starting scope — or the choices to offer."""
    if requested is None:
        choices = scope_choices(store, access)
        if len(choices) != 1:
            return PickScope(choices)
        requested = choices[0].scope
    try:
        return access.resolve(requested)
    except AmbiguousScope as exc:
        return PickScope([ScopeChoice(s) for s in exc.options], ambiguous=True)


def scope_choices(store: BaseMemoryStore, access: Access) -> list[ScopeChoice]:
    """Where a user without a scope filter can start: their grants, or (admins) every tenant."""
    if not access.all_tenants:
        return [ScopeChoice(grant) for grant in access.scope_choices()]
    tenants = next((f for f in store.scope_facets(values_per_key=TENANT_CHOICES) if f.key == "tenant"), None)
    if tenants is None:
        return []
    return [ScopeChoice({"tenant": value.value}, value.records) for value in tenants.values]


def _facet(facet: ScopeFacet, scope: Scope, params: QueryDict) -> Facet:
    # links are built here, not with {% querystring %} per value: a tenant's facet panel
    # holds dozens of them, and this is the browser's hottest template loop
    values = []
    for value in facet.values:
        selected = scope.get(facet.key) == value.value
        removable = selected and facet.key != TENANT_KEY
        values.append(
            FacetValue(
                value=value.value,
                records=value.records,
                href=_link(params, format_scope({**scope, facet.key: value.value})),
                selected=selected,
                remove_href=_link(params, format_scope({k: v for k, v in scope.items() if k != facet.key}))
                if removable
                else None,
            )
        )
    return Facet(facet.key, facet.records, values, facet.more_values)


def _link(params: QueryDict, scope_text: str) -> str:
    """The current query string with another scope, back on the first page."""
    changed = params.copy()
    changed.pop("after", None)
    changed["scope"] = scope_text
    return "?" + changed.urlencode()
