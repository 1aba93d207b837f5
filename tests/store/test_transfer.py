from __future__ import annotations

from datetime import timedelta
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from memory_admin.conformance import FakeClock
from memory_admin.conformance.base import ACME, OTHER, U1, U2, rec
from memory_admin.errors import MemoryConflictError, MemoryValidationError
from memory_admin.store import BaseMemoryStore, SqliteMemoryStore, open_store
from memory_admin.store.protocol import RecordListQuery
from memory_admin.store.transfer import copy_store
from tests.support.stores import backends, open_backend


def populate(store: BaseMemoryStore, clock: FakeClock) -> None:
    """Chains with a tombstone, a batch tie across scopes, invalidated and expired
    records, two tenants, and events of every kind the store writes itself."""
    for n in range(4):
        store.write([rec(f"seat v{n}", kind="preference", key="seat")])
    middle = store.search({"scope": U1, "keys": ["seat"], "include_invalidated": True, "limit": 10})[2]
    store.delete(middle.record.id)
    store.write([rec(f"tie {n}", U1 if n % 2 else U2) for n in range(7)])
    store.write([rec("short-lived", expires_at=(clock.peek() + timedelta(seconds=1)).isoformat())])
    store.invalidate(store.write([rec("retired", tags=["old"])])[0].id, "wrong")
    store.write([rec("tenant-wide note", ACME), rec("elsewhere", OTHER)])
    store.search({"scope": U1, "query": "seat"})
    clock.advance(seconds=5)


def snapshot(store: BaseMemoryStore) -> dict[str, Any]:
    everything = {}
    for tenant in ("acme", "globex"):
        listing = RecordListQuery(
            search={"scope": {"tenant": tenant}, "include_invalidated": True}, include_expired=True
        )
        records = list(store.iter_records(listing, page_size=4))
        everything[tenant] = {
            "records": records,
            "order": [
                h.record.id
                for h in store.search(
                    {"scope": {"tenant": tenant}, "include_invalidated": True, "limit": 100}, emit_event=False
                )
            ],
            "chains": {r.id: [(link.id, link.record) for link in store.chain(r.id)] for r in records if r.key},
            # the match set: rank order differs between backends' BM25 statistics by design
            "matched": sorted(
                h.record.id
                for h in store.search({"scope": {"tenant": tenant}, "query": "seat tie note"}, emit_event=False)
            ),
        }
    everything["events"] = store.query_events({"include_previews": True})
    return everything


@pytest.fixture
def source(tmp_path: Path) -> SqliteMemoryStore:
    clock = FakeClock()
    store = SqliteMemoryStore(tmp_path / "source.sqlite3", clock=clock)
    populate(store, clock)
    return store


@pytest.fixture(params=backends("memory", "sqlite", "postgres"))
def target(request: pytest.FixtureRequest) -> Any:
    store = open_backend(request.param, request)
    yield store
    store.close()


def test_copy_preserves_ids_times_chains_order_and_events(source: SqliteMemoryStore, target: BaseMemoryStore) -> None:
    seen: list[int] = []
    report = copy_store(source, target, batch_size=3, progress=lambda r: seen.append(r.records))
    before, after = snapshot(source), snapshot(target)
    assert report.records == len(before["acme"]["records"]) + len(before["globex"]["records"]) == 14
    assert (report.tenants, report.skipped, report.events) == (2, 0, len(before["events"]))
    assert seen == sorted(seen) and len(seen) > 3, "progress after every batch"
    assert after == before
    assert source.close() is None


def test_copy_refuses_a_store_in_use_unless_resuming(source: SqliteMemoryStore, target: BaseMemoryStore) -> None:
    copy_store(source, target)
    with pytest.raises(MemoryConflictError, match="already holds"):
        copy_store(source, target)
    again = copy_store(source, target, resume=True)
    assert (again.records, again.skipped, again.events) == (0, 14, 0)
    assert snapshot(target) == snapshot(source)


@pytest.mark.parametrize("size", [0, -5])
def test_copy_refuses_a_batch_size_below_one(source: SqliteMemoryStore, target: BaseMemoryStore, size: int) -> None:
    with pytest.raises(MemoryValidationError, match="batch_size is a positive integer"):
        copy_store(source, target, batch_size=size)
    copied = snapshot(target)  # refused before any copying
    assert copied["acme"]["records"] == copied["globex"]["records"] == []


@pytest.mark.postgres
def test_memory_copy_command_sqlite_to_postgres(source: SqliteMemoryStore, postgres_url: str) -> None:
    out = StringIO()
    call_command("memory_copy", "--from", f"sqlite:///{source.path}", "--to", postgres_url, stdout=out)
    assert "Copied 14 records of 2 tenants" in out.getvalue()
    assert "postgres@" not in out.getvalue(), "the target URL is printed without its credentials"
    with open_store(postgres_url) as copied:
        assert snapshot(copied) == snapshot(source)
    with pytest.raises(CommandError, match="already holds"):
        call_command("memory_copy", "--from", f"sqlite:///{source.path}", "--to", postgres_url, stdout=StringIO())


def test_a_copy_carries_the_learnings(tmp_path: Path, target: BaseMemoryStore) -> None:
    """Promotion histories (promoted, rolled back, waiting for review), the compositions
    registered and when: the copy composes the same agent, now and as of the past."""
    from memory_admin.learning import compose, promote_candidates
    from memory_admin.learning.review import rollback
    from tests.support.compositions import background, example_composition, judgment

    clock = FakeClock()
    source = SqliteMemoryStore(tmp_path / "learnt.sqlite3", clock=clock)
    composition = example_composition()
    kept, rolled, guarded, _ = source.write(
        [
            rec("Deploys need a second reviewer.", target=background("conventions", "reviews")),
            rec("Staging resets nightly.", target=background("project_context", "staging")),
            rec("Never share another customer's ticket.", target=judgment("triage", "constraints")),
            rec("An ordinary fact."),
        ]
    )
    promote_candidates(source, U1, composition)
    promoted_at = clock.advance(hours=1)
    clock.advance(hours=1)
    rollback(source, rolled.id, actor="lena", reason="it resets weekly now")
    report = copy_store(source, target)
    assert report.histories == 3
    for record in (kept, rolled, guarded):
        assert target.promotion_history(record.id) == source.promotion_history(record.id)
    assert target.compositions(ACME) == source.compositions(ACME)
    assert compose(target, U1).prompt == compose(source, U1).prompt
    assert compose(target, U1, as_of=promoted_at).prompt == compose(source, U1, as_of=promoted_at).prompt
    again = copy_store(source, target, resume=True)
    assert again.histories == 3 and target.compositions(ACME) == source.compositions(ACME), (
        "a resumed copy adds nothing"
    )
    source.close()
