"""``/recall/`` — recall events over time; ``/recall/events/<id>/`` — one recall (with
``?replay=1``, also run again against today's store and diffed, not logged);
``/recall/preview/`` — run a recall without logging it.

The graphs are drawn by the vendored Chart.js from the same numbers the page shows as
tables, so the page reads the same without JavaScript.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.http import HttpResponse, QueryDict
from django.views.decorators.http import require_GET

from memory_admin.dashboard.errors import ErrorPage, render_error
from memory_admin.dashboard.forms import MAX_PREVIEW_BUDGET, PreviewForm, RecallEventForm, RecallForm
from memory_admin.dashboard.permissions import Access, NotVisible, access_for
from memory_admin.dashboard.scope_resolver import PickScope, resolve_scope, scope_context
from memory_admin.dashboard.views.common import HtmxHttpRequest, event_store, form_problems, query_page, render_region
from memory_admin.errors import MemoryValidationError
from memory_admin.events import AnyEvent, MemoryRecallEvent
from memory_admin.recall import DEFAULT_BUDGET_CHARS, DEFAULT_PROFILE_BUDGET_RATIO, assemble_recall
from memory_admin.records import utc_now
from memory_admin.reports.recall_entries import account_recall, redact_block
from memory_admin.reports.recall_stats import MAX_EVENTS, SMALL_SAMPLE, EventScan, read_recall_events, summarize
from memory_admin.reports.replay import replay_event
from memory_admin.scope import Scope, format_scope
from memory_admin.store import AdminMemoryStore, EventLogStore

OVERVIEW = "dashboard/recall.html"
EVENT = "dashboard/recall_event.html"
PREVIEW = "dashboard/recall_preview.html"
TABLE_SIZE = 25
PRESETS = (("24 hours", timedelta(hours=24)), ("7 days", timedelta(days=7)), ("30 days", timedelta(days=30)))


@require_GET
def recall_overview(request: HtmxHttpRequest) -> HttpResponse:
    return query_page(request, RecallForm(request.GET), OVERVIEW, "recall", recall_context)


def recall_context(access: Access, form: RecallForm) -> dict[str, Any]:
    context: dict[str, Any] = {"access": access}
    if not access.sees_anything:
        return context
    store, data, params = event_store(), form.cleaned_data, form.params
    scope: Scope | None = None  # an admin who asked for no scope reads every tenant's events
    if data["scope"] is not None or not access.all_tenants:
        resolution = resolve_scope(store, access, data["scope"])
        if isinstance(resolution, PickScope):
            return {**context, **scope_context(resolution)}
        scope = resolution.scope
    scan = _scan(store, scope, data)
    visible = [stored for stored in scan.events if access.allows(stored.event.scope)]
    series = summarize(
        [s.event for s in visible if isinstance(s.event, MemoryRecallEvent)],
        since=data["since"],
        until=data["until"],
        bucket=data["bucket"] or None,
    )
    if data["before"]:  # an older page of the table: read from there, the graphs stay as they are
        page = _scan(store, scope, data, limit=TABLE_SIZE + 1, before=data["before"]).events
        visible = [stored for stored in page if access.allows(stored.event.scope)]
    table, older = visible[:TABLE_SIZE], (visible[TABLE_SIZE - 1].id if len(visible) > TABLE_SIZE else None)
    now = utc_now()
    return {
        **context,
        "scope": scope,
        "scope_text": format_scope(scope) if scope else "",
        "series": series,
        "chart_data": series.chart_data(),
        "scanned": len(scan.events),
        "complete": scan.complete,
        "table": table,
        "older": older,
        "presets": [(name, _with(params, since=(now - span).strftime("%Y-%m-%d %H:%M"))) for name, span in PRESETS],
        "all_time": _with(params, since=None),
        "small_sample": SMALL_SAMPLE,
    }


def _scan(
    store: EventLogStore,
    scope: Scope | None,
    data: dict[str, Any],
    *,
    limit: int = MAX_EVENTS,
    before: int | None = None,
) -> EventScan:
    """The recall events the form's filters select."""
    return read_recall_events(
        store, scope=scope, agent=data["agent"], since=data["since"], until=data["until"], limit=limit, before=before
    )


def _with(params: QueryDict, **changes: str | None) -> str:
    changed = params.copy()
    changed.pop("before", None)
    changed.pop("until", None)
    for name, value in changes.items():
        changed.pop(name, None)
        if value is not None:
            changed[name] = value
    return "?" + changed.urlencode()


@require_GET
def recall_event(request: HtmxHttpRequest, event_id: int) -> HttpResponse:
    access = access_for(request)
    store = event_store()
    stored = store.get_event(event_id)
    if stored is None or not isinstance(stored.event, MemoryRecallEvent) or not access.allows(stored.event.scope):
        raise NotVisible(f"Recall event {event_id}")
    form = RecallEventForm(request.GET)
    if not form.is_valid():
        problems = form_problems(form)
        return render_error(request, ErrorPage(400, "That request is not valid", problems))
    event = stored.event
    replaying = bool(form.cleaned_data["replay"])
    context = {
        "access": access,
        "stored": stored,
        "event": event,
        "scope_text": format_scope(event.scope),
        "account": account_recall(store, access.allows, event),
        "rerun": {
            "scope": format_scope(event.scope),
            "agent": event.agent or "",
            "message": event.query_preview or "",
            # the preview takes budgets in its own range; outside it, the preview's default
            **({"budget": event.budget_chars} if event.budget_chars <= MAX_PREVIEW_BUDGET else {}),
        },
        # read-only and not logged: the replay's event goes to a sink of its own
        "replay": replay_event(store, access.allows, event) if replaying else None,
    }
    region = "replay" if replaying and request.htmx else "event"
    return render_region(request, EVENT, region, context)


@require_GET
def recall_preview(request: HtmxHttpRequest) -> HttpResponse:
    return query_page(request, PreviewForm(request.GET), PREVIEW, "preview", preview_context)


def preview_context(access: Access, form: PreviewForm) -> dict[str, Any]:
    """The preview's block and report, or the scopes to pick from; a recall option the
    library refuses becomes a form error."""
    if not access.sees_anything:
        return {"access": access}
    return {"access": access, **_preview(event_store(), access, form)}


def _preview(store: AdminMemoryStore, access: Access, form: PreviewForm) -> dict[str, Any]:
    data = form.cleaned_data
    resolution = resolve_scope(store, access, data["scope"], take_only_choice=False)
    if isinstance(resolution, PickScope):
        return scope_context(resolution)
    scope = resolution.scope
    caught: list[AnyEvent] = []
    try:
        result = assemble_recall(
            store,
            scope,
            data["message"] or None,
            agent=data["agent"],
            budget_chars=data["budget"] or DEFAULT_BUDGET_CHARS,
            profile_budget_ratio=DEFAULT_PROFILE_BUDGET_RATIO if data["profile"] is None else data["profile"] / 100,
            sink=caught.append,  # the preview's event goes here, never to the log or the graphs
            preview_run=True,
        )
    except MemoryValidationError as exc:
        form.add_error(None, exc.message)
        return {}
    block, hidden = redact_block(result.block, result.records, access.allows)
    return {
        **scope_context(resolution),
        "result": result,
        "report": result.report,
        "recall_block": block,  # not "block": templates reserve that name
        "hidden": hidden,
        "account": account_recall(
            store, access.allows, result.event, hits=result.hits, message=data["message"] or None
        ),
    }
