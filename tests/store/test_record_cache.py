"""The read caches of the SQL backends: a row read again is the record built before,
a changed row is built again, a corrupt one is never kept; a scored row read again is
not tokenized again."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memory_admin.errors import MemoryCorruptionError
from memory_admin.store import SqliteMemoryStore, ranking
from memory_admin.store.sql.dialect import SQLITE
from memory_admin.store.sql.rows import SQLITE_NAMES, RecordCache, RecordCodec
from memory_admin.store.sqlite.search import DAY_US, Search, _day

U1 = {"tenant": "acme", "user": "u1"}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteMemoryStore]:
    with SqliteMemoryStore(tmp_path / "m.sqlite3", persist_events=False) as opened:
        yield opened


CODEC = RecordCodec(SQLITE_NAMES, SQLITE)


def row(n: int, **changes: Any) -> tuple[Any, ...]:
    """A stored row as the SQLite backend reads it."""
    return CODEC.values_of(
        {
            "rid": n,
            "scope": '{"tenant":"acme","user":"u1"}',
            "id": f"mem_{n}",
            "kind": "fact",
            "key": None,
            "content": f"Fact number {n}.",
            "tags": None,
            "created_at": 1_767_600_000_000_000 + n,
            "updated_at": None,
            "invalid_at": None,
            "invalid_reason": None,
            "superseded_by": None,
            "supersedes": None,
            "expires_at": None,
            "target": None,
            "payload": None,
            "supports": None,
            "observed_at": None,
            "provenance": '{"source":"test"}',
            **changes,
        }
    )


def test_a_row_is_kept_from_its_second_read() -> None:
    cache = RecordCache(CODEC)
    first = cache.record(row(1))
    assert len(cache) == 0  # read once: only its hash is remembered
    second = cache.record(row(1))
    assert second is not first and second == first and len(cache) == 1
    assert cache.record(row(1)) is second
    assert second.content == "Fact number 1." and second.scope == U1


def test_the_rows_seen_once_are_forgotten_in_bounded_memory() -> None:
    cache = RecordCache(CODEC, size=2)
    for n in range(1, 20):
        cache.record(row(n))
    assert len(cache) == 0 and len(cache._cache._seen) <= 8
    cache.record(row(19))  # seen since the last emptying: kept now
    assert len(cache) == 1


def test_a_changed_row_is_built_again() -> None:
    cache = RecordCache(CODEC)
    live = cache.record(row(1))
    invalidated = cache.record(row(1, invalid_at=1_767_700_000_000_000, invalid_reason="wrong"))
    assert live.invalid_at is None
    assert invalidated.invalid_at is not None and invalidated.invalid_reason == "wrong"


def test_the_least_recently_read_leave_first() -> None:
    cache = RecordCache(CODEC, size=3)
    kept = [(cache.record(row(n)), cache.record(row(n)))[1] for n in (1, 2, 3)]
    cache.record(row(1))  # read again: now the most recent
    cache.record(row(4))
    cache.record(row(4))  # kept: row 2 leaves
    assert len(cache) == 3
    assert cache.record(row(1)) is kept[0] and cache.record(row(3)) is kept[2]
    assert cache.record(row(2)) is not kept[1]


def test_a_corrupt_row_raises_every_time_and_is_not_kept() -> None:
    cache = RecordCache(CODEC)
    for _ in range(2):
        with pytest.raises(MemoryCorruptionError):
            cache.record(row(1, kind="rumour"))
    assert len(cache) == 0


def test_a_row_with_an_unhashable_value_is_built_every_time() -> None:
    cache = RecordCache(CODEC)
    listed = row(1, supports=bytearray(b'[{"source": "t"}]'))  # a column a driver gave as a mutable type
    first, second = cache.record(listed), cache.record(listed)
    assert first == second and first is not second
    assert len(cache) == 0


def test_reads_through_the_store_reflect_an_invalidation(store: SqliteMemoryStore) -> None:
    record = store.write([{"scope": U1, "kind": "fact", "content": "Dana drinks tea.", "provenance": {"source": "t"}}])[
        0
    ]
    store.get(record.id)
    assert store.get(record.id) is store.get(record.id)  # kept from the second read
    store.invalidate(record.id, reason="she switched to coffee")
    again = store.get(record.id)
    assert again is not None and again.invalid_reason == "she switched to coffee"


def test_a_scored_row_read_again_keeps_its_terms() -> None:
    search = Search()
    stated = 1_767_600_000_000_000
    first = search.record_tokens("Dana drinks tea", '["drinks"]', stated)
    expected = ranking.record_tokens("Dana drinks tea", ["drinks"], _day(stated // DAY_US))
    assert list(first) == expected
    second = search.record_tokens("Dana drinks tea", '["drinks"]', stated)
    assert second == first and search.record_tokens("Dana drinks tea", '["drinks"]', stated) is second
    changed = search.record_tokens("Dana drinks coffee", '["drinks"]', stated)
    assert changed != first
    assert list(changed) == ranking.record_tokens("Dana drinks coffee", ["drinks"], _day(stated // DAY_US))
    with pytest.raises(ValueError):
        search.record_tokens("Dana drinks tea", "[not json", stated)
    assert len(search.tokens) == 1


def test_searches_build_a_row_read_again_once_and_see_it_change(store: SqliteMemoryStore) -> None:
    record = store.write([{"scope": U1, "kind": "fact", "content": "Dana drinks tea.", "provenance": {"source": "t"}}])[
        0
    ]
    listing = {"scope": U1, "limit": 10, "include_invalidated": True}
    ranked = {"scope": U1, "query": "tea", "limit": 10, "include_invalidated": True}
    [first] = store.search(listing)
    [kept] = store.search(ranked)  # the same row, read by the other kind of search: kept now
    assert kept.record == first.record and kept.record is not first.record
    assert store.search(listing)[0].record is kept.record
    assert store.search(ranked)[0].record is kept.record
    store.invalidate(record.id, reason="she switched to coffee")
    for query in (listing, ranked):
        [hit] = store.search(query)
        assert hit.record.invalid_reason == "she switched to coffee"


def test_a_forgetting_drops_what_the_store_kept_of_its_reads(store: SqliteMemoryStore) -> None:
    dana, _ = store.write(
        [
            {"scope": U1, "kind": "fact", "content": "Dana drinks tea.", "provenance": {"source": "t"}},
            {"scope": U1, "kind": "fact", "content": "Mei drinks tea.", "provenance": {"source": "t"}},
        ]
    )
    for _ in range(3):
        store.search({"scope": U1, "query": "dana tea", "limit": 10})
        store.search({"scope": U1, "limit": 10})
    kept = store._searcher
    assert len(kept.records) == 2 and len(kept.tokens) == 2 and "dana" in kept.terms._df
    store.delete(dana.id)
    assert len(kept.records) == 0 and len(kept.tokens) == 0 and kept.terms._df == {}
    assert [hit.record.content for hit in store.search({"scope": U1, "query": "dana tea", "limit": 10})] == [
        "Mei drinks tea."
    ]
