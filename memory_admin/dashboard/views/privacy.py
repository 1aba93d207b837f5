"""Privacy officers' true forgetting: delete one record, erase a scope.

Both are deliberate, full-page flows (no htmx shortcuts): a page that shows exactly what
will go and asks for the id or scope to be typed and a reason, a POST-only endpoint
that acts, and a receipt — the audit entry, which never holds the forgotten content.
Erasure is previewed first (a dry run) and stops exactly at the scope given: it is
never narrowed or widened to fit a grant.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_GET, require_POST

from memory_admin.dashboard import actions
from memory_admin.dashboard.forms import DeleteForm, EraseForm, ScopeForm, refuse_quoting
from memory_admin.dashboard.permissions import Ability, Access, NotVisible, access_for
from memory_admin.dashboard.views.common import (
    RECEIPT_COOKIE,
    RETRY_COOKIE,
    HtmxHttpRequest,
    admin_store,
    keep_once,
    retry_data,
    retry_later,
    see_other,
    spend_once,
)
from memory_admin.errors import MemoryCorruptionError
from memory_admin.records import MemoryRecord
from memory_admin.scope import Scope, format_scope
from memory_admin.store import ErasureReport, FullMemoryStore, MemoryStore

DELETE = "dashboard/record_delete.html"
ERASE_PREVIEW = "dashboard/erase_preview.html"
ERASE_CONFIRM = "dashboard/erase_confirm.html"


# --- delete one record --------------------------------------------------------------------


@dataclass(frozen=True)
class _Deletable:
    """A record about to be deleted: readable, or a corrupt row (``corrupt``) whose
    scope the error carries."""

    access: Access
    store: FullMemoryStore
    record_id: str
    scope: Scope
    record: MemoryRecord | None = None
    corrupt: MemoryCorruptionError | None = None


def _deletable(request: HtmxHttpRequest, record_id: str) -> _Deletable:
    """What the delete page and endpoint need; a corrupt row can be deleted too (it is
    the repair the corruption page suggests), its scope read from the error."""
    access = access_for(request)
    access.require(Ability.FORGET)
    store = admin_store()
    try:
        record = access.visible_record(store.get(record_id), record_id)
    except MemoryCorruptionError as exc:
        if exc.scope is None or not access.allows(exc.scope):
            raise NotVisible(f"Memory record {record_id}") from None
        return _Deletable(access, store, record_id, exc.scope, corrupt=exc)
    return _Deletable(access, store, record.id, record.scope, record=record)


@require_GET
def delete_form(request: HtmxHttpRequest, record_id: str) -> HttpResponse:
    target = _deletable(request, record_id)
    refused = retry_data(request, f"delete:{record_id}")  # a refused confirmation, redirected here
    if refused is not None:
        form = DeleteForm(refused, record_id=record_id)
        refuse_quoting(form, [target.record.content] if target.record is not None else [])
        return spend_once(request, _delete_page(request, target, form, status=400), RETRY_COOKIE)
    return _delete_page(request, target, DeleteForm(record_id=record_id))


@require_POST
def delete(request: HtmxHttpRequest, record_id: str) -> HttpResponse:
    target = _deletable(request, record_id)
    form = DeleteForm(request.POST, record_id=record_id)
    refuse_quoting(form, [target.record.content] if target.record is not None else [])
    if not form.is_valid():
        back = see_other(reverse("dashboard:delete", args=[record_id]))
        return retry_later(back, f"delete:{record_id}", request.POST, ("confirm_id", "reason"))
    entry = actions.delete_record(target.store, target.access, record_id, target.scope, form.cleaned_data["reason"])
    messages.success(request, f"Record {record_id} was deleted. This is the receipt.")
    return see_other(reverse("dashboard:audit_entry", args=[entry.pk]))


def _delete_page(request: HtmxHttpRequest, target: _Deletable, form: DeleteForm, *, status: int = 200) -> HttpResponse:
    context = {
        "access": target.access,
        "record_id": target.record_id,
        "scope": target.scope,
        "record": target.record,
        "corrupt": target.corrupt,
        "form": form,
        "scope_text": format_scope(target.scope),
        "chain": target.store.chain(target.record.id) if target.record is not None else [],
    }
    return render(request, DELETE, context, status=status)


# --- erase a scope ------------------------------------------------------------------------


def _scope_to_erase(request: HtmxHttpRequest) -> tuple[Access, ScopeForm, Scope | None]:
    """The privacy officer, and the scope the query string names (``None`` when it names
    none or a malformed one: the form says which)."""
    access = access_for(request)
    access.require(Ability.FORGET)
    form = ScopeForm(request.GET)
    return access, form, form.cleaned_data["scope"] if form.is_valid() else None


@require_GET
def erase_preview(request: HtmxHttpRequest) -> HttpResponse:
    access, form, scope = _scope_to_erase(request)
    if scope is None:
        return render(request, ERASE_PREVIEW, {"access": access, "form": form}, status=400 if form.errors else 200)
    return render(request, ERASE_PREVIEW, _erase_context(access, scope))


@require_GET
def erase_confirm(request: HtmxHttpRequest) -> HttpResponse:
    access, _form, scope = _scope_to_erase(request)
    if scope is None:
        return see_other(reverse("dashboard:erase"))
    refused = retry_data(request, "erase")  # a refused confirmation, redirected here
    if refused is not None and refused.get("scope") == format_scope(scope):
        erase = EraseForm(refused)
        context = _erase_context(access, scope)
        refuse_quoting(erase, [record.content for record in context["sample"]])
        return spend_once(request, render(request, ERASE_CONFIRM, {**context, "form": erase}, status=400), RETRY_COOKIE)
    erase = EraseForm(initial={"scope": format_scope(scope)})
    return render(request, ERASE_CONFIRM, {**_erase_context(access, scope), "form": erase})


@require_POST
def erase(request: HtmxHttpRequest) -> HttpResponse:
    access = access_for(request)
    access.require(Ability.FORGET)
    form = EraseForm(request.POST)
    valid = form.is_valid()
    scope: Scope | None = form.cleaned_data.get("scope")
    if scope is None:
        return render(request, ERASE_PREVIEW, {"access": access, "form": ScopeForm(), "missing": True}, status=400)
    refuse_quoting(form, [record.content for record in _erase_context(access, scope)["sample"]])
    if not valid or not form.is_valid():
        back = see_other(reverse("dashboard:erase_confirm") + "?" + urlencode({"scope": format_scope(scope)}))
        return retry_later(back, "erase", request.POST, ("scope", "confirm_scope", "reason"))
    entry, typed = actions.erase_scope(admin_store(), access, scope, form.cleaned_data["reason"])
    messages.success(request, "The scope was erased. This is the receipt (it names the scope by keyed hashes only).")
    receipt = reverse("dashboard:audit_entry", args=[entry.pk])
    # the officer reads their reason as they typed it, once, from their own browser
    return keep_once(see_other(receipt), RECEIPT_COOKIE, {"entry": str(entry.pk), "reason": typed}, path=receipt)


def _erase_context(access: Access, scope: Scope) -> dict[str, Any]:
    store = admin_store()
    report: ErasureReport = actions.preview_erasure(store, access, scope)
    return {
        "access": access,
        "scope": scope,
        "scope_text": format_scope(scope),
        "report": report,
        "sample": _readable(store, report.sample_ids),
        # records elsewhere that name the person (by a word), inside what this user may see,
        # each with the words it names
        "mentions": [
            (r, report.mentioned_words.get(r.id, []))
            for r in _readable(store, report.mentions)
            if access.allows(r.scope)
        ],
        "scopes": [format_scope(s) for s in report.scopes],
    }


def _readable(store: MemoryStore, record_ids: list[str]) -> list[MemoryRecord]:
    found = []
    for record_id in record_ids:
        try:
            record = store.get(record_id)
        except MemoryCorruptionError:
            continue  # listed by id in the health page; its content cannot be shown
        if record is not None:
            found.append(record)
    return found
