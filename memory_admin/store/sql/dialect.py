"""What differs between the two SQL databases' text, and the record filters built on it.

A :class:`Dialect` answers a handful of questions — the placeholder, list parameters,
tag containment, the time codec, JSON parameters, the records' integer key — and every
builder shared by both backends asks it. Both dialects live here, side by side, so what
SQLite and PostgreSQL do differently reads in one file.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from memory_admin.scope import TENANT_KEY, Scope, scope_json
from memory_admin.store.ids import from_value, ulid_value
from memory_admin.store.plan import SearchPlan, now_us
from memory_admin.store.session import Statement


class Dialect(ABC):
    """What differs between the SQL backends' text, and nothing else. ``p`` is the
    placeholder; ``key`` the records' integer key column (it follows insertion order);
    ``true`` the literal for an empty condition."""

    p: str
    key: str
    true: str

    @abstractmethod
    def to_db_time(self, value: datetime) -> Any: ...

    @abstractmethod
    def from_db_time(self, value: Any) -> datetime: ...

    @abstractmethod
    def one_of(self, column: str, values: Iterable[Any]) -> tuple[str, list[Any]]:
        """``column`` is one of ``values`` (one list parameter, however long)."""

    @abstractmethod
    def tags_contain(self, column: str, tags: Sequence[str]) -> tuple[str, list[Any]]:
        """The JSON array in ``column`` holds every one of ``tags``."""

    @abstractmethod
    def key_prefix(self, column: str, prefixes: Sequence[str]) -> tuple[str, list[Any]]:
        """``column`` starts with one of ``prefixes``."""

    @abstractmethod
    def events_under(self, scope: Scope) -> tuple[str, list[Any]]:
        """Events whose scope contains ``scope``'s pairs (subset match: ``user=u1``
        never reaches ``user=u10``)."""

    @abstractmethod
    def flag(self, column: str, value: bool) -> str:
        """A boolean column equals ``value``."""

    @abstractmethod
    def json_param(self) -> str:
        """The placeholder of a parameter stored in a JSON column."""

    def id_param(self, record_id: str) -> Any:
        """A record id as the ``id`` column stores it."""
        return record_id

    def id_text(self, stored: Any) -> str:
        """A record id from the ``id`` column's raw value (the inverse of :meth:`id_param`)."""
        return str(stored)

    def id_list(self, column: str, ids: Sequence[str]) -> tuple[str, list[Any]]:
        """``column`` (a record id column) is one of ``ids`` (at most 500)."""
        return self.one_of(column, [self.id_param(record_id) for record_id in ids])

    def lock_rows(self, alias: str) -> str:
        """What a select appends to hold its rows of ``alias`` until the unit ends (nothing
        where the unit's write lock holds everything already)."""
        return ""

    def learnings_lock(self, tenant: str) -> Statement | None:
        """What serialises the units that change a tenant's promotion states; ``None``:
        one write lock already does."""
        return None

    @abstractmethod
    def promoted(self, promoted: bool) -> str:
        """A condition on ``r``: its record is promoted now (``promoted``), or is not."""

    def forgetting_lock(self, forgetting: bool) -> Statement | None:
        """What orders a unit that forgets (``forgetting``) against an event batch's unit,
        where their transactions alone do not; ``None``: one write lock already does."""
        return None

    def insert_rows(self, table: str, columns: Sequence[tuple[str, str]], rows: Sequence[Sequence[Any]]) -> Statement:
        """One statement inserting ``rows`` into ``columns`` (name, SQL type) of ``table``.
        By default the insert runs once per row (``executemany``)."""
        marks = ", ".join(self.json_param() if kind == "jsonb" else self.p for _, kind in columns)
        names = ", ".join(name for name, _ in columns)
        return Statement(f"INSERT INTO {table} ({names}) VALUES ({marks})", list(rows), many=True)


# --- SQLite ------------------------------------------------------------------------------


def json_list(values: Iterable[Any]) -> str:
    """A list parameter as SQLite takes one: JSON text, read back with ``json_each``."""
    return json.dumps(list(values))


def id_key(record_id: str) -> bytes | str:
    """How SQLite stores an id: a canonical id as its 16 bytes (half the size of its
    text, in the row and in the unique index), any other id as text."""
    value = ulid_value(record_id)
    return record_id if value is None else value.to_bytes(16, "big")


class SqliteDialect(Dialect):
    p = "?"
    key = "rid"
    true = "1"

    def to_db_time(self, value: datetime) -> int:
        return now_us(value)

    def from_db_time(self, value: Any) -> datetime:
        if not isinstance(value, int):
            raise TypeError(f"timestamp column holds {type(value).__name__}, expected integer microseconds")
        return datetime.fromtimestamp(value // 1_000_000, UTC).replace(microsecond=value % 1_000_000)

    def one_of(self, column: str, values: Iterable[Any]) -> tuple[str, list[Any]]:
        listed = list(values)
        if len(listed) == 1:  # the planner compares one value per row without a subquery
            return f"{column} = ?", listed
        return f"{column} IN (SELECT value FROM json_each(?))", [json_list(listed)]

    def tags_contain(self, column: str, tags: Sequence[str]) -> tuple[str, list[Any]]:
        return " AND ".join(f"EXISTS (SELECT 1 FROM json_each({column}) WHERE value = ?)" for _ in tags), list(tags)

    def key_prefix(self, column: str, prefixes: Sequence[str]) -> tuple[str, list[Any]]:
        clause = "(" + " OR ".join(f"substr({column}, 1, ?) = ?" for _ in prefixes) + ")"
        return clause, [value for prefix in prefixes for value in (len(prefix), prefix)]

    def events_under(self, scope: Scope) -> tuple[str, list[Any]]:
        clauses = ["tenant = ?"]
        params: list[Any] = [scope[TENANT_KEY]]
        for key, value in scope.items():
            if key != TENANT_KEY:
                # keys are validated identifiers, so the JSON path cannot be malformed
                clauses.append("json_extract(scope, ?) = ?")
                params += [f"$.{key}", value]
        return " AND ".join(clauses), params

    def flag(self, column: str, value: bool) -> str:
        return f"{column} = {int(value)}"

    def json_param(self) -> str:
        return "?"

    def id_param(self, record_id: str) -> Any:
        return id_key(record_id)

    def promoted(self, promoted: bool) -> str:
        # the promotion row's key is the record's: a primary-key probe per row, cheaper here
        # than an ephemeral index of every promoted key built for each statement
        probe = "EXISTS (SELECT 1 FROM memory_promotions lp WHERE lp.rid = r.rid AND lp.state = 'promoted')"
        return probe if promoted else f"NOT {probe}"

    def id_list(self, column: str, ids: Sequence[str]) -> tuple[str, list[Any]]:
        # JSON cannot carry the binary form of an id: one mark each
        return f"{column} IN ({', '.join('?' * len(ids))})", [id_key(record_id) for record_id in ids]

    def id_text(self, stored: Any) -> str:
        return from_value(int.from_bytes(stored, "big")) if isinstance(stored, bytes) else str(stored)

    def insert_rows(self, table: str, columns: Sequence[tuple[str, str]], rows: Sequence[Sequence[Any]]) -> Statement:
        # one statement over one JSON array of the rows: SQLite inserts them all in one
        # step, so the writing thread lets go of the GIL once, not once a row (a thread
        # that takes it back row by row slows every other thread of the process)
        names = ", ".join(name for name, _ in columns)
        values = ", ".join(f"json_extract(value, '$[{i}]')" for i in range(len(columns)))
        return Statement(
            f"INSERT INTO {table} ({names}) SELECT {values} FROM json_each(?)",
            [json.dumps(rows, ensure_ascii=False)],
        )


SQLITE = SqliteDialect()


# --- PostgreSQL --------------------------------------------------------------------------


def _json_time(value: Any) -> str:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON")


class PostgresDialect(Dialect):
    p = "%s"
    key = "seq"
    true = "TRUE"

    def to_db_time(self, value: datetime) -> datetime:
        return value

    def from_db_time(self, value: Any) -> datetime:
        if not isinstance(value, datetime) or value.tzinfo is None:
            raise TypeError(f"timestamp column holds {type(value).__name__}, expected timestamptz")
        return value.astimezone(UTC)

    def forgetting_lock(self, forgetting: bool) -> Statement:
        # batches share the lock with each other; a forgetting waits for the batches
        # committing now, and the batches that start later wait for it
        mode = "ROW EXCLUSIVE" if forgetting else "SHARE"
        return Statement(f"LOCK TABLE memory_forgetting IN {mode} MODE")

    def one_of(self, column: str, values: Iterable[Any]) -> tuple[str, list[Any]]:
        return f"{column} = ANY(%s)", [list(values)]

    def lock_rows(self, alias: str) -> str:
        return f" ORDER BY r.id FOR UPDATE OF {alias}"

    def promoted(self, promoted: bool) -> str:
        # uncorrelated: the (few) promoted keys read once per statement, through the partial
        # index that holds exactly them, into a hashed subplan; a row's test is a lookup
        # (a correlated probe per row cost recall 1.15-1.7x)
        keys = "SELECT lp.seq FROM memory_promotions lp WHERE lp.state = 'promoted'"
        return f"r.seq {'IN' if promoted else 'NOT IN'} ({keys})"

    def learnings_lock(self, tenant: str) -> Statement:
        # one transaction at a time changes a tenant's promotion states (two-key form, its
        # own class of advisory locks beside the migration's)
        return Statement("SELECT pg_advisory_xact_lock(1818584934, hashtext(%s))", [tenant])

    def tags_contain(self, column: str, tags: Sequence[str]) -> tuple[str, list[Any]]:
        return f"{column}::jsonb @> %s::jsonb", [json.dumps(list(tags), ensure_ascii=False)]

    def key_prefix(self, column: str, prefixes: Sequence[str]) -> tuple[str, list[Any]]:
        return (
            f"EXISTS (SELECT 1 FROM unnest(%s::text[]) AS k(prefix) WHERE starts_with({column}, k.prefix))",
            [list(prefixes)],
        )

    def insert_rows(self, table: str, columns: Sequence[tuple[str, str]], rows: Sequence[Sequence[Any]]) -> Statement:
        # one statement over one JSON array of the rows: the server runs one insert, not
        # one per row (a row's own statement costs as much as the row), and the client
        # encodes the batch in one call
        names = [name for name, _ in columns]
        shape = ", ".join(f"{name} {'text' if kind == 'jsonb' else kind}" for name, kind in columns)
        values = ", ".join(f"x.{name}::jsonb" if kind == "jsonb" else f"x.{name}" for name, kind in columns)
        batch = json.dumps([dict(zip(names, row, strict=True)) for row in rows], default=_json_time, ensure_ascii=False)
        return Statement(
            f"INSERT INTO {table} ({', '.join(names)}) SELECT {values} FROM json_to_recordset(%s::json) AS x({shape})",
            [batch],
        )

    def events_under(self, scope: Scope) -> tuple[str, list[Any]]:
        # jsonb containment is exactly subset match: user=u1 never contains user=u10
        return "tenant = %s AND scope @> %s::jsonb", [scope[TENANT_KEY], scope_json(scope)]

    def flag(self, column: str, value: bool) -> str:
        return column if value else f"NOT {column}"

    def json_param(self) -> str:
        return "%s::jsonb"


POSTGRES = PostgresDialect()


# --- filters both build ------------------------------------------------------------------


class Clauses:
    """SQL conditions and their parameters, gathered in order and joined with AND."""

    def __init__(self) -> None:
        self.clauses: list[str] = []
        self.params: list[Any] = []

    def add(self, clause: str, values: Sequence[Any] = ()) -> None:
        self.clauses.append(clause)
        self.params.extend(values)

    def where(self, empty: str) -> tuple[str, list[Any]]:
        return (" AND ".join(self.clauses) or empty), self.params


def record_filters(d: Dialect, plan: SearchPlan) -> tuple[str, list[Any]]:
    """SQL conditions on ``r`` (the records table) for every filter of a search plan
    except scope and text: kinds, tags, keys, the target and promotion flags, expiry,
    ``as_of`` and invalidation."""
    query = plan.query
    found = Clauses()
    add = found.add
    if query.kinds is not None:
        # kinds are a closed set of words (validated): written into the SQL, so that an
        # index made for one kind can be chosen
        words = [f"'{kind}'" for kind in query.kinds]
        add(f"r.kind = {words[0]}" if len(words) == 1 else f"r.kind IN ({', '.join(words)})")
    if query.tags:
        add(*d.tags_contain("r.tags", query.tags))
    if query.keys is not None:
        add(*(d.one_of("r.key", query.keys) if query.key_match == "exact" else d.key_prefix("r.key", query.keys)))
    if query.targeted is not None:
        add("r.target IS NOT NULL" if query.targeted else "r.target IS NULL")
    if query.promoted is not None:
        add(d.promoted(query.promoted))
    if not plan.include_expired:
        add(f"(r.expires_at IS NULL OR r.expires_at > {d.p})", [d.to_db_time(plan.now)])
    if query.as_of is not None:
        as_of = d.to_db_time(query.as_of)
        add(f"r.created_at <= {d.p} AND (r.expires_at IS NULL OR r.expires_at > {d.p})", [as_of, as_of])
        if not query.include_invalidated:
            add(f"(r.invalid_at IS NULL OR r.invalid_at > {d.p})", [as_of])
    elif not query.include_invalidated:
        add("r.invalid_at IS NULL")
    return found.where(d.true)


__all__ = [
    "POSTGRES",
    "SQLITE",
    "Clauses",
    "Dialect",
    "PostgresDialect",
    "SqliteDialect",
    "id_key",
    "json_list",
    "record_filters",
]
