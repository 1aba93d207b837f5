"""The SQL layer both SQL backends build on.

Both SQLite and PostgreSQL store a record as one row with JSON text for the structured
fields; this module is the one place that knows that shape, so a corrupt row is
reported the same way by every backend. Every piece of SQL is an *op*: a generator that
yields :class:`Statement` objects and receives their rows, each indexable by column
name (see :mod:`memory_admin.steps`),
so one op runs on a SQLite connection, a psycopg connection or a psycopg async
connection alike. What differs between the two databases — placeholders, list
parameters, tag containment, the time codec, JSON containment, the primary-key column —
is a :class:`Dialect`; record filters, the event log's queries, the corruption scan and
the enumeration of visible scopes are built once from it.
"""

from __future__ import annotations

import hashlib
import json
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import combinations
from typing import Any, Generic, TypeVar

from pydantic import ValidationError

from memory_admin.embed.protocol import Vector, numpy
from memory_admin.errors import MemoryCorruptionError, MemoryValidationError
from memory_admin.events import AnyEvent, EventQuery, MemoryRecallEvent, StoredEvent, forget_records, parse_event
from memory_admin.records import MemoryRecord, validation_problems
from memory_admin.scope import AGENT_KEY, TENANT_KEY, Scope, canonical_scope, scope_json
from memory_admin.store.plan import Candidate, SearchPlan, context
from memory_admin.store.protocol import CorruptionScan, CorruptRecord
from memory_admin.store.ranking import VISIBLE_ENUMERATION_LIMIT
from memory_admin.store.vectors import (
    SCAN_CHUNK,
    LruCache,
    ScopeVectors,
    VectorCache,
    VectorSpace,
    centre,
    centre_keys,
    closest,
    shortlist,
)

T = TypeVar("T")
Row = dict[str, Any]


@dataclass(frozen=True)
class Statement:
    """One SQL statement and its bound parameters."""

    sql: str
    params: Sequence[Any] = ()
    raw: bool = False
    """Rows as plain tuples (a hot loop's statements), not by column name."""
    many: bool = False
    """``params`` is a list of parameter rows: the statement runs once per row."""


Op = Generator[Statement, list[Any], T]
"""A database operation: yields statements, receives each one's rows (as dicts), returns
a value. The statements of one op run on one connection, in the caller's transaction."""


def no_statements(value: T) -> Op[T]:
    """An op that needs no SQL (a primitive a backend answers from memory)."""
    return value
    yield  # pragma: no cover - makes this a generator


class Dialect(ABC):
    """What differs between the SQL backends' text, and nothing else: each backend
    subclasses it with a handful of one-line answers, and every shared builder below
    asks it. ``p`` is the placeholder; ``key`` the records' integer key column (it
    follows insertion order); ``true`` the literal for an empty condition."""

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
        # stored only when it says more than created_at
        "observed_at": None if record.observed_at == record.created_at else to_db_time(record.observed_at),
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
            "observed_at": when("observed_at") or created,
        }
        return MemoryRecord.model_validate(data)
    except ValidationError as exc:
        detail = "; ".join(f"{p['loc']}: {p['msg']}" for p in validation_problems(exc)[:3])
        raise MemoryCorruptionError(record_id, _raw(row), detail, scope=_row_scope(row)) from None
    except (ValueError, TypeError, KeyError, OverflowError) as exc:
        raise MemoryCorruptionError(
            record_id, _raw(row), f"{type(exc).__name__}: {exc}", scope=_row_scope(row)
        ) from None


K = TypeVar("K")
V = TypeVar("V")


class ReadAgainCache(Generic[K, V]):
    """Up to ``size`` values built from what a store read, the most recently used kept,
    each admitted from its key's second read: the first only leaves the key's hash
    behind (in a set of plain integers, emptied when it holds four times ``size``).
    Most rows of a large store are read once, and a value kept is objects the garbage
    collector walks until it leaves: admitting only what is read again keeps the
    collector's young generations small, which the tail of a recall that reads a
    hundred rows depends on (at 1M records a gen-1 collection went from ~22 ms to
    ~1 ms). Thread-safe; a key that cannot be hashed is built every time."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._values: LruCache[K, V] = LruCache(size)
        self._seen: set[int] = set()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._values)

    def clear(self) -> None:
        with self._lock:
            self._values.clear()
            self._seen.clear()

    def get(self, key: K, build: Callable[[], V]) -> V:
        """The value kept for ``key``, else ``build()`` (kept if ``key`` was read before)."""
        try:
            token = hash(key)
        except TypeError:  # a value the driver gave as a mutable type
            return build()
        found = self._values.get(key)
        if found is not None:
            return found
        with self._lock:
            admit = token in self._seen
            if not admit:
                if len(self._seen) >= 4 * self._size:
                    self._seen.clear()
                self._seen.add(token)
        value = build()
        if admit:
            self._values.put(key, value)
        return value


RECORD_CACHE_SIZE = 4096
"""Records a store keeps built (a few megabytes)."""


class RecordCache:
    """A store's records built from rows (:func:`record_from_row`), keyed by the whole
    row — every column, so a record that changed is a new row and is built again. A row
    read again is not validated again: a tenant's shared records come back in every
    user's recall, and a recall's profile records among its hits. Records are frozen and
    shared, as the in-memory store shares its own. A row is kept from its second read
    (:class:`ReadAgainCache`); one that fails to validate is never kept (it raises each
    time it is read)."""

    def __init__(self, from_db_time: Callable[[Any], datetime], size: int = RECORD_CACHE_SIZE) -> None:
        self._from_db_time = from_db_time
        self._cache: ReadAgainCache[tuple[Any, ...], MemoryRecord] = ReadAgainCache(size)

    def __len__(self) -> int:
        return len(self._cache)

    def clear(self) -> None:
        self._cache.clear()

    def __call__(self, row: Mapping[str, Any]) -> MemoryRecord:
        key = (*row.keys(), *row.values())  # one tuple, not one per column
        return self._cache.get(key, lambda: record_from_row(row, self._from_db_time))

    def from_values(
        self, values: tuple[Any, ...], mapping: Callable[[tuple[Any, ...]], Mapping[str, Any]]
    ) -> MemoryRecord:
        """The record of a row read as a plain tuple (``mapping`` names its columns): the
        tuple is the key, so a row read again is neither named nor built. Only rows of
        one select may come here (a tuple carries no column names)."""
        return self._cache.get(values, lambda: record_from_row(mapping(values), self._from_db_time))


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


# --- shared builders and ops ----------------------------------------------------------


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
    except scope and text: kinds, tags, keys, the target flag, expiry, ``as_of`` and
    invalidation."""
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


def visible_candidates(viewer: Scope, agent: str | None) -> list[Scope]:
    """Every scope a viewer sees under visible match, canonical: the tenant plus any
    subset of the viewer's other pairs, the agent convention applied."""
    if len(viewer) > VISIBLE_ENUMERATION_LIMIT:
        raise MemoryValidationError(
            f"A visible-match scope holds at most {VISIBLE_ENUMERATION_LIMIT} pairs.",
            [{"loc": "scope", "msg": "too many pairs for visible match"}],
        )
    others = [key for key in viewer if key != TENANT_KEY]
    candidates = []
    for size in range(len(others) + 1):
        for keys in combinations(others, size):
            subset = {TENANT_KEY: viewer[TENANT_KEY], **{k: viewer[k] for k in keys}}
            if agent is None or subset.get(AGENT_KEY, agent) == agent:
                candidates.append(dict(sorted(subset.items())))
    return candidates


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


def query_events_op(d: Dialect, query: EventQuery) -> Op[list[StoredEvent]]:
    found = Clauses()
    add = found.add
    if query.types is not None:
        add(*d.one_of("type", query.types))
    if query.since is not None:
        add(f"at >= {d.p}", [d.to_db_time(query.since)])
    if query.until is not None:
        add(f"at < {d.p}", [d.to_db_time(query.until)])
    if query.scope is not None:
        add(*d.events_under(query.scope))
    if query.agent is not None:
        add(f"agent = {d.p}", [query.agent])
    if query.before_id is not None:
        add(f"eid < {d.p}", [query.before_id])
    if not query.include_previews:
        add(d.flag("preview", False))
    where, params = found.where(d.true)
    rows = yield Statement(
        f"SELECT eid, body FROM memory_events WHERE {where} ORDER BY eid DESC LIMIT {d.p}", [*params, query.limit]
    )
    return [StoredEvent(id=int(row["eid"]), event=parse_event(row["body"])) for row in rows]


def prune_events_op(d: Dialect, before: datetime) -> Op[int]:
    rows = yield Statement(f"DELETE FROM memory_events WHERE at < {d.p} RETURNING 1", [d.to_db_time(before)])
    return len(rows)


def erase_events_op(d: Dialect, scope: Scope, *, dry_run: bool) -> Op[int]:
    """Count (dry run) or delete the events under ``scope``; returns how many."""
    where, params = d.events_under(scope)
    if dry_run:
        rows = yield Statement(f"SELECT count(*) AS n FROM memory_events WHERE {where}", params)
        return int(rows[0]["n"])
    return len((yield Statement(f"DELETE FROM memory_events WHERE {where} RETURNING 1", params)))


def kind_counts_op(d: Dialect, scope_ids: Sequence[int]) -> Op[dict[str, int]]:
    where, params = d.one_of("scope_id", scope_ids)
    rows = yield Statement(
        f"SELECT kind, count(*) AS n FROM memory_records WHERE {where} GROUP BY kind ORDER BY kind", params
    )
    return {row["kind"]: int(row["n"]) for row in rows}


def scan_corrupt_op(
    d: Dialect,
    select: str,
    scope_where: tuple[str, list[Any]] | None,
    limit: int,
    max_rows: int | None,
) -> Op[CorruptionScan]:
    """Validate every row reached by ``select`` (a record select ending in its FROM
    clause, ``r`` the records), in key order, a thousand at a time: up to ``limit``
    corrupt rows, at most ``max_rows`` rows checked."""
    where, params = scope_where if scope_where is not None else ("", [])
    if where:
        where = f" AND {where}"
    corrupt: list[CorruptRecord] = []
    checked = last = 0
    while len(corrupt) < limit and (max_rows is None or checked < max_rows):
        chunk = 1000 if max_rows is None else min(1000, max_rows - checked)
        rows = yield Statement(
            f"{select} WHERE r.{d.key} > {d.p}{where} ORDER BY r.{d.key} LIMIT {d.p}", [last, *params, chunk]
        )
        for row in rows:
            try:
                record_from_row(row, d.from_db_time)
            except MemoryCorruptionError as exc:
                corrupt.append(CorruptRecord(id=exc.record_id, detail=exc.extras["detail"], raw=exc.raw))
        checked += len(rows)
        if len(rows) < chunk:
            return CorruptionScan(checked=checked, corrupt=corrupt[:limit], complete=True)
        last = int(rows[-1][d.key])
    return CorruptionScan(checked=checked, corrupt=corrupt[:limit], complete=False)


def newest_ids_op(d: Dialect, scope_ids: Sequence[int], limit: int) -> Op[list[str]]:
    where, params = d.one_of("scope_id", scope_ids)
    rows = yield Statement(
        f"SELECT id FROM memory_records WHERE {where} ORDER BY created_at DESC, {d.key} DESC LIMIT {d.p}",
        [*params, limit],
    )
    return [row["id"] for row in rows]


def append_events_op(d: Dialect, events: Sequence[AnyEvent]) -> Op[list[int]]:
    ids = []
    for event in events:
        rows = yield Statement(
            "INSERT INTO memory_events (type, at, tenant, scope, agent, preview, body) "
            f"VALUES ({d.p}, {d.p}, {d.p}, {d.json_param()}, {d.p}, {d.p}, {d.p}) RETURNING eid",
            event_row(d, event),
        )
        ids.append(int(rows[0]["eid"]))
    return ids


FORGET_SCAN_CHUNK = 1000


def forget_in_events_op(d: Dialect, tenant: str, record_ids: Sequence[str]) -> Op[int]:
    """Remove the query previews of ``tenant``'s events that name a forgotten record,
    reading them a chunk at a time in id order. One forgotten record is looked for in
    the stored text first (its id appears in every event that names it); many are
    matched on the parsed events."""
    forgotten = set(record_ids)
    if not forgotten:
        return 0
    narrow: tuple[str, list[Any]] = ("", [])
    if len(forgotten) == 1:
        narrow = (f" AND body LIKE {d.p}", [f"%{next(iter(forgotten))}%"])
    changed = last = 0
    while True:
        rows = yield Statement(
            f"SELECT eid, body FROM memory_events WHERE tenant = {d.p} AND type <> {d.p} AND eid > {d.p}"
            f"{narrow[0]} ORDER BY eid LIMIT {d.p}",
            [tenant, "agent.memory.write", last, *narrow[1], FORGET_SCAN_CHUNK],
        )
        updates = []
        for row in rows:
            scrubbed = forget_records(parse_event(row["body"]), forgotten)
            if scrubbed is not None:
                updates.append((scrubbed.model_dump_json(), int(row["eid"])))
        if updates:
            yield Statement(f"UPDATE memory_events SET body = {d.p} WHERE eid = {d.p}", updates, many=True)
            changed += len(updates)
        if len(rows) < FORGET_SCAN_CHUNK:
            return changed
        last = int(rows[-1]["eid"])


def ids_in_scopes_op(d: Dialect, scope_ids: Sequence[int]) -> Op[list[str]]:
    where, params = d.one_of("scope_id", scope_ids)
    rows = yield Statement(f"SELECT id FROM memory_records WHERE {where}", params)
    return [row["id"] for row in rows]


EVENTS_DROPPED = "events_dropped"
"""The counter (``memory_counters``) of events the log is missing because a writer fell
behind or a batch failed."""
EVENTS_WITHHELD = "events_withheld"
"""The counter of events the log kept out because their tenant forgot something after them."""


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


def log_events_op(d: Dialect, events: Sequence[AnyEvent], lost: int, withheld: int) -> Op[None]:
    if events:
        yield d.insert_rows("memory_events", EVENT_COLUMNS, [event_row(d, event) for event in events])
    counts = [(name, n) for name, n in ((EVENTS_DROPPED, lost), (EVENTS_WITHHELD, withheld)) if n]
    if counts:
        yield Statement(
            f"INSERT INTO memory_counters (name, n) VALUES ({d.p}, {d.p}) "
            "ON CONFLICT (name) DO UPDATE SET n = memory_counters.n + excluded.n",
            counts,
            many=True,
        )


def forgetting_lock_op(d: Dialect, forgetting: bool) -> Op[None]:
    statement = d.forgetting_lock(forgetting)
    if statement is not None:
        yield statement


def mark_forgetting_op(d: Dialect, tenant: str, at: datetime) -> Op[None]:
    yield Statement(
        f"INSERT INTO memory_forgetting (tenant, at) VALUES ({d.p}, {d.p}) "
        "ON CONFLICT (tenant) DO UPDATE SET at = excluded.at WHERE excluded.at > memory_forgetting.at",
        [tenant, d.to_db_time(at)],
    )


def forgetting_since_op(d: Dialect, since: datetime) -> Op[dict[str, datetime]]:
    yield from forgetting_lock_op(d, False)
    rows = yield Statement(f"SELECT tenant, at FROM memory_forgetting WHERE at >= {d.p}", [d.to_db_time(since)])
    return {row["tenant"]: d.from_db_time(row["at"]) for row in rows}


def events_missing_op(d: Dialect) -> Op[tuple[int, int]]:
    rows = yield Statement(
        f"SELECT name, n FROM memory_counters WHERE name IN ({d.p}, {d.p})", [EVENTS_DROPPED, EVENTS_WITHHELD]
    )
    counts = {row["name"]: int(row["n"]) for row in rows}
    return counts.get(EVENTS_DROPPED, 0), counts.get(EVENTS_WITHHELD, 0)


SHORTLIST = 400
"""Vectors a semantic search scores exactly: all of a scope that holds at most this many,
else the ones whose signs agree most with the query's."""
PREFILTER_FACTOR = 4
PREFILTER_MIN = 200
"""A semantic search filters the ``max(limit × PREFILTER_FACTOR, PREFILTER_MIN)`` closest
vectors of its scopes; fewer than ``limit`` passing means one full filtered scan."""
VECTOR_SPACE = "vector_space"
"""The setting (``memory_settings``) naming the model the store's vectors come from."""


def vector_space_op(d: Dialect) -> Op[VectorSpace | None]:
    rows = yield Statement(f"SELECT value FROM memory_settings WHERE name = {d.p}", [VECTOR_SPACE], raw=True)
    if not rows:
        return None
    data = json.loads(rows[0][0])
    return VectorSpace(str(data["model_id"]), int(data["dimensions"]))


def set_vector_space_op(d: Dialect, space: VectorSpace | None) -> Op[None]:
    if space is None:
        yield Statement("DELETE FROM memory_vectors")
        yield Statement(f"DELETE FROM memory_settings WHERE name = {d.p}", [VECTOR_SPACE])
        return
    yield Statement(
        f"INSERT INTO memory_settings (name, value) VALUES ({d.p}, {d.p}) "
        "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
        [VECTOR_SPACE, dumps({"model_id": space.model_id, "dimensions": space.dimensions})],
    )


def insert_vectors_op(d: Dialect, vectors: Sequence[tuple[str, bytes]]) -> Op[None]:
    if vectors:
        yield Statement(
            f"INSERT INTO memory_vectors (scope_id, {d.key}, vec) SELECT scope_id, {d.key}, {d.p} "
            f"FROM memory_records WHERE id = {d.p} ON CONFLICT ({d.key}) DO UPDATE SET vec = excluded.vec",
            [(blob, d.id_param(record_id)) for record_id, blob in vectors],
            many=True,
        )


def _groups(items: Sequence[T], size: Callable[[T], int], most: int) -> list[list[T]]:
    """``items`` in order, in groups whose sizes add up to at most ``most`` (an item
    larger than that alone)."""
    groups: list[list[T]] = []
    total = most
    for item in items:
        weight = size(item)
        if total + weight > most:
            groups.append([])
            total = 0
        groups[-1].append(item)
        total += weight
    return groups


class SqlSession(ABC):
    """The primitives both SQL backends answer with the same SQL, through their dialect.
    A backend's session subclasses it and adds what only its database can say."""

    dialect: Dialect
    record_select: str
    """A record select through its FROM clause (``r`` the records table)."""

    @abstractmethod
    def records_under(self, scope: Scope) -> Op[tuple[str, list[Any]]]:
        """A condition on ``r`` for the records whose scope contains ``scope``'s pairs."""

    @abstractmethod
    def records_reached(self, plan: SearchPlan, *columns: str) -> Op[list[tuple[str, list[Any]]] | None]:
        """For each of ``columns`` (scope ids: ``r.scope_id`` of the records, ``s.scope_id``
        of the scopes) a condition on it for the scopes a plan reaches (subset or visible
        match, the agent convention); ``None`` when no stored scope can match."""

    def vector_space(self) -> Op[VectorSpace | None]:
        return (yield from vector_space_op(self.dialect))

    def set_vector_space(self, space: VectorSpace | None) -> Op[None]:
        yield from set_vector_space_op(self.dialect, space)

    def insert_vectors(self, vectors: Sequence[tuple[str, bytes]]) -> Op[None]:
        yield from insert_vectors_op(self.dialect, vectors)

    vector_cache: VectorCache | None = None
    """The store's copy of the vectors it searched (set by the backend); ``None``: read every time."""

    def similar(self, plan: SearchPlan, limit: int, space: VectorSpace) -> Op[list[Candidate]]:
        """Up to ``limit`` of the closest records (the plan's page of them at least, when
        that many pass its filters), in three passes: a shortlist from the signs of the reached
        scopes' vectors (the process's copy while each scope's ``vec_version`` says it is
        current, else read from the store) — every vector when the scopes hold at most
        :data:`SHORTLIST`, so a small scope is searched exactly — then the shortlist's
        exact int8 scores, then the record filters (and the scope, again) on the best;
        only when too few of those pass does one filtered, exact scan decide."""
        d = self.dialect
        reached = yield from self.records_reached(plan, "s.scope_id", "r.scope_id")
        if reached is None:
            return []
        (where, params), in_scope = reached
        stamps = yield Statement(
            f"SELECT s.scope_id, s.vec_version, s.n_records FROM memory_scopes s WHERE {where} AND s.vec_version > 0",
            params,
            raw=True,
        )
        versions = {int(sid): (int(v), int(n)) for sid, v, n in stamps}
        scopes = yield from self._scope_vectors(versions, space)
        filters, filter_params = record_filters(d, plan)
        filters = f"{in_scope[0]} AND {filters}"
        filter_params = [*in_scope[1], *filter_params]
        # a fusion asks for more than its page: it gets them from the page's own depth
        page = min(plan.needed, limit)
        depth = max(page * PREFILTER_FACTOR, PREFILTER_MIN, limit)
        total = sum(len(scope.keys) for scope in scopes)
        listed = yield from self._vectors_of(shortlist(plan.vector, scopes, max(SHORTLIST, 2 * depth)))
        mean = yield from self._centre(versions, scopes, listed, total, space)
        found = closest(plan.vector, listed, space.dimensions, depth, mean)
        ids = yield from self._passing([key for key, _ in found], filters, filter_params)
        found = [(key, score) for key, score in found if key in ids]
        if len(found) < page and total > depth:
            # the filters ruled out too many of the closest: score every record they admit
            every = [int(key) for scope in scopes for key in scope.keys.tolist()]
            ids = yield from self._passing(every, filters, filter_params)
            found = closest(plan.vector, (yield from self._vectors_of(sorted(ids))), space.dimensions, limit, mean)
        return [
            Candidate(d.id_text(ids[key][0]), score, context=context(ids[key][1], d.from_db_time(ids[key][2])))
            for key, score in found[:limit]
        ]

    def _vectors_of(self, keys: Sequence[int]) -> Op[list[tuple[int, bytes]]]:
        """The stored vectors of these records, in key order."""
        if not keys:
            return []
        d = self.dialect
        among, among_params = d.one_of(f"v.{d.key}", keys)
        rows = yield Statement(
            f"SELECT v.{d.key}, v.vec FROM memory_vectors v WHERE {among} ORDER BY v.{d.key}", among_params, raw=True
        )
        return [(int(key), bytes(blob)) for key, blob in rows]

    def _centre(
        self,
        versions: dict[int, tuple[int, int]],
        scopes: Sequence[ScopeVectors],
        listed: Sequence[tuple[int, bytes]],
        total: int,
        space: VectorSpace,
    ) -> Op[Vector | None]:
        """The searched collection's centre (:func:`~memory_admin.store.vectors.centre`):
        from the vectors already read when they are all of it, else from a sample read
        once and kept while the scopes' versions stand."""
        if len(listed) == total:
            return centre(listed, total, space.dimensions)
        cache = self.vector_cache
        key = (space.model_id, tuple(sorted((sid, version) for sid, (version, _) in versions.items())))
        known = cache.centres.get(key) if cache is not None else None
        if known is not None:
            return known
        np = numpy()
        keys = np.sort(np.concatenate([scope.keys for scope in scopes])).tolist()
        mean = centre((yield from self._vectors_of(centre_keys(keys))), total, space.dimensions)
        if cache is not None and mean is not None:
            cache.centres.put(key, mean)
        return mean

    def _scope_vectors(self, scopes: dict[int, tuple[int, int]], space: VectorSpace) -> Op[list[ScopeVectors]]:
        """The vectors of these scopes (scope id → its ``vec_version`` and record count),
        from the cache where current; the rest are read (and cached) a few scopes per
        statement, about :data:`~memory_admin.store.vectors.SCAN_CHUNK` vectors at a time,
        so a tenant's first search never holds all of its vectors' bytes at once."""
        cache = self.vector_cache
        found: list[ScopeVectors] = []
        stale: list[int] = []
        for scope_id, (version, _) in scopes.items():
            cached = cache.get(scope_id, version) if cache is not None else None
            if cached is None:
                stale.append(scope_id)
            else:
                found.append(cached)
        d = self.dialect
        for group in _groups(stale, lambda scope_id: scopes[scope_id][1], SCAN_CHUNK):
            among, among_params = d.one_of("r.scope_id", group)
            rows = yield Statement(
                f"SELECT r.scope_id, v.{d.key}, v.vec FROM memory_records r "
                f"JOIN memory_vectors v ON v.{d.key} = r.{d.key} WHERE {among}",
                among_params,
                raw=True,
            )
            by_scope: dict[int, list[tuple[int, bytes]]] = {}
            for scope_id, key, blob in rows:
                by_scope.setdefault(int(scope_id), []).append((int(key), bytes(blob)))
            del rows
            for scope_id, scope_rows in by_scope.items():
                vectors = ScopeVectors.of(scopes[scope_id][0], scope_rows, space.dimensions)
                if cache is not None:
                    cache.put(scope_id, vectors)
                found.append(vectors)
        return found

    def _passing(self, keys: Sequence[int], filters: str, params: Sequence[Any]) -> Op[dict[int, tuple[Any, int, Any]]]:
        """Which of these records the plan's scope and every other filter admit, each key
        with its record's stored id, scope id and when it was stated."""
        if not keys:
            return {}
        d = self.dialect
        among, among_params = d.one_of(f"r.{d.key}", keys)
        rows = yield Statement(
            f"SELECT r.{d.key}, r.id, r.scope_id, coalesce(r.observed_at, r.created_at) FROM memory_records r "
            f"WHERE {among} AND {filters}",
            [*among_params, *params],
            raw=True,
        )
        return {int(key): (stored_id, int(scope_id), stated) for key, stored_id, scope_id, stated in rows}

    def unembedded(self, limit: int) -> Op[list[MemoryRecord]]:
        d = self.dialect
        rows = yield Statement(
            f"{self.record_select} WHERE NOT EXISTS (SELECT 1 FROM memory_vectors v WHERE v.{d.key} = r.{d.key}) "
            f"ORDER BY r.{d.key} LIMIT {d.p}",
            [limit],
        )
        return [record_from_row(row, d.from_db_time) for row in rows]

    def vector_counts(self) -> Op[tuple[int, int]]:
        rows = yield Statement(
            "SELECT (SELECT count(*) FROM memory_vectors), (SELECT count(*) FROM memory_records)", raw=True
        )
        return int(rows[0][0]), int(rows[0][1])

    def kind_counts(self, scope_ids: Sequence[int]) -> Op[dict[str, int]]:
        return (yield from kind_counts_op(self.dialect, scope_ids))

    def newest_ids(self, scope_ids: Sequence[int], limit: int) -> Op[list[str]]:
        return (yield from newest_ids_op(self.dialect, scope_ids, limit))

    def erase_events(self, scope: Scope, *, dry_run: bool) -> Op[int]:
        return (yield from erase_events_op(self.dialect, scope, dry_run=dry_run))

    def forget_in_events(self, tenant: str, record_ids: Sequence[str]) -> Op[int]:
        return (yield from forget_in_events_op(self.dialect, tenant, record_ids))

    def ids_in_scopes(self, scope_ids: Sequence[int]) -> Op[list[str]]:
        return (yield from ids_in_scopes_op(self.dialect, scope_ids))

    def find_corrupt(self, scope: Scope | None, limit: int, max_rows: int | None) -> Op[CorruptionScan]:
        where = None if scope is None else (yield from self.records_under(scope))
        return (yield from scan_corrupt_op(self.dialect, self.record_select, where, limit, max_rows))

    def append_events(self, events: Sequence[AnyEvent]) -> Op[list[int]]:
        return (yield from append_events_op(self.dialect, events))

    def log_events(self, events: Sequence[AnyEvent], lost: int, withheld: int) -> Op[None]:
        yield from log_events_op(self.dialect, events, lost, withheld)

    def events_missing(self) -> Op[tuple[int, int]]:
        return (yield from events_missing_op(self.dialect))

    def begin_forgetting(self) -> Op[None]:
        yield from forgetting_lock_op(self.dialect, True)

    def mark_forgetting(self, tenant: str, clock: Callable[[], datetime]) -> Op[None]:
        yield from mark_forgetting_op(self.dialect, tenant, clock())

    def forgetting_since(self, since: datetime) -> Op[dict[str, datetime]]:
        return (yield from forgetting_since_op(self.dialect, since))

    def query_events(self, query: EventQuery) -> Op[list[StoredEvent]]:
        return (yield from query_events_op(self.dialect, query))

    def prune_events(self, before: datetime) -> Op[int]:
        return (yield from prune_events_op(self.dialect, before))
