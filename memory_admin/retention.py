"""Retention for the memory event log: prune old events, never records.

Events are telemetry (what was written, searched, recalled and when); records are the
system of record. Pruning the log therefore deletes events older than a cutoff and
nothing else: every record, invalidated and expired ones included, stays exactly as
it was. ``manage.py memory_events_prune --older-than 30d`` calls
:func:`prune_events_older_than`.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from pydantic import BaseModel, ConfigDict

from memory_admin.errors import MemoryValidationError
from memory_admin.records import UtcDatetime, utc_now
from memory_admin.store.protocol import EventLogStore, MemoryNeeds, MemoryStore, require_memory

_AGE = re.compile(r"\s*(\d+)\s*([smhdw])\s*", re.IGNORECASE)
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_age(text: str) -> timedelta:
    """``30d``, ``12h``, ``90m``, ``2w`` or ``45s`` as a positive :class:`timedelta`."""
    match = _AGE.fullmatch(text)
    if match is None or int(match.group(1)) <= 0:
        raise MemoryValidationError(
            f"{text!r} is not an age; write a positive number and a unit, e.g. 30d, 12h, 90m, 2w.",
            [{"loc": "older_than", "msg": "expected <number><s|m|h|d|w>"}],
        )
    return timedelta(**{_UNITS[match.group(2).lower()]: int(match.group(1))})


class PruneReport(BaseModel):
    """What a prune removed. Records are never part of it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    backend: str
    cutoff: UtcDatetime
    """Events strictly older than this were deleted."""
    pruned: int


def prune_events_older_than(
    store: MemoryStore, older_than: timedelta | str, *, now: datetime | None = None
) -> PruneReport:
    """Delete the events older than ``older_than`` (a :class:`timedelta` or ``"30d"``).

    The store must keep an event log (``capabilities().events``); otherwise a
    :class:`~memory_admin.errors.CapabilityError` says so. Records are untouched.
    """
    age = parse_age(older_than) if isinstance(older_than, str) else older_than
    if age <= timedelta(0):
        raise MemoryValidationError(
            "older_than must be a positive age.", [{"loc": "older_than", "msg": "must be positive"}]
        )
    caps = require_memory(store, MemoryNeeds(events=True))
    assert isinstance(store, EventLogStore)  # declared by the capability just checked
    cutoff = (now or utc_now()) - age
    return PruneReport(backend=caps.backend, cutoff=cutoff, pruned=store.prune_events(cutoff))


__all__ = ["PruneReport", "parse_age", "prune_events_older_than"]
