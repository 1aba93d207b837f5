"""The one place the dashboard builds its memory store from settings."""

from __future__ import annotations

import threading

from django.conf import settings

from memory_admin.store import FullMemoryStore, open_store

_lock = threading.Lock()
_stores: dict[str, FullMemoryStore] = {}


def get_store(url: str | None = None) -> FullMemoryStore:
    """The process-wide store for ``url`` (default: ``settings.MEMORY_STORE_URL``)."""
    url = url or settings.MEMORY_STORE_URL
    with _lock:
        store = _stores.get(url)
        if store is None:
            store = _stores[url] = open_store(url)
        return store


def reset_stores() -> None:
    """Close every cached store (tests, and after the settings change)."""
    with _lock:
        for store in _stores.values():
            store.close()
        _stores.clear()
