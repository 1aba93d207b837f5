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


class ContentSecurityPolicyMiddleware:
    """Sends ``settings.DASHBOARD_CONTENT_SECURITY_POLICY`` on every response.

    The policy is one fixed string: the dashboard loads scripts, styles and data only
    from itself, has no inline script or style, and is never framed. First in the
    middleware list, so redirects, error pages and static files carry it too.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.policy: str = settings.DASHBOARD_CONTENT_SECURITY_POLICY

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        response.setdefault("Content-Security-Policy", self.policy)
        return response
