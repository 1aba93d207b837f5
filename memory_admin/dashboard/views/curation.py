"""Curators' record actions: invalidate with a reason, correct by superseding.

Each has a confirmation page (GET) whose form POSTs to a POST-only endpoint. With htmx
the form opens inside the record page and a successful action re-renders the record in
place, timeline included; without JavaScript the browser lands back on the record page.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.forms import Form
from django.http import HttpResponse
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import push_url, reswap, retarget

from memory_admin.dashboard import actions
from memory_admin.dashboard.forms import CorrectForm, InvalidateForm, refuse_quoting
from memory_admin.dashboard.permissions import Ability, Access, access_for
from memory_admin.dashboard.views.common import HtmxHttpRequest, admin_store, audit_link, render_region, see_other
from memory_admin.dashboard.views.records import record_context
from memory_admin.records import MAX_REASON_CHARS, MemoryRecord
from memory_admin.scope import format_scope
from memory_admin.store import AdminMemoryStore, FullMemoryStore, MemoryStore

INVALIDATE = "dashboard/record_invalidate.html"
CORRECT = "dashboard/record_correct.html"


def _curatable(request: HtmxHttpRequest, record_id: str) -> tuple[Access, FullMemoryStore, MemoryRecord]:
    access = access_for(request)
    access.require(Ability.CURATE)  # the role first: a refusal says nothing about the record
    store = admin_store()
    return access, store, access.visible_record(store.get(record_id), record_id)


@require_GET
def invalidate_form(request: HtmxHttpRequest, record_id: str) -> HttpResponse:
    access, _store, record = _curatable(request, record_id)
    form = InvalidateForm(initial={"reason": request.GET.get("reason", "")[:MAX_REASON_CHARS]})
    return _form_page(request, INVALIDATE, access, record, form)


@require_POST
def invalidate(request: HtmxHttpRequest, record_id: str) -> HttpResponse:
    access, store, record = _curatable(request, record_id)
    form = InvalidateForm(request.POST)
    refuse_quoting(form, [record.content])
    if form.is_valid() and record.invalid_at is not None:
        form.add_error(None, "This record is already invalid; there is nothing to invalidate.")
    if not form.is_valid():
        return _form_page(request, INVALIDATE, access, record, form, status=400)
    entry = actions.invalidate_record(store, access, record, form.cleaned_data["reason"])
    return _done(
        request,
        store,
        access,
        record.id,
        format_html("Invalidated. The reason is in the timeline and {}.", audit_link(entry.pk)),
    )


@require_GET
def correct_form(request: HtmxHttpRequest, record_id: str) -> HttpResponse:
    access, store, record = _curatable(request, record_id)
    form = _correct_form(store, record, initial={"content": record.content})
    return _form_page(request, CORRECT, access, record, form)


@require_POST
def correct(request: HtmxHttpRequest, record_id: str) -> HttpResponse:
    access, store, record = _curatable(request, record_id)
    form = _correct_form(store, record, data=request.POST)
    refuse_quoting(form, [record.content])
    if form.is_valid() and not record.is_valid:
        form.add_error(None, "This record is no longer current; correct its newest version instead.")
    if not form.is_valid():
        return _form_page(request, CORRECT, access, record, form, status=400)
    replacement, entry = actions.correct_record(
        store, access, record, form.cleaned_data["content"], form.cleaned_data["reason"]
    )
    return _done(
        request,
        store,
        access,
        replacement.id,
        format_html("Corrected: this version supersedes the old one ({}).", audit_link(entry.pk)),
    )


def _correct_form(store: MemoryStore, record: MemoryRecord, **kwargs: Any) -> CorrectForm:
    return CorrectForm(current=record.content, max_chars=store.capabilities().max_content_chars, **kwargs)


def _form_page(
    request: HtmxHttpRequest, template: str, access: Access, record: MemoryRecord, form: Form, *, status: int = 200
) -> HttpResponse:
    htmx = bool(request.htmx)
    context = {
        "access": access,
        "record": record,
        "scope_text": format_scope(record.scope),
        "form": form,
        "inline": htmx,
    }
    response = render_region(request, template, "form", context, status=status)
    if htmx and request.method == "POST":
        # a refused form goes back where it was, inside the record page
        response = reswap(retarget(response, "#action-form"), "innerHTML")
    return response


def _done(
    request: HtmxHttpRequest, store: AdminMemoryStore, access: Access, record_id: str, notice: SafeString
) -> HttpResponse:
    url = reverse("dashboard:record", args=[record_id])
    if not request.htmx:
        messages.success(request, notice)
        return see_other(url)
    record = access.visible_record(store.get(record_id), record_id)
    context = {**record_context(store, access, record), "notice": notice, "retitle": True}
    response = render_region(request, "dashboard/record.html", "record", context)
    return push_url(response, url)
