"""The primitives both SQL backends answer with the same SQL.

:class:`SqlSession` is a backend's session minus what only its database can say: the
event log (append, batches with their forgetting marks, queries, pruning, erasure, the
previews a forgetting removes), the store's counters, the corruption scan, and search by
meaning (:meth:`SqlSession.similar`). Each primitive is steps that yield
:class:`~memory_admin.store.session.Statement` statements built through the backend's
:class:`~memory_admin.store.sql.dialect.Dialect`; SQLite's and PostgreSQL's sessions
subclass it.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, TypeVar

from memory_admin import tuning
from memory_admin.embed.protocol import Vector, numpy
from memory_admin.errors import MemoryCorruptionError
from memory_admin.events import AnyEvent, EventQuery, StoredEvent, forget_records, parse_event
from memory_admin.records import MemoryRecord
from memory_admin.scope import Scope
from memory_admin.steps import Steps
from memory_admin.store.plan import Candidate, SearchPlan, context
from memory_admin.store.protocol import CorruptionScan, CorruptRecord
from memory_admin.store.session import Statement
from memory_admin.store.sql.dialect import Clauses, Dialect, record_filters
from memory_admin.store.sql.learnings import SqlLearnings
from memory_admin.store.sql.rows import EVENT_COLUMNS, RecordCodec, dumps, event_row
from memory_admin.store.vectors import ScopeVectors, VectorCache, VectorSpace, centre, centre_keys, closest, shortlist

T = TypeVar("T")

EVENTS_DROPPED = "events_dropped"
"""The counter (``memory_counters``) of events the log is missing because a writer fell
behind or a batch failed."""
EVENTS_WITHHELD = "events_withheld"
"""The counter of events the log kept out because their tenant forgot something after them."""
VECTOR_SPACE = "vector_space"
"""The setting (``memory_settings``) naming the model the store's vectors come from."""


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


class SqlSession(SqlLearnings, ABC):
    """The primitives both SQL backends answer with the same SQL, through their dialect
    (the learnings' in :class:`~memory_admin.store.sql.learnings.SqlLearnings`). A
    backend's session subclasses it and adds what only its database can say."""

    dialect: Dialect
    codec: RecordCodec
    """Records from :attr:`record_select`'s rows, read as tuples."""
    record_select: str
    """A record select through its FROM clause (``r`` the records table)."""
    vector_cache: VectorCache | None = None
    """The store's copy of the vectors it searched (set by the backend); ``None``: read every time."""

    @abstractmethod
    def records_under(self, scope: Scope) -> Steps[Statement, tuple[str, list[Any]]]:
        """A condition on ``r`` for the records whose scope contains ``scope``'s pairs."""

    # --- records: counts, ids, the corruption scan ---------------------------------------

    def kind_counts(self, scope_ids: Sequence[int]) -> Steps[Statement, dict[str, int]]:
        where, params = self.dialect.one_of("scope_id", scope_ids)
        rows = yield Statement(
            f"SELECT kind, count(*) FROM memory_records WHERE {where} GROUP BY kind ORDER BY kind", params, raw=True
        )
        return {kind: int(n) for kind, n in rows}

    def newest_ids(self, scope_ids: Sequence[int], limit: int) -> Steps[Statement, list[str]]:
        d = self.dialect
        where, params = d.one_of("scope_id", scope_ids)
        rows = yield Statement(
            f"SELECT id FROM memory_records WHERE {where} ORDER BY created_at DESC, {d.key} DESC LIMIT {d.p}",
            [*params, limit],
            raw=True,
        )
        return [d.id_text(row[0]) for row in rows]

    def ids_in_scopes(self, scope_ids: Sequence[int]) -> Steps[Statement, list[str]]:
        where, params = self.dialect.one_of("scope_id", scope_ids)
        rows = yield Statement(f"SELECT id FROM memory_records WHERE {where}", params, raw=True)
        return [self.dialect.id_text(row[0]) for row in rows]

    def find_corrupt(self, scope: Scope | None, limit: int, max_rows: int | None) -> Steps[Statement, CorruptionScan]:
        """Validate every row under ``scope`` (all of them without one), in key order, a
        thousand at a time: up to ``limit`` corrupt rows, at most ``max_rows`` rows checked.
        Rows are built without the record cache: a scan would flush the hot records."""
        d = self.dialect
        where, params = (yield from self.records_under(scope)) if scope is not None else ("", [])
        if where:
            where = f" AND {where}"
        key = self.codec.names.index(d.key)
        corrupt: list[CorruptRecord] = []
        checked = last = 0
        while len(corrupt) < limit and (max_rows is None or checked < max_rows):
            chunk = 1000 if max_rows is None else min(1000, max_rows - checked)
            rows = yield Statement(
                f"{self.record_select} WHERE r.{d.key} > {d.p}{where} ORDER BY r.{d.key} LIMIT {d.p}",
                [last, *params, chunk],
                raw=True,
            )
            for row in rows:
                try:
                    self.codec.record(row)
                except MemoryCorruptionError as exc:
                    corrupt.append(CorruptRecord(id=exc.record_id, detail=exc.extras["detail"], raw=exc.raw))
            checked += len(rows)
            if len(rows) < chunk:
                return CorruptionScan(checked=checked, corrupt=corrupt[:limit], complete=True)
            last = int(rows[-1][key])
        return CorruptionScan(checked=checked, corrupt=corrupt[:limit], complete=False)

    # --- the event log -------------------------------------------------------------------

    def append_events(self, events: Sequence[AnyEvent]) -> Steps[Statement, list[int]]:
        d = self.dialect
        ids = []
        for event in events:
            rows = yield Statement(
                "INSERT INTO memory_events (type, at, tenant, scope, agent, preview, body) "
                f"VALUES ({d.p}, {d.p}, {d.p}, {d.json_param()}, {d.p}, {d.p}, {d.p}) RETURNING eid",
                event_row(d, event),
                raw=True,
            )
            ids.append(int(rows[0][0]))
        return ids

    def log_events(self, events: Sequence[AnyEvent], lost: int, withheld: int) -> Steps[Statement, None]:
        d = self.dialect
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

    def events_missing(self) -> Steps[Statement, tuple[int, int]]:
        d = self.dialect
        rows = yield Statement(
            f"SELECT name, n FROM memory_counters WHERE name IN ({d.p}, {d.p})",
            [EVENTS_DROPPED, EVENTS_WITHHELD],
            raw=True,
        )
        counts = {name: int(n) for name, n in rows}
        return counts.get(EVENTS_DROPPED, 0), counts.get(EVENTS_WITHHELD, 0)

    def query_events(self, query: EventQuery) -> Steps[Statement, list[StoredEvent]]:
        d = self.dialect
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
            f"SELECT eid, body FROM memory_events WHERE {where} ORDER BY eid DESC LIMIT {d.p}",
            [*params, query.limit],
            raw=True,
        )
        return [StoredEvent(id=int(eid), event=parse_event(body)) for eid, body in rows]

    def prune_events(self, before: datetime) -> Steps[Statement, int]:
        d = self.dialect
        rows = yield Statement(
            f"DELETE FROM memory_events WHERE at < {d.p} RETURNING 1", [d.to_db_time(before)], raw=True
        )
        return len(rows)

    def erase_events(self, scope: Scope, *, dry_run: bool) -> Steps[Statement, int]:
        """Count (dry run) or delete the events under ``scope``; returns how many."""
        where, params = self.dialect.events_under(scope)
        if dry_run:
            rows = yield Statement(f"SELECT count(*) FROM memory_events WHERE {where}", params, raw=True)
            return int(rows[0][0])
        return len((yield Statement(f"DELETE FROM memory_events WHERE {where} RETURNING 1", params, raw=True)))

    def forget_in_events(self, tenant: str, record_ids: Sequence[str]) -> Steps[Statement, int]:
        """Remove the query previews of ``tenant``'s events that name a forgotten record,
        reading them a chunk at a time in id order. One forgotten record is looked for in
        the stored text first (its id appears in every event that names it); many are
        matched on the parsed events."""
        d = self.dialect
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
                [tenant, "agent.memory.write", last, *narrow[1], tuning.FORGET_SCAN_CHUNK],
                raw=True,
            )
            updates = []
            for eid, body in rows:
                scrubbed = forget_records(parse_event(body), forgotten)
                if scrubbed is not None:
                    updates.append((scrubbed.model_dump_json(), int(eid)))
            if updates:
                yield Statement(f"UPDATE memory_events SET body = {d.p} WHERE eid = {d.p}", updates, many=True)
                changed += len(updates)
            if len(rows) < tuning.FORGET_SCAN_CHUNK:
                return changed
            last = int(rows[-1][0])

    def begin_forgetting(self) -> Steps[Statement, None]:
        statement = self.dialect.forgetting_lock(True)
        if statement is not None:
            yield statement

    def mark_forgetting(self, tenant: str, clock: Callable[[], datetime]) -> Steps[Statement, None]:
        d = self.dialect
        yield Statement(
            f"INSERT INTO memory_forgetting (tenant, at) VALUES ({d.p}, {d.p}) "
            "ON CONFLICT (tenant) DO UPDATE SET at = excluded.at WHERE excluded.at > memory_forgetting.at",
            [tenant, d.to_db_time(clock())],
        )

    def forgetting_since(self, since: datetime) -> Steps[Statement, dict[str, datetime]]:
        d = self.dialect
        statement = d.forgetting_lock(False)
        if statement is not None:
            yield statement
        rows = yield Statement(
            f"SELECT tenant, at FROM memory_forgetting WHERE at >= {d.p}", [d.to_db_time(since)], raw=True
        )
        return {tenant: d.from_db_time(at) for tenant, at in rows}

    # --- vectors -------------------------------------------------------------------------

    def vector_space(self) -> Steps[Statement, VectorSpace | None]:
        rows = yield Statement(
            f"SELECT value FROM memory_settings WHERE name = {self.dialect.p}", [VECTOR_SPACE], raw=True
        )
        if not rows:
            return None
        data = json.loads(rows[0][0])
        return VectorSpace(str(data["model_id"]), int(data["dimensions"]))

    def set_vector_space(self, space: VectorSpace | None) -> Steps[Statement, None]:
        d = self.dialect
        if space is None:
            yield Statement("DELETE FROM memory_vectors")
            yield Statement(f"DELETE FROM memory_settings WHERE name = {d.p}", [VECTOR_SPACE])
            return
        yield Statement(
            f"INSERT INTO memory_settings (name, value) VALUES ({d.p}, {d.p}) "
            "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
            [VECTOR_SPACE, dumps({"model_id": space.model_id, "dimensions": space.dimensions})],
        )

    def insert_vectors(self, vectors: Sequence[tuple[str, bytes]]) -> Steps[Statement, None]:
        d = self.dialect
        if vectors:
            yield Statement(
                f"INSERT INTO memory_vectors (scope_id, {d.key}, vec) SELECT scope_id, {d.key}, {d.p} "
                f"FROM memory_records WHERE id = {d.p} ON CONFLICT ({d.key}) DO UPDATE SET vec = excluded.vec",
                [(blob, d.id_param(record_id)) for record_id, blob in vectors],
                many=True,
            )

    def unembedded(self, limit: int) -> Steps[Statement, list[MemoryRecord]]:
        d = self.dialect
        rows = yield Statement(
            f"{self.record_select} WHERE NOT EXISTS (SELECT 1 FROM memory_vectors v WHERE v.{d.key} = r.{d.key}) "
            f"ORDER BY r.{d.key} LIMIT {d.p}",
            [limit],
            raw=True,
        )
        return [self.codec.record(row) for row in rows]

    def vector_counts(self) -> Steps[Statement, tuple[int, int]]:
        rows = yield Statement(
            "SELECT (SELECT count(*) FROM memory_vectors), (SELECT count(*) FROM memory_records)", raw=True
        )
        return int(rows[0][0]), int(rows[0][1])

    def similar(self, plan: SearchPlan, limit: int, space: VectorSpace) -> Steps[Statement, list[Candidate]]:
        """Up to ``limit`` of the closest records (the plan's page of them at least, when
        that many pass its filters), in three passes: a shortlist from the signs of the reached
        scopes' vectors (the process's copy while each scope's ``vec_version`` says it is
        current, else read from the store) — every vector when the scopes hold at most
        :data:`~memory_admin.tuning.SHORTLIST`, so a small scope is searched exactly — then
        the shortlist's exact int8 scores, then the record filters (and the scope, again) on
        the best; only when too few of those pass does one filtered, exact scan decide."""
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
        depth = max(page * tuning.PREFILTER_FACTOR, tuning.PREFILTER_MIN, limit)
        total = sum(len(scope.keys) for scope in scopes)
        listed = yield from self._vectors_of(shortlist(plan.vector, scopes, max(tuning.SHORTLIST, 2 * depth)))
        # a semantic search ranks by the plain cosine: no centre to measure from
        mean = (yield from self._centre(versions, scopes, listed, total, space)) if plan.by_centre else None
        found = closest(plan.vector, listed, space.dimensions, depth, mean, by_centre=plan.by_centre, own=plan.own)
        ids = yield from self._passing([key for key, _, _ in found], filters, filter_params)
        found = [hit for hit in found if hit[0] in ids]
        if len(found) < page and total > depth:
            # the filters ruled out too many of the closest: score every record they admit
            every = [int(key) for scope in scopes for key in scope.keys.tolist()]
            ids = yield from self._passing(every, filters, filter_params)
            admitted = yield from self._vectors_of(sorted(ids))
            found = closest(
                plan.vector, admitted, space.dimensions, limit, mean, by_centre=plan.by_centre, own=plan.own
            )
        return [
            Candidate(
                d.id_text(ids[key][0]),
                score,
                context=context(ids[key][1], d.from_db_time(ids[key][2])),
                cosine=cosine,
                length=ids[key][3],
            )
            for key, cosine, score in found[:limit]
        ]

    def _vectors_of(self, keys: Sequence[int]) -> Steps[Statement, list[tuple[int, bytes]]]:
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
    ) -> Steps[Statement, Vector | None]:
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

    def _scope_vectors(
        self, scopes: dict[int, tuple[int, int]], space: VectorSpace
    ) -> Steps[Statement, list[ScopeVectors]]:
        """The vectors of these scopes (scope id → its ``vec_version`` and record count),
        from the cache where current; the rest are read (and cached) a few scopes per
        statement, about :data:`~memory_admin.tuning.SCAN_CHUNK` vectors at a time,
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
        for group in _groups(stale, lambda scope_id: scopes[scope_id][1], tuning.SCAN_CHUNK):
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

    def _passing(
        self, keys: Sequence[int], filters: str, params: Sequence[Any]
    ) -> Steps[Statement, dict[int, tuple[Any, int, Any, int]]]:
        """Which of these records the plan's scope and every other filter admit, each key
        with its record's stored id, scope id, when it was stated and its content's length
        in characters."""
        if not keys:
            return {}
        d = self.dialect
        among, among_params = d.one_of(f"r.{d.key}", keys)
        rows = yield Statement(
            f"SELECT r.{d.key}, r.id, r.scope_id, coalesce(r.observed_at, r.created_at), length(r.content) "
            f"FROM memory_records r WHERE {among} AND {filters}",
            [*among_params, *params],
            raw=True,
        )
        return {
            int(key): (stored_id, int(scope_id), stated, int(size)) for key, stored_id, scope_id, stated, size in rows
        }


__all__ = ["EVENTS_DROPPED", "EVENTS_WITHHELD", "VECTOR_SPACE", "SqlSession"]
