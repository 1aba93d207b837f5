"""The time a question names: the days and months a search lifts what was stated in."""

from __future__ import annotations

from datetime import date

import pytest

from memory_admin.store.named_time import NamedTime, named_time


def _covers(text: str, day: date) -> bool:
    named = named_time(text)
    return named is not None and named.covers(day.toordinal())


@pytest.mark.parametrize(
    "text",
    [
        "What did Gina find on 1 February, 2023?",
        "What did Gina find on 1 February 2023?",
        "What did Gina find on 1st of February 2023?",
        "What did Gina find on February 1, 2023?",
        "What did Gina find on February 1st 2023?",
        "What did Gina find on February 1,2023?",
        "what did gina find on 1 february 2023",
        "What did Gina find on 2023-02-01?",
    ],
)
def test_a_day_is_read_however_it_is_written(text: str) -> None:
    assert _covers(text, date(2023, 2, 1))
    assert not _covers(text, date(2023, 2, 2)), "the day, not its neighbour"
    assert not _covers(text, date(2024, 2, 1)), "the year it gives"


def test_a_day_without_a_year_is_that_day_in_any_year() -> None:
    assert _covers("What happened on 8 May?", date(2021, 5, 8))
    assert _covers("What happened on 8 May?", date(2023, 5, 8))
    assert not _covers("What happened on 8 May?", date(2023, 5, 9))


def test_a_month_names_every_day_in_it_when_no_day_is_named() -> None:
    assert _covers("What did Maria donate in December 2023?", date(2023, 12, 30))
    assert not _covers("What did Maria donate in December 2023?", date(2022, 12, 30))
    assert _covers("When did Melanie go camping in June?", date(2022, 6, 1))
    assert _covers("What did she plant in May?", date(2023, 5, 20))
    named = named_time("Where was John on 15 August 2023, and in June?")
    assert named == NamedTime(frozenset({(2023, 8, 15)}), frozenset()), "a day named: the month alone is not"


@pytest.mark.parametrize(
    "text",
    [
        "What may she bring to the party?",
        "May I ask what she brought?",
        "What did she say on the 3rd?",
        "How many of the 12 tickets were sold?",
        "what happened in june",  # a month alone counts only capitalised
        "",
    ],
)
def test_no_time_is_read_into_other_words(text: str) -> None:
    assert named_time(text) is None


def test_an_impossible_day_falls_back_to_its_month() -> None:
    assert named_time("on 31 February 2023") == NamedTime(frozenset(), frozenset({(2023, 2)}))


def test_no_day_is_covered_without_one() -> None:
    named = named_time("in June")
    assert named is not None and not named.covers(None)
