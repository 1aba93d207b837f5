"""Request plumbing that is not a view's business."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
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
    middleware list, so redirects, error pages and static files carry it too. With
    single sign-on on, ``form-action`` also names the provider's origin: starting a
    sign-in and signing out are forms whose answers redirect there.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        from memory_admin.dashboard.sso.config import form_action_origins

        self.get_response = get_response
        self.policy: str = with_form_action(settings.DASHBOARD_CONTENT_SECURITY_POLICY, form_action_origins())

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        response.setdefault("Content-Security-Policy", self.policy)
        return response


def with_form_action(policy: str, origins: list[str]) -> str:
    """``policy`` with ``origins`` added to its ``form-action`` directive."""
    if not origins:
        return policy
    directives = [part.strip() for part in policy.split(";") if part.strip()]
    for number, directive in enumerate(directives):
        if directive.split()[0] == "form-action":
            directives[number] = " ".join([directive, *origins])
            break
    else:
        directives.append(" ".join(["form-action 'self'", *origins]))
    return "; ".join(directives)


class EmptyParametersMiddleware:
    """A GET form sends every field, filled or not (``?q=&tag=&key=&as_of=``); an empty
    parameter means the same as a missing one, so a plain request carrying any is
    redirected to its URL without them. htmx requests never carry them: the dashboard's
    script drops them before sending (``static/dashboard/forms.js``)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.method == "GET" and not getattr(request, "htmx", False) and request.GET:
            kept = request.GET.copy()
            for name in list(kept):
                values = [value for value in kept.getlist(name) if value != ""]
                if values:
                    kept.setlist(name, values)
                else:
                    del kept[name]
            if kept != request.GET:
                query = kept.urlencode()
                return HttpResponseRedirect(request.path + (f"?{query}" if query else ""))
        return self.get_response(request)
