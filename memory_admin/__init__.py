"""memory_admin: cross-session memory for LLM agents, and the dashboard to curate it."""

from __future__ import annotations

from memory_admin.errors import (
    CapabilityError,
    MemoryBusyError,
    MemoryConflictError,
    MemoryCorruptionError,
    MemoryLimitError,
    MemoryNotFoundError,
    MemoryScopeError,
    MemoryStoreError,
    MemoryValidationError,
    SchemaVersionError,
)
from memory_admin.records import (
    MemoryHit,
    MemoryRecord,
    MemorySearchQuery,
    MemoryTarget,
    MemoryWriteInput,
    Provenance,
)
from memory_admin.store import (
    InMemoryMemoryStore,
    MemoryNeeds,
    MemoryStore,
    SqliteMemoryStore,
    open_store,
    require_memory,
)
from memory_admin.tokenize import tokenize

__version__ = "0.1.0"

__all__ = [
    "CapabilityError",
    "InMemoryMemoryStore",
    "MemoryBusyError",
    "MemoryConflictError",
    "MemoryCorruptionError",
    "MemoryHit",
    "MemoryLimitError",
    "MemoryNeeds",
    "MemoryNotFoundError",
    "MemoryRecord",
    "MemoryScopeError",
    "MemorySearchQuery",
    "MemoryStore",
    "MemoryStoreError",
    "MemoryTarget",
    "MemoryValidationError",
    "MemoryWriteInput",
    "Provenance",
    "SchemaVersionError",
    "SqliteMemoryStore",
    "open_store",
    "require_memory",
    "tokenize",
]
