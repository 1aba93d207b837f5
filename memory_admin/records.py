"""The data contract: memory records and the inputs and queries that make them.

Every model here is a frozen pydantic model with ``extra="forbid"``, keyword-only
construction and timezone-aware UTC datetimes. Backends take and return these models,
never rows or dicts.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, Self, TypeVar

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    ValidationError,
    field_validator,
    model_validator,
)

from memory_admin.errors import MemoryValidationError
from memory_admin.scope import Scope, ScopeMatch, canonical_scope, has_control_chars

Kind = Literal["fact", "preference", "episode", "profile"]
KINDS: tuple[Kind, ...] = ("fact", "preference", "episode", "profile")

MAX_TAGS = 32
MAX_TAG_CHARS = 64
MAX_KEY_CHARS = 128
MAX_PROVENANCE_CHARS = 200
MAX_REASON_CHARS = 1000
MAX_QUERY_CHARS = 20_000
MAX_ID_CHARS = 64
MAX_SUPPORTS = 256
"""Provenances corroborating one record."""


def _to_utc(value: datetime) -> datetime:
    try:
        return value.astimezone(UTC)
    except OverflowError:  # e.g. 0001-01-01T00:00:00+14:00 is before year 1 in UTC
        raise ValueError("the time is out of range once converted to UTC") from None


UtcDatetime = Annotated[AwareDatetime, AfterValidator(_to_utc)]
"""A timezone-aware datetime, normalised to UTC. Naive datetimes are refused."""


def utc_now() -> datetime:
    return datetime.now(UTC)


def _control_chars(text: str, *, allow_layout: bool = False) -> bool:
    return has_control_chars(text, allow_layout=allow_layout)


def normalize_tag(tag: str) -> str:
    """Tags are lower-cased, NFC-normalised and whitespace-collapsed."""
    if not isinstance(tag, str):
        raise ValueError("tags are strings")
    cleaned = " ".join(unicodedata.normalize("NFC", tag).lower().split())
    if not cleaned:
        raise ValueError("tags must not be blank")
    if len(cleaned) > MAX_TAG_CHARS:
        raise ValueError(f"tags hold at most {MAX_TAG_CHARS} characters")
    if _control_chars(cleaned):
        raise ValueError("tags must not contain control characters")
    return cleaned


def normalize_tags(tags: Any) -> tuple[str, ...]:
    if isinstance(tags, str) or not isinstance(tags, (list, tuple, set, frozenset)):
        raise ValueError("tags is a list of strings")
    result = tuple(dict.fromkeys(normalize_tag(tag) for tag in tags))
    if len(result) > MAX_TAGS:
        raise ValueError(f"at most {MAX_TAGS} tags")
    return result


def normalize_key(key: str) -> str:
    """Keys are slot names such as ``seat`` or ``travel.seat``: no spaces, bounded."""
    if not isinstance(key, str):
        raise ValueError("a key is a string")
    cleaned = unicodedata.normalize("NFC", key.strip())
    if not cleaned:
        raise ValueError("a key must not be blank")
    if len(cleaned) > MAX_KEY_CHARS:
        raise ValueError(f"keys hold at most {MAX_KEY_CHARS} characters")
    if any(ch.isspace() for ch in cleaned) or _control_chars(cleaned):
        raise ValueError("keys must not contain spaces or control characters")
    return cleaned


def normalize_content(content: str) -> str:
    cleaned = content.strip()
    if not cleaned:
        raise ValueError("content must not be blank")
    if _control_chars(cleaned, allow_layout=True):
        raise ValueError("content must not contain control characters other than newline and tab")
    return cleaned


def _validate_scope(value: Any) -> Scope:
    if not isinstance(value, Mapping):
        raise ValueError("a scope is a mapping of key to value")
    try:
        return canonical_scope(value)
    except MemoryValidationError as exc:
        raise ValueError(exc.message) from None


CanonicalScope = Annotated[Scope, AfterValidator(_validate_scope)]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=False)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def holds_lone_surrogate(value: object) -> bool:
    """True if ``value`` (text, or a model, mapping or list holding text) contains a lone
    surrogate: a Python string that is not Unicode text and that no database can store."""
    if isinstance(value, str):
        return _LONE_SURROGATE.search(value) is not None
    if isinstance(value, BaseModel):
        return holds_lone_surrogate(value.__dict__)
    if isinstance(value, Mapping):
        return any(holds_lone_surrogate(k) or holds_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(holds_lone_surrogate(item) for item in value)
    return False


class _TextModel(_Model):
    """A model of caller-given text (inputs and queries): every string in it, nested
    ones included, must be valid Unicode."""

    @model_validator(mode="after")
    def _valid_unicode(self) -> Self:
        if holds_lone_surrogate(self.__dict__):
            raise ValueError("text holds a lone surrogate (not valid Unicode); send UTF-8 text")
        return self


class Provenance(_Model):
    """Where a memory came from. At least one field is required: a recalled claim
    nobody can trace is refused at write."""

    source: str | None = None
    author: str | None = None
    conversation_id: str | None = None
    run_id: str | None = None

    @field_validator("source", "author", "conversation_id", "run_id")
    @classmethod
    def _clean(cls, value: str | None) -> str | None:
        if value is None:
            return None
        cleaned = value.strip()
        if len(cleaned) > MAX_PROVENANCE_CHARS:
            raise ValueError(f"provenance fields hold at most {MAX_PROVENANCE_CHARS} characters")
        if _control_chars(cleaned):
            raise ValueError("provenance must not contain control characters")
        return cleaned or None

    @model_validator(mode="after")
    def _traceable(self) -> Provenance:
        if not (self.source or self.author or self.conversation_id or self.run_id):
            raise ValueError("provenance needs at least one of source, author, conversation_id, run_id")
        return self


# --- targets: a typed pointer into an agent's composition -----------------------------

TargetName = Annotated[str, Field(min_length=1, max_length=120)]
"""A name a target points at (a background key, a judgment domain, a capability): a
composition's names are of the same type, matched exactly."""


class BackgroundTarget(_Model):
    primitive: Literal["background"] = "background"
    section: Literal["team_context", "project_context", "conventions", "current_state"]
    key: TargetName


class JudgmentTarget(_Model):
    primitive: Literal["judgment"] = "judgment"
    domain: TargetName
    slot: Literal["heuristics", "constraints", "escalation_triggers"]


class ExampleTarget(_Model):
    primitive: Literal["example"] = "example"
    judgment_domain: TargetName


class AwarenessTarget(_Model):
    primitive: Literal["awareness"] = "awareness"


class RecoveryTarget(_Model):
    primitive: Literal["recovery"] = "recovery"


class ManualTarget(_Model):
    primitive: Literal["manual"] = "manual"
    capability: TargetName
    section: Literal["workflows"] = "workflows"


MemoryTarget = Annotated[
    BackgroundTarget | JudgmentTarget | ExampleTarget | AwarenessTarget | RecoveryTarget | ManualTarget,
    Field(discriminator="primitive"),
]


class ExamplePayload(_Model):
    """The structured form of an ``example`` target."""

    scenario: str = Field(min_length=1)
    good: str = Field(min_length=1)
    bad: str | None = None
    reasoning: str | None = None


class AwarenessPayload(_Model):
    """The structured form of an ``awareness`` target."""

    name: str = Field(min_length=1)
    description: str = Field(min_length=1)
    access_method: str = Field(min_length=1)


PAYLOAD_SCHEMAS: dict[str, type[_Model]] = {"example": ExamplePayload, "awareness": AwarenessPayload}

Payload = dict[str, JsonValue]


def payload_chars(payload: Payload) -> int:
    """A payload's size as its limit counts it: characters of its compact JSON."""
    return len(json.dumps(payload, ensure_ascii=False, separators=(",", ":")))


def _check_payload(target: Any, payload: Payload | None) -> None:
    if payload is None:
        return
    if target is None:
        raise ValueError("a payload travels with a target; set target or drop the payload")
    schema = PAYLOAD_SCHEMAS.get(target.primitive)
    if schema is not None:
        schema.model_validate(payload)


# --- the record and its inputs ---------------------------------------------------------


class _RecordFields(_Model):
    """Validation shared by a write input and a stored record."""

    @field_validator("content", check_fields=False)
    @classmethod
    def _content(cls, value: str) -> str:
        return normalize_content(value)

    @field_validator("key", check_fields=False)
    @classmethod
    def _key(cls, value: str | None) -> str | None:
        return None if value is None else normalize_key(value)

    @field_validator("tags", mode="before", check_fields=False)
    @classmethod
    def _tags(cls, value: Any) -> tuple[str, ...]:
        return normalize_tags(value)


class MemoryWriteInput(_TextModel, _RecordFields):
    """One record to write. Lifecycle fields (id, times, invalidation, supports) are
    store-owned and cannot be set here."""

    scope: CanonicalScope
    kind: Kind
    content: str
    provenance: Provenance
    key: str | None = None
    tags: tuple[str, ...] = ()
    target: MemoryTarget | None = None
    payload: Payload | None = None
    supersedes: str | None = Field(default=None, min_length=1, max_length=MAX_ID_CHARS)
    expires_at: UtcDatetime | None = None
    observed_at: UtcDatetime | None = None
    """When the fact was stated, for memories taken from past conversations (default: the
    write time). Not in the future."""

    @model_validator(mode="after")
    def _payload_matches_target(self) -> MemoryWriteInput:
        _check_payload(self.target, self.payload)
        return self


class MemoryRecord(_RecordFields):
    """A stored memory: one natural-language fact with its scope, provenance and
    validity. Corrected by superseding or invalidating, never overwritten."""

    id: str = Field(min_length=1, max_length=MAX_ID_CHARS)
    scope: CanonicalScope
    kind: Kind
    content: str
    key: str | None = None
    tags: tuple[str, ...] = ()
    provenance: Provenance
    created_at: UtcDatetime
    updated_at: UtcDatetime
    invalid_at: UtcDatetime | None = None
    invalid_reason: str | None = None
    superseded_by: str | None = None
    supersedes: str | None = None
    expires_at: UtcDatetime | None = None
    target: MemoryTarget | None = None
    payload: Payload | None = None
    supports: tuple[Provenance, ...] = ()
    observed_at: UtcDatetime
    """When the fact was stated: the write time unless the writer said otherwise (a
    record stored before this field existed reads its creation time)."""

    @model_validator(mode="before")
    @classmethod
    def _observed_defaults_to_created(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and data.get("observed_at") is None and "created_at" in data:
            return {**data, "observed_at": data["created_at"]}
        return data

    @model_validator(mode="after")
    def _consistent(self) -> MemoryRecord:
        _check_payload(self.target, self.payload)
        if self.updated_at < self.created_at:
            raise ValueError("updated_at precedes created_at")
        return self

    @property
    def is_valid(self) -> bool:
        """True while the record has not been invalidated (superseded or retired)."""
        return self.invalid_at is None

    def is_expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now

    def is_live(self, now: datetime) -> bool:
        """Valid and not expired: what search and recall may return."""
        return self.is_valid and not self.is_expired(now)


_RECORD_FIELD_ORDER = tuple(MemoryRecord.model_fields)
_RECORD_FIELDS = frozenset(_RECORD_FIELD_ORDER)


def trusted_record(**values: Any) -> MemoryRecord:
    """A record from values that were already validated (as a write input, by the store).

    Equivalent to ``MemoryRecord.model_construct`` with every field given, minus its
    per-field default resolution: writing a batch builds thousands of these.
    """
    record = MemoryRecord.__new__(MemoryRecord)
    object.__setattr__(record, "__dict__", {name: values[name] for name in _RECORD_FIELD_ORDER})
    object.__setattr__(record, "__pydantic_fields_set__", set(_RECORD_FIELDS))
    object.__setattr__(record, "__pydantic_extra__", None)
    object.__setattr__(record, "__pydantic_private__", None)
    return record


SearchMode = Literal["keyword", "semantic", "hybrid", "quality"]
SEARCH_MODES: tuple[SearchMode, ...] = ("keyword", "semantic", "hybrid", "quality")
MEANING_MODES: tuple[SearchMode, ...] = ("semantic", "hybrid", "quality")
"""The modes that search by meaning: a store needs an embedder for them."""


class MemorySearchQuery(_TextModel):
    """A scoped search. Without ``query`` it is a recency listing, newest first."""

    scope: CanonicalScope
    scope_match: ScopeMatch = "subset"
    query: str | None = Field(default=None, max_length=MAX_QUERY_CHARS)
    kinds: tuple[Kind, ...] | None = None
    """Only records of one of these kinds (``[]``: none)."""
    tags: tuple[str, ...] | None = None
    """Only records holding every one of these tags (``[]``: no tag needed)."""
    keys: tuple[str, ...] | None = None
    """Only records whose key is one of these (``key_match="exact"``) or starts with one
    of them (``"prefix"``); ``[]``: none."""
    key_match: Literal["exact", "prefix"] = "exact"
    targeted: bool | None = None
    """Only records that carry a target (True), or only those that carry none (False)."""
    promoted: bool | None = None
    """Only records promoted into their agent's composition now (True), or only those
    that are not (False): recall leaves the promoted ones out, the composition holds them."""
    agent: str | None = Field(default=None, min_length=1, max_length=200)
    as_of: UtcDatetime | None = None
    include_invalidated: bool = False
    limit: int = Field(default=10, ge=0)
    mode: SearchMode | None = None
    """How ``query`` matches: ``keyword`` (shared words, BM25), ``semantic`` (meaning:
    the closest vectors in scope), ``hybrid`` (both, fused) or ``quality`` (both, ordered
    by a small learned ranker). ``None``: the store's default — hybrid when it has an
    embedder, else keyword, unless it was opened with another ``search_mode``. Every
    filter holds in every mode."""
    relevance: Literal["match", "rank"] = "match"
    """By meaning, which records come back: ``match`` those that share a word with the
    query or are close enough in meaning (the relevance floor, docs/search.md); ``rank``
    every record the filters admit, closest first (a vector store's "nearest" semantics,
    as LangGraph's stores search, and what recall's hits tier takes: the closest few).
    Keyword search always returns its match set."""

    @field_validator("tags", mode="before")
    @classmethod
    def _tags(cls, value: Any) -> tuple[str, ...] | None:
        return None if value is None else normalize_tags(value)

    @field_validator("keys", mode="before")
    @classmethod
    def _keys(cls, value: Any) -> tuple[str, ...] | None:
        if value is None:
            return None
        if isinstance(value, str) or not isinstance(value, (list, tuple, set, frozenset)):
            raise ValueError("keys is a list of strings")
        return tuple(dict.fromkeys(normalize_key(key) for key in value))


class MemoryHit(_Model):
    """One search result. Order is contractual; ``score`` is optional and backend-specific.

    A semantic or hybrid search says where the score came from: ``keyword_score`` is the
    record's BM25 for the query (``None``: it shares no word with it, or the search did
    not look), ``semantic_score`` its cosine similarity to the query as embedded — for a
    record long enough to keep a vector per window, its own vector's or its closest
    window's, whichever is higher (``None``: not among the closest candidates); ``score``
    is then the fused score that ordered the hits (docs/search.md)."""

    record: MemoryRecord
    score: float | None = None
    keyword_score: float | None = None
    semantic_score: float | None = None
    context_score: float | None = None
    """A semantic or hybrid hit's lift from when it was stated: a share of the best score
    among the candidates stated in its scope on its day, plus the lift for being stated
    on a day (or in a month) the query names (``None`` in keyword and quality search)."""
    length_score: float | None = None
    """A hybrid hit's lift (or drop, when it is shorter than most) for how much it says:
    a prior for records that say more (``None`` in every other mode)."""
    terms: dict[str, float] | None = None
    """A keyword match's query terms the record holds, each with its part of the BM25
    score (the parts add up to it): why it ranked where it did."""


# --- turning pydantic's errors into ours ---------------------------------------------

M = TypeVar("M", bound=BaseModel)


def validation_problems(exc: ValidationError) -> list[dict[str, str]]:
    problems = []
    for error in exc.errors(include_url=False):
        loc = ".".join(str(part) for part in error["loc"]) or "input"
        msg = error["msg"].removeprefix("Value error, ")
        problems.append({"loc": loc, "msg": msg})
    return problems


def parse_model(model: type[M], data: M | Mapping[str, Any], *, what: str | None = None) -> M:
    """Validate ``data`` as ``model``; a failure is a :class:`MemoryValidationError`."""
    if isinstance(data, model):
        return data
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = validation_problems(exc)
        label = what or model.__name__
        summary = "; ".join(f"{p['loc']}: {p['msg']}" for p in problems[:5])
        raise MemoryValidationError(f"Invalid {label}: {summary}", problems) from None
