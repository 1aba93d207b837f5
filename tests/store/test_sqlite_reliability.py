"""SQLite under stress: several processes at once, writers killed mid-batch, hostile input."""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from memory_admin.errors import MemoryStoreError
from memory_admin.store import InMemoryMemoryStore, RecordListQuery, SqliteMemoryStore
from memory_admin.store.ranking import record_text
from memory_admin.tokenize import tokenize

SCOPE = {"tenant": "acme", "user": "u1"}
PROV = {"source": "reliability"}
SPAWN = multiprocessing.get_context("spawn")


# --- several processes on one file -----------------------------------------------------


def _writer(path: str, writer: int, writes: int, queue: Any) -> None:
    store = SqliteMemoryStore(path, persist_events=False)
    acknowledged: list[str] = []
    errors: list[str] = []
    rng = random.Random(writer)
    for n in range(writes):
        batch = [
            {"scope": SCOPE, "kind": "fact", "content": f"writer {writer} note {n} part {k}", "provenance": PROV}
            for k in range(rng.randint(1, 3))
        ]
        if n % 10 == 0:  # everybody fights over one key slot too
            batch.append(
                {
                    "scope": SCOPE,
                    "kind": "profile",
                    "key": "shared",
                    "content": f"profile by {writer}",
                    "provenance": PROV,
                }
            )
        try:
            acknowledged += [record.id for record in store.write(batch)]
        except Exception as exc:  # reported to the parent, which fails the test
            errors.append(f"{type(exc).__name__}: {exc}")
    store.close()
    queue.put((acknowledged, errors))


def _reader(path: str, stop: Any, queue: Any) -> None:
    store = SqliteMemoryStore(path, persist_events=False)
    reads, errors = 0, []
    while not stop.is_set():
        try:
            store.search({"scope": SCOPE, "query": "writer note", "limit": 20})
            store.search({"scope": SCOPE, "limit": 20})
            reads += 2
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
    store.close()
    queue.put((reads, errors))


@pytest.mark.slow
def test_four_writers_and_two_readers_lose_nothing(tmp_path: Path) -> None:
    path = str(tmp_path / "memory.sqlite3")
    SqliteMemoryStore(path).close()
    queue, stop = SPAWN.Queue(), SPAWN.Event()
    writers = [SPAWN.Process(target=_writer, args=(path, n, 600, queue)) for n in range(4)]
    readers = [SPAWN.Process(target=_reader, args=(path, stop, queue)) for _ in range(2)]
    for process in writers + readers:
        process.start()
    results = [queue.get(timeout=600) for _ in writers]
    stop.set()
    reads = [queue.get(timeout=60) for _ in readers]
    for process in writers + readers:
        process.join(timeout=60)

    assert [errors for _, errors in results] == [[], [], [], []]
    assert [errors for _, errors in reads] == [[], []]
    assert all(count > 0 for count, _ in reads), "the readers really read alongside"
    acknowledged = [record_id for ids, _ in results for record_id in ids]
    store = SqliteMemoryStore(path)
    stored = list(store.iter_records(RecordListQuery(search={"scope": SCOPE, "include_invalidated": True})))
    assert sorted(r.id for r in stored) == sorted(acknowledged)
    slot = [r for r in stored if r.key == "shared"]
    assert len([r for r in slot if r.invalid_at is None]) == 1
    successors = Counter(r.superseded_by for r in slot if r.superseded_by)
    assert all(n == 1 for n in successors.values()), "no record has two successors"
    assert len(successors) == len(slot) - 1, "the slot's versions form one chain"
    store.close()


# --- many processes opening a new file at once --------------------------------------------

OPENERS = 8
FRESH_FILES = 4


def _opener(folder: str, opener: int, start: Any, queue: Any) -> None:
    """Open each new file the moment every other process does: create, migrate, write,
    read, close — and report what failed."""
    errors: list[str] = []
    for n in range(FRESH_FILES):
        start.wait(timeout=60)
        try:
            with SqliteMemoryStore(Path(folder) / f"memory-{n}.sqlite3") as store:
                [record] = store.write(
                    [{"scope": SCOPE, "kind": "fact", "content": f"opener {opener}", "provenance": PROV}]
                )
                assert store.get(record.id) == record
        except Exception as exc:  # reported to the parent, which fails the test
            errors.append(f"file {n}: {type(exc).__name__}: {exc}")
    queue.put(errors)


def test_many_processes_open_a_new_file_at_once(tmp_path: Path) -> None:
    """Agents and the dashboard starting together: one process creates the file (and its
    event file) and migrates it, the others wait for it and open what it made."""
    queue, start = SPAWN.Queue(), SPAWN.Barrier(OPENERS)
    openers = [SPAWN.Process(target=_opener, args=(str(tmp_path), n, start, queue)) for n in range(OPENERS)]
    for process in openers:
        process.start()
    errors = [error for _ in openers for error in queue.get(timeout=120)]
    for process in openers:
        process.join(timeout=60)
    assert errors == []
    for n in range(FRESH_FILES):
        with SqliteMemoryStore(tmp_path / f"memory-{n}.sqlite3") as store:
            assert len(store.search({"scope": SCOPE, "limit": 100})) == OPENERS
            assert len(store.query_events({"types": ["agent.memory.write"]})) == OPENERS, "each write's event"


# --- a writer killed mid-batch -----------------------------------------------------------

KILL_CHILD = """
import sys
from memory_admin.store import SqliteMemoryStore
store = SqliteMemoryStore(sys.argv[1], persist_events=False)
acks = open(sys.argv[2], "a", buffering=1)
start = int(sys.argv[3])
for batch in range(start, start + 100000):
    store.write([
        {"scope": {"tenant": "acme", "user": "u1"}, "kind": "fact", "content": f"batch {batch} item {k}",
         "tags": [f"b{batch}"], "provenance": {"source": "kill-test"}}
        for k in range(25)
    ])
    acks.write(f"{batch}\\n")
"""


def _batches(store: SqliteMemoryStore) -> Counter[str]:
    records = store.iter_records(RecordListQuery(search={"scope": SCOPE}), page_size=1000)
    return Counter(record.tags[0] for record in records)


@pytest.mark.slow
def test_sigkill_mid_batch_never_leaves_a_partial_batch(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    acks = tmp_path / "acks.txt"
    SqliteMemoryStore(path).close()
    rng = random.Random(5)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    for attempt in range(25):
        child = subprocess.Popen(
            [sys.executable, "-c", KILL_CHILD, str(path), str(acks), str(attempt * 100000)], env=env
        )
        time.sleep(rng.uniform(0.4, 1.2))
        child.send_signal(signal.SIGKILL)
        child.wait()
        conn = sqlite3.connect(path)
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        conn.execute("INSERT INTO memory_fts (memory_fts) VALUES ('integrity-check')")
        conn.close()
    acknowledged = {f"b{line.strip()}" for line in acks.read_text().splitlines() if line.strip()}
    store = SqliteMemoryStore(path)
    batches = _batches(store)
    assert acknowledged, "the writer got some batches in before being killed"
    assert acknowledged <= set(batches), "every acknowledged batch survived"
    assert set(batches.values()) == {25}, "no partial batch"
    assert len(store.search({"scope": SCOPE, "query": "item", "limit": 1000})) == 1000
    store.close()


# --- hostile input -----------------------------------------------------------------------

hostile_text = st.one_of(
    st.text(),
    st.text(alphabet=st.sampled_from(list("\"*^:(){}-+ANDORNEAR \x00'\\"))),
    st.text(alphabet=st.characters(min_codepoint=0x590, max_codepoint=0x6FF)),  # right-to-left
    st.text(alphabet=st.characters(min_codepoint=0x1F300, max_codepoint=0x1FAFF)),  # emoji
    st.builds(lambda w, n: (w + " ") * n, st.sampled_from(["NEAR", "AND", "x*", '"']), st.integers(1, 3000)),
)
latin_words = st.lists(
    st.text(alphabet=st.characters(max_codepoint=0x24F, blacklist_categories=("Cs",)), min_size=1, max_size=12),
    min_size=1,
    max_size=6,
).map(" ".join)


@pytest.fixture(scope="module")
def fuzz_stores(tmp_path_factory: pytest.TempPathFactory) -> Any:
    sqlite = SqliteMemoryStore(tmp_path_factory.mktemp("fuzz") / "memory.sqlite3", persist_events=False)
    memory = InMemoryMemoryStore(persist_events=False)
    yield sqlite, memory
    sqlite.close()


def _outcome(call: Any) -> tuple[str, Any]:
    try:
        return "ok", call()
    except MemoryStoreError as exc:
        return type(exc).__name__, None


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(
    content=hostile_text,
    tags=st.lists(hostile_text, max_size=2),
    key=st.none() | hostile_text,
    user=st.sampled_from(["u1", "שלום", "🙂"]) | hostile_text,
)
def test_hostile_writes_succeed_or_raise_typed_errors(
    fuzz_stores: Any, content: str, tags: list[str], key: str | None, user: str
) -> None:
    sqlite, memory = fuzz_stores
    item = {
        "scope": {"tenant": "fuzz", "user": user},
        "kind": "fact",
        "content": content,
        "tags": tags,
        "key": key,
        "provenance": PROV,
    }
    kind_sqlite, written = _outcome(lambda: sqlite.write([item]))
    kind_memory, _ = _outcome(lambda: memory.write([item]))
    assert kind_sqlite == kind_memory, "both backends judge the input alike"
    if written:
        assert sqlite.get(written[0].id) == written[0]
    event(f"write {kind_sqlite}")


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(query=hostile_text)
def test_hostile_queries_never_raise_raw_errors(fuzz_stores: Any, query: str) -> None:
    sqlite, _ = fuzz_stores
    kind, hits = _outcome(lambda: sqlite.search({"scope": {"tenant": "fuzz"}, "query": query, "limit": 50}))
    assert kind in ("ok", "MemoryValidationError")
    if hits:
        # the index holds Python's own terms, so every hit shares one with the query
        wanted = set(tokenize(query))
        assert all(
            wanted & set(tokenize(record_text(h.record.content, h.record.tags, h.record.observed_at))) for h in hits
        )


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(contents=st.lists(latin_words, min_size=1, max_size=8), query=latin_words)
def test_latin_match_sets_agree_with_the_reference_backend(
    tmp_path_factory: Any, contents: list[str], query: str
) -> None:
    scope = {"tenant": "parity", "user": f"u{random.getrandbits(48)}"}
    sqlite = SqliteMemoryStore(tmp_path_factory.mktemp("parity") / "m.sqlite3", persist_events=False)
    memory = InMemoryMemoryStore(persist_events=False)
    items = [{"scope": scope, "kind": "fact", "content": c, "provenance": PROV} for c in contents]
    outcomes = {_outcome(lambda: sqlite.write(items))[0], _outcome(lambda: memory.write(items))[0]}
    assert len(outcomes) == 1
    if outcomes == {"ok"}:
        found = [
            sorted(h.record.content for h in store.search({"scope": scope, "query": query, "limit": 100}))
            for store in (sqlite, memory)
        ]
        assert found[0] == found[1]
    sqlite.close()
