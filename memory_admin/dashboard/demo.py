"""A realistic demo corpus for the dashboard (no Django here: any store will do).

Three tenants with their users and agents, written over about seven simulated weeks:
preferences corrected by supersede chains several versions deep, facts invalidated with
reasons, records that expired, a deleted version that leaves a tombstone in its chain,
targeted candidates with payloads, a profile tier that overflows its recall slice, what
the health page should find (a near-duplicate, a key held across kinds, a record nobody
can trace), Acme's support agent learning under a registered composition (a candidate in
every state of the review: pending review, conflict, held, locked, promoted with its two
supports, demoted, rejected), and recall events over time (via
:func:`memory_admin.recall.assemble_recall`).

The store must read time from the :class:`DemoClock` handed to :func:`load_demo`, so
history gets realistic dates and "expired" records were written with a short expiry
weeks ago. Loading is idempotent: a marker record says the corpus is there.

Why one module: it is data — the corpus, written as the story of each tenant in the
order it happened — and one loader; splitting a story across files would not make it
shorter to read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from memory_admin.composition import AgentComposition, Background, Judgment
from memory_admin.learning import garden, promote_candidates, review
from memory_admin.recall import assemble_recall
from memory_admin.recall_turns import RecallConversation
from memory_admin.records import MemoryRecord, utc_now
from memory_admin.store import AdminMemoryStore, RecordListQuery
from memory_admin.store.protocol import PromotionMemoryStore

CORPUS_VERSION = "v5"  # v2: the gardening examples the health page finds; v3: learnings in every state;
# v4: a conflict between two learnings, a gardening proposal, Globex learning too, over a day and a half;
# v5: a conversation's later turns (Dana's Berlin trip)
MARKER_SCOPE = {"tenant": "acme", "app": "memory_demo"}
"""Where the marker lives: under acme (found by a tenant-wide listing) but in a scope of
its own, so no user's recall (visible match) ever reads it."""
MARKER_KEY = "demo.seed"
HISTORY = timedelta(days=50)


class DemoClock:
    """A clock the loader moves by hand; each reading ticks a millisecond."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        current = self.now
        self.now += timedelta(milliseconds=1)
        return current

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


def demo_start(now: datetime | None = None) -> datetime:
    """Where the simulated history begins: 50 days before ``now``, at 09:00 UTC."""
    moment = (now or utc_now()) - HISTORY
    return moment.astimezone(UTC).replace(hour=9, minute=0, second=0, microsecond=0)


def demo_loaded(store: AdminMemoryStore) -> bool:
    query = {
        # the tenant: a store loaded before the marker had a scope of its own holds it there
        "search": {
            "scope": {"tenant": MARKER_SCOPE["tenant"]},
            "keys": [MARKER_KEY],
            "include_invalidated": True,
            "limit": 1,
        },
        "include_expired": True,
    }
    return bool(store.list_records(RecordListQuery.model_validate(query)).hits)


@dataclass
class DemoReport:
    records: int = 0
    deleted: int = 0
    recalls: int = 0
    scopes: set[str] = field(default_factory=set)


class _Writer:
    def __init__(self, store: AdminMemoryStore, clock: DemoClock) -> None:
        self.store = store
        self.clock = clock
        self.report = DemoReport()

    def write(
        self,
        scope: Mapping[str, str],
        kind: str,
        content: str,
        *,
        by: str = "chat",
        author: str | None = None,
        conversation: str | None = None,
        expires_in: timedelta | None = None,
        hours: float = 5,
        **fields: Any,
    ) -> MemoryRecord:
        """Write one record ``hours`` after the previous write."""
        self.clock.advance(hours=hours)
        provenance = {"source": by, "author": author, "conversation_id": conversation}
        item: dict[str, Any] = {"scope": dict(scope), "kind": kind, "content": content, **fields}
        item["provenance"] = {k: v for k, v in provenance.items() if v}
        if expires_in is not None:
            item["expires_at"] = self.clock.now + expires_in
        [record] = self.store.write([item])
        self.report.records += 1
        self.report.scopes.add(",".join(f"{k}={v}" for k, v in sorted(scope.items())))
        return record

    def chain(self, scope: Mapping[str, str], kind: str, key: str, versions: list[str], **fields: Any) -> MemoryRecord:
        """A keyed slot rewritten version after version: each write supersedes the last."""
        record = None
        for number, content in enumerate(versions):
            record = self.write(scope, kind, content, key=key, hours=18 + 3 * number, **fields)
        assert record is not None
        return record

    def recall(self, scope: Mapping[str, str], query: str | None, agent: str | None = None) -> None:
        self.clock.advance(minutes=20)
        assemble_recall(self.store, scope, query, agent=agent, now=self.clock.now)
        self.report.recalls += 1

    def conversation(
        self, scope: Mapping[str, str], agent: str | None, name: str, turns: list[tuple[str, Callable[[], object]]]
    ) -> None:
        """A conversation's recalls: turn 1's block, then what each later message adds;
        after each turn, what the agent did (a save, say)."""
        talk = RecallConversation(self.store, scope, agent=agent, conversation_id=name)
        for message, then in turns:
            self.clock.advance(minutes=3 if talk.turn else 20)
            talk.recall(message, now=self.clock.now)
            then()
        self.report.recalls += 1


ACME, GLOBEX, INITECH = {"tenant": "acme"}, {"tenant": "globex"}, {"tenant": "initech"}
DANA = {**ACME, "user": "dana"}
RAVI = {**ACME, "user": "ravi"}
MEI = {**ACME, "user": "mei"}
DANA_PLANNER = {**DANA, "agent": "planner"}
ACME_SUPPORT = {**ACME, "agent": "support"}
SAM = {**GLOBEX, "user": "sam"}
LENA = {**GLOBEX, "user": "lena"}
GLOBEX_SUPPORT = {**GLOBEX, "agent": "support"}
PRIYA = {**INITECH, "user": "priya"}
TOM = {**INITECH, "user": "tom"}
PRIYA_CODER = {**PRIYA, "agent": "coder"}


def load_demo(store: AdminMemoryStore, clock: DemoClock) -> DemoReport | None:
    """Write the demo corpus through ``store`` (which must read ``clock``); ``None`` if
    it is already there."""
    if demo_loaded(store):
        return None
    w = _Writer(store, clock)
    _tenant_knowledge(w)
    _acme_people(w)
    _globex(w)
    _initech(w)
    _gardening(w)
    _learnings(w)
    _recalls(w)
    w.write(
        MARKER_SCOPE,
        "fact",
        f"The demo corpus ({CORPUS_VERSION}) was loaded into this store by manage.py memory_demo.",
        key=MARKER_KEY,
        by="memory_demo",
        hours=1,
    )
    return w.report


def _tenant_knowledge(w: _Writer) -> None:
    w.chain(
        ACME,
        "fact",
        "deploy.freeze",
        [
            "Acme freezes production deploys on Fridays after 14:00 Lisbon time.",
            "Acme freezes production deploys on Fridays after 12:00 Lisbon time.",
            "Acme freezes production deploys from Friday 12:00 until Monday 09:00 Lisbon time.",
        ],
        by="wiki-sync",
        tags=["deploys"],
    )
    w.write(ACME, "fact", "Expense reports above 500 EUR need a second approver.", by="wiki-sync", tags=["billing"])
    w.write(ACME, "profile", "Acme Travel sells corporate travel; about 140 staff in Lisbon and Berlin.", key="about")
    w.write(
        ACME, "fact", "The autumn offsite is in Porto; details follow.", tags=["travel"], expires_in=timedelta(days=120)
    )
    w.write(
        ACME,
        "fact",
        "Incident INC-2291: card payments degraded; use the manual invoice flow until further notice.",
        by="statuspage",
        tags=["billing", "incident"],
        expires_in=timedelta(days=2),
    )
    retired = w.write(ACME, "fact", "Support hours are 08:00–18:00 Lisbon time.", by="wiki-sync", tags=["support"])
    w.clock.advance(days=2)
    w.store.invalidate(retired.id, "Support went 24/7 on the 1st; the wiki page was out of date.")
    w.write(
        ACME_SUPPORT,
        "fact",
        "Refund requests must quote the booking reference (six letters, e.g. QXTRAV).",
        by="support-agent",
        target={"primitive": "judgment", "domain": "refunds", "slot": "constraints"},
        tags=["billing"],
    )
    w.write(
        ACME_SUPPORT,
        "episode",
        "Asking for the booking reference before the refund reason halved refund handling time.",
        by="support-agent",
        target={"primitive": "example", "judgment_domain": "refunds"},
        payload={
            "scenario": "A traveller asks for a refund of a cancelled flight.",
            "good": "Ask for the six-letter booking reference first, then the reason.",
            "bad": "Ask for the reason first and look the booking up by name.",
            "reasoning": "Bookings are indexed by reference; names collide.",
        },
    )
    w.write(
        ACME_SUPPORT,
        "fact",
        "The booking tool can be queried read-only for a traveller's itinerary.",
        by="support-agent",
        target={"primitive": "awareness"},
        payload={
            "name": "booking-tool",
            "description": "Read-only itinerary lookup by booking reference.",
            "access_method": "tool call: booking_lookup(reference)",
        },
    )


def _acme_people(w: _Writer) -> None:
    w.chain(
        DANA,
        "preference",
        "drink",
        [
            "Dana drinks espresso, no milk.",
            "Dana drinks an oat flat white in the mornings.",
            "Dana drinks a decaf oat flat white; no caffeine after noon.",
            "Dana has switched to green tea; no coffee at all.",
        ],
        tags=["food"],
        author="dana",
    )
    w.chain(
        DANA,
        "preference",
        "travel.seat",
        [
            "Dana prefers window seats.",
            "Dana prefers aisle seats on flights longer than two hours.",
            "Dana prefers aisle seats on every flight, and an exit row when there is one.",
        ],
        tags=["travel"],
        author="dana",
    )
    for topic, text in [
        ("summary", "Dana Whitfield, staff engineer on the payments team, based in Lisbon since 2019."),
        ("languages", "Dana speaks Portuguese and English at work and is learning German for the Berlin team."),
        ("reports", "Dana leads three engineers: Ravi (payments API), Mei (ledger) and a contractor on fraud rules."),
        ("hours", "Dana works 08:30–17:00 Lisbon time and keeps Wednesday afternoons free of meetings."),
        ("oncall", "Dana is on the payments on-call rotation every fourth week, starting on Mondays."),
        ("tools", "Dana reviews pull requests in the browser and dislikes long email threads; prefers chat."),
        ("travel.loyalty", "Dana flies TAP for Lisbon–Berlin and collects Miles&Go points on every booking."),
        ("travel.hotels", "Dana books hotels within walking distance of the office, never airport hotels."),
        ("diet", "Dana is vegetarian and avoids mushrooms; flag both when booking team dinners."),
        ("family", "Dana has two children at school in Lisbon; no trips over school holidays if avoidable."),
        ("health", "Dana needs an aisle seat for a knee injury; ask before booking long-haul economy."),
        ("communication", "Dana wants bad news first and short, numbered options when a decision is needed."),
    ]:
        w.write(DANA, "profile", text, key=f"profile.{topic}", author="dana", hours=9)
    w.write(DANA, "fact", "Dana's staging deploys are announced in #ops before they start.", tags=["deploys"])
    w.write(
        DANA,
        "fact",
        "Dana is in Berlin for the payments offsite this week.",
        tags=["travel"],
        expires_in=timedelta(days=5),
    )
    wrong = w.write(DANA, "fact", "Dana owns the fraud-rules service.", conversation="c-118")
    w.clock.advance(days=1)
    w.store.invalidate(wrong.id, "Wrong person: the contractor owns fraud rules; Dana only reviews them.")
    w.write(
        DANA_PLANNER,
        "episode",
        "Booking the 07:10 train left Dana no time for the 08:00 stand-up; later trains worked.",
        by="planner-agent",
        tags=["travel"],
    )
    w.write(
        DANA_PLANNER,
        "fact",
        "For Dana's trips, propose two options with total door-to-door time, cheapest last.",
        by="planner-agent",
        target={"primitive": "judgment", "domain": "trip-planning", "slot": "heuristics"},
    )

    w.chain(
        RAVI,
        "preference",
        "timezone",
        [
            "Ravi works on Lisbon time.",
            "Ravi moved to Berlin and works on Berlin time.",
            "Ravi works on Berlin time but joins the Lisbon stand-up at 09:30 Lisbon.",
            "Ravi is on parental leave until the end of the month; do not schedule meetings.",
            "Ravi is back from leave and works on Berlin time, Monday to Thursday.",
        ],
        author="ravi",
    )
    w.write(RAVI, "profile", "Ravi Menon, backend engineer on the payments API.", key="profile.summary", author="ravi")
    w.write(RAVI, "preference", "Ravi wants meeting invites with an agenda, or he declines.", key="meetings")
    w.write(RAVI, "fact", "Ravi is the owner of the refunds endpoint.", tags=["billing"], conversation="c-131")

    w.write(MEI, "profile", "Mei Chen, engineer on the ledger; joined in March.", key="profile.summary", author="mei")
    card = w.write(MEI, "preference", "Mei pays with the corporate card ending 4421.", key="payment", author="mei")
    replacement = w.write(
        MEI,
        "preference",
        "Mei pays with the corporate Amex; card details live in the vault, never in memory.",
        key="payment",
        author="privacy-team",
    )
    assert replacement.supersedes == card.id
    # card digits have no place in memory: a privacy officer deleted that version,
    # so the chain keeps only a content-free tombstone of it
    w.report.deleted += int(w.store.delete(card.id))
    w.write(MEI, "preference", "Mei prefers vegetarian team dinners.", key="diet", tags=["food"])
    w.write(MEI, "fact", "Mei is covering Ravi's code reviews this sprint.", expires_in=timedelta(days=12))


def _globex(w: _Writer) -> None:
    w.write(GLOBEX, "profile", "Globex runs a 40-seat customer support desk for home-energy customers.", key="about")
    sla = w.write(GLOBEX, "fact", "Globex's contract promises a first reply within 4 hours.", tags=["sla"])
    w.clock.advance(days=4)
    w.store.invalidate(sla.id, "Contract renewed: the SLA is now 2 hours for priority customers, 8 for others.")
    w.write(GLOBEX, "fact", "First reply within 2 hours for priority customers, 8 hours for others.", tags=["sla"])
    w.chain(
        SAM,
        "preference",
        "handover",
        [
            "Sam wants shift handovers as a bullet list in the ticket.",
            "Sam wants shift handovers as a bullet list, open tickets first.",
            "Sam wants shift handovers as a bullet list, open priority tickets first, with customer names.",
        ],
        author="sam",
    )
    w.write(SAM, "profile", "Sam Okafor, support team lead, evening shift.", key="profile.summary", author="sam")
    w.write(LENA, "profile", "Lena Vogel, support agent, German and English.", key="profile.summary", author="lena")
    w.write(LENA, "preference", "Lena answers German-speaking customers first.", key="queue", author="lena")
    w.write(
        GLOBEX_SUPPORT,
        "fact",
        "Customers asking about smart-meter outages should be pointed to the status page first.",
        by="support-agent",
        target={"primitive": "judgment", "domain": "outages", "slot": "escalation_triggers"},
    )
    w.write(
        GLOBEX_SUPPORT,
        "episode",
        "A customer was double-billed after a meter swap; refunding before escalating calmed the call.",
        by="support-agent",
        conversation="c-77",
        tags=["billing"],
        expires_in=timedelta(days=14),
    )
    noisy = w.write(GLOBEX_SUPPORT, "fact", "The customer in call c-80 sounded annoyed.", by="support-agent")
    w.store.invalidate(noisy.id, "Not a durable fact; agents should not save moods.")


def _initech(w: _Writer) -> None:
    w.write(INITECH, "profile", "Initech builds developer tooling; monorepo on GitHub, CI on Buildkite.", key="about")
    w.chain(
        INITECH,
        "fact",
        "python.version",
        [
            "Initech services run Python 3.9.",
            "Initech services run Python 3.10.",
            "Initech services run Python 3.11; 3.10 is no longer deployed.",
            "Initech services run Python 3.12, except the billing worker (3.11).",
        ],
        by="repo-scan",
        tags=["it"],
    )
    w.chain(
        PRIYA,
        "preference",
        "editor",
        ["Priya uses VS Code.", "Priya uses Neovim with LSP.", "Priya uses Neovim; send links as file:line."],
        author="priya",
    )
    w.write(PRIYA, "profile", "Priya Raman, platform engineer; owns the CI pipelines.", key="profile.summary")
    w.write(
        PRIYA_CODER,
        "fact",
        "In Initech's repo, run `make check` before proposing a pull request.",
        by="coder-agent",
        target={"primitive": "manual", "capability": "pull-requests"},
    )
    w.write(
        PRIYA_CODER,
        "fact",
        "The flaky test test_payment_retry is quarantined; do not try to fix it in passing.",
        by="coder-agent",
        target={"primitive": "background", "section": "current_state", "key": "flaky-tests"},
        expires_in=timedelta(days=3),
    )
    w.write(TOM, "profile", "Tom Baker, engineering manager; prefers async updates.", key="profile.summary")
    w.write(TOM, "preference", "Tom wants weekly status on Fridays, three bullets maximum.", key="status")


def _gardening(w: _Writer) -> None:
    """What a gardening pass should catch: an agent re-saving what it already knew in
    other words, one key held by two kinds, and a claim nobody can trace."""
    w.write(
        GLOBEX_SUPPORT,
        "fact",
        "Customers asking about smart-meter outages should be sent to the status page first.",
        by="support-agent",
        conversation="c-91",
    )
    w.write(MEI, "fact", "Mei eats vegetarian at team dinners.", key="diet", by="planner-agent")
    w.write(INITECH, "fact", "The staging cluster is rebuilt every Sunday night.", by="unknown", tags=["it"])


BERLIN = "Book me a flight to Berlin next week"


def _berlin_trip(w: _Writer) -> list[tuple[str, Callable[[], object]]]:
    """Dana's trip, turn by turn: the planner books the flight after turn 1, so turn 2 finds
    the booking, new to the conversation, beside what turn 1 already held."""

    def booked() -> object:
        booking = "Booked TAP TP 534 Lisbon–Berlin for Monday 07:05, seat 14C on the aisle; return Thursday 18:40."
        return w.write(DANA_PLANNER, "episode", booking, by="planner-agent", tags=["travel"], hours=0.05)

    return [
        (BERLIN, booked),
        ("Which seat did you get me on the Berlin flight?", lambda: None),
        ("Any dinner plans there?", lambda: None),
    ]


DEMO_COMPOSITION = AgentComposition(
    name="acme-support",
    persona="You are Acme Travel's support agent: you help travellers with bookings, changes and refunds.",
    tone="Warm and brief; one question at a time.",
    methodology="Find the booking first, then the facts, then the options.",
    mission="Travellers leave with their trip sorted and know what happens next.",
    background=Background(
        team_context={"finance": "Refunds are paid by the finance team in Berlin, twice a week."},
        conventions={"currency": "Amounts are quoted in EUR unless the booking was paid in another currency."},
    ),
    judgments=(
        Judgment(
            domain="refunds",
            heuristics=("Look the booking up by its reference before anything else.",),
            constraints=("Never refund more than the fare paid.",),
            escalation_triggers=("A traveller mentions a lawyer or a chargeback.",),
        ),
    ),
    recovery=("When the booking tool fails, say so and offer to call back within the hour.",),
)
"""The composition Acme's support agent runs (registered for ``tenant=acme,agent=support``)."""

GLOBEX_COMPOSITION = AgentComposition(
    name="globex-support",
    persona="You are Globex's service desk agent.",
    judgments=(Judgment(domain="tickets", heuristics=("Read the whole thread before answering.",)),),
)
"""The composition Globex's support agent runs (registered for ``tenant=globex,agent=support``)."""


def _learnings(w: _Writer) -> None:
    """Acme's support agent learning over a day and a half: candidates in every state of
    the review (a guarded learning waiting for a person, a conflict with the authored
    composition, a conflict between two learnings for a person to pick, one held for
    recurrence, a locked one), a promoted heuristic with its two supports, a recovery step
    a person approved, a demoted one and a rejected one, a gardening proposal — all under
    the registered demo composition;
    and Globex's support agent with a guarded learning of its own."""
    store = w.store
    if not isinstance(store, PromotionMemoryStore) or not store.capabilities().promotion:
        return
    store.register_composition(DEMO_COMPOSITION, ACME_SUPPORT)
    refunds = {"primitive": "judgment", "domain": "refunds"}
    voucher = w.write(
        ACME_SUPPORT,
        "episode",
        "Offer a travel voucher before a cash refund when the fare is non-refundable.",
        by="support-agent",
        hours=1,
        conversation="c-201",
        target={**refunds, "slot": "heuristics"},
    )
    w.write(
        ACME_SUPPORT,
        "episode",
        "Refund more than the fare paid when the delay passed six hours.",
        by="support-agent",
        hours=1,
        conversation="c-219",
        target={**refunds, "slot": "constraints"},
    )
    w.write(
        ACME_SUPPORT,
        "episode",
        "Check the booking tool before asking the traveller for their dates.",
        by="support-agent",
        hours=1,
        conversation="c-230",
        target={**refunds, "slot": "heuristics"},
    )
    w.write(
        ACME_SUPPORT,
        "fact",
        "Gold members get their refund in three days instead of ten.",
        by="support-agent",
        hours=1,
        conversation="c-233",
        target={"primitive": "judgment", "domain": "loyalty", "slot": "heuristics"},
    )
    w.write(
        ACME_SUPPORT,
        "fact",
        "The refunds backlog is cleared every Monday morning.",
        by="support-agent",
        hours=1,
        conversation="c-236",
        target={"primitive": "background", "section": "current_state", "key": "refunds_backlog"},
        observed_at=w.clock.now - timedelta(days=40),  # told long ago: the gardening pass finds it stale
    )
    days = w.write(
        ACME_SUPPORT,
        "episode",
        "Quote refund times in business days.",
        by="support-agent",
        hours=1,
        conversation="c-240",
        target={**refunds, "slot": "heuristics"},
    )
    threshold = w.write(
        ACME_SUPPORT,
        "fact",
        "Escalate every refund above 200 EUR to a supervisor.",
        by="support-agent",
        hours=1,
        conversation="c-245",
        target={**refunds, "slot": "escalation_triggers"},
    )
    w.clock.advance(hours=3)
    store.corroborate(voucher.id, {"source": "support-agent", "conversation_id": "c-214"})
    w.clock.advance(hours=2)
    store.corroborate(days.id, {"source": "support-agent", "conversation_id": "c-241"})
    w.clock.advance(hours=1)
    promote_candidates(store, ACME_SUPPORT, DEMO_COMPOSITION)
    w.clock.advance(hours=7)
    review.rollback(store, days.id, actor="lena", reason="Finance quotes calendar days since the new payment run.")
    w.clock.advance(hours=5)
    review.reject(store, threshold.id, actor="lena", reason="The threshold is 500 EUR: see the finance policy.")
    ledger = w.write(
        ACME_SUPPORT,
        "episode",
        "When the payment provider times out, check the refund ledger before retrying a refund.",
        by="support-agent",
        hours=2,
        conversation="c-249",
        target={"primitive": "recovery"},
    )
    promote_candidates(store, ACME_SUPPORT, DEMO_COMPOSITION)
    w.clock.advance(hours=1)
    review.approve(store, ledger.id, DEMO_COMPOSITION, actor="lena", reason="It saved two double refunds last month.")
    w.write(
        ACME_SUPPORT,
        "fact",
        "The booking tool answers itinerary lookups; it cannot change a booking.",
        by="support-agent",
        hours=4,
        conversation="c-252",
        target={"primitive": "awareness"},
        payload={
            "name": "booking-tool",
            "description": "Itinerary lookups only; changes go through the agent desk.",
            "access_method": "tool call: booking_lookup(reference)",
        },
    )
    w.clock.advance(hours=2)
    promote_candidates(store, ACME_SUPPORT, DEMO_COMPOSITION)
    w.clock.advance(hours=1)
    garden(store, ACME_SUPPORT, DEMO_COMPOSITION, now=w.clock.now)
    store.register_composition(GLOBEX_COMPOSITION, GLOBEX_SUPPORT)
    w.write(
        GLOBEX_SUPPORT,
        "fact",
        "Never reopen a ticket the customer closed themselves.",
        by="support-agent",
        hours=1,
        conversation="g-88",
        target={"primitive": "judgment", "domain": "tickets", "slot": "constraints"},
    )
    w.clock.advance(hours=1)
    promote_candidates(store, GLOBEX_SUPPORT, GLOBEX_COMPOSITION)


def _recalls(w: _Writer) -> None:
    """Turn-1 recalls over the last days of the history, as agents would run them."""
    asks = [
        (DANA, BERLIN, "planner"),
        (DANA, "What should I order for the team dinner?", None),
        (RAVI, "When can we schedule the refunds review?", None),
        (MEI, "Which card should I use for the hotel?", None),
        (SAM, "Write the handover for tonight", "support"),
        (LENA, None, "support"),
        (PRIYA, "Why is CI failing on test_payment_retry?", "coder"),
        (TOM, "Draft this week's status", None),
    ]
    for day in range(6):
        w.clock.advance(hours=20)
        for scope, query, agent in asks[day % 3 :: 2]:
            if day == 3 and query == BERLIN:  # this one goes on: the later turns add what is new
                w.conversation(scope, agent, "c-berlin-trip", _berlin_trip(w))
            else:
                w.recall(scope, query, agent)
