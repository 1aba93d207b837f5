"""The dashboard's small pieces: roles and the abilities each adds, the scope field and
the scope resolver."""

from __future__ import annotations

import itertools

import pytest
from django.core.exceptions import ValidationError

from memory_admin.dashboard.permissions import ROLES, Ability, Access, ScopeResolution, role_named
from memory_admin.dashboard.scope_resolver import PickScope, ScopeChoice, ScopeField, resolve_scope, scope_context
from memory_admin.scope import format_scope
from memory_admin.store import InMemoryMemoryStore


@pytest.mark.parametrize("name", ["privacy officer", "privacy_officer", "Privacy-Officer"])
def test_role_names(name: str) -> None:
    assert role_named(name).slug == "privacy-officer"


def test_roles_are_cumulative() -> None:
    for lower, higher in itertools.pairwise(ROLES):
        assert lower.abilities < higher.abilities
    assert Ability.ALL_TENANTS in ROLES[-1].abilities


# --- scope handling -----------------------------------------------------------------------

OPS, DEV = {"tenant": "acme", "team": "ops"}, {"tenant": "acme", "team": "dev"}


def viewer(*grants: dict[str, str]) -> Access:
    return Access(username="v", role=role_named("viewer"), abilities=frozenset({Ability.BROWSE}), grants=grants)


def test_scope_field_cleans_text_to_a_canonical_scope() -> None:
    assert ScopeField().clean(" user=dana,tenant=acme ") == {"tenant": "acme", "user": "dana"}
    assert ScopeField().clean("") is None
    with pytest.raises(ValidationError, match="needs the form key=value"):
        ScopeField().clean("tenant")
    with pytest.raises(ValidationError, match="at most 1000 characters"):
        ScopeField().clean("tenant=" + "a" * 2000)
    with pytest.raises(ValidationError, match="required"):
        ScopeField(required=True, hidden=True).clean("   ")


def test_resolve_scope_narrows_offers_choices_or_takes_the_only_one() -> None:
    store = InMemoryMemoryStore()
    store.write([{"scope": s, "kind": "fact", "content": "x", "provenance": {"source": "t"}} for s in (OPS, DEV)])
    both, ops = viewer(OPS, DEV), viewer(OPS)
    assert resolve_scope(store, both, None) == PickScope([ScopeChoice(OPS), ScopeChoice(DEV)])
    assert resolve_scope(store, both, {"tenant": "acme"}) == PickScope([ScopeChoice(OPS), ScopeChoice(DEV)], True)
    narrowed = resolve_scope(store, ops, {"tenant": "acme"})
    assert narrowed == ScopeResolution(OPS, narrowed_by=OPS)
    assert scope_context(narrowed) == {"scope": OPS, "scope_text": format_scope(OPS), "narrowed_by": format_scope(OPS)}
    assert resolve_scope(store, ops, None) == ScopeResolution(OPS)
    assert resolve_scope(store, ops, None, take_only_choice=False) == PickScope([ScopeChoice(OPS)])
    assert resolve_scope(store, viewer(), None) == PickScope([])
    admin = Access(username="a", role=role_named("admin"), abilities=frozenset(Ability), all_tenants=True)
    assert resolve_scope(store, admin, None) == ScopeResolution({"tenant": "acme"})  # the only tenant
    assert scope_context(PickScope([ScopeChoice({"tenant": "acme"}, 2)])) == {
        "choices": [ScopeChoice({"tenant": "acme"}, 2)],
        "ambiguous": False,
    }
    store.close()
