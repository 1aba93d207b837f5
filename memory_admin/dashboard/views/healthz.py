"""``/healthz`` — for load balancers and uptime checks: no sign-in, and nothing in the
answer but whether the dashboard is up and whether its memory store answers."""

from __future__ import annotations

import logging

from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from memory_admin.dashboard.stores import get_store

log = logging.getLogger(__name__)

PROBE_ID = "healthz-probe"  # no record has it: the lookup touches the database and finds nothing


@login_not_required
@never_cache
@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    """200 ``{"status": "ok", "store": "ok"}``, or 503 with ``"store": "unavailable"`` —
    never the reason, which goes to the log: an error message can name hosts and paths."""
    try:
        get_store().get(PROBE_ID)
    except Exception:
        log.exception("healthz: the memory store did not answer")
        return JsonResponse({"status": "unavailable", "store": "unavailable"}, status=503)
    return JsonResponse({"status": "ok", "store": "ok"})
