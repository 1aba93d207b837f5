from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import subprocess
import threading
import time
import uuid
from collections import Counter
from datetime import timedelta
from typing import Any

import pytest

from tests.support.optional import needs_extra

pytest.importorskip("psycopg", reason=needs_extra("postgres"))

import psycopg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_admin.conformance import FakeClock, MemoryStoreConformance
from memory_admin.conformance.base import ACME, OTHER, U1, U2, rec
from memory_admin.conformance.base import contents as texts
from memory_admin.embed import Embedder
from memory_admin.errors import (
    MemoryConflictError,
    MemoryStoreError,
    MemoryValidationError,
    SchemaVersionError,
)
from memory_admin.store import FullMemoryStore, InMemoryMemoryStore, RecordListQuery, open_store
from memory_admin.store.postgres import MIGRATIONS, SCHEMA_VERSION, PostgresMemoryStore
from memory_admin.store.sql.rows import pair_token
from memory_admin.tokenize import TERMS_IDENTITY
from tests.postgres_cluster import start_cluster

pytestmark = pytest.mark.postgres


class TestPostgresStore(MemoryStoreConformance):
    @pytest.fixture(autouse=True)
    def _database(self, postgres_url: str) -> None:
        self.url = postgres_url

    CORRUPTIONS = (*MemoryStoreConformance.CORRUPTIONS, ("provenance", "{}"))

    def make_store(self, clock: FakeClock, *, embedder: Embedder | None = None) -> PostgresMemoryStore:
        return PostgresMemoryStore(self.url, clock=clock, embedder=embedder)

    def open_again(self, store: FullMemoryStore, *, embedder: Embedder | None = None) -> FullMemoryStore:
        return PostgresMemoryStore(self.url, embedder=embedder)

    def corrupt_row(self, store: FullMemoryStore, record_id: str, column: str, value: str) -> bool:
        _sql(self.url, f"UPDATE memory_records SET {column} = %s WHERE id = %s", [value, record_id])
        return True


def _sql(url: str, statement: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    with psycopg.connect(url, autocommit=True) as conn:
        cur = conn.execute(statement.encode(), params)
        return cur.fetchall() if cur.description is not None else []


# --- the migration ladder -----------------------------------------------------------

PROBE = "ALTER TABLE memory_records ADD COLUMN ladder_probe integer"


class _NewerCode(PostgresMemoryStore):
    """This code with one more migration than the released ladder."""

    def _migrate(self, migrations: Any = (*MIGRATIONS, PROBE)) -> None:
        super()._migrate(migrations)


def test_open_store_creates_the_schema(fresh_postgres_database: str) -> None:
    with open_store(fresh_postgres_database) as store:
        assert isinstance(store, PostgresMemoryStore)
        assert store.schema_version() == SCHEMA_VERSION
    with open_store(fresh_postgres_database) as again:  # reopening is a no-op
        assert again.schema_version() == SCHEMA_VERSION


def test_older_schema_migrates_in_place(fresh_postgres_database: str) -> None:
    with PostgresMemoryStore(fresh_postgres_database) as old:
        kept = old.write([rec("written by the older release")])[0]
    with _NewerCode(fresh_postgres_database) as new:
        assert new.schema_version() == SCHEMA_VERSION + 1
        assert new.get(kept.id) == kept
    assert _sql(fresh_postgres_database, "SELECT count(ladder_probe) FROM memory_records") == [(0,)]


def test_targeted_records_written_before_learnings_become_candidates(fresh_postgres_database: str) -> None:
    """A database from before promotion state (schema 6) migrates: its targeted records
    are candidates, born when they were written; its other records are none."""
    target = {"primitive": "background", "section": "conventions", "key": "deploys"}
    with PostgresMemoryStore(fresh_postgres_database) as store:
        plain, targeted = store.write([rec("a plain fact"), rec("Deploys freeze on Fridays.", target=target)])
    for table in (
        "memory_promotion_history",
        "memory_promotions",
        "memory_proposals",
        "memory_composition_uses",
        "memory_compositions",
    ):
        _sql(fresh_postgres_database, f"DROP TABLE {table}")
    _sql(fresh_postgres_database, "UPDATE memory_schema SET version = 6")
    with PostgresMemoryStore(fresh_postgres_database) as store:
        assert store.schema_version() == SCHEMA_VERSION
        assert store.promotion(plain.id) is None
        found = store.promotion(targeted.id)
        assert found is not None and (found.state, found.primitive, found.at) == (
            "candidate",
            "background",
            targeted.created_at,
        )
        store.promote(targeted.id, actor="lena", tier="auto")
        assert [r.id for r in store.promoted_records(U1)] == [targeted.id]


def test_newer_schema_is_refused_and_left_untouched(fresh_postgres_database: str) -> None:
    with _NewerCode(fresh_postgres_database) as new:
        new.write([rec("from the future")])
    with pytest.raises(SchemaVersionError) as info:
        PostgresMemoryStore(fresh_postgres_database)
    assert (info.value.found, info.value.supported) == (SCHEMA_VERSION + 1, SCHEMA_VERSION)
    assert "Upgrade memory_admin" in info.value.message
    assert _sql(fresh_postgres_database, "SELECT version FROM memory_schema") == [(SCHEMA_VERSION + 1,)]
    assert _sql(fresh_postgres_database, "SELECT content FROM memory_records") == [("from the future",)]


def test_a_database_indexed_under_another_stemmer_is_reindexed_when_opened(fresh_postgres_database: str) -> None:
    url = fresh_postgres_database
    with PostgresMemoryStore(url) as store:
        store.write([rec("Dana prefers aisle seats", observed_at="2023-05-08T10:00:00+00:00"), rec("a plain note")])
        store.write([rec("elsewhere entirely", U2)])
    indexed = "SELECT seq, tsv::text, n_tokens FROM memory_records ORDER BY seq"
    counted = "SELECT scope_id, n_tokens FROM memory_scopes ORDER BY scope_id"
    expected = (_sql(url, indexed), _sql(url, counted))
    # as an older release left it: unstemmed words and no date (hidden lexemes kept)
    _sql(
        url,
        "UPDATE memory_records SET n_tokens = 1, tsv = to_tsvector('simple', content) || array_to_tsvector("
        "ARRAY(SELECT u.lexeme FROM unnest(tsv) AS u WHERE starts_with(u.lexeme, ':')))",
    )
    _sql(url, "UPDATE memory_scopes SET n_tokens = 7")
    _sql(url, "UPDATE memory_terms_state SET identity = 'an older stemmer'")
    assert _sql(url, "SELECT count(*) FROM memory_records WHERE tsv @@ 'prefer'::tsquery") == [(0,)]
    assert (_sql(url, indexed), _sql(url, counted)) != expected
    with PostgresMemoryStore(url) as reopened:
        assert (_sql(url, indexed), _sql(url, counted)) == expected, "the terms and counts are this code's again"
        assert texts(reopened.search({"scope": U1, "query": "prefer May"})) == ["Dana prefers aisle seats"]
    assert _sql(url, "SELECT identity FROM memory_terms_state") == [(TERMS_IDENTITY,)]


@pytest.mark.parametrize("code", [PostgresMemoryStore, _NewerCode], ids=["fresh-database", "one-step-behind"])
def test_processes_starting_together_migrate_once(fresh_postgres_database: str, code: type) -> None:
    if code is _NewerCode:
        PostgresMemoryStore(fresh_postgres_database).close()
    start = threading.Barrier(6)
    opened: list[Any] = []
    failures: list[BaseException] = []

    def open_one() -> None:
        start.wait()
        try:
            opened.append(code(fresh_postgres_database, min_size=1, max_size=1))
        except BaseException as exc:  # surfaced below
            failures.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for store in opened:
        store.close()
    assert failures == []
    expected = SCHEMA_VERSION + (1 if code is _NewerCode else 0)
    assert _sql(fresh_postgres_database, "SELECT version FROM memory_schema") == [(expected,)]


# --- concurrency across processes ---------------------------------------------------

SLOTS = ("seat", "drink", "name")


def _contend(url: str, worker: int, rounds: int, start: Any, results: Any) -> None:
    """One writer process: key upserts, explicit supersedes of a shared chain head, and
    two-scope batches whose scope order differs between workers."""
    written = conflicts = 0
    failures: list[str] = []
    store: PostgresMemoryStore | None = None
    try:
        store = PostgresMemoryStore(url, min_size=1, max_size=1, persist_events=False)
        start.wait(timeout=120)
        for i in range(rounds):
            store.write([rec(f"w{worker} r{i}", kind="profile", key=SLOTS[(worker + i) % len(SLOTS)])])
            written += 1
            pair = [rec(f"w{worker} r{i} u1", U1, kind="preference", key="pair"), rec("u2", U2, key="pair")]
            store.write(pair if worker % 2 else pair[::-1])
            written += 2
            head = store.search({"scope": U1, "kinds": ["fact"], "keys": ["head"], "limit": 1})
            try:
                store.write([rec(f"w{worker} r{i} head", key="head", supersedes=head[0].record.id if head else None)])
                written += 1
            except MemoryConflictError:
                conflicts += 1  # another process superseded that head first: nothing written
    except Exception as exc:  # reported to the parent, which fails the test
        failures.append(f"{type(exc).__name__}: {exc}")
    finally:
        if store is not None:
            store.close()
        results.put({"written": written, "conflicts": conflicts, "failures": failures})


def test_processes_writing_and_superseding_at_once(postgres_url: str) -> None:
    workers, rounds = 4, 25
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(workers)
    results = context.Queue()
    processes = [
        context.Process(target=_contend, args=(postgres_url, n, rounds, start, results)) for n in range(workers)
    ]
    for process in processes:
        process.start()
    reports = [results.get(timeout=180) for _ in processes]
    for process in processes:
        process.join(timeout=60)
    assert [failure for report in reports for failure in report["failures"]] == []
    assert sum(report["conflicts"] for report in reports) > 0, "the explicit supersedes really raced"

    with PostgresMemoryStore(postgres_url) as store:
        stored = list(store.iter_records(_everything(), page_size=1000))
        assert len(stored) == sum(report["written"] for report in reports), "no write was lost"
        live = Counter(
            (tuple(sorted(r.scope.items())), r.kind, r.key) for r in stored if r.key and r.invalid_at is None
        )
        assert len(live) == len(SLOTS) + 3 and set(live.values()) == {1}, "one live record per key slot"
        by_id = {r.id: r for r in stored}
        successors = [r.superseded_by for r in stored if r.superseded_by]
        assert len(successors) == len(set(successors)), "no record has two successors"
        assert Counter(r.supersedes for r in stored if r.supersedes).most_common(1)[0][1] == 1
        for record in stored:
            if record.supersedes:
                assert by_id[record.supersedes].superseded_by == record.id, "links agree both ways"
        for holder in (r for r in stored if r.key and r.invalid_at is None):
            chain = store.chain(holder.id)
            same_slot = [r for r in stored if (r.scope, r.kind, r.key) == (holder.scope, holder.kind, holder.key)]
            assert len(chain) == len(same_slot), "each slot is one linear chain"


def _everything() -> Any:
    from memory_admin.store.protocol import RecordListQuery

    return RecordListQuery(search={"scope": ACME, "include_invalidated": True}, include_expired=True)


# --- what only this backend can get wrong -------------------------------------------


def test_find_corrupt_and_sweep_expired(postgres_url: str) -> None:
    clock = FakeClock()
    with PostgresMemoryStore(postgres_url, clock=clock) as store:
        soon = (clock.peek() + timedelta(seconds=1)).isoformat()
        store.write([rec(f"fine {n}") for n in range(5)])
        gone, kept = store.write([rec("brief", expires_at=soon), rec("elsewhere", U2, expires_at=soon)])
        bad = store.write([rec("will break", U2)])[0]
        _sql(postgres_url, "UPDATE memory_records SET provenance = '{}' WHERE id = %s", [bad.id])
        scan = store.find_corrupt()
        assert (scan.checked, scan.complete, [c.id for c in scan.corrupt]) == (8, True, [bad.id])
        assert store.find_corrupt(U1).corrupt == [] and store.find_corrupt(U1).checked == 6
        assert store.find_corrupt(max_rows=3).complete is False
        clock.advance(seconds=5)
        assert store.sweep_expired(U1) == 1
        assert store.get(gone.id) is None and store.get(kept.id) is not None


def test_a_forgetting_drops_the_records_built_in_this_process(postgres_url: str) -> None:
    with PostgresMemoryStore(postgres_url) as store:
        gone, _ = store.write([rec("Dana drinks tea"), rec("Mei drinks tea")])
        for _ in range(3):
            store.search({"scope": U1, "limit": 10})
        assert len(store._searcher.records) == 2
        store.delete(gone.id)
        assert len(store._searcher.records) == 0
        assert [hit.record.content for hit in store.search({"scope": U1, "query": "tea", "limit": 10})] == [
            "Mei drinks tea"
        ]


def test_user_text_cannot_spell_a_hidden_lexeme(postgres_url: str) -> None:
    with PostgresMemoryStore(postgres_url) as store:
        store.write([rec("plain note", {**U1, "agent": "planner"}, kind="episode")])
        for text in ("ag", ":ag", "kepisode", pair_token("tenant", "acme"), f":{pair_token('user', 'u1')}"):
            assert store.search({"scope": U1, "query": text}) == []
        assert len(store.search({"scope": U1, "query": "note"})) == 1


any_script = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc")) | st.sampled_from(list("  -_.'\"*:()ٵé東")),
    min_size=1,
    max_size=40,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(contents=st.lists(any_script, min_size=1, max_size=6), query=any_script)
def test_match_sets_equal_the_reference_for_any_script(postgres_url: str, contents: list[str], query: str) -> None:
    """The lexemes are tokenize()'s own, so parity holds beyond the Tier 2 corpus: any
    script, any punctuation, anything the server's parser would have split otherwise."""
    scope = {"tenant": "parity", "user": uuid.uuid4().hex}  # hypothesis reseeds random per example
    items = [rec(content, scope) for content in contents]
    reference = InMemoryMemoryStore(persist_events=False)
    try:
        reference.write(items)
    except MemoryValidationError:
        return  # blank or control-character content: both refuse it (the kit pins that)
    with PostgresMemoryStore(postgres_url, persist_events=False) as store:
        store.write(items)
        found = [
            sorted(h.record.content for h in backend.search({"scope": scope, "query": query, "limit": 100}))
            for backend in (store, reference)
        ]
    assert found[0] == found[1]


def test_tokens_beyond_the_lexeme_limit_match_exactly(postgres_url: str) -> None:
    long_word = "x" * 2500
    near_miss = "x" * 2499 + "y"
    with PostgresMemoryStore(postgres_url) as store:
        store.write([rec(f"starts {long_word} ends")])
        assert len(store.search({"scope": U1, "query": long_word})) == 1
        assert store.search({"scope": U1, "query": near_miss}) == []


def test_a_large_scope_ranks_its_rarest_token_first_and_a_common_one_by_its_newest_matches(postgres_url: str) -> None:
    with PostgresMemoryStore(postgres_url) as store:
        oldest = store.write([rec("common zebra note")])[0]
        for start in range(0, 1200, 400):
            store.write([rec(f"common note n{i}") for i in range(start, start + 400)])
        store.optimize()  # ANALYZE: PostgreSQL's statistics now list "common" as in every record
        search = {"scope": U1, "query": "zebra common", "limit": 4}
        first = store.list_records(RecordListQuery.model_validate({"search": search}))
        assert "common" in store._searcher.frequencies._shares, "the large-scope path ran"
        # the record holding the rare token leads; the rest weigh the same, so the newest follow
        assert first.hits[0].record.id == oldest.id
        assert texts(first.hits)[1:] == ["common note n1199", "common note n1198", "common note n1197"]
        second = store.list_records(RecordListQuery.model_validate({"search": search, "cursor": first.next_cursor}))
        assert texts(second.hits) == [f"common note n{i}" for i in range(1196, 1192, -1)]
        assert second.next_cursor is not None


def test_a_tenant_wide_search_over_many_scopes(postgres_url: str) -> None:
    with PostgresMemoryStore(postgres_url) as store:
        users = [{"tenant": "acme", "user": f"u{n}"} for n in range(20)]
        rare = store.write([rec("common rare", users[3])])[0]
        for batch in range(3):
            store.write([rec(f"common b{batch} {n}", user) for n, user in enumerate(users) for _ in range(10)])
        store.write([rec("common elsewhere", OTHER)])
        store.optimize()
        hits = store.search({"scope": ACME, "query": "rare common", "limit": 3})
        assert "common" in store._searcher.frequencies._shares, "the large-scope path ran"
        assert hits[0].record.id == rare.id
        assert texts(hits[1:]) == ["common b2 19", "common b2 19"]
        assert texts(store.search({"scope": ACME, "limit": 3})) == ["common b2 19"] * 3


def test_database_errors_become_typed_errors(fresh_postgres_database: str) -> None:
    with PostgresMemoryStore(fresh_postgres_database) as store:
        record = store.write([rec("x")])[0]
        with pytest.raises(MemoryValidationError):
            store.invalidate(record.id, "a nul \x00 byte")  # PostgreSQL text cannot hold NUL
        assert store.get(record.id).invalid_at is None
        _sql(fresh_postgres_database, "DROP TABLE memory_events")
        with pytest.raises(MemoryStoreError, match="Restore it from a backup"):
            store.query_events({})


def test_unreachable_server_is_a_store_error_without_credentials() -> None:
    url = "postgresql://someone:s3cret@/nowhere?host=/nonexistent-socket-dir&port=1"
    with pytest.raises(MemoryStoreError) as info:
        PostgresMemoryStore(url, connect_timeout=1)
    assert not isinstance(info.value, psycopg.Error)
    assert "s3cret" not in str(info.value) and "someone" not in str(info.value)


def test_optimize_refreshes_planner_statistics(postgres_url: str) -> None:
    with PostgresMemoryStore(postgres_url) as store:
        store.write([rec(f"note {n}") for n in range(50)])
        store.optimize()
        assert _sql(postgres_url, "SELECT reltuples FROM pg_class WHERE relname = 'memory_records'") == [(50.0,)]
        assert len(store.search({"scope": U1, "query": "note", "limit": 100})) == 50


def test_the_event_log_commits_on_a_connection_of_its_own(postgres_url: str) -> None:
    with PostgresMemoryStore(postgres_url, event_flush_interval=60) as store:
        store.write([rec("a note")])
        for _ in range(20):
            store.search({"scope": U1, "query": "note"})
        agents = store._pool.get_stats()["requests_num"]
        store.flush_events()
        assert store._pool.get_stats()["requests_num"] == agents, "no batch borrows from the agents' pool"
        assert store._log_pool is not None and store._log_pool.get_stats()["requests_num"] >= 1
        assert len(store.query_events({"types": ["agent.memory.search"]})) == 20
        assert store._pool.get_stats()["pool_size"] == 1, "a one-thread agent keeps one connection"
    assert store._log_pool is None, "closed with the store"


def test_a_batch_waits_for_a_forgetting_in_progress_and_then_sees_its_mark(postgres_url: str) -> None:
    with PostgresMemoryStore(postgres_url, event_flush_interval=60) as store:
        store.write([rec("Mei eats at Vlondel", U2)])
        store.search({"scope": U2, "query": "Vlondel"})  # its event waits in the buffer
        with psycopg.connect(postgres_url) as forgetting:  # another process erasing, midway
            forgetting.execute("LOCK TABLE memory_forgetting IN ROW EXCLUSIVE MODE")
            flushing = threading.Thread(target=store.flush_events)
            flushing.start()
            flushing.join(1.0)
            assert flushing.is_alive(), "the batch waits for the forgetting that holds the lock"
            forgetting.execute(
                "INSERT INTO memory_forgetting (tenant, at) VALUES ('acme', now() + interval '1 minute')"
            )
            forgetting.commit()
            flushing.join(10)
        assert not flushing.is_alive()
        assert store.query_events({}) == [], "and then withholds the write's event and the search's"
        assert store.event_log_stats().withheld == 2


def test_async_twins_work_across_event_loops(postgres_url: str) -> None:
    store = PostgresMemoryStore(postgres_url)
    first = asyncio.run(store.awrite([rec("from loop one")]))[0]
    assert asyncio.run(store.aget(first.id)) == first  # a second loop gets its own pool
    assert [h.record.id for h in asyncio.run(store.asearch({"scope": U1, "query": "loop"}))] == [first.id]
    store.close()
    with pytest.raises(MemoryStoreError, match="closed"):
        store.get(first.id)


def test_successive_event_loops_leave_no_connection_behind(postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # a busy turn's connection still being made at shutdown is cut off, and psycopg_pool
    # logs it; the test run keeps every log record, and that one the half-made connection
    monkeypatch.setattr(logging.getLogger("psycopg.pool"), "disabled", True)
    name = f"memory_admin_loops_{uuid.uuid4().hex[:8]}"  # this store's connections, told apart on the server
    url = f"{postgres_url}{'&' if '?' in postgres_url else '?'}application_name={name}"

    def connections(settle_at: int) -> int:
        """The store's connections on the server, once they are down to ``settle_at`` (a
        closed connection's server process takes a moment to go; a few seconds at most)."""
        for _ in range(50):
            found = _sql(postgres_url, "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", [name])
            if int(found[0][0]) <= settle_at:
                break
            time.sleep(0.1)
        return int(found[0][0])

    # the sync pool's one connection, and no event log's: what is left is the loops'
    store = PostgresMemoryStore(url, min_size=1, max_size=2, async_min_size=1, async_max_size=2, persist_events=False)
    [record] = store.write([rec("read from many loops")])

    async def turn(calls: int) -> list[Any]:
        return await asyncio.gather(*(store.aget(record.id) for _ in range(calls)))

    held = []
    for n in range(30):  # an agent host calling asyncio.run() once per turn, some turns busier
        assert asyncio.run(turn(1 + 5 * (n % 3 == 0))) == [record] * (1 + 5 * (n % 3 == 0))
        held.append(connections(1))
    assert max(held) <= 1, f"the sync pool's only, between turns: {held}"

    async def stays_open() -> None:
        await store.aget(record.id)
        store.close()  # from inside a running loop: its pool closes when the loop next runs

    asyncio.run(stays_open())
    assert connections(0) == 0, "close() leaves nothing open"


def test_a_dead_sessions_cluster_is_reaped_by_the_next(postgres_cluster: Any) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    orphan = start_cluster(owner_pid=gone.pid)
    assert orphan.data_dir.exists()
    start_cluster(owner_pid=os.getpid()).stop()
    assert not orphan.root.exists(), "the cluster of a dead session was stopped and deleted"
    assert postgres_cluster.root.exists(), "a live session's cluster is left alone"
