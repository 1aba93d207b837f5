"""The learnings' primitives both SQL backends answer with the same SQL: promotion states
and their history, corroborations, and the compositions hosts register.

A targeted record's current state is one row of ``memory_promotions`` and each of its
transitions one row of ``memory_promotion_history``, both keyed by the record's own
integer key (SQLite's ``rid``, PostgreSQL's ``seq``), so they go with the record — a
trigger in SQLite, foreign keys that cascade in PostgreSQL. A transition's row holds its
state and time as columns and the rest (who, why, evidence, versions) as JSON.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Sequence
from datetime import datetime
from typing import Any, cast

from pydantic import ValidationError

from memory_admin.errors import MemoryCorruptionError
from memory_admin.promotion import (
    Promotion,
    PromotionQuery,
    PromotionState,
    Proposal,
    ProposalInput,
    ProposalStatus,
    RegisteredComposition,
    Transition,
    TransitionQuery,
    candidate_birth,
    state_after,
)
from memory_admin.records import MemoryRecord, Provenance
from memory_admin.scope import Scope, scope_json
from memory_admin.steps import Steps
from memory_admin.store.plan import Cursor, SearchPlan, from_us
from memory_admin.store.session import Statement
from memory_admin.store.sql.dialect import Clauses, Dialect
from memory_admin.store.sql.rows import RECORD_FROM, RecordCache, dumps

SCOPE_JOIN = " JOIN memory_scopes s ON s.scope_id = r.scope_id"
"""The records' scopes, joined to ``r`` (what a record select reads beside the row)."""
_HISTORY = "memory_promotion_history"

TRANSITION_BODY_EXCLUDES = frozenset({"record_id", "revision", "at", "state"})
"""A transition's fields kept as columns of its history row, not in its JSON body."""

MAX_COMPOSITION_USES = 1000
"""Registrations a listing returns at most (newest first)."""


def transition_body(transition: Transition) -> str:
    return transition.model_dump_json(exclude=set(TRANSITION_BODY_EXCLUDES), exclude_defaults=True)


class SqlLearnings(ABC):
    """Promotion states, their history and the registered compositions, for a SQL
    backend's session (mixed into :class:`~memory_admin.store.sql.session.SqlSession`)."""

    dialect: Dialect
    record_cache: RecordCache
    """Records from the session's record columns (the store's cache)."""
    record_columns: str
    """The record select's columns (``r`` the records, ``s`` their scopes)."""

    @abstractmethod
    def records_reached(self, plan: SearchPlan, *columns: str) -> Steps[Statement, list[tuple[str, list[Any]]] | None]:
        """For each of ``columns`` (scope ids: ``r.scope_id`` of the records, ``s.scope_id``
        of the scopes) a condition on it for the scopes a plan reaches (subset or visible
        match, the agent convention); ``None`` when no stored scope can match."""

    # --- reading rows --------------------------------------------------------------------

    def _transition(self, record_id: str, state: str, revision: int, at: Any, body: str) -> Transition:
        try:
            return Transition(
                record_id=record_id,
                state=state,
                revision=int(revision),
                at=self.dialect.from_db_time(at),
                **json.loads(body),
            )
        except (ValidationError, ValueError, TypeError) as exc:
            raw = {"state": state, "revision": revision, "at": str(at), "body": body}
            raise MemoryCorruptionError(record_id, raw, f"a promotion transition does not validate ({exc})") from None

    def _promotion(self, row: Sequence[Any]) -> Promotion:
        """A promotion from ``state, revision, at, body, primitive`` and the record's columns."""
        state, revision, at, body, primitive = row[:5]
        record = self.record_cache.record(tuple(row[5:]))
        return state_after(
            record, self._transition(record.id, state, revision, at, body), primitive=str(primitive), with_record=True
        )

    def _reach(self, plan: SearchPlan, column: str) -> Steps[Statement, tuple[str, list[Any]] | None]:
        reached = yield from self.records_reached(plan, column)
        return None if reached is None else reached[0]

    # --- promotion states ----------------------------------------------------------------

    def promotion_states(self, ids: Sequence[str], *, lock: bool = False) -> Steps[Statement, dict[str, Promotion]]:
        d = self.dialect
        found: dict[str, Promotion] = {}
        for start in range(0, len(ids), 500):
            among, params = d.id_list("r.id", ids[start : start + 500])
            if lock and d.lock_rows("p"):
                # the rows are locked first, on their own: a lock waited for re-reads only the
                # locked row, so a select joining its history would lose a row whose revision
                # moved meanwhile; the select below, a statement of its own, sees it as it is
                yield Statement(
                    f"SELECT 1 FROM memory_promotions p JOIN memory_records r ON r.{d.key} = p.{d.key} "
                    f"WHERE {among}{d.lock_rows('p')}",
                    params,
                    raw=True,
                )
            rows = yield Statement(
                f"SELECT p.state, p.revision, p.at, h.body, p.primitive, {self.record_columns} "
                f"FROM memory_promotions p JOIN memory_promotion_history h ON h.{d.key} = p.{d.key} "
                f"AND h.revision = p.revision JOIN memory_records r ON r.{d.key} = p.{d.key}"
                f"{SCOPE_JOIN} WHERE {among}",
                params,
                raw=True,
            )
            found.update((promotion.record_id, promotion) for promotion in map(self._promotion, rows))
        return found

    def add_candidates(self, records: Sequence[MemoryRecord]) -> Steps[Statement, None]:
        d = self.dialect
        targeted = [record for record in records if record.target is not None]
        if not targeted:
            return
        yield Statement(
            f"INSERT INTO memory_promotions ({d.key}, scope_id, state, tier, primitive, revision, at) "
            f"SELECT r.{d.key}, r.scope_id, 'candidate', NULL, {d.p}, 0, r.created_at FROM memory_records r "
            f"WHERE r.id = {d.p}",
            [(record.target.primitive, d.id_param(record.id)) for record in targeted if record.target is not None],
            many=True,
        )
        yield Statement(
            f"INSERT INTO memory_promotion_history ({d.key}, revision, scope_id, at, state, body) "
            f"SELECT r.{d.key}, 0, r.scope_id, r.created_at, 'candidate', {d.p} FROM memory_records r "
            f"WHERE r.id = {d.p}",
            [(transition_body(candidate_birth(record)), d.id_param(record.id)) for record in targeted],
            many=True,
        )

    def add_transitions(self, transitions: Sequence[Transition]) -> Steps[Statement, None]:
        d = self.dialect
        if not transitions:
            return
        yield Statement(
            f"UPDATE memory_promotions SET state = {d.p}, tier = {d.p}, revision = {d.p}, at = {d.p} "
            f"WHERE {d.key} = (SELECT r.{d.key} FROM memory_records r WHERE r.id = {d.p})",
            [(t.state, t.tier, t.revision, d.to_db_time(t.at), d.id_param(t.record_id)) for t in transitions],
            many=True,
        )
        yield Statement(
            f"INSERT INTO memory_promotion_history ({d.key}, revision, scope_id, at, state, body) "
            f"SELECT r.{d.key}, {d.p}, r.scope_id, {d.p}, {d.p}, {d.p} FROM memory_records r WHERE r.id = {d.p}",
            [
                (t.revision, d.to_db_time(t.at), t.state, transition_body(t), d.id_param(t.record_id))
                for t in transitions
            ],
            many=True,
        )

    def _listing(
        self, query: PromotionQuery, plan: SearchPlan, *, with_states: bool
    ) -> Steps[Statement, tuple[str, str, list[Any]] | None]:
        """The FROM and WHERE of a promotion listing (``x`` the rows whose state counts:
        the current ones, or as of ``query.as_of`` the latest transition by then; ``p``
        the current row, ``r`` the record) — the tables its filters need and no more, so
        counting and paging join the transition bodies and scopes only of the rows shown."""
        d = self.dialect
        found = Clauses()
        reached = yield from self.records_reached(plan, "x.scope_id", "r.scope_id")
        if reached is None:
            return None
        found.add(*reached[0])
        if query.as_of is None:
            source = f" FROM memory_promotions x JOIN memory_promotions p ON p.{d.key} = x.{d.key}"
            if query.record_ids is not None:
                source += f" JOIN memory_records r ON r.{d.key} = x.{d.key}"
            if not query.include_invalidated:
                # the few invalidated records of the reach, by their partial index, rather
                # than a lookup of every learning's record row
                invalid, params = reached[1]
                found.add(
                    f"x.{d.key} NOT IN (SELECT r.{d.key} FROM memory_records r WHERE r.invalid_at IS NOT NULL "
                    f"AND {invalid})",
                    params,
                )
        else:
            as_of = d.to_db_time(query.as_of)
            source = (
                f" FROM {_HISTORY} x JOIN memory_promotions p ON p.{d.key} = x.{d.key}"
                f" JOIN memory_records r ON r.{d.key} = x.{d.key}"
            )
            found.add(
                f"x.revision = (SELECT max(y.revision) FROM memory_promotion_history y WHERE y.{d.key} = x.{d.key} "
                f"AND y.at <= {d.p})",
                [as_of],
            )
            found.add(f"r.created_at <= {d.p}", [as_of])
            if not query.include_invalidated:
                found.add(f"(r.invalid_at IS NULL OR r.invalid_at > {d.p})", [as_of])
        if with_states and query.states is not None:
            found.add(*d.one_of("x.state", query.states))
        if query.primitives is not None:
            found.add(*d.one_of("p.primitive", query.primitives))
        if query.tiers is not None:
            found.add(*d.one_of("p.tier", query.tiers))
        if query.record_ids is not None:
            found.add(*d.id_list("r.id", query.record_ids))
        where, params = found.where(d.true)
        return source, where, params

    def list_promotions(
        self, query: PromotionQuery, plan: SearchPlan, cursor: Cursor | None, limit: int
    ) -> Steps[Statement, list[tuple[Promotion, int]]]:
        d = self.dialect
        listing = yield from self._listing(query, plan, with_states=True)
        if listing is None:
            return []
        source, where, params = listing
        if cursor is not None:
            where += f" AND (x.at, x.{d.key}) < ({d.p}, {d.p})"
            params = [*params, d.to_db_time(from_us(cursor.created_us or 0)), cursor.seq or 0]
        # the page's keys first (its filters and order over the narrow rows), then the
        # transition bodies, records and scopes of those rows alone
        rows_of = _HISTORY if query.as_of is not None else "memory_promotions"
        rows = yield Statement(
            f"SELECT x.{d.key}, x.state, x.revision, x.at, h.body, p.primitive, {self.record_columns} "
            f"FROM (SELECT x.{d.key} AS k, x.revision AS v, x.at AS t{source} WHERE {where} "
            f"ORDER BY x.at DESC, x.{d.key} DESC LIMIT {d.p}) page "
            f"JOIN {rows_of} x ON x.{d.key} = page.k AND x.revision = page.v "
            f"JOIN memory_promotion_history h ON h.{d.key} = x.{d.key} AND h.revision = x.revision "
            f"JOIN memory_promotions p ON p.{d.key} = x.{d.key} "
            f"JOIN memory_records r ON r.{d.key} = x.{d.key}{SCOPE_JOIN} "
            f"ORDER BY page.t DESC, page.k DESC",
            [*params, limit],
            raw=True,
        )
        return [(self._promotion(row[1:]), int(row[0])) for row in rows]

    def count_promotions(self, query: PromotionQuery, plan: SearchPlan) -> Steps[Statement, dict[str, int]]:
        listing = yield from self._listing(query, plan, with_states=False)
        if listing is None:
            return {}
        source, where, params = listing
        rows = yield Statement(f"SELECT x.state, count(*){source} WHERE {where} GROUP BY x.state", params, raw=True)
        return {str(state): int(n) for state, n in rows}

    def transition_moments(
        self, query: TransitionQuery, plan: SearchPlan
    ) -> Steps[Statement, list[tuple[datetime, PromotionState]]]:
        d = self.dialect
        found = yield from self._transition_filters(query, plan, None)
        if found is None:
            return []
        where, params = found.where(d.true)
        rows = yield Statement(
            f"SELECT h.at, h.state FROM memory_promotion_history h "
            f"WHERE {where} ORDER BY h.at DESC, h.{d.key} DESC, h.revision DESC LIMIT {d.p}",
            [*params, query.limit],
            raw=True,
        )
        return [(d.from_db_time(at), cast(PromotionState, state)) for at, state in rows]

    def list_transitions(
        self, query: TransitionQuery, plan: SearchPlan, cursor: tuple[int, int, int] | None
    ) -> Steps[Statement, list[tuple[Transition, int]]]:
        d = self.dialect
        found = yield from self._transition_filters(query, plan, cursor)
        if found is None:
            return []
        where, params = found.where(d.true)
        rows = yield Statement(
            f"SELECT r.id, h.state, h.revision, h.at, h.body, h.{d.key} FROM memory_promotion_history h "
            f"JOIN memory_records r ON r.{d.key} = h.{d.key} WHERE {where} "
            f"ORDER BY h.at DESC, h.{d.key} DESC, h.revision DESC LIMIT {d.p}",
            [*params, query.limit + 1],
            raw=True,
        )
        return [(self._transition(d.id_text(rid), *rest), int(key)) for rid, *rest, key in rows]

    def _transition_filters(
        self, query: TransitionQuery, plan: SearchPlan, cursor: tuple[int, int, int] | None
    ) -> Steps[Statement, Clauses | None]:
        """The WHERE of a transition listing over ``h`` (``None``: nothing in reach)."""
        d = self.dialect
        reach = yield from self._reach(plan, "h.scope_id")
        if reach is None:
            return None
        found = Clauses()
        found.add(*reach)
        if query.states is not None:
            found.add(*d.one_of("h.state", query.states))
        if query.since is not None:
            found.add(f"h.at >= {d.p}", [d.to_db_time(query.since)])
        if query.until is not None:
            found.add(f"h.at < {d.p}", [d.to_db_time(query.until)])
        if cursor is not None:
            found.add(
                f"(h.at, h.{d.key}, h.revision) < ({d.p}, {d.p}, {d.p})",
                [d.to_db_time(from_us(cursor[0])), cursor[1], cursor[2]],
            )
        return found

    def restore_history(self, transitions: Sequence[Transition]) -> Steps[Statement, None]:
        d = self.dialect
        record_id = d.id_param(transitions[0].record_id)
        yield Statement(
            f"DELETE FROM memory_promotion_history WHERE {d.key} = (SELECT r.{d.key} FROM memory_records r "
            f"WHERE r.id = {d.p})",
            [record_id],
        )
        yield Statement(
            f"INSERT INTO memory_promotion_history ({d.key}, revision, scope_id, at, state, body) "
            f"SELECT r.{d.key}, {d.p}, r.scope_id, {d.p}, {d.p}, {d.p} FROM memory_records r WHERE r.id = {d.p}",
            [(t.revision, d.to_db_time(t.at), t.state, transition_body(t), record_id) for t in transitions],
            many=True,
        )
        last = transitions[-1]
        yield Statement(
            f"UPDATE memory_promotions SET state = {d.p}, tier = {d.p}, revision = {d.p}, at = {d.p} "
            f"WHERE {d.key} = (SELECT r.{d.key} FROM memory_records r WHERE r.id = {d.p})",
            [last.state, last.tier, last.revision, d.to_db_time(last.at), record_id],
        )

    def record_transitions(self, record_id: str) -> Steps[Statement, list[Transition]]:
        d = self.dialect
        rows = yield Statement(
            f"SELECT h.state, h.revision, h.at, h.body FROM memory_promotion_history h "
            f"JOIN memory_records r ON r.{d.key} = h.{d.key} WHERE r.id = {d.p} ORDER BY h.revision",
            [d.id_param(record_id)],
            raw=True,
        )
        return [self._transition(record_id, *row) for row in rows]

    def promoted_records(self, plan: SearchPlan, as_of: datetime | None) -> Steps[Statement, list[MemoryRecord]]:
        d = self.dialect
        params: list[Any]
        if as_of is None:
            reach = yield from self._reach(plan, "x.scope_id")
            if reach is None:
                return []
            # the partial index of promoted rows by scope: a scope's few promoted records
            source = f" FROM memory_promotions x WHERE x.state = 'promoted' AND {reach[0]}"
            params = list(reach[1])
        else:
            reach = yield from self._reach(plan, "x.scope_id")
            if reach is None:
                return []
            when = d.to_db_time(as_of)
            source = (
                f" FROM memory_promotion_history x WHERE x.state = 'promoted' AND {reach[0]} AND x.revision = "
                f"(SELECT max(y.revision) FROM memory_promotion_history y WHERE y.{d.key} = x.{d.key} "
                f"AND y.at <= {d.p})"
            )
            params = [*reach[1], when]
        rows = yield Statement(
            f"SELECT {self.record_columns}{RECORD_FROM} WHERE r.{d.key} IN (SELECT x.{d.key}{source}) "
            f"ORDER BY r.created_at, r.{d.key} LIMIT {d.p}",
            [*params, plan.limit],
            raw=True,
        )
        return [self.record_cache.record(tuple(row)) for row in rows]

    def promoted_fingerprint(self, plan: SearchPlan) -> Steps[Statement, tuple[Any, ...]]:
        d = self.dialect
        reach = yield from self._reach(plan, "x.scope_id")
        if reach is None:
            return ()
        rows = yield Statement(
            f"SELECT count(*), max(x.at), sum(x.{d.key}), sum(length(coalesce(r.supports, ''))) "
            f"FROM memory_promotions x JOIN memory_records r ON r.{d.key} = x.{d.key} "
            f"WHERE x.state = 'promoted' AND {reach[0]}",
            reach[1],
            raw=True,
        )
        return tuple(rows[0])

    def set_supports(self, record_id: str, supports: Sequence[Provenance]) -> Steps[Statement, None]:
        d = self.dialect
        value = dumps([p.model_dump(exclude_none=True) for p in supports]) if supports else None
        yield Statement(f"UPDATE memory_records SET supports = {d.p} WHERE id = {d.p}", [value, d.id_param(record_id)])

    # --- compositions ----------------------------------------------------------------------

    def put_composition(self, version: str, name: str, body: str, at: datetime) -> Steps[Statement, None]:
        d = self.dialect
        yield Statement(
            f"INSERT INTO memory_compositions (version, name, body, at) VALUES ({d.p}, {d.p}, {d.p}, {d.p}) "
            "ON CONFLICT (version) DO NOTHING",
            [version, name, body, d.to_db_time(at)],
        )

    def composition_body(self, version: str) -> Steps[Statement, tuple[str, str] | None]:
        rows = yield Statement(
            f"SELECT name, body FROM memory_compositions WHERE version = {self.dialect.p}", [version], raw=True
        )
        return (str(rows[0][0]), str(rows[0][1])) if rows else None

    def add_composition_use(self, scope: Scope, version: str, at: datetime) -> Steps[Statement, None]:
        d = self.dialect
        yield Statement(
            "INSERT INTO memory_composition_uses (tenant, scope, version, at) "
            f"VALUES ({d.p}, {d.json_param()}, {d.p}, {d.p})",
            [scope["tenant"], scope_json(scope), version, d.to_db_time(at)],
        )

    def composition_uses(
        self, scope: Scope, exact: bool, as_of: datetime | None
    ) -> Steps[Statement, list[RegisteredComposition]]:
        d = self.dialect
        found = Clauses()
        # unqualified tenant and scope are the registrations' (the compositions have neither)
        if exact:
            found.add(f"tenant = {d.p} AND scope = {d.json_param()}", [scope["tenant"], scope_json(scope)])
        else:
            found.add(*d.events_under(scope))
        if as_of is not None:
            found.add(f"u.at <= {d.p}", [d.to_db_time(as_of)])
        where, params = found.where(d.true)
        rows = yield Statement(
            f"SELECT u.version, c.name, scope, u.at FROM memory_composition_uses u "
            f"JOIN memory_compositions c ON c.version = u.version WHERE {where} "
            f"ORDER BY u.at DESC, u.id DESC LIMIT {MAX_COMPOSITION_USES}",
            params,
            raw=True,
        )
        return [
            RegisteredComposition(
                version=version,
                name=name,
                scope=json.loads(text) if isinstance(text, str) else text,
                registered_at=d.from_db_time(at),
            )
            for version, name, text, at in rows
        ]

    def erase_compositions(self, scope: Scope, *, dry_run: bool) -> Steps[Statement, int]:
        where, params = self.dialect.events_under(scope)
        if dry_run:
            rows = yield Statement(f"SELECT count(*) FROM memory_composition_uses WHERE {where}", params, raw=True)
            return int(rows[0][0])
        return len((yield Statement(f"DELETE FROM memory_composition_uses WHERE {where} RETURNING 1", params)))

    # --- the gardening pass's proposals --------------------------------------------------------

    def _proposals(self, where: str, params: Sequence[Any], tail: str = "") -> Steps[Statement, list[Proposal]]:
        d = self.dialect
        rows = yield Statement(
            f"SELECT pr.pid, pr.kind, pr.status, pr.at, pr.body, r.id, o.id, s.scope FROM memory_proposals pr "
            f"JOIN memory_records r ON r.{d.key} = pr.{d.key}{SCOPE_JOIN} "
            f"LEFT JOIN memory_records o ON o.{d.key} = pr.other_{d.key} WHERE {where}{tail}",
            list(params),
            raw=True,
        )
        found = []
        for pid, kind, status, at, body, record_id, other_id, scope in rows:
            values = json.loads(body)
            found.append(
                Proposal(
                    id=int(pid),
                    kind=kind,
                    status=status,
                    at=d.from_db_time(at),
                    record_id=d.id_text(record_id),
                    other_id=d.id_text(other_id) if other_id is not None else None,
                    scope=json.loads(scope),
                    **values,
                )
            )
        return found

    def add_proposals(self, proposals: Sequence[ProposalInput], at: datetime) -> Steps[Statement, list[Proposal]]:
        d = self.dialect
        made: list[int] = []
        for proposal in proposals:
            body = dumps({"reason": proposal.reason, "evidence": proposal.evidence, "by": proposal.by})
            other = d.id_param(proposal.other_id) if proposal.other_id is not None else None
            rows = yield Statement(
                f"INSERT INTO memory_proposals ({d.key}, other_{d.key}, scope_id, kind, status, at, body) "
                f"SELECT r.{d.key}, (SELECT o.{d.key} FROM memory_records o WHERE o.id = {d.p}), r.scope_id, "
                f"{d.p}, 'pending', {d.p}, {d.p} FROM memory_records r WHERE r.id = {d.p} "
                f"ON CONFLICT ({d.key}, kind) DO NOTHING RETURNING pid",
                [other, proposal.kind, d.to_db_time(at), body, d.id_param(proposal.record_id)],
                raw=True,
            )
            made.extend(int(row[0]) for row in rows)
        if not made:
            return []
        where, params = d.one_of("pr.pid", made)
        return (yield from self._proposals(where, params, " ORDER BY pr.pid"))

    def list_proposals(
        self, plan: SearchPlan, statuses: Sequence[ProposalStatus] | None, before: int | None, limit: int
    ) -> Steps[Statement, list[Proposal]]:
        d = self.dialect
        reach = yield from self._reach(plan, "pr.scope_id")
        if reach is None:
            return []
        found = Clauses()
        found.add(*reach)
        if statuses is not None:
            found.add(*d.one_of("pr.status", statuses))
        if before is not None:
            found.add(f"pr.pid < {d.p}", [before])
        where, params = found.where(d.true)
        return (yield from self._proposals(where, [*params, limit], f" ORDER BY pr.pid DESC LIMIT {d.p}"))

    def get_proposal(self, proposal_id: int, *, lock: bool = False) -> Steps[Statement, Proposal | None]:
        d = self.dialect
        tail = " FOR UPDATE OF pr" if lock and d.lock_rows("pr") else ""
        found = yield from self._proposals(f"pr.pid = {d.p}", [proposal_id], tail)
        return found[0] if found else None

    def settle_proposal(self, settled: Proposal) -> Steps[Statement, None]:
        d = self.dialect
        body = settled.model_dump_json(
            include={"reason", "evidence", "by", "decided_at", "actor", "decision_reason"}, exclude_none=True
        )
        yield Statement(
            f"UPDATE memory_proposals SET status = {d.p}, body = {d.p} WHERE pid = {d.p}",
            [settled.status, body, settled.id],
        )

    def lock_learnings(self, tenant: str) -> Steps[Statement, None]:
        statement = self.dialect.learnings_lock(tenant)
        if statement is not None:
            yield statement


__all__ = ["SCOPE_JOIN", "SqlLearnings", "transition_body"]
