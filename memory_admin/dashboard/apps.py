from __future__ import annotations

from django.apps import AppConfig
from django.db.models.signals import post_migrate


class DashboardConfig(AppConfig):
    name = "memory_admin.dashboard"
    label = "dashboard"
    verbose_name = "memory_admin dashboard"

    def ready(self) -> None:
        from memory_admin.dashboard.permissions import ensure_roles

        # the role groups exist (with their permissions) after every migrate
        post_migrate.connect(ensure_roles, sender=self, dispatch_uid="memory_admin.dashboard.ensure_roles")
