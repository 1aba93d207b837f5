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
