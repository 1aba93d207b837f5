"""The promotion extension (:class:`~memory_admin.store.protocol.PromotionMemoryStore`),
written once for every backend: registered compositions, corroboration, decisions and
their pins, promotion listings and history, the promoted records a composition is made of,
and the demotions the store makes itself.

The state machine (:data:`~memory_admin.promotion.MOVES`) and its guards live here:
a promotion needs a tier and a live record; a locked tier never promotes; a guarded one
only by a person's decision; a rejection and a demotion need a reason. A decision pinned
to what its maker saw (:class:`~memory_admin.promotion.Pin`: the record's revision and
state, the overlay of a composition for a scope) is refused when any of it moved. The
units that change a tenant's promotion states run one at a time
(:meth:`~memory_admin.store.session.Session.lock_learnings`), so a pinned overlay is
checked against exactly the promotions the decision lands on.

Why one module: the promotion extension is one state machine; its guards, pins and
history must be read together to see that no move escapes them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar

from pydantic import ValidationError

from memory_admin import tuning
from memory_admin.composition import AgentComposition, Overlay, RenderedPrompt, apply_memory_overlay, render_prompt
from memory_admin.errors import (
    MemoryConflictError,
    MemoryCorruptionError,
    MemoryLimitError,
    MemoryNotFoundError,
    MemoryValidationError,
)
from memory_admin.events import AnyEvent, MemoryDemoteEvent, MemoryPromoteEvent, deliver, learning_fields
from memory_admin.promotion import (
    MAX_SUPPORTS,
    MOVES,
    PROMOTION_STATES,
    DecidedBy,
    Decision,
    DecisionOutcome,
    DemotionCause,
    Pin,
    Promotion,
    PromotionPage,
    PromotionQuery,
    PromotionState,
    Proposal,
    ProposalInput,
    ProposalPage,
    ProposalStatus,
    RegisteredComposition,
    TierName,
    Transition,
    TransitionPage,
    TransitionQuery,
    state_after,
)
from memory_admin.records import MemoryRecord, MemorySearchQuery, Provenance, parse_model
from memory_admin.scope import TENANT_KEY, Scope, ScopeMatch, canonical_scope, is_subset_match, read_view, scope_json
from memory_admin.steps import Steps
from memory_admin.store.arguments import check_count, check_event_id, check_id, check_list, check_time
from memory_admin.store.caches import LruCache
from memory_admin.store.core import MAX_PROMOTED
from memory_admin.store.event_log import BaseEventLogStore
from memory_admin.store.plan import Cursor, SearchPlan, now_us
from memory_admin.store.session import Session, Statement, Unit, Work

DecisionLike = Decision | Mapping[str, Any]


_Listing = TypeVar("_Listing", PromotionQuery, TransitionQuery)


def demotion(promotion: Promotion, at: datetime, cause: DemotionCause, reason: str | None) -> Transition:
    """The store's own demotion of a promoted record (invalidated, superseded, expired, deleted)."""
    return Transition(
        record_id=promotion.record_id,
        revision=promotion.revision + 1,
        at=max(at, promotion.at),
        state="demoted",
        previous=promotion.state,
        by="system",
        actor="store",
        reason=reason,
        cause=cause,
        tier=promotion.tier,
    )


def demote_invalidated(
    s: Session, records: Sequence[MemoryRecord]
) -> Steps[Statement, list[tuple[MemoryRecord, Transition]]]:
    """In the unit that invalidates ``records`` (their invalidated versions): the promoted
    ones among them are demoted, as superseded or invalidated, at their invalidation's
    time. Returns them with their transitions, for the events the unit's caller emits
    once it commits."""
    targeted = {record.id: record for record in records if record.target is not None}
    if not targeted:
        return []
    states = yield from s.promotion_states(list(targeted), lock=True)
    promoted = [found for found in states.values() if found.state == "promoted"]
    if not promoted:
        return []
    for tenant in sorted({found.scope[TENANT_KEY] for found in promoted}):
        yield from s.lock_learnings(tenant)
    moves = []
    for found in promoted:
        record = targeted[found.record_id]
        assert record.invalid_at is not None
        cause: DemotionCause = "superseded" if record.superseded_by is not None else "invalidated"
        moves.append((record, demotion(found, record.invalid_at, cause, record.invalid_reason)))
    yield from s.add_transitions([transition for _, transition in moves])
    return moves


def learning_event(record: MemoryRecord, transition: Transition) -> AnyEvent:
    """The event of a transition into or out of the promoted tier."""
    fields = {
        **learning_fields(record),
        "at": transition.at,
        "scope": record.scope,
        "agent": record.scope.get("agent"),
        "tier": transition.tier,
        "by": transition.by,
        "actor": transition.actor,
        "reason": transition.reason,
    }
    if transition.state == "promoted":
        return MemoryPromoteEvent(
            **fields,
            supports=len(record.supports),
            overlay_version=transition.overlay_version,
            composition_version=transition.composition_version,
        )
    assert transition.cause is not None
    return MemoryDemoteEvent(**fields, cause=transition.cause)


def _reached(
    scope: Mapping[str, str], scope_match: ScopeMatch, agent: str | None, limit: int, now: datetime
) -> SearchPlan:
    query = MemorySearchQuery(scope=scope, scope_match=scope_match, agent=agent, limit=0)
    return SearchPlan(query=query, tokens=(), now=now, limit=limit)


def _live_at(record: MemoryRecord, moment: datetime) -> bool:
    """Valid and unexpired at ``moment`` (a replay's moment, or now)."""
    if record.created_at > moment or record.is_expired(moment):
        return False
    return record.invalid_at is None or record.invalid_at > moment


def _moved(message: str, record_id: str, refused: str) -> DecisionOutcome:
    return DecisionOutcome(record_id=record_id, applied=False, refused=refused, message=message)


class BaseLearningStore(BaseEventLogStore):
    """Promotion state and registered compositions over a backend's primitives (its
    events go through the event log)."""

    _overlays: LruCache[tuple[str, tuple[str, ...]], Overlay] | None = None
    _prompts: LruCache[str, RenderedPrompt] | None = None
    _promoted_reads: (
        LruCache[tuple[str, str, str | None], tuple[tuple[Any, ...], tuple[MemoryRecord, ...], datetime | None]] | None
    ) = None

    def overlay(self, composition: AgentComposition, records: Sequence[MemoryRecord]) -> Overlay:
        """:func:`~memory_admin.composition.apply_memory_overlay` of ``records`` (promoted
        and live: the caller's choice) into ``composition``, computed once per distinct
        composition and set of records while this store object keeps it. The overlay is a
        pure function of the composition and the records, and a record's content, target
        and payload never change under its id; what it keeps goes with every forgetting."""
        if self._overlays is None:
            self._overlays = LruCache(tuning.OVERLAY_CACHE)
        key = (composition.version, tuple(sorted(record.id for record in records)))
        found = self._overlays.get(key)
        if found is None:
            found = apply_memory_overlay(composition, records)
            self._overlays.put(key, found)
        return found

    def prompt(self, overlay: Overlay) -> RenderedPrompt:
        """:func:`~memory_admin.composition.render_prompt` of ``overlay``, rendered once per
        overlay version while this store object keeps it (dropped on forgetting)."""
        if self._prompts is None:
            self._prompts = LruCache(tuning.OVERLAY_CACHE)
        found = self._prompts.get(overlay.version)
        if found is None:
            found = render_prompt(overlay)
            self._prompts.put(overlay.version, found)
        return found

    def _forget_reads(self) -> None:
        super()._forget_reads()
        for kept in (self._overlays, self._promoted_reads, self._prompts):
            if kept is not None:
                kept.clear()

    # --- compositions --------------------------------------------------------------------

    def register_composition(self, composition: AgentComposition, scope: Mapping[str, str]) -> str:
        """See :meth:`~memory_admin.store.protocol.PromotionMemoryStore.register_composition`."""
        return self._drive(self._register(composition, scope))

    async def aregister_composition(self, composition: AgentComposition, scope: Mapping[str, str]) -> str:
        return await self._adrive(self._register(composition, scope))

    def _register(self, composition: AgentComposition, scope: Mapping[str, str]) -> Steps[Work, str]:
        if not isinstance(composition, AgentComposition):
            raise MemoryValidationError(
                "register_composition() takes an AgentComposition (load one with load_composition).",
                [{"loc": "composition", "msg": "expected an AgentComposition"}],
            )
        canonical = canonical_scope(scope)
        version = composition.version

        def current(s: Session) -> Steps[Statement, str | None]:
            uses = yield from s.composition_uses(canonical, True, None)
            return uses[0].version if uses else None

        if (yield Unit("read", current)) == version:
            return version  # the usual case, a host registering at every start: nothing to write
        now = self._clock()

        def steps(s: Session) -> Steps[Statement, None]:
            yield from s.lock_learnings(canonical[TENANT_KEY])
            yield from s.put_composition(version, composition.name, composition.model_dump_json(), now)
            if (yield from current(s)) != version:
                yield from s.add_composition_use(canonical, version, now)

        yield Unit("write", steps)
        return version

    def composition(self, version: str) -> AgentComposition | None:
        """A registered composition by its version; ``None`` for an unknown version."""
        if not isinstance(version, str) or not version or len(version) > 128:
            raise MemoryValidationError(
                "A composition version is its hex hash.", [{"loc": "version", "msg": "invalid"}]
            )
        found: tuple[str, str] | None = self._run_unit(Unit("read", lambda s: s.composition_body(version)))
        if found is None:
            return None
        try:
            return AgentComposition.model_validate_json(found[1])
        except ValidationError as exc:
            raise MemoryCorruptionError(
                version,
                {"body": found[1]},
                f"a registered composition does not validate ({exc.error_count()} problems)",
            ) from None

    def compositions(
        self, scope: Mapping[str, str], *, exact: bool = False, as_of: datetime | None = None
    ) -> list[RegisteredComposition]:
        """Registrations for ``scope`` (``exact``) or every scope containing its pairs,
        newest first; those made by ``as_of`` when it is given."""
        canonical = canonical_scope(scope)
        moment = check_time(as_of, "as_of") if as_of is not None else None
        return self._run_unit(Unit("read", lambda s: s.composition_uses(canonical, exact, moment)))

    def registered_composition(
        self, scope: Mapping[str, str], *, as_of: datetime | None = None
    ) -> AgentComposition | None:
        """The composition registered last for exactly ``scope`` (by ``as_of`` when given)."""
        found = self.compositions(scope, exact=True, as_of=as_of)
        return self.composition(found[0].version) if found else None

    # --- corroboration -------------------------------------------------------------------

    def corroborate(self, record_id: str, provenance: Provenance | Mapping[str, Any]) -> MemoryRecord:
        """See :meth:`~memory_admin.store.protocol.PromotionMemoryStore.corroborate`."""
        return self._drive(self._corroborate(record_id, provenance))

    async def acorroborate(self, record_id: str, provenance: Provenance | Mapping[str, Any]) -> MemoryRecord:
        return await self._adrive(self._corroborate(record_id, provenance))

    def _corroborate(self, record_id: str, provenance: Provenance | Mapping[str, Any]) -> Steps[Work, MemoryRecord]:
        check_id(record_id)
        support = parse_model(Provenance, provenance, what="provenance")
        now = self._clock()

        def steps(s: Session) -> Steps[Statement, MemoryRecord]:
            record = (yield from s.get_many([record_id], lock=True)).get(record_id)
            if record is None:
                raise MemoryNotFoundError(record_id)
            if record.invalid_at is not None or record.is_expired(now):
                raise MemoryConflictError(
                    f"Record {record_id} is no longer valid; corroborate the record that replaced it.",
                    record_id=record_id,
                )
            if support == record.provenance or support in record.supports:
                return record  # the same sighting again: corroborating twice counts once
            if len(record.supports) >= MAX_SUPPORTS:
                raise MemoryLimitError(
                    f"Record {record_id} holds {MAX_SUPPORTS} corroborations already; that is plenty.",
                    limit=MAX_SUPPORTS,
                )
            supports = (*record.supports, support)
            yield from s.set_supports(record_id, supports)
            return record.model_copy(update={"supports": supports})

        corroborated: MemoryRecord = yield Unit("write", steps)
        return corroborated

    # --- decisions -----------------------------------------------------------------------

    def decide(self, decisions: Sequence[DecisionLike], *, all_or_nothing: bool = False) -> list[DecisionOutcome]:
        """See :meth:`~memory_admin.store.protocol.PromotionMemoryStore.decide`."""
        return self._drive(self._decide(decisions, all_or_nothing))

    async def adecide(
        self, decisions: Sequence[DecisionLike], *, all_or_nothing: bool = False
    ) -> list[DecisionOutcome]:
        return await self._adrive(self._decide(decisions, all_or_nothing))

    def promote(
        self,
        record_id: str,
        *,
        actor: str,
        tier: TierName | None = None,
        by: DecidedBy = "person",
        reason: str | None = None,
        pin: Pin | Mapping[str, Any] | None = None,
        **fields: Any,
    ) -> Promotion:
        """Promote one record (see :meth:`decide`); a refusal raises."""
        return self._one(self.decide([self._decision(record_id, "promoted", actor, tier, by, reason, pin, fields)]))

    async def apromote(
        self,
        record_id: str,
        *,
        actor: str,
        tier: TierName | None = None,
        by: DecidedBy = "person",
        reason: str | None = None,
        pin: Pin | Mapping[str, Any] | None = None,
        **fields: Any,
    ) -> Promotion:
        decision = self._decision(record_id, "promoted", actor, tier, by, reason, pin, fields)
        return self._one(await self.adecide([decision]))

    def reject(
        self,
        record_id: str,
        *,
        actor: str,
        reason: str,
        by: DecidedBy = "person",
        pin: Pin | Mapping[str, Any] | None = None,
        **fields: Any,
    ) -> Promotion:
        """Reject one candidate, with the reason (see :meth:`decide`); a refusal raises."""
        return self._one(self.decide([self._decision(record_id, "rejected", actor, None, by, reason, pin, fields)]))

    async def areject(
        self,
        record_id: str,
        *,
        actor: str,
        reason: str,
        by: DecidedBy = "person",
        pin: Pin | Mapping[str, Any] | None = None,
        **fields: Any,
    ) -> Promotion:
        return self._one(
            await self.adecide([self._decision(record_id, "rejected", actor, None, by, reason, pin, fields)])
        )

    def demote(
        self,
        record_id: str,
        *,
        actor: str,
        reason: str,
        by: DecidedBy = "person",
        pin: Pin | Mapping[str, Any] | None = None,
        **fields: Any,
    ) -> Promotion:
        """Roll a promoted record back out of its composition, with the reason (a demotion
        caused ``rollback``; the record stays, valid, in the recall tier). A refusal raises."""
        return self._one(self.decide([self._decision(record_id, "demoted", actor, None, by, reason, pin, fields)]))

    async def ademote(
        self,
        record_id: str,
        *,
        actor: str,
        reason: str,
        by: DecidedBy = "person",
        pin: Pin | Mapping[str, Any] | None = None,
        **fields: Any,
    ) -> Promotion:
        return self._one(
            await self.adecide([self._decision(record_id, "demoted", actor, None, by, reason, pin, fields)])
        )

    @staticmethod
    def _decision(
        record_id: str,
        state: PromotionState,
        actor: str,
        tier: TierName | None,
        by: DecidedBy,
        reason: str | None,
        pin: Pin | Mapping[str, Any] | None,
        fields: Mapping[str, Any],
    ) -> Decision:
        values = {"record_id": record_id, "state": state, "actor": actor, "by": by, "reason": reason, **fields}
        if tier is not None:
            values["tier"] = tier
        if pin is not None:
            values["pin"] = pin
        return parse_model(Decision, values, what="decision")

    @staticmethod
    def _one(outcomes: list[DecisionOutcome]) -> Promotion:
        [outcome] = outcomes
        return outcome.result()

    def _decide(
        self, decisions: Sequence[DecisionLike], all_or_nothing: bool = False
    ) -> Steps[Work, list[DecisionOutcome]]:
        parsed = [
            parse_model(Decision, d, what=f"decision {i}") for i, d in enumerate(check_list(decisions, "decisions"))
        ]
        if not parsed:
            return []
        if len(parsed) > self.capabilities().max_batch:
            raise MemoryLimitError(f"A batch holds at most {self.capabilities().max_batch} decisions; split it.")
        ids = sorted({d.record_id for d in parsed})
        now = self._clock()

        def steps(s: Session) -> Steps[Statement, tuple[list[DecisionOutcome], list[tuple[MemoryRecord, Transition]]]]:
            # the promotion rows are what a decision changes: locked (with their records) first
            current = yield from s.promotion_states(ids, lock=True)
            records = {record_id: p.record for record_id, p in current.items() if p.record is not None}
            untargeted = [record_id for record_id in ids if record_id not in current]
            if untargeted:  # told apart: no such record, or one without a target
                records.update((yield from s.get_many(untargeted)))
            for tenant in sorted({record.scope[TENANT_KEY] for record in records.values()}):
                yield from s.lock_learnings(tenant)
            overlays: dict[tuple[str, str, str | None], str | None] = {}
            for decision in parsed:
                pin = decision.pin
                if pin is not None and pin.overlay_version is not None:
                    key = (pin.composition_version or "", scope_key(pin.scope), pin.agent)
                    if key not in overlays:
                        overlays[key] = yield from self._overlay_now(s, pin, now)
            outcomes: list[DecisionOutcome] = []
            moves: list[tuple[MemoryRecord, Transition]] = []
            for decision in parsed:
                record = records.get(decision.record_id)
                before = current.get(decision.record_id)
                refusal = self._refusal(decision, record, before, overlays, now)
                if refusal is not None and all_or_nothing:
                    raise MemoryConflictError(
                        f"Nothing was applied: {refusal.message}", record_id=refusal.record_id, refused=refusal.refused
                    )
                if refusal is not None:
                    outcomes.append(refusal)
                    continue
                assert record is not None and before is not None
                # built from the validated decision and the stored state: no second validation
                transition = Transition.model_construct(
                    record_id=record.id,
                    revision=before.revision + 1,
                    at=max(now, before.at),
                    state=decision.state,
                    previous=before.state,
                    by=decision.by,
                    actor=decision.actor,
                    reason=decision.reason,
                    cause=(decision.cause or "rollback") if decision.state == "demoted" else None,
                    tier=decision.tier or before.tier,
                    evidence=decision.evidence,
                    overlay_version=decision.overlay_version,
                    composition_version=decision.composition_version,
                )
                after = state_after(record, transition, primitive=before.primitive, with_record=True)
                current[record.id] = after
                moves.append((record, transition))
                outcomes.append(DecisionOutcome(record_id=record.id, applied=True, promotion=after))
            yield from s.add_transitions([transition for _, transition in moves])
            return outcomes, moves

        done: tuple[list[DecisionOutcome], list[tuple[MemoryRecord, Transition]]] = yield Unit("write", steps)
        outcomes, moves = done
        self._emit_learnings(moves)
        return outcomes

    def _overlay_now(self, s: Session, pin: Pin, now: datetime) -> Steps[Statement, str | None]:
        """The version of the overlay a pin names, as the store holds it inside this unit
        (``None``: its composition is not registered)."""
        found = yield from s.composition_body(pin.composition_version or "")
        if found is None or pin.scope is None:
            return None
        composition = AgentComposition.model_validate_json(found[1])
        # the scope's view as compose reads it (an agent's own records join the shared)
        plan = _reached(read_view(pin.scope, pin.agent), "visible", pin.agent, MAX_PROMOTED, now)
        promoted = yield from s.promoted_records(plan, None)
        return self.overlay(composition, [r for r in promoted if r.is_live(now)]).version

    @staticmethod
    def _refusal(
        decision: Decision,
        record: MemoryRecord | None,
        before: Promotion | None,
        overlays: Mapping[tuple[str, str, str | None], str | None],
        now: datetime,
    ) -> DecisionOutcome | None:
        """Why ``decision`` cannot apply, or ``None`` when it can."""
        record_id = decision.record_id
        if record is None or (decision.within is not None and not is_subset_match(record.scope, decision.within)):
            return _moved(f"No memory record {record_id!r}.", record_id, "not_found")
        if before is None:
            return _moved(
                f"Record {record_id} carries no target, so it is no candidate; nothing to decide.",
                record_id,
                "not_candidate",
            )
        pin = decision.pin
        if pin is not None:
            if pin.revision is not None and pin.revision != before.revision:
                return _moved(
                    f"Record {record_id} moved since the decision was made: it is {before.state} now "
                    f"(revision {before.revision}, the decision saw {pin.revision}). Look again, then decide.",
                    record_id,
                    "moved",
                )
            if pin.state is not None and pin.state != before.state:
                return _moved(
                    f"Record {record_id} is {before.state} now, not {pin.state}. Look again, then decide.",
                    record_id,
                    "moved",
                )
            if pin.overlay_version is not None:
                now_version = overlays.get((pin.composition_version or "", scope_key(pin.scope), pin.agent))
                if now_version != pin.overlay_version:
                    return _moved(
                        "The composition this decision was made against has changed since (other learnings "
                        "were promoted or demoted). Look at it again, then decide.",
                        record_id,
                        "moved",
                    )
        if decision.state not in MOVES[before.state]:
            return _moved(
                f"Record {record_id} is {before.state}; it cannot become {decision.state}.", record_id, "not_allowed"
            )
        tier = decision.tier or before.tier
        if decision.state == "promoted":
            if not record.is_live(now):
                return _moved(
                    f"Record {record_id} is invalidated or expired; promote the record that replaced it.",
                    record_id,
                    "not_allowed",
                )
            if tier is None:
                return _moved(
                    f"Promoting record {record_id} needs its tier (tier_of its target against the composition).",
                    record_id,
                    "not_allowed",
                )
            if tier == "locked":
                return _moved(
                    f"Record {record_id} targets a locked part of its composition: it cannot be promoted.",
                    record_id,
                    "not_allowed",
                )
            if tier == "guarded" and decision.by != "person":
                return _moved(
                    f"Record {record_id} is guarded-tier: only a person approves it (the dashboard or "
                    "`memory-admin review approve`), never an agent or a gate.",
                    record_id,
                    "needs_person",
                )
        if decision.state in ("rejected", "demoted") and not decision.reason:
            return _moved(
                f"Say why record {record_id} is {decision.state}: a reason is required.", record_id, "not_allowed"
            )
        return None

    def _emit_learnings(self, moves: Sequence[tuple[MemoryRecord, Transition]]) -> None:
        """The promote and demote events of committed transitions."""
        self._emit_all(learning_event(record, t) for record, t in moves if t.state in ("promoted", "demoted"))

    # --- reads ---------------------------------------------------------------------------

    def promotion(self, record_id: str) -> Promotion | None:
        """A record's promotion state now, with the record; ``None`` for a record that
        carries no target (or does not exist)."""
        check_id(record_id)
        found: dict[str, Promotion] = self._run_unit(Unit("read", lambda s: s.promotion_states([record_id])))
        return found.get(record_id)

    async def apromotion(self, record_id: str) -> Promotion | None:
        check_id(record_id)

        def steps() -> Steps[Work, Promotion | None]:
            found: dict[str, Promotion] = yield Unit("read", lambda s: s.promotion_states([record_id]))
            return found.get(record_id)

        return await self._adrive(steps())

    def promotion_history(self, record_id: str) -> list[Transition]:
        """Every transition of a record, oldest first (its birth as a candidate first)."""
        check_id(record_id)
        return self._run_unit(Unit("read", lambda s: s.record_transitions(record_id)))

    def promotions(
        self,
        scope: Mapping[str, str],
        *,
        as_of: datetime | None = None,
        states: Sequence[PromotionState] | None = None,
        **filters: Any,
    ) -> PromotionPage:
        """See :meth:`~memory_admin.store.protocol.PromotionMemoryStore.promotions`."""
        return self._drive(self._promotions(self._promotion_query(scope, as_of, states, filters)))

    async def apromotions(
        self,
        scope: Mapping[str, str],
        *,
        as_of: datetime | None = None,
        states: Sequence[PromotionState] | None = None,
        **filters: Any,
    ) -> PromotionPage:
        return await self._adrive(self._promotions(self._promotion_query(scope, as_of, states, filters)))

    @staticmethod
    def _promotion_query(
        scope: Mapping[str, str],
        as_of: datetime | None,
        states: Sequence[PromotionState] | None,
        filters: Mapping[str, Any],
    ) -> PromotionQuery:
        return _listing(PromotionQuery, "promotion listing", scope, states, filters, as_of=as_of)

    def _promotions(self, query: PromotionQuery) -> Steps[Work, PromotionPage]:
        cursor = Cursor.decode(query.cursor) if query.cursor else None
        if cursor is not None and cursor.offset is not None:
            raise MemoryValidationError(
                "That page cursor belongs to another listing.", [{"loc": "cursor", "msg": "not a promotion cursor"}]
            )
        limit = self._listing_limit(query.limit)
        if limit == 0:
            return PromotionPage(promotions=[])
        plan = _reached(query.scope, query.scope_match, query.agent, limit, self._clock())
        rows: list[tuple[Promotion, int]] = yield Unit(
            "snapshot", lambda s: s.list_promotions(query, plan, cursor, limit + 1)
        )
        page = [promotion for promotion, _ in rows[:limit]]
        if len(rows) > limit:
            last, key = rows[limit - 1]
            return PromotionPage(promotions=page, next_cursor=Cursor(created_us=now_us(last.at), seq=key).encode())
        return PromotionPage(promotions=page)

    def count_promotions(
        self, scope: Mapping[str, str], *, as_of: datetime | None = None, **filters: Any
    ) -> dict[PromotionState, int]:
        """How many of a listing's promotions are in each state (every state named, zeros
        included; a ``states`` filter does not apply)."""
        query = self._promotion_query(scope, as_of, None, filters)
        plan = _reached(query.scope, query.scope_match, query.agent, 0, self._clock())
        counts: dict[str, int] = self._run_unit(Unit("snapshot", lambda s: s.count_promotions(query, plan)))
        return {state: counts.get(state, 0) for state in PROMOTION_STATES}

    def transitions(
        self,
        scope: Mapping[str, str],
        *,
        since: datetime | None = None,
        states: Sequence[PromotionState] | None = None,
        **filters: Any,
    ) -> TransitionPage:
        """See :meth:`~memory_admin.store.protocol.PromotionMemoryStore.transitions`."""
        return self._drive(self._transitions(self._transition_query(scope, since, states, filters)))

    async def atransitions(
        self,
        scope: Mapping[str, str],
        *,
        since: datetime | None = None,
        states: Sequence[PromotionState] | None = None,
        **filters: Any,
    ) -> TransitionPage:
        return await self._adrive(self._transitions(self._transition_query(scope, since, states, filters)))

    @staticmethod
    def _transition_query(
        scope: Mapping[str, str],
        since: datetime | None,
        states: Sequence[PromotionState] | None,
        filters: Mapping[str, Any],
    ) -> TransitionQuery:
        return _listing(TransitionQuery, "transition listing", scope, states, filters, since=since)

    def _transitions(self, query: TransitionQuery) -> Steps[Work, TransitionPage]:
        cursor = _transition_cursor(query.cursor) if query.cursor else None
        query = query.model_copy(update={"limit": self._listing_limit(query.limit)})
        plan = _reached(query.scope, query.scope_match, query.agent, query.limit, self._clock())
        rows: list[tuple[Transition, int]] = yield Unit("snapshot", lambda s: s.list_transitions(query, plan, cursor))
        page = [transition for transition, _ in rows[: query.limit]]
        if len(rows) > query.limit:
            last, key = rows[query.limit - 1]
            return TransitionPage(transitions=page, next_cursor=f"t{now_us(last.at)}.{key}.{last.revision}")
        return TransitionPage(transitions=page)

    def transition_moments(
        self,
        scope: Mapping[str, str],
        *,
        since: datetime | None = None,
        states: Sequence[PromotionState] | None = None,
        **filters: Any,
    ) -> list[tuple[datetime, PromotionState]]:
        """See :meth:`~memory_admin.store.protocol.PromotionMemoryStore.transition_moments`."""
        query = self._transition_query(scope, since, states, filters)
        if query.cursor is not None:
            raise MemoryValidationError(
                "transition_moments reads from the newest: it takes no cursor.", [{"loc": "cursor", "msg": "unused"}]
            )
        plan = _reached(query.scope, query.scope_match, query.agent, query.limit, self._clock())
        found: list[tuple[datetime, PromotionState]] = self._run_unit(
            Unit("snapshot", lambda s: s.transition_moments(query, plan))
        )
        return found

    def _listing_limit(self, limit: int) -> int:
        most = self.capabilities().max_limit
        if limit > most:
            raise MemoryValidationError(
                f"limit is {limit}; {self.capabilities().backend} returns at most {most} per call.",
                [{"loc": "limit", "msg": f"at most {most}"}],
            )
        return limit

    # --- copies ------------------------------------------------------------------------------

    def import_learnings(
        self,
        histories: Sequence[Sequence[Transition | Mapping[str, Any]]],
        registrations: Sequence[tuple[AgentComposition, RegisteredComposition]] = (),
    ) -> int:
        """Restore what another store kept of its learnings (moving a store's contents):
        each record's whole promotion history (the records imported already, verbatim:
        :meth:`import_records` made them candidates), and compositions with the
        registrations of them, times included. A registration already here is skipped, so
        a copy can be resumed. Returns how many histories it restored."""
        parsed = []
        for i, history in enumerate(check_list(histories, "histories")):
            moves = [parse_model(Transition, t, what=f"history {i}") for t in check_list(history, f"histories.{i}")]
            if not moves or [t.revision for t in moves] != list(range(len(moves))):
                raise MemoryValidationError(
                    f"History {i} is not a record's transitions from revision 0 on.",
                    [{"loc": f"histories.{i}", "msg": "gap"}],
                )
            if len({t.record_id for t in moves}) != 1:
                raise MemoryValidationError(f"History {i} mixes records.", [{"loc": f"histories.{i}", "msg": "mixed"}])
            parsed.append(moves)
        wanted = [(c, parse_model(RegisteredComposition, r, what="registration")) for c, r in registrations]

        def steps(s: Session) -> Steps[Statement, int]:
            states = yield from s.promotion_states([h[0].record_id for h in parsed])
            missing = [h[0].record_id for h in parsed if h[0].record_id not in states]
            if missing:
                raise MemoryNotFoundError(
                    missing[0], f"Record {missing[0]} is not here as a candidate; import it first."
                )
            for history in parsed:
                yield from s.restore_history(history)
            for composition, use in wanted:
                yield from s.put_composition(
                    composition.version, composition.name, composition.model_dump_json(), use.registered_at
                )
                known = yield from s.composition_uses(use.scope, True, None)
                if not any(k.version == use.version and k.registered_at == use.registered_at for k in known):
                    yield from s.add_composition_use(use.scope, use.version, use.registered_at)
            return len(parsed)

        restored: int = self._run_unit(Unit("write", steps))
        return restored

    # --- the gardening pass's proposals ----------------------------------------------------

    def propose(self, proposals: Sequence[ProposalInput | Mapping[str, Any]]) -> list[Proposal]:
        """See :meth:`~memory_admin.store.protocol.PromotionMemoryStore.propose`."""
        parsed = [
            parse_model(ProposalInput, p, what=f"proposal {i}")
            for i, p in enumerate(check_list(proposals, "proposals"))
        ]
        if not parsed:
            return []
        now = self._clock()
        return self._run_unit(Unit("write", lambda s: s.add_proposals(parsed, now)))

    def proposals(
        self,
        scope: Mapping[str, str],
        *,
        statuses: Sequence[ProposalStatus] | None = ("pending",),
        scope_match: ScopeMatch = "subset",
        agent: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> ProposalPage:
        """See :meth:`~memory_admin.store.protocol.PromotionMemoryStore.proposals`."""
        limit = self._listing_limit(check_count(limit, "limit"))
        before = _proposal_cursor(cursor) if cursor else None
        plan = _reached(scope, scope_match, agent, limit, self._clock())
        wanted = tuple(check_list(statuses, "statuses")) if statuses is not None else None
        rows: list[Proposal] = self._run_unit(Unit("read", lambda s: s.list_proposals(plan, wanted, before, limit + 1)))
        page = rows[:limit]
        more = len(rows) > limit
        return ProposalPage(proposals=page, next_cursor=f"g{page[-1].id}" if more and page else None)

    def proposal(self, proposal_id: int) -> Proposal | None:
        """See :meth:`~memory_admin.store.protocol.PromotionMemoryStore.proposal`."""
        check_event_id(proposal_id, "proposal")
        found: Proposal | None = self._run_unit(Unit("read", lambda s: s.get_proposal(proposal_id)))
        return found

    def settle_proposal(self, proposal_id: int, *, accepted: bool, actor: str, reason: str | None = None) -> Proposal:
        """See :meth:`~memory_admin.store.protocol.PromotionMemoryStore.settle_proposal`."""
        check_event_id(proposal_id, "proposal")
        # the same checks as a decision's actor and reason
        who = parse_model(Decision, {"record_id": "-", "state": "candidate", "actor": actor, "reason": reason})
        now = self._clock()

        def steps(s: Session) -> Steps[Statement, Proposal]:
            found = yield from s.get_proposal(proposal_id, lock=True)
            if found is None:
                raise MemoryNotFoundError(str(proposal_id), f"No proposal {proposal_id}.")
            if found.status != "pending":
                raise MemoryConflictError(
                    f"Proposal {proposal_id} was {found.status} already (by {found.actor}); nothing changed.",
                    proposal_id=proposal_id,
                )
            settled = found.model_copy(
                update={
                    "status": "accepted" if accepted else "rejected",
                    "decided_at": now,
                    "actor": who.actor,
                    "decision_reason": who.reason,
                }
            )
            yield from s.settle_proposal(settled)
            return settled

        return self._run_unit(Unit("write", steps))

    # --- the promoted records a composition is made of -----------------------------------

    def promoted_records(
        self,
        scope: Mapping[str, str],
        *,
        agent: str | None = None,
        scope_match: ScopeMatch = "visible",
        as_of: datetime | None = None,
    ) -> list[MemoryRecord]:
        """See :meth:`~memory_admin.store.protocol.PromotionMemoryStore.promoted_records`."""
        return self._drive(self._promoted(scope, agent, scope_match, as_of))

    async def apromoted_records(
        self,
        scope: Mapping[str, str],
        *,
        agent: str | None = None,
        scope_match: ScopeMatch = "visible",
        as_of: datetime | None = None,
    ) -> list[MemoryRecord]:
        return await self._adrive(self._promoted(scope, agent, scope_match, as_of))

    def _promoted(
        self, scope: Mapping[str, str], agent: str | None, scope_match: ScopeMatch, as_of: datetime | None
    ) -> Steps[Work, list[MemoryRecord]]:
        moment = check_time(as_of, "as_of") if as_of is not None else None
        now = self._clock()
        plan = _reached(scope, scope_match, agent, MAX_PROMOTED, now)
        if moment is not None:
            then: list[MemoryRecord] = yield Unit("snapshot", lambda s: s.promoted_records(plan, moment))
            return [record for record in then if _live_at(record, moment)]
        # a host composes at every instantiate, mostly from unchanged learnings: a summary of
        # them decides whether the records read last time still stand (expiry aside)
        key = (scope_json(plan.query.scope), scope_match, agent)
        if self._promoted_reads is None:
            self._promoted_reads = LruCache(tuning.PROMOTED_READS)
        kept = self._promoted_reads.get(key)

        def steps(s: Session) -> Steps[Statement, tuple[tuple[Any, ...], list[MemoryRecord] | None]]:
            summary = yield from s.promoted_fingerprint(plan)
            if kept is not None and kept[0] == summary:
                return summary, None
            return summary, (yield from s.promoted_records(plan, None))

        # one statement after another, each seeing what is committed: records read after the
        # summary are as new as it or newer, and a newer summary next time reads them again
        summary, found = yield Unit("read", steps)
        if found is None and kept is not None and (kept[2] is None or now < kept[2]):
            return list(kept[1])
        if found is None:  # a kept record expired since: read them again
            found = yield Unit("snapshot", lambda s: s.promoted_records(plan, None))
        live = [record for record in found if record.is_live(now)]
        if len(live) < len(found):
            # expiry has no moment of its own in the store: the first read after it demotes
            yield from self._demote_lapsed([record for record in found if not record.is_live(now)], now)
            return live
        expiries = [record.expires_at for record in live if record.expires_at is not None]
        self._promoted_reads.put(key, (summary, tuple(live), min(expiries) if expiries else None))
        return live

    def _demote_lapsed(self, lapsed: list[MemoryRecord], now: datetime) -> Steps[Work, None]:
        ids = [record.id for record in lapsed]

        def steps(s: Session) -> Steps[Statement, list[tuple[MemoryRecord, Transition]]]:
            records = yield from s.get_many(ids, lock=True)
            for tenant in sorted({record.scope[TENANT_KEY] for record in records.values()}):
                yield from s.lock_learnings(tenant)
            states = yield from s.promotion_states(ids, lock=True)
            moves = []
            for record_id, found in states.items():
                record = records.get(record_id)
                if record is None or found.state != "promoted" or record.is_live(now):
                    continue  # another process got there first
                if record.invalid_at is not None:
                    cause: DemotionCause = "superseded" if record.superseded_by else "invalidated"
                    moves.append((record, demotion(found, now, cause, record.invalid_reason)))
                else:
                    moves.append((record, demotion(found, now, "expired", None)))
            yield from s.add_transitions([t for _, t in moves])
            return moves

        moves: list[tuple[MemoryRecord, Transition]] = yield Unit("write", steps)
        self._emit_learnings(moves)

    def _promoted_among(self, s: Session, ids: Sequence[str]) -> Steps[Statement, list[Promotion]]:
        """Before a delete or a sweep forgets ``ids``: the promoted ones among them, whose
        demotion events (content-free: the record is gone) follow the commit. A corrupt
        row is forgotten without one."""
        try:
            states = yield from s.promotion_states(ids)
        except MemoryCorruptionError:
            return []
        return [found for found in states.values() if found.state == "promoted"]

    def _log_forgotten_demotions(self, promoted: Sequence[Promotion], cause: DemotionCause) -> None:
        """The demote events of promoted records a delete or a sweep forgot: written to the
        log directly (not through the buffer, which withholds what follows a forgetting)
        and naming the record only."""
        now = self._clock()
        for found in promoted:
            event = MemoryDemoteEvent(
                at=now,
                scope=found.scope,
                agent=found.scope.get("agent"),
                record_id=found.record_id,
                tier=found.tier,
                by="system",
                actor="store",
                cause=cause,
                redacted=True,
            )
            if self._logging_events:
                self._append_event(event)
            deliver(self._sinks, event)


def _listing(
    model: type[_Listing],
    what: str,
    scope: Mapping[str, str],
    states: Sequence[PromotionState] | None,
    filters: Mapping[str, Any],
    **moment: datetime | None,
) -> _Listing:
    """A listing's query from a public method's arguments: its moment (``as_of``, ``since``)
    only when given, its states checked as a list."""
    values: dict[str, Any] = {"scope": scope, **filters}
    values.update({name: at for name, at in moment.items() if at is not None})
    if states is not None:
        values["states"] = tuple(check_list(states, "states"))
    return parse_model(model, values, what=what)


def scope_key(scope: Scope | None) -> str:
    return "" if scope is None else scope_json(scope)


def _proposal_cursor(text: str) -> int:
    if text.startswith("g") and text[1:].isdigit():
        return int(text[1:])
    raise MemoryValidationError(
        "That page cursor is not one this store issued; start from the first page.",
        [{"loc": "cursor", "msg": "malformed cursor"}],
    )


def _transition_cursor(text: str) -> tuple[int, int, int]:
    try:
        if text.startswith("t"):
            at, key, revision = (int(part) for part in text[1:].split("."))
            return at, key, revision
    except ValueError:
        pass
    raise MemoryValidationError(
        "That page cursor is not one this store issued; start from the first page.",
        [{"loc": "cursor", "msg": "malformed cursor"}],
    )


__all__ = ["BaseLearningStore", "DecisionLike", "demote_invalidated", "demotion", "learning_event"]
