"""Record ids: ``mem_`` + a ULID (Crockford base32, 26 characters).

ULIDs sort by creation time; within one millisecond this generator increments the
random part, so the ids of one batch sort in input order.
"""

from __future__ import annotations

import secrets
import threading
from datetime import datetime

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
PREFIX = "mem_"


_PAIRS = [a + b for a in _ALPHABET for b in _ALPHABET]  # 10 bits per lookup


def _encode(value: int) -> str:
    """128 bits as 26 Crockford base32 characters (the first holds the top 3 bits)."""
    chunks = []
    for _ in range(13):
        chunks.append(_PAIRS[value & 1023])
        value >>= 10
    return "".join(reversed(chunks))


class IdFactory:
    """Thread-safe, monotonic ULID ids."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last = 0

    def batch(self, at: datetime, count: int) -> list[str]:
        """``count`` ids for one batch, in order."""
        millis = int(at.timestamp() * 1000) & ((1 << 48) - 1)
        with self._lock:
            first = max((millis << 80) | secrets.randbits(80), self._last + 1)
            self._last = first + count - 1
        return [PREFIX + _encode(first + offset) for offset in range(count)]

    def new(self, at: datetime) -> str:
        millis = int(at.timestamp() * 1000) & ((1 << 48) - 1)
        with self._lock:
            candidate = (millis << 80) | secrets.randbits(80)
            if candidate <= self._last:
                candidate = self._last + 1
            self._last = candidate
        return PREFIX + _encode(candidate)


# Crockford digits → Python's base-32 digits (0-9a-v); anything else → "!", which
# int() refuses, so only canonical ids decode
_TO_PY32 = str.maketrans(
    {chr(code): "!" for code in range(128)}
    | {char: "0123456789abcdefghijklmnopqrstuv"[i] for i, char in enumerate(_ALPHABET)}
)


def ulid_value(record_id: str) -> int | None:
    """The 128-bit value of a canonical id (``mem_`` + 26 upper-case Crockford
    characters), or ``None`` for any other string. ``from_value(ulid_value(x)) == x``."""
    if len(record_id) != len(PREFIX) + 26 or not record_id.startswith(PREFIX) or not record_id.isascii():
        return None
    try:
        value = int(record_id[len(PREFIX) :].translate(_TO_PY32), 32)
    except ValueError:
        return None
    return value if value < (1 << 128) else None


def from_value(value: int) -> str:
    return PREFIX + _encode(value)
