"""Every page of the dashboard, as URLs an admin can open over the demo data (the
layout tests and the screenshots walk the same list)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memory_admin.dashboard import actions
from memory_admin.dashboard.permissions import ROLES_BY_SLUG, Ability, Access
from memory_admin.store import InMemoryMemoryStore
from tests.dashboard.conftest import find

DANA = "scope=tenant%3Dacme%2Cuser%3Ddana"


def as_of_text(moment: datetime) -> str:
    """A moment as the as-of field takes it in a URL (UTC, 24-hour)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M")


def every_page(store: InMemoryMemoryStore) -> list[tuple[str, str]]:
    """``(name, url)`` for every page; makes one audit entry (an invalidation) to show."""
    admin = Access(username="ada", role=ROLES_BY_SLUG["admin"], abilities=frozenset(Ability), all_tenants=True)
    record = find(store, "tenant=acme,user=dana", "switched to green tea")
    doomed = find(store, "tenant=acme,user=ravi", "Ravi is the owner")
    entry = actions.invalidate_record(store, admin, doomed, "Out of date: ownership moved")
    espresso = find(store, "tenant=acme,user=dana", "Dana drinks espresso, no milk.")
    assert espresso.invalid_at is not None
    as_of = as_of_text(espresso.invalid_at - timedelta(minutes=1))  # while the first drink was believed
    event = store.query_events({"types": ["agent.memory.recall"], "limit": 1})[0].id
    turns = store.query_events({"types": ["agent.memory.recall_turn"], "limit": 10})
    later = min(turns, key=lambda stored: stored.id).id  # turn 2 of the demo's conversation
    recalls = store.query_events({"types": ["agent.memory.recall"]})
    opened = next(stored for stored in recalls if getattr(stored.event, "conversation_id", None))
    return [
        ("sign-in", "/accounts/login/"),
        ("browse-tenants", "/"),
        ("browse", f"/?{DANA}"),
        ("browse-as-of", f"/?{DANA}&invalidated=1&as_of={as_of}"),
        ("record", f"/records/{record.id}/"),
        ("record-as-of", f"/records/{espresso.id}/?as_of={as_of}"),
        ("record-invalidate", f"/records/{record.id}/invalidate/"),
        ("record-correct", f"/records/{record.id}/correct/"),
        ("record-delete", f"/records/{record.id}/delete/"),
        ("scopes-pick", "/scopes/"),
        ("scope", f"/scopes/?{DANA}"),
        ("erase-preview", f"/scopes/erase/?{DANA}"),
        ("recall", "/recall/"),
        ("recall-event", f"/recall/events/{event}/"),
        ("recall-replay", f"/recall/events/{event}/?replay=1"),
        ("recall-conversation", f"/recall/events/{opened.id}/"),
        ("recall-turn", f"/recall/events/{later}/"),
        ("preview-empty", "/recall/preview/"),
        ("preview", f"/recall/preview/?{DANA}&message=Book+me+a+flight+to+Berlin+next+week&budget=1500"),
        ("health-pick", "/health/"),
        ("health", "/health/?scope=tenant%3Dacme"),
        ("audit", "/audit/"),
        ("audit-entry", f"/audit/{entry.pk}/"),
        *learnings_pages(store),
        ("not-found", "/records/mem_missing/"),
    ]


def learnings_pages(store: InMemoryMemoryStore) -> list[tuple[str, str]]:
    """The learnings pages over the demo's support agent: the inbox, a learning in each
    kind of state, its edit and roll-back pages, the compositions, what it learned."""
    learnings = store.promotions({"tenant": "acme"}, limit=100).promotions

    def learning(text: str) -> str:
        [found] = [p.record_id for p in learnings if p.record is not None and text in p.record.content]
        return found

    pending = learning("Refund requests must quote the booking reference")
    conflict = learning("Refund more than the fare paid")
    pickable = learning("cannot change a booking")
    promoted = learning("Offer a travel voucher")
    support = "scope=tenant%3Dacme%2Cagent%3Dsupport"
    promoted_at = store.promotion(promoted)
    assert promoted_at is not None
    before = as_of_text(promoted_at.at - timedelta(minutes=1))
    return [
        ("learnings-pick", "/learnings/"),
        ("learnings", "/learnings/?scope=tenant%3Dacme"),
        ("learning-pending", f"/learnings/{pending}/"),
        ("learning-conflict", f"/learnings/{conflict}/"),
        ("learning-pick", f"/learnings/{pickable}/"),
        ("learning-promoted", f"/learnings/{promoted}/"),
        ("learning-edit", f"/learnings/{conflict}/edit/"),
        ("learning-rollback", f"/learnings/{promoted}/rollback/"),
        ("compositions", "/compositions/?scope=tenant%3Dacme"),
        ("composition", f"/compositions/prompt/?{support}"),
        ("composition-as-of", f"/compositions/prompt/?{support}&as_of={before}"),
        ("composition-diff", f"/compositions/diff/?{support}&from_time={before}"),
        ("learned", "/learned/?scope=tenant%3Dacme"),
    ]
