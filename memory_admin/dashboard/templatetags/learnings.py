"""Template filters of the learnings pages: a state in words, a version's short form, a
share of a budget."""

from __future__ import annotations

from collections.abc import Mapping

from django import template
from django.http import QueryDict

from memory_admin.promotion import Transition
from memory_admin.reports.learnings import STATE_WORDS
from memory_admin.scope import format_scope

register = template.Library()


@register.filter
def state_word(state: str) -> str:
    """``pending_review`` → ``pending review``."""
    return STATE_WORDS.get(state, state)


@register.filter
def short(version: str | None) -> str:
    """A content hash as people quote it: its first 12 characters."""
    return (version or "")[:12]


@register.filter
def share(part: int | None, whole: int | None) -> int:
    """``part`` as a whole percentage of ``whole`` (0 without a whole)."""
    if not whole or part is None:
        return 0
    return round(100 * part / whole)


@register.simple_tag
def query(params: QueryDict, **changes: object) -> str:
    """``params`` (a page's query string, as its form read it) with ``changes`` — a name
    set to ``None`` or an empty string is dropped — as ``?…``. Unlike ``{% querystring %}``
    it does not read the request, so a fragment rendered after a POST links right."""
    changed = params.copy()
    for name, value in changes.items():
        changed.pop(name, None)
        if value is not None and value != "":
            changed[name] = str(value)
    text = changed.urlencode()
    return f"?{text}" if text else "?"


@register.filter
def decided_by(transition: Transition) -> str:
    """Who made a transition, in words: a person's name, the gate chain, or the store."""
    if transition.by == "person":
        return transition.actor
    return "the gate chain" if transition.by == "gate" else "the store"


@register.filter
def scope_param(scope: Mapping[str, str]) -> str:
    """A scope as a ``scope=`` query value takes it (plain text, for ``urlencode``)."""
    return format_scope(scope)
