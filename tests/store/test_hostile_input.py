"""Hostile input never escapes as an untyped error.

Random calls across the whole store API, recall and the event log's queries — wrong
types, out-of-range numbers and times, invalid Unicode, empty filter lists, fields past
their bounds, near-valid records with one field gone wrong — on every backend: each one
either succeeds, within every bound the store declares, or raises one of the typed
errors that say what was wrong (a :class:`MemoryStoreError` subclass: the bare base
class is what a backend raises when its database refused what it was given). The
toolbox answers any string a model may send.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_admin.errors import MemoryStoreError
from memory_admin.recall import RecallOptions, assemble_recall
from memory_admin.records import MemoryRecord, payload_chars
from memory_admin.store import BaseMemoryStore, SqliteMemoryStore
from memory_admin.toolbox import TOOL_NAMES, MemoryToolbox

EXAMPLES_PER_BACKEND = 3400  # three backends: over 10,000 calls per run

EDGES = st.sampled_from(
    [
        "",
        " ",
        "\ud800",
        "a\x00b",
        "\u202eevil",
        "5",
        "0001-01-01T00:00:00+14:00",
        "9999-12-31T23:59:59-14:00",
        "2026-01-01T00:00:00",
        "r99999999999999999999999.1",
        "o99999999999999999999",
        "r1.",
        "mem_" + "A" * 26,
        "x" * 70,
        2**63,
        2**64,
        -(2**63) - 1,
        float("nan"),
        float("inf"),
        b"bytes",
    ]
)
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=20), EDGES)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.one_of(st.text(max_size=8), EDGES), inner, max_size=3)
    ),
    max_leaves=6,
)
GOOD_SCOPE = {"tenant": "acme", "user": "u1"}
SCOPES = st.one_of(st.just(GOOD_SCOPE), st.just({"tenant": "acme"}), VALUES)
TARGETED = {"target": {"primitive": "recovery"}}
OVER_BOUNDS = st.sampled_from(
    [
        {"content": "x" * 10_001},
        {**TARGETED, "payload": {"notes": "x" * 20_001}},
        {"tags": [f"t{n}" for n in range(33)]},
        {"key": "k" * 129},
        {"provenance": {"source": "s" * 201}},
        {"scope": {"tenant": "acme", "user": "u" * 201}},
    ]
)
"""One field of a write past its bound (the default limits)."""


@st.composite
def write_inputs(draw: st.DrawFn) -> Any:
    record: dict[str, Any] = {
        "scope": GOOD_SCOPE,
        "kind": "fact",
        "content": "Dana drinks tea.",
        "provenance": {"source": "fuzz"},
    }
    record.update(draw(st.sampled_from([{}, TARGETED])))  # a target, so that a payload can be stored
    if draw(st.booleans()):
        record.update(draw(OVER_BOUNDS))
    for name in draw(
        st.lists(
            st.sampled_from(
                [*record, "key", "tags", "expires_at", "observed_at", "supersedes", "target", "payload", "surprise"]
            ),
            max_size=3,
        )
    ):
        record[name] = draw(VALUES)
    return draw(st.one_of(st.just([record]), st.just(record), VALUES))


@st.composite
def search_queries(draw: st.DrawFn) -> Any:
    fields = ["query", "kinds", "tags", "keys", "key_match", "agent", "as_of", "include_invalidated", "limit"]
    query: dict[str, Any] = {"scope": draw(SCOPES), "scope_match": draw(st.sampled_from(["subset", "visible", 7]))}
    for name in draw(st.lists(st.sampled_from(fields), max_size=4)):
        query[name] = draw(st.one_of(st.just([]), VALUES) if name in ("kinds", "tags", "keys") else VALUES)
    return draw(st.one_of(st.just(query), VALUES))


@st.composite
def event_queries(draw: st.DrawFn) -> Any:
    fields = ["types", "since", "until", "scope", "agent", "before_id", "limit", "include_previews"]
    return {name: draw(VALUES) for name in draw(st.lists(st.sampled_from(fields), max_size=3))}


@st.composite
def recall_options(draw: st.DrawFn) -> dict[str, Any]:
    return {
        name: draw(VALUES) for name in draw(st.lists(st.sampled_from(list(RecallOptions.model_fields)), max_size=2))
    }


def _within_bounds(store: BaseMemoryStore, written: Any) -> None:
    """What a write or an import accepted holds to every bound the store declares."""
    caps = store.capabilities()
    for record in written if isinstance(written, list) else []:
        assert isinstance(record, MemoryRecord)
        assert len(record.content) <= caps.max_content_chars
        assert record.payload is None or payload_chars(record.payload) <= caps.max_payload_chars
        assert len(record.tags) <= 32


def _calls(store: BaseMemoryStore) -> st.SearchStrategy[Callable[[], Any]]:
    any_id = st.one_of(st.just("mem_01JB0000000000000000000000"), VALUES)
    return st.one_of(
        write_inputs().map(lambda batch: lambda: _within_bounds(store, store.write(batch))),
        search_queries().map(lambda query: lambda: store.search(query)),
        any_id.map(lambda record_id: lambda: store.get(record_id)),
        st.tuples(any_id, VALUES).map(lambda a: lambda: store.invalidate(a[0], a[1])),
        any_id.map(lambda record_id: lambda: store.delete(record_id)),
        SCOPES.map(lambda scope: lambda: store.erase(scope)),
        SCOPES.map(lambda scope: lambda: store.preview_erase(scope)),
        VALUES.map(lambda query: lambda: store.list_records(query)),
        SCOPES.map(lambda scope: lambda: store.scope_facets(scope)),
        st.tuples(SCOPES, VALUES).map(lambda a: lambda: store.count_records(a[0], scope_match=a[1])),
        any_id.map(lambda record_id: lambda: store.chain(record_id)),
        SCOPES.map(lambda scope: lambda: store.sweep_expired(scope)),
        st.tuples(SCOPES, VALUES, VALUES).map(lambda a: lambda: store.find_corrupt(a[0], limit=a[1], max_rows=a[2])),
        st.one_of(event_queries(), VALUES).map(lambda query: lambda: store.query_events(query)),
        st.tuples(SCOPES, st.one_of(st.none(), st.text(max_size=40), EDGES, VALUES), recall_options()).map(
            lambda a: lambda: assemble_recall(store, a[0], a[1], **a[2])
        ),
        VALUES.map(lambda event_id: lambda: store.get_event(event_id)),
        VALUES.map(lambda before: lambda: store.prune_events(before)),
        VALUES.map(lambda events: lambda: store.import_events(events)),
        VALUES.map(lambda records: lambda: store.import_records(records)),
    )


def _assert_typed(store: BaseMemoryStore, data: st.DataObject) -> None:
    call = data.draw(_calls(store))
    refused: MemoryStoreError | None = None
    try:
        call()
    except MemoryStoreError as exc:  # typed: what the API promises
        refused = exc
    assert type(refused) is not MemoryStoreError, f"the backend refused what it was given: {refused}"


FUZZ = settings(
    max_examples=EXAMPLES_PER_BACKEND,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.mark.slow  # about 25 s a backend on two cores
@FUZZ
@given(data=st.data())
def test_every_failure_is_typed(store: BaseMemoryStore, data: st.DataObject) -> None:
    """(``store``: each embedded backend, the suite's fixture.)"""
    _assert_typed(store, data)


@pytest.fixture
def postgres_store(postgres_url: str) -> Iterator[BaseMemoryStore]:
    from memory_admin.store.postgres import PostgresMemoryStore

    with PostgresMemoryStore(postgres_url) as store:
        yield store


@pytest.mark.postgres
@pytest.mark.slow
@FUZZ
@given(data=st.data())
def test_every_failure_is_typed_on_postgres(postgres_store: BaseMemoryStore, data: st.DataObject) -> None:
    _assert_typed(postgres_store, data)


JSON_TEXT = st.one_of(
    st.text(),
    st.recursive(SCALARS.filter(lambda v: not isinstance(v, bytes)), lambda inner: st.lists(inner, max_size=3)).map(
        lambda value: json.dumps(value, allow_nan=True)
    ),
    st.dictionaries(
        st.sampled_from(["content", "query", "id", "reason", "limit", "kind", "tags", "target", "supersedes", "x"]),
        SCALARS.filter(lambda v: not isinstance(v, bytes)),
        max_size=4,
    ).map(lambda value: json.dumps(value, allow_nan=True)),
    st.sampled_from(
        [
            "[" * 100_000,
            "9" * 5000,
            '{"limit": 1' + "0" * 5000 + "}",
            '{"query": "\\ud800"}',
            '{"kinds": []}',
            json.dumps({"content": "x", "target": {"primitive": "recovery"}, "payload": {"n": "x" * 100_000}}),
            json.dumps({"content": "x", "target": {"primitive": "recovery"}, "payload": json.dumps({"n": "x" * 5000})}),
        ]
    ),
)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.one_of(st.sampled_from(TOOL_NAMES), st.text(max_size=12)), arguments=JSON_TEXT)
def test_the_toolbox_answers_any_string(tmp_path: Path, name: str, arguments: str) -> None:
    toolbox = _TOOLBOXES.get(tmp_path) or _TOOLBOXES.setdefault(
        tmp_path, MemoryToolbox(SqliteMemoryStore(tmp_path / "tools.sqlite3"), GOOD_SCOPE, agent="planner")
    )
    answer = toolbox.call(name, arguments)
    assert isinstance(answer, dict) and "ok" in answer
    assert answer["ok"] or answer["error"]["code"] not in ("storage_error", "internal_error"), answer
    json.dumps(answer)  # always serialisable for the tool result


_TOOLBOXES: dict[Path, MemoryToolbox] = {}
