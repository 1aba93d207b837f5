from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from memory_admin.store.ids import IdFactory, from_value, ulid_value


def test_ids_sort_by_creation_and_within_a_millisecond() -> None:
    factory = IdFactory()
    now = datetime(2026, 5, 1, tzinfo=UTC)
    ids = [factory.new(now) for _ in range(1000)] + [factory.new(now + timedelta(milliseconds=1))]
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
    assert all(len(i) == 30 and i.startswith("mem_") for i in ids)


@given(st.integers(min_value=0, max_value=(1 << 128) - 1))
def test_value_round_trips(value: int) -> None:
    text = from_value(value)
    assert ulid_value(text) == value


@given(st.text(max_size=40))
def test_only_canonical_ids_decode(text: str) -> None:
    value = ulid_value(text)
    if value is not None:
        assert from_value(value) == text


def test_non_canonical_forms_are_not_decoded() -> None:
    canonical = from_value(123456789)
    assert ulid_value(canonical.lower()) is None
    assert ulid_value(canonical[:-1] + "I") is None  # Crockford has no I, L, O or U
    assert ulid_value("mem_" + "Z" * 26) is None  # beyond 128 bits
    assert ulid_value("note_" + canonical[5:]) is None


def test_a_batch_of_ids_follows_the_last_id() -> None:
    factory = IdFactory()
    now = datetime(2026, 5, 1, tzinfo=UTC)
    first = factory.new(now)
    batch = factory.batch(now, 500)
    later = factory.new(now)
    assert [first, *batch, later] == sorted({first, *batch, later})
    assert len(batch) == 500
