"""The recall pages: graphs and tables over the demo's recall events, one event's
drill-down, and the preview that never reaches the event log."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils.http import urlencode

from memory_admin.events import MemoryRecallEvent, MemoryRecallTurnEvent
from memory_admin.recall import assemble_recall
from memory_admin.reports.recall_entries import HIDDEN_ENTRY
from memory_admin.store import InMemoryMemoryStore
from tests.dashboard.conftest import MakeClient, find

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}
DANA = {"tenant": "acme", "user": "dana"}


def recall_url(**params: str) -> str:
    return reverse("dashboard:recall") + ("?" + urlencode(params) if params else "")


def preview_url(**params: str) -> str:
    return reverse("dashboard:recall_preview") + "?" + urlencode(params)


def chart_data(html: str) -> dict[str, list[object]]:
    found = re.search(r'<script id="recall-series" type="application/json">(.*?)</script>', html, re.S)
    assert found, "no chart data on the page"
    data: dict[str, list[object]] = json.loads(found.group(1))
    return data


def recalls(store: InMemoryMemoryStore, **scope: str) -> list[MemoryRecallEvent]:
    query = {"types": ["agent.memory.recall"], "limit": 1000, **({"scope": scope} if scope else {})}
    return [s.event for s in store.query_events(query) if isinstance(s.event, MemoryRecallEvent)]


@pytest.fixture
def admin(client_for: MakeClient, demo_store: InMemoryMemoryStore) -> Client:
    return client_for("admin")


# --- the overview -------------------------------------------------------------------------


def test_graphs_and_tables_show_the_demo_recalls(admin: Client, demo_store: InMemoryMemoryStore) -> None:
    response = admin.get(recall_url(scope="tenant=acme"))
    assert response.status_code == 200 and "HX-Request" in response["Vary"]
    html = response.content.decode()
    events = recalls(demo_store, tenant="acme")
    data = chart_data(html)
    assert sum(n for n in data["recalls"] if isinstance(n, int)) == len(events) == 10
    assert len(data["labels"]) == len(data["records"]) == len(data["chars"]) == len(data["truncation"])
    assert None in data["records"]  # an hour without recalls is a gap, not a zero
    truncated = sum(e.truncated for e in events)
    assert f'<span class="value">{round(100 * truncated / len(events))} %</span> truncated' in html
    for canvas in ("chart-records", "chart-chars", "chart-truncation"):
        assert f'<canvas id="{canvas}"' in html
    assert "Book me a flight to Berlin next week" in html  # the recent-events table
    assert "Sam wants" not in html and "tenant=globex" not in html


def test_fragment_is_the_region_only(admin: Client) -> None:
    response = admin.get(recall_url(scope="tenant=acme"), **HTMX)
    html = response.content.decode()
    assert response.status_code == 200 and "<html" not in html
    assert html.lstrip().startswith('<div id="recall"')
    assert 'id="recall-series"' in html  # the charts redraw from the swapped region


def test_admin_without_a_scope_sees_every_tenant(admin: Client, demo_store: InMemoryMemoryStore) -> None:
    data = chart_data(admin.get(recall_url()).content.decode())
    assert sum(n for n in data["recalls"] if isinstance(n, int)) == len(recalls(demo_store)) == 22


def test_filter_by_agent_and_time(admin: Client, demo_store: InMemoryMemoryStore) -> None:
    planner = [e for e in recalls(demo_store) if e.agent == "planner"]
    data = chart_data(admin.get(recall_url(agent="planner")).content.decode())
    assert sum(n for n in data["recalls"] if isinstance(n, int)) == len(planner) > 0
    newest = max(e.at for e in recalls(demo_store))
    since = (newest - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M")
    html = admin.get(recall_url(since=since, bucket="hour")).content.decode()
    expected = [e for e in recalls(demo_store) if e.at >= newest.replace(second=0, microsecond=0) - timedelta(days=1)]
    assert sum(n for n in chart_data(html)["recalls"] if isinstance(n, int)) == len(expected)
    assert "By hour" in html


def test_a_grant_sees_only_its_recalls(client_for: MakeClient, demo_store: InMemoryMemoryStore) -> None:
    dana = client_for("viewer", "tenant=acme,user=dana")
    html = dana.get(recall_url()).content.decode()  # the one grant is the starting scope
    assert sum(n for n in chart_data(html)["recalls"] if isinstance(n, int)) == len(
        recalls(demo_store, tenant="acme", user="dana")
    )
    assert "refunds review" not in html  # Ravi's recalls
    assert dana.get(recall_url(scope="tenant=globex")).status_code == 404


def test_empty_state_says_what_to_do(admin: Client) -> None:
    html = admin.get(recall_url(scope="tenant=acme", agent="nobody")).content.decode()
    assert "No recall events here yet" in html and "Show all time and every agent" in html


@pytest.mark.parametrize(
    "params",
    [{"since": "yesterday"}, {"bucket": "minute"}, {"since": "2026-01-05", "until": "2026-01-04"}, {"agent": "a\x00b"}],
)
def test_bad_filters_answer_400(admin: Client, params: dict[str, str]) -> None:
    response = admin.get(recall_url(**params))
    assert response.status_code == 400 and "could not be used" in response.content.decode()


def test_older_events_page(admin: Client, settings: object, demo_store: InMemoryMemoryStore) -> None:
    html = admin.get(recall_url(scope="tenant=acme")).content.decode()
    assert "Older events" not in html  # 10 events fit one table
    from memory_admin.dashboard.views import recall

    first = recall.TABLE_SIZE
    try:
        recall.TABLE_SIZE = 4
        html = admin.get(recall_url(scope="tenant=acme")).content.decode()
        older = re.search(r'href="\?[^"]*before=(\d+)', html)
        assert older
        page2 = admin.get(recall_url(scope="tenant=acme", before=older.group(1))).content.decode()
        ids = re.findall(r'href="/recall/events/(\d+)/"', page2)
        assert len(ids) == 4 and all(int(i) < int(older.group(1)) for i in ids)
    finally:
        recall.TABLE_SIZE = first


# --- one event ------------------------------------------------------------------------------


def test_drill_down_lists_what_went_in_and_what_was_deferred(admin: Client, demo_store: InMemoryMemoryStore) -> None:
    stored = next(
        s
        for s in demo_store.query_events(
            {"types": ["agent.memory.recall"], "scope": {"user": "dana", "tenant": "acme"}}
        )
        if isinstance(s.event, MemoryRecallEvent) and s.event.truncated
    )
    event = stored.event
    assert isinstance(event, MemoryRecallEvent)
    response = admin.get(reverse("dashboard:recall_event", args=[stored.id]))
    assert response.status_code == 200
    html = response.content.decode()
    assert f"<strong>{event.chars}</strong> of {event.budget_chars} characters" in html
    for record_id in event.record_ids:
        assert record_id in html
    [deferred] = event.deferred_ids
    assert event.deferred_reasons[deferred] == "profile_slice"
    assert "the profile slice was full" in html
    deferred_record = demo_store.get(deferred)
    assert deferred_record is not None and deferred_record.content[:40] in html
    assert "Run this recall again as a preview" in html
    fragment = admin.get(reverse("dashboard:recall_event", args=[stored.id]), **HTMX).content.decode()
    assert fragment.lstrip().startswith('<article id="event"')


def test_drill_down_hides_records_outside_the_grant(client_for: MakeClient, demo_store: InMemoryMemoryStore) -> None:
    """A user-level grant sees its recall, but not the tenant-wide records in it."""
    stored = demo_store.query_events({"types": ["agent.memory.recall"], "scope": {"tenant": "acme", "user": "dana"}})[0]
    html = client_for("viewer", "tenant=acme,user=dana").get(reverse("dashboard:recall_event", args=[stored.id]))
    text = html.content.decode()
    assert html.status_code == 200
    assert "Acme Travel sells corporate travel" not in text  # a tenant-wide profile in that block
    assert "deleted since, or outside the scopes you may see" in text


def test_drill_down_refuses_other_tenants_and_other_event_types(
    client_for: MakeClient, demo_store: InMemoryMemoryStore
) -> None:
    viewer = client_for("viewer", "tenant=acme")
    globex = demo_store.query_events({"types": ["agent.memory.recall"], "scope": {"tenant": "globex"}})[0]
    write = demo_store.query_events({"types": ["agent.memory.write"], "scope": {"tenant": "acme"}})[0]
    for event_id in (globex.id, write.id, 999_999):
        response = viewer.get(reverse("dashboard:recall_event", args=[event_id]))
        assert response.status_code == 404 and "Sam" not in response.content.decode()


def _conversation(store: InMemoryMemoryStore) -> tuple[int, list[int]]:
    """The demo conversation's turn-1 event id and its later turns' ids, in turn order."""
    opened = next(
        stored.id
        for stored in store.query_events({"types": ["agent.memory.recall"]})
        if isinstance(stored.event, MemoryRecallEvent) and stored.event.conversation_id == "c-berlin-trip"
    )
    turns = store.query_events({"types": ["agent.memory.recall_turn"]})
    later = sorted(turns, key=lambda s: s.event.turn if isinstance(s.event, MemoryRecallTurnEvent) else 0)
    return opened, [stored.id for stored in later]


def test_a_conversation_s_first_recall_lists_its_later_turns(admin: Client, demo_store: InMemoryMemoryStore) -> None:
    opened, later = _conversation(demo_store)
    html = admin.get(reverse("dashboard:recall_event", args=[opened])).content.decode()
    assert "turn 1 of conversation <code>c-berlin-trip</code>" in html
    table = html[html.index('id="turns-heading"') :]
    assert "3 turns" in table[:200]
    for event_id, turn in zip(later, (2, 3), strict=True):
        assert f'<a href="/recall/events/{event_id}/">turn {turn}</a>' in table
    assert "Which seat did you get me on the Berlin flight?" in table
    assert '<tr class="current" aria-current="page">' in table
    overview = admin.get(recall_url(scope="tenant=acme,user=dana")).content.decode()
    assert "conversation <code>c-berlin-trip</code>: its later turns" in overview


def test_a_later_turn_shows_what_it_added_and_what_it_found_again(
    admin: Client, demo_store: InMemoryMemoryStore
) -> None:
    opened, [second, _third] = _conversation(demo_store)
    stored = demo_store.get_event(second)
    assert stored is not None and isinstance(stored.event, MemoryRecallTurnEvent)
    event = stored.event
    response = admin.get(reverse("dashboard:recall_event", args=[second]))
    html = response.content.decode()
    assert response.status_code == 200 and "Recall at turn 2" in html
    assert f'max="{event.budget_chars}" value="{event.chars}"' in html  # the block against its own budget
    assert f"<strong>{event.chars}</strong> of {event.budget_chars} characters" in html
    added = html[html.index('id="in-heading"') : html.index('id="again-heading"')]
    for record_id in event.record_ids:
        assert f"<code>{record_id}</code>" in added
    assert "Booked TAP TP 534" in added, "saved after turn 1, so new to the conversation"
    again = html[html.index('id="again-heading"') : html.index('id="deferred-heading"')]
    assert f"{len(event.repeated_ids)} records" in again and event.repeated_ids
    for record_id in event.repeated_ids:
        assert record_id in again, "what the conversation already held, found again"
    assert f'<a href="/recall/events/{opened}/">turn 1</a>' in html
    fragment = admin.get(reverse("dashboard:recall_event", args=[second]), **HTMX).content.decode()
    assert fragment.lstrip().startswith('<article id="event"') and "<html" not in fragment


def test_a_later_turn_that_added_nothing_says_why(admin: Client, demo_store: InMemoryMemoryStore) -> None:
    _, [_second, third] = _conversation(demo_store)
    html = admin.get(reverse("dashboard:recall_event", args=[third])).content.decode()
    assert "Nothing was added: everything the message matched was already in the conversation" in html


def test_a_later_turn_is_refused_outside_the_grant(client_for: MakeClient, demo_store: InMemoryMemoryStore) -> None:
    _, later = _conversation(demo_store)
    for event_id in later:
        response = client_for("viewer", "tenant=globex").get(reverse("dashboard:recall_event", args=[event_id]))
        assert response.status_code == 404 and "Dana" not in response.content.decode()


# --- the preview ----------------------------------------------------------------------------


def test_preview_shows_the_exact_block_and_logs_nothing(admin: Client, demo_store: InMemoryMemoryStore) -> None:
    logged = len(demo_store.query_events({"limit": 10_000, "include_previews": True}))
    seen: list[object] = []
    demo_store.add_sink(seen.append)
    response = admin.get(
        preview_url(scope="tenant=acme,user=dana", agent="planner", message="Book me a flight to Berlin next week")
    )
    assert response.status_code == 200
    html = response.content.decode()
    expected = assemble_recall(
        demo_store,
        {"tenant": "acme", "user": "dana"},
        "Book me a flight to Berlin next week",
        agent="planner",
        sink=lambda event: None,
        now=datetime.now(UTC),
    )
    from django.utils.html import escape

    assert escape(expected.block) in html
    assert f"<strong>{expected.report.chars}</strong> of 4000 characters" in html
    assert "the profile slice was full" in html  # Dana's profile overflows its slice
    assert len(demo_store.query_events({"limit": 10_000, "include_previews": True})) == logged
    assert seen == []  # not even the store's own sinks hear of it


def test_preview_options_change_the_block(admin: Client) -> None:
    small = admin.get(preview_url(scope="tenant=acme,user=dana", budget="600", profile="0")).content.decode()
    assert "of 600 characters" in small and "Profile slice</dt><dd>0 characters" in small


def test_preview_redacts_shared_records_outside_a_user_grant(
    client_for: MakeClient, demo_store: InMemoryMemoryStore
) -> None:
    html = (
        client_for("viewer", "tenant=acme,user=dana").get(preview_url(scope="tenant=acme,user=dana")).content.decode()
    )
    assert "green tea" in html or "Dana" in html
    assert "Acme Travel sells corporate travel" not in html
    assert HIDDEN_ENTRY.split("{")[0].strip("- [") in html
    assert "came from shared scopes outside your grants" in html


def test_preview_errors_are_shown_inline(admin: Client) -> None:
    contradiction = admin.get(preview_url(scope="tenant=acme,user=dana,agent=planner", agent="coder"))
    assert contradiction.status_code == 400 and "belongs to agent" in contradiction.content.decode()
    too_small = admin.get(preview_url(scope="tenant=acme", budget="10"))
    assert too_small.status_code == 400 and "Budget" in too_small.content.decode()
    outside = admin.get(preview_url(scope="tenant=acme", bogus="1"))
    assert outside.status_code == 400


def test_preview_without_a_scope_offers_choices(client_for: MakeClient, demo_store: InMemoryMemoryStore) -> None:
    html = client_for("viewer", "tenant=acme").get(reverse("dashboard:recall_preview")).content.decode()
    assert "Pick a scope to start" in html and "tenant%3Dacme" in html


def test_a_deleted_record_shows_as_an_id_only(admin: Client, demo_store: InMemoryMemoryStore) -> None:
    stored = demo_store.query_events({"types": ["agent.memory.recall"], "scope": {"tenant": "acme", "user": "ravi"}})[0]
    assert isinstance(stored.event, MemoryRecallEvent)
    gone = stored.event.record_ids[0]
    content = demo_store.get(gone)
    assert content is not None
    demo_store.delete(gone)
    html = admin.get(reverse("dashboard:recall_event", args=[stored.id])).content.decode()
    assert gone in html and content.content not in html
    assert find(demo_store, "tenant=acme,user=ravi", "refunds endpoint")  # the neighbours are still there


def test_the_inspector_explains_ranks_and_non_candidates(admin: Client, demo_store: InMemoryMemoryStore) -> None:
    preview = admin.get(
        preview_url(scope="tenant=acme,user=dana", message="Book me a flight to Berlin next week", budget="1500")
    ).content.decode()
    assert 'matched <code class="word">berlin</code>' in preview
    weight = r'<code class="word">berlin</code> <span class="muted" title="this word\'s part of the keyword '
    weight += r'score[^"]*">'
    assert re.search(weight + r"\d+\.\d\d</span>", preview), "each shared word with its part of the score"
    assert re.search(r'<span class="small score">score \d+\.\d\d</span>', preview)
    assert "Not candidates" in preview and 'data-reason="superseded"' in preview
    stored = next(
        s
        for s in demo_store.query_events(
            {"types": ["agent.memory.recall"], "scope": {"tenant": "acme", "user": "dana"}}
        )
        if isinstance(s.event, MemoryRecallEvent) and s.event.query_preview
    )
    event = admin.get(reverse("dashboard:recall_event", args=[stored.id])).content.decode()
    assert "The event log keeps no scores" in event and 'class="small score"' not in event
    assert "part of the keyword score" not in event, "no weight is made up for a past event"
    assert "<strong>profile</strong> #1" in event and 'id="others-heading"' in event


# --- replay now -------------------------------------------------------------------------------


def test_replay_now_diffs_today_against_the_event_and_logs_nothing(
    admin: Client, demo_store: InMemoryMemoryStore
) -> None:
    stored = next(
        s
        for s in demo_store.query_events(
            {"types": ["agent.memory.recall"], "scope": {"tenant": "acme", "user": "dana"}}
        )
        if isinstance(s.event, MemoryRecallEvent) and "Berlin" in (s.event.query_preview or "")
    )
    event = stored.event
    assert isinstance(event, MemoryRecallEvent)
    url = reverse("dashboard:recall_event", args=[stored.id])
    gone, dropped = event.record_ids[-1], event.record_ids[-2]
    demo_store.invalidate(dropped, "out of date")
    demo_store.delete(gone)
    [fresh] = demo_store.write(
        [
            {
                "scope": {"tenant": "acme", "user": "dana"},
                "kind": "fact",
                "content": "Dana flies to Berlin in May.",
                "provenance": {"source": "test"},
            }
        ]
    )
    logged = len(demo_store.query_events({"limit": 10_000, "include_previews": True}))
    heard: list[object] = []
    demo_store.add_sink(heard.append)
    page = admin.get(url)
    assert 'name="replay" value="1"' in page.content.decode() and 'id="replay-summary"' not in page.content.decode()
    response = admin.get(url + "?replay=1")
    assert response.status_code == 200
    html = response.content.decode()
    added = html.split('id="replay-added"')[1].split("</ul>")[0]
    removed = html.split('id="replay-removed"')[1].split("</ul>")[0]
    assert fresh.id in added and "written after the recall" in added
    assert dropped in removed and "invalidated since" in removed
    assert gone in removed and "deleted or erased since" in removed
    assert len(demo_store.query_events({"limit": 10_000, "include_previews": True})) == logged  # not logged
    assert heard == []  # not even the store's sinks hear of it
    fragment = admin.get(url + "?replay=1", **HTMX).content.decode()
    assert fragment.lstrip().startswith('<section id="replay"') and "<html" not in fragment
    assert admin.get(url + "?replay=1&bogus=2").status_code == 400


def test_the_inspector_never_gives_a_common_word_as_the_reason(admin: Client) -> None:
    html = admin.get(
        preview_url(scope="tenant=acme,user=dana", message="What should I order for the team dinner?")
    ).content.decode()
    reasons = re.findall(r'<td class="why".*?</td>', html, flags=re.S)
    assert any('matched <code class="word">' in cell for cell in reasons)  # real words are listed...
    assert not any(re.search(r'class="word">(the|what|for|i)<', cell) for cell in reasons)  # ...never these
    assert "common word" in html
    assert "by keyword relevance" not in html  # hits come by words and, in a store that embeds, meaning


def test_common_words_are_said_apart() -> None:
    from memory_admin.reports.recall_entries import Rank

    rank = Rank(tier="hits", words=("the", "dinner"), weights=(("the", 0.01), ("dinner", 2.5)))
    assert rank.weighed_words == (("dinner", 2.5),) and rank.common_words == ("the",)
