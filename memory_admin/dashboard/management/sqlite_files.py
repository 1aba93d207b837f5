"""Shared by the backup and restore commands: which SQLite file a store URL names."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from django.core.management.base import CommandError

from memory_admin.errors import MemoryStoreError
from memory_admin.store import sqlite_path_from_url


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
    if scheme == "":
        return Path(url)
    if scheme != "sqlite":
        raise CommandError(f"Cannot {verb} a {scheme}:// store; point --store at a SQLite memory file.")
    try:
        return sqlite_path_from_url(url)
    except MemoryStoreError as exc:
        raise CommandError(exc.message) from None


def size_text(size: int) -> str:
    value = float(size)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")
