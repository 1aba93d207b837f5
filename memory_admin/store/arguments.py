"""The plain arguments of the store's public methods — ids, reasons, times, counts,
lists — checked before anything runs: a wrong type or a value out of range is a
:class:`~memory_admin.errors.MemoryValidationError` naming the argument, never a
``TypeError`` or an ``OverflowError`` from deep inside a backend."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from pydantic import TypeAdapter, ValidationError

from memory_admin.errors import MemoryValidationError
from memory_admin.records import MAX_ID_CHARS, MAX_REASON_CHARS, UtcDatetime, holds_lone_surrogate
from memory_admin.scope import has_control_chars

MAX_STORED_INT = 2**63 - 1
"""Event ids and counters are 64-bit signed integers in every backend."""

_UTC_TIME: TypeAdapter[datetime] = TypeAdapter(UtcDatetime)


def _refuse(loc: str, message: str, msg: str) -> MemoryValidationError:
    return MemoryValidationError(message, [{"loc": loc, "msg": msg}])


def check_id(record_id: object) -> str:
    if not isinstance(record_id, str) or not record_id or len(record_id) > MAX_ID_CHARS or has_control_chars(record_id):
        raise _refuse(
            "record_id", "A record id is a non-empty string of at most 64 printable characters.", "invalid record id"
        )
    return record_id


def clean_reason(reason: object) -> str | None:
    """An invalidation reason, whitespace-collapsed (``None`` when blank)."""
    if reason is None:
        return None
    if not isinstance(reason, str):
        raise _refuse("reason", "An invalidation reason is text (or None).", "expected a string")
    cleaned = " ".join(reason.split())
    if len(cleaned) > MAX_REASON_CHARS:
        raise _refuse("reason", f"An invalidation reason holds at most {MAX_REASON_CHARS} characters.", "too long")
    if has_control_chars(cleaned) or holds_lone_surrogate(cleaned):
        raise _refuse("reason", "An invalidation reason is printable text.", "control characters or invalid text")
    return cleaned or None


def check_event_id(event_id: object, what: str = "event") -> int:
    """A positive 64-bit integer: an event's id, or another numbered row's (``what``)."""
    if isinstance(event_id, bool) or not isinstance(event_id, int) or not 1 <= event_id <= MAX_STORED_INT:
        article = "An" if what[0] in "aeiou" else "A"
        raise _refuse(f"{what}_id", f"{article} {what} id is a positive integer.", f"invalid {what} id")
    return event_id


def check_count(value: object, loc: str, *, optional: bool = False) -> Any:
    """A positive integer (or ``None`` where ``optional``)."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_STORED_INT:
        raise _refuse(loc, f"{loc} is a positive integer.", "must be at least 1")
    return value


def check_time(value: object, loc: str) -> datetime:
    """A timezone-aware time (a datetime or ISO text), in UTC."""
    try:
        return _UTC_TIME.validate_python(value)
    except ValidationError:
        raise _refuse(
            loc, f"{loc} is a timezone-aware time (e.g. 2026-01-05T09:00:00+00:00).", "invalid time"
        ) from None


def check_list(values: object, loc: str) -> Sequence[Any]:
    """A list (or tuple) of items — never one item, a string or a mapping."""
    if isinstance(values, str | bytes | Mapping) or not isinstance(values, Sequence):
        raise _refuse(loc, f"{loc} is a list.", "expected a list")
    return values


__all__ = ["MAX_STORED_INT", "check_count", "check_event_id", "check_id", "check_list", "check_time", "clean_reason"]
