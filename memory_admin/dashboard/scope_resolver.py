"""Scope handling for every page: the ``scope`` form field, and the resolver that turns
the scope a request asked for into the one a page shows — confined to the user's
grants — or the choices to offer instead.

Templates render the picker with ``dashboard/_scope_picker.html`` and the choices with
``dashboard/_choices.html``; :func:`scope_context` is what both read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django import forms

from memory_admin.dashboard.permissions import Access, AmbiguousScope, ScopeResolution
from memory_admin.errors import MemoryValidationError
from memory_admin.scope import TENANT_KEY, Scope, format_scope, parse_scope_text
from memory_admin.store.protocol import AdminMemoryStore

MAX_SCOPE_TEXT = 1000
TENANT_CHOICES = 200  # tenants an admin without a scope filter is offered


class ScopeField(forms.CharField):
    """A scope written as text (``tenant=acme,user=dana``), cleaned to a canonical
    :data:`~memory_admin.scope.Scope`; blank is ``None`` (or, when required, an error).
    A malformed scope is a field error with the library's message."""

    def __init__(self, *, required: bool = False, hidden: bool = False, label: str = "Scope") -> None:
        super().__init__(
            required=required,
            max_length=MAX_SCOPE_TEXT,
            label=label,
            help_text="key=value pairs, e.g. tenant=acme,user=dana",
            widget=forms.HiddenInput if hidden else forms.TextInput,
        )

    def clean(self, value: Any) -> Scope | None:
        text: str = super().clean(value)  # length and required, on the text as typed
        if not text:
            return None
        try:
            return parse_scope_text(text)
        except MemoryValidationError as exc:
            raise forms.ValidationError(exc.message) from None


@dataclass(frozen=True)
class ScopeChoice:
    scope: Scope
    records: int | None = None

    @property
    def scope_text(self) -> str:
        return format_scope(self.scope)


@dataclass(frozen=True)
class PickScope:
    """No single scope to show: the user picks one of ``choices`` (``ambiguous`` when the
    asked scope spans several grants)."""

    choices: list[ScopeChoice]
    ambiguous: bool = False


def resolve_scope(
    store: AdminMemoryStore, access: Access, requested: Scope | None, *, take_only_choice: bool = True
) -> ScopeResolution | PickScope:
    """The scope a page shows: the one requested, narrowed to the grants; with none
    requested, the user's only starting scope (unless ``take_only_choice`` is off) — or
    the choices to offer. A scope outside every grant raises
    :class:`~memory_admin.dashboard.permissions.NotVisible`."""
    if requested is None:
        choices = scope_choices(store, access)
        if len(choices) != 1 or not take_only_choice:
            return PickScope(choices)
        requested = choices[0].scope
    try:
        return access.resolve(requested)
    except AmbiguousScope as exc:
        return PickScope([ScopeChoice(s) for s in exc.options], ambiguous=True)


def scope_choices(store: AdminMemoryStore, access: Access) -> list[ScopeChoice]:
    """Where a user without a scope filter can start: their grants, or (admins) every tenant."""
    if not access.sees_anything:
        return []
    if not access.all_tenants:
        return [ScopeChoice(grant) for grant in access.scope_choices()]
    tenants = next((f for f in store.scope_facets(values_per_key=TENANT_CHOICES) if f.key == TENANT_KEY), None)
    if tenants is None:
        return []
    return [ScopeChoice({TENANT_KEY: value.value}, value.records) for value in tenants.values]


def scope_context(resolved: ScopeResolution | PickScope) -> dict[str, Any]:
    """What a page's template reads about its scope: the one shown (``scope``,
    ``scope_text``, ``narrowed_by``) or the choices (``choices``, ``ambiguous``)."""
    if isinstance(resolved, PickScope):
        return {"choices": resolved.choices, "ambiguous": resolved.ambiguous}
    return {
        "scope": resolved.scope,
        "scope_text": format_scope(resolved.scope),
        "narrowed_by": format_scope(resolved.narrowed_by) if resolved.narrowed_by else None,
    }
