"""The learnings pages and decisions, as three roles, under hostile query, path and form
parameters (the values of :mod:`tests.dashboard.test_parameter_fuzz`, and pins that are
almost JSON): never a 5xx, and a refused decision changes nothing."""

from __future__ import annotations

import pytest
from django.test import Client
from hypothesis import given
from hypothesis import strategies as st

from memory_admin.dashboard.models import AuditEntry
from memory_admin.store import InMemoryMemoryStore
from tests.dashboard.conftest import MakeClient
from tests.dashboard.test_parameter_fuzz import FUZZ, HOSTILE, RECORD_IDS, ROLES, Query, _no_5xx

pytestmark = pytest.mark.django_db

PARAMETERS = (
    "scope",
    "agent",
    "state",
    "primitive",
    "tier",
    "after",
    "as_of",
    "version",
    "from_time",
    "from_version",
    "to_time",
    "to_version",
    "since",
    "until",
    "bucket",
    "decision",
    "reason",
    "content",
    "payload",
    "pin",
    "other_pin",
    "other",
    "seen_at",
    "next",
    "record",
)
PINS = st.sampled_from(
    [
        "{}",
        '{"revision": -1}',
        '{"revision": 1, "state": "maybe"}',
        '{"overlay_version": "' + "f" * 500 + '"}',
        '{"scope": {"tenant": ""}}',
        '{"scope": "tenant=acme"}',
        "[1, 2]",
        "{" * 100,
        '{"revision": 1e309}',
    ]
)
VALUES = st.one_of(HOSTILE, PINS, st.sampled_from(["approve", "reject", "rollback", "keep_this", "keep_other"]))
QUERIES = st.dictionaries(st.sampled_from(PARAMETERS), st.lists(VALUES, min_size=1, max_size=2), max_size=6)
PAGES = (
    "/learnings/",
    "/compositions/",
    "/compositions/prompt/",
    "/compositions/diff/",
    "/learned/",
    "/learned/export.csv",
    "/learned/export.jsonl",
)
LEARNING_PAGES = ("", "edit/", "rollback/")


@pytest.fixture(params=ROLES, ids=lambda role: role[0])
def signed_in(request: pytest.FixtureRequest, client_for: MakeClient, demo_store: InMemoryMemoryStore) -> Client:
    return client_for(*request.param)


@pytest.fixture
def learning(demo_store: InMemoryMemoryStore) -> str:
    [pending] = demo_store.promotions({"tenant": "acme"}, states=["pending_review"]).promotions
    return pending.record_id


@FUZZ
@given(page=st.sampled_from(PAGES), query=QUERIES, htmx=st.booleans())
def test_learnings_pages_under_hostile_query_parameters(signed_in: Client, page: str, query: Query, htmx: bool) -> None:
    response = signed_in.get(page, query, headers={"HX-Request": "true"} if htmx else {})
    _no_5xx(response, f"GET {page} {query}")
    if response.streaming:
        b"".join(response.streaming_content)  # type: ignore[attr-defined]


@FUZZ
@given(record_id=RECORD_IDS, tail=st.sampled_from(LEARNING_PAGES), query=QUERIES)
def test_learning_pages_under_hostile_ids(signed_in: Client, record_id: str, tail: str, query: Query) -> None:
    _no_5xx(signed_in.get(f"/learnings/{record_id}/{tail}", query), f"GET learning {record_id} {tail}")


@FUZZ
@given(tail=st.sampled_from(["decide/run/", "edit/run/"]), form=QUERIES, htmx=st.booleans())
def test_decisions_under_hostile_form_data(
    signed_in: Client, demo_store: InMemoryMemoryStore, learning: str, tail: str, form: Query, htmx: bool
) -> None:
    before = (demo_store.promotion(learning), AuditEntry.objects.filter(outcome="done").count())
    response = signed_in.post(f"/learnings/{learning}/{tail}", form, headers={"HX-Request": "true"} if htmx else {})
    _no_5xx(response, f"POST {tail} {form}")
    if response.status_code >= 400:  # refused (a valid decision in a hostile form may go through)
        assert (demo_store.promotion(learning), AuditEntry.objects.filter(outcome="done").count()) == before


@FUZZ
@given(form=QUERIES, proposal=st.one_of(st.integers(min_value=0, max_value=2**70), st.just(1)))
def test_bulk_and_proposal_decisions_under_hostile_form_data(signed_in: Client, form: Query, proposal: int) -> None:
    _no_5xx(signed_in.post("/learnings/decide/run/", form), f"POST bulk {form}")
    _no_5xx(signed_in.post(f"/proposals/{proposal}/settle/run/", form), f"POST proposal {proposal} {form}")
