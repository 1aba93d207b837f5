"""Small presentation helpers for memory records in templates.

User text — a record's content, key, tags and provenance, reasons, scope values — is
printed through :func:`isolate`: inside ``<bdi>`` (so its direction cannot leak into
the text around it: an author line cannot be spoofed), with every bidirectional control
character shown as a visible marker (``⟨U+202E⟩``) rather than obeyed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from django import template
from django.utils.html import conditional_escape, format_html_join
from django.utils.safestring import SafeString, mark_safe

from memory_admin.records import MemoryRecord, Provenance, utc_now
from memory_admin.reports.listing import record_state as state_at
from memory_admin.scope import format_scope

register = template.Library()


@register.filter
def record_state(record: MemoryRecord, at: datetime | None = None) -> str:
    """``superseded``, ``invalidated``, ``expired`` or ``live`` — now, or at ``at``
    (an as-of listing), where it may also be ``unwritten``."""
    return state_at(record, at or utc_now())


@register.filter
def as_of_query(moment: datetime | None) -> str:
    """``?as_of=2026-10-27T14:30`` for a link that keeps an as-of moment (``""`` without one)."""
    return f"?as_of={moment.astimezone(UTC):%Y-%m-%dT%H:%M}" if moment is not None else ""


BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
"""The marks, embeddings, overrides and isolates of the Unicode bidirectional algorithm."""


def mark_bidi(text: str) -> str:
    """``text`` (already escaped) with each bidirectional control as a visible marker."""
    if not BIDI_CONTROLS.intersection(text):
        return text
    return "".join(
        f'<span class="bidi-mark" title="an invisible direction control">⟨U+{ord(c):04X}⟩</span>'
        if c in BIDI_CONTROLS
        else c
        for c in text
    )


@register.filter(is_safe=True)
def isolate(value: object) -> SafeString:
    """``value`` escaped, direction-isolated (``<bdi>``) and its direction controls shown."""
    text = "" if value is None else str(value)
    return mark_safe(f"<bdi>{mark_bidi(str(conditional_escape(text)))}</bdi>")


@register.filter
def scope_text(scope: Mapping[str, str]) -> SafeString:
    return isolate(format_scope(scope))


@register.filter
def provenance(value: Provenance) -> SafeString:
    """``by dana · via chat · conversation c-17 · run r-3``, each value isolated."""
    parts = [
        (label, field)
        for label, field in (
            ("by", value.author),
            ("via", value.source),
            ("conversation", value.conversation_id),
            ("run", value.run_id),
        )
        if field
    ]
    if not parts:
        return mark_safe("")
    return format_html_join(" · ", "{} {}", ((label, isolate(field)) for label, field in parts))


@register.filter
def scope_pairs(scope: Mapping[str, str]) -> list[str]:
    """The scope's ``key=value`` pairs in display order (tenant first), each as written in
    scope text (escaped values hold no raw comma, so splitting the text is exact)."""
    return format_scope(scope).split(",")


@register.filter
def as_json(value: Any) -> str:
    """Pretty JSON for targets and payloads (pydantic models or plain data)."""
    if hasattr(value, "model_dump"):
        value = value.model_dump(mode="json", exclude_none=True)
    return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True)


@register.filter
def worth_showing(part: float | None) -> float | None:
    """A score's part as the Match column prints it (two decimals), or ``None`` when it
    would print as 0.00: a semantic hit's length part is a few thousandths at times."""
    return part if part is not None and round(part, 2) != 0 else None
