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
    MemoryScrubPendingError,
    MemoryStoreError,
    MemoryValidationError,
    SchemaVersionError,
)
from memory_admin.recall import RecallResult, aassemble_recall, assemble_recall
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
from memory_admin.toolbox import MemoryPolicy, MemoryToolbox, memory_manual

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
    "MemoryPolicy",
    "MemoryRecord",
    "MemoryScopeError",
    "MemoryScrubPendingError",
    "MemorySearchQuery",
    "MemoryStore",
    "MemoryStoreError",
    "MemoryTarget",
    "MemoryToolbox",
    "MemoryValidationError",
    "MemoryWriteInput",
    "Provenance",
    "RecallResult",
    "SchemaVersionError",
    "SqliteMemoryStore",
    "aassemble_recall",
    "assemble_recall",
    "memory_manual",
    "open_store",
    "require_memory",
    "tokenize",
]
