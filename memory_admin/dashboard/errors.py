"""Store errors → HTTP, in one place.

Views let the library's typed errors (and :class:`NotVisible` and
:class:`~django.core.exceptions.PermissionDenied`) propagate; this
middleware turns each into a readable page — or, for an htmx request, the same message
as a fragment for the region being swapped — with an honest status code.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.cache import patch_vary_headers

from memory_admin.dashboard.permissions import NoRole, NotVisible
from memory_admin.errors import (
    CapabilityError,
    MemoryBusyError,
    MemoryConflictError,
    MemoryCorruptionError,
    MemoryLimitError,
    MemoryNotFoundError,
    MemoryScopeError,
    MemoryStoreError,
    MemoryValidationError,
    SchemaVersionError,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ErrorPage:
    status: int
    title: str
    message: str
    hint: str = ""


def not_visible_message(exc: NotVisible | MemoryNotFoundError) -> str:
    what = exc.what if isinstance(exc, NotVisible) else "That memory record"
    return f"{what} does not exist, or is outside the scopes you may see."


def error_page(exc: Exception) -> ErrorPage | None:
    """The page for an exception the dashboard knows, or ``None`` to let Django handle it."""
    if isinstance(exc, NoRole):
        return ErrorPage(
            403,
            "Your account has no dashboard role yet",
            str(exc),
            f"Ask a dashboard admin to give it one (for example: memory-admin user role {exc.username} viewer), "
            "or, with single sign-on, the group that gives one.",
        )
    if isinstance(exc, PermissionDenied):
        # a role that may not act: the same page whatever the target, so it leaks nothing
        return ErrorPage(
            403,
            "Not allowed",
            str(exc) or "Your role does not allow this.",
            "Ask a dashboard admin for a role (viewer, curator, privacy officer) and scope grants.",
        )
    if isinstance(exc, NotVisible | MemoryNotFoundError):
        # one answer for "missing" and "outside your grants": the page never says which
        return ErrorPage(404, "Not found", not_visible_message(exc))
    if isinstance(exc, MemoryValidationError | MemoryLimitError):
        return ErrorPage(400, "That request is not valid", exc.message, "Check the filters and try again.")
    if isinstance(exc, MemoryScopeError):
        return ErrorPage(400, "Scope problem", exc.message)
    if isinstance(exc, MemoryConflictError):
        return ErrorPage(409, "Conflict", exc.message)
    if isinstance(exc, MemoryBusyError):
        return ErrorPage(503, "The memory store is busy", exc.message, "Try again in a moment.")
    if isinstance(exc, CapabilityError | SchemaVersionError):
        return ErrorPage(503, "The memory store cannot serve the dashboard", exc.message)
    if isinstance(exc, MemoryCorruptionError):
        log.error("corrupt memory record %s: %s", exc.record_id, exc.extras.get("detail"))
        return ErrorPage(
            500,
            "A stored record is corrupt",
            f"Record {exc.record_id} no longer validates ({exc.extras.get('detail')}).",
            "An operator can inspect and repair or delete the row; nothing was dropped silently.",
        )
    if isinstance(exc, MemoryStoreError):
        log.error("memory store error: %s", exc.message)
        return ErrorPage(503, "The memory store failed", exc.message)
    return None


ERROR_REGION = "#htmx-error"  # base.html's error region, above every page's content


def render_error(request: HttpRequest, page: ErrorPage) -> HttpResponse:
    """The error page — or, for htmx, its message put in the page's error region rather
    than over the region that asked (which holds the form to try again with)."""
    template = "dashboard/error.html"
    htmx = getattr(request, "htmx", None)
    fragment = htmx is not None and bool(htmx) and not htmx.history_restore_request
    if fragment:
        template += "#error"
    response = render(request, template, {"error": page, "inline": fragment}, status=page.status)
    if fragment:
        response["HX-Retarget"] = ERROR_REGION
        response["HX-Reswap"] = "innerHTML"
    patch_vary_headers(response, ["HX-Request"])
    return response


class StoreErrorMiddleware:
    """Maps the memory library's errors (and :class:`NotVisible`) to HTTP responses."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        page = error_page(exception)
        return None if page is None else render_error(request, page)
