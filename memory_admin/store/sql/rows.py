"""How a record is a row — in both SQL backends — and the records a store keeps built.

Both SQLite and PostgreSQL store a record as one row of ``memory_records`` with JSON text
for its structured fields, its scope by reference (``memory_scopes``), and hidden index
tokens for its scope pairs; this module is the one place that knows those shapes:

- the columns (:data:`RECORD_COLUMNS`), each backend's record select and insert columns
  (SQLite keeps provenance as four plain columns, PostgreSQL as JSON);
- the codec (:func:`record_values` one way, :class:`RecordCodec` the other), so a corrupt
  row is reported the same way by every backend and never dropped;
- the store's :class:`RecordCache` of records built from rows;
- the hidden tokens of a scope (SQLite's full-text ``meta`` column, PostgreSQL's lexemes);
- an event's row in the event log.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from memory_admin import tuning
from memory_admin.errors import MemoryCorruptionError, MemoryValidationError
from memory_admin.events import AnyEvent, MemoryRecallEvent
from memory_admin.records import MemoryRecord, validation_problems
from memory_admin.scope import AGENT_KEY, TENANT_KEY, canonical_scope, scope_json
from memory_admin.store.caches import ReadAgainCache
from memory_admin.store.plan import now_us
from memory_admin.store.sql.dialect import Dialect, id_key

RECORD_COLUMNS = (
    "id",
    "kind",
    "key",
    "content",
    "tags",
    "provenance",
    "created_at",
    "updated_at",
    "invalid_at",
    "invalid_reason",
    "superseded_by",
    "supersedes",
    "expires_at",
    "target",
    "payload",
    "supports",
    "observed_at",
)
"""A record's own columns (its scope is a reference, its key columns the backend's)."""

RECORD_FROM = " FROM memory_records r JOIN memory_scopes s ON s.scope_id = r.scope_id"
"""Where every record select reads from (``r`` the records, ``s`` their scopes)."""

# --- SQLite ------------------------------------------------------------------------------

PROVENANCE_COLUMNS = ("source", "author", "conversation_id", "run_id")
"""SQLite keeps provenance as four plain columns (queryable, and half the bytes of its JSON)."""
_SQLITE_OWN = tuple(c for c in RECORD_COLUMNS if c != "provenance")
SQLITE_COLUMNS = (
    "r.rid AS rid, s.scope AS scope, "
    + ", ".join(f"r.{c} AS {c}" for c in _SQLITE_OWN)
    + ", json_object("
    + ", ".join(f"'{c}', r.{c}" for c in PROVENANCE_COLUMNS)
    + ") AS provenance"
)
"""SQLite's record columns (``r`` the records, ``s`` their scopes), in :data:`SQLITE_NAMES` order."""
SQLITE_SELECT = "SELECT " + SQLITE_COLUMNS
"""SQLite's record select, up to its FROM clause (:data:`RECORD_FROM`, or a variant)."""
SQLITE_NAMES = ("rid", "scope", *_SQLITE_OWN, "provenance")
"""The columns of :data:`SQLITE_SELECT`, in order."""
SQLITE_ROW_COLUMNS = ("rid", "scope_id", *_SQLITE_OWN, *PROVENANCE_COLUMNS)
"""The columns a SQLite insert writes, in :func:`sqlite_row`'s order."""


def sqlite_row(record: MemoryRecord, rid: int, scope_id: int) -> tuple[Any, ...]:
    """A record's SQLite row, in :data:`SQLITE_ROW_COLUMNS` order (a batch builds thousands)."""
    values = record_values(record, now_us, provenance_json=False)
    values["id"] = id_key(record.id)
    values["rid"] = rid
    values["scope_id"] = scope_id
    provenance = record.provenance
    values["source"] = provenance.source
    values["author"] = provenance.author
    values["conversation_id"] = provenance.conversation_id
    values["run_id"] = provenance.run_id
    return tuple(values[column] for column in SQLITE_ROW_COLUMNS)


# --- PostgreSQL --------------------------------------------------------------------------

POSTGRES_COLUMNS = "r.seq AS seq, r.scope_id AS scope_id, s.scope AS scope, " + ", ".join(
    f"r.{c} AS {c}" for c in RECORD_COLUMNS
)
"""PostgreSQL's record columns, in :data:`POSTGRES_NAMES` order."""
POSTGRES_SELECT = "SELECT " + POSTGRES_COLUMNS
"""PostgreSQL's record select, up to its FROM clause (:data:`RECORD_FROM`)."""
POSTGRES_NAMES = ("seq", "scope_id", "scope", *RECORD_COLUMNS)
"""The columns of :data:`POSTGRES_SELECT`, in order."""
POSTGRES_INSERT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("scope_id", "bigint"),
    ("tenant", "text"),
    *((c, "timestamptz" if c.endswith("_at") else "text") for c in RECORD_COLUMNS),
    ("n_tokens", "integer"),
    ("tsv", "tsvector"),
)
"""The columns a PostgreSQL insert writes and their SQL types, in the order it binds them."""


# --- the codec ---------------------------------------------------------------------------


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def record_values(
    record: MemoryRecord, to_db_time: Callable[[datetime], Any], *, provenance_json: bool = True
) -> dict[str, Any]:
    """The column values of a record (scope excluded: backends store it by reference)."""

    def when(value: datetime | None) -> Any:
        return None if value is None else to_db_time(value)

    return {
        "id": record.id,
        "kind": record.kind,
        "key": record.key,
        "content": record.content,
        "tags": dumps(list(record.tags)) if record.tags else None,
        "provenance": record.provenance.model_dump_json(exclude_none=True) if provenance_json else None,
        "created_at": to_db_time(record.created_at),
        "updated_at": None if record.updated_at == record.created_at else to_db_time(record.updated_at),
        "invalid_at": when(record.invalid_at),
        "invalid_reason": record.invalid_reason,
        "superseded_by": record.superseded_by,
        "supersedes": record.supersedes,
        "expires_at": when(record.expires_at),
        "target": record.target.model_dump_json() if record.target else None,
        "payload": dumps(record.payload) if record.payload is not None else None,
        "supports": dumps([p.model_dump(exclude_none=True) for p in record.supports]) if record.supports else None,
        # stored only when it says more than created_at
        "observed_at": None if record.observed_at == record.created_at else to_db_time(record.observed_at),
    }


class RecordCodec:
    """Records from the rows of one record select, whose columns are ``names`` in order:
    a row, read as a plain tuple, becomes the model's fields and then the model, with no
    dictionary of the row in between. A row that no longer validates raises
    :class:`MemoryCorruptionError` with the id and the raw row; it is never skipped."""

    def __init__(self, names: Sequence[str], dialect: Dialect) -> None:
        self.names = tuple(names)
        self._at = {name: index for index, name in enumerate(self.names)}
        self._dialect = dialect

    def values_of(self, row: Mapping[str, Any]) -> tuple[Any, ...]:
        """A row read by column name, as this select's tuple."""
        return tuple(row[name] for name in self.names)

    def record(self, values: Sequence[Any]) -> MemoryRecord:
        at, d = self._at, self._dialect
        from_db_time = d.from_db_time
        record_id = d.id_text(values[at["id"]])

        def loads(column: str) -> Any:
            text = values[at[column]]
            return None if text is None else json.loads(text)

        def when(column: str) -> datetime | None:
            value = values[at[column]]
            return None if value is None else from_db_time(value)

        try:
            created = when("created_at")
            return MemoryRecord.model_validate(
                {
                    "id": record_id,
                    "scope": loads("scope"),
                    "kind": values[at["kind"]],
                    "content": values[at["content"]],
                    "key": values[at["key"]],
                    "tags": loads("tags") or (),
                    "provenance": loads("provenance"),
                    "created_at": created,
                    "updated_at": when("updated_at") or created,
                    "invalid_at": when("invalid_at"),
                    "invalid_reason": values[at["invalid_reason"]],
                    "superseded_by": values[at["superseded_by"]],
                    "supersedes": values[at["supersedes"]],
                    "expires_at": when("expires_at"),
                    "target": loads("target"),
                    "payload": loads("payload"),
                    "supports": loads("supports") or (),
                    "observed_at": when("observed_at") or created,
                }
            )
        except ValidationError as exc:
            detail = "; ".join(f"{p['loc']}: {p['msg']}" for p in validation_problems(exc)[:3])
            raise self._corrupt(record_id, values, detail) from None
        except (ValueError, TypeError, KeyError, OverflowError) as exc:
            raise self._corrupt(record_id, values, f"{type(exc).__name__}: {exc}") from None

    def _corrupt(self, record_id: str, values: Sequence[Any], detail: str) -> MemoryCorruptionError:
        raw = {
            name: value if isinstance(value, (str, int, float, type(None))) else repr(value)
            for name, value in zip(self.names, values, strict=True)
        }
        raw["id"] = record_id
        return MemoryCorruptionError(record_id, raw, detail, scope=_row_scope(values[self._at["scope"]]))


def _row_scope(text: Any) -> dict[str, str] | None:
    """The scope of a row that may be corrupt, canonical, when its JSON still makes a
    valid scope; else ``None``."""
    try:
        value = json.loads(text or "null")
        return canonical_scope(value) if isinstance(value, dict) else None
    except (TypeError, ValueError, MemoryValidationError):
        return None


class RecordCache:
    """A store's records built from rows (:class:`RecordCodec`), keyed by the whole row
    as read — every column, so a record that changed is a new row and is built again. A
    row read again is not validated again: a tenant's shared records come back in every
    user's recall, and a recall's profile records among its hits. Records are frozen and
    shared, as the in-memory store shares its own. A row is kept from its second read
    (:class:`~memory_admin.store.caches.ReadAgainCache`); one that fails to validate is
    never kept (it raises each time it is read)."""

    def __init__(self, codec: RecordCodec, size: int = tuning.RECORD_CACHE_SIZE) -> None:
        self.codec = codec
        self._cache: ReadAgainCache[tuple[Any, ...], MemoryRecord] = ReadAgainCache(size)

    def __len__(self) -> int:
        return len(self._cache)

    def clear(self) -> None:
        self._cache.clear()

    def record(self, values: tuple[Any, ...]) -> MemoryRecord:
        """The record of a row read as a plain tuple of the codec's select."""
        return self._cache.get(values, lambda: self.codec.record(values))

    def records(self, rows: Sequence[tuple[Any, ...]]) -> list[MemoryRecord]:
        return [self.record(values) for values in rows]


# --- the hidden index tokens of a scope --------------------------------------------------

AGENT_MARK = "ag"
"""Hidden index token on every record whose scope carries the reserved agent key."""


def pair_token(key: str, value: str) -> str:
    """The hidden index token of one scope pair: letters and digits only, so no
    tokenizer splits it and no user text can spell it (user tokens match other columns)."""
    digest = hashlib.blake2b(f"{key}={value}".encode(), digest_size=10).hexdigest()
    return "p" + digest


def tenant_pair_token(tenant: str, key: str, value: str) -> str:
    """Like :func:`pair_token`, qualified by tenant: ``user=u1`` of two tenants are two
    tokens, so a user's token lists exactly that user's records and a scoped search can
    match on it alone."""
    if key == TENANT_KEY:
        return "t" + hashlib.blake2b(value.encode(), digest_size=10).hexdigest()
    digest = hashlib.blake2b(f"{tenant}\x1f{key}={value}".encode(), digest_size=10).hexdigest()
    return "p" + digest


def filter_tokens(scope: Mapping[str, str]) -> list[str]:
    """The hidden tokens a record must all hold to match ``scope`` as a subset filter.
    The tenant token is implied by any other pair's, so it is needed only alone."""
    tenant = scope[TENANT_KEY]
    pairs = [tenant_pair_token(tenant, key, value) for key, value in sorted(scope.items()) if key != TENANT_KEY]
    return pairs or [tenant_pair_token(tenant, TENANT_KEY, tenant)]


def scope_tokens(scope: Mapping[str, str], scope_id: int) -> str:
    """Hidden index tokens for a scope: one per pair (tenant-qualified), one for the
    scope itself, and the agent marker when the scope names an agent."""
    tenant = scope[TENANT_KEY]
    tokens = [tenant_pair_token(tenant, key, value) for key, value in sorted(scope.items())]
    tokens.append(f"s{scope_id}")
    if AGENT_KEY in scope:
        tokens.append(AGENT_MARK)
    return " ".join(tokens)


# --- an event's row ----------------------------------------------------------------------

EVENT_COLUMNS = (
    ("type", "text"),
    ("at", "timestamptz"),
    ("tenant", "text"),
    ("scope", "jsonb"),
    ("agent", "text"),
    ("preview", "boolean"),
    ("body", "text"),
)
"""The event log's columns after its id, in :func:`event_row`'s order, with their types."""


def event_row(d: Dialect, event: AnyEvent) -> list[Any]:
    """The event log's columns after its id, in table order."""
    return [
        event.type,
        d.to_db_time(event.at),
        event.scope[TENANT_KEY],
        scope_json(event.scope),
        event.agent,
        isinstance(event, MemoryRecallEvent) and event.preview_run,
        event.model_dump_json(),
    ]


__all__ = [
    "AGENT_MARK",
    "EVENT_COLUMNS",
    "POSTGRES_COLUMNS",
    "POSTGRES_INSERT_COLUMNS",
    "POSTGRES_NAMES",
    "POSTGRES_SELECT",
    "PROVENANCE_COLUMNS",
    "RECORD_COLUMNS",
    "RECORD_FROM",
    "SQLITE_COLUMNS",
    "SQLITE_NAMES",
    "SQLITE_ROW_COLUMNS",
    "SQLITE_SELECT",
    "RecordCache",
    "RecordCodec",
    "dumps",
    "event_row",
    "filter_tokens",
    "pair_token",
    "record_values",
    "scope_tokens",
    "sqlite_row",
    "tenant_pair_token",
]
