"""What every view shares: the request type, the store, and page-or-fragment rendering."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar
from urllib.parse import urlsplit

from django import forms
from django.conf import settings
from django.core import signing
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, QueryDict
from django.shortcuts import render
from django.urls import reverse
from django.utils.cache import patch_vary_headers
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django_htmx.middleware import HtmxDetails

from memory_admin.dashboard.errors import not_visible_message
from memory_admin.dashboard.permissions import Access, NotVisible, access_for
from memory_admin.dashboard.stores import get_store
from memory_admin.store import FullMemoryStore, MemoryNeeds, require_memory


class HtmxHttpRequest(HttpRequest):
    """A request that went through django-htmx's middleware (every dashboard request)."""

    htmx: HtmxDetails


_checked: set[tuple[int, MemoryNeeds]] = set()


def _checked_store(needs: MemoryNeeds) -> FullMemoryStore:
    store = get_store()
    if (id(store), needs) not in _checked:
        require_memory(store, needs)
        _checked.add((id(store), needs))
    return store


def admin_store() -> FullMemoryStore:
    """The configured store, checked once for the admin listing the dashboard needs."""
    return _checked_store(MemoryNeeds(admin=True))


def event_store() -> FullMemoryStore:
    """The configured store, checked once for the event log the recall pages read."""
    return _checked_store(MemoryNeeds(admin=True, events=True))


def review_store() -> FullMemoryStore:
    """The configured store, checked once for the promotion state the learnings pages read."""
    return _checked_store(MemoryNeeds(admin=True, promotion=True))


def form_problems(form: forms.Form) -> str:
    """A bound form's errors in one line, field by field (for an error page)."""
    return "; ".join(f"{name}: {' '.join(str(e) for e in errors)}" for name, errors in form.errors.items())


def page_size() -> int:
    return int(getattr(settings, "DASHBOARD_PAGE_SIZE", 25))


def render_region(
    request: HtmxHttpRequest, template: str, region: str, context: Mapping[str, Any], *, status: int = 200
) -> HttpResponse:
    """The whole page, or — for an htmx request — only its ``region`` partial.

    One URL serves both, so the response varies on ``HX-Request``.
    """
    # htmx restoring a page it no longer holds in its history cache needs the whole page
    fragment = bool(request.htmx) and not request.htmx.history_restore_request
    name = f"{template}#{region}" if fragment else template
    response = render(request, name, context, status=status)
    if fragment:
        # an answer that made it here clears an error an earlier request left in the
        # page's error region (errors.render_error puts them there)
        response.write(CLEAR_ERROR_REGION)
    patch_vary_headers(response, ["HX-Request"])
    return response


CLEAR_ERROR_REGION = '<div id="htmx-error" hx-swap-oob="innerHTML"></div>'

FormT = TypeVar("FormT", bound=forms.Form)


def query_page(
    request: HtmxHttpRequest,
    form: FormT,
    template: str,
    region: str,
    build: Callable[[Access, FormT], Mapping[str, Any]],
    *,
    always: Mapping[str, Any] | None = None,
) -> HttpResponse:
    """A page whose filters live in its query string (``form``): a bad parameter is a
    400 that shows the form's errors, a scope outside the user's grants a 404 that says
    so beside the scope field; otherwise the page shows what ``build`` makes of the user
    and the valid form. ``always`` is context the form itself needs, error or not."""
    access = access_for(request)
    base = {"form": form, "access": access, **(always or {})}
    if not form.is_valid():
        return render_region(request, template, region, base, status=400)
    try:
        context = build(access, form)
    except NotVisible as exc:
        # a scope outside the grants: said beside the scope field, in the page that asked,
        # so the form stays to fix it (the same words as the 404 page, which never says which)
        form.add_error("scope", not_visible_message(exc))
        return render_region(request, template, region, base, status=404)
    # a builder may refuse an option the form let through (a form error, not a page)
    status = 400 if form.errors else 200
    return render_region(request, template, region, {**base, **context}, status=status)


def see_other(url: str) -> HttpResponseRedirect:
    """Redirect after a POST (303: the browser follows with a GET)."""
    response = HttpResponseRedirect(url)
    response.status_code = 303
    return response


ONCE_SECONDS = 300
"""How long a value kept for one page waits for the browser to load it."""
MAX_ONCE_CHARS = 3800
"""The largest signed value kept in a cookie (browsers keep about 4 KB with its name)."""
RETRY_COOKIE = "memory_admin_retry"
RECEIPT_COOKIE = "memory_admin_receipt"
_ONCE_SALT = "memory_admin.dashboard.once"


def keep_once(response: HttpResponse, name: str, value: Mapping[str, str], *, path: str) -> HttpResponse:
    """Keep ``value`` for this browser's next GET of ``path``, in a signed cookie of its
    own — never in the server's session store, so a redirect that is not followed leaves
    nothing on the server — for :data:`ONCE_SECONDS` at most. A value too large for a
    cookie is not kept (the page then does without it)."""
    signed = signing.dumps(dict(value), salt=f"{_ONCE_SALT}.{name}", compress=True)
    if len(signed) <= MAX_ONCE_CHARS:
        response.set_cookie(
            name,
            signed,
            max_age=ONCE_SECONDS,
            path=path,
            secure=settings.SESSION_COOKIE_SECURE,
            httponly=True,
            samesite="Strict",
        )
    return response


def kept_once(request: HttpRequest, name: str) -> dict[str, str] | None:
    """The value :func:`keep_once` kept for this page (``None``: none, or not ours)."""
    raw = request.COOKIES.get(name)
    if raw is None:
        return None
    try:
        value = signing.loads(raw, salt=f"{_ONCE_SALT}.{name}", max_age=ONCE_SECONDS)
    except signing.BadSignature:
        return None
    return {str(key): str(item) for key, item in value.items()} if isinstance(value, dict) else None


def spend_once(request: HttpRequest, response: HttpResponse, name: str) -> HttpResponse:
    """``response``, telling the browser to drop what :func:`keep_once` kept for this page
    (it is shown once: a reload is a fresh page)."""
    if name in request.COOKIES:
        response.delete_cookie(name, path=request.path, samesite="Strict")
    return response


def retry_later(response: HttpResponseRedirect, key: str, data: QueryDict, fields: tuple[str, ...]) -> HttpResponse:
    """Keep a refused POST's ``fields`` for the form page ``response`` redirects back to
    (see :func:`retry_data`): the refusal is a redirect, so the address bar never rests on
    a ``…/run/`` URL that a reload would post again."""
    kept = {"key": key, **{name: data.get(name, "") for name in fields}}
    return keep_once(response, RETRY_COOKIE, kept, path=urlsplit(response.url).path)


def retry_data(request: HttpRequest, key: str) -> QueryDict | None:
    """The submission :func:`retry_later` kept for ``key`` (pass the page's response
    through :func:`spend_once` with :data:`RETRY_COOKIE`: a second load is a fresh form)."""
    kept = kept_once(request, RETRY_COOKIE)
    if kept is None or kept.pop("key", None) != key:
        return None
    data = QueryDict(mutable=True)
    for name, value in kept.items():
        data[name] = value
    return data


def audit_link(entry_id: int) -> SafeString:
    """``audit entry #12``, linked to the entry: for the notices an action leaves."""
    return format_html('<a href="{}">audit entry #{}</a>', reverse("dashboard:audit_entry", args=[entry_id]), entry_id)
