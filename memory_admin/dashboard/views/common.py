"""What every view shares: the store, and page-or-fragment rendering."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.utils.cache import patch_vary_headers

from memory_admin.dashboard.stores import get_store
from memory_admin.store import BaseMemoryStore, MemoryNeeds, require_memory

_checked: set[tuple[int, MemoryNeeds]] = set()


def _checked_store(needs: MemoryNeeds) -> BaseMemoryStore:
    store = get_store()
    if (id(store), needs) not in _checked:
        require_memory(store, needs)
        _checked.add((id(store), needs))
    return store


def admin_store() -> BaseMemoryStore:
    """The configured store, checked once for the admin listing the dashboard needs."""
    return _checked_store(MemoryNeeds(admin=True))


def event_store() -> BaseMemoryStore:
    """The configured store, checked once for the event log the recall pages read."""
    return _checked_store(MemoryNeeds(admin=True, events=True))


def page_size() -> int:
    return int(getattr(settings, "DASHBOARD_PAGE_SIZE", 25))


def render_region(
    request: HttpRequest, template: str, region: str, context: Mapping[str, Any], *, status: int = 200
) -> HttpResponse:
    """The whole page, or — for an htmx request — only its ``region`` partial.

    One URL serves both, so the response varies on ``HX-Request``.
    """
    htmx = request.htmx  # type: ignore[attr-defined]
    # htmx restoring a page it no longer holds in its history cache needs the whole page
    name = f"{template}#{region}" if htmx and not htmx.history_restore_request else template
    response = render(request, name, context, status=status)
    patch_vary_headers(response, ["HX-Request"])
    return response


def see_other(url: str) -> HttpResponseRedirect:
    """Redirect after a POST (303: the browser follows with a GET)."""
    response = HttpResponseRedirect(url)
    response.status_code = 303
    return response
