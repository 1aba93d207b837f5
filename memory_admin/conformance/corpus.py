"""The shared Tier 2 corpus: every keyword backend must return exactly these match sets.

Each case names the records (by label) a query must match — no more, no fewer. The
cases cover word boundaries, punctuation, case, diacritics, one-character tokens, tags
as part of the haystack, stemming (Snowball English), the words of the UTC day a record
was stated, multi-token OR, and query text that looks like FTS syntax (which must be
matched as plain words, never interpreted).
"""

from __future__ import annotations

from typing import NamedTuple

STATED = "2025-11-03T12:00:00+00:00"
"""When every corpus record without a date of its own was stated: ``3 november 2025``."""

DATED: dict[str, str] = {
    # label: observed_at (a record's date words are those of its UTC day)
    "moved": "2023-05-08T13:56:00+00:00",  # 8 may 2023
    "plumber": "2024-02-29T23:30:00-02:00",  # 1 march 2024 in UTC, not 29 february
    "passport": "2022-01-17T09:00:00+00:00",  # 17 january 2022
}

CORPUS: dict[str, tuple[str, tuple[str, ...]]] = {
    # label: (content, tags), stated at DATED[label] or STATED
    "cafe": ("Meet at the café on Rue de Rivoli", ()),
    "cafe_upper": ("CAFE opens at nine", ()),
    "coop": ("The co-op sells oat milk", ()),
    "email": ("Write to dana.smith@example.com about invoices", ()),
    "snake": ("The variable is called snake_case_name", ()),
    "flight": ("Flight LH-400 departs 07:45 from gate B12", ()),
    "letters": ("Plan A is fine, plan B is x", ()),
    "tagged": ("Generic note without keywords", ("Dark-Mode", "ui")),
    "apostrophe": ("Dana's dog isn't allowed inside", ()),
    "diacritics": ("A naïve résumé from Zoë Ångström", ()),
    "shout": ("ESPRESSO every MORNING", ()),
    "prefers": ("Dana prefers aisle seats", ()),
    "prefer": ("She will prefer the window", ()),
    "phrase": ("near the station", ()),
    "cjk_mix": ("Project 東京 launch in Q3", ()),
    "moved": ("Dana moved to Lisbon", ()),
    "plumber": ("Call the plumber about the leak", ()),
    "passport": ("Renew the passport before travelling", ()),
    "modal": ("You may bring one guest", ()),
}


class MatchCase(NamedTuple):
    id: str
    query: str
    expected: frozenset[str]


def _case(case_id: str, query: str, *labels: str) -> MatchCase:
    return MatchCase(case_id, query, frozenset(labels))


MATCH_CASES: list[MatchCase] = [
    _case("plain-word", "cafe", "cafe", "cafe_upper"),
    _case("diacritic-in-query", "café", "cafe", "cafe_upper"),
    _case("case-and-punctuation", "CAFÉ!", "cafe", "cafe_upper"),
    _case("hyphen-splits-query", "co-op", "coop"),
    _case("hyphen-splits-content", "coop"),
    _case("dot-and-at-split", "example", "email"),
    _case("shared-token-across-records", "dana", "email", "apostrophe", "prefers", "moved"),
    _case("underscore-splits", "snake", "snake"),
    _case("digits-are-tokens", "400", "flight"),
    _case("leading-zero-digits", "07", "flight"),
    _case("letter-digit-token", "b12", "flight"),
    _case("one-character-token", "a", "letters", "diacritics"),
    _case("one-character-x", "x", "letters"),
    _case("apostrophe-suffix", "t", "apostrophe"),
    _case("apostrophe-word", "isn", "apostrophe"),
    _case("tags-are-haystack", "dark", "tagged"),
    _case("tag-second-token", "mode", "tagged"),
    _case("short-tag", "UI", "tagged"),
    _case("folded-diacritics", "naive resume zoe angstrom", "diacritics"),
    _case("uppercase-content", "espresso morning", "shout"),
    _case("stem-matches-inflections", "prefer", "prefer", "prefers"),
    _case("stem-of-the-query", "prefers", "prefer", "prefers"),
    _case("stem-ing-form", "Preferring", "prefer", "prefers"),
    _case("stem-derived-noun", "preference", "prefer", "prefers"),
    _case("stem-plural-in-content", "seat", "prefers"),
    _case("stem-in-tags", "modes", "tagged"),
    _case("stem-keeps-other-words-apart", "maybe"),
    _case("stem-past-tense", "moving", "moved"),
    _case("stem-of-a-folded-word", "travellings", "passport"),
    _case("date-day", "8", "moved"),
    _case("date-month-and-word", "May", "moved", "modal"),
    _case("date-year", "2023", "moved"),
    _case("date-full", "8 May 2023", "moved", "modal"),
    _case("date-month-stemmed", "January", "passport"),
    _case("date-is-the-utc-day", "1 march 2024", "plumber"),
    _case("date-not-the-local-day", "29 february"),
    _case("multi-token-or", "espresso zoe", "shout", "diacritics"),
    _case("or-is-a-word", "aisle OR window", "prefers", "prefer"),
    _case("and-is-a-word", "aisle AND nothing", "prefers"),
    _case("not-is-a-word", "dana NOT prefers", "email", "apostrophe", "prefers", "prefer", "moved"),
    _case("near-is-a-word", "NEAR(station window)", "phrase", "prefer"),
    _case("quote-unbalanced", '"dana', "email", "apostrophe", "prefers", "moved"),
    _case(
        "prefix-star-is-literal",
        "dan*",
    ),
    _case("column-filter-is-text", "content:espresso", "shout"),
    _case("brace-column-filter", "{meta} : espresso", "shout"),
    _case("caret-initial-token", "^espresso", "shout"),
    _case("minus-is-separator", "-espresso", "shout"),
    _case("only-punctuation", '?!*"()'),
    _case("cjk-token", "東京", "cjk_mix"),
    _case("no-match", "zebra"),
]
