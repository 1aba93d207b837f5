"""The audit log as a file: the log's own filters, the viewer's grants, every page, and
the download noted in the log like a memory export (one entry per user, scope and
minute, counted)."""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from django.utils.http import urlencode

from memory_admin.dashboard import audit_log as audit
from memory_admin.dashboard.models import AuditEntry
from memory_admin.scope import scope_json
from tests.dashboard.conftest import MakeClient

pytestmark = pytest.mark.django_db

Action = AuditEntry.Action


def entry(actor: str, action: str, scope: dict[str, str], *, reason: str = "", minutes: int = 0) -> AuditEntry:
    return AuditEntry.objects.create(
        at=timezone.now() - timedelta(minutes=minutes),
        actor=actor,
        action=action,
        tenant=scope["tenant"],
        scope_json=scope_json(scope),
        reason=reason,
        outcome=AuditEntry.Outcome.DONE,
    )


@pytest.fixture
def log() -> dict[str, AuditEntry]:
    return {
        "cora-dana": entry("cora", Action.INVALIDATE, {"tenant": "acme", "user": "dana"}, reason="=cmd()", minutes=30),
        "cora-ravi": entry("cora", Action.CORRECT, {"tenant": "acme", "user": "ravi"}, minutes=20),
        "pia-dana": entry("pia", Action.DELETE, {"tenant": "acme", "user": "dana"}, minutes=10),
        "globex": entry("gus", Action.INVALIDATE, {"tenant": "globex"}, minutes=5),
    }


def download(client: Client, fmt: str, **params: str) -> tuple[int, str]:
    url = reverse(f"dashboard:audit_export_{fmt}") + ("?" + urlencode(params) if params else "")
    response = client.get(url)
    body = b"".join(response.streaming_content).decode() if response.streaming else response.content.decode()
    return response.status_code, body


def test_the_export_keeps_the_log_filters_and_the_grants(client_for: MakeClient, log: dict[str, AuditEntry]) -> None:
    curator = client_for("curator", "tenant=acme")
    status, body = download(curator, "csv", action="invalidate")
    rows = list(csv.DictReader(io.StringIO(body)))
    assert status == 200 and [int(row["id"]) for row in rows] == [log["cora-dana"].pk]  # not globex's
    assert rows[0]["scope"] == "tenant=acme,user=dana" and rows[0]["reason"] == "'=cmd()"  # inert in a spreadsheet
    _, body = download(curator, "jsonl", scope="tenant=acme,user=dana")
    objects = [json.loads(line) for line in body.splitlines()]
    assert [o["id"] for o in objects] == [log["pia-dana"].pk, log["cora-dana"].pk]  # newest first
    assert objects[0]["scope"] == {"tenant": "acme", "user": "dana"} and objects[0]["actor"] == "pia"
    _, body = download(
        curator, "csv", actor="cora", since=(timezone.now() - timedelta(minutes=25)).strftime("%Y-%m-%d %H:%M")
    )
    assert [int(row["id"]) for row in csv.DictReader(io.StringIO(body))] == [log["cora-ravi"].pk]


def test_an_export_is_itself_audited_and_coalesced(client_for: MakeClient, log: dict[str, AuditEntry]) -> None:
    admin = client_for("admin")
    _, body = download(admin, "csv")
    assert len(list(csv.DictReader(io.StringIO(body)))) == 4  # its own entry is not in the file
    download(admin, "jsonl")
    [noted] = AuditEntry.objects.filter(action=Action.EXPORT_AUDIT)
    assert noted.outcome == AuditEntry.Outcome.DONE and noted.scope == {} and noted.tenant == ""
    assert noted.counts == {"format": "csv, jsonl", "exports": 2, "entries": 5}  # the second saw the first
    download(admin, "csv", scope="tenant=acme")
    scoped = AuditEntry.objects.filter(action=Action.EXPORT_AUDIT).exclude(pk=noted.pk).get()
    assert scoped.scope == {"tenant": "acme"} and scoped.counts["entries"] == 3
    page = admin.get(reverse("dashboard:audit")).content.decode()
    assert "export the audit log" in page and "every tenant" in page
    assert 'href="/audit/export.csv"' in page
    filtered = admin.get(reverse("dashboard:audit") + "?action=delete&before=999999").content.decode()
    assert 'href="/audit/export.csv?action=delete"' in filtered  # the filters, not the page cursor


def test_an_export_refuses_what_the_log_refuses(client_for: MakeClient, log: dict[str, AuditEntry]) -> None:
    assert download(client_for("viewer", "tenant=acme"), "csv")[0] == 403
    status, body = download(client_for("curator", "tenant=acme"), "csv", scope="acme")
    assert status == 400 and "<nav" in body  # a styled page, not a stack trace
    assert download(client_for("curator", "tenant=acme"), "csv", scope="tenant=globex")[0] == 404
    status, body = download(client_for("curator", "tenant=acme", "tenant=globex"), "csv")
    assert status == 400 and "tenant=acme, tenant=globex" in body
    assert not AuditEntry.objects.filter(action=Action.EXPORT_AUDIT).exists()


def test_the_log_and_its_export_share_one_scan(client_for: MakeClient, log: dict[str, AuditEntry]) -> None:
    """The filtered log pages through the same scan as the unfiltered one (no second copy)."""
    curator = client_for("curator", "tenant=acme")
    page = curator.get(reverse("dashboard:audit") + "?actor=cora").content.decode()
    assert f'href="/audit/{log["cora-dana"].pk}/"' in page and f'href="/audit/{log["pia-dana"].pk}/"' not in page
    access = audit.Access(username="x", role=None, abilities=frozenset(), grants=({"tenant": "acme"},))
    shown, older = audit.entries_for(access, entries=AuditEntry.objects.filter(actor="cora"), limit=1)
    assert [e.pk for e in shown] == [log["cora-ravi"].pk] and older == log["cora-ravi"].pk
