"""Shared by the commands: which SQLite file a store URL names, and a store that must be
there already."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings
from django.core.management.base import CommandError

from memory_admin.dashboard.stores import get_store
from memory_admin.errors import MemoryStoreError
from memory_admin.store import FullMemoryStore, store_file


def memory_file(url: str, verb: str) -> Path:
    """The memory file behind a ``sqlite:///`` URL or a bare path; any other store is refused."""
    scheme = urlsplit(url).scheme.lower() if "://" in url else ""
    if scheme in ("postgres", "postgresql"):
        raise CommandError(
            f"The store is PostgreSQL: {verb} it with pg_dump / pg_restore (see docs/operations.md), "
            "or point --store at a SQLite memory file."
        )
    if scheme == "memory":
        raise CommandError(f"memory:// lives only inside one process; there is no file to {verb}.")
    if scheme not in ("", "sqlite"):
        raise CommandError(f"Cannot {verb} a {scheme}:// store; point --store at a SQLite memory file.")
    try:
        path = store_file(url)  # the embedder parameter aside, as the store reads it
    except MemoryStoreError as exc:
        raise CommandError(exc.message) from None
    assert path is not None  # a SQLite URL or a bare path
    return path


def existing_store(url: str | None) -> FullMemoryStore:
    """The store at ``url`` (default: ``MEMORY_STORE_URL``) for a command that reads or
    curates what is there (see :func:`require_existing`)."""
    url = url or settings.MEMORY_STORE_URL
    require_existing(url)
    return get_store(url)


def require_existing(url: str | None) -> None:
    """Refuse a SQLite store whose file does not exist: opening it would create it empty,
    and a mistyped path would read as an empty store."""
    try:
        path = store_file(url)
    except MemoryStoreError as exc:
        raise CommandError(exc.message) from None
    if path is not None and not path.is_file():
        raise CommandError(
            f"No memory file at {path}. Check the store's URL (--store, MEMORY_STORE_URL); "
            "`memory-admin import` and `memory-admin demo` create one."
        )


def size_text(size: int) -> str:
    value = float(size)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")
