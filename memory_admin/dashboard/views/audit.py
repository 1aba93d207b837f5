"""``/audit/`` — who did what, when, to which ids or scope, why, with what counts;
``/audit/<n>/`` — one entry (an erasure's or deletion's receipt); ``/audit/export.csv``
and ``/audit/export.jsonl`` — every entry the log's filters select (the same query
string), streamed, itself noted in the log. Curators and up, confined to their grants.
Entries never hold memory content."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import HttpResponse, StreamingHttpResponse
from django.views.decorators.http import require_GET

from memory_admin.dashboard.audit_log import (
    EXPORT_COLUMNS,
    entries_for,
    export_object,
    export_rows,
    export_started,
    visible_entries,
    visible_entry,
)
from memory_admin.dashboard.errors import ErrorPage, render_error
from memory_admin.dashboard.formats import csv_table, json_lines
from memory_admin.dashboard.forms import AuditLogForm
from memory_admin.dashboard.models import AuditEntry
from memory_admin.dashboard.permissions import Ability, Access, AmbiguousScope, NotVisible, access_for
from memory_admin.dashboard.views.common import (
    RECEIPT_COOKIE,
    HtmxHttpRequest,
    form_problems,
    kept_once,
    query_page,
    render_region,
    spend_once,
)
from memory_admin.dashboard.views.export import counted, download, export_filename, first_read
from memory_admin.scope import Scope, format_scope

LOG = "dashboard/audit.html"
ENTRY = "dashboard/audit_entry.html"
PAGE = 50
EXPORTS: dict[str, tuple[str, Callable[[Iterable[AuditEntry]], Iterator[str]]]] = {
    "csv": (
        "text/csv; charset=utf-8",
        lambda entries: csv_table([name for name, _ in EXPORT_COLUMNS], export_rows(entries)),
    ),
    "jsonl": (
        "application/x-ndjson; charset=utf-8",
        lambda entries: json_lines(json.dumps(export_object(e), ensure_ascii=False) for e in entries),
    ),
}


def _require_audit(access: Access) -> None:
    """The audit log is for curators and up; a refusal says so (not what curating is)."""
    if not access.can(Ability.CURATE):
        raise PermissionDenied("Your role does not allow this: the audit log is open to curators and higher roles.")


@require_GET
def audit_log(request: HtmxHttpRequest) -> HttpResponse:
    _require_audit(access_for(request))
    return query_page(request, AuditLogForm(request.GET), LOG, "log", _log_context)


def _log_context(access: Access, form: AuditLogForm) -> dict[str, Any]:
    if form.cleaned_data["scope"] is not None:
        # outside every grant: NotVisible, a 404 as the export's; one that spans several
        # grants is fine here, the log shows what each one covers
        with contextlib.suppress(AmbiguousScope):
            access.resolve(form.cleaned_data["scope"])
    entries, older = entries_for(
        access,
        entries=form.narrow(AuditEntry.objects.all()),
        keep=lambda entry: form.matches(entry.scope),
        before=form.cleaned_data["before"],
        limit=PAGE,
    )
    return {
        "access": access,
        "entries": entries,
        "older": older,
        "filtering": form.filtering,
        "export_query": _export_query(form),
    }


def _export_query(form: AuditLogForm) -> str:
    """The log's filters as an export's query string (every page: no cursor)."""
    params = form.params.copy()
    params.pop("before", None)
    return params.urlencode()


@require_GET
def audit_export_csv(request: HtmxHttpRequest) -> HttpResponse | StreamingHttpResponse:
    return audit_export(request, "csv")


@require_GET
def audit_export_jsonl(request: HtmxHttpRequest) -> HttpResponse | StreamingHttpResponse:
    return audit_export(request, "jsonl")


def audit_export(request: HtmxHttpRequest, fmt: str) -> HttpResponse | StreamingHttpResponse:
    """Every entry the log's filters select, within the viewer's grants, from the
    newest; the download is itself an audit entry (coalesced per minute, as memory
    exports are)."""
    access = access_for(request)
    _require_audit(access)
    form = AuditLogForm(request.GET)
    if not form.is_valid():
        problems = form_problems(form)
        return render_error(
            request, ErrorPage(400, "That export is not valid", problems, "Fix the filters and export again.")
        )
    scope = _export_scope(access, form.cleaned_data["scope"])
    if isinstance(scope, ErrorPage):
        return render_error(request, scope)
    entries = visible_entries(access, form.narrow(AuditEntry.objects.all()), lambda entry: form.matches(entry.scope))
    stream = first_read(entries)  # read before this export's own entry is written: it is not in the file
    entry = export_started(access, scope, fmt, action=AuditEntry.Action.EXPORT_AUDIT)
    content_type, render = EXPORTS[fmt]
    return download(render(counted(entry, stream, "entries")), content_type, export_filename("audit", scope, fmt))


def _export_scope(access: Access, requested: Scope | None) -> Scope | ErrorPage | None:
    """The scope the export's own entry names: the filter's (confined to the grants),
    the one grant, or — for an admin without a filter — none (every tenant)."""
    if requested is None:
        if access.all_tenants:
            return None
        if len(access.grants) == 1:
            return access.grants[0]
        options = ", ".join(format_scope(grant) for grant in access.grants)
        return ErrorPage(400, "Pick a scope to export", f"Filter the log by one of your grants first: {options}.")
    try:
        return access.resolve(requested).scope  # NotVisible (outside every grant) is a 404
    except AmbiguousScope as exc:
        options = ", ".join(format_scope(option) for option in exc.options)
        return ErrorPage(400, "That scope spans several of your grants", f"Export one of: {options}.")


@require_GET
def audit_entry(request: HtmxHttpRequest, entry_id: int) -> HttpResponse:
    access = access_for(request)
    _require_audit(access)
    entry = visible_entry(access, entry_id)
    if entry is None:
        raise NotVisible(f"Audit entry {entry_id}")
    kept = kept_once(request, RECEIPT_COOKIE)  # right after an erasure: the reason as its officer typed it
    typed = kept["reason"] if kept is not None and kept.get("entry") == str(entry.pk) else None
    context = {"access": access, "entry": entry, "typed_reason": typed if typed != entry.reason else None}
    return spend_once(request, render_region(request, ENTRY, "entry", context), RECEIPT_COOKIE)
