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
