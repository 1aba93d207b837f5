"""Forgetting through the dashboard is provable: after an erase (or a delete) done with
the dashboard's own pages, a canary word is gone from the SQLite memory file and its
WAL — records, the full-text index and the event log alike — while a neighbour's
canary, one scope over, is still there."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse
from django.utils.http import urlencode

from memory_admin.dashboard.models import AuditEntry
from memory_admin.recall import assemble_recall
from memory_admin.store import SqliteMemoryStore
from tests.dashboard.conftest import MakeClient

pytestmark = pytest.mark.django_db

CANARY = "zqxcanary4417"  # one token, as the full-text index stores it
NEIGHBOUR = "zqxneighbour8802"
U1 = {"tenant": "t", "user": "u1"}
U10 = {"tenant": "t", "user": "u10"}  # starts like u1: erasure must stop exactly at u1


@pytest.fixture
def store(sqlite_store: SqliteMemoryStore) -> SqliteMemoryStore:
    """The dashboard's configured store: a SQLite file whose bytes the tests read."""
    return sqlite_store


def file_bytes(path: Path) -> bytes:
    """The memory file and every file SQLite keeps beside it."""
    return b"".join(
        p.read_bytes()
        for p in (path, *(Path(f"{path}{suffix}") for suffix in ("-wal", "-shm", "-journal", "-events", "-events-wal")))
        if p.exists()
    )


def remember(store: SqliteMemoryStore, scope: dict[str, str], word: str) -> list[str]:
    """Records, a correction chain, an invalidated record, an agent's record and events,
    every one carrying ``word``."""
    provenance = {"source": "chat", "conversation_id": f"c-{word}"}
    first = store.write(
        [
            {
                "scope": scope,
                "kind": "preference",
                "key": "secret",
                "content": f"The code is {word} one.",
                "provenance": provenance,
            }
        ]
    )
    store.write(
        [
            {
                "scope": scope,
                "kind": "preference",
                "key": "secret",
                "content": f"The code is {word} two.",
                "provenance": provenance,
            }
        ]
    )
    [retired] = store.write(
        [{"scope": scope, "kind": "fact", "content": f"Retired {word} fact.", "tags": [word], "provenance": provenance}]
    )
    store.invalidate(retired.id, f"wrong about {word}")
    agent = {**scope, "agent": "planner"}
    store.write(
        [{"scope": agent, "kind": "episode", "content": f"The planner booked {word}.", "provenance": provenance}]
    )
    store.search({"scope": scope, "query": f"what is {word}?"})  # a search event with the word in its preview
    assemble_recall(store, scope, f"Tell me about {word}")  # a recall event, likewise
    return [first[0].id, retired.id]


def test_erase_through_the_dashboard_leaves_no_bytes(
    store: SqliteMemoryStore, tmp_path: Path, client_for: MakeClient
) -> None:
    path = tmp_path / "memory.sqlite3"
    remember(store, U1, CANARY)
    remember(store, U10, NEIGHBOUR)
    before = file_bytes(path)
    assert CANARY.encode() in before and NEIGHBOUR.encode() in before  # the test can see them
    officer: Client = client_for("privacy-officer", "tenant=t")
    scope = "tenant=t,user=u1"
    preview = officer.get(reverse("dashboard:erase") + "?" + urlencode({"scope": scope})).content.decode()
    assert "<code>tenant=t,agent=planner,user=u1</code>" in preview and "user=u10" not in preview
    assert officer.get(reverse("dashboard:erase_confirm") + "?" + urlencode({"scope": scope})).status_code == 200
    done = officer.post(reverse("dashboard:erase_run"), {"scope": scope, "confirm_scope": scope, "reason": "request 7"})
    assert done.status_code == 303
    receipt = officer.get(done["Location"]).content.decode()
    assert "4 records" in receipt and CANARY not in receipt

    after = file_bytes(path)
    assert CANARY.encode() not in after, "erased content survives in the memory file, its WAL or its index"
    assert NEIGHBOUR.encode() in after, "the erasure went past the scope it was given"
    # (looking must not log the canary again: this search emits no event)
    assert (
        store.search({"scope": {"tenant": "t"}, "query": CANARY, "include_invalidated": True}, emit_event=False) == []
    )
    leftover = [
        s
        for s in store.query_events({"limit": 10_000, "include_previews": True})
        if CANARY in s.event.model_dump_json()
    ]
    assert leftover == []
    assert [v for v in AuditEntry.objects.values() if CANARY in repr(v)] == []


def test_delete_through_the_dashboard_leaves_no_bytes(
    store: SqliteMemoryStore, tmp_path: Path, client_for: MakeClient
) -> None:
    path = tmp_path / "memory.sqlite3"
    first_id, _retired = remember(store, U1, "zqxonlyfirst")
    store.write([{"scope": U1, "kind": "fact", "content": "Unrelated and kept.", "provenance": {"source": "s"}}])
    [record] = store.write(
        [{"scope": U1, "kind": "fact", "content": f"Delete me {CANARY}.", "provenance": {"source": "s"}}]
    )
    assert CANARY.encode() in file_bytes(path)
    officer: Client = client_for("privacy-officer", "tenant=t")
    done = officer.post(reverse("dashboard:delete_run", args=[record.id]), {"confirm_id": record.id, "reason": "asked"})
    assert done.status_code == 303
    assert CANARY.encode() not in file_bytes(path)
    assert store.get(first_id) is not None  # only that record went


def test_a_delete_whose_scrub_is_pending_says_so_on_its_receipt(
    store: SqliteMemoryStore, tmp_path: Path, client_for: MakeClient
) -> None:
    import sqlite3

    from django.core.management import call_command

    path = tmp_path / "memory.sqlite3"
    [record] = store.write(
        [{"scope": U1, "kind": "fact", "content": f"Delete me {CANARY}.", "provenance": {"source": "s"}}]
    )
    store.scrub()
    reader = sqlite3.connect(path)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM memory_records").fetchone()  # an agent mid-read, holding its snapshot
    officer: Client = client_for("privacy-officer", "tenant=t")
    done = officer.post(reverse("dashboard:delete_run", args=[record.id]), {"confirm_id": record.id, "reason": "asked"})
    assert done.status_code == 303
    receipt = officer.get(done["Location"]).content.decode()
    assert "Scrub pending." in receipt and "memory-admin scrub" in receipt
    assert store.get(record.id) is None and CANARY.encode() in file_bytes(path)
    reader.rollback()
    reader.close()
    call_command("memory_scrub", "--store", f"sqlite:///{path}")
    assert CANARY.encode() not in file_bytes(path)
