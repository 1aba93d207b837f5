"""MemoryAdminStore as LangGraph and LangMem use it: a compiled graph with a store, LangMem's
memory tools, the scope mapping, versions, erasure, and hostile input."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import pytest

pytest.importorskip("langgraph.graph", reason="needs the langgraph extra")

from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import InjectedStore, ToolNode
from langgraph.store.base import BaseStore, InvalidNamespaceError, PutOp, SearchOp

from memory_admin.errors import (
    MemoryLimitError,
    MemoryScopeError,
    MemoryStoreError,
    MemoryValidationError,
)
from memory_admin.integrations.langgraph import MemoryAdminStore, decode_item
from memory_admin.store import BaseMemoryStore, RecordListQuery, open_store


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def backing(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BaseMemoryStore]:
    """An empty memory_admin store of each backend."""
    if request.param == "postgres":
        url = request.getfixturevalue("postgres_url")
    elif request.param == "sqlite":
        url = f"sqlite:///{tmp_path}/memory.sqlite3"
    else:
        url = "memory://"
    store = open_store(url, embedder="none")
    yield store
    store.close()


@pytest.fixture
def lg(backing: BaseMemoryStore) -> MemoryAdminStore:
    return MemoryAdminStore(backing, tenant="acme")


def every_record(store: BaseMemoryStore, scope: dict[str, str] | None = None) -> list[Any]:
    query = {"search": {"scope": scope or {"tenant": "acme"}, "include_invalidated": True, "limit": 1000}}
    return list(store.iter_records(RecordListQuery.model_validate(query)))


# --- what a LangGraph developer wires ---------------------------------------------------


def test_a_compiled_graph_with_the_store_and_a_tool_that_uses_it(backing: BaseMemoryStore) -> None:
    @tool
    def remember(fact: str, store: Annotated[BaseStore, InjectedStore()]) -> str:
        """Remember a fact about the user."""
        store.put(("memories", "dana"), "drink", {"content": fact})
        found = store.search(("memories", "dana"), query="drink")
        return f"saved; {len(found)} memory about drinks"

    builder = StateGraph(MessagesState)
    builder.add_node("tools", ToolNode([remember]))
    builder.add_edge(START, "tools")
    # the tenant comes from the run's config, never from the namespace
    graph = builder.compile(store=MemoryAdminStore(backing))
    call = {"name": "remember", "args": {"fact": "Dana drinks espresso"}, "id": "call-1", "type": "tool_call"}
    result = graph.invoke(
        {"messages": [AIMessage(content="", tool_calls=[call])]},
        {"configurable": {"tenant_id": "acme", "thread_id": "thread-9"}},
    )
    assert result["messages"][-1].content == "saved; 1 memory about drinks"
    [record] = every_record(backing)
    assert record.scope == {"tenant": "acme", "user": "dana"}
    assert record.provenance.source == "langgraph" and record.provenance.conversation_id == "thread-9"
    assert decode_item(record.content) is not None
    assert decode_item(record.content).value == {"content": "Dana drinks espresso"}  # type: ignore[union-attr]


def test_without_a_tenant_nothing_runs(backing: BaseMemoryStore) -> None:
    with pytest.raises(MemoryScopeError, match="tenant"):
        MemoryAdminStore(backing).put(("memories", "dana"), "k", {"v": 1})
    assert every_record(backing) == []


def test_the_namespace_never_names_the_tenant(backing: BaseMemoryStore) -> None:
    with pytest.raises(MemoryValidationError, match="tenant"):
        MemoryAdminStore(backing, tenant="acme", namespaces=[("{tenant}", "{user}")])
    store = MemoryAdminStore(backing, tenant="acme", namespaces=[("users", "{user}", "{agent}")])
    store.put(("users", "globex", "planner"), "k", {"v": 1})
    [record] = every_record(backing)
    assert record.scope == {"tenant": "acme", "user": "globex", "agent": "planner"}
    other = MemoryAdminStore(backing, tenant="globex", namespaces=[("users", "{user}", "{agent}")])
    assert other.get(("users", "globex", "planner"), "k") is None
    assert other.search(()) == [] and other.list_namespaces() == []


def test_put_supersedes_delete_invalidates_and_get_reads_the_head(lg: MemoryAdminStore) -> None:
    lg.put(("memories", "dana"), "seat", {"content": "aisle"})
    first = lg.get(("memories", "dana"), "seat")
    lg.put(("memories", "dana"), "seat", {"content": "window"})
    second = lg.get(("memories", "dana"), "seat")
    assert first is not None and second is not None
    assert second.value == {"content": "window"}
    assert second.created_at == first.created_at and second.updated_at > first.updated_at
    lg.delete(("memories", "dana"), "seat")
    assert lg.get(("memories", "dana"), "seat") is None
    records = sorted(every_record(lg.store), key=lambda r: r.created_at)  # type: ignore[arg-type]
    assert [decode_item(r.content).value["content"] for r in records] == ["aisle", "window"]  # type: ignore[union-attr]
    assert records[0].superseded_by == records[1].id and records[1].supersedes == records[0].id
    assert all(r.invalid_at is not None for r in records)
    assert records[1].invalid_reason == "deleted through LangGraph"


def test_erasing_a_user_reaches_every_version(lg: MemoryAdminStore) -> None:
    for value in ("a", "b", "c"):
        lg.put(("memories", "dana"), "k", {"v": value})
    lg.put(("memories", "mei"), "k", {"v": "kept"})
    report = lg.store.erase({"tenant": "acme", "user": "dana"})  # type: ignore[attr-defined]
    assert report.records == 3
    assert lg.search(("memories",)) == [lg.search(("memories", "mei"))[0]]
    assert len(every_record(lg.store)) == 1  # type: ignore[arg-type]


def test_filters_hold_on_every_backend_and_pages_are_never_short(lg: MemoryAdminStore) -> None:
    lg.batch([PutOp(("docs",), f"d{i}", {"n": i, "even": i % 2 == 0, "meta": {"tier": i % 3}}) for i in range(60)])
    evens = lg.search(("docs",), filter={"even": True}, limit=25)
    assert len(evens) == 25 and all(item.value["even"] for item in evens)
    page = lg.search(("docs",), filter={"n": {"$gte": 10, "$lt": 50}, "meta.tier": 0}, limit=5, offset=3)
    assert len(page) == 5 and all(10 <= item.value["n"] < 50 and item.value["n"] % 3 == 0 for item in page)
    assert len(lg.search(("docs",), filter={"n": {"$ne": 7}}, limit=100)) == 59
    assert {i.value["n"] for i in lg.search(("docs",), filter={"meta": {"tier": 2}, "n": {"$gt": 55}})} == {56, 59}


@pytest.mark.asyncio
async def test_the_async_api_is_the_same_store(lg: MemoryAdminStore) -> None:
    await lg.aput(("memories", "dana"), "k", {"v": 1})
    await lg.aput(("memories", "dana"), "k", {"v": 2})
    item = await lg.aget(("memories", "dana"), "k")
    assert item is not None and item.value == {"v": 2}
    assert [i.key for i in await lg.asearch(("memories",), filter={"v": 2})] == ["k"]
    assert await lg.alist_namespaces(prefix=("memories",)) == [("memories", "dana")]
    await lg.adelete(("memories", "dana"), "k")
    assert lg.get(("memories", "dana"), "k") is None


# --- LangMem's memory tools, called directly ------------------------------------------


def test_langmem_tools_create_update_and_delete_a_chain(lg: MemoryAdminStore) -> None:
    langmem = pytest.importorskip("langmem")
    manage = langmem.create_manage_memory_tool(namespace=("memories", "dana"), store=lg)
    search = langmem.create_search_memory_tool(namespace=("memories", "dana"), store=lg)
    created = manage.invoke({"content": "Dana prefers aisle seats", "action": "create"})
    memory_id = created.rsplit(" ", 1)[-1]
    manage.invoke({"content": "Dana prefers window seats now", "action": "update", "id": memory_id})
    found = search.invoke({"query": "window seats"})
    assert "Dana prefers window seats now" in str(found) and memory_id in str(found)
    manage.invoke({"action": "delete", "id": memory_id})
    assert lg.get(("memories", "dana"), memory_id) is None
    [head] = [r for r in every_record(lg.store) if r.superseded_by is None]  # type: ignore[arg-type]
    chain = lg.store.chain(head.id)  # type: ignore[attr-defined]
    values = [decode_item(link.record.content).value["content"] for link in chain]  # type: ignore[union-attr]
    assert values == ["Dana prefers aisle seats", "Dana prefers window seats now"]
    assert head.scope == {"tenant": "acme", "user": "dana"} and head.invalid_reason == "deleted through LangGraph"


# --- hostile input: the framework's error or ours, and nothing written -----------------

LABELS = [("a.b",), ("ok", ""), (123,), ("x\x00",), ("bad\ud800",), tuple(f"l{i}" for i in range(14))]


@pytest.mark.parametrize("namespace", LABELS, ids=["period", "empty", "number", "nul", "surrogate", "too-deep"])
def test_bad_namespaces_are_invalid_namespace_errors(lg: MemoryAdminStore, namespace: tuple[Any, ...]) -> None:
    for call in (
        lambda: lg.put(namespace, "k", {"v": 1}),
        lambda: lg.batch([PutOp(namespace, "k", {"v": 1})]),
        lambda: lg.get(namespace, "k"),
        lambda: lg.search(namespace),
    ):
        with pytest.raises(InvalidNamespaceError):
            call()
    assert every_record(lg.store) == []  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "label", [" dana", "d" * 201, "zero\u200bwidth", "tab\tbed"], ids=["edge-space", "long", "format-char", "control"]
)
def test_labels_the_template_makes_scope_values_must_be_scope_values(lg: MemoryAdminStore, label: str) -> None:
    with pytest.raises(InvalidNamespaceError, match="scope"):
        lg.put(("memories", label), "k", {"v": 1})
    assert every_record(lg.store) == []  # type: ignore[arg-type]


def test_reserved_root_label(lg: MemoryAdminStore) -> None:
    with pytest.raises(InvalidNamespaceError, match="langgraph"):
        lg.put(("langgraph", "x"), "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        lg.put((), "k", {"v": 1})


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ({"text": "x" * 20_000}, MemoryLimitError),
        ({"when": datetime(2026, 1, 1, tzinfo=UTC)}, MemoryValidationError),
        ({"n": math.nan}, MemoryValidationError),
        ({"text": "half \ud800 a character"}, MemoryValidationError),
        (["not", "a", "dict"], MemoryValidationError),
    ],
    ids=["huge", "not-json", "nan", "lone-surrogate", "not-an-object"],
)
def test_bad_values_write_nothing_of_the_batch(lg: MemoryAdminStore, value: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        lg.batch([PutOp(("docs",), "good", {"v": 1}), PutOp(("docs",), "bad", value)])
    assert every_record(lg.store) == []  # type: ignore[arg-type]
    with pytest.raises(MemoryValidationError):
        lg.put(("docs",), "bad\udfff", {"v": 1})


def test_filter_and_query_injection(lg: MemoryAdminStore) -> None:
    lg.put(("docs",), "public", {"access": "public"})
    lg.put(("docs",), "private", {"access": "private", "password": "123"})
    assert lg.search(("docs",), filter={"access') = 'public' OR '1'='1' --": "x"}) == []
    assert lg.search(("docs",), filter={"access": {"$gt": "'; DROP TABLE memory_records; --"}}) == []
    with pytest.raises(MemoryValidationError, match="operator"):
        lg.search(("docs",), filter={"access": {"$where": "1 == 1"}})
    with pytest.raises(MemoryValidationError):
        lg.search(("docs",), filter="access = 'public'")  # type: ignore[arg-type]
    for query in ['public" OR *', "NEAR(public private)", "access:*", "'; --", "\ud800"]:
        with contextlib.suppress(MemoryStoreError):  # refused as ours, never a driver's error
            lg.search(("docs",), query=query)
    assert {i.key for i in lg.search(("docs",))} == {"public", "private"}


def test_non_ascii_round_trips(lg: MemoryAdminStore) -> None:
    namespace = ("mémoires", "ünïcödé", "日本語")
    value = {"text": "Ça va? 🎉 — naïve café", "zh": "你好", "controls": "del\x7f c1\x85 nl\n"}
    lg.put(namespace, "clé 🔑", value)
    item = lg.get(namespace, "clé 🔑")
    assert item is not None and item.value == value and item.key == "clé 🔑" and item.namespace == namespace
    assert lg.list_namespaces(prefix=("mémoires",)) == [namespace]
    assert [i.key for i in lg.search(("mémoires",), query="café")] == ["clé 🔑"]


def test_a_bad_op_in_a_batch_fails_the_batch_before_any_write(lg: MemoryAdminStore) -> None:
    with pytest.raises(MemoryValidationError):
        lg.batch([PutOp(("docs",), "a", {"v": 1}), SearchOp(("docs",), filter={"v": {"$nope": 1}})])
    with pytest.raises(MemoryValidationError):
        lg.batch([PutOp(("docs",), "a", {"v": 1}), SearchOp(("docs",), limit=-1)])
    assert every_record(lg.store) == []  # type: ignore[arg-type]


def test_a_curators_plain_correction_reads_as_a_content_value(lg: MemoryAdminStore) -> None:
    lg.put(("memories", "dana"), "seat", {"content": "Dana prefers aisle seats"})
    [old] = every_record(lg.store)  # type: ignore[arg-type]
    # what the dashboard's "correct" writes: a new version in the same scope and slot, a plain sentence
    lg.store.write(
        [
            {
                "scope": old.scope,
                "kind": old.kind,
                "key": old.key,
                "tags": old.tags,
                "content": "Dana prefers window seats (corrected by support).",
                "provenance": {"source": "dashboard-correction", "author": "lena"},
                "supersedes": old.id,
            }
        ]
    )
    item = lg.get(("memories", "dana"), "seat")
    assert item is not None and item.value == {"content": "Dana prefers window seats (corrected by support)."}
    assert item.created_at == old.created_at
    assert [i.key for i in lg.search(("memories", "dana"))] == ["seat"]
    assert lg.list_namespaces() == [("memories", "dana")]
    lg.put(("memories", "dana"), "seat", {"content": "Dana prefers the front row"})
    assert lg.get(("memories", "dana"), "seat").value == {"content": "Dana prefers the front row"}  # type: ignore[union-attr]
    assert len(every_record(lg.store)) == 3  # type: ignore[arg-type]
