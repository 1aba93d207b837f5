"""The provider's claims → the dashboard's roles and scope grants.

One claim (``groups`` by default; an app-roles claim such as ``roles``, or a nested one
such as Keycloak's ``realm_access.roles``) lists what the person belongs to. Each value
maps in one of three ways; every other value (people belong to many groups) is ignored:

=====================================  ==============================================
``memory-admin:curator``               the role (the prefix, then ``viewer``,
                                       ``curator``, ``privacy-officer`` or ``admin``)
``memory-admin:grant:tenant=acme``     the scope grant (the prefix, ``grant:``, then a
                                       scope as the dashboard writes it)
a value named in ``OIDC_ROLE_MAP`` /   the role, or the grants, it is mapped to (for
``OIDC_GRANT_MAP``                     providers that send group ids, not names)
=====================================  ==============================================

Grants may come from a claim of their own instead (``OIDC_GRANTS_CLAIM``), whose values
are scopes (``tenant=acme``), prefixed or not. The claim must be there and hold at most
``OIDC_MAX_GROUPS`` values: a missing, malformed or oversized claim refuses the sign-in
(it may have been cut short, so it cannot be trusted to remove anything either), and so
does a person none of whose values maps to a role.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from memory_admin.dashboard.permissions import ROLES, role_named
from memory_admin.errors import MemoryValidationError
from memory_admin.scope import Scope, canonical_scope, parse_scope_text, scope_json

GRANT_MARK = "grant:"
MAX_VALUE_CHARS = 1000


@dataclass(frozen=True)
class ClaimRules:
    groups_claim: str
    grants_claim: str | None
    prefix: str
    role_map: Mapping[str, str] = field(default_factory=dict)
    grant_map: Mapping[str, tuple[Scope, ...]] = field(default_factory=dict)
    max_values: int = 200


@dataclass(frozen=True)
class MappedAccess:
    """What the provider's claims give: role slugs and canonical grants, each with the
    claim value that brought it (the audit log names it)."""

    roles: Mapping[str, str]  # role slug → the claim value
    grants: Mapping[str, Scope]  # scope_json → scope
    grant_sources: Mapping[str, str] = field(default_factory=dict)  # scope_json → the claim value
    ignored: tuple[str, ...] = ()  # prefixed values that name no role and no scope


class Refusal(StrEnum):
    MISSING = "missing"
    OVERSIZED = "oversized"
    MALFORMED = "malformed"
    NO_ROLE = "no_role"


class ClaimsRefused(Exception):
    """The claims cannot be mapped (``reason``); ``detail`` says how, for the page."""

    def __init__(self, reason: Refusal, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


def claim_values(claims: Mapping[str, Any], path: str, *, limit: int) -> list[str]:
    """The strings of the claim at ``path`` (dots walk nested objects).

    A single string counts as a list of one. Missing, not strings, or more than
    ``limit`` values: :class:`ClaimsRefused`.
    """
    value: Any = claims
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            raise ClaimsRefused(Refusal.MISSING, _missing_detail(claims, path))
        value = value[part]
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, list | tuple) or not all(isinstance(item, str) for item in values):
        raise ClaimsRefused(Refusal.MALFORMED, f"The {path!r} claim is not a list of names.")
    if len(values) > limit:
        raise ClaimsRefused(
            Refusal.OVERSIZED,
            f"The {path!r} claim lists {len(values)} values; the dashboard reads at most {limit} "
            "(a claim that large may have been cut short, so none of it is trusted).",
        )
    if any(len(item) > MAX_VALUE_CHARS for item in values):
        raise ClaimsRefused(Refusal.MALFORMED, f"A value of the {path!r} claim is over {MAX_VALUE_CHARS} characters.")
    return list(values)


def _missing_detail(claims: Mapping[str, Any], path: str) -> str:
    # Microsoft Entra ID leaves the groups out of a token for someone in too many
    # groups and names a link to them instead ("overage"): say so
    names = claims.get("_claim_names")
    if isinstance(names, Mapping) and path.split(".")[0] in names:
        return (
            f"The provider sent a link to the {path!r} claim instead of the claim: the person is in too many groups "
            "to fit in a token. Map app roles (the 'roles' claim) or assign fewer groups to the application."
        )
    return f"The provider did not send the {path!r} claim; the dashboard needs it to know your role."


def map_claims(claims: Mapping[str, Any], rules: ClaimRules) -> MappedAccess:
    """Roles and grants from ``claims``, or :class:`ClaimsRefused`."""
    groups = claim_values(claims, rules.groups_claim, limit=rules.max_values)
    roles: dict[str, str] = {}
    grants: dict[str, Scope] = {}
    grant_sources: dict[str, str] = {}
    ignored: list[str] = []

    def grant(scope: Scope, source: str) -> None:
        key = scope_json(scope)
        grants[key] = scope
        grant_sources.setdefault(key, source)

    for value in groups:
        if value in rules.role_map:
            roles.setdefault(rules.role_map[value], value)
        for mapped_scope in rules.grant_map.get(value, ()):
            grant(mapped_scope, value)
        if not rules.prefix or not value.startswith(rules.prefix) or value in rules.role_map:
            continue
        rest = value[len(rules.prefix) :]
        if rest.startswith(GRANT_MARK):
            if rules.grants_claim is None:
                named = _scope(rest[len(GRANT_MARK) :])
                if named is None:
                    ignored.append(value)
                else:
                    grant(named, value)
            continue
        try:
            roles.setdefault(role_named(rest).slug, value)
        except ValueError:
            ignored.append(value)

    if rules.grants_claim is not None:
        try:
            listed = claim_values(claims, rules.grants_claim, limit=rules.max_values)
        except ClaimsRefused as refused:
            if refused.reason is not Refusal.MISSING:
                raise
            listed = []  # no grants claim: no grants from the provider (less access, never more)
        for value in listed:
            text = value
            if rules.prefix and text.startswith(rules.prefix + GRANT_MARK):
                text = text[len(rules.prefix + GRANT_MARK) :]
            listed_scope = _scope(text)
            if listed_scope is None:
                ignored.append(value)
            else:
                grant(listed_scope, value)

    if not roles:
        raise ClaimsRefused(
            Refusal.NO_ROLE,
            f"None of the {len(groups)} values of your {rules.groups_claim!r} claim maps to a dashboard role.",
        )
    order = [role.slug for role in ROLES]
    ordered_roles = {slug: roles[slug] for slug in order if slug in roles}
    return MappedAccess(
        roles=ordered_roles,
        grants=dict(sorted(grants.items())),
        grant_sources=grant_sources,
        ignored=tuple(ignored),
    )


def _scope(text: str) -> Scope | None:
    try:
        return canonical_scope(parse_scope_text(text))
    except (MemoryValidationError, ValueError):
        return None


def parse_role_map(raw: Mapping[str, Any]) -> dict[str, str]:
    """``OIDC_ROLE_MAP``: claim value → role (``{"0b9c…": "curator"}``)."""
    mapped = {}
    for value, role in raw.items():
        try:
            mapped[str(value)] = role_named(str(role)).slug
        except ValueError as exc:
            raise ImproperlyConfigured(f"OIDC_ROLE_MAP[{value!r}]: {exc}") from exc
    return mapped


def parse_grant_map(raw: Mapping[str, Any]) -> dict[str, tuple[Scope, ...]]:
    """``OIDC_GRANT_MAP``: claim value → a scope or a list of scopes (``{"0b9c…": ["tenant=acme"]}``)."""
    mapped = {}
    for value, scopes in raw.items():
        texts: Sequence[Any] = [scopes] if isinstance(scopes, str) else scopes
        if not isinstance(texts, list | tuple):
            raise ImproperlyConfigured(f"OIDC_GRANT_MAP[{value!r}] must be a scope or a list of scopes.")
        parsed = []
        for text in texts:
            scope = _scope(str(text))
            if scope is None:
                raise ImproperlyConfigured(f"OIDC_GRANT_MAP[{value!r}]: {text!r} is not a scope such as tenant=acme.")
            parsed.append(scope)
        mapped[str(value)] = tuple(parsed)
    return mapped
