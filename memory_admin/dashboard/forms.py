"""Query-string forms: every filter of a page lives in its URL and is parsed here.

A bad parameter — an unknown name, a malformed scope or date, a value too long — is a
form error the page shows inline with status 400; it never reaches the store.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from django import forms
from django.http import QueryDict

from memory_admin.errors import MemoryValidationError
from memory_admin.records import KINDS, MAX_KEY_CHARS, MAX_TAG_CHARS, Kind, normalize_key, normalize_tag
from memory_admin.scope import Scope, ScopeMatch, parse_scope_text
from memory_admin.store import RecordListQuery

MAX_SCOPE_TEXT = 1000
MAX_QUERY_TEXT = 500
MAX_CURSOR = 200
DATETIME_FORMATS = ["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d"]


@dataclass(frozen=True)
class BrowseFilters:
    """The browser's filters, parsed and validated."""

    scope: Scope | None = None
    match: ScopeMatch = "subset"
    q: str | None = None
    kinds: tuple[Kind, ...] = ()
    tag: str | None = None
    key: str | None = None
    key_match: Literal["exact", "prefix"] = "exact"
    invalidated: bool = False
    expired: bool = False
    as_of: datetime | None = None
    after: str | None = None

    def list_query(self, scope: Scope, limit: int) -> RecordListQuery:
        """The store listing for these filters, run under ``scope`` (the grant-confined one)."""
        return RecordListQuery.model_validate(
            {
                "search": {
                    "scope": scope,
                    "scope_match": self.match,
                    "query": self.q,
                    "kinds": self.kinds or None,
                    "tags": [self.tag] if self.tag else None,
                    "keys": [self.key] if self.key else None,
                    "key_match": self.key_match,
                    "as_of": self.as_of,
                    "include_invalidated": self.invalidated,
                    "limit": limit,
                },
                "include_expired": self.expired,
                "cursor": self.after,
            }
        )

    @property
    def narrowing(self) -> bool:
        """True when anything beyond the scope filters the listing."""
        return bool(self.q or self.kinds or self.tag or self.key or self.as_of)


class QueryStringForm(forms.Form):
    """A GET form that refuses parameters it does not know (a typo is not silently ignored)."""

    def __init__(self, data: QueryDict | Mapping[str, Any] | None = None) -> None:
        super().__init__(data)
        self.unknown = sorted(set(data or ()) - set(self.fields))

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if self.unknown:
            shown = ", ".join(name[:40] for name in self.unknown[:5])
            raise forms.ValidationError(
                f"Unknown parameter: {shown}. This page understands {', '.join(self.fields)}.", code="unknown"
            )
        return cleaned


def _scope_field(required: bool = False) -> forms.CharField:
    return forms.CharField(
        required=required,
        max_length=MAX_SCOPE_TEXT,
        label="Scope",
        help_text="key=value pairs, e.g. tenant=acme,user=dana",
        widget=forms.TextInput(attrs={"placeholder": "tenant=acme,user=dana", "spellcheck": "false"}),
    )


def clean_scope_text(text: str) -> Scope | None:
    if not text.strip():
        return None
    try:
        return parse_scope_text(text)
    except MemoryValidationError as exc:
        raise forms.ValidationError(exc.message) from None


class BrowseForm(QueryStringForm):
    scope = _scope_field()
    match = forms.ChoiceField(
        required=False,
        choices=[("subset", "within this scope (subset)"), ("visible", "visible from this scope")],
        label="Match",
    )
    q = forms.CharField(
        required=False,
        max_length=MAX_QUERY_TEXT,
        label="Search",
        widget=forms.TextInput(attrs={"type": "search", "placeholder": "words in content or tags", "accesskey": "s"}),
    )
    kind = forms.MultipleChoiceField(
        required=False, choices=[(k, k) for k in KINDS], widget=forms.CheckboxSelectMultiple, label="Kind"
    )
    tag = forms.CharField(required=False, max_length=MAX_TAG_CHARS, label="Tag")
    key = forms.CharField(
        required=False,
        max_length=MAX_KEY_CHARS + 1,
        label="Key",
        help_text="exact slot name, or a prefix ending in * (travel.*)",
    )
    invalidated = forms.BooleanField(required=False, label="include invalidated")
    expired = forms.BooleanField(required=False, label="include expired")
    as_of = forms.DateTimeField(
        required=False,
        input_formats=DATETIME_FORMATS,
        label="As of (UTC)",
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
    )
    after = forms.CharField(required=False, max_length=MAX_CURSOR, widget=forms.HiddenInput)

    def clean_scope(self) -> Scope | None:
        return clean_scope_text(self.cleaned_data.get("scope") or "")

    def clean_tag(self) -> str | None:
        text = self.cleaned_data.get("tag") or ""
        try:
            return normalize_tag(text) if text.strip() else None
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None

    def clean_key(self) -> str | None:
        text = (self.cleaned_data.get("key") or "").strip()
        if not text:
            return None
        try:
            return normalize_key(text.removesuffix("*")) + ("*" if text.endswith("*") else "")
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None

    def filters(self) -> BrowseFilters:
        """The validated filters (call after :meth:`is_valid`)."""
        data = self.cleaned_data
        key: str | None = data["key"]
        prefix = key is not None and key.endswith("*")
        return BrowseFilters(
            scope=data["scope"],
            match="visible" if data["match"] == "visible" else "subset",
            q=data["q"] or None,
            kinds=tuple(data["kind"]),
            tag=data["tag"],
            key=key.removesuffix("*") if key else None,
            key_match="prefix" if prefix else "exact",
            invalidated=data["invalidated"],
            expired=data["expired"],
            as_of=data["as_of"],
            after=data["after"] or None,
        )


class ScopeForm(QueryStringForm):
    scope = _scope_field()

    def clean_scope(self) -> Scope | None:
        return clean_scope_text(self.cleaned_data.get("scope") or "")
