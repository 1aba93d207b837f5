from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any

import pytest

from memory_admin.conformance import FakeClock
from memory_admin.errors import MemoryBusyError, MemoryCorruptionError
from memory_admin.records import MemoryRecord
from memory_admin.store import BaseMemoryStore
from memory_admin.toolbox import (
    MAX_LIMIT,
    NOT_FOUND_MESSAGE,
    TOOL_NAMES,
    TOOL_SOURCE,
    MemoryPolicy,
    MemoryToolbox,
    anthropic_tools,
    bounded_results,
    dumps,
    input_schema,
    memory_manual,
    openai_tools,
    run_tool,
)
from tests.support.records import ACME, BOB, DANA, rec

FREEZE = {"primitive": "background", "section": "conventions", "key": "deploy_freeze"}


@pytest.fixture
def toolbox(store: BaseMemoryStore, clock: FakeClock) -> MemoryToolbox:
    return MemoryToolbox(store, DANA, agent="planner", conversation_id="conv-1", clock=clock.peek)


class CountingStore:
    """Wraps a store and counts every call the toolbox makes on it."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.inner, name)
        if not callable(attribute):
            return attribute

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(name)
            return attribute(*args, **kwargs)

        return counted


class FailingStore(CountingStore):
    def __init__(self, inner: Any, error: Exception) -> None:
        super().__init__(inner)
        self.error = error

    def __getattr__(self, name: str) -> Any:
        if name in ("search", "get", "write", "invalidate", "asearch", "aget", "awrite", "ainvalidate"):

            def fail(*args: Any, **kwargs: Any) -> Any:
                raise self.error

            return fail
        return super().__getattr__(name)


def everything(store: BaseMemoryStore) -> list[MemoryRecord]:
    return [hit.record for hit in store.search({"scope": ACME, "include_invalidated": True, "limit": 1000})]


# --- schemas ----------------------------------------------------------------------------


def test_there_are_exactly_six_tools_and_no_delete_nor_approval() -> None:
    assert set(TOOL_NAMES) == {
        "memory_save",
        "memory_search",
        "memory_list",
        "memory_get",
        "memory_invalidate",
        "memory_learnings",
    }
    assert [tool["function"]["name"] for tool in openai_tools()] == list(TOOL_NAMES)
    assert [tool["name"] for tool in anthropic_tools()] == list(TOOL_NAMES)


@pytest.mark.parametrize("name", TOOL_NAMES)
def test_schemas_are_self_contained_and_take_no_scope(name: str) -> None:
    schema = input_schema(name)
    text = json.dumps(schema)
    assert "$ref" not in text and "$defs" not in text
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    assert not {"scope", "tenant", "user", "agent"} & set(schema["properties"])
    [openai] = [tool for tool in openai_tools() if tool["function"]["name"] == name]
    [anthropic] = [tool for tool in anthropic_tools() if tool["name"] == name]
    assert openai["type"] == "function"
    assert openai["function"]["parameters"] == anthropic["input_schema"] == schema
    assert openai["function"]["description"] == anthropic["description"] and anthropic["description"]


def test_schemas_accept_what_the_tools_accept_and_refuse_a_scope() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    good = {
        "memory_save": {"content": "Dana prefers window seats.", "kind": "preference", "key": "seat", "target": FREEZE},
        "memory_search": {"query": "seat", "limit": 10},
        "memory_list": {"kinds": ["profile"]},
        "memory_get": {"id": "mem_01ABC"},
        "memory_invalidate": {"id": "mem_01ABC", "reason": "wrong"},
    }
    for name, arguments in good.items():
        jsonschema.validate(arguments, input_schema(name))
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({**arguments, "scope": {"tenant": "globex"}}, input_schema(name))
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"query": "x", "limit": MAX_LIMIT + 1}, input_schema("memory_search"))


def test_the_manual_carries_the_standing_instruction() -> None:
    manual = memory_manual()
    for phrase in ("You have persistent memory", "Do not save", "one fact per memory", "supersedes", "<memory>"):
        assert phrase in manual
    assert "delete" in manual  # it says the agent cannot


def test_toolbox_offers_only_the_tools_its_policy_allows(store: BaseMemoryStore) -> None:
    reads_off = MemoryToolbox(store, DANA, policy=MemoryPolicy(agent_reads=False))
    assert reads_off.allowed_tools() == ["memory_save", "memory_invalidate"]
    assert [tool["name"] for tool in reads_off.anthropic_tools()] == ["memory_save", "memory_invalidate"]
    assert MemoryToolbox(store, DANA, policy=MemoryPolicy(incognito=True)).openai_tools() == []


# --- saving ---------------------------------------------------------------------------


def test_save_writes_to_exactly_the_bound_scope_with_provenance(store: BaseMemoryStore, toolbox: MemoryToolbox) -> None:
    result = toolbox.call("memory_save", {"content": "Dana prefers window seats.", "kind": "preference"})
    assert result["ok"] is True
    record = store.get(result["saved"]["id"])
    assert record is not None
    assert record.scope == DANA
    assert record.provenance.model_dump() == {
        "source": TOOL_SOURCE,
        "author": "planner",
        "conversation_id": "conv-1",
        "run_id": None,
    }


@pytest.mark.parametrize(
    "extra",
    [{"scope": {"tenant": "globex"}}, {"tenant": "globex"}, {"user": "bob"}, {"agent": "coder"}, {"provenance": {}}],
    ids=["scope", "tenant", "user", "agent", "provenance"],
)
def test_an_argument_the_tool_does_not_define_is_an_error(store: BaseMemoryStore, extra: dict[str, Any]) -> None:
    counting = CountingStore(store)
    toolbox = MemoryToolbox(counting, DANA)  # type: ignore[arg-type]
    for name, arguments in (
        ("memory_save", {"content": "x"}),
        ("memory_search", {"query": "x"}),
        ("memory_list", {}),
        ("memory_get", {"id": "mem_1"}),
    ):
        result = toolbox.call(name, {**arguments, **extra})
        assert result["ok"] is False and result["error"]["code"] == "invalid_arguments"
        assert [p["loc"] for p in result["error"]["problems"]] == list(extra)
    assert counting.calls == []
    assert everything(store) == []


def test_a_huge_payload_is_refused_before_the_store(store: BaseMemoryStore) -> None:
    counting = CountingStore(store)
    toolbox = MemoryToolbox(counting, DANA)  # type: ignore[arg-type]
    save = {"content": "A lesson learned.", "target": {"primitive": "recovery"}}
    huge = {"notes": "x" * 10_000_000}
    as_object = toolbox.call("memory_save", {**save, "payload": huge})
    as_strict_text = toolbox.call("memory_save", {**save, "payload": json.dumps(huge)})
    as_arguments_text = toolbox.call("memory_save", json.dumps({**save, "payload": huge}))
    for refused in (as_object, as_strict_text):
        assert refused["ok"] is False and refused["error"]["code"] == "invalid_arguments"
        assert [p["loc"] for p in refused["error"]["problems"]] == ["payload"]
    assert as_arguments_text["ok"] is False and as_arguments_text["error"]["code"] == "too_large"
    assert counting.calls == []
    assert everything(store) == []
    fits = toolbox.call("memory_save", {**save, "payload": {"notes": "a short note"}})
    assert fits["ok"] is True


def test_same_key_replaces_and_says_what_it_superseded(store: BaseMemoryStore, toolbox: MemoryToolbox) -> None:
    first = toolbox.call("memory_save", {"content": "Window seat.", "kind": "preference", "key": "seat"})
    second = toolbox.call("memory_save", {"content": "Aisle seat.", "kind": "preference", "key": "seat"})
    assert second["superseded"] == first["saved"]["id"]
    old = store.get(first["saved"]["id"])
    assert old is not None and old.superseded_by == second["saved"]["id"]


def test_supersedes_corrects_a_record(store: BaseMemoryStore, toolbox: MemoryToolbox) -> None:
    old = toolbox.call("memory_save", {"content": "Dana lives in Porto."})["saved"]["id"]
    new = toolbox.call("memory_save", {"content": "Dana lives in Lisbon.", "supersedes": old})
    assert new["ok"] is True and new["superseded"] == old
    assert toolbox.call("memory_search", {"query": "lives"})["count"] == 1


def test_supersedes_cannot_reach_outside_the_scope(store: BaseMemoryStore, toolbox: MemoryToolbox) -> None:
    bobs = store.write([rec("Bob lives in Oslo.", BOB)])[0]
    shared = store.write([rec("Acme HQ is in Berlin.", ACME)])[0]
    result = toolbox.call("memory_save", {"content": "x", "supersedes": bobs.id})
    assert result == {"ok": False, "error": {"code": "not_found", "message": NOT_FOUND_MESSAGE}}
    result = toolbox.call("memory_save", {"content": "Acme HQ is in Munich.", "supersedes": shared.id})
    assert result["error"]["code"] == "not_writable"
    assert [r.id for r in everything(store)] == [shared.id, bobs.id]
    assert all(r.is_valid for r in everything(store))


def test_a_second_save_with_the_same_target_is_a_conflict(store: BaseMemoryStore, toolbox: MemoryToolbox) -> None:
    first = toolbox.call("memory_save", {"content": "Deploys freeze on the last business day.", "target": FREEZE})
    assert first["ok"] is True
    again = {"content": "Deploys freeze on the last Friday.", "target": FREEZE}
    conflict = toolbox.call("memory_save", again)
    assert conflict["ok"] is False
    error = conflict["error"]
    assert error["code"] == "conflict"
    assert error["existing"]["id"] == first["saved"]["id"]
    assert error["existing"]["content"] == "Deploys freeze on the last business day."
    assert [option["action"] for option in error["resolutions"]] == ["supersede", "corroborate", "rekey"]
    assert len(everything(store)) == 1, "no duplicate was written"

    superseding = toolbox.call("memory_save", {**again, "supersedes": first["saved"]["id"]})
    assert superseding["ok"] is True and superseding["superseded"] == first["saved"]["id"]
    rekeyed = toolbox.call("memory_save", {**again, "target": {**FREEZE, "key": "release_freeze"}})
    assert rekeyed["ok"] is True


def test_same_target_in_another_scope_is_no_conflict(store: BaseMemoryStore, toolbox: MemoryToolbox) -> None:
    store.write([rec("Bob's freeze rule.", BOB, target=FREEZE), rec("Acme freeze rule.", ACME, target=FREEZE)])
    assert toolbox.call("memory_save", {"content": "Dana's freeze rule.", "target": FREEZE})["ok"] is True


def test_a_retired_holder_is_no_conflict(store: BaseMemoryStore, toolbox: MemoryToolbox) -> None:
    first = toolbox.call("memory_save", {"content": "Old freeze rule.", "target": FREEZE})["saved"]["id"]
    toolbox.call("memory_invalidate", {"id": first, "reason": "policy changed"})
    assert toolbox.call("memory_save", {"content": "New freeze rule.", "target": FREEZE})["ok"] is True


def test_conflict_without_read_rights_names_only_the_id(store: BaseMemoryStore) -> None:
    blind = MemoryToolbox(store, DANA, policy=MemoryPolicy(agent_reads=False))
    first = blind.call("memory_save", {"content": "Freeze rule.", "target": FREEZE})["saved"]["id"]
    conflict = blind.call("memory_save", {"content": "Other freeze rule.", "target": FREEZE})
    assert conflict["error"]["existing"] == {"id": first}


def test_the_conflict_lookup_is_not_an_agent_search(store: BaseMemoryStore, toolbox: MemoryToolbox) -> None:
    seen: list[Any] = []
    store.add_sink(seen.append)
    toolbox.call("memory_save", {"content": "Freeze rule.", "target": FREEZE})
    assert [event.type for event in seen] == ["agent.memory.write"]
    assert seen[0].agent is None and seen[0].scope == DANA


# --- reading ----------------------------------------------------------------------------


def test_reads_see_mine_and_shared_never_a_siblings_or_another_agents(
    store: BaseMemoryStore, toolbox: MemoryToolbox
) -> None:
    store.write(
        [
            rec("seat: Dana's own", DANA),
            rec("seat: shared with the tenant", ACME),
            rec("seat: planner's private note", {**DANA, "agent": "planner"}),
            rec("seat: Bob's", BOB),
            rec("seat: the coder agent's", {**DANA, "agent": "coder"}),
        ]
    )
    for name, arguments in (("memory_search", {"query": "seat", "limit": 10}), ("memory_list", {"limit": 10})):
        result = toolbox.call(name, arguments)
        assert sorted(item["content"] for item in result["results"]) == [
            "seat: Dana's own",
            "seat: planner's private note",
            "seat: shared with the tenant",
        ]
        shared = {item["content"]: item["shared"] for item in result["results"]}
        assert shared["seat: Dana's own"] is False and shared["seat: shared with the tenant"] is True


def test_search_by_key_prefix(store: BaseMemoryStore, toolbox: MemoryToolbox) -> None:
    store.write([rec("Window.", key="travel.seat"), rec("Espresso.", key="food.drink")])
    result = toolbox.call("memory_search", {"keys": ["travel."], "key_match": "prefix"})
    assert [item["content"] for item in result["results"]] == ["Window."]


def test_search_needs_a_query_or_keys(toolbox: MemoryToolbox) -> None:
    assert toolbox.call("memory_search", {})["error"]["code"] == "invalid_arguments"
    assert toolbox.call("memory_search", {"query": "   "})["error"]["code"] == "invalid_arguments"


def test_results_default_to_five_and_never_exceed_ten(store: BaseMemoryStore, toolbox: MemoryToolbox) -> None:
    store.write([rec(f"note {i}") for i in range(15)])
    assert toolbox.call("memory_list")["count"] == 5
    assert toolbox.call("memory_search", {"query": "note"})["count"] == 5
    assert toolbox.call("memory_list", {"limit": 10})["count"] == 10
    for limit in (0, 11, 100):
        assert toolbox.call("memory_list", {"limit": limit})["error"]["code"] == "invalid_arguments"


def test_the_character_cap_is_hard_and_truncation_is_explicit(store: BaseMemoryStore) -> None:
    store.write([rec(f"long note {i} " + "x" * 900) for i in range(10)])
    cap = 2500
    toolbox = MemoryToolbox(store, DANA, policy=MemoryPolicy(max_result_chars=cap))
    result = toolbox.call("memory_search", {"query": "note", "limit": 10})
    assert len(dumps(result)) <= cap
    assert result["truncated"] is True and result["count"] == 2 and result["omitted"] == 8
    relaxed = MemoryToolbox(store, DANA, policy=MemoryPolicy(max_result_chars=20_000))
    full = relaxed.call("memory_search", {"query": "note", "limit": 10})
    assert (full["count"], full["truncated"], full["omitted"]) == (10, False, 0)


def test_one_record_longer_than_the_cap_is_clipped(store: BaseMemoryStore) -> None:
    [record] = store.write([rec("huge " + "y" * 5000)])
    toolbox = MemoryToolbox(store, DANA, policy=MemoryPolicy(max_result_chars=1000))
    for result in (toolbox.call("memory_search", {"query": "huge"}), toolbox.call("memory_get", {"id": record.id})):
        assert len(dumps(result)) <= 1000 and result["truncated"] is True
    item = toolbox.call("memory_search", {"query": "huge"})["results"][0]
    assert item["clipped"] is True and item["content"].startswith("huge yyy") and item["content"].endswith("…")


@pytest.mark.parametrize("cap", [1000, 1500, 4000])
def test_bounded_results_never_exceed_the_cap(cap: int) -> None:
    items = [{"id": f"mem_{i}", "content": 'é"\\\n' * (i * 97 % 700), "tags": ["t"] * 30} for i in range(12)]
    result = bounded_results(items, cap)
    assert len(dumps(result)) <= cap
    assert result["count"] + result["omitted"] == len(items)
    assert result["truncated"] is (result["omitted"] > 0 or any(i.get("clipped") for i in result["results"]))


def test_get_returns_a_visible_record_with_provenance(store: BaseMemoryStore, toolbox: MemoryToolbox) -> None:
    saved = toolbox.call("memory_save", {"content": "Espresso, no milk.", "kind": "preference", "key": "drink"})
    result = toolbox.call("memory_get", {"id": saved["saved"]["id"]})
    assert result["ok"] is True
    memory = result["memory"]
    assert (memory["content"], memory["key"], memory["kind"]) == ("Espresso, no milk.", "drink", "preference")
    assert memory["provenance"] == {"source": TOOL_SOURCE, "author": "planner", "conversation_id": "conv-1"}


def test_get_answers_every_unseeable_id_identically(
    store: BaseMemoryStore, toolbox: MemoryToolbox, clock: FakeClock
) -> None:
    bobs = store.write([rec("Bob's secret.", BOB)])[0]
    other_tenant = store.write([rec("Globex note.", {"tenant": "globex", "user": "dana"})])[0]
    other_agent = store.write([rec("Coder's note.", {**DANA, "agent": "coder"})])[0]
    retired = store.write([rec("Retired note.")])[0]
    store.invalidate(retired.id, "wrong")
    superseded = store.write([rec("v1", key="k")])[0]
    store.write([rec("v2", key="k")])
    deleted = store.write([rec("Deleted note.")])[0]
    store.delete(deleted.id)
    expiring = store.write([rec("Expiring note.", expires_at=clock.peek() + timedelta(hours=1))])[0]
    clock.advance(hours=2)
    unseeable = [bobs.id, other_tenant.id, other_agent.id, retired.id, superseded.id, deleted.id, expiring.id]
    answers = {run_tool(toolbox, "memory_get", {"id": record_id}) for record_id in [*unseeable, "mem_NEVER"]}
    assert answers == {dumps({"ok": False, "error": {"code": "not_found", "message": NOT_FOUND_MESSAGE}})}


# --- invalidating -------------------------------------------------------------------------


def test_invalidate_retires_own_records_only(store: BaseMemoryStore, toolbox: MemoryToolbox) -> None:
    mine = toolbox.call("memory_save", {"content": "Dana lives in Porto."})["saved"]["id"]
    bobs = store.write([rec("Bob lives in Oslo.", BOB)])[0]
    shared = store.write([rec("Acme is in Berlin.", ACME)])[0]
    assert toolbox.call("memory_invalidate", {"id": mine, "reason": "moved"}) == {"ok": True, "invalidated": mine}
    record = store.get(mine)
    assert record is not None and record.invalid_reason == "moved"
    assert toolbox.call("memory_get", {"id": mine})["error"]["code"] == "not_found"
    assert toolbox.call("memory_search", {"query": "Porto"})["count"] == 0
    assert toolbox.call("memory_invalidate", {"id": bobs.id, "reason": "x"})["error"]["code"] == "not_found"
    assert toolbox.call("memory_invalidate", {"id": shared.id, "reason": "x"})["error"]["code"] == "not_writable"
    assert all(store.get(i).is_valid for i in (bobs.id, shared.id))  # type: ignore[union-attr]


def test_invalidate_needs_a_reason(toolbox: MemoryToolbox) -> None:
    assert toolbox.call("memory_invalidate", {"id": "mem_1"})["error"]["code"] == "invalid_arguments"


# --- policy gates -------------------------------------------------------------------------

EVERY_CALL = [
    ("memory_save", {"content": "x"}),
    ("memory_search", {"query": "x"}),
    ("memory_list", {}),
    ("memory_get", {"id": "mem_1"}),
    ("memory_invalidate", {"id": "mem_1", "reason": "x"}),
]


@pytest.mark.parametrize(
    ("policy", "reason"),
    [(MemoryPolicy(enabled=False), "memory_disabled"), (MemoryPolicy(incognito=True), "incognito")],
    ids=["disabled", "incognito"],
)
def test_closed_policies_deny_every_tool_without_touching_storage(
    store: BaseMemoryStore, policy: MemoryPolicy, reason: str
) -> None:
    counting = CountingStore(store)
    toolbox = MemoryToolbox(counting, DANA, policy=policy)  # type: ignore[arg-type]
    for name, arguments in EVERY_CALL:
        for result in (toolbox.call(name, arguments), asyncio.run(toolbox.acall(name, arguments))):
            assert result["ok"] is False
            assert (result["error"]["code"], result["error"]["reason"]) == ("policy_denied", reason)
    assert counting.calls == []


def test_reads_off_denies_reads_without_touching_storage_and_still_saves(store: BaseMemoryStore) -> None:
    counting = CountingStore(store)
    toolbox = MemoryToolbox(counting, DANA, policy=MemoryPolicy(agent_reads=False))  # type: ignore[arg-type]
    for name, arguments in EVERY_CALL[1:4]:
        assert toolbox.call(name, arguments)["error"]["reason"] == "agent_reads_disabled"
    assert counting.calls == []
    assert toolbox.call("memory_save", {"content": "still remembered"})["ok"] is True
    assert counting.calls == ["write"]


# --- errors never escape --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (MemoryCorruptionError("mem_1", {"content": "raw secret"}, "bad json"), "storage_error"),
        (MemoryBusyError("locked"), "busy"),
        (RuntimeError("driver exploded"), "internal_error"),
    ],
    ids=["corruption", "busy", "unexpected"],
)
def test_store_errors_come_back_as_tool_errors(store: BaseMemoryStore, error: Exception, code: str) -> None:
    toolbox = MemoryToolbox(FailingStore(store, error), DANA)  # type: ignore[arg-type]
    for name, arguments in EVERY_CALL:
        for result in (toolbox.call(name, arguments), asyncio.run(toolbox.acall(name, arguments))):
            assert result["ok"] is False and result["error"]["code"] == code
            assert "raw secret" not in dumps(result)
            json.dumps(result)


@pytest.mark.parametrize(
    ("arguments", "where"),
    [
        ("{not json", None),
        ('["a", "list"]', None),
        ({"content": ""}, "content"),
        ({"content": "x", "kind": "opinion"}, "kind"),
        ({"content": "x", "key": "has spaces"}, None),
        ({"content": "x", "tags": "one-string"}, "tags"),
        ({"content": "x", "target": {"primitive": "persona"}}, None),
        ({"content": "x", "payload": {"a": 1}}, None),
    ],
    ids=["bad-json", "not-an-object", "blank", "kind", "key", "tags", "target", "payload-without-target"],
)
def test_bad_arguments_are_structured_errors(toolbox: MemoryToolbox, arguments: Any, where: str | None) -> None:
    result = toolbox.call("memory_save", arguments)
    assert result["ok"] is False and result["error"]["code"] == "invalid_arguments"
    assert result["error"]["message"]
    if where is not None:
        assert where in [problem["loc"].split(".")[0] for problem in result["error"]["problems"]]


def test_an_unknown_tool_is_a_structured_error(toolbox: MemoryToolbox) -> None:
    result = toolbox.call("memory_delete", {"id": "mem_1"})
    assert result["error"]["code"] == "unknown_tool" and result["error"]["tools"] == list(TOOL_NAMES)


def test_arguments_may_arrive_as_a_json_string(toolbox: MemoryToolbox) -> None:
    saved = toolbox.call("memory_save", '{"content": "Dana takes espresso."}')
    assert saved["ok"] is True
    assert toolbox.call("memory_search", '{"query": "espresso"}')["count"] == 1


# --- async and events -------------------------------------------------------------------


def test_async_dispatch_matches_sync(store: BaseMemoryStore, toolbox: MemoryToolbox) -> None:
    saved = asyncio.run(toolbox.acall("memory_save", {"content": "Window seat.", "target": FREEZE}))
    assert saved["ok"] is True
    conflict = asyncio.run(toolbox.acall("memory_save", {"content": "Aisle.", "target": FREEZE}))
    assert conflict["error"]["code"] == "conflict"
    for name, arguments in (
        ("memory_search", {"query": "seat"}),
        ("memory_list", {}),
        ("memory_get", {"id": saved["saved"]["id"]}),
        ("memory_get", {"id": "mem_nope"}),
    ):
        assert asyncio.run(toolbox.acall(name, arguments)) == toolbox.call(name, arguments)
    invalidated = asyncio.run(toolbox.acall("memory_invalidate", {"id": saved["saved"]["id"], "reason": "x"}))
    assert invalidated["ok"] is True


def test_tool_reads_and_writes_emit_events_with_the_agent(store: BaseMemoryStore, toolbox: MemoryToolbox) -> None:
    seen: list[Any] = []
    store.add_sink(seen.append)
    toolbox.call("memory_save", {"content": "Window seat."})
    toolbox.call("memory_search", {"query": "window"})
    assert [event.type for event in seen] == ["agent.memory.write", "agent.memory.search"]
    assert seen[1].agent == "planner" and seen[1].count == 1
