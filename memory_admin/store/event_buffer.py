"""The event log's writer: events leave the operation that reports them.

Every backend logs its events through one :class:`EventBuffer`. An operation hands its
event to :meth:`EventBuffer.put` — an append to a bounded in-process queue that never
blocks and never raises; the event itself, or a function that builds it, which the
writer calls with its batch (a search's model costs more to build, in its thread, than
the rest of its event) — and a background thread commits what has gathered in one
write unit per batch (group commit): ``interval`` seconds after the first event of a
batch arrived, or as soon as ``batch_size`` events are waiting. A search therefore never
takes a write lock to log itself, and a second of searches costs a couple of commits.

When the writer falls behind (a store locked by a long write, a server that went away),
the queue keeps its newest ``capacity`` events and drops the oldest, counting them: the
agent is never blocked and memory never grows without bound. The count reaches the
store's log with the next batch that commits, so every process sees how many events
the log is missing (:meth:`~memory_admin.store.base.BaseMemoryStore.event_log_stats`).

What is promised (docs/storage.md): events are telemetry. :meth:`flush` — which a
store's own event reads call first, so a process always reads its own events — and
:meth:`close` commit everything pending, and so does interpreter exit. A crash loses at
most the events of the last interval; it never loses a memory record, whose writes do
not go through here.

A forked child starts with an empty queue and no writer thread (the parent still owns
and commits what it had queued); the child's first event starts its own writer.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from memory_admin.events import AnyEvent

log = logging.getLogger(__name__)

Owner = TypeVar("Owner")

DEFAULT_INTERVAL = 0.5
"""Seconds an event may wait for its batch: what a crash can lose, and about how late a
dashboard in another process sees it."""
DEFAULT_BATCH_SIZE = 500
"""Events that start a commit without waiting for the interval (and the most one commit writes)."""
DEFAULT_CAPACITY = 10_000
"""Events held in memory while the writer is behind; beyond it the oldest are dropped."""

Pending = AnyEvent | Callable[[], AnyEvent]
"""What the queue holds: an event, or a function that builds it (called by the writer)."""

Commit = Callable[[Owner, Sequence[AnyEvent], int], int]
"""Commit ``events`` to ``owner``'s log and add ``lost`` to its count of dropped events,
in one write unit (all of it or none of it); returns how many of ``events`` the log
withheld (and counted itself)."""


@dataclass(frozen=True)
class EventBufferStats:
    """One process's view of its buffer."""

    pending: int
    """Events waiting for their batch."""
    written: int
    """Events this buffer has committed."""
    dropped: int
    """Events this buffer lost: dropped when full, or in a batch whose commit failed."""
    unreported: int
    """Of those, the ones not yet added to the log's own count."""
    batches: int
    """Commits made."""
    withheld: int = 0
    """Events the log kept out of the batches this buffer committed (their tenant forgot
    something after them; the log counted them itself)."""


class EventBuffer(Generic[Owner]):
    """A bounded queue of events for ``owner``'s log and the thread that commits them.

    The buffer holds ``owner`` weakly while it is idle, so an unclosed store can still be
    collected (its thread then ends), and strongly while events wait, so none is lost
    with it. ``commit(owner, events, lost)`` is called from the writer thread, or from
    whichever thread calls :meth:`flush` or :meth:`close`; commits never overlap, and
    events are committed in the order they were put.
    """

    def __init__(
        self,
        owner: Owner,
        commit: Commit[Owner],
        *,
        interval: float = DEFAULT_INTERVAL,
        batch_size: int = DEFAULT_BATCH_SIZE,
        capacity: int = DEFAULT_CAPACITY,
    ) -> None:
        if interval <= 0 or batch_size < 1 or capacity < 1:
            raise ValueError("an event buffer needs a positive interval, batch size and capacity")
        self._owner = weakref.ref(owner)
        self._commit_fn = commit
        self.interval = interval
        self.batch_size = batch_size
        self.capacity = capacity
        self._reset()
        finalizer = weakref.finalize(owner, self._abandon)
        finalizer.atexit = False  # exit flushes every buffer first (see _flush_all_at_exit)
        _BUFFERS.add(self)

    def _reset(self, *, closed: bool = False) -> None:
        """A fresh state: at construction, and in a forked child (whose copy of a lock
        may have been held by a thread that does not exist there, and whose copy of the
        queue is the parent's to commit)."""
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._committing = threading.Lock()
        self._pending: deque[Pending] = deque(maxlen=self.capacity)
        self._keep: Owner | None = None
        self._thread: threading.Thread | None = None
        self._stopping = self._closed = closed
        self._written = self._dropped = self._unreported = self._batches = self._withheld = 0

    # --- the operation's side ---------------------------------------------------------

    def put(self, event: Pending) -> None:
        """Queue ``event`` (or the function that builds it) for the log. Never blocks on
        the store and never raises; when the queue is full the oldest event is dropped
        and counted."""
        with self._lock:
            if self._closed:
                return
            if self._keep is None:
                self._keep = self._owner()
                if self._keep is None:
                    return
            if len(self._pending) == self.capacity:
                self._dropped += 1  # the deque's maxlen drops the oldest on append
                self._unreported += 1
            self._pending.append(event)
            waiting = len(self._pending)
            if self._thread is None:
                self._start()
            elif waiting == 1 or waiting == self.batch_size:
                self._wake.notify()

    def _start(self) -> None:
        thread = threading.Thread(target=self._run, name="memory_admin event log", daemon=True)
        try:
            thread.start()
        except RuntimeError:  # the interpreter is shutting down: the exit flush takes them
            return
        self._thread = thread

    # --- the writer's side ------------------------------------------------------------

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._pending and not self._stopping:
                    self._wake.wait()
                if self._stopping:
                    return  # close() commits what is left in its own thread
                deadline = time.monotonic() + self.interval
                while len(self._pending) < self.batch_size and not self._stopping:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self._wake.wait(left)
            self._drain()

    def _drain(self) -> None:
        """Commit everything pending, a batch per write unit. A failed commit loses its
        batch (counted) and leaves the rest for the next attempt; an event that fails to
        build is lost alone (counted, and reported with its batch)."""
        with self._committing:
            while True:
                with self._lock:
                    take = min(len(self._pending), self.batch_size)
                    batch = [self._pending.popleft() for _ in range(take)]
                    lost, self._unreported = self._unreported, 0
                    owner = self._keep if self._keep is not None else self._owner()
                    if not self._pending:
                        self._keep = None
                if not batch and not lost:
                    return
                if owner is None:  # collected with nothing pending; nowhere to report
                    return
                events = _build(batch)
                lost += len(batch) - len(events)
                try:
                    withheld = self._commit_fn(owner, events, lost)
                except Exception:
                    log.exception("could not commit %d memory events; they are counted as dropped", len(events))
                    with self._lock:
                        self._dropped += len(batch)
                        self._unreported += lost + len(events)
                    return
                finally:
                    del owner
                with self._lock:
                    self._dropped += len(batch) - len(events)
                    self._written += len(events) - withheld
                    self._withheld += withheld
                    self._batches += 1

    # --- control ----------------------------------------------------------------------

    def flush(self) -> None:
        """Commit every event put so far (by any thread) before returning, in this thread."""
        self._drain()

    def close(self) -> None:
        """Commit what is pending and stop the writer thread. Events put afterwards are
        not logged. Safe to call twice."""
        with self._lock:
            self._stopping = True
            self._wake.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()
        self._drain()
        with self._lock:
            self._closed = True
            self._thread = None

    def _abandon(self) -> None:
        # the owner was collected with nothing pending: let the thread end
        with self._lock:
            self._stopping = self._closed = True
            self._wake.notify_all()

    @property
    def owner(self) -> Owner | None:
        return self._owner()

    def stats(self) -> EventBufferStats:
        with self._lock:
            return EventBufferStats(
                pending=len(self._pending),
                written=self._written,
                dropped=self._dropped,
                unreported=self._unreported,
                batches=self._batches,
                withheld=self._withheld,
            )


def _build(batch: Sequence[Pending]) -> list[AnyEvent]:
    """The batch's events, each builder called (an event model is not callable). One that
    fails is logged and left out: a bug in one event must not lose its neighbours."""
    events: list[AnyEvent] = []
    for item in batch:
        if not callable(item):
            events.append(item)
            continue
        try:
            events.append(item())
        except Exception:
            log.exception("could not build a memory event; it is counted as dropped")
    return events


_BUFFERS: weakref.WeakSet[EventBuffer[Any]] = weakref.WeakSet()


def live_buffers() -> list[EventBuffer[Any]]:
    """Every buffer of this process whose owner is alive."""
    return [buffer for buffer in list(_BUFFERS) if buffer.owner is not None]


def _flush_all_at_exit() -> None:
    for buffer in list(_BUFFERS):
        try:
            buffer.close()
        except Exception:  # one store's failure must not keep the others' events
            log.exception("could not flush memory events at exit")


def _after_fork_in_child() -> None:
    for buffer in list(_BUFFERS):
        buffer._reset(closed=buffer._closed)


atexit.register(_flush_all_at_exit)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


__all__ = [
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_CAPACITY",
    "DEFAULT_INTERVAL",
    "Commit",
    "EventBuffer",
    "EventBufferStats",
    "Pending",
    "live_buffers",
]
