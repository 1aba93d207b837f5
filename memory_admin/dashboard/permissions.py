"""Who may see and do what: roles and scope grants, decided in this one module.

Roles are Django groups holding the dashboard's permissions, cumulatively:

========================  =====================================================
``viewer``                browse, search, graphs
``curator``               + invalidate, correct by supersede
``privacy officer``       + delete a record, erase a scope
``admin``                 + every tenant, without grants
========================  =====================================================

A **scope grant** is a scope filter (``tenant=acme`` or ``tenant=acme,user=dana``); a
user sees exactly the records whose scope contains every pair of one of their grants.
Everything a view shows or touches goes through an :class:`Access`: a record outside
the grants is "not found", whatever the URL says, and a user without grants sees nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from django.contrib.auth.models import AnonymousUser, Group, Permission, User
from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import HttpRequest

from memory_admin.dashboard.models import MemoryAccess, ScopeGrant
from memory_admin.records import MemoryRecord
from memory_admin.scope import Scope, canonical_scope, format_scope, is_subset_match, scope_json

APP_LABEL = "dashboard"


class Ability(StrEnum):
    """The dashboard's permissions (codenames on :class:`MemoryAccess`)."""

    BROWSE = "browse_memory"
    CURATE = "curate_memory"
    FORGET = "forget_memory"
    ALL_TENANTS = "see_all_tenants"

    @property
    def perm(self) -> str:
        return f"{APP_LABEL}.{self.value}"

    @property
    def needs(self) -> str:
        """What the ability is for and the role that brings it, in the words a 403 page uses."""
        return _ABILITY_NEEDS[self]


_ABILITY_NEEDS = {
    Ability.BROWSE: "reading memory needs the viewer role or higher",
    Ability.CURATE: "invalidating or correcting records needs the curator role or higher",
    Ability.FORGET: "deleting records, erasing scopes and sweeping expired records need the privacy officer role",
    Ability.ALL_TENANTS: "seeing every tenant needs the admin role",
}


@dataclass(frozen=True)
class Role:
    slug: str
    group: str
    abilities: frozenset[Ability]
    summary: str


ROLES: tuple[Role, ...] = (
    Role("viewer", "viewer", frozenset({Ability.BROWSE}), "browse, search, graphs"),
    Role("curator", "curator", frozenset({Ability.BROWSE, Ability.CURATE}), "+ invalidate, correct"),
    Role(
        "privacy-officer",
        "privacy officer",
        frozenset({Ability.BROWSE, Ability.CURATE, Ability.FORGET}),
        "+ delete records, erase scopes",
    ),
    Role("admin", "admin", frozenset(Ability), "+ every tenant, without grants"),
)
ROLES_BY_SLUG = {role.slug: role for role in ROLES}


def role_named(name: str) -> Role:
    """A role by slug or group name (``privacy-officer``, ``privacy_officer``, ``privacy officer``)."""
    wanted = name.strip().lower().replace("_", "-").replace(" ", "-")
    if wanted not in ROLES_BY_SLUG:
        raise ValueError(f"unknown role {name!r}; choose one of {', '.join(ROLES_BY_SLUG)}")
    return ROLES_BY_SLUG[wanted]


def ensure_roles(**_: Any) -> None:
    """Create the role groups and their permissions (idempotent; run after every migrate)."""
    content_type = ContentType.objects.get_for_model(MemoryAccess, for_concrete_model=False)
    perms = {}
    for ability in Ability:
        options = MemoryAccess._meta.permissions
        label = next(text for code, text in options if code == ability.value)
        perms[ability], _created = Permission.objects.get_or_create(
            content_type=content_type, codename=ability.value, defaults={"name": label}
        )
    for role in ROLES:
        group, _created = Group.objects.get_or_create(name=role.group)
        group.permissions.set([perms[a] for a in role.abilities])


# --- who is asking --------------------------------------------------------------------


class NotVisible(Exception):
    """A record or scope the user may not see; rendered as a plain 404 (never says which)."""

    def __init__(self, what: str = "That page") -> None:
        super().__init__(what)
        self.what = what


@dataclass(frozen=True)
class ScopeResolution:
    """The scope filter a request will actually run, and why it differs from the asked one."""

    scope: Scope
    narrowed_by: Scope | None = None


class NoRole(PermissionDenied):
    """A signed-in account without a dashboard role: it may use no page, and every page
    says so, the same way (403)."""

    def __init__(self, username: str) -> None:
        super().__init__(f"{username} is signed in, but the account has no dashboard role yet.")
        self.username = username


class AmbiguousScope(Exception):
    """The asked scope spans several grants; the user picks one of ``options``."""

    def __init__(self, options: Sequence[Scope]) -> None:
        super().__init__("several grants match")
        self.options = list(options)


@dataclass(frozen=True)
class Access:
    """What one signed-in user may see and do."""

    username: str
    role: Role | None
    abilities: frozenset[Ability]
    grants: tuple[Scope, ...] = ()
    all_tenants: bool = False

    def can(self, ability: Ability) -> bool:
        return ability in self.abilities

    def require(self, ability: Ability) -> None:
        """Raise :class:`PermissionDenied` (403) unless the user's role holds ``ability``."""
        if not self.can(ability):
            # the ability in words, never its internal permission name
            raise PermissionDenied(f"Your role does not allow this: {ability.needs}.")

    @property
    def can_curate(self) -> bool:
        return self.can(Ability.CURATE)

    @property
    def can_forget(self) -> bool:
        return self.can(Ability.FORGET)

    @property
    def sees_anything(self) -> bool:
        return self.can(Ability.BROWSE) and (self.all_tenants or bool(self.grants))

    def allows(self, scope: Mapping[str, str]) -> bool:
        """True when a record with this scope lies inside the user's grants."""
        if not self.can(Ability.BROWSE):
            return False
        return self.all_tenants or any(is_subset_match(scope, grant) for grant in self.grants)

    def visible_record(self, record: MemoryRecord | None, record_id: str) -> MemoryRecord:
        """``record`` if the user may see it; otherwise :class:`NotVisible` (missing looks the same)."""
        if record is None or not self.allows(record.scope):
            raise NotVisible(f"Memory record {record_id}")
        return record

    def resolve(self, requested: Mapping[str, str]) -> ScopeResolution:
        """The filter to run for ``requested``, confined to the grants.

        A filter inside a grant runs as asked. A broader one (``tenant=acme`` for a user
        granted ``tenant=acme,team=ops``) is narrowed to the one grant it overlaps; if
        it overlaps several, :class:`AmbiguousScope` lists them; if none,
        :class:`NotVisible`.
        """
        scope = canonical_scope(requested)
        if not self.can(Ability.BROWSE):
            raise NotVisible(f"Scope {format_scope(scope)}")
        if self.all_tenants or any(is_subset_match(scope, grant) for grant in self.grants):
            return ScopeResolution(scope)
        overlapping = [grant for grant in self.grants if _consistent(scope, grant)]
        if not overlapping:
            raise NotVisible(f"Scope {format_scope(scope)}")
        if len(overlapping) > 1:
            raise AmbiguousScope([{**scope, **grant} for grant in overlapping])
        grant = overlapping[0]
        return ScopeResolution(canonical_scope({**scope, **grant}), narrowed_by=grant)

    def scope_choices(self) -> list[Scope]:
        """Starting points for a user who has not picked a scope: their grants."""
        return list(self.grants)


def _consistent(scope: Mapping[str, str], grant: Mapping[str, str]) -> bool:
    """No key has different values in the two filters, so their union matches something."""
    return all(scope.get(key, value) == value for key, value in grant.items())


def role_of(user: User | AnonymousUser) -> Role | None:
    """The user's highest role (superusers are admins)."""
    if not user.is_authenticated or not user.is_active:
        return None
    if getattr(user, "is_superuser", False):
        return ROLES_BY_SLUG["admin"]
    groups = set(user.groups.values_list("name", flat=True))
    held = [role for role in ROLES if role.group in groups]
    return held[-1] if held else None


def access_context(request: HttpRequest) -> dict[str, Access]:
    """``access`` in every template (the header names the role on every page, error pages
    included); a view's own ``access`` is the same object. An account without a role has
    none: the page it gets is the one that says so."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    try:
        return {"access": access_for(request)}
    except NoRole:
        return {}


def access_for(request: HttpRequest) -> Access:
    """The :class:`Access` of the request's user, built once per request; an account
    without a role is :class:`NoRole` on every page."""
    cached = getattr(request, "_memory_access", None)
    if isinstance(cached, Access):
        return cached
    user = request.user
    role = role_of(user)
    if role is None or not isinstance(user, User):
        raise NoRole(user.get_username())
    abilities = frozenset(a for a in Ability if user.has_perm(a.perm)) | role.abilities
    grants = tuple(grant.scope for grant in ScopeGrant.objects.filter(user=user))
    access = Access(
        username=user.get_username(),
        role=role,
        abilities=abilities,
        grants=grants,
        all_tenants=Ability.ALL_TENANTS in abilities,
    )
    request._memory_access = access  # type: ignore[attr-defined]
    return access


# --- managing roles and grants (the memory_user command) -------------------------------


@transaction.atomic
def set_role(user: User, role: Role) -> None:
    """Make ``role`` the user's only dashboard role."""
    ensure_roles()
    role_groups = Group.objects.filter(name__in=[r.group for r in ROLES])
    user.groups.remove(*role_groups)
    user.groups.add(Group.objects.get(name=role.group))


def add_grants(user: User, scopes: Iterable[Mapping[str, str]]) -> list[Scope]:
    """Grant each scope (validated, canonical); granting one twice is a no-op."""
    added = []
    for scope in scopes:
        canonical = canonical_scope(scope)
        _grant, created = ScopeGrant.objects.get_or_create(user=user, scope_json=scope_json(canonical))
        if created:
            added.append(canonical)
    return added


def remove_grants(user: User, scopes: Iterable[Mapping[str, str]]) -> int:
    texts = [scope_json(canonical_scope(scope)) for scope in scopes]
    deleted, _ = ScopeGrant.objects.filter(user=user, scope_json__in=texts).delete()
    return deleted


def grants_of(user: User) -> list[Scope]:
    return [json.loads(text) for text in ScopeGrant.objects.filter(user=user).values_list("scope_json", flat=True)]
