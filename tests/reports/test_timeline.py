"""Chain timelines: the word diff and the versions a viewer may see."""

from __future__ import annotations

from memory_admin.reports.timeline import DiffPiece, build_timeline, word_diff
from memory_admin.store import ChainLink
from tests.reports.conftest import rec

USER = {"tenant": "acme", "user": "u1"}


def test_word_diff_reads_as_phrases() -> None:
    assert word_diff("Dana drinks espresso, no milk.", "Dana drinks green tea.") == [
        DiffPiece("same", "Dana drinks "),
        DiffPiece("remove", "espresso, no milk."),
        DiffPiece("add", "green tea."),
    ]
    assert word_diff("same text", "same text") == [DiffPiece("same", "same text")]


def test_timeline_diffs_against_the_last_visible_version_and_keeps_tombstones() -> None:
    v1 = rec("m1", "Window seat.", scope=USER, kind="preference", key="seat")
    v3 = rec("m3", "Aisle seat.", scope=USER, kind="preference", key="seat", tags=["travel"], minutes=2)
    hidden = rec("m4", "Aisle seat, exit row.", scope={"tenant": "acme"}, kind="preference", minutes=3)
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
