"""The buffered event writer on its own: group commit, the interval, drop-oldest, failed
commits, close, the owner's lifetime and fork."""

from __future__ import annotations

import gc
import os
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

import pytest

from memory_admin.events import AnyEvent, MemorySearchEvent
from memory_admin.store.event_buffer import EventBuffer

SCOPE = {"tenant": "acme", "user": "u1"}


def event(n: int) -> MemorySearchEvent:
    return MemorySearchEvent(
        at=datetime(2026, 1, 5, tzinfo=UTC), scope=SCOPE, count=0, limit=n, record_ids=[], duration_ms=0.1
    )


def numbers(events: Sequence[AnyEvent]) -> list[int]:
    return [e.limit for e in events if isinstance(e, MemorySearchEvent)]


class Log:
    """A stand-in for a store's event log: what each commit wrote, and from which thread."""

    def __init__(self) -> None:
        self.batches: list[list[int]] = []
        self.lost = 0
        self.threads: list[int] = []
        self.gate: threading.Event | None = None  # a commit waits for it when set
        self.entered = threading.Event()
        self.failures = 0  # the next commits to fail
        self.withhold: set[int] = set()  # events the log keeps out (and counts itself)
        self.withheld = 0

    def commit(self, events: Sequence[AnyEvent], lost: int) -> int:
        self.entered.set()
        if self.gate is not None:
            assert self.gate.wait(30), "the test never opened the gate"
        if self.failures:
            self.failures -= 1
            raise OSError("disk full")
        kept = [n for n in numbers(events) if n not in self.withhold]
        self.batches.append(kept)
        self.lost += lost
        self.withheld += len(events) - len(kept)
        self.threads.append(threading.get_ident())
        return len(events) - len(kept)

    @property
    def written(self) -> list[int]:
        return [n for batch in self.batches for n in batch]


def commit(log: Log, events: Sequence[AnyEvent], lost: int) -> int:
    return log.commit(events, lost)


def eventually(check: Callable[[], bool], timeout: float = 10.0) -> float:
    """Seconds until ``check()`` held; fails after ``timeout``."""
    started = time.monotonic()
    while not check():
        assert time.monotonic() - started < timeout, "the writer thread never got there"
        time.sleep(0.01)
    return time.monotonic() - started


def test_events_wait_for_the_interval_then_commit_as_one_batch() -> None:
    log = Log()
    buffer = EventBuffer(log, commit, interval=1.0)
    for n in range(50):
        buffer.put(event(n))
    assert log.batches == [], "nothing is written on the operation's path"
    waited = eventually(lambda: bool(log.batches))
    assert log.batches == [list(range(50))], "one write unit for the whole interval"
    assert waited > 0.5
    assert log.threads[0] != threading.get_ident(), "committed by the writer thread"
    buffer.close()


def test_a_full_batch_commits_without_waiting_for_the_interval() -> None:
    log = Log()
    buffer = EventBuffer(log, commit, interval=60.0, batch_size=10)
    for n in range(10):
        buffer.put(event(n))
    eventually(lambda: log.written == list(range(10)))
    buffer.close()


def test_flush_and_close_commit_everything_in_the_callers_thread() -> None:
    log = Log()
    buffer = EventBuffer(log, commit, interval=60.0)
    for n in range(5):
        buffer.put(event(n))
    buffer.flush()
    assert log.batches == [[0, 1, 2, 3, 4]] and log.threads == [threading.get_ident()]
    buffer.put(event(5))
    buffer.close()
    assert log.written == [0, 1, 2, 3, 4, 5], "close flushes"
    buffer.put(event(6))
    buffer.flush()
    buffer.close()
    assert log.written == [0, 1, 2, 3, 4, 5], "a closed buffer logs nothing more"
    stats = buffer.stats()
    assert (stats.pending, stats.written, stats.dropped, stats.batches) == (0, 6, 0, 2)


def test_events_the_log_withholds_are_counted_apart_from_the_written_ones() -> None:
    log = Log()
    log.withhold = {1, 3}
    buffer = EventBuffer(log, commit, interval=60.0)
    for n in range(5):
        buffer.put(event(n))
    buffer.flush()
    buffer.put(event(5))
    buffer.close()
    assert log.written == [0, 2, 4, 5] and log.withheld == 2, "the log counted them in the batch that withheld them"
    stats = buffer.stats()
    assert (stats.written, stats.withheld, stats.dropped, stats.unreported) == (4, 2, 0, 0)


def test_an_event_queued_as_its_builder_is_built_by_the_writer_in_order() -> None:
    log = Log()
    buffer = EventBuffer(log, commit, interval=0.05)
    built: list[int] = []

    def later(n: int) -> Callable[[], AnyEvent]:
        def build() -> AnyEvent:
            built.append(threading.get_ident())
            return event(n)

        return build

    buffer.put(event(0))
    buffer.put(later(1))
    buffer.put(event(2))
    assert built == [], "the operation that put it did not build it"
    eventually(lambda: log.written == [0, 1, 2])
    assert built == [log.threads[0]] and built[0] != threading.get_ident(), "the writer thread built it"
    buffer.close()


def test_an_event_that_fails_to_build_is_lost_alone_and_counted(caplog: pytest.LogCaptureFixture) -> None:
    log = Log()
    buffer = EventBuffer(log, commit, interval=60.0)

    def broken() -> AnyEvent:
        raise ValueError("no such field")

    buffer.put(event(0))
    buffer.put(broken)  # put never builds, so never raises
    buffer.put(event(2))
    buffer.flush()
    assert (log.written, log.lost) == ([0, 2], 1), "its neighbours are committed; the log is told of the one lost"
    assert "could not build a memory event" in caplog.text
    stats = buffer.stats()
    assert (stats.written, stats.dropped, stats.unreported) == (2, 1, 0)
    log.failures = 1
    buffer.put(broken)
    buffer.put(event(4))
    buffer.flush()
    stats = buffer.stats()
    assert (stats.dropped, stats.unreported) == (3, 2), "a failed commit then loses the built one too, once each"
    buffer.put(event(5))
    buffer.close()
    assert (log.written, log.lost) == ([0, 2, 5], 3)


def test_a_writer_that_falls_behind_drops_the_oldest_and_counts_them() -> None:
    log = Log()
    log.gate = threading.Event()
    buffer = EventBuffer(log, commit, interval=0.01, capacity=10)
    buffer.put(event(0))
    assert log.entered.wait(10), "the writer took the first event and is stuck committing it"
    started = time.monotonic()
    for n in range(1, 26):
        buffer.put(event(n))
    assert time.monotonic() - started < 1.0, "the operation never waits for the writer"
    stats = buffer.stats()
    assert (stats.pending, stats.dropped, stats.unreported) == (10, 15, 15)
    log.gate.set()
    buffer.flush()
    assert log.written == [0, *range(16, 26)], "the newest ten were kept"
    assert log.lost == 15, "the drops reach the log with the next batch"
    stats = buffer.stats()
    assert (stats.pending, stats.dropped, stats.unreported) == (0, 15, 0)
    buffer.close()


def test_a_failed_commit_loses_its_batch_counted_and_the_next_one_reports_it(caplog: pytest.LogCaptureFixture) -> None:
    log = Log()
    log.failures = 1
    buffer = EventBuffer(log, commit, interval=60.0)
    for n in range(3):
        buffer.put(event(n))
    buffer.flush()
    assert log.batches == [] and buffer.stats().dropped == 3
    assert "could not commit 3 memory events" in caplog.text
    buffer.put(event(3))
    buffer.flush()
    assert (log.written, log.lost) == ([3], 3)
    buffer.close()


def test_a_large_backlog_commits_in_batches_of_batch_size() -> None:
    log = Log()
    buffer = EventBuffer(log, commit, interval=60.0, batch_size=100, capacity=1000)
    log.gate = threading.Event()
    for n in range(250):
        buffer.put(event(n))
    log.gate.set()
    buffer.close()
    assert log.written == list(range(250))
    assert all(len(batch) <= 100 for batch in log.batches)


def test_threads_putting_at_once_lose_nothing_and_keep_their_order() -> None:
    log = Log()
    buffer = EventBuffer(log, commit, interval=0.01, batch_size=7)

    def put(offset: int) -> None:
        for n in range(500):
            buffer.put(event(offset + n))

    threads = [threading.Thread(target=put, args=(k * 1000,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    buffer.close()
    written = log.written
    assert sorted(written) == sorted(k * 1000 + n for k in range(4) for n in range(500))
    for k in range(4):
        mine = [n for n in written if k * 1000 <= n < (k + 1) * 1000]
        assert mine == sorted(mine), "each thread's events in the order it emitted them"


def test_an_unclosed_owner_is_collected_after_its_events_are_committed() -> None:
    committed: list[int] = []

    class Owner:
        pass

    def commit_to(_: Owner, events: Sequence[AnyEvent], lost: int) -> int:
        committed.extend(numbers(events))
        return 0  # withheld none

    owner = Owner()
    buffer = EventBuffer(owner, commit_to, interval=0.05)
    buffer.put(event(1))
    thread = buffer._thread
    assert thread is not None
    del owner  # with an event pending: the buffer keeps its owner until it is committed
    gc.collect()
    eventually(lambda: committed == [1])
    eventually(lambda: gc.collect() >= 0 and not thread.is_alive())


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_starts_empty_and_writes_its_own_events() -> None:
    log = Log()
    buffer = EventBuffer(log, commit, interval=60.0)
    parent = os.getpid()
    log.gate = threading.Event()
    buffer.put(event(1))
    buffer.put(event(2))
    flusher = threading.Thread(target=buffer.flush)
    flusher.start()  # holds the commit lock, stuck in a commit, while the process forks
    assert log.entered.wait(10)
    buffer.put(event(3))  # pending in the parent at fork time
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the child
        status = 1
        try:
            log.gate = None  # the child's copy of the log commits at once
            before = buffer.stats()
            buffer.put(event(10))
            buffer.flush()  # must not wait on the lock the parent's thread held
            after = buffer.stats()
            ok = (before.pending, after.pending, log.batches[-1:]) == (0, 0, [[10]])
            os.write(write, b"ok" if ok else repr((before, after, log.batches)).encode())
            status = 0
        finally:
            os._exit(status)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        report = pipe.read().decode()
    _, status = os.waitpid(child, 0)
    assert os.getpid() == parent and status == 0
    assert report == "ok"
    log.gate.set()
    flusher.join()
    buffer.close()
    assert log.written == [1, 2, 3], "the parent still commits its own, once"


def test_settings_are_checked() -> None:
    with pytest.raises(ValueError):
        EventBuffer(Log(), commit, interval=0)
    with pytest.raises(ValueError):
        EventBuffer(Log(), commit, capacity=0)
