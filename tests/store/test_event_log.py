"""The buffered event log through real stores: what a writer that falls behind drops and
counts, a process killed with events in flight, interpreter exit, the async path and
fork. (Reads of one's own events and clean shutdown are conformance cases.)"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memory_admin.store import BaseMemoryStore, RecordListQuery, SqliteMemoryStore, open_store
from tests.support.stores import backend_url, backends, open_backend

SCOPE = {"tenant": "acme", "user": "u1"}
PROV = {"source": "event-log-test"}


def note(content: str) -> dict[str, object]:
    return {"scope": SCOPE, "kind": "fact", "content": content, "provenance": PROV}


def searches(store: BaseMemoryStore) -> int:
    return len(store.query_events({"types": ["agent.memory.search"], "limit": 10_000}))


def eventually(check: Callable[[], bool], timeout: float = 10.0) -> None:
    started = time.monotonic()
    while not check():
        assert time.monotonic() - started < timeout, "the writer thread never got there"
        time.sleep(0.01)


def test_a_writer_that_falls_behind_drops_the_oldest_and_every_process_sees_the_count(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    store = SqliteMemoryStore(path, event_flush_interval=0.05, event_buffer_size=5)
    store.write([note("a seat note")])
    store.flush_events()
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # another process holds the file's write lock
    try:
        store.search({"scope": SCOPE, "query": "seat"})
        eventually(lambda: store.event_log_stats().pending == 0)  # taken, and waiting for the lock
        started = time.monotonic()
        for _ in range(20):
            assert store.search({"scope": SCOPE, "query": "seat"}), "reads go on while the log waits"
        assert time.monotonic() - started < 5, "searches never wait for the event log"
        stats = store.event_log_stats()
        assert (stats.pending, stats.dropped) == (5, 15)
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    store.flush_events()
    with SqliteMemoryStore(path) as other:
        assert other.event_log_stats().dropped == 15, "the count reached the file with the next batch"
        assert searches(other) == 1 + 5, "the first and the newest five"
    assert len(store.search({"scope": SCOPE, "query": "seat"})) == 1, "no record was touched"
    store.close()


SEARCHER = """
import sys, time
from memory_admin.store import SqliteMemoryStore
store = SqliteMemoryStore(sys.argv[1], event_flush_interval=float(sys.argv[3]))
acks = open(sys.argv[2], "a", buffering=1)
searched = 0
for n in range(10**9):
    record = store.write([{"scope": {"tenant": "acme", "user": "u1"}, "kind": "fact",
                           "content": f"note {n}", "provenance": {"source": "kill-test"}}])[0]
    for _ in range(10):
        store.search({"scope": {"tenant": "acme", "user": "u1"}, "query": f"note {n}"})
    searched += 10
    acks.write(f"{time.time()} {searched} {record.id}\\n")
"""


@pytest.mark.slow
def test_sigkill_keeps_every_record_and_loses_at_most_the_last_interval_of_events(tmp_path: Path) -> None:
    path, acks, interval = tmp_path / "memory.sqlite3", tmp_path / "acks.txt", 0.2
    SqliteMemoryStore(path).close()
    child = subprocess.Popen([sys.executable, "-c", SEARCHER, str(path), str(acks), str(interval)])
    try:
        eventually(lambda: acks.exists() and len(acks.read_text().splitlines()) >= 150, timeout=120)
        killed_at = time.time()
        child.send_signal(signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
    complete = acks.read_text().split("\n")[:-1]  # a line cut by the kill has no newline
    acked = [(float(at), int(searched), record_id) for at, searched, record_id in map(str.split, complete)]
    with SqliteMemoryStore(path) as store:
        stored = {r.id for r in store.iter_records(RecordListQuery(search={"scope": SCOPE}))}
        assert {record_id for _, _, record_id in acked} <= stored, "every acknowledged record survived"
        logged = searches(store)
    # events older than one interval (and the commit that takes them) were in the log
    settled = [searched for at, searched, _ in acked if at <= killed_at - interval - 0.3]
    assert settled, "the child ran long enough"
    assert logged >= settled[-1], (logged, settled[-1], acked[-1][1])
    assert logged <= acked[-1][1] + 10, "no event was invented"


LINGERER = """
import sys, time
from memory_admin.store import SqliteMemoryStore
store = SqliteMemoryStore(sys.argv[1])
for n in range(10):
    store.search({"scope": {"tenant": "acme", "user": "u1"}, "query": "note"})
print("searched", flush=True)
time.sleep(120)  # neither closes nor reads: only the writer thread can commit
"""


def test_another_process_sees_the_events_within_about_a_second(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    SqliteMemoryStore(path).close()
    child = subprocess.Popen([sys.executable, "-c", LINGERER, str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "searched"
        started = time.monotonic()
        with SqliteMemoryStore(path) as dashboard:
            eventually(lambda: searches(dashboard) == 10)
        waited = time.monotonic() - started
    finally:
        child.kill()
        child.wait()
    assert waited < 5.0, f"{waited:.2f} s (the flush interval is 0.5 s; this machine may be busy)"


AGENT = """
import sys
from memory_admin.store import open_store
store = open_store(sys.argv[1], event_flush_interval=60, embedder="none")
for scope in ({"tenant": "acme", "user": "mei"}, {"tenant": "acme"}):
    assert store.search({"scope": scope, "query": "what does Mei eat at Vlondel"})
print("searched", flush=True)
sys.stdin.readline()  # the erasure has committed: now the buffered events reach the log
store.close()
print("closed", flush=True)
"""


@pytest.mark.parametrize("backend", backends("sqlite", "postgres"))
def test_an_erasure_withholds_another_processs_events_still_on_their_way(
    tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    url = backend_url(backend, request)
    mei = {"tenant": "acme", "user": "mei"}
    with open_store(url, embedder="none") as store:
        store.write([{"scope": mei, "kind": "fact", "content": "Mei eats vegetarian at Vlondel", "provenance": PROV}])
    child = subprocess.Popen(
        [sys.executable, "-c", AGENT, url], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdin is not None
        assert child.stdout.readline().strip() == "searched"
        with open_store(url, embedder="none") as privacy:
            assert privacy.erase(mei).records == 1
            child.stdin.write("go\n")
            child.stdin.flush()
            assert child.stdout.readline().strip() == "closed"
            searched = privacy.query_events({"types": ["agent.memory.search"], "include_previews": True})
            assert searched == [], "both searches found Mei's record before the erasure: neither is logged"
            stats = privacy.event_log_stats()
            assert (stats.withheld, stats.dropped) == (2, 0), "both are counted as withheld"
    finally:
        child.kill()
        child.wait()
    if backend == "sqlite":
        written = b"".join(f.read_bytes() for f in tmp_path.iterdir() if f.name.startswith("memory.sqlite3"))
        assert b"Vlondel" not in written, "no byte of the erased scope's searches reached the file"


EXITER = """
import sys
from memory_admin.store import SqliteMemoryStore
store = SqliteMemoryStore(sys.argv[1], event_flush_interval=60)
store.write([{"scope": {"tenant": "acme", "user": "u1"}, "kind": "fact", "content": "a note",
              "provenance": {"source": "exit-test"}}])
for n in range(30):
    store.search({"scope": {"tenant": "acme", "user": "u1"}, "query": "note"})
# no close(): the interpreter's exit commits the buffer
"""


def test_interpreter_exit_commits_the_buffer(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    subprocess.run([sys.executable, "-c", EXITER, str(path)], check=True, timeout=120)
    with SqliteMemoryStore(path) as store:
        assert searches(store) == 30
        assert len(store.query_events({"types": ["agent.memory.write"]})) == 1


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_async_callers_hand_their_events_to_the_same_writer(backend: str, request: pytest.FixtureRequest) -> None:
    store = open_backend(backend, request, event_flush_interval=60)

    async def agent() -> None:
        await store.awrite([note("an async note")])
        await asyncio.gather(*(store.asearch({"scope": SCOPE, "query": "async"}) for _ in range(40)))
        assert store.event_log_stats().pending == 41, "nothing was written on the event loop"
        await store.aclose()

    asyncio.run(agent())
    reopened = store if backend == "memory" else open_backend(backend, request)
    assert searches(reopened) == 40
    reopened.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_never_writes_its_parents_buffered_events(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    store = SqliteMemoryStore(path, event_flush_interval=60)
    for _ in range(5):
        store.search({"scope": SCOPE})
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the child
        status = 1
        try:
            store.flush_events()  # the parent's five are the parent's to commit
            with SqliteMemoryStore(path, event_flush_interval=60) as own:
                for _ in range(3):
                    own.search({"scope": SCOPE})
            status = 0
        finally:
            os._exit(status)
    _, status = os.waitpid(child, 0)
    assert status == 0
    store.close()
    with SqliteMemoryStore(path) as again:
        assert searches(again) == 5 + 3


def test_event_batches_skip_the_fsync_but_record_writes_keep_it(tmp_path: Path) -> None:
    store = SqliteMemoryStore(tmp_path / "memory.sqlite3")
    seen: list[int] = []
    commit_events = store._commit_events

    def spy(events: Any, lost: int) -> int:
        withheld = commit_events(events, lost)
        seen.extend(conn.execute("PRAGMA synchronous").fetchone()[0] for conn in store._all)
        return withheld

    store._commit_events = spy  # type: ignore[method-assign]
    store.write([note("a note")])
    store.search({"scope": SCOPE, "query": "note"})
    store.flush_events()
    assert seen and set(seen) == {2}, "every pooled connection is back to synchronous = FULL after a batch"
    assert searches(store) == 1
    store.close()
