"""Applying what the provider's claims give, within what the provider manages.

The provider adds roles and grants and takes away only those it added: each user's
:class:`IdentityLink` lists the roles it gave, and a :class:`ProviderGrant` marks each
scope grant it gave. A role or grant given locally (``memory-admin user …``) is never
the provider's to remove, and one the person already held locally is not taken over
when the provider names it too. Every change is an audit-log entry: the person's
first sign-in, each role given or taken away, each grant given or taken away, a refused
sign-in and access ended at a re-check.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import Group, User
from django.db import IntegrityError, transaction
from django.utils import timezone

from memory_admin.dashboard import audit_log
from memory_admin.dashboard.models import AuditEntry, IdentityLink, ProviderGrant, ScopeGrant
from memory_admin.dashboard.permissions import ROLES, ROLES_BY_SLUG, Access, ensure_roles, role_of
from memory_admin.dashboard.sso.backend import VerifiedSignIn
from memory_admin.dashboard.sso.claims import ClaimsRefused, MappedAccess, Refusal, map_claims
from memory_admin.dashboard.sso.config import ProviderConfig
from memory_admin.dashboard.sso.failures import Failure, SignInFailed
from memory_admin.scope import Scope, format_scope

log = logging.getLogger(__name__)

MAX_USERNAME = 150
_NOT_IN_USERNAME = re.compile(r"[^\w.@+-]")

REFUSALS = {
    Refusal.NO_ROLE: Failure.NO_ROLE,
    Refusal.MISSING: Failure.CLAIMS_MISSING,
    Refusal.OVERSIZED: Failure.CLAIMS_OVERSIZED,
    Refusal.MALFORMED: Failure.CLAIMS_MALFORMED,
}


@dataclass(frozen=True)
class Change:
    action: AuditEntry.Action
    what: str  # a role's group name, or a scope as text

    def __str__(self) -> str:
        verb = (
            "added" if self.action in (AuditEntry.Action.SSO_ROLE_ADD, AuditEntry.Action.SSO_GRANT_ADD) else "removed"
        )
        return f"{self.what} {verb}"


@dataclass(frozen=True)
class SignedIn:
    user: User
    link: IdentityLink
    changes: tuple[Change, ...]
    created: bool


def complete_sign_in(config: ProviderConfig, verified: VerifiedSignIn) -> SignedIn:
    """The dashboard user ``verified`` signs in as, created on a first sign-in, with
    roles and grants synchronised to the claims; or :class:`SignInFailed`.

    Nothing is created or granted unless the claims map to a role. A known person
    whose claims no longer map to one loses what the provider gave them (and is
    refused); a missing, malformed or oversized claim changes nothing.
    """
    try:
        mapped = map_claims(verified.claims, config.rules)
    except ClaimsRefused as refused:
        link = (
            IdentityLink.objects.filter(issuer=config.issuer, subject=verified.subject).select_related("user").first()
        )
        if link is not None:
            with transaction.atomic():
                if refused.reason is Refusal.NO_ROLE:
                    synchronise(config, link, MappedAccess(roles={}, grants={}), when="at sign-in")
                _record(link.user, AuditEntry.Action.SSO_REFUSED, {}, refused.detail, issuer=config.issuer)
        else:
            log.warning("single sign-on refused for a first sign-in (%s): %s", refused.reason, refused.detail)
        raise SignInFailed(REFUSALS[refused.reason], detail=refused.detail, log=refused.detail) from refused
    try:
        return _sign_in(config, verified, mapped)
    except IntegrityError:
        # the same person's first sign-in in two tabs at once: the other one made the
        # link; this one signs in to it
        return _sign_in(config, verified, mapped)


@transaction.atomic
def _sign_in(config: ProviderConfig, verified: VerifiedSignIn, mapped: MappedAccess) -> SignedIn:
    link = (
        IdentityLink.objects.select_for_update()
        .filter(issuer=config.issuer, subject=verified.subject)
        .select_related("user")
        .first()
    )
    created = link is None
    if link is None:
        user = User.objects.create_user(username=_new_username(verified.claims, config), email=_email(verified.claims))
        link = IdentityLink.objects.create(user=user, issuer=config.issuer, subject=verified.subject)
        _record(
            user,
            AuditEntry.Action.SSO_USER,
            {},
            f"first sign-in through {config.name}",
            issuer=config.issuer,
            subject=verified.subject,
        )
    user = link.user
    if not user.is_active:
        raise SignInFailed(Failure.ACCOUNT_DISABLED, log=f"{user.get_username()} is switched off locally")
    email = _email(verified.claims)
    if email and email != user.email:
        user.email = email
        user.save(update_fields=["email"])
    changes = synchronise(config, link, mapped, when="at sign-in")
    link.last_sign_in_at = timezone.now()
    link.save(update_fields=["last_sign_in_at", "managed_roles"])
    return SignedIn(user=user, link=link, changes=tuple(changes), created=created)


@transaction.atomic
def synchronise(config: ProviderConfig, link: IdentityLink, mapped: MappedAccess, *, when: str) -> list[Change]:
    """Make the provider-given roles and grants of ``link``'s user exactly ``mapped``'s,
    leaving every local one alone; each change audited. Saves ``link.managed_roles``."""
    ensure_roles()
    user = link.user
    claim = config.rules.groups_claim
    groups = {group.name: group for group in Group.objects.filter(name__in=[role.group for role in ROLES])}
    held = {role.slug for role in ROLES if user.groups.filter(name=role.group).exists()}
    given_before = {slug for slug in link.managed_roles if slug in ROLES_BY_SLUG}
    wanted = set(mapped.roles)
    add = wanted - held
    remove = (given_before - wanted) & held
    changes: list[Change] = []
    for slug in _in_role_order(add):
        user.groups.add(groups[ROLES_BY_SLUG[slug].group])
        changes.append(Change(AuditEntry.Action.SSO_ROLE_ADD, ROLES_BY_SLUG[slug].group))
    for slug in _in_role_order(remove):
        user.groups.remove(groups[ROLES_BY_SLUG[slug].group])
        changes.append(Change(AuditEntry.Action.SSO_ROLE_REMOVE, ROLES_BY_SLUG[slug].group))
    link.managed_roles = _in_role_order((given_before & wanted & held) | add)
    link.save(update_fields=["managed_roles"])

    existing = dict(ScopeGrant.objects.filter(user=user).values_list("scope_json", "id"))
    marked = set(ProviderGrant.objects.filter(grant__user=user).values_list("grant__scope_json", flat=True))
    granted: list[tuple[Scope, str]] = []
    for key, scope in mapped.grants.items():
        if key in existing:
            continue  # the provider's already, or a local grant it does not take over
        grant = ScopeGrant.objects.create(user=user, scope_json=key)
        source = mapped.grant_sources.get(key, "")
        ProviderGrant.objects.create(grant=grant, source=source[:1000])
        changes.append(Change(AuditEntry.Action.SSO_GRANT_ADD, format_scope(scope)))
        granted.append((scope, source))
    withdrawn: list[Scope] = []
    for key in sorted(marked - set(mapped.grants)):
        grant = ScopeGrant.objects.get(user=user, scope_json=key)
        withdrawn.append(grant.scope)
        grant.delete()  # its mark goes with it
        changes.append(Change(AuditEntry.Action.SSO_GRANT_REMOVE, format_scope(withdrawn[-1])))

    for slug in _in_role_order(add):
        group = ROLES_BY_SLUG[slug].group
        reason = f"{group}, {when}: {config.name}'s {claim} claim holds {mapped.roles[slug]}"
        _record(user, AuditEntry.Action.SSO_ROLE_ADD, {}, reason, role=group)
    for slug in _in_role_order(remove):
        group = ROLES_BY_SLUG[slug].group
        reason = f"{group}, {when}: no longer in {config.name}'s {claim} claim"
        _record(user, AuditEntry.Action.SSO_ROLE_REMOVE, {}, reason, role=group)
    for scope, source in granted:
        _record(user, AuditEntry.Action.SSO_GRANT_ADD, scope, f"{when}: {config.name}'s claim holds {source}")
    for scope in withdrawn:
        _record(user, AuditEntry.Action.SSO_GRANT_REMOVE, scope, f"{when}: no longer in {config.name}'s claims")
    if changes:
        log.info("single sign-on %s changed %s: %s", when, user.get_username(), ", ".join(map(str, changes)))
    return changes


def record_ended(user: User, config: ProviderConfig, why: str) -> None:
    _record(user, AuditEntry.Action.SSO_ENDED, {}, why, issuer=config.issuer)


def _record(user: User, action: AuditEntry.Action, scope: Mapping[str, str], reason: str, **counts: Any) -> None:
    role = role_of(user)
    access = Access(username=user.get_username(), role=role, abilities=frozenset())
    entry = audit_log.start(access, action, scope, reason=reason[:1000])
    audit_log.finish(entry, AuditEntry.Outcome.DONE, **counts)


def _in_role_order(slugs: Iterable[str]) -> list[str]:
    wanted = set(slugs)
    return [role.slug for role in ROLES if role.slug in wanted]


def _email(claims: Mapping[str, Any]) -> str:
    email = claims.get("email")
    return email[:254] if isinstance(email, str) and "@" in email else ""


def _new_username(claims: Mapping[str, Any], config: ProviderConfig) -> str:
    """A username from the claims (``OIDC_USERNAME_CLAIM``, else the e-mail, else the
    subject), made unique: someone already holding the name — a local account, or
    another person at the provider — keeps it, and this person gets ``name-2``."""
    base = ""
    for name in (config.username_claim, "preferred_username", "email", "sub"):
        value = claims.get(name)
        if isinstance(value, str) and value.strip():
            base = _NOT_IN_USERNAME.sub("_", value.strip())[: MAX_USERNAME - 8]
            break
    base = base or "user"
    candidate, number = base, 1
    while User.objects.filter(username__iexact=candidate).exists():
        number += 1
        candidate = f"{base}-{number}"
    return candidate
