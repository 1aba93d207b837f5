"""The Match column's score parts: each part it shows says something."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from django.template.loader import render_to_string


def _match(**parts: float | None) -> str:
    hit = {"score": 1.0, "keyword_score": None, "semantic_score": 0.61, "context_score": 0.2, "length_score": None}
    return render_to_string("dashboard/_match.html", {"hit": SimpleNamespace(**{**hit, **parts})})


@pytest.mark.parametrize(("part", "shown"), [(0.03, "length 0.03"), (-0.012, "length -0.01"), (0.3, "length 0.30")])
def test_a_length_part_is_shown_with_its_sign(part: float, shown: str) -> None:
    assert shown in _match(length_score=part)


@pytest.mark.parametrize("part", [None, 0.0, 0.004, -0.0049])
def test_a_length_part_that_would_read_0_00_is_left_out(part: float | None) -> None:
    said = _match(length_score=part)
    assert "meaning 0.61" in said and "context 0.20" in said
    assert "length" not in said
