"""Who may see and decide on what agents learned, as a matrix that can fail: every URL of
the learnings pages × every role × a learning inside or outside the user's grant → the
status, nothing of another tenant's learnings in a refusal, nothing changed when refused
(memory, promotion state, proposals, the audit log); then POST-only decisions, CSRF on
every one, and no inline script or style on any page."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from django.urls import reverse
from django.utils.http import urlencode

from memory_admin.dashboard.demo import ACME_SUPPORT, GLOBEX_SUPPORT
from memory_admin.dashboard.models import AuditEntry
from memory_admin.promotion import Pin, Proposal
from memory_admin.store import InMemoryMemoryStore
from tests.dashboard.conftest import MakeClient
from tests.dashboard.test_security import (
    INLINE_SCRIPT,
    INLINE_STYLE,
    ROLES,
    ask,
    body_of,
    csrf_client,
    status_for,
)

pytestmark = pytest.mark.django_db

IN_SECRET = "Refund requests must quote the booking reference"  # acme's pending guarded learning
OUT_SECRET = "Never reopen a ticket the customer closed themselves"  # globex's


@dataclass(frozen=True)
class Target:
    record_id: str
    scope: str
    composition_scope: str
    proposal: Proposal
    pin: Pin
    secret: str


def _pending(store: InMemoryMemoryStore, scope: dict[str, str], secret: str) -> str:
    found = store.promotions(scope, states=["pending_review"], scope_match="visible").promotions
    [record_id] = [p.record_id for p in found if p.record is not None and secret in p.record.content]
    return record_id


@pytest.fixture
def targets(demo_store: InMemoryMemoryStore) -> dict[str, Target]:
    def target(scope: dict[str, str], text: str, secret: str) -> Target:
        record_id = _pending(demo_store, scope, secret)
        state = demo_store.promotion(record_id)
        assert state is not None
        [proposal] = demo_store.propose([{"kind": "invalidate", "record_id": record_id, "reason": "matrix"}])
        return Target(
            record_id,
            text,
            ",".join(f"{k}={v}" for k, v in sorted(scope.items())),
            proposal,
            Pin(revision=state.revision, state=state.state),
            secret,
        )

    return {
        "in": target(ACME_SUPPORT, "tenant=acme", IN_SECRET),
        "out": target(GLOBEX_SUPPORT, "tenant=globex", OUT_SECRET),
    }


def q(**params: str) -> str:
    return "?" + urlencode(params)


NO_DATA: Callable[[Target], dict[str, str]] = lambda t: {}  # noqa: E731
Route = tuple[str, Callable[[Target], str], Callable[[Target], dict[str, str]], str]
ROUTES: dict[str, Route] = {
    "learnings": ("GET", lambda t: reverse("dashboard:learnings") + q(scope=t.scope), NO_DATA, "viewer"),
    "learning": ("GET", lambda t: reverse("dashboard:learning", args=[t.record_id]), NO_DATA, "viewer"),
    "learning_edit": ("GET", lambda t: reverse("dashboard:learning_edit", args=[t.record_id]), NO_DATA, "curator"),
    "learning_rollback": (
        "GET",
        lambda t: reverse("dashboard:learning_rollback", args=[t.record_id]),
        NO_DATA,
        "curator",
    ),
    "compositions": ("GET", lambda t: reverse("dashboard:compositions") + q(scope=t.scope), NO_DATA, "viewer"),
    "composition": (
        "GET",
        lambda t: reverse("dashboard:composition") + q(scope=t.composition_scope),
        NO_DATA,
        "viewer",
    ),
    "composition_diff": (
        "GET",
        lambda t: reverse("dashboard:composition_diff") + q(scope=t.composition_scope),
        NO_DATA,
        "viewer",
    ),
    "learned": ("GET", lambda t: reverse("dashboard:learned") + q(scope=t.scope), NO_DATA, "viewer"),
    "learned_export_csv": (
        "GET",
        lambda t: reverse("dashboard:learned_export_csv") + q(scope=t.scope),
        NO_DATA,
        "viewer",
    ),
    "learned_export_jsonl": (
        "GET",
        lambda t: reverse("dashboard:learned_export_jsonl") + q(scope=t.scope),
        NO_DATA,
        "viewer",
    ),
    "learning_decide": (
        "POST",
        lambda t: reverse("dashboard:learning_decide", args=[t.record_id]),
        lambda t: {"decision": "reject", "reason": "matrix", "pin": t.pin.model_dump_json(exclude_none=True)},
        "curator",
    ),
    "learning_edit_run": (
        "POST",
        lambda t: reverse("dashboard:learning_edit_run", args=[t.record_id]),
        lambda t: {"content": "Edited by the matrix.", "pin": t.pin.model_dump_json(exclude_none=True)},
        "curator",
    ),
    "learnings_decide": (
        "POST",
        lambda t: reverse("dashboard:learnings_decide"),
        lambda t: {
            "decision": "reject",
            "reason": "matrix",
            "record": t.record_id,
            f"pin-{t.record_id}": t.pin.model_dump_json(exclude_none=True),
        },
        "curator",
    ),
    "proposal_settle": (
        "POST",
        lambda t: reverse("dashboard:proposal_settle", args=[t.proposal.id]),
        lambda t: {"decision": "reject", "reason": "matrix"},
        "curator",
    ),
}


def expected_status(route: str, role: str, where: str) -> int:
    return status_for(ROUTES[route], role, where)


def fingerprint(store: InMemoryMemoryStore, target: Target) -> tuple[object, ...]:
    """What any decision on ``target`` would change: its record, its promotion state, the
    proposal about it, what its tenant holds — and the audit log."""
    tenant = {"tenant": target.scope.split("=")[1]}
    return (
        store.get(target.record_id),
        store.promotion(target.record_id),
        store.proposal(target.proposal.id),
        store.count_records(tenant),
        AuditEntry.objects.count(),
    )


@pytest.mark.parametrize("where", ["in", "out"])
@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("route", list(ROUTES))
def test_every_learnings_url_by_role_and_grant(
    route: str,
    role: str,
    where: str,
    client_for: MakeClient,
    demo_store: InMemoryMemoryStore,
    targets: dict[str, Target],
) -> None:
    target = targets[where]
    before = fingerprint(demo_store, target)
    response, body = ask(ROUTES[route], target, role, client_for)
    expected = expected_status(route, role, where)
    assert response.status_code == expected, f"{route} as {role} ({where} grant)"
    if expected in (302, 403, 404):
        assert target.secret.encode() not in body, "a refusal leaks the learning"
        assert fingerprint(demo_store, target) == before, "a refused request changed something"
    if expected == 404:
        assert b"outside the scopes you may see" in body
    if expected == 403:
        assert b"needs the curator role" in body or b"needs the viewer role" in body
    if expected == 303:
        assert fingerprint(demo_store, target) != before, "an allowed decision changed nothing"
    if expected == 200 and route in ("learnings", "learning", "learned_export_csv", "learned_export_jsonl"):
        other = targets["out" if where == "in" else "in"]
        assert (other.secret.encode() in body) is False, "another tenant's learning shows"


@pytest.mark.parametrize("role", ["viewer", "curator"])
def test_a_tenant_limited_user_never_sees_another_tenants_learnings_anywhere(
    role: str, client_for: MakeClient, demo_store: InMemoryMemoryStore, targets: dict[str, Target]
) -> None:
    """Without a scope (the user's grant is the page's scope) and with the other tenant's
    scope asked, no page of the learnings names a globex learning."""
    client = client_for(role, "tenant=acme")
    pages = [
        reverse("dashboard:learnings"),
        reverse("dashboard:learnings") + q(state="pending_review"),
        reverse("dashboard:compositions"),
        reverse("dashboard:learned"),
        reverse("dashboard:health"),
        reverse("dashboard:learned_export_jsonl"),
        reverse("dashboard:learnings") + q(scope="tenant=globex"),
        reverse("dashboard:composition") + q(scope="tenant=globex,agent=support"),
    ]
    for url in pages:
        body = body_of(client.get(url))
        assert OUT_SECRET.encode() not in body and b"globex-support" not in body, url
        assert targets["out"].record_id.encode() not in body, url


def test_a_viewer_sees_learnings_but_cannot_decide(client_for: MakeClient, targets: dict[str, Target]) -> None:
    viewer = client_for("viewer", "tenant=acme")
    inbox = viewer.get(reverse("dashboard:learnings") + q(scope="tenant=acme")).content.decode()
    assert IN_SECRET in inbox and 'name="record"' not in inbox and "Approve ticked" not in inbox
    page = viewer.get(reverse("dashboard:learning", args=[targets["in"].record_id])).content.decode()
    assert IN_SECRET in page and "a curator decides on it" in page
    assert 'name="decision"' not in page and "learning_decide" not in page
    health = viewer.get(reverse("dashboard:health") + q(scope="tenant=acme")).content.decode()
    assert "A curator can accept or reject these" in health and 'value="accept"' not in health


def test_a_decision_outside_the_deciders_grant_is_not_found_in_the_library_too(
    client_for: MakeClient, demo_store: InMemoryMemoryStore, targets: dict[str, Target]
) -> None:
    """The view checks the grant; the action passes it on (``within``), so a curator of
    one user never decides on a learning of the tenant's shared scope."""
    client = client_for("curator", "tenant=acme,user=dana")
    target = targets["in"]
    before = fingerprint(demo_store, target)
    response = client.post(
        reverse("dashboard:learning_decide", args=[target.record_id]), ROUTES["learning_decide"][2](target)
    )
    assert response.status_code == 404 and fingerprint(demo_store, target) == before


@pytest.mark.parametrize("route", [name for name, spec in ROUTES.items() if spec[0] == "POST"])
def test_decisions_are_post_only(
    route: str, client_for: MakeClient, demo_store: InMemoryMemoryStore, targets: dict[str, Target]
) -> None:
    target = targets["in"]
    before = fingerprint(demo_store, target)
    client = client_for("admin")
    url = ROUTES[route][1](target)
    assert client.get(url).status_code == 405
    assert client.get(url + q(**ROUTES[route][2](target))).status_code == 405
    assert fingerprint(demo_store, target) == before


@pytest.mark.parametrize("route", [name for name, spec in ROUTES.items() if spec[0] == "GET"])
def test_learnings_pages_refuse_post(route: str, client_for: MakeClient, targets: dict[str, Target]) -> None:
    assert client_for("admin").post(ROUTES[route][1](targets["in"])).status_code == 405


@pytest.mark.parametrize("route", [name for name, spec in ROUTES.items() if spec[0] == "POST"])
def test_csrf_is_enforced_on_every_decision(
    route: str, client_for: MakeClient, demo_store: InMemoryMemoryStore, targets: dict[str, Target]
) -> None:
    target = targets["in"]
    client = csrf_client(client_for)
    _method, url_for, data_for, _lowest = ROUTES[route]
    before = fingerprint(demo_store, target)
    refused = client.post(url_for(target), data_for(target))
    assert refused.status_code == 403 and b"security token" in refused.content
    assert fingerprint(demo_store, target) == before
    page = client.get(reverse("dashboard:learning", args=[target.record_id])).content.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert token is not None
    accepted = client.post(url_for(target), {**data_for(target), "csrfmiddlewaretoken": token.group(1)})
    assert accepted.status_code == 303


@pytest.mark.parametrize("route", [name for name, spec in ROUTES.items() if spec[0] == "GET" and "export" not in name])
def test_learnings_pages_have_no_inline_script_or_style(
    route: str, client_for: MakeClient, targets: dict[str, Target]
) -> None:
    html = client_for("admin").get(ROUTES[route][1](targets["in"])).content.decode()
    assert INLINE_SCRIPT.search(html) is None, INLINE_SCRIPT.search(html)
    assert INLINE_STYLE.search(html) is None, INLINE_STYLE.search(html)


def test_the_refusal_names_the_review(client_for: MakeClient, targets: dict[str, Target]) -> None:
    viewer = client_for("viewer", "tenant=acme")
    response = viewer.post(
        reverse("dashboard:learning_decide", args=[targets["in"].record_id]),
        ROUTES["learning_decide"][2](targets["in"]),
    )
    assert response.status_code == 403
    assert "deciding on what agents learned needs the curator role" in response.content.decode()
