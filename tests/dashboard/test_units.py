"""The dashboard's roles: names and the abilities each adds."""

from __future__ import annotations

import itertools

import pytest

from memory_admin.dashboard.permissions import ROLES, Ability, role_named


@pytest.mark.parametrize("name", ["privacy officer", "privacy_officer", "Privacy-Officer"])
def test_role_names(name: str) -> None:
    assert role_named(name).slug == "privacy-officer"


def test_roles_are_cumulative() -> None:
    for lower, higher in itertools.pairwise(ROLES):
        assert lower.abilities < higher.abilities
    assert Ability.ALL_TENANTS in ROLES[-1].abilities
