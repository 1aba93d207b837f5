"""Query-string forms: every filter of a page lives in its URL and is parsed here.

A bad parameter — an unknown name, a malformed scope or date, a value too long — is a
form error the page shows inline with status 400; it never reaches the store.

Why one module: every page's filters and every POST form share the same fields and
checks (scopes, agents, cursors, times, reasons, pins); one module keeps each check
written once.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, cast

from django import forms
from django.core.validators import MaxLengthValidator
from django.http import QueryDict
from django.utils.http import url_has_allowed_host_and_scheme
from pydantic import ValidationError

from memory_admin.dashboard.models import AuditEntry
from memory_admin.dashboard.redaction import QUOTE_RUN_CHARS, QUOTE_WORDS, quote_error, quoted_fragment
from memory_admin.dashboard.scope_resolver import MAX_SCOPE_TEXT, ScopeField
from memory_admin.errors import MemoryValidationError
from memory_admin.promotion import Pin
from memory_admin.recall import DEFAULT_BUDGET_CHARS, DEFAULT_PROFILE_BUDGET_RATIO, MIN_BUDGET_CHARS
from memory_admin.records import (
    KINDS,
    MAX_ID_CHARS,
    MAX_KEY_CHARS,
    MAX_REASON_CHARS,
    MAX_TAG_CHARS,
    Kind,
    SearchMode,
    normalize_content,
    normalize_key,
    normalize_tag,
)
from memory_admin.reports.learnings import INBOX_ORDER, PRIMITIVES, STATE_WORDS, TIERS
from memory_admin.scope import (
    AGENT_KEY,
    MAX_SCOPE_VALUE_CHARS,
    TENANT_KEY,
    Scope,
    ScopeMatch,
    canonical_scope,
    is_subset_match,
    parse_scope_text,
    scope_problems,
)
from memory_admin.store import RecordListQuery
from memory_admin.store.arguments import MAX_STORED_INT

MAX_QUERY_TEXT = 500
MAX_CURSOR = 200
MAX_PREVIEW_MESSAGE = 4000
MAX_PREVIEW_BUDGET = 100_000
DATETIME_FORMATS = ["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d"]


def utc_time_field(label: str) -> forms.DateTimeField:
    """A moment in UTC typed as ISO text, 24-hour (``2026-10-27 14:30``). Not a
    ``datetime-local`` picker: browsers show that in the viewer's locale (12-hour in the
    US) and local time, under a label that says UTC."""
    return forms.DateTimeField(
        required=False,
        input_formats=DATETIME_FORMATS,
        label=label,
        help_text="UTC, 24-hour: YYYY-MM-DD HH:MM",
        widget=forms.DateTimeInput(
            format="%Y-%m-%d %H:%M",
            attrs={
                "placeholder": "YYYY-MM-DD HH:MM",
                "pattern": r"\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2})?)?",
                "title": "UTC, 24-hour: YYYY-MM-DD HH:MM (the time may be left out)",
                "spellcheck": "false",
                "autocomplete": "off",
                "size": "16",
            },
        ),
    )


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
    mode: SearchMode | None = None

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
                    "mode": self.mode if self.q else None,
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
        # the query string itself, for links that change one filter
        self.params = data if isinstance(data, QueryDict) else QueryDict()

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if self.unknown:
            shown = ", ".join(name[:40] for name in self.unknown[:5])
            raise forms.ValidationError(
                f"Unknown parameter: {shown}. This page understands {', '.join(self.fields)}.", code="unknown"
            )
        return cleaned

    MORE_FILTERS: tuple[str, ...] = ()
    """The filters a phone shows behind "More filters", so what they filter starts on its
    first screen (the page's template folds them; a wider screen shows every one)."""

    @property
    def more_in_use(self) -> int:
        """How many of :data:`MORE_FILTERS` the query string sets (what the summary counts)."""
        return sum(1 for name in self.MORE_FILTERS if any(value.strip() for value in self.params.getlist(name)))

    @property
    def more_open(self) -> bool:
        """Show the more filters open: one of them is set, or has an error to read."""
        return bool(self.more_in_use) or any(name in self.errors for name in self.MORE_FILTERS)


class BrowseForm(QueryStringForm):
    scope = ScopeField()
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
    mode = forms.ChoiceField(
        required=False,
        # short enough for a phone's width: "best" is hybrid where the store embeds
        choices=[("", "best for this store"), ("keyword", "words"), ("semantic", "meaning"), ("hybrid", "both")],
        label="By",
        help_text="words (keyword), meaning (semantic), or both (hybrid); best is both where the store embeds",
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
    as_of = utc_time_field("As of (UTC)")
    after = forms.CharField(required=False, max_length=MAX_CURSOR, widget=forms.HiddenInput)

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
            mode=cast(SearchMode, data["mode"]) if data["mode"] else None,
        )

    MORE_FILTERS = ("kind", "tag", "key", "as_of", "invalidated", "expired")


class RecordForm(QueryStringForm):
    """A record's page: ``as_of`` shows its state, and its chain's, at that moment."""

    as_of = utc_time_field("As of (UTC)")


class ScopeForm(QueryStringForm):
    scope = ScopeField()


# --- recall --------------------------------------------------------------------------------


def _agent_field() -> forms.CharField:
    return forms.CharField(
        required=False,
        max_length=MAX_SCOPE_VALUE_CHARS,
        label="Agent",
        help_text="an agent name, e.g. planner",
        widget=forms.TextInput(attrs={"placeholder": "any agent", "spellcheck": "false", "list": "agents"}),
    )


def clean_agent_text(text: str) -> str | None:
    text = text.strip()
    if not text:
        return None
    problems = scope_problems({"tenant": "t", AGENT_KEY: text})
    if problems:
        raise forms.ValidationError(problems[0]["msg"])
    return text


def _cursor_field() -> forms.IntegerField:
    """An older page's cursor: an id, which every database stores as a 64-bit integer."""
    return forms.IntegerField(required=False, min_value=1, max_value=MAX_STORED_INT, widget=forms.HiddenInput)


class RecallForm(QueryStringForm):
    """The recall page's filters: scope, agent, time range, bucket size, table cursor."""

    scope = ScopeField()
    agent = _agent_field()
    since = utc_time_field("From (UTC)")
    until = utc_time_field("Until (UTC)")
    bucket = forms.ChoiceField(
        required=False,
        label="Buckets",
        choices=[("", "auto"), ("hour", "hour"), ("6h", "6 hours"), ("day", "day"), ("week", "week")],
    )
    before = _cursor_field()

    MORE_FILTERS = ("agent", "since", "until", "bucket")  # the range presets stay in view

    def clean_agent(self) -> str | None:
        return clean_agent_text(self.cleaned_data.get("agent") or "")

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        since, until = cleaned.get("since"), cleaned.get("until")
        if since and until and since >= until:
            raise forms.ValidationError("“From” must be before “Until”.", code="range")
        return cleaned


class PreviewForm(QueryStringForm):
    """A recall to preview: the scope, agent and first message an agent host would pass."""

    scope = ScopeField()
    agent = _agent_field()
    message = forms.CharField(
        required=False,
        max_length=MAX_PREVIEW_MESSAGE,
        label="First user message",
        help_text="what the user says first; leave empty for a profile + most-recent block",
        widget=forms.Textarea(attrs={"rows": 3, "placeholder": "Book me a flight to Berlin next week"}),
    )
    budget = forms.IntegerField(
        required=False,
        min_value=MIN_BUDGET_CHARS,
        max_value=MAX_PREVIEW_BUDGET,
        label="Budget (characters)",
        widget=forms.NumberInput(attrs={"placeholder": str(DEFAULT_BUDGET_CHARS), "step": "100"}),
    )
    profile = forms.IntegerField(
        required=False,
        min_value=0,
        max_value=100,
        label="Profile slice (%)",
        widget=forms.NumberInput(attrs={"placeholder": str(round(100 * DEFAULT_PROFILE_BUDGET_RATIO))}),
    )

    MORE_FILTERS = ("agent", "budget", "profile")  # the scope and the message stay in view

    def clean_agent(self) -> str | None:
        return clean_agent_text(self.cleaned_data.get("agent") or "")


class RecallEventForm(QueryStringForm):
    """One recall event's page: ``replay=1`` runs it again against today's store."""

    replay = forms.BooleanField(required=False, widget=forms.HiddenInput)


class CursorForm(QueryStringForm):
    before = _cursor_field()


class AuditLogForm(CursorForm):
    """The audit log's filters: who, what, where (a scope: entries on it or inside it)
    and when (UTC)."""

    actor = forms.CharField(
        required=False,
        max_length=150,
        label="Who",
        widget=forms.TextInput(attrs={"placeholder": "any user", "spellcheck": "false", "autocomplete": "off"}),
    )
    action = forms.ChoiceField(required=False, label="What", choices=[("", "any action"), *AuditEntry.Action.choices])
    scope = ScopeField()
    since = utc_time_field("From (UTC)")
    until = utc_time_field("Until (UTC)")

    MORE_FILTERS = ("actor", "action", "since", "until")

    @property
    def filtering(self) -> bool:
        data = self.cleaned_data
        return any(data.get(name) for name in ("actor", "action", "scope", "since", "until"))

    def narrow(self, entries: Any) -> Any:
        """``entries`` (a queryset of audit entries) narrowed by the filters SQL can apply."""
        data = self.cleaned_data
        if data["actor"]:
            entries = entries.filter(actor=data["actor"].strip())
        if data["action"]:
            entries = entries.filter(action=data["action"])
        if data["scope"]:
            entries = entries.filter(tenant=data["scope"][TENANT_KEY])
        if data["since"]:
            entries = entries.filter(at__gte=data["since"])
        if data["until"]:
            entries = entries.filter(at__lt=data["until"])
        return entries

    def matches(self, scope: Scope) -> bool:
        """Whether an entry's scope is the filter's scope or inside it."""
        wanted: Scope | None = self.cleaned_data["scope"]
        return wanted is None or is_subset_match(scope, wanted)


# --- curation and privacy (POST forms) ------------------------------------------------------


QUOTE_RULE = (
    f" A reason that quotes the record ({QUOTE_WORDS} or more of its words in a row,"
    f" or {QUOTE_RUN_CHARS} characters of it, ignoring case and punctuation) is refused."
)


def _reason_field(
    help_text: str = "Kept in the audit log. Say why; never paste the content itself.", *, first: bool = False
) -> forms.CharField:
    attrs: dict[str, Any] = {"rows": 2, "dir": "auto"}
    if first:
        attrs["autofocus"] = True
    return forms.CharField(
        max_length=MAX_REASON_CHARS,
        label="Reason",
        help_text=help_text + QUOTE_RULE,
        widget=forms.Textarea(attrs=attrs),
        error_messages={"required": "Give a reason: it goes into the audit log."},
    )


class InvalidateForm(forms.Form):
    reason = _reason_field("Shown in the chain timeline and kept in the audit log.", first=True)


class CorrectForm(forms.Form):
    content = forms.CharField(
        label="Corrected content",
        help_text="The replacement record; the current one stays in the chain, marked superseded.",
        widget=forms.Textarea(attrs={"rows": 4, "autofocus": True, "dir": "auto"}),
    )
    reason = _reason_field()

    def __init__(self, data: QueryDict | None = None, *, current: str, max_chars: int, **kwargs: Any) -> None:
        super().__init__(data, **kwargs)
        self.current = current
        content = self.fields["content"]
        assert isinstance(content, forms.CharField)
        content.max_length = max_chars
        content.validators.append(MaxLengthValidator(max_chars))
        content.widget.attrs["maxlength"] = str(max_chars)

    def clean_content(self) -> str:
        text = self.cleaned_data["content"]
        try:
            cleaned = normalize_content(text)
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None
        if cleaned == self.current.strip():
            raise forms.ValidationError("The replacement says exactly what the record says now; change something.")
        return cleaned


class DeleteForm(forms.Form):
    confirm_id = forms.CharField(
        label="Type the record id to confirm",
        max_length=MAX_ID_CHARS,
        widget=forms.TextInput(attrs={"autocomplete": "off", "spellcheck": "false", "autofocus": True}),
    )
    reason = _reason_field()

    def __init__(self, data: QueryDict | None = None, *, record_id: str, **kwargs: Any) -> None:
        super().__init__(data, **kwargs)
        self.record_id = record_id

    def clean_confirm_id(self) -> str:
        typed: str = self.cleaned_data["confirm_id"].strip()
        if typed != self.record_id:
            raise forms.ValidationError("That is not the id of this record; nothing was deleted.")
        return typed


class EraseForm(forms.Form):
    scope = ScopeField(required=True, hidden=True)
    confirm_scope = forms.CharField(
        label="Type the scope to confirm",
        max_length=MAX_SCOPE_TEXT,
        widget=forms.TextInput(attrs={"autocomplete": "off", "spellcheck": "false", "autofocus": True}),
    )
    reason = _reason_field("Kept in the audit log and on the receipt. Say why; never paste erased content.")

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        scope, typed = cleaned.get("scope"), cleaned.get("confirm_scope")
        if scope is not None and typed is not None:
            try:
                matches = canonical_scope(parse_scope_text(typed)) == scope
            except MemoryValidationError:
                matches = False
            if not matches:
                self.add_error("confirm_scope", "That is not the scope being erased; nothing was erased.")
        return cleaned


class SweepForm(forms.Form):
    scope = ScopeField(required=True, hidden=True)


def refuse_quoting(form: forms.Form, texts: Iterable[str]) -> None:
    """Mark ``form``'s reason as an error when it quotes one of ``texts`` (the record's)."""
    if form.is_valid() and (fragment := quoted_fragment(form.cleaned_data["reason"], texts)) is not None:
        form.add_error("reason", quote_error(fragment))


# --- the learnings pages: filters, and a person's decisions (POST) --------------------------
#
# Each decision carries the pin of what the page showed, so a decision on a learning that
# moved since is refused rather than applied to a state the person did not see.

MAX_BATCH = 100
"""Learnings one bulk decision takes at most (a page of the inbox holds fewer)."""
MAX_PIN_CHARS = 2_000
VERSION_CHARS = 64


def _choice(label: str, choices: list[tuple[str, str]], anything: str) -> forms.ChoiceField:
    return forms.ChoiceField(required=False, label=label, choices=[("", anything), *choices])


class InboxForm(QueryStringForm):
    """The review inbox's filters."""

    scope = ScopeField()
    agent = _agent_field()
    state = _choice("State", [(s, STATE_WORDS[s]) for s in INBOX_ORDER], "every state")
    primitive = _choice("Target", [(p, p) for p in PRIMITIVES], "every target")
    tier = _choice("Tier", [(t, t) for t in TIERS], "every tier")
    after = forms.CharField(required=False, max_length=MAX_CURSOR, widget=forms.HiddenInput)

    MORE_FILTERS = ("agent", "state", "primitive", "tier")  # the state tabs stay in view

    def clean_agent(self) -> str | None:
        return clean_agent_text(self.cleaned_data.get("agent") or "")


class LearnedForm(RecallForm):
    """What it learned, over time: the recall page's filters, its table paged by a
    transition cursor."""

    before = None  # type: ignore[assignment]  # (the recall table's event cursor)
    after = forms.CharField(required=False, max_length=MAX_CURSOR, widget=forms.HiddenInput)


def _version_field(label: str) -> forms.CharField:
    return forms.CharField(
        required=False,
        max_length=VERSION_CHARS,
        label=label,
        help_text="a registered version (its hash, or the first 12 characters of it)",
        widget=forms.TextInput(attrs={"spellcheck": "false", "autocomplete": "off", "size": "14"}),
    )


class CompositionsForm(QueryStringForm):
    scope = ScopeField()


class CompositionForm(QueryStringForm):
    """One scope's composition: now, or as of a moment; its own version, or another registered one."""

    scope = ScopeField(required=True)
    as_of = utc_time_field("As of (UTC)")
    version = _version_field("Version")

    MORE_FILTERS = ("as_of", "version")


class CompositionDiffForm(QueryStringForm):
    """Two compositions of one scope compared: each side a moment (empty: now) and a
    version (empty: the one the scope ran then)."""

    scope = ScopeField(required=True)
    from_time = utc_time_field("From (UTC)")
    from_version = _version_field("From version")
    to_time = utc_time_field("To (UTC)")
    to_version = _version_field("To version")


# --- decisions (POST) ---------------------------------------------------------------------------


class PinField(forms.CharField):
    """What the page showed, as the JSON of a :class:`~memory_admin.promotion.Pin`."""

    widget = forms.HiddenInput

    def __init__(self, *, required: bool = True) -> None:
        super().__init__(required=required, max_length=MAX_PIN_CHARS)

    def clean(self, value: Any) -> Pin | None:
        text: str = super().clean(value)
        if not text:
            return None
        try:
            return Pin.model_validate_json(text)
        except ValidationError:
            raise forms.ValidationError(
                "The page's view of this learning did not come with the form; reload the page and decide again."
            ) from None


def pin_text(pin: Pin) -> str:
    """A pin as a hidden form value."""
    return pin.model_dump_json(exclude_none=True)


def local_path(target: str, host: str) -> str | None:
    """``target`` when it is a path on this site (where a decision goes back to), else ``None``."""
    if not target.startswith("/") or target.startswith("//"):
        return None
    return target if url_has_allowed_host_and_scheme(target, allowed_hosts={host}) else None


class _Decision(forms.Form):
    pin = PinField()
    seen_at = forms.DateTimeField(required=False, widget=forms.HiddenInput)
    next = forms.CharField(required=False, max_length=2_000, widget=forms.HiddenInput)

    def destination(self, request_host: str, default: str) -> str:
        """Where to go once the decision is made: the page that asked, else ``default``."""
        return local_path(self.cleaned_data.get("next") or "", request_host) or default


REASON_NEEDED = "Give a reason: it goes into the learning's history and the audit log."


class DecisionForm(_Decision):
    """Approve, reject, roll back, or keep one side of a conflict."""

    decision = forms.ChoiceField(
        choices=[
            ("approve", "approve"),
            ("reject", "reject"),
            ("rollback", "roll back"),
            ("keep_this", "keep this learning"),
            ("keep_other", "keep the other learning"),
        ]
    )
    reason = _reason_field(
        "Required to reject, roll back or pick a survivor; kept in the learning's history and the audit log."
    )
    other = forms.CharField(required=False, max_length=MAX_ID_CHARS, widget=forms.HiddenInput)
    other_pin = PinField(required=False)

    def __init__(self, data: QueryDict | Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(data, **kwargs)
        self.fields["reason"].required = False

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        decision = cleaned.get("decision")
        if decision and decision != "approve" and not (cleaned.get("reason") or "").strip():
            self.add_error("reason", REASON_NEEDED)
        if decision in ("keep_this", "keep_other") and not (cleaned.get("other") and cleaned.get("other_pin")):
            raise forms.ValidationError("Which learning is the other one? Reload the page and pick again.")
        return cleaned


class EditForm(_Decision):
    content = forms.CharField(
        label="The learning, as it should read",
        help_text="Written as a new version that supersedes the agent's (which stays in the chain), then approved.",
        widget=forms.Textarea(attrs={"rows": 4, "autofocus": True, "dir": "auto"}),
    )
    payload = forms.CharField(
        required=False,
        label="Its payload (JSON)",
        help_text="What an example or awareness learning puts into the prompt; the same fields, edited.",
        widget=forms.Textarea(attrs={"rows": 6, "spellcheck": "false"}),
    )
    reason = _reason_field("Optional; kept in the learning's history and the audit log.")

    def __init__(
        self,
        data: QueryDict | Mapping[str, Any] | None = None,
        *,
        current: str,
        max_chars: int,
        payload: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(data, **kwargs)
        self.current = current
        self.current_payload = payload
        self.fields["reason"].required = False
        if payload is None:
            del self.fields["payload"]  # a learning whose text is its content: nothing else to edit
        content = self.fields["content"]
        assert isinstance(content, forms.CharField)
        content.max_length = max_chars
        content.widget.attrs["maxlength"] = str(max_chars)

    def clean_content(self) -> str:
        text = self.cleaned_data["content"]
        try:
            cleaned = normalize_content(text)
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None
        max_chars = self.fields["content"].max_length  # type: ignore[attr-defined]
        if max_chars is not None and len(cleaned) > max_chars:
            raise forms.ValidationError(f"At most {max_chars} characters.")
        return cleaned

    def clean_payload(self) -> dict[str, Any] | None:
        text = (self.cleaned_data.get("payload") or "").strip()
        if not text:
            return None
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise forms.ValidationError(
                f"That is not JSON ({exc.args[0]}); keep the fields and their quotes."
            ) from None
        if not isinstance(value, dict):
            raise forms.ValidationError('The payload is an object of fields, as it was: {"name": …}.')
        return value

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        content, payload = cleaned.get("content"), cleaned.get("payload")
        same_payload = self.current_payload is None or payload in (None, dict(self.current_payload))
        if content is not None and content == self.current.strip() and same_payload:
            raise forms.ValidationError("That is the learning as the agent wrote it: change it, or approve it as is.")
        return cleaned


class RollbackForm(forms.Form):
    """The roll-back confirmation's form, as its page renders it (it posts a :class:`DecisionForm`)."""

    reason = _reason_field("Kept in the learning's history and the audit log; nothing is deleted.", first=True)


class BulkForm(forms.Form):
    """A decision on several learnings of one inbox page: each checked one's pin is the
    hidden ``pin-<id>`` field beside its checkbox."""

    decision = forms.ChoiceField(choices=[("approve", "approve"), ("reject", "reject")])
    reason = _reason_field("Required to reject; kept in each learning's history and the audit log.")
    seen_at = forms.DateTimeField(required=False, widget=forms.HiddenInput)
    next = forms.CharField(required=False, max_length=2_000, widget=forms.HiddenInput)

    def __init__(self, data: QueryDict, **kwargs: Any) -> None:
        super().__init__(data, **kwargs)
        self.fields["reason"].required = False
        self.records: list[str] = [value[:MAX_ID_CHARS] for value in data.getlist("record")]
        self.pins: dict[str, Pin] = {}

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if not self.records:
            raise forms.ValidationError("Tick the learnings to decide on first.")
        if len(self.records) > MAX_BATCH:
            raise forms.ValidationError(f"Decide on at most {MAX_BATCH} learnings at once.")
        if cleaned.get("decision") == "reject" and not (cleaned.get("reason") or "").strip():
            self.add_error("reason", REASON_NEEDED)
        field = PinField()
        for record_id in dict.fromkeys(self.records):
            try:
                pin = field.clean(self.data.get(f"pin-{record_id}", ""))
            except forms.ValidationError as exc:
                raise forms.ValidationError(exc.messages[0]) from None
            assert pin is not None
            self.pins[record_id] = pin
        return cleaned

    destination = _Decision.destination


class ProposalForm(forms.Form):
    decision = forms.ChoiceField(choices=[("accept", "accept"), ("reject", "reject")])
    reason = _reason_field("Required to reject; kept with the proposal and in the audit log.")
    next = forms.CharField(required=False, max_length=2_000, widget=forms.HiddenInput)

    def __init__(self, data: QueryDict | Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(data, **kwargs)
        self.fields["reason"].required = False

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if cleaned.get("decision") == "reject" and not (cleaned.get("reason") or "").strip():
            self.add_error("reason", "Give a reason: it is kept with the proposal and in the audit log.")
        return cleaned

    destination = _Decision.destination
