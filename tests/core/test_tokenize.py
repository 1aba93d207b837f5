from __future__ import annotations

import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from memory_admin.tokenize import tokenize, unique_tokens


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


CASES = {
    "Dana's café, 07:45!": ["dana", "s", "cafe", "07", "45"],
    "snake_case-name": ["snake", "case", "name"],
    "Zoë Ångström naïve": ["zoe", "angstrom", "naive"],
    "東京 launch Q3": ["東京", "launch", "q3"],
    "": [],
    "?!": [],
    "İstanbul": ["istanbul"],
}


def test_known_cases() -> None:
    for text, expected in CASES.items():
        assert tokenize(text) == expected, text


def test_unique_tokens_keep_first_seen_order() -> None:
    assert unique_tokens("b a b c a") == ["b", "a", "c"]


@given(st.text())
def test_fast_paths_agree_with_the_definition(text: str) -> None:
    assert tokenize(text) == reference(text)


@given(st.text(alphabet=st.characters(max_codepoint=0x24F)))
def test_latin_text_agrees_with_the_definition(text: str) -> None:
    assert tokenize(text) == reference(text)
