# mypy: disable-error-code="import-untyped"
# (the django-stubs plugin reads every installed app's models; django-axes ships no type hints)
from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.signals import connection_created
from django.db.models.signals import post_migrate


def secure_delete(sender: object, connection: BaseDatabaseWrapper, **_: Any) -> None:
    """SQLite overwrites what it deletes or replaces in the dashboard's database, so a
    scrubbed audit entry leaves no old bytes in free pages (docs/privacy.md)."""
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA secure_delete = ON")


class DashboardConfig(AppConfig):
    name = "memory_admin.dashboard"
    label = "dashboard"
    verbose_name = "memory_admin dashboard"

    def ready(self) -> None:
        from memory_admin.dashboard.permissions import ensure_roles
        from memory_admin.dashboard.sso import checks  # noqa: F401 (registers single sign-on's system check)

        # the role groups exist (with their permissions) after every migrate
        connection_created.connect(secure_delete, dispatch_uid="memory_admin.dashboard.secure_delete")
        post_migrate.connect(ensure_roles, sender=self, dispatch_uid="memory_admin.dashboard.ensure_roles")
