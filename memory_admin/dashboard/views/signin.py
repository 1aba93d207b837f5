"""The sign-in page, and its lockout.

The page offers single sign-on when it is on ("Sign in with <provider>") and the
password form while ``MEMORY_ADMIN_LOCAL_SIGNIN`` is on; with the password switched
off, a posted password is refused without being checked.

After :setting:`AXES_FAILURE_LIMIT` wrong passwords for one username from one address,
django-axes refuses every sign-in (the right password too) until the cool-off has
passed, and this is what the person sees — the sign-in form, with why and for how long."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView
from django.forms.utils import ErrorList
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from memory_admin.dashboard.sso.config import local_signin_enabled
from memory_admin.dashboard.views.sso import sign_in_options

LOGIN = "registration/login.html"


class SignInView(LoginView):
    """Django's sign-in view, offering single sign-on and obeying the password switch."""

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        context.update(sign_in_options())
        return context

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not local_signin_enabled():
            context = self.get_context_data(local_refused=True)
            return self.render_to_response(context, status=403)
        return super().post(request, *args, **kwargs)


class LockedOutForm(AuthenticationForm):
    """The sign-in form, unbound (nothing is checked again), carrying the lockout message."""

    def __init__(self, request: HttpRequest, username: str, message: str) -> None:
        super().__init__(request, initial={"username": username})
        self.message = message

    def non_field_errors(self) -> ErrorList:
        return ErrorList([self.message])


def cool_off_text() -> str:
    cool_off = settings.AXES_COOLOFF_TIME
    minutes = max(1, round(cool_off.total_seconds() / 60)) if isinstance(cool_off, timedelta) else None
    if minutes is None:
        return "until an admin unlocks it"
    return f"for {minutes} minute{'s' if minutes != 1 else ''}"


def locked_out(request: HttpRequest, response: HttpResponse | None, credentials: dict[str, Any] | None) -> HttpResponse:
    username = str((credentials or {}).get("username") or request.POST.get("username", ""))[:150]
    message = (
        f"Too many wrong passwords: signing in as this user from here is locked {cool_off_text()}, "
        "even with the right password. Wait, or ask an admin to unlock it."
    )
    context = {
        "form": LockedOutForm(request, username, message),
        "next": request.POST.get("next", ""),
        **sign_in_options(),
    }
    return render(request, LOGIN, context, status=429)
