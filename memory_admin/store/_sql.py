"""Helpers shared by the SQL backends: row ↔ record conversion, scope tokens.

Both SQLite and PostgreSQL store a record as one row with JSON text for the structured
fields; this module is the one place that knows that shape, so a corrupt row is
reported the same way by every backend.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from memory_admin.errors import MemoryCorruptionError, MemoryValidationError
from memory_admin.records import MemoryRecord, validation_problems
from memory_admin.scope import AGENT_KEY, TENANT_KEY, canonical_scope

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
)

AGENT_MARK = "ag"
"""Hidden index token on every record whose scope carries the reserved agent key."""


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


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
    }


def record_from_row(row: Mapping[str, Any], from_db_time: Callable[[Any], datetime]) -> MemoryRecord:
    """Rebuild a record from its row (``scope`` holds the scope's JSON text).

    A row that no longer validates raises :class:`MemoryCorruptionError` with the id and
    the raw row; it is never skipped.
    """
    record_id = str(row.get("id"))

    def loads(column: str) -> Any:
        text = row.get(column)
        return None if text is None else json.loads(text)

    def when(column: str) -> datetime | None:
        value = row.get(column)
        return None if value is None else from_db_time(value)

    try:
        created = when("created_at")
        data = {
            "id": row["id"],
            "scope": loads("scope"),
            "kind": row["kind"],
            "content": row["content"],
            "key": row["key"],
            "tags": loads("tags") or (),
            "provenance": loads("provenance"),
            "created_at": created,
            "updated_at": when("updated_at") or created,
            "invalid_at": when("invalid_at"),
            "invalid_reason": row["invalid_reason"],
            "superseded_by": row["superseded_by"],
            "supersedes": row["supersedes"],
            "expires_at": when("expires_at"),
            "target": loads("target"),
            "payload": loads("payload"),
            "supports": loads("supports") or (),
        }
        return MemoryRecord.model_validate(data)
    except ValidationError as exc:
        detail = "; ".join(f"{p['loc']}: {p['msg']}" for p in validation_problems(exc)[:3])
        raise MemoryCorruptionError(record_id, _raw(row), detail, scope=_row_scope(row)) from None
    except (ValueError, TypeError, KeyError, OverflowError) as exc:
        raise MemoryCorruptionError(
            record_id, _raw(row), f"{type(exc).__name__}: {exc}", scope=_row_scope(row)
        ) from None


def _row_scope(row: Mapping[str, Any]) -> dict[str, str] | None:
    """The scope of a row that may be corrupt, canonical, when its JSON still makes a
    valid scope; else ``None``."""
    try:
        value = json.loads(row.get("scope") or "null")
        return canonical_scope(value) if isinstance(value, dict) else None
    except (TypeError, ValueError, MemoryValidationError):
        return None


def _raw(row: Mapping[str, Any]) -> dict[str, Any]:
    return {
        key: (value if isinstance(value, (str, int, float, type(None))) else repr(value)) for key, value in row.items()
    }
