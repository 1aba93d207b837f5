"""Export of any filtered browse view as JSON Lines and CSV: confined to the grants,
streamed page by page, spreadsheet-safe."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from django.http import StreamingHttpResponse
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from django.utils.http import urlencode

from memory_admin.dashboard.formats import csv_row, neutralise
from memory_admin.dashboard.models import AuditEntry
from memory_admin.records import MemoryRecord
from memory_admin.store import InMemoryMemoryStore, RecordListQuery
from tests.dashboard.conftest import MakeClient, find

pytestmark = pytest.mark.django_db


def export(client: Client, fmt: str = "jsonl", **params: str) -> tuple[int, str, Any]:
    response = client.get(reverse(f"dashboard:export_{fmt}") + "?" + urlencode(params, doseq=True))
    if isinstance(response, StreamingHttpResponse):
        return response.status_code, b"".join(response.streaming_content).decode(), response  # type: ignore[arg-type]
    return response.status_code, response.content.decode(), response


def ids_in(jsonl: str) -> list[str]:
    return [json.loads(line)["id"] for line in jsonl.splitlines()]


def listing(store: InMemoryMemoryStore, **search: Any) -> list[MemoryRecord]:
    query = RecordListQuery.model_validate({"search": {"limit": 1000, **search}, "include_expired": False})
    return list(store.iter_records(query))


@pytest.fixture
def admin(client_for: MakeClient, demo_store: InMemoryMemoryStore) -> Client:
    return client_for("admin")


def test_jsonl_is_every_record_of_the_view(admin: Client, demo_store: InMemoryMemoryStore) -> None:
    status, body, response = export(admin, scope="tenant=acme")
    assert status == 200 and response["Content-Type"].startswith("application/x-ndjson")
    assert response["Content-Disposition"].startswith('attachment; filename="memory-tenant-acme-')
    expected = [r.id for r in listing(demo_store, scope={"tenant": "acme"})]
    assert ids_in(body) == expected and len(expected) > 25  # more than one browser page
    first = MemoryRecord.model_validate_json(body.splitlines()[0])
    assert first == demo_store.get(first.id)  # every field, as stored


def test_filters_are_the_browsers(admin: Client, demo_store: InMemoryMemoryStore) -> None:
    _, body, _ = export(admin, scope="tenant=acme", kind=["preference", "profile"], invalidated="1", after="r1.1")
    expected = listing(demo_store, scope={"tenant": "acme"}, kinds=["preference", "profile"], include_invalidated=True)
    assert ids_in(body) == [r.id for r in expected]  # the cursor is ignored: an export starts at the top
    _, body, _ = export(admin, scope="tenant=acme", q="aisle")
    assert {json.loads(line)["content"] for line in body.splitlines()} >= {
        find(demo_store, "tenant=acme,user=dana", "aisle seats on every flight").content
    }
    _, expired, _ = export(admin, scope="tenant=acme", expired="1")
    assert "Dana is in Berlin" in expired and "Dana is in Berlin" not in export(admin, scope="tenant=acme")[1]


def test_export_is_confined_to_the_grant(client_for: MakeClient, demo_store: InMemoryMemoryStore) -> None:
    dana = client_for("viewer", "tenant=acme,user=dana")
    status, body, _ = export(dana, scope="tenant=acme")  # narrowed to the grant, as browse does
    scopes = {tuple(sorted(json.loads(line)["scope"].items())) for line in body.splitlines()}
    assert status == 200 and scopes and all(("user", "dana") in scope for scope in scopes)
    _, visible, _ = export(dana, scope="tenant=acme,user=dana", match="visible")
    assert "Acme freezes production deploys" not in visible  # shared, but outside a user grant
    assert export(dana, scope="tenant=globex")[0] == 404
    assert export(dana)[0] == 200  # the one grant is the default scope


def test_csv_cells_cannot_become_formulas(admin: Client, demo_store: InMemoryMemoryStore) -> None:
    nasty = ['=HYPERLINK("http://evil","x")', "+1 555 0100", "-2+3", "@SUM(A1:A9)"]
    demo_store.write(
        [
            {
                "scope": {"tenant": "acme", "user": "eve"},
                "kind": "fact",
                "content": text,
                "provenance": {"author": "=cmd"},
            }
            for text in nasty
        ]
    )
    status, body, response = export(admin, "csv", scope="tenant=acme,user=eve")
    assert status == 200 and response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(body)))
    assert sorted(row["content"] for row in rows) == sorted("'" + text for text in nasty)
    assert {row["author"] for row in rows} == {"'=cmd"}
    for row in rows:
        assert not any(cell.startswith(("=", "+", "-", "@", "\t")) for cell in row.values())


@pytest.mark.parametrize("start", ["＝", "＋", "－", "＠", "﹦", "﹢"])
def test_a_fullwidth_or_small_formula_start_is_neutralised_too(start: str) -> None:
    assert neutralise(f'{start}HYPERLINK("http://evil")') == f'\'{start}HYPERLINK("http://evil")'


def test_neutralise_leaves_ordinary_text_alone() -> None:
    assert neutralise("Dana drinks tea.") == "Dana drinks tea."
    assert neutralise("2026-01-05T09:00:00+00:00") == "2026-01-05T09:00:00+00:00"
    assert neutralise("=1+1") == "'=1+1" and neutralise("\tx") == "'\tx" and neutralise("") == ""


def test_csv_has_a_header_and_every_column(admin: Client, demo_store: InMemoryMemoryStore) -> None:
    _, body, _ = export(admin, "csv", scope="tenant=acme,user=dana", key="drink", invalidated="1")
    rows = list(csv.DictReader(io.StringIO(body)))
    assert len(rows) == 4 and {row["key"] for row in rows} == {"drink"}
    newest = find(demo_store, "tenant=acme,user=dana", "green tea")
    row = next(r for r in rows if r["id"] == newest.id)
    assert row == dict(zip(rows[0].keys(), csv_row(newest), strict=True))
    assert row["scope"] == "tenant=acme,user=dana" and row["supersedes"] and row["invalid_at"] == ""


def test_export_streams_page_by_page(
    admin: Client, demo_store: InMemoryMemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    demo_store.write(
        [
            {"scope": {"tenant": "bulk"}, "kind": "fact", "content": f"Bulk fact {i}.", "provenance": {"source": "t"}}
            for i in range(2100)
        ]
    )
    pages: list[int] = []
    original = demo_store.list_records

    def counted(query: RecordListQuery) -> Any:
        pages.append(query.search.limit)
        return original(query)

    monkeypatch.setattr(demo_store, "list_records", counted)
    response = admin.get(reverse("dashboard:export_jsonl") + "?scope=tenant%3Dbulk")
    assert isinstance(response, StreamingHttpResponse)
    chunks: Iterator[bytes] = iter(response.streaming_content)  # type: ignore[arg-type]
    first = next(chunks)
    assert len(pages) == 1 and pages[0] == 500  # one page read so far, not 2,100 records
    assert first.count(b"\n") == 200
    rest = b"".join(chunks)
    assert (first + rest).count(b"\n") == 2100 and len(pages) == 5
    entry = AuditEntry.objects.get(action="export")
    assert entry.outcome == "done" and entry.counts == {"format": "jsonl", "exports": 1, "records": 2100}


def test_an_abandoned_download_is_audited(
    admin: Client, demo_store: InMemoryMemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memory_admin.dashboard import formats as exporting

    monkeypatch.setattr(exporting, "CHUNK_RECORDS", 5)
    response = admin.get(reverse("dashboard:export_csv") + "?scope=tenant%3Dacme")
    chunks = iter(response.streaming_content)  # type: ignore[attr-defined]
    next(chunks)
    response.close()
    entry = AuditEntry.objects.get(action="export")
    assert entry.outcome == "failed" and "stopped after" in entry.error


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"scope": "tenant=acme", "bogus": "1"}, "Unknown parameter"),
        ({"scope": "user=dana"}, "tenant"),
        ({"scope": "tenant=acme", "as_of": "last tuesday"}, "as_of"),
    ],
)
def test_bad_parameters_are_a_readable_400(admin: Client, params: dict[str, str], message: str) -> None:
    status, body, _ = export(admin, **params)
    assert status == 400 and message in body and "That export is not valid" in body
    assert not AuditEntry.objects.exists()


def test_several_grants_need_a_scope(client_for: MakeClient, demo_store: InMemoryMemoryStore) -> None:
    client = client_for("viewer", "tenant=acme,user=dana", "tenant=acme,user=ravi")
    status, body, _ = export(client)
    assert status == 400 and "Pick a scope to export" in body
    status, body, _ = export(client, scope="tenant=acme")
    assert status == 400 and "tenant=acme,user=dana" in body and "tenant=acme,user=ravi" in body


def test_the_browser_links_to_its_export(admin: Client) -> None:
    html = admin.get(reverse("dashboard:browse") + "?scope=tenant%3Dacme&kind=fact&after=r1.1").content.decode()
    assert 'href="/export.jsonl?scope=tenant%3Dacme&amp;kind=fact"' in html
    assert 'href="/export.csv?scope=tenant%3Dacme&amp;kind=fact"' in html


def test_exports_are_coalesced_per_user_scope_and_minute(
    client_for: MakeClient, demo_store: InMemoryMemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memory_admin.dashboard import audit_log as audit

    moment = timezone.now().replace(second=10)  # well inside one minute, however slow the run
    monkeypatch.setattr(audit, "timezone", SimpleNamespace(now=lambda: moment))
    admin, other = client_for("admin"), client_for("admin")
    for _ in range(5):  # reloading an export does not flood the log
        assert export(admin, scope="tenant=acme")[0] == 200
    assert export(admin, "csv", scope="tenant=acme")[0] == 200
    [entry] = AuditEntry.objects.filter(action="export")
    assert entry.counts["exports"] == 6 and entry.counts["format"] == "csv, jsonl" and entry.outcome == "done"
    assert entry.counts["records"] == len(listing(demo_store, scope={"tenant": "acme"}))
    assert "6 downloads" in admin.get(reverse("dashboard:audit")).content.decode()
    export(admin, scope="tenant=globex")  # another scope
    export(other, scope="tenant=acme")  # another user
    assert AuditEntry.objects.filter(action="export").count() == 3
    # a minute later, a new entry
    AuditEntry.objects.filter(pk=entry.pk).update(at=entry.at - timedelta(minutes=1))
    export(admin, scope="tenant=acme")
    assert AuditEntry.objects.filter(action="export").count() == 4
    assert AuditEntry.objects.get(pk=entry.pk).counts["exports"] == 6


def test_the_csv_columns_are_the_documented_ones_supports_included() -> None:
    from pathlib import Path

    from memory_admin.dashboard.formats import CSV_COLUMNS
    from memory_admin.records import Provenance

    documented = Path(__file__).resolve().parents[2].joinpath("docs", "dashboard.md").read_text()
    table = documented[documented.index("| column | holds |") :].split("\n\n")[0]
    named = [name for row in table.splitlines()[2:] for name in re.findall(r"`(\w+)`", row.split("|")[1])]
    assert sorted(named) == sorted(name for name, _ in CSV_COLUMNS)
    record = MemoryRecord.model_validate(
        {
            **_record_fields(),
            "supports": [Provenance(source="chat", conversation_id="c-9"), Provenance(author="ravi")],
        }
    )
    cell = dict(zip([name for name, _ in CSV_COLUMNS], csv_row(record), strict=True))["supports"]
    assert json.loads(cell) == [{"source": "chat", "conversation_id": "c-9"}, {"author": "ravi"}]


def _record_fields() -> dict[str, object]:
    from datetime import UTC, datetime

    now = datetime(2026, 1, 5, tzinfo=UTC)
    return {
        "id": "mem_1",
        "scope": {"tenant": "acme"},
        "kind": "fact",
        "content": "Corroborated twice.",
        "provenance": {"source": "chat"},
        "created_at": now,
        "updated_at": now,
        "observed_at": now,
    }
