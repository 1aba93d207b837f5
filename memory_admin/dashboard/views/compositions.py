"""``/compositions/`` — the compositions each scope registered; ``/compositions/prompt/`` —
one scope's composition as the agent receives it (now, or as of a moment; its own
version or another registered one), every line marked authored or learned, with the
overlay's report and the lint report; ``/compositions/diff/`` — two of them compared.

Nothing here registers a composition or emits an event: a person looking is not an
agent being composed.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.views.decorators.http import require_GET

from memory_admin.dashboard.forms import CompositionDiffForm, CompositionForm, CompositionsForm
from memory_admin.dashboard.permissions import Access, NotVisible
from memory_admin.dashboard.scope_resolver import PickScope, resolve_scope, scope_context
from memory_admin.dashboard.views.common import HtmxHttpRequest, query_page, review_store
from memory_admin.errors import MemoryNotFoundError
from memory_admin.promotion import RegisteredComposition
from memory_admin.reports.learnings import Moment, composition_diff, composition_view, registered
from memory_admin.scope import Scope, format_scope
from memory_admin.store import FullMemoryStore

LIST = "dashboard/compositions.html"
ONE = "dashboard/composition.html"
DIFF = "dashboard/composition_diff.html"


@require_GET
def compositions(request: HtmxHttpRequest) -> HttpResponse:
    return query_page(request, CompositionsForm(request.GET), LIST, "compositions", compositions_context)


def compositions_context(access: Access, form: CompositionsForm) -> dict[str, Any]:
    context: dict[str, Any] = {"access": access}
    if not access.sees_anything:
        return context
    store = review_store()
    resolution = resolve_scope(store, access, form.cleaned_data["scope"])
    context.update(scope_context(resolution))
    if isinstance(resolution, PickScope):
        return context
    return {**context, "groups": registered(store, resolution.scope, visible=access.allows)}


def _scope(store: FullMemoryStore, access: Access, asked: Scope) -> Scope:
    """The scope of a composition page: exactly the one asked for, inside the grants (a
    composition belongs to its scope; it is never narrowed to fit)."""
    resolution = resolve_scope(store, access, asked)
    if isinstance(resolution, PickScope) or resolution.scope != asked:
        raise NotVisible(f"Scope {format_scope(asked)}")
    return asked


def _version(store: FullMemoryStore, scope: Scope, text: str | None) -> str | None:
    """A registered version of ``scope`` by its hash or a prefix of it (12 characters or more)."""
    if not text:
        return None
    for registration in store.compositions(scope, exact=True):
        if registration.version == text or (len(text) >= 12 and registration.version.startswith(text)):
            return registration.version
    raise MemoryNotFoundError(text, f"No composition {text[:12]!r} was registered for this scope.")


@require_GET
def composition(request: HtmxHttpRequest) -> HttpResponse:
    return query_page(request, CompositionForm(request.GET), ONE, "composition", composition_context)


def composition_context(access: Access, form: CompositionForm) -> dict[str, Any]:
    context: dict[str, Any] = {"access": access, "can_review": access.can_curate}
    if not access.sees_anything:
        return context
    store, data = review_store(), form.cleaned_data
    scope = _scope(store, access, data["scope"])
    try:
        version = _version(store, scope, data["version"])
        view = composition_view(store, scope, visible=access.allows, version=version, as_of=data["as_of"])
    except MemoryNotFoundError as exc:
        form.add_error("version" if data["version"] else "scope", exc.message)
        return {**context, "scope_text": format_scope(scope)}
    return {
        **context,
        "scope": scope,
        "scope_text": format_scope(scope),
        "view": view,
        "as_of": data["as_of"],
        "rollback": access.can_curate and data["as_of"] is None and not data["version"],
        "versions": _versions(view.history),
    }


def _versions(history: list[RegisteredComposition]) -> list[tuple[RegisteredComposition, bool]]:
    return [(registration, index == 0) for index, registration in enumerate(history)]


@require_GET
def composition_changes(request: HtmxHttpRequest) -> HttpResponse:
    return query_page(request, CompositionDiffForm(request.GET), DIFF, "diff", diff_context)


def diff_context(access: Access, form: CompositionDiffForm) -> dict[str, Any]:
    context: dict[str, Any] = {"access": access}
    if not access.sees_anything:
        return context
    store, data = review_store(), form.cleaned_data
    scope = _scope(store, access, data["scope"])
    context.update({"scope": scope, "scope_text": format_scope(scope)})
    try:
        before = Moment(as_of=data["from_time"], version=_version(store, scope, data["from_version"]))
    except MemoryNotFoundError as exc:
        form.add_error("from_version", exc.message)
        return context
    try:
        after = Moment(as_of=data["to_time"], version=_version(store, scope, data["to_version"]))
    except MemoryNotFoundError as exc:
        form.add_error("to_version", exc.message)
        return context
    try:
        compared = composition_diff(store, scope, before, after, visible=access.allows)
    except MemoryNotFoundError as exc:
        form.add_error("from_time", exc.message)
        return context
    return {**context, "compared": compared, "before": before, "after": after}
