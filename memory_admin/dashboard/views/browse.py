"""``/`` — the memory browser, the operators' home."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from django.http import HttpResponse, QueryDict
from django.views.decorators.http import require_GET

from memory_admin.dashboard.forms import BrowseForm
from memory_admin.dashboard.permissions import Access
from memory_admin.dashboard.scope_resolver import PickScope, resolve_scope, scope_context
from memory_admin.dashboard.views.common import HtmxHttpRequest, admin_store, page_size, query_page
from memory_admin.records import MemoryHit, utc_now
from memory_admin.reports.listing import count_listing
from memory_admin.scope import TENANT_KEY, Scope, format_scope
from memory_admin.store import ScopeFacet

TEMPLATE = "dashboard/browse.html"
KEYWORD_ONLY = (
    "This memory store searches by words only: it has no embedder, so it cannot search by meaning. "
    "The results below match words. An operator can add one (MEMORY_EMBEDDER=default, then memory-admin embed)."
)
FACET_VALUES = 20


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


@require_GET
def browse(request: HtmxHttpRequest) -> HttpResponse:
    semantic = admin_store().capabilities().search != "keyword"
    return query_page(
        request, BrowseForm(request.GET), TEMPLATE, "browse", browse_context, always={"semantic": semantic}
    )


def browse_context(access: Access, form: BrowseForm) -> dict[str, Any]:
    """Everything the browser shows for the form's filters, confined to ``access``."""
    store = admin_store()
    filters = form.filters()
    if filters.mode not in (None, "keyword") and store.capabilities().search == "keyword":
        # said beside the "By" field; the listing below searches by words
        form.add_error("mode", KEYWORD_ONLY)
        filters = replace(filters, mode=None)
    context: dict[str, Any] = {"access": access, "filters": filters}
    resolution = resolve_scope(store, access, filters.scope)
    context.update(scope_context(resolution))
    if isinstance(resolution, PickScope):
        return context
    query = filters.list_query(resolution.scope, page_size())
    page = store.list_records(query)
    hits: list[MemoryHit] = [hit for hit in page.hits if access.allows(hit.record.scope)]
    facets = store.scope_facets(resolution.scope, values_per_key=FACET_VALUES)
    now = utc_now()
    return {
        **context,
        "hits": hits,
        "ranked": any(hit.score is not None for hit in hits),
        "counts": count_listing(store, query, [hit.record for hit in hits], access.allows, now),
        "state_at": filters.as_of or now,
        "next_cursor": page.next_cursor,
        "facets": [_facet(f, resolution.scope, form.params) for f in facets],
    }


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
