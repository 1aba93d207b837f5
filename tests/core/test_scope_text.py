"""The scope text form (``tenant=acme,user=dana``) is unambiguous: parsing is the exact
inverse of formatting, for every scope the store can hold."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_admin.errors import MemoryValidationError
from memory_admin.scope import MAX_SCOPE_VALUE_CHARS, canonical_scope, format_scope, parse_scope_text

KEYS = st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True)
# printable text, the characters the form must escape among them
VALUES = st.text(
    alphabet=st.one_of(st.sampled_from(",=% %2C%3D%25ab"), st.characters(categories=("L", "N", "P", "S", "Zs"))),
    min_size=1,
    max_size=MAX_SCOPE_VALUE_CHARS,
)


@st.composite
def scopes(draw: st.DrawFn) -> dict[str, str]:
    pairs = draw(st.dictionaries(KEYS.filter(lambda k: k != "tenant"), VALUES, max_size=4))
    pairs["tenant"] = draw(VALUES)
    try:
        return dict(canonical_scope(pairs))
    except MemoryValidationError:
        return draw(st.nothing())  # not a scope the store can hold (blank after trimming, …)


@settings(max_examples=1000, deadline=None)
@given(scopes())
def test_parse_is_the_exact_inverse_of_format(scope: dict[str, str]) -> None:
    assert parse_scope_text(format_scope(scope)) == scope


@pytest.mark.parametrize(
    ("scope", "text"),
    [
        ({"tenant": "acme", "user": "dana"}, "tenant=acme,user=dana"),
        ({"tenant": "acme", "user": "dana,"}, "tenant=acme,user=dana%2C"),
        ({"tenant": "acme", "user": "x,team=ops"}, "tenant=acme,user=x%2Cteam%3Dops"),
        ({"tenant": "100%", "user": "%2C"}, "tenant=100%25,user=%252C"),
        ({"tenant": "José", "user": "a b"}, "tenant=José,user=a b"),
    ],
    ids=["plain", "trailing-comma", "comma-and-equals", "percent", "unicode-stays-readable"],
)
def test_values_that_look_like_syntax_are_escaped(scope: dict[str, str], text: str) -> None:
    assert format_scope(scope) == text
    assert parse_scope_text(text) == scope


def test_a_lone_percent_is_itself() -> None:
    assert parse_scope_text("tenant=50%,user=%zz") == {"tenant": "50%", "user": "%zz"}
    assert parse_scope_text("tenant=a%2cb") == {"tenant": "a,b"}, "escapes are case-insensitive"


def test_an_escaped_comma_never_reaches_a_neighbouring_scope() -> None:
    assert parse_scope_text("tenant=acme,user=dana%2C") != parse_scope_text("tenant=acme,user=dana")


@settings(max_examples=300, deadline=None)
@given(scopes())
def test_the_tenant_comes_first_then_the_other_keys_sorted(scope: dict[str, str]) -> None:
    keys = [pair.partition("=")[0] for pair in format_scope(scope).split(",")]
    assert keys == ["tenant", *sorted(k for k in scope if k != "tenant")]
    assert format_scope(parse_scope_text(format_scope(scope))) == format_scope(scope)


def test_display_order() -> None:
    scope = {"agent": "planner", "tenant": "acme", "user": "dana"}
    assert format_scope(scope) == "tenant=acme,agent=planner,user=dana"
    assert parse_scope_text("agent=planner,user=dana,tenant=acme") == scope
