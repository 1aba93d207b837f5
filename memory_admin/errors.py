"""The typed errors every surface of memory_admin raises.

One small hierarchy under :class:`MemoryStoreError` (never Python's builtin
``MemoryError``, which means the interpreter ran out of RAM). Each error says what
happened and what to do next, and carries structured extras so a toolbox, a CLI and
the dashboard can render it without parsing the message.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


class MemoryStoreError(Exception):
    """Base of every error the store library raises on purpose."""

    code = "memory_error"

    def __init__(self, message: str, **extras: Any) -> None:
        super().__init__(message)
        self.message = message
        self.extras: dict[str, Any] = extras

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable description: ``{"error": code, "message": ..., **extras}``."""
        return {"error": self.code, "message": self.message, **self.extras}


class MemoryValidationError(MemoryStoreError, ValueError):
    """Input that breaks the contract: a blank content, a bad scope key, a past expiry.

    ``problems`` lists ``{"loc": ..., "msg": ...}`` entries, one per broken field.
    """

    code = "validation_error"

    def __init__(self, message: str, problems: Iterable[Mapping[str, Any]] = ()) -> None:
        self.problems = [dict(p) for p in problems]
        super().__init__(message, problems=self.problems)


class CompositionError(MemoryValidationError):
    """An agent composition that does not hold: a file that cannot be read or parsed, or
    content that breaks the composition's rules. ``path`` names the file (``None`` for a
    composition given as data), ``line`` and ``column`` the place where the parser gives
    one, and ``problems`` each broken field's path (``judgments.0.domain``)."""

    code = "composition_error"

    def __init__(
        self,
        message: str,
        problems: Iterable[Mapping[str, Any]] = (),
        *,
        path: str | None = None,
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        super().__init__(message, problems)
        self.path = path
        self.line = line
        self.column = column
        self.extras.update(path=path, line=line, column=column)


class MemoryScopeError(MemoryStoreError):
    """An operation reached outside the scope it was allowed, or lacked one entirely."""

    code = "scope_error"


class MemoryNotFoundError(MemoryStoreError, LookupError):
    """The record does not exist (or is not visible from here: the message never says which)."""

    code = "not_found"

    def __init__(self, record_id: str, message: str | None = None) -> None:
        self.record_id = record_id
        super().__init__(message or f"No memory record {record_id!r}.", record_id=record_id)


class MemoryConflictError(MemoryStoreError):
    """The write would break the invalidation chain: superseding an invalid record,
    two successors for one record, or a key slot held by another live record."""

    code = "conflict"


class MemoryLimitError(MemoryStoreError):
    """A value larger than the backend declares it holds; refused at the write."""

    code = "limit_exceeded"


class MemoryCorruptionError(MemoryStoreError):
    """A stored row no longer validates. Carries the id and the raw payload; a corrupt
    row is never dropped silently, from a read or from a search."""

    code = "corruption"

    def __init__(
        self, record_id: str, raw: Mapping[str, Any], detail: str, *, scope: Mapping[str, str] | None = None
    ) -> None:
        self.record_id = record_id
        self.raw = dict(raw)
        # the row's scope when it still parses (a flat map of strings), so a curator can
        # find and repair the row without reading the raw payload
        self.scope: dict[str, str] | None = dict(scope) if scope is not None else None
        super().__init__(
            f"Stored memory record {record_id!r} is corrupt ({detail}). "
            "Inspect the raw payload, then repair or delete the row.",
            record_id=record_id,
            raw=self.raw,
            detail=detail,
        )


class CapabilityError(MemoryStoreError):
    """The store lacks capabilities the caller needs; names every missing one at once."""

    code = "capability_missing"

    def __init__(self, store: str, missing: Iterable[str], *, hint: str | None = None) -> None:
        self.store = store
        self.missing = sorted(missing)
        advice = hint or "Choose a backend that declares them, or drop the need."
        super().__init__(f"{store} lacks: {', '.join(self.missing)}. {advice}", store=store, missing=self.missing)


class SchemaVersionError(MemoryStoreError):
    """The store's schema is newer than this code understands: upgrade memory_admin."""

    code = "schema_version"

    def __init__(self, location: str, found: int, supported: int) -> None:
        self.found = found
        self.supported = supported
        super().__init__(
            f"{location} has schema version {found}, but this memory_admin understands "
            f"versions up to {supported}. Upgrade memory_admin to open it; "
            "it was not modified.",
            location=location,
            found=found,
            supported=supported,
        )


class MemoryScrubPendingError(MemoryStoreError):
    """Forgetting committed — the records are gone from every read, index and event — but
    their bytes still sit in the store's files because another connection holds an older
    snapshot (SQLite keeps the pages it may read). Nothing is lost by waiting: run
    ``memory-admin scrub`` (or ``store.scrub()``) once readers are idle.
    ``what`` says what was forgotten; ``report`` is an erasure's report, when it was one."""

    code = "scrub_pending"
    command = "memory-admin scrub"

    def __init__(self, what: str, *, report: Any = None) -> None:
        self.what = what
        self.report = report
        super().__init__(
            f"{what} is forgotten, but its bytes remain in the store's write-ahead log while another "
            f"connection holds an older snapshot. Run `{self.command}` when readers are idle to finish.",
            what=what,
            command=self.command,
        )


class MemoryEmbedderMismatchError(MemoryStoreError):
    """The memory file's vectors were made by another model than the store's embedder:
    comparing them would rank by noise. Open the store with the embedder the file
    records, or re-embed the file for the new one (``memory-admin embed --rebuild``)."""

    code = "embedder_mismatch"
    command = "memory-admin embed --rebuild"

    def __init__(self, stored: str, configured: str) -> None:
        self.stored = stored
        self.configured = configured
        super().__init__(
            f"This memory file's vectors were made by {stored!r}, but the store embeds with {configured!r}. "
            f"Open it with the embedder it records, or run `{self.command}` to re-embed every record "
            "for the new one (keyword search works meanwhile).",
            stored=stored,
            configured=configured,
            command=self.command,
        )


class MemoryBusyError(MemoryStoreError):
    """The store stayed locked by other writers for longer than the busy timeout."""

    code = "busy"
