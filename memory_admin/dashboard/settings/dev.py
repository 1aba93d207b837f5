"""Local development: debug on, the demo memory file under ./var."""

from __future__ import annotations

from memory_admin.dashboard.settings.base import *  # noqa: F403
from memory_admin.dashboard.settings.base import env_bool

DEBUG = env_bool("DJANGO_DEBUG", True)

STATIC_ROOT = None  # runserver serves static files from the finders; nothing is collected
