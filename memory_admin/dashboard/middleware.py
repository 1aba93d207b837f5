"""Request plumbing that is not a view's business."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseRedirectBase
from django.shortcuts import resolve_url
from django_htmx.http import HttpResponseClientRedirect


class HtmxSignInRedirectMiddleware:
    """When a session ends mid-page, an htmx request is redirected to the sign-in page;
    swapping that page into a result region would nest it, so the browser is told to
    navigate there instead (``HX-Redirect``)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (
            getattr(request, "htmx", False)
            and isinstance(response, HttpResponseRedirectBase)
            and response.url.startswith(resolve_url(settings.LOGIN_URL))
        ):
            return HttpResponseClientRedirect(response.url)
        return response
