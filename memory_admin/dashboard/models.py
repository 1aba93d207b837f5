"""The dashboard's own tables (in its Django database, never in the memory file)."""

from __future__ import annotations

import json
from typing import ClassVar

from django.conf import settings
from django.db import models

from memory_admin.scope import Scope, format_scope


class ScopeGrant(models.Model):
    """One scope filter a user may see: every record whose scope contains its pairs.

    A user holds any number of grants; what they see is the union. The scope is stored
    in its canonical JSON form (sorted keys), so equal grants are equal strings.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="scope_grants")
    scope_json = models.TextField(help_text='the canonical scope, e.g. {"tenant":"acme"}')
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering: ClassVar[list[str]] = ["user_id", "scope_json"]
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.UniqueConstraint(fields=["user", "scope_json"], name="unique_scope_grant"),
        ]

    def __str__(self) -> str:
        return f"{self.user_id}: {format_scope(self.scope)}"

    @property
    def scope(self) -> Scope:
        loaded: Scope = json.loads(self.scope_json)
        return loaded


class MemoryAccess(models.Model):
    """No table: the anchor of the dashboard's permissions, which roles (groups) hold."""

    class Meta:
        managed = False
        default_permissions = ()
        permissions = (
            ("browse_memory", "Browse and search memory records within one's grants"),
            ("curate_memory", "Invalidate and correct memory records"),
            ("forget_memory", "Delete memory records and erase scopes"),
            ("see_all_tenants", "See every tenant without scope grants"),
        )

    def __str__(self) -> str:
        return "memory access"


class AuditEntry(models.Model):
    """One curation or privacy action taken through the dashboard: who, when, what, to
    which ids or scope, why, and with what counts.

    It never holds memory content — ids, scopes, the reason the person typed and
    counts only — so an erasure's receipt survives the erasure without keeping what
    was erased. An entry is written *before* the store is touched (``started``) and
    completed after (``done`` or ``failed``), so an action that dies half-way still
    leaves its trace.
    """

    class Action(models.TextChoices):
        INVALIDATE = "invalidate", "invalidate a record"
        CORRECT = "correct", "correct a record"
        DELETE = "delete", "delete a record"
        ERASE = "erase", "erase a scope"
        SWEEP = "sweep", "sweep expired records"
        EXPORT = "export", "export records"
        EXPORT_AUDIT = "export_audit", "export the audit log"
        # a person's decisions on what agents learned (the review pages)
        APPROVE = "approve", "approve a learning"
        REJECT = "reject", "reject a learning"
        EDIT_APPROVE = "edit_approve", "edit and approve a learning"
        PICK = "pick", "pick a conflict's survivor"
        ROLLBACK = "rollback", "roll back a learning"
        PROPOSAL_ACCEPT = "proposal_accept", "accept a gardening proposal"
        PROPOSAL_REJECT = "proposal_reject", "reject a gardening proposal"
        EXPORT_LEARNED = "export_learned", "export what agents learned"
        # what the identity provider caused (single sign-on: dashboard/sso/)
        SSO_USER = "sso_user", "identity provider: first sign-in"
        SSO_ROLE_ADD = "sso_role_add", "identity provider: role given"
        SSO_ROLE_REMOVE = "sso_role_remove", "identity provider: role taken away"
        SSO_GRANT_ADD = "sso_grant_add", "identity provider: scope granted"
        SSO_GRANT_REMOVE = "sso_grant_remove", "identity provider: scope grant taken away"
        SSO_REFUSED = "sso_refused", "identity provider: sign-in refused"
        SSO_ENDED = "sso_ended", "identity provider: access ended"

    class Outcome(models.TextChoices):
        STARTED = "started", "started"
        DONE = "done", "done"
        FAILED = "failed", "failed"

    at = models.DateTimeField(db_index=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    actor = models.CharField(max_length=150, help_text="the username at the time (kept if the user goes)")
    role = models.CharField(max_length=40, blank=True)
    action = models.CharField(max_length=20, choices=Action.choices)
    tenant = models.CharField(max_length=200, db_index=True)
    scope_json = models.TextField(help_text="the canonical scope acted on (a record's own scope for record actions)")
    record_ids = models.JSONField(default=list, blank=True)
    reason = models.TextField(blank=True)
    counts = models.JSONField(default=dict, blank=True)
    outcome = models.CharField(max_length=10, choices=Outcome.choices, default=Outcome.STARTED)
    error = models.TextField(blank=True)
    backend = models.CharField(max_length=40, blank=True, help_text="the memory store's backend")

    class Meta:
        ordering: ClassVar[list[str]] = ["-id"]
        verbose_name_plural = "audit entries"

    def __str__(self) -> str:
        return f"#{self.pk} {self.actor} {self.action} {format_scope(self.scope)} ({self.outcome})"

    @property
    def scope(self) -> Scope:
        loaded: Scope = json.loads(self.scope_json)
        return loaded

    @property
    def scope_text(self) -> str:
        return format_scope(self.scope)


class IdentityLink(models.Model):
    """A dashboard user who signs in through the identity provider: which subject at
    which issuer they are, and which roles the provider gave them (and so may take
    away again; a role given locally is never the provider's to remove)."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="identity_link")
    issuer = models.CharField(max_length=500)
    subject = models.CharField(max_length=255, help_text="the provider's unchanging id of the person (sub)")
    managed_roles = models.JSONField(default=list, blank=True, help_text="role slugs the provider gave")
    created_at = models.DateTimeField(auto_now_add=True)
    last_sign_in_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.UniqueConstraint(fields=["issuer", "subject"], name="unique_identity_link"),
        ]

    def __str__(self) -> str:
        return f"{self.user_id}: {self.subject} at {self.issuer}"


class ProviderGrant(models.Model):
    """Marks a :class:`ScopeGrant` the identity provider gave, so the provider may take
    it away again; an unmarked grant was given locally and stays whatever the provider
    says. Revoking the grant locally removes the mark with it."""

    grant = models.OneToOneField(ScopeGrant, on_delete=models.CASCADE, related_name="provider_mark")
    source = models.CharField(max_length=1000, blank=True, help_text="the claim value that gave it")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"provider grant {self.grant_id}"
