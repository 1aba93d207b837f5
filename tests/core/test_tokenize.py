from __future__ import annotations

import importlib
import unicodedata
from datetime import datetime

import pytest
import Stemmer
from hypothesis import given
from hypothesis import strategies as st

from memory_admin.store import ranking
from memory_admin.tokenize import stem, tokenize, unique_tokens, unique_words, words

SNOWBALL = Stemmer.Stemmer("english")


def reference(text: str) -> list[str]:
    """The definition, one character at a time: lowercase → NFD → drop combining marks
    → split on everything that is not a letter, number or private-use character."""
    tokens, current = [], ""
    for ch in unicodedata.normalize("NFD", text.lower()):
        if unicodedata.combining(ch):
            continue
        category = unicodedata.category(ch)
        if category[0] in "LN" or category == "Co":
            current += ch
        elif current:
            tokens.append(current)
            current = ""
    return [*tokens, current] if current else tokens


WORDS = {
    "Dana's café, 07:45!": ["dana", "s", "cafe", "07", "45"],
    "snake_case-name": ["snake", "case", "name"],
    "Zoë Ångström naïve": ["zoe", "angstrom", "naive"],
    "東京 launch Q3": ["東京", "launch", "q3"],
    "": [],
    "?!": [],
    "İstanbul": ["istanbul"],
}

TERMS = {
    "Dana prefers the aisle seats": ["dana", "prefer", "the", "aisl", "seat"],
    "preferred PREFERRING preference": ["prefer", "prefer", "prefer"],
    "Zoë Ångström naïve": ["zoe", "angstrom", "naiv"],
    "東京 launch Q3 2023": ["東京", "launch", "q3", "2023"],
    "8 May 2023, January": ["8", "may", "2023", "januari"],
    "maybe may": ["mayb", "may"],
}


def test_known_words() -> None:
    for text, expected in WORDS.items():
        assert words(text) == expected, text


def test_known_terms() -> None:
    for text, expected in TERMS.items():
        assert tokenize(text) == expected, text


def test_unique_tokens_keep_first_seen_order() -> None:
    assert unique_tokens("b a b c a") == ["b", "a", "c"]
    assert unique_tokens("seats seat prefers") == ["seat", "prefer"]
    assert unique_words("seats seat seats") == ["seats", "seat"]


@given(st.text())
def test_fast_paths_agree_with_the_definition(text: str) -> None:
    assert words(text) == reference(text)
    assert tokenize(text) == SNOWBALL.stemWords(reference(text))


@given(st.text(alphabet=st.characters(max_codepoint=0x24F)))
def test_latin_text_agrees_with_the_definition(text: str) -> None:
    assert words(text) == reference(text)
    assert tokenize(text) == SNOWBALL.stemWords(reference(text))


def test_the_stem_cache_is_bounded_and_answers_as_the_stemmer(monkeypatch: pytest.MonkeyPatch) -> None:
    module = importlib.import_module("memory_admin.tokenize")
    cache = module._Stems()
    assert cache["walking"] == "walk" and stem("walking") == "walk"
    monkeypatch.setattr(module, "STEM_CACHE_SIZE", 2)
    assert cache["jumping"] == "jump" and len(cache) == 2
    assert cache["running"] == "run" and len(cache) == 1, "a full cache starts over"


@given(
    st.text(),
    st.lists(st.text(max_size=12), max_size=4),
    st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.timezones()),
)
def test_a_record_s_tokens_are_the_terms_of_its_text(content: str, tags: list[str], stated: datetime) -> None:
    """Scoring builds a record's terms part by part (a day's terms once a day); they are
    exactly the terms of the one text every backend indexes."""
    assert ranking.record_tokens(content, tags, stated) == tokenize(ranking.record_text(content, tags, stated))
