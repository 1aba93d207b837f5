"""The two caches a store object keeps of its reads: a least-recently-used map, and the
admission rule that keeps a value only from its key's second read.

What goes in them — records built from rows, a row's terms, vectors, query embeddings —
is emptied by every forgetting (:meth:`~memory_admin.store.core.StoreCore._forget_reads`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LruCache(Generic[K, V]):
    """A thread-safe least-recently-used map holding at most ``size`` of ``weight`` (by
    default, items); a value heavier than the whole is not kept."""

    def __init__(self, size: int, weight: Callable[[V], int] | None = None) -> None:
        self._size = size
        self._weight = weight or (lambda _: 1)
        self._items: OrderedDict[K, V] = OrderedDict()
        self._total = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: K) -> V | None:
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key: K, value: V) -> None:
        weight = self._weight(value)
        if weight > self._size:
            return
        with self._lock:
            previous = self._items.pop(key, None)
            if previous is not None:
                self._total -= self._weight(previous)
            self._items[key] = value
            self._total += weight
            while self._total > self._size:
                _, evicted = self._items.popitem(last=False)
                self._total -= self._weight(evicted)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._total = 0


class ReadAgainCache(Generic[K, V]):
    """Up to ``size`` values built from what a store read, the most recently used kept,
    each admitted from its key's second read: the first only leaves the key's hash
    behind (in a set of plain integers, emptied when it holds four times ``size``).

    Why: most rows of a large store are read once, and a value kept is objects the
    garbage collector walks until it leaves. Admitting only what is read again keeps the
    collector's young generations small, which the tail of a recall that reads a hundred
    rows depends on (at 1M records a gen-1 collection went from ~22 ms to ~1 ms;
    docs/benchmarks/store.md). Thread-safe; a key that cannot be hashed is built every time."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._values: LruCache[K, V] = LruCache(size)
        self._seen: set[int] = set()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._values)

    def clear(self) -> None:
        with self._lock:
            self._values.clear()
            self._seen.clear()

    def get(self, key: K, build: Callable[[], V]) -> V:
        """The value kept for ``key``, else ``build()`` (kept if ``key`` was read before)."""
        try:
            token = hash(key)
        except TypeError:  # a value the driver gave as a mutable type
            return build()
        found = self._values.get(key)
        if found is not None:
            return found
        with self._lock:
            admit = token in self._seen
            if not admit:
                if len(self._seen) >= 4 * self._size:
                    self._seen.clear()
                self._seen.add(token)
        value = build()
        if admit:
            self._values.put(key, value)
        return value


__all__ = ["LruCache", "ReadAgainCache"]
