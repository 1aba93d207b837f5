"""The time a question names: "on 8 May 2023", "May 8th, 2023", "in June", "in July 2023".

A question that names a calendar day is most often about what was said that day; one
that names a month (and no day), about what was said in it. A semantic, hybrid or quality
search lifts its candidates stated then (the record's ``observed_at``, as a UTC day —
the same day its keyword side indexes as words, :func:`~memory_admin.store.ranking.date_words`):
by :data:`~memory_admin.tuning.NAMED_TIME_WEIGHT` over a fused score,
:data:`~memory_admin.tuning.SEMANTIC_NAMED_TIME_WEIGHT` over a cosine, and as one of the
quality ranker's features. Both weights were picked out of fold on LoCoMo's development
split (docs/benchmarks/locomo-folds.md). A lift, not a filter: a strong match stated on
another day can still come first, and nothing stops matching.

Dates are read in English, as the keyword side's day words are written. A month alone
counts when it is capitalised ("in June"), and "May" only after "in" or before a year, so
"what may she" names no time; a day without a year names that day in any year.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from functools import lru_cache

MONTHS = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
"""The months' names, as a record's day words write them (:func:`~memory_admin.store.ranking.date_words`)."""
_MONTH = "(" + "|".join(MONTHS) + ")"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(\d{4})"
_DAY_FIRST = re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}\b(?:(?:,\s*|\s+){_YEAR}\b)?", re.IGNORECASE)
_MONTH_FIRST = re.compile(rf"\b{_MONTH}\s+{_DAY}\b(?:(?:,\s*|\s+){_YEAR}\b)?", re.IGNORECASE)
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_MONTH_YEAR = re.compile(rf"\b{_MONTH}(?:,\s*|\s+){_YEAR}\b", re.IGNORECASE)
_AFTER_IN = re.compile(r"\bin\s+$", re.IGNORECASE)
_MONTH_ALONE = re.compile(r"\b(" + "|".join(m.capitalize() for m in MONTHS) + r")\b")


@dataclass(frozen=True)
class NamedTime:
    """The days and months a question names (``None`` for a year it does not give)."""

    days: frozenset[tuple[int | None, int, int]]
    """``(year, month, day)``."""
    months: frozenset[tuple[int | None, int]]
    """``(year, month)``: only when the question names no day."""

    def covers(self, ordinal: int | None) -> bool:
        """Whether a day (proleptic ordinal, as :func:`~memory_admin.store.plan.context_day`
        gives it) is one the question names, or in a month it names."""
        if ordinal is None:
            return False
        day = date.fromordinal(ordinal)
        if self.days:
            return any((y is None or y == day.year) and m == day.month and d == day.day for y, m, d in self.days)
        return any((y is None or y == day.year) and m == day.month for y, m in self.months)


def _month(name: str) -> int:
    return MONTHS.index(name.lower()) + 1


def _year(text: str | None) -> int | None:
    return int(text) if text else None


def _valid(year: int | None, month: int, day: int) -> bool:
    try:
        date(year or 2000, month, day)  # 2000 is a leap year: 29 February is a day
    except ValueError:
        return False
    return True


@lru_cache(maxsize=1024)
def named_time(text: str) -> NamedTime | None:
    """The time ``text`` names, or ``None`` when it names none."""
    days: set[tuple[int | None, int, int]] = set()
    spans: list[tuple[int, int]] = []
    for found in _DAY_FIRST.finditer(text):
        days.add((_year(found.group(3)), _month(found.group(2)), int(found.group(1))))
        spans.append(found.span())
    for found in _MONTH_FIRST.finditer(text):
        days.add((_year(found.group(3)), _month(found.group(1)), int(found.group(2))))
        spans.append(found.span())
    for found in _ISO.finditer(text):
        days.add((int(found.group(1)), int(found.group(2)), int(found.group(3))))
    days = {day for day in days if _valid(*day)}
    if days:
        return NamedTime(frozenset(days), frozenset())
    months: set[tuple[int | None, int]] = set()
    for found in _MONTH_YEAR.finditer(text):
        months.add((int(found.group(2)), _month(found.group(1))))
        spans.append(found.span())
    for found in _MONTH_ALONE.finditer(text):
        if any(start <= found.start() < end for start, end in spans):
            continue
        if found.group(1) == "May" and not _AFTER_IN.search(text[: found.start()]):
            continue
        months.add((None, _month(found.group(1))))
    return NamedTime(frozenset(), frozenset(months)) if months else None


__all__ = ["MONTHS", "NamedTime", "named_time"]
