"""What agents learned, for people to review: ``/learnings/`` (the inbox, bulk decisions
on a page of it, the gardening proposals), ``/learnings/<id>/`` (one learning: evidence,
gates, effect, conflict, and the decisions), its edit-then-approve and roll-back pages,
``/proposals/<n>/settle/run/``, and ``/learned/`` (promotions and demotions over time, and
their export).

Every decision is a POST pinned to what the page showed; a decision on a learning that
moved since is refused, and the page says what moved. Without JavaScript a decision
redirects back to the page that asked (a refused one keeps what was typed); with htmx
the region that asked is swapped in place.

Why one module: the review pages share their refusal handling (a refused decision kept
for the page it redirects to, or the region swapped in place) and the pinning of every
decision to what the page showed; each view stays parse-then-render.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from django.contrib import messages
from django.http import HttpResponse, QueryDict, StreamingHttpResponse
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.views.decorators.http import require_GET, require_POST

from memory_admin.dashboard import actions
from memory_admin.dashboard.audit_log import describe, export_started
from memory_admin.dashboard.errors import ErrorPage, render_error
from memory_admin.dashboard.formats import LEARNED_FORMATS
from memory_admin.dashboard.forms import (
    BulkForm,
    DecisionForm,
    EditForm,
    InboxForm,
    LearnedForm,
    ProposalForm,
    RollbackForm,
    local_path,
    pin_text,
    refuse_quoting,
)
from memory_admin.dashboard.models import AuditEntry
from memory_admin.dashboard.permissions import Access, NotVisible, access_for
from memory_admin.dashboard.scope_resolver import PickScope, resolve_scope, scope_context
from memory_admin.dashboard.views.common import (
    RETRY_COOKIE,
    HtmxHttpRequest,
    audit_link,
    form_problems,
    page_size,
    query_page,
    render_region,
    retry_data,
    retry_later,
    review_store,
    see_other,
    spend_once,
)
from memory_admin.dashboard.views.export import counted, download, export_filename, export_scope, first_read
from memory_admin.errors import MemoryConflictError, MemoryValidationError
from memory_admin.promotion import Pin
from memory_admin.records import MemoryRecord, utc_now
from memory_admin.reports.learnings import (
    CandidateReview,
    Contexts,
    Moved,
    learned_rows,
    learning_timeline,
    pending_proposals,
    review_candidate,
    review_inbox,
    what_moved,
)
from memory_admin.scope import format_scope
from memory_admin.store import FullMemoryStore

INBOX = "dashboard/learnings.html"
LEARNING = "dashboard/learning.html"
EDIT = "dashboard/learning_edit.html"
ROLLBACK = "dashboard/learning_rollback.html"
LEARNED = "dashboard/learned.html"
PROPOSALS_SHOWN = 20
WEEK = timedelta(days=7)


# --- the inbox ---------------------------------------------------------------------------------


@require_GET
def inbox(request: HtmxHttpRequest) -> HttpResponse:
    refused = retry_data(request, "inbox")  # a refused bulk decision, redirected here
    if refused is not None:
        refused.setlist("record", _kept(refused, "record").split())  # kept joined: see _inbox_refused
    form = InboxForm(request.GET)
    page = query_page(request, form, INBOX, "inbox", lambda access, form: inbox_context(access, form, refused))
    return spend_once(request, page, RETRY_COOKIE)


def inbox_context(access: Access, form: InboxForm, refused: QueryDict | None = None) -> dict[str, Any]:
    context: dict[str, Any] = {"access": access, "can_review": access.can_curate}
    if not access.sees_anything:
        return context
    store, data = review_store(), form.cleaned_data
    resolution = resolve_scope(store, access, data["scope"])
    context.update(scope_context(resolution))
    if isinstance(resolution, PickScope):
        return context
    seen_at = utc_now()  # before the reads: a replay at this moment shows what the page shows
    found = review_inbox(
        store,
        resolution.scope,
        visible=access.allows,
        states=[data["state"]] if data["state"] else (),
        agent=data["agent"],
        primitives=[data["primitive"]] if data["primitive"] else (),
        tiers=[data["tier"]] if data["tier"] else (),
        cursor=data["after"] or None,
        limit=page_size(),
    )
    bulk = BulkForm(refused) if refused is not None else None
    moved = None
    if bulk is not None and bulk.is_valid() and refused is not None and refused.get("moved"):
        which = _kept(refused, "moved")
        moved = _moved(store, access, which, bulk.pins.get(which), bulk.cleaned_data["seen_at"])
    return {
        **context,
        "inbox": found,
        "rows": [(item, pin_text(item.pin)) for item in found.items],
        "proposals": pending_proposals(store, resolution.scope, visible=access.allows, limit=PROPOSALS_SHOWN),
        "seen_at": seen_at,
        "bulk": bulk,
        "refusal": refused.get("message") if refused is not None else None,
        "moved": moved,
        "filtering": any(data[name] for name in ("state", "agent", "primitive", "tier")),
    }


@require_POST
def decide_many(request: HtmxHttpRequest) -> HttpResponse:
    """Approve or reject the ticked learnings of an inbox page, all or nothing."""
    access = access_for(request)
    actions.may_review(access)
    store = review_store()
    form = BulkForm(request.POST)
    back = _safe_next(request, reverse("dashboard:learnings"))
    if not form.is_valid():
        return _inbox_refused(request, back, form, form_problems(form), status=400)
    records = [access.visible_record(store.get(record_id), record_id) for record_id in form.pins]
    contexts = Contexts(store)
    compositions = {}
    approve = form.cleaned_data["decision"] == "approve"
    if approve:
        for record in records:
            context = contexts.of(record, store.promotion_history(record.id)[-1:])
            if context is None:
                return _inbox_refused(request, back, form, _no_composition(record), status=400)
            compositions[record.id] = context.composition
    refuse_quoting(form, [record.content for record in records])
    if not form.is_valid():
        return _inbox_refused(request, back, form, form_problems(form), status=400)
    try:
        entries = actions.decide_learnings(
            store,
            access,
            records,
            approve=approve,
            reason=form.cleaned_data["reason"],
            pins=form.pins,
            compositions=compositions,
        )
    except MemoryConflictError as exc:
        moved = str(exc.extras.get("record_id") or "")
        return _inbox_refused(request, back, form, exc.message, status=409, moved=moved)
    except MemoryValidationError as exc:
        return _inbox_refused(request, back, form, exc.message, status=400)
    what = "Approved" if approve else "Rejected"
    first = entries[0].pk
    notice = format_html(
        "{} {} learning{} ({} to #{}).",
        what,
        len(entries),
        "s" if len(entries) != 1 else "",
        audit_link(first),
        entries[-1].pk,
    )
    if not request.htmx:
        messages.success(request, notice)
        return see_other(back)
    return _inbox_region(request, back, notice=notice)


def _inbox_refused(
    request: HtmxHttpRequest, back: str, form: BulkForm, message: str, *, status: int, moved: str = ""
) -> HttpResponse:
    kept = request.POST.copy()
    kept["message"] = message
    kept["moved"] = moved
    if not request.htmx:
        fields = ("decision", "reason", "seen_at", "record", "message", "moved", *(f"pin-{r}" for r in form.records))
        kept["record"] = " ".join(request.POST.getlist("record"))  # one value a field: joined
        return retry_later(see_other(back), "inbox", kept, fields)
    return _inbox_region(request, back, refused=kept, status=status)


def _inbox_region(
    request: HtmxHttpRequest,
    back: str,
    *,
    notice: SafeString | None = None,
    refused: QueryDict | None = None,
    status: int = 200,
) -> HttpResponse:
    """The inbox region for the inbox page ``back`` names (after a bulk decision with htmx)."""
    form = InboxForm(QueryDict(urlsplit(back).query))
    access = access_for(request)
    if not form.is_valid():
        form = InboxForm(QueryDict())
        form.is_valid()
    context = {"form": form, **inbox_context(access, form, refused), "notice": notice}
    return render_region(request, INBOX, "inbox", context, status=status)


def _kept(data: QueryDict, name: str) -> str:
    return str(data.get(name) or "")


# --- one learning -------------------------------------------------------------------------------


def _review(request: HtmxHttpRequest, record_id: str) -> tuple[Access, FullMemoryStore, CandidateReview]:
    access = access_for(request)
    store = review_store()
    found = review_candidate(store, record_id, visible=access.allows)
    if found is None:
        raise NotVisible(f"Learning {record_id}")
    return access, store, found


@require_GET
def learning(request: HtmxHttpRequest, record_id: str) -> HttpResponse:
    access, store, review = _review(request, record_id)
    kept = retry_data(request, f"learning:{record_id}")  # a refused decision, redirected here
    if kept is None:
        return render_region(request, LEARNING, "learning", learning_context(store, access, review))
    form = _kept_decision(kept, review)
    moved = _moved(store, access, record_id, form.cleaned_data.get("pin"), form.cleaned_data.get("seen_at"))
    status = 409 if kept.get("moved") else 400
    context = learning_context(store, access, review, form=form, moved=moved if status == 409 else None)
    return spend_once(request, render_region(request, LEARNING, "learning", context, status=status), RETRY_COOKIE)


def _kept_decision(kept: QueryDict, review: CandidateReview) -> DecisionForm:
    """A refused decision's form as it was posted, with why it was refused."""
    form = DecisionForm(kept)
    if form.is_valid() and form.cleaned_data["decision"] != "approve":
        refuse_quoting(form, [review.record.content])
    if kept.get("message"):
        form.add_error(None, _kept(kept, "message"))
    return form


def learning_context(
    store: FullMemoryStore,
    access: Access,
    review: CandidateReview,
    *,
    form: DecisionForm | None = None,
    moved: Moved | None = None,
    notice: SafeString | None = None,
) -> dict[str, Any]:
    conflict = review.conflict
    other = conflict.other if conflict is not None and conflict.pickable else None
    return {
        "access": access,
        "can_review": access.can_curate,
        "review": review,
        "record": review.record,
        "scope_text": format_scope(review.record.scope),
        "pin": pin_text(review.pin),
        "other_pin": pin_text(Pin(revision=other.revision, state=other.state)) if other is not None else "",
        "form": form or DecisionForm(),
        "moved": moved,
        "notice": notice,
    }


@require_POST
def decide(request: HtmxHttpRequest, record_id: str) -> HttpResponse:
    """Approve, reject, roll back, or keep one side of a conflict."""
    access = access_for(request)
    actions.may_review(access)  # the role first: a refusal says nothing about the learning
    access, store, review = _review(request, record_id)
    form = DecisionForm(request.POST)
    if form.is_valid() and form.cleaned_data["decision"] != "approve":
        refuse_quoting(form, [review.record.content])
    if not form.is_valid():
        return _refused(request, store, access, review, form, status=400)
    data = form.cleaned_data
    decision, reason, pin = data["decision"], data["reason"], data["pin"]
    record = review.record
    try:
        if decision == "rollback":
            done, entry = actions.roll_back_learning(store, access, record, reason=reason, pin=pin)
            notice = format_html("Rolled back: it left the composition and stays a record ({}).", audit_link(entry.pk))
        elif decision == "reject":
            done, entry = actions.reject_learning(store, access, record, reason=reason, pin=pin)
            notice = format_html("Rejected ({}).", audit_link(entry.pk))
        elif review.context is None:
            form.add_error(None, _no_composition(record))
            return _refused(request, store, access, review, form, status=400)
        elif decision == "approve":
            done, entry = actions.approve_learning(
                store, access, record, review.context.composition, reason=reason, pin=pin
            )
            notice = format_html("Approved: it is part of the composition now ({}).", audit_link(entry.pk))
        else:
            other = access.visible_record(store.get(data["other"]), data["other"])
            winner, loser = (record, other) if decision == "keep_this" else (other, record)
            pins = {record.id: pin, other.id: data["other_pin"]}
            done, _left, entry = actions.pick_survivor(
                store, access, winner, loser, review.context.composition, reason=reason, pins=pins
            )
            notice = format_html("Kept {}; the other learning left ({}).", winner.id, audit_link(entry.pk))
    except MemoryConflictError as exc:
        form.add_error(None, exc.message)
        return _refused(request, store, access, review, form, status=409)
    except MemoryValidationError as exc:
        form.add_error(None, exc.message)
        return _refused(request, store, access, review, form, status=400)
    back = form.destination(request.get_host(), reverse("dashboard:learning", args=[done.record_id]))
    return _decided(request, store, access, done.record_id, notice, back)


def _refused(
    request: HtmxHttpRequest,
    store: FullMemoryStore,
    access: Access,
    review: CandidateReview,
    form: DecisionForm,
    *,
    status: int,
) -> HttpResponse:
    """A decision that was not applied: the page again, what was typed kept, the problem
    named — and when the learning or its composition moved, what moved."""
    record_id = review.record.id
    decision = form.data.get("decision")
    if not request.htmx:
        kept = request.POST.copy()
        kept["message"] = " ".join(str(e) for e in form.non_field_errors())
        kept["moved"] = "1" if status == 409 else ""
        key = "rollback" if decision == "rollback" else "learning"
        fields = ("decision", "reason", "pin", "seen_at", "other", "other_pin", "next", "message", "moved")
        page = "dashboard:learning_rollback" if decision == "rollback" else "dashboard:learning"
        return retry_later(see_other(reverse(page, args=[record_id])), f"{key}:{record_id}", kept, fields)
    moved = None
    if status == 409:
        moved = _moved(store, access, record_id, form.cleaned_data.get("pin"), form.cleaned_data.get("seen_at"))
    fresh = review_candidate(store, record_id, visible=access.allows) or review
    context = learning_context(store, access, fresh, form=form, moved=moved)
    return render_region(request, LEARNING, "learning", context, status=status)


def _decided(
    request: HtmxHttpRequest, store: FullMemoryStore, access: Access, record_id: str, notice: SafeString, back: str
) -> HttpResponse:
    if not request.htmx:
        messages.success(request, notice)
        return see_other(back)
    review = review_candidate(store, record_id, visible=access.allows)
    if review is None:
        raise NotVisible(f"Learning {record_id}")
    response = render_region(request, LEARNING, "learning", learning_context(store, access, review, notice=notice))
    response["HX-Push-Url"] = reverse("dashboard:learning", args=[record_id])
    return response


def _moved(
    store: FullMemoryStore, access: Access, record_id: str, pin: Pin | None, seen_at: datetime | None
) -> Moved | None:
    if pin is None:
        return None
    return what_moved(store, record_id, pin, seen_at, visible=access.allows)


def _no_composition(record: MemoryRecord) -> str:
    return (
        f"No scope that sees record {record.id} has registered a composition, so there is nothing to approve it "
        "into; the agent's host registers one when it composes (compose, or memory-admin compose)."
    )


def _safe_next(request: HtmxHttpRequest, default: str) -> str:
    return local_path(request.POST.get("next", "")[:2000], request.get_host()) or default


# --- edit, then approve; roll back -------------------------------------------------------------


def _edit_form(store: FullMemoryStore, review: CandidateReview, **kwargs: Any) -> EditForm:
    record = review.record
    structured = record.target is not None and record.target.primitive in ("example", "awareness")
    payload = (record.payload or {}) if structured else None
    return EditForm(current=record.content, max_chars=store.capabilities().max_content_chars, payload=payload, **kwargs)


@require_GET
def edit(request: HtmxHttpRequest, record_id: str) -> HttpResponse:
    access = access_for(request)
    actions.may_review(access)
    access, store, review = _review(request, record_id)
    kept = retry_data(request, f"edit:{record_id}")
    if kept is not None:
        form = _edit_form(store, review, data=kept)
        refuse_quoting(form, [review.record.content])
        if kept.get("message"):
            form.add_error(None, _kept(kept, "message"))
        moved = _moved(store, access, record_id, form.cleaned_data.get("pin"), form.cleaned_data.get("seen_at"))
        status = 409 if kept.get("moved") else 400
        page = _edit_page(request, access, review, form, moved=moved if status == 409 else None, status=status)
        return spend_once(request, page, RETRY_COOKIE)
    initial = {"content": review.record.content, "payload": json.dumps(review.record.payload or {}, indent=2)}
    form = _edit_form(store, review, initial=initial)
    return _edit_page(request, access, review, form)


def _edit_page(
    request: HtmxHttpRequest,
    access: Access,
    review: CandidateReview,
    form: EditForm,
    *,
    moved: Moved | None = None,
    status: int = 200,
) -> HttpResponse:
    context = {
        "access": access,
        "review": review,
        "record": review.record,
        "scope_text": format_scope(review.record.scope),
        "pin": pin_text(review.pin),
        "form": form,
        "moved": moved,
    }
    return render_region(request, EDIT, "edit", context, status=status)


@require_POST
def edit_run(request: HtmxHttpRequest, record_id: str) -> HttpResponse:
    access = access_for(request)
    actions.may_review(access)
    access, store, review = _review(request, record_id)
    form = _edit_form(store, review, data=request.POST)
    refuse_quoting(form, [review.record.content])
    if form.is_valid() and (not review.can_edit or review.context is None):
        why = f"It is {review.state.replace('_', ' ')}, and cannot be approved as it is."
        form.add_error(None, _no_composition(review.record) if review.context is None else why)
    status = 400
    if form.is_valid():
        assert review.context is not None
        data = form.cleaned_data
        try:
            done, entry = actions.edit_and_approve_learning(
                store,
                access,
                review.record,
                data["content"],
                review.context.composition,
                reason=data["reason"],
                pin=data["pin"],
                payload=data.get("payload"),
            )
        except MemoryConflictError as exc:
            form.add_error(None, exc.message)
            status = 409
        except MemoryValidationError as exc:
            form.add_error(None, exc.message)
        else:
            notice = format_html("Edited and approved: this version supersedes the agent's ({}).", audit_link(entry.pk))
            back = reverse("dashboard:learning", args=[done.record_id])
            return _decided(request, store, access, done.record_id, notice, back)
    if not request.htmx:
        kept = request.POST.copy()
        kept["message"] = " ".join(str(e) for e in form.non_field_errors())
        kept["moved"] = "1" if status == 409 else ""
        fields = ("content", "payload", "reason", "pin", "seen_at", "message", "moved")
        page = see_other(reverse("dashboard:learning_edit", args=[record_id]))
        return retry_later(page, f"edit:{record_id}", kept, fields)
    moved = None
    if status == 409:
        moved = _moved(store, access, record_id, form.cleaned_data.get("pin"), form.cleaned_data.get("seen_at"))
    return _edit_page(request, access, review, form, moved=moved, status=status)


@require_GET
def rollback(request: HtmxHttpRequest, record_id: str) -> HttpResponse:
    """The roll-back confirmation (from a composition's prompt): it posts the decision."""
    access = access_for(request)
    actions.may_review(access)
    access, store, review = _review(request, record_id)
    kept = retry_data(request, f"rollback:{record_id}")
    form = _kept_decision(kept, review) if kept is not None else None
    moved, status = None, 200
    if form is not None and kept is not None:
        status = 409 if kept.get("moved") else 400
        if status == 409:
            moved = _moved(store, access, record_id, form.cleaned_data.get("pin"), form.cleaned_data.get("seen_at"))
    asked_next = _kept(kept, "next") if kept is not None else request.GET.get("next", "")[:2000]
    context = {
        "access": access,
        "review": review,
        "record": review.record,
        "scope_text": format_scope(review.record.scope),
        "pin": pin_text(review.pin),
        "form": form or RollbackForm(),
        "moved": moved,
        "next": local_path(asked_next, request.get_host()) or "",
    }
    return spend_once(request, render_region(request, ROLLBACK, "rollback", context, status=status), RETRY_COOKIE)


# --- gardening proposals ------------------------------------------------------------------------


@require_POST
def settle_proposal(request: HtmxHttpRequest, proposal_id: int) -> HttpResponse:
    access = access_for(request)
    actions.may_review(access)
    store = review_store()
    proposal = store.proposal(proposal_id)
    if proposal is None or not access.allows(proposal.scope):
        raise NotVisible(f"Proposal {proposal_id}")
    form = ProposalForm(request.POST)
    back = _safe_next(request, reverse("dashboard:learnings"))
    record = store.get(proposal.record_id)
    if form.is_valid():
        refuse_quoting(form, [record.content] if record is not None else [])
    if not form.is_valid():
        messages.error(request, f"Proposal #{proposal_id} was left as it was: {form_problems(form)}")
        return see_other(back)
    accept = form.cleaned_data["decision"] == "accept"
    try:
        settled, entry = actions.settle_proposal(
            store, access, proposal, accept=accept, reason=form.cleaned_data["reason"]
        )
    except (MemoryConflictError, MemoryValidationError) as exc:
        messages.error(request, f"Proposal #{proposal_id} was left as it was: {exc.message}")
        return see_other(back)
    messages.success(request, format_html("Proposal #{} {} ({}).", proposal_id, settled.status, audit_link(entry.pk)))
    return see_other(back)


# --- what it learned ------------------------------------------------------------------------------


@require_GET
def learned(request: HtmxHttpRequest) -> HttpResponse:
    return query_page(request, LearnedForm(request.GET), LEARNED, "learned", learned_context)


def learned_context(access: Access, form: LearnedForm) -> dict[str, Any]:
    context: dict[str, Any] = {"access": access}
    if not access.sees_anything:
        return context
    store, data = review_store(), form.cleaned_data
    resolution = resolve_scope(store, access, data["scope"])
    context.update(scope_context(resolution))
    if isinstance(resolution, PickScope):
        return context
    timeline = learning_timeline(
        store,
        resolution.scope,
        visible=access.allows,
        agent=data["agent"],
        since=data["since"],
        until=data["until"],
        bucket=data["bucket"] or None,
        cursor=data["after"] or None,
        table_size=page_size(),
    )
    week = form.params.copy()
    for name in ("since", "until", "after"):
        week.pop(name, None)
    week["since"] = (utc_now() - WEEK).strftime("%Y-%m-%d %H:%M")
    exports = form.params.copy()
    exports.pop("after", None)
    return {
        **context,
        "timeline": timeline,
        "chart_data": timeline.chart_data(),
        "this_week": "?" + week.urlencode(),
        "export_query": exports.urlencode(),
    }


@require_GET
def learned_export_csv(request: HtmxHttpRequest) -> HttpResponse | StreamingHttpResponse:
    return _learned_export(request, "csv")


@require_GET
def learned_export_jsonl(request: HtmxHttpRequest) -> HttpResponse | StreamingHttpResponse:
    return _learned_export(request, "jsonl")


def _learned_export(request: HtmxHttpRequest, fmt: str) -> HttpResponse | StreamingHttpResponse:
    access = access_for(request)
    form = LearnedForm(request.GET)
    if not form.is_valid():
        return render_error(request, ErrorPage(400, "That export is not valid", form_problems(form)))
    store, data = review_store(), form.cleaned_data
    scope = export_scope(store, access, data["scope"])
    if isinstance(scope, ErrorPage):
        return render_error(request, scope)
    rows = learned_rows(
        store, scope, visible=access.allows, agent=data["agent"], since=data["since"], until=data["until"]
    )
    try:
        stream = first_read(rows)
    except MemoryValidationError as exc:
        return render_error(request, ErrorPage(400, "That export is not valid", describe(exc)))
    backend = store.capabilities().backend
    entry = export_started(access, scope, fmt, action=AuditEntry.Action.EXPORT_LEARNED, backend=backend)
    content_type, render = LEARNED_FORMATS[fmt]
    return download(render(counted(entry, stream, "rows")), content_type, export_filename("learned", scope, fmt))
