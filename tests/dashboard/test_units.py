"""The dashboard's small pure helpers: word diff, chain timeline, profile slice, roles."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest

from memory_admin.dashboard.permissions import ROLES, Ability, role_named
from memory_admin.dashboard.recall_budget import profile_slice
from memory_admin.dashboard.timeline import DiffPiece, build_timeline, word_diff
from memory_admin.records import MemoryRecord
from memory_admin.store import ChainLink

T0 = datetime(2026, 1, 5, 9, tzinfo=UTC)


def rec(
    record_id: str, content: str, *, scope: dict[str, str] | None = None, minutes: int = 0, **fields: object
) -> MemoryRecord:
    at = T0 + timedelta(minutes=minutes)
    return MemoryRecord.model_validate(
        {
            "id": record_id,
            "scope": scope or {"tenant": "acme", "user": "u1"},
            "kind": "preference",
            "content": content,
            "provenance": {"source": "test"},
            "created_at": at,
            "updated_at": at,
            **fields,
        }
    )


def test_word_diff_reads_as_phrases() -> None:
    assert word_diff("Dana drinks espresso, no milk.", "Dana drinks green tea.") == [
        DiffPiece("same", "Dana drinks "),
        DiffPiece("remove", "espresso, no milk."),
        DiffPiece("add", "green tea."),
    ]
    assert word_diff("same text", "same text") == [DiffPiece("same", "same text")]


def test_timeline_diffs_against_the_last_visible_version_and_keeps_tombstones() -> None:
    v1 = rec("m1", "Window seat.", key="seat")
    v3 = rec("m3", "Aisle seat.", key="seat", tags=["travel"], minutes=2)
    hidden = rec("m4", "Aisle seat, exit row.", scope={"tenant": "acme"}, minutes=3)
    links = [
        ChainLink(id="m1", record=v1),
        ChainLink(id="m2", record=None),
        ChainLink(id="m3", record=v3),
        ChainLink(id="m4", record=hidden),
    ]
    versions = build_timeline(links, "m3", lambda r: "user" in r.scope)
    assert [v.tombstone for v in versions] == [False, True, False, True]
    assert versions[2].current and not versions[0].current
    assert DiffPiece("remove", "Window ") in versions[2].diff and DiffPiece("add", "Aisle ") in versions[2].diff
    assert [c.name for c in versions[2].changes] == ["tags"]
    assert versions[3].record is None  # outside the viewer's grants: no content


def test_profile_slice_first_fit_newest_first() -> None:
    small = [rec(f"p{i}", "x" * 100, minutes=i, kind="profile") for i in range(3)]
    fits = profile_slice(small)
    assert not fits.overflows and fits.slice_chars == 1600 and len(fits.admitted) == 3
    big = [rec(f"b{i}", "y" * 400, minutes=i, kind="profile") for i in range(5)]
    over = profile_slice(big)
    assert over.overflows and over.used_chars <= over.slice_chars
    assert [r.id for r in over.admitted] == ["b4", "b3", "b2"]  # newest first
    assert over.total_chars > over.slice_chars


@pytest.mark.parametrize("name", ["privacy officer", "privacy_officer", "Privacy-Officer"])
def test_role_names(name: str) -> None:
    assert role_named(name).slug == "privacy-officer"


def test_roles_are_cumulative() -> None:
    for lower, higher in itertools.pairwise(ROLES):
        assert lower.abilities < higher.abilities
    assert Ability.ALL_TENANTS in ROLES[-1].abilities
