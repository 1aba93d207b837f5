"""``/export.jsonl?…`` and ``/export.csv?…`` — the browser's current filtered view (the
same query parameters as ``/``), every page of it, confined to the user's grants and
streamed record by record from the store: a million-record export is never held in
memory. Each export is noted in the audit log (who, which scope, how many records);
the exports of one user and scope within a minute share one entry, counted.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from itertools import chain
from typing import TypeVar

from django.http import HttpResponse, StreamingHttpResponse
from django.views.decorators.http import require_GET

from memory_admin.dashboard.audit_log import describe, export_started, finish
from memory_admin.dashboard.errors import ErrorPage, render_error
from memory_admin.dashboard.formats import csv_chunks, jsonl_chunks
from memory_admin.dashboard.forms import BrowseForm
from memory_admin.dashboard.models import AuditEntry
from memory_admin.dashboard.permissions import Access, access_for
from memory_admin.dashboard.scope_resolver import PickScope, resolve_scope
from memory_admin.dashboard.views.common import HtmxHttpRequest, admin_store, form_problems
from memory_admin.records import MemoryRecord, utc_now
from memory_admin.scope import Scope, format_scope
from memory_admin.store import AdminMemoryStore

EXPORT_PAGE = 500
FORMATS: dict[str, tuple[str, Callable[[Iterable[MemoryRecord]], Iterator[str]]]] = {
    "jsonl": ("application/x-ndjson; charset=utf-8", jsonl_chunks),
    "csv": ("text/csv; charset=utf-8", csv_chunks),
}


@require_GET
def export_jsonl(request: HtmxHttpRequest) -> HttpResponse | StreamingHttpResponse:
    return export(request, "jsonl")


@require_GET
def export_csv(request: HtmxHttpRequest) -> HttpResponse | StreamingHttpResponse:
    return export(request, "csv")


def export(request: HtmxHttpRequest, fmt: str) -> HttpResponse | StreamingHttpResponse:
    access = access_for(request)
    form = BrowseForm(request.GET)
    if not form.is_valid():
        problems = form_problems(form)
        return render_error(
            request, ErrorPage(400, "That export is not valid", problems, "Fix the filters and export again.")
        )
    filters = form.filters()
    store = admin_store()
    scope = export_scope(store, access, filters.scope)
    if isinstance(scope, ErrorPage):
        return render_error(request, scope)
    # every page, from the first: a cursor in the URL only says where the browser was
    query = filters.list_query(scope, EXPORT_PAGE).model_copy(update={"cursor": None})
    records = (r for r in store.iter_records(query, page_size=EXPORT_PAGE) if access.allows(r.scope))
    stream = first_read(records)
    content_type, render = FORMATS[fmt]
    entry = export_started(access, scope, fmt, backend=store.capabilities().backend)
    return download(render(counted(entry, stream, "records")), content_type, export_filename("memory", scope, fmt))


def download(chunks: Iterator[str], content_type: str, filename: str) -> StreamingHttpResponse:
    """A streamed attachment that no cache keeps."""
    response = StreamingHttpResponse(chunks)
    response["Content-Type"] = content_type
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    response["Cache-Control"] = "no-store"
    return response


def export_scope(store: AdminMemoryStore, access: Access, requested: Scope | None) -> Scope | ErrorPage:
    """The one scope an export is of (confined to the grants), or the page that says why not."""
    resolution = resolve_scope(store, access, requested)
    if not isinstance(resolution, PickScope):
        return resolution.scope
    if not resolution.ambiguous:
        return ErrorPage(400, "Pick a scope to export", "An export is always of one scope: add ?scope=tenant=… .")
    options = ", ".join(choice.scope_text for choice in resolution.choices)
    return ErrorPage(400, "That scope spans several of your grants", f"Export one of: {options}.")


Item = TypeVar("Item")


def first_read(items: Iterator[Item]) -> Iterator[Item]:
    """``items`` with the first one read now: a store error surfaces here, as a page, not
    mid-download."""
    for first in items:
        return chain([first], items)
    return iter(())


def counted(entry: AuditEntry, items: Iterator[Item], noun: str) -> Iterator[Item]:
    """``items``, counted into ``entry`` (as ``noun``), which closes when the download ends."""
    count = 0
    outcome, error = AuditEntry.Outcome.DONE, ""
    try:
        for item in items:
            count += 1
            yield item
    except GeneratorExit:
        outcome, error = AuditEntry.Outcome.FAILED, f"the download stopped after {count} {noun}"
        raise
    except Exception as exc:
        outcome, error = AuditEntry.Outcome.FAILED, describe(exc)
        raise
    finally:
        entry.counts = {**entry.counts, noun: count}
        finish(entry, outcome, error=error)


def export_filename(kind: str, scope: Scope | None, fmt: str) -> str:
    """An export's file name: what it holds, its scope (file-name safe; ``None``: every
    tenant), when, its format."""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", format_scope(scope) if scope else "every-tenant").strip("-")[:80]
    return f"{kind}-{name}-{utc_now():%Y%m%d-%H%M}.{fmt}"
