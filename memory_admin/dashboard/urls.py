"""The dashboard's URL map (DESIGN.md, "The dashboard").

Pages that only read answer GET; every action that changes memory is a POST-only
endpoint (``…/run/``, ``/health/sweep/``) behind a confirmation page of its own (for a
decision on a learning, the learning's page, or the inbox page it ticks).
"""

from __future__ import annotations

from django.urls import include, path, register_converter

from memory_admin.dashboard.views import (
    audit,
    browse,
    compositions,
    curation,
    export,
    health,
    learnings,
    privacy,
    recall,
    records,
    scopes,
    signin,
    sso,
)
from memory_admin.dashboard.views.healthz import healthz


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
    # curation (curators and up)
    path("records/<record_id:record_id>/invalidate/", curation.invalidate_form, name="invalidate"),
    path("records/<record_id:record_id>/invalidate/run/", curation.invalidate, name="invalidate_run"),
    path("records/<record_id:record_id>/correct/", curation.correct_form, name="correct"),
    path("records/<record_id:record_id>/correct/run/", curation.correct, name="correct_run"),
    # privacy (privacy officers and up)
    path("records/<record_id:record_id>/delete/", privacy.delete_form, name="delete"),
    path("records/<record_id:record_id>/delete/run/", privacy.delete, name="delete_run"),
    path("scopes/erase/", privacy.erase_preview, name="erase"),
    path("scopes/erase/confirm/", privacy.erase_confirm, name="erase_confirm"),
    path("scopes/erase/run/", privacy.erase, name="erase_run"),
    # recall
    path("recall/", recall.recall_overview, name="recall"),
    path("recall/events/<int:event_id>/", recall.recall_event, name="recall_event"),
    path("recall/preview/", recall.recall_preview, name="recall_preview"),
    # what agents learned: review (deciding: curators and up), compositions, over time
    path("learnings/", learnings.inbox, name="learnings"),
    path("learnings/decide/run/", learnings.decide_many, name="learnings_decide"),
    path("learnings/<record_id:record_id>/", learnings.learning, name="learning"),
    path("learnings/<record_id:record_id>/decide/run/", learnings.decide, name="learning_decide"),
    path("learnings/<record_id:record_id>/edit/", learnings.edit, name="learning_edit"),
    path("learnings/<record_id:record_id>/edit/run/", learnings.edit_run, name="learning_edit_run"),
    path("learnings/<record_id:record_id>/rollback/", learnings.rollback, name="learning_rollback"),
    path("proposals/<int:proposal_id>/settle/run/", learnings.settle_proposal, name="proposal_settle"),
    path("learned/", learnings.learned, name="learned"),
    path("learned/export.csv", learnings.learned_export_csv, name="learned_export_csv"),
    path("learned/export.jsonl", learnings.learned_export_jsonl, name="learned_export_jsonl"),
    path("compositions/", compositions.compositions, name="compositions"),
    path("compositions/prompt/", compositions.composition, name="composition"),
    path("compositions/diff/", compositions.composition_changes, name="composition_diff"),
    # gardening, audit, export
    path("health/", health.health, name="health"),
    path("health/sweep/", health.sweep, name="sweep"),
    path("audit/", audit.audit_log, name="audit"),
    path("audit/<int:entry_id>/", audit.audit_entry, name="audit_entry"),
    path("audit/export.csv", audit.audit_export_csv, name="audit_export_csv"),
    path("audit/export.jsonl", audit.audit_export_jsonl, name="audit_export_jsonl"),
    path("export.jsonl", export.export_jsonl, name="export_jsonl"),
    path("export.csv", export.export_csv, name="export_csv"),
]

urlpatterns = [
    path("healthz", healthz, name="healthz"),  # load balancers: no sign-in, no details
    # sign-in and sign-out: a password (while MEMORY_ADMIN_LOCAL_SIGNIN is on) or the
    # identity provider (when OIDC_ISSUER is set); Django's own auth views behind them
    path("accounts/login/", signin.SignInView.as_view(), name="login"),
    path("accounts/logout/", sso.SignOutView.as_view(), name="logout"),
    path("accounts/sso/start/", sso.start, name="sso_start"),
    path("accounts/sso/callback/", sso.callback, name="sso_callback"),
    path("accounts/sso/ended/", sso.ended, name="sso_ended"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("", include((dashboard_patterns, "dashboard"))),
]
