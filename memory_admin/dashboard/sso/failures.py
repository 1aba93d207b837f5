"""Every way a single sign-on can fail, as the page a person reads.

A failure never creates or grants anything: the sign-in flow raises
:class:`SignInFailed` before it writes, and the callback view renders its page (with a
button to try again) inside the dashboard's layout — never a 500.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Failure(StrEnum):
    OFF = "off"
    PROVIDER_DOWN = "provider_down"
    PROVIDER_MISCONFIGURED = "provider_misconfigured"
    DENIED = "denied"
    PROVIDER_ERROR = "provider_error"
    NO_SESSION = "no_session"
    BAD_STATE = "bad_state"
    EXPIRED_STATE = "expired_state"
    REPLAYED = "replayed"
    CODE_REFUSED = "code_refused"
    BAD_NONCE = "bad_nonce"
    WRONG_ISSUER = "wrong_issuer"
    WRONG_AUDIENCE = "wrong_audience"
    BAD_TOKEN = "bad_token"
    NO_ROLE = "no_role"
    CLAIMS_MISSING = "claims_missing"
    CLAIMS_OVERSIZED = "claims_oversized"
    CLAIMS_MALFORMED = "claims_malformed"
    ACCOUNT_DISABLED = "account_disabled"


@dataclass(frozen=True)
class FailurePage:
    status: int
    title: str
    message: str
    hint: str = ""


_PAGES: dict[Failure, FailurePage] = {
    Failure.OFF: FailurePage(404, "Single sign-on is off", "This dashboard does not sign in through a provider."),
    Failure.PROVIDER_DOWN: FailurePage(
        503,
        "The identity provider does not answer",
        "The dashboard could not reach {provider} to sign you in. Nothing was changed.",
        "Try again in a moment; if it keeps failing, tell the dashboard's operators.",
    ),
    Failure.PROVIDER_MISCONFIGURED: FailurePage(
        503,
        "Single sign-on is not set up correctly",
        "{provider} answered, but not as the dashboard is configured to expect. Nothing was changed.",
        "The dashboard's operators can find the details in the server log.",
    ),
    Failure.DENIED: FailurePage(
        403,
        "Sign-in was declined",
        "{provider} did not let the dashboard sign you in: consent was declined, or the provider refused.",
        "If you meant to sign in, try again and accept; otherwise ask your administrator for access.",
    ),
    Failure.PROVIDER_ERROR: FailurePage(
        400,
        "The identity provider refused the sign-in",
        "{provider} answered with an error instead of a sign-in. Nothing was changed.",
        "Try again; if it keeps failing, tell the dashboard's operators.",
    ),
    Failure.NO_SESSION: FailurePage(
        400,
        "This sign-in was not started here",
        "The browser came back from {provider} without the sign-in this dashboard started "
        "(cookies may be blocked, or the sign-in was started in another browser).",
        "Allow cookies for this site and try again.",
    ),
    Failure.BAD_STATE: FailurePage(
        400,
        "This sign-in response does not match",
        "The response from {provider} does not belong to a sign-in this browser started, so it was not used.",
        "Start the sign-in again from this page.",
    ),
    Failure.EXPIRED_STATE: FailurePage(
        400,
        "This sign-in took too long",
        "The sign-in was started more than ten minutes ago, so its response was not used.",
        "Start the sign-in again.",
    ),
    Failure.REPLAYED: FailurePage(
        400,
        "This sign-in response was already used",
        "A sign-in response works once; this one has been used already (a reload, or the back button).",
        "Start the sign-in again if you are not signed in.",
    ),
    Failure.CODE_REFUSED: FailurePage(
        400,
        "The identity provider refused the sign-in code",
        "{provider} would not exchange the code it sent back (used already, expired, or issued to "
        "another application). Nothing was changed.",
        "Start the sign-in again.",
    ),
    Failure.BAD_NONCE: FailurePage(
        400,
        "The sign-in token belongs to another sign-in",
        "The token {provider} issued was made for a different sign-in attempt, so it was not used.",
        "Start the sign-in again.",
    ),
    Failure.WRONG_ISSUER: FailurePage(
        400,
        "The sign-in token comes from another provider",
        "The token was not issued by {provider}, the only identity provider this dashboard trusts.",
        "Nothing was changed. Tell the dashboard's operators if this keeps happening.",
    ),
    Failure.WRONG_AUDIENCE: FailurePage(
        400,
        "The sign-in token is for another application",
        "{provider} issued the token to another application, not to this dashboard, so it was not used.",
        "Nothing was changed. Tell the dashboard's operators if this keeps happening.",
    ),
    Failure.BAD_TOKEN: FailurePage(
        400,
        "The sign-in token is not valid",
        "The token from {provider} failed its checks (signature, expiry or form), so it was not used.",
        "Start the sign-in again; if it keeps failing, tell the dashboard's operators.",
    ),
    Failure.NO_ROLE: FailurePage(
        403,
        "No dashboard role",
        "{provider} signed you in, but none of your groups gives you a role on this dashboard. {detail}",
        "Ask your administrator to add you to one of the dashboard's groups "
        "(viewer, curator, privacy officer or admin).",
    ),
    Failure.CLAIMS_MISSING: FailurePage(
        403,
        "Your groups did not arrive",
        "{detail} Without them the dashboard cannot tell your role, so it did not sign you in.",
        "Tell the dashboard's operators: the provider's token must carry the groups claim.",
    ),
    Failure.CLAIMS_OVERSIZED: FailurePage(
        403,
        "Too many groups to trust",
        "{detail} The dashboard did not sign you in.",
        "Tell the dashboard's operators (docs/deploy.md, single sign-on).",
    ),
    Failure.CLAIMS_MALFORMED: FailurePage(
        403,
        "Your groups could not be read",
        "{detail} The dashboard did not sign you in.",
        "Tell the dashboard's operators.",
    ),
    Failure.ACCOUNT_DISABLED: FailurePage(
        403,
        "Your dashboard account is switched off",
        "{provider} signed you in, but your account on this dashboard has been switched off.",
        "Ask a dashboard admin.",
    ),
}


class SignInFailed(Exception):
    """A sign-in that must not go on: ``failure`` picks the page, ``detail`` fills it
    (text the dashboard wrote, never the provider's), ``log`` is for the server log."""

    def __init__(self, failure: Failure, *, detail: str = "", log: str = "") -> None:
        super().__init__(log or detail or failure.value)
        self.failure = failure
        self.detail = detail
        self.log = log


def failure_page(failure: Failure, *, provider: str, detail: str = "") -> FailurePage:
    page = _PAGES[failure]
    return FailurePage(
        page.status,
        page.title,
        page.message.format(provider=provider, detail=detail).strip(),
        page.hint.format(provider=provider, detail=detail),
    )
