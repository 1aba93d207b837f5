"""Who may do what, as a matrix that can fail: every URL × every role × a target inside
or outside the user's grants → the expected status, with no leak in refused answers
and no change to memory when an action is refused. Then CSRF on every state change,
POST-only actions, the Content-Security-Policy, and the production settings.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.http import StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.test import Client
from django.urls import reverse
from django.utils.http import urlencode

from memory_admin.dashboard.models import AuditEntry
from memory_admin.records import MemoryRecord
from memory_admin.store import InMemoryMemoryStore
from tests.dashboard.conftest import MakeClient, find
from tests.support.child import report

pytestmark = pytest.mark.django_db

ROLES = ("anonymous", "viewer", "curator", "privacy-officer", "admin")
RANK = {role: i for i, role in enumerate(ROLES)}
GRANT = "tenant=acme"
IN_SECRET = "Dana has switched to green tea"  # tenant=acme,user=dana
OUT_SECRET = "Sam wants shift handovers"  # tenant=globex,user=sam


@dataclass(frozen=True)
class Target:
    """The things a URL points at, inside (acme) or outside (globex) the grant."""

    record: MemoryRecord
    scope: str
    event_id: int
    audit_id: int
    secret: str
    reason: str


@pytest.fixture
def targets(demo_store: InMemoryMemoryStore) -> dict[str, Target]:
    def event_in(scope: dict[str, str]) -> int:
        return demo_store.query_events({"types": ["agent.memory.recall"], "scope": scope, "limit": 1})[0].id

    def audit_entry(scope: str, reason: str) -> int:
        entry = AuditEntry.objects.create(
            at="2026-01-05T09:00:00Z",
            actor="someone",
            action="invalidate",
            tenant=scope.split("=")[1].split(",")[0],
            scope_json=json.dumps(
                dict(pair.split("=") for pair in scope.split(",")), sort_keys=True, separators=(",", ":")
            ),
            reason=reason,
            outcome="done",
        )
        return entry.pk

    dana = {"tenant": "acme", "user": "dana"}
    sam = {"tenant": "globex", "user": "sam"}
    return {
        "in": Target(
            find(demo_store, "tenant=acme,user=dana", "green tea"),
            "tenant=acme,user=dana",
            event_in(dana),
            audit_entry("tenant=acme,user=dana", "acme audit reason"),
            IN_SECRET,
            "acme audit reason",
        ),
        "out": Target(
            find(demo_store, "tenant=globex,user=sam", "open priority tickets"),
            "tenant=globex,user=sam",
            event_in(sam),
            audit_entry("tenant=globex,user=sam", "globex audit reason"),
            OUT_SECRET,
            "globex audit reason",
        ),
    }


def q(**params: str) -> str:
    return "?" + urlencode(params)


# name → (method, url for a target, POST data for a target, the lowest role allowed)
Route = tuple[str, Callable[[Target], str], Callable[[Target], dict[str, str]], str]
NO_DATA: Callable[[Target], dict[str, str]] = lambda t: {}  # noqa: E731
ROUTES: dict[str, Route] = {
    "browse": ("GET", lambda t: reverse("dashboard:browse") + q(scope=t.scope), NO_DATA, "viewer"),
    "record": ("GET", lambda t: reverse("dashboard:record", args=[t.record.id]), NO_DATA, "viewer"),
    "scope": ("GET", lambda t: reverse("dashboard:scope") + q(scope=t.scope), NO_DATA, "viewer"),
    "recall": ("GET", lambda t: reverse("dashboard:recall") + q(scope=t.scope), NO_DATA, "viewer"),
    "recall_event": ("GET", lambda t: reverse("dashboard:recall_event", args=[t.event_id]), NO_DATA, "viewer"),
    "recall_preview": (
        "GET",
        lambda t: reverse("dashboard:recall_preview") + q(scope=t.scope, message="what do I like?"),
        NO_DATA,
        "viewer",
    ),
    "health": ("GET", lambda t: reverse("dashboard:health") + q(scope=t.scope), NO_DATA, "viewer"),
    "export_jsonl": ("GET", lambda t: reverse("dashboard:export_jsonl") + q(scope=t.scope), NO_DATA, "viewer"),
    "export_csv": ("GET", lambda t: reverse("dashboard:export_csv") + q(scope=t.scope), NO_DATA, "viewer"),
    "audit_entry": ("GET", lambda t: reverse("dashboard:audit_entry", args=[t.audit_id]), NO_DATA, "curator"),
    "invalidate": ("GET", lambda t: reverse("dashboard:invalidate", args=[t.record.id]), NO_DATA, "curator"),
    "correct": ("GET", lambda t: reverse("dashboard:correct", args=[t.record.id]), NO_DATA, "curator"),
    "delete": ("GET", lambda t: reverse("dashboard:delete", args=[t.record.id]), NO_DATA, "privacy-officer"),
    "erase": ("GET", lambda t: reverse("dashboard:erase") + q(scope=t.scope), NO_DATA, "privacy-officer"),
    "erase_confirm": (
        "GET",
        lambda t: reverse("dashboard:erase_confirm") + q(scope=t.scope),
        NO_DATA,
        "privacy-officer",
    ),
    "invalidate_run": (
        "POST",
        lambda t: reverse("dashboard:invalidate_run", args=[t.record.id]),
        lambda t: {"reason": "matrix"},
        "curator",
    ),
    "correct_run": (
        "POST",
        lambda t: reverse("dashboard:correct_run", args=[t.record.id]),
        lambda t: {"content": "Corrected by the matrix.", "reason": "matrix"},
        "curator",
    ),
    "delete_run": (
        "POST",
        lambda t: reverse("dashboard:delete_run", args=[t.record.id]),
        lambda t: {"confirm_id": t.record.id, "reason": "matrix"},
        "privacy-officer",
    ),
    "erase_run": (
        "POST",
        lambda t: reverse("dashboard:erase_run"),
        lambda t: {"scope": t.scope, "confirm_scope": t.scope, "reason": "matrix"},
        "privacy-officer",
    ),
    "sweep": ("POST", lambda t: reverse("dashboard:sweep"), lambda t: {"scope": t.scope}, "privacy-officer"),
}


def expected_status(route: str, role: str, where: str) -> int:
    return status_for(ROUTES[route], role, where)


def status_for(spec: tuple[str, object, object, str], role: str, where: str) -> int:
    """What a route (method, URL, data, the lowest role it needs) answers ``role`` for a
    target inside or outside the grant."""
    method, _url, _data, lowest = spec
    if role == "anonymous":
        return 302  # to the sign-in page
    if RANK[role] < RANK[lowest]:
        return 403  # the role decides first, so a refusal says nothing about the target
    if where == "out" and role != "admin":
        return 404  # outside the grants looks exactly like missing
    return 303 if method == "POST" else 200


def client_as(role: str, client_for: MakeClient) -> Client:
    if role == "anonymous":
        return Client()
    return client_for(role) if role == "admin" else client_for(role, GRANT)


def ask(
    spec: tuple[str, Callable[[Any], str], Callable[[Any], dict[str, str]], str],
    target: object,
    role: str,
    client_for: MakeClient,
) -> tuple[HttpResponseBase, bytes]:
    """``role`` (granted acme) asks a route about ``target``: the answer and its body."""
    method, url_for, data_for, _lowest = spec
    client = client_as(role, client_for)
    url = url_for(target)
    response = client.post(url, data_for(target)) if method == "POST" else client.get(url)
    return response, body_of(response)


def body_of(response: HttpResponseBase) -> bytes:
    """A response's body, streamed (the exports) or not."""
    if isinstance(response, StreamingHttpResponse):
        return b"".join(response.streaming_content)  # type: ignore[arg-type]
    return response.content  # type: ignore[attr-defined, no-any-return]


def fingerprint(store: InMemoryMemoryStore, target: Target) -> tuple[object, ...]:
    """What any action on ``target`` would change — the audit log included: every
    action, even one that finds nothing to do, leaves an entry."""
    record = store.get(target.record.id)
    scope = dict(pair.split("=") for pair in target.scope.split(","))
    events = len(store.query_events({"scope": scope, "limit": 10_000}))
    return (record, store.count_records(scope), events, AuditEntry.objects.count())


@pytest.mark.parametrize("where", ["in", "out"])
@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("route", list(ROUTES))
def test_every_url_by_role_and_grant(
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
    if expected == 302:
        assert response["Location"].startswith(reverse("login"))
    if expected in (302, 403, 404):
        assert target.secret.encode() not in body and target.reason.encode() not in body
        assert fingerprint(demo_store, target) == before, "a refused request changed memory"
    if expected == 404:
        assert b"outside the scopes you may see" in body
    if expected == 303:
        assert fingerprint(demo_store, target) != before, "an allowed action changed nothing"


@pytest.mark.parametrize("role", ROLES)
def test_audit_log_by_role(role: str, client_for: MakeClient, targets: dict[str, Target]) -> None:
    response = client_as(role, client_for).get(reverse("dashboard:audit"))
    if role == "anonymous":
        assert response.status_code == 302
        return
    if RANK[role] < RANK["curator"]:
        assert response.status_code == 403 and b"audit reason" not in response.content
        return
    assert response.status_code == 200
    html = response.content.decode()
    assert targets["in"].reason in html
    assert (targets["out"].reason in html) is (role == "admin")


def test_a_user_grant_cannot_act_on_its_tenant(
    client_for: MakeClient, demo_store: InMemoryMemoryStore, targets: dict[str, Target]
) -> None:
    """A privacy officer granted one user may not erase or sweep the whole tenant, nor a
    neighbour: erasure is never narrowed to fit a grant."""
    client = client_for("privacy-officer", "tenant=acme,user=dana")
    before = demo_store.count_records({"tenant": "acme"})
    for scope in ("tenant=acme", "tenant=acme,user=ravi"):
        data = {"scope": scope, "confirm_scope": scope, "reason": "too wide"}
        assert client.post(reverse("dashboard:erase_run"), data).status_code == 404
        assert client.post(reverse("dashboard:sweep"), {"scope": scope}).status_code == 404
        assert client.get(reverse("dashboard:erase") + q(scope=scope)).status_code == 404
    assert demo_store.count_records({"tenant": "acme"}) == before
    ravi = find(demo_store, "tenant=acme,user=ravi", "refunds endpoint")
    assert (
        client.post(reverse("dashboard:delete_run", args=[ravi.id]), {"confirm_id": ravi.id, "reason": "x"}).status_code
        == 404
    )
    assert demo_store.get(ravi.id) is not None


# --- methods and CSRF ---------------------------------------------------------------------


@pytest.mark.parametrize("route", [name for name, spec in ROUTES.items() if spec[0] == "POST"])
def test_actions_are_post_only(
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
def test_pages_refuse_post(route: str, client_for: MakeClient, targets: dict[str, Target]) -> None:
    assert client_for("admin").post(ROUTES[route][1](targets["in"])).status_code == 405


def csrf_client(client_for: MakeClient) -> Client:
    client = client_for("admin")
    strict = Client(enforce_csrf_checks=True)
    strict.cookies = client.cookies  # the same signed-in session
    return strict


def token_from(html: str) -> str:
    found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)
    assert found, "the page has no CSRF token in its form"
    return found.group(1)


@pytest.mark.parametrize("route", [name for name, spec in ROUTES.items() if spec[0] == "POST"])
def test_csrf_is_enforced_on_every_action(
    route: str, client_for: MakeClient, demo_store: InMemoryMemoryStore, targets: dict[str, Target]
) -> None:
    target = targets["in"]
    client = csrf_client(client_for)
    _method, url_for, data_for, _lowest = ROUTES[route]
    before = fingerprint(demo_store, target)
    refused = client.post(url_for(target), data_for(target))
    assert refused.status_code == 403 and b"security token" in refused.content
    forged = client.post(url_for(target), {**data_for(target), "csrfmiddlewaretoken": "x" * 64})
    assert forged.status_code == 403
    assert fingerprint(demo_store, target) == before
    # with the token a page hands out, the same request goes through
    token = token_from(client.get(reverse("dashboard:health") + q(scope=target.scope)).content.decode())
    assert client.post(url_for(target), {**data_for(target), "csrfmiddlewaretoken": token}).status_code == 303


def test_htmx_sends_the_token_from_the_body_headers(client_for: MakeClient, targets: dict[str, Target]) -> None:
    client = csrf_client(client_for)
    record = targets["in"].record
    page = client.get(reverse("dashboard:record", args=[record.id])).content.decode()
    found = re.search(r"hx-headers='\{\"X-CSRFToken\": \"([^\"]+)\"\}'", page)
    assert found
    url = reverse("dashboard:invalidate_run", args=[record.id])
    assert client.post(url, {"reason": "htmx"}, HTTP_HX_REQUEST="true").status_code == 403
    response = client.post(url, {"reason": "htmx"}, HTTP_HX_REQUEST="true", HTTP_X_CSRFTOKEN=found.group(1))
    assert response.status_code == 200 and "htmx" in response.content.decode()


# --- Content-Security-Policy --------------------------------------------------------------

INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)(?![^>]*type=\"application/json\")[^>]*>", re.IGNORECASE)
INLINE_STYLE = re.compile(r"<style|\sstyle=\"|\son[a-z]+=\"", re.IGNORECASE)


def assert_strict_csp(response: Any) -> None:
    policy = response["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "style-src 'self'" in policy
    assert "frame-ancestors 'none'" in policy and "object-src 'none'" in policy
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy and "*" not in policy


def test_every_kind_of_response_carries_the_policy(
    client: Client, client_for: MakeClient, targets: dict[str, Target]
) -> None:
    admin = client_for("admin")
    viewer = client_for("viewer", GRANT)
    responses = [
        client.get(reverse("login")),  # a page
        client.get("/recall/"),  # a redirect to sign in
        admin.get("/static/dashboard/vendor/chartjs/chart.umd.min.js"),  # a static file
        admin.get("/static/dashboard/recall-charts.js"),
        admin.get(reverse("dashboard:browse") + q(scope="tenant=acme", bogus="1")),  # a 400
        viewer.get(reverse("dashboard:audit")),  # a 403
        viewer.get(reverse("dashboard:record", args=[targets["out"].record.id])),  # a 404
        admin.get(reverse("dashboard:export_csv") + q(scope="tenant=acme")),  # a stream
        admin.get(reverse("dashboard:recall") + q(scope="tenant=acme"), HTTP_HX_REQUEST="true"),  # a fragment
        admin.post(reverse("dashboard:sweep"), {"scope": "tenant=acme"}),  # a redirect after POST
    ]
    assert [r.status_code for r in responses] == [200, 302, 200, 200, 400, 403, 404, 200, 200, 303]
    for response in responses:
        assert_strict_csp(response)


@pytest.mark.parametrize("route", [name for name, spec in ROUTES.items() if spec[0] == "GET" and "export" not in name])
def test_pages_have_no_inline_script_or_style(route: str, client_for: MakeClient, targets: dict[str, Target]) -> None:
    html = client_for("admin").get(ROUTES[route][1](targets["in"])).content.decode()
    assert INLINE_SCRIPT.search(html) is None, INLINE_SCRIPT.search(html)
    assert INLINE_STYLE.search(html) is None, INLINE_STYLE.search(html)


def test_the_recall_page_loads_its_scripts_from_static(client_for: MakeClient, demo_store: InMemoryMemoryStore) -> None:
    html = client_for("admin").get(reverse("dashboard:recall") + q(scope="tenant=acme")).content.decode()
    assert '<script src="/static/dashboard/vendor/chartjs/chart.umd.min.js" defer></script>' in html
    assert '<script id="recall-series" type="application/json">' in html
    assert "cdn" not in html.lower() and "https://" not in html


# --- production settings ------------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]


def prod_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "MEMORY_STORE", "DASHBOARD_"))}
    env.update(
        DJANGO_SETTINGS_MODULE="memory_admin.dashboard.settings.prod",
        DJANGO_SECRET_KEY="prod-test-" + "k" * 60,
        DJANGO_ALLOWED_HOSTS="memory.example.org",
        DASHBOARD_DB_PATH=str(tmp_path / "dashboard.sqlite3"),
        MEMORY_STORE_URL=f"sqlite:///{tmp_path / 'memory.sqlite3'}",
        DJANGO_STATIC_ROOT=str(tmp_path / "static"),
        **extra,
    )
    return env


def run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, check=False, timeout=120)


def test_check_deploy_is_clean_in_production(tmp_path: Path) -> None:
    done = run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"], prod_env(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "System check identified no issues" in done.stdout


def test_collectstatic_hashes_the_vendored_chart_library(tmp_path: Path) -> None:
    done = run([sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"], prod_env(tmp_path))
    assert done.returncode == 0, done.stderr
    manifest = json.loads((tmp_path / "static" / "staticfiles.json").read_text())
    hashed = manifest["paths"]["dashboard/vendor/chartjs/chart.umd.min.js"]
    assert re.fullmatch(r"dashboard/vendor/chartjs/chart\.umd\.min\.[0-9a-f]{12}\.js", hashed)
    assert (tmp_path / "static" / (hashed + ".gz")).exists()  # whitenoise compresses it too


COOKIES = """
import json, django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
call_command("collectstatic", interactive=False, verbosity=0)  # pages name hashed static files
from django.contrib.auth.models import User
User.objects.create_user("pat", password="pw-for-tests-only")
from django.http import StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.test import Client
client = Client(HTTP_HOST="memory.example.org")
login = client.get("/accounts/login/", secure=True)
signed_in = client.post("/accounts/login/", {"username": "pat", "password": "pw-for-tests-only"}, secure=True)
plain = Client(HTTP_HOST="memory.example.org").get("/accounts/login/")
def flags(morsel):
    return {"secure": bool(morsel["secure"]), "httponly": bool(morsel["httponly"]), "samesite": morsel["samesite"]}
print(json.dumps({
    "csrf": flags(login.cookies["csrftoken"]),
    "session": flags(signed_in.cookies["sessionid"]),
    "signed_in": signed_in.status_code,
    "plain": [plain.status_code, plain.get("Location", "")],
    "hsts": login.get("Strict-Transport-Security", ""),
    "csp": login.get("Content-Security-Policy", ""),
}))
"""


def test_production_cookies_are_secure(tmp_path: Path) -> None:
    found = report(run([sys.executable, "-c", COOKIES], prod_env(tmp_path)))
    assert found["csrf"] == {"secure": True, "httponly": True, "samesite": "Lax"}
    assert found["session"] == {"secure": True, "httponly": True, "samesite": "Lax"}
    assert found["signed_in"] == 302
    assert found["plain"] == [301, "https://memory.example.org/accounts/login/"]  # plain HTTP is redirected
    assert "max-age=31536000" in found["hsts"] and "includeSubDomains" in found["hsts"]
    assert "script-src 'self'" in found["csp"]


def test_a_refusal_is_a_readable_page_or_fragment(client_for: MakeClient, targets: dict[str, Target]) -> None:
    viewer = client_for("viewer", GRANT)
    url = reverse("dashboard:invalidate", args=[targets["in"].record.id])
    page = viewer.get(url)
    fragment = viewer.get(url, HTTP_HX_REQUEST="true")
    assert page.status_code == fragment.status_code == 403
    assert "<html" in page.content.decode() and "Your role does not allow this" in page.content.decode()
    assert "curate_memory" not in page.content.decode()  # the ability in words, not its codename
    assert "needs the curator role" in page.content.decode()
    # the fragment goes to the page's error region, never over the region that asked
    assert fragment.content.decode().lstrip().startswith('<section class="card error-page inline" id="error"')
    assert fragment["HX-Retarget"] == "#htmx-error" and fragment["HX-Reswap"] == "innerHTML"
