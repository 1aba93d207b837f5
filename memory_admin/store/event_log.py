"""The event log (:class:`~memory_admin.store.protocol.EventLogStore`), written once for
every backend: sinks, the buffered log and its reads.

Events are the exception to "one unit per operation": an operation hands its event to
the store's :class:`~memory_admin.store.event_buffer.EventBuffer`, which commits them in
batches from a background thread, so a read never becomes a write to log itself.

An event can therefore reach the log after a forgetting (a delete, an erasure, a sweep) that it
predates: a search that found a record a moment before the record was erased, in this
process or in any other. Such an event may quote what was forgotten, and the erasure
could not remove it, because it was not in the log yet. So every forgetting leaves a
mark — its tenant and when — and a batch withholds the events of that tenant from
before the mark (:data:`FORGET_MARGIN` after it included), and counts them.
The mark and the batch are ordered by the store (one write lock; PostgreSQL: a table
lock), so a batch either commits before the forgetting, and is forgotten with the rest,
or after it, and sees the mark.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import TypeVar

from memory_admin.errors import (
    CapabilityError,
    MemoryValidationError,
)
from memory_admin.events import (
    AnyEvent,
    EventLogStats,
    EventQuery,
    EventSink,
    StoredEvent,
    deliver,
)
from memory_admin.records import (
    holds_lone_surrogate,
    parse_model,
)
from memory_admin.scope import TENANT_KEY
from memory_admin.steps import Steps
from memory_admin.store.arguments import (
    MAX_STORED_INT,
    check_event_id,
    check_list,
    check_time,
)
from memory_admin.store.core import StoreCore
from memory_admin.store.event_buffer import live_buffers
from memory_admin.store.session import Mode, Session, Statement, Unit

T = TypeVar("T")

FORGET_MARGIN = timedelta(seconds=2)
"""How long after a forgetting's mark an event may still have read what was forgotten: an
event's time is taken before its read, the mark's just before its commit, and the
processes' clocks may differ a little."""


def predates_forgetting(event: AnyEvent, forgetting: Mapping[str, datetime]) -> bool:
    """``event`` may have read what its tenant has since forgotten (``forgetting``: the
    latest forgetting of each tenant)."""
    forgot = forgetting.get(event.scope[TENANT_KEY])
    return forgot is not None and event.at <= forgot + FORGET_MARGIN


def forget_in_log(
    s: Session, tenant: str, record_ids: Sequence[str], clock: Callable[[], datetime]
) -> Steps[Statement, None]:
    """Last in every unit that forgets ``tenant``'s ``record_ids`` (a delete, an erasure, a
    sweep of expired records), after :meth:`Session.begin_forgetting` and the deletes: the
    logged events that found them lose the query text that may quote them, and those
    still on their way to the log are withheld (:func:`predates_forgetting`)."""
    yield from s.forget_in_events(tenant, record_ids)
    yield from s.mark_forgetting(tenant, clock)


class BaseEventLogStore(StoreCore):
    """Events: delivered to every sink at once, persisted by the buffered log."""

    def add_sink(self, sink: EventSink) -> None:
        """Deliver every future event to ``sink`` too."""
        self._sinks.append(sink)

    @property
    def _observed(self) -> bool:
        return bool(self._sinks) or self._logging_events

    @property
    def _logging_events(self) -> bool:
        # asked on every search: the backend's own flag, not capabilities() (a copy per call with an embedder)
        return self._persist_events and self.capabilities_data.events

    def emit(self, event: AnyEvent) -> None:
        """Queue ``event`` for the store's event log (when it keeps one; committed in a
        batch within :attr:`event_flush_interval`) and hand it to every sink. Never
        blocks on the log and never raises: a failing log or sink is logged, and the
        operation the event reports stands."""
        if self._logging_events:
            self._events.put(event)
        deliver(self._sinks, event)

    def _emit_later(self, build: Callable[[], AnyEvent]) -> None:
        """Emit the event ``build`` makes, building it as late as its readers allow: now
        when a sink takes events as they happen, else in the log's writer thread with its
        batch, so the operation that reports it does not pay for the model."""
        if self._sinks:
            self.emit(build())
        elif self._logging_events:
            self._events.put(build)

    def _emit_all(self, events: Iterable[AnyEvent]) -> None:
        if self._observed:
            for event in events:
                self.emit(event)

    def record_event(self, event: AnyEvent) -> StoredEvent:
        """Persist one event now, after the events emitted before it, and return it with
        its id (raises on failure, unlike :meth:`emit`)."""
        self.flush_events()
        return StoredEvent(id=self._append_event(event), event=event)

    def _append_event(self, event: AnyEvent) -> int:
        [event_id] = self._run_unit(Unit("write", lambda s: s.append_events([event])))
        return event_id

    def _commit_events(self, events: Sequence[AnyEvent], lost: int) -> int:
        """One batch of the buffer, and the events it had to drop, in one write unit.
        Returns how many of the batch it withheld, because their tenant forgot something
        after them (:func:`predates_forgetting`); the log counts them too."""
        oldest = min((event.at for event in events), default=None)

        def steps(s: Session) -> Steps[Statement, int]:
            forgetting = {} if oldest is None else (yield from s.forgetting_since(oldest - FORGET_MARGIN))
            kept = [event for event in events if not predates_forgetting(event, forgetting)]
            withheld = len(events) - len(kept)
            yield from s.log_events(kept, lost, withheld)
            return withheld

        return self._run_unit(Unit("append", steps))

    @property
    def event_flush_interval(self) -> float:
        return self._events.interval

    def _event_log_key(self) -> str:
        """What identifies this store's event log within the process: store objects with
        the same key log to the same place (a backend over a file or a server says which)."""
        return f"{type(self).__name__}:{id(self)}"

    def flush_events(self) -> None:
        """Commit every event this process has emitted to this store's log — through this
        store object or another one over the same data — before returning (their writer
        threads would within :attr:`event_flush_interval`). Event reads and erasure call
        it first, so a process always reads its own events."""
        key = self._event_log_key()
        for buffer in live_buffers():
            owner = buffer.owner
            if owner is self or (isinstance(owner, BaseEventLogStore) and owner._event_log_key() == key):
                buffer.flush()

    def event_log_stats(self) -> EventLogStats:
        """How complete the log is: events dropped (by every process, as far as they
        could report it) and this process's events still waiting for their batch."""
        caps = self.capabilities()
        if not caps.events:
            raise CapabilityError(self.backend_name, ["events"])
        local = self._events.stats()
        dropped, withheld = self._run_unit(Unit("read", lambda s: s.events_missing()))
        return EventLogStats(
            logging=self._logging_events,
            dropped=dropped + local.unreported,
            withheld=withheld,
            pending=local.pending,
            flush_interval_s=self._events.interval,
        )

    def _events_unit(self, mode: Mode, steps: Callable[[Session], Steps[Statement, T]]) -> Unit[T]:
        if not self.capabilities().events:
            raise CapabilityError(self.backend_name, ["events"])
        return Unit(mode, steps)

    def query_events(self, query: EventQuery | Mapping[str, object]) -> list[StoredEvent]:
        """See :meth:`EventLogStore.query_events`; this process's own events are
        committed first (:meth:`flush_events`), so it always reads what it emitted."""
        parsed = parse_model(EventQuery, query, what="event query")
        self.flush_events()
        return self._run_unit(self._events_unit("read", lambda s: s.query_events(parsed)))

    def get_event(self, event_id: int) -> StoredEvent | None:
        event_id = check_event_id(event_id)
        after = event_id + 1 if event_id < MAX_STORED_INT else None  # the largest id has nothing after it
        found = self.query_events(EventQuery(before_id=after, limit=1, include_previews=True))
        return found[0] if found and found[0].id == event_id else None

    def prune_events(self, before: datetime) -> int:
        before = check_time(before, "before")
        self.flush_events()
        return self._run_unit(self._events_unit("write", lambda s: s.prune_events(before)))

    def import_events(self, events: Sequence[StoredEvent | Mapping[str, object]]) -> int:
        """Insert events verbatim, ids included (moving an event log between stores). An id
        already in the log is skipped, so a copy can be resumed; returns how many went in."""
        parsed = [
            parse_model(StoredEvent, event, what=f"event {i}") for i, event in enumerate(check_list(events, "events"))
        ]
        for index, stored in enumerate(parsed):
            if holds_lone_surrogate(stored.event):
                raise MemoryValidationError(
                    f"Event {index} holds a lone surrogate (not valid Unicode); nothing was imported.",
                    [{"loc": f"{index}.event", "msg": "invalid Unicode text"}],
                )
        if not parsed:
            return 0
        self.flush_events()
        return self._run_unit(self._events_unit("write", lambda s: s.import_events(parsed)))
