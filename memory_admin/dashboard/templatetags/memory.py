"""Small presentation helpers for memory records in templates."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django import template

from memory_admin.records import MemoryRecord, Provenance, utc_now
from memory_admin.reports.listing import record_state as state_at
from memory_admin.reports.timeline import provenance_text
from memory_admin.scope import format_scope

register = template.Library()


@register.filter
def record_state(record: MemoryRecord, at: datetime | None = None) -> str:
    """``superseded``, ``invalidated``, ``expired`` or ``live`` — now, or at ``at``
    (an as-of listing), where it may also be ``unwritten``."""
    return state_at(record, at or utc_now())


@register.filter
def scope_text(scope: Mapping[str, str]) -> str:
    return format_scope(scope)


@register.filter
def scope_pairs(scope: Mapping[str, str]) -> list[str]:
    """The scope's ``key=value`` pairs in display order (tenant first), each as written in
    scope text (escaped values hold no raw comma, so splitting the text is exact)."""
    return format_scope(scope).split(",")


@register.filter
def provenance(value: Provenance) -> str:
    return provenance_text(value)


@register.filter
def as_json(value: Any) -> str:
    """Pretty JSON for targets and payloads (pydantic models or plain data)."""
    if hasattr(value, "model_dump"):
        value = value.model_dump(mode="json", exclude_none=True)
    return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True)
