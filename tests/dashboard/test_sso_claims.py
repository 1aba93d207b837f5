"""The claim mapping on its own: groups → roles and grants (docs/dashboard.md, "Single
sign-on: the claim mapping")."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured

from memory_admin.dashboard.middleware import with_form_action
from memory_admin.dashboard.sso.claims import (
    ClaimRules,
    ClaimsRefused,
    Refusal,
    map_claims,
    parse_grant_map,
    parse_role_map,
)

RULES = ClaimRules(groups_claim="groups", grants_claim=None, prefix="memory-admin:")


def mapped(claims: dict[str, Any], rules: ClaimRules = RULES) -> tuple[list[str], list[str]]:
    access = map_claims(claims, rules)
    return list(access.roles), sorted(access.grants)


def test_prefixed_groups_name_roles_and_grants_and_other_groups_are_ignored() -> None:
    access = map_claims(
        {
            "groups": [
                "Everyone",
                "memory-admin:viewer",
                "memory-admin:privacy_officer",
                "memory-admin:grant:tenant=acme",
                "memory-admin:grant:tenant=acme,user=dana",
                "memory-admin:grant:user=dana",  # no tenant: not a scope
                "memory-admin:chief",
            ]
        },
        RULES,
    )
    assert list(access.roles) == ["viewer", "privacy-officer"]  # in the roles' own order
    assert access.roles["privacy-officer"] == "memory-admin:privacy_officer"
    assert sorted(access.grants) == ['{"tenant":"acme","user":"dana"}', '{"tenant":"acme"}']
    assert access.grant_sources['{"tenant":"acme"}'] == "memory-admin:grant:tenant=acme"
    assert access.ignored == ("memory-admin:grant:user=dana", "memory-admin:chief")


def test_a_nested_claim_such_as_keycloaks_realm_roles() -> None:
    rules = ClaimRules(groups_claim="realm_access.roles", grants_claim=None, prefix="memory-admin:")
    assert mapped({"realm_access": {"roles": ["offline_access", "memory-admin:admin"]}}, rules) == (["admin"], [])
    with pytest.raises(ClaimsRefused) as refused:
        map_claims({"realm_access": {}}, rules)
    assert refused.value.reason is Refusal.MISSING


def test_maps_for_providers_that_send_group_ids() -> None:
    rules = ClaimRules(
        groups_claim="groups",
        grants_claim=None,
        prefix="",
        role_map=parse_role_map({"5f1c-curators": "curator", "9a0e-officers": "privacy officer"}),
        grant_map=parse_grant_map({"5f1c-curators": ["tenant=acme"], "77aa-globex": "tenant=globex"}),
    )
    claims = {"groups": ["5f1c-curators", "77aa-globex", "0000-unrelated", "memory-admin:admin"]}
    assert mapped(claims, rules) == (["curator"], ['{"tenant":"acme"}', '{"tenant":"globex"}'])  # no prefix: no admin


def test_a_grants_claim_of_its_own() -> None:
    rules = ClaimRules(groups_claim="roles", grants_claim="memory_scopes", prefix="memory-admin:")
    claims = {
        "roles": ["memory-admin:curator", "memory-admin:grant:tenant=initech"],  # grants come from the other claim
        "memory_scopes": ["tenant=acme", "memory-admin:grant:tenant=globex", "nonsense"],
    }
    access = map_claims(claims, rules)
    assert list(access.roles) == ["curator"]
    assert sorted(access.grants) == ['{"tenant":"acme"}', '{"tenant":"globex"}']
    assert access.ignored == ("nonsense",)
    assert mapped({"roles": ["memory-admin:viewer"]}, rules) == (["viewer"], [])  # no grants claim: no grants


@pytest.mark.parametrize(
    ("claims", "reason"),
    [
        ({}, Refusal.MISSING),
        ({"groups": None}, Refusal.MALFORMED),
        ({"groups": ["memory-admin:viewer", 7]}, Refusal.MALFORMED),
        ({"groups": ["x" * 1001, "memory-admin:viewer"]}, Refusal.MALFORMED),
        ({"groups": [f"g{n}" for n in range(200)] + ["memory-admin:viewer"]}, Refusal.OVERSIZED),
        ({"groups": []}, Refusal.NO_ROLE),
        ({"groups": ["memory-admin:grant:tenant=acme"]}, Refusal.NO_ROLE),
    ],
)
def test_what_refuses(claims: dict[str, Any], reason: Refusal) -> None:
    with pytest.raises(ClaimsRefused) as refused:
        map_claims(claims, RULES)
    assert refused.value.reason is reason


def test_the_limit_is_the_configured_one() -> None:
    rules = ClaimRules(groups_claim="groups", grants_claim=None, prefix="memory-admin:", max_values=3)
    assert mapped({"groups": ["a", "b", "memory-admin:viewer"]}, rules) == (["viewer"], [])
    with pytest.raises(ClaimsRefused, match="lists 4 values; the dashboard reads at most 3"):
        map_claims({"groups": ["a", "b", "c", "memory-admin:viewer"]}, rules)


def test_bad_maps_are_configuration_errors() -> None:
    with pytest.raises(ImproperlyConfigured, match="unknown role 'chief'"):
        parse_role_map({"ops": "chief"})
    with pytest.raises(ImproperlyConfigured, match="is not a scope"):
        parse_grant_map({"ops": ["user=dana"]})
    with pytest.raises(ImproperlyConfigured, match="a scope or a list of scopes"):
        parse_grant_map({"ops": {"tenant": "acme"}})


def test_the_form_action_directive_gains_the_provider_origin() -> None:
    policy = "default-src 'self'; form-action 'self'; frame-ancestors 'none'"
    assert with_form_action(policy, []) == policy
    assert with_form_action(policy, ["https://login.example.org"]) == (
        "default-src 'self'; form-action 'self' https://login.example.org; frame-ancestors 'none'"
    )
    assert with_form_action("default-src 'self'", ["https://a.example"]) == (
        "default-src 'self'; form-action 'self' https://a.example"
    )
