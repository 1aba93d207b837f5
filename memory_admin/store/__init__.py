"""Memory stores: the protocol, its backends, and :func:`open_store`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from memory_admin.errors import MemoryStoreError
from memory_admin.store.base import BaseMemoryStore
from memory_admin.store.memory import InMemoryMemoryStore
from memory_admin.store.protocol import (
    AdminMemoryStore,
    ChainLink,
    ErasableMemoryStore,
    ErasureReport,
    EventLogStore,
    FullMemoryStore,
    MemoryNeeds,
    MemoryStore,
    MemoryStoreCapabilities,
    RecordListQuery,
    RecordPage,
    ScopeCounts,
    ScopeFacet,
    require_memory,
)
from memory_admin.store.sqlite import SqliteMemoryStore

ENV_VAR = "MEMORY_STORE_URL"


def default_store_path() -> Path:
    """Where the embedded SQLite memory file lives when nothing else is configured:
    ``$XDG_STATE_HOME/memory_admin/memory.sqlite3`` (``~/.local/state`` by default)."""
    state_home = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state_home) / "memory_admin" / "memory.sqlite3"


def default_store_url() -> str:
    return os.environ.get(ENV_VAR) or f"sqlite:///{default_store_path()}"


def sqlite_path_from_url(url: str) -> Path:
    """``sqlite:///relative/path`` or ``sqlite:////absolute/path`` (SQLAlchemy's form)."""
    rest = url[len("sqlite://") :]
    if not rest.startswith("/") or len(rest) < 2:
        raise MemoryStoreError(
            f"{url!r} is not a SQLite URL; write sqlite:///relative.sqlite3 or sqlite:////abs/path.sqlite3."
        )
    return Path(unquote(rest[1:]))


def open_store(url: str | None = None, **options: Any) -> BaseMemoryStore:
    """Open the store a URL names.

    ``memory://`` (in RAM), ``sqlite:///path`` (relative) or ``sqlite:////path``
    (absolute), a bare file path (SQLite), or ``postgresql://…`` (with the
    ``postgres`` extra). Without a URL: ``$MEMORY_STORE_URL``, else a SQLite file under
    the user's state directory. ``options`` go to the backend's constructor.
    """
    url = url or default_store_url()
    scheme = urlsplit(url).scheme.lower() if "://" in url else ""
    if scheme == "memory":
        return InMemoryMemoryStore(**options)
    if scheme == "sqlite":
        return SqliteMemoryStore(sqlite_path_from_url(url), **options)
    if scheme in ("postgres", "postgresql"):
        try:
            from memory_admin.store.postgres import PostgresMemoryStore
        except ImportError as exc:
            raise MemoryStoreError(
                f"PostgreSQL needs the postgres extra: pip install 'memory-admin[postgres]' ({exc})."
            ) from None
        return PostgresMemoryStore(url, **options)
    if scheme == "":
        return SqliteMemoryStore(Path(url), **options)
    raise MemoryStoreError(f"Unknown store URL scheme {scheme!r}; use memory://, sqlite:///path or postgresql://…")


__all__ = [
    "ENV_VAR",
    "AdminMemoryStore",
    "BaseMemoryStore",
    "ChainLink",
    "ErasableMemoryStore",
    "ErasureReport",
    "EventLogStore",
    "FullMemoryStore",
    "InMemoryMemoryStore",
    "MemoryNeeds",
    "MemoryStore",
    "MemoryStoreCapabilities",
    "RecordListQuery",
    "RecordPage",
    "ScopeCounts",
    "ScopeFacet",
    "SqliteMemoryStore",
    "default_store_path",
    "default_store_url",
    "open_store",
    "require_memory",
]
