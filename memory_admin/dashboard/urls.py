"""The dashboard's URL map (DESIGN.md, "The dashboard"). Issue 5 adds recall, curation,
health, audit and export beside these."""

from __future__ import annotations

from django.urls import include, path, register_converter

from memory_admin.dashboard.views import browse, records, scopes


class RecordIdConverter:
    """Record ids as stores issue them; anything else is a 404 before a view runs."""

    regex = r"[A-Za-z0-9_.:\-]{1,64}"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(RecordIdConverter, "record_id")

dashboard_patterns = [
    path("", browse.browse, name="browse"),
    path("records/<record_id:record_id>/", records.record_detail, name="record"),
    path("scopes/", scopes.scope_summary, name="scope"),
]

urlpatterns = [
    path("accounts/", include("django.contrib.auth.urls")),
    path("", include((dashboard_patterns, "dashboard"))),
]
