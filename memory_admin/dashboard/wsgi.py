"""The WSGI entry point: what `memory-admin serve` (gunicorn) runs; production settings by default."""

from __future__ import annotations

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_admin.dashboard.settings.prod")
application = get_wsgi_application()
