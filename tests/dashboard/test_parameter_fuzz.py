"""Every URL, as three roles, under hostile query, path and form parameters: never a 5xx.

Values are the kind people and scanners send: huge and negative numbers, 30-digit ids,
times out of range, cursors that are almost right, NUL bytes and invalid UTF-8, scope
text that is not ``key=value``, escapes, very long strings.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_admin.store import InMemoryMemoryStore
from tests.dashboard.conftest import MakeClient, find

pytestmark = pytest.mark.django_db

PARAMETERS = (
    "scope",
    "match",
    "q",
    "kind",
    "tag",
    "key",
    "invalidated",
    "expired",
    "as_of",
    "after",
    "agent",
    "since",
    "until",
    "bucket",
    "before",
    "message",
    "budget",
    "profile",
    "reason",
    "content",
    "confirm_id",
    "confirm_scope",
    "actor",
    "action",
)
HOSTILE = st.one_of(
    st.sampled_from(
        [
            "",
            "acme",
            "tenant=globex",
            "tenant=acme,user=dana%2C",
            "tenant=acme,,user=",
            "=",
            "tenant=" + "x" * 5000,
            "9" * 30,
            "-1",
            "0",
            str(2**63),
            str(2**64),
            "1e309",
            "nan",
            "r" + "9" * 25 + ".1",
            "r1.",
            "o-5",
            "0001-01-01T00:00:00+14:00",
            "9999-12-31T23:59:59-14:00",
            "2026-02-30T25:61",
            "\x00",
            "\ufffd\ud7ff",
            "<script>alert(1)</script>",
            "subset",
            "visible",
            "fact",
            "day",
            "1",
            "on",
        ]
    ),
    st.text(max_size=40),
    st.integers().map(str),
)
QUERIES = st.dictionaries(st.sampled_from(PARAMETERS), st.lists(HOSTILE, min_size=1, max_size=2), max_size=5)
Query = dict[str, list[str]]
RECORD_IDS = st.one_of(
    st.sampled_from(["mem_UNKNOWN", "x" * 64, "a.b:c-d", "0"]), st.from_regex(r"[A-Za-z0-9_]{1,64}", fullmatch=True)
)
NUMBERS = st.one_of(st.integers(min_value=0, max_value=2**80), st.sampled_from([0, 1, 2**63 - 1, 2**63, 10**30]))

GET_PAGES = (
    "/",
    "/scopes/",
    "/scopes/erase/",
    "/scopes/erase/confirm/",
    "/recall/",
    "/recall/preview/",
    "/health/",
    "/audit/",
    "/export.jsonl",
    "/export.csv",
)
POST_ACTIONS = ("/scopes/erase/run/", "/health/sweep/")
RECORD_PAGES = ("", "invalidate/", "correct/", "delete/")
RECORD_ACTIONS = ("invalidate/run/", "correct/run/", "delete/run/")
ROLES = (("admin",), ("curator", "tenant=acme"), ("privacy_officer", "tenant=acme,user=dana"))

FUZZ = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def _no_5xx(response: Any, what: str) -> None:
    assert response.status_code < 500, f"{what} answered {response.status_code}"


@pytest.fixture(params=ROLES, ids=lambda role: role[0])
def signed_in(request: pytest.FixtureRequest, client_for: MakeClient, demo_store: InMemoryMemoryStore) -> Client:
    return client_for(*request.param)


@FUZZ
@given(page=st.sampled_from(GET_PAGES), query=QUERIES, htmx=st.booleans())
def test_pages_under_hostile_query_parameters(signed_in: Client, page: str, query: Query, htmx: bool) -> None:
    headers = {"HX-Request": "true"} if htmx else {}
    response = signed_in.get(page, query, headers=headers)
    _no_5xx(response, f"GET {page} {query}")
    if page.startswith("/export"):
        b"".join(response.streaming_content if response.streaming else [response.content])


@FUZZ
@given(page=st.sampled_from(POST_ACTIONS), form=QUERIES)
def test_actions_under_hostile_form_data(signed_in: Client, page: str, form: Query) -> None:
    _no_5xx(signed_in.post(page, form), f"POST {page} {form}")


@FUZZ
@given(record_id=RECORD_IDS, tail=st.sampled_from(RECORD_PAGES), query=QUERIES)
def test_record_pages_under_hostile_ids(signed_in: Client, record_id: str, tail: str, query: Query) -> None:
    _no_5xx(signed_in.get(f"/records/{record_id}/{tail}", query), f"GET record {record_id} {tail}")


@FUZZ
@given(tail=st.sampled_from(RECORD_ACTIONS), form=QUERIES)
def test_record_actions_under_hostile_form_data(
    signed_in: Client, demo_store: InMemoryMemoryStore, tail: str, form: Query
) -> None:
    record = find(demo_store, "tenant=acme,user=dana", "green tea")
    _no_5xx(signed_in.post(f"/records/{record.id}/{tail}", form), f"POST {tail} {form}")


@FUZZ
@given(number=NUMBERS, page=st.sampled_from(["/recall/events/{}/", "/audit/{}/"]), query=QUERIES)
def test_numbered_pages_under_huge_ids(signed_in: Client, number: int, page: str, query: Query) -> None:
    _no_5xx(signed_in.get(page.format(number), query), f"GET {page.format(number)}")
