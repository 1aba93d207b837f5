"""A validated search, and the cursor of its next page: what every backend's search
primitive receives."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from memory_admin import tuning
from memory_admin.errors import MemoryValidationError
from memory_admin.records import MemorySearchQuery, SearchMode

MAX_CURSOR_VALUE = 2**63 - 1
"""Cursor numbers are 64-bit signed integers in every backend."""


def now_us(moment: datetime) -> int:
    """Microseconds since the epoch: the integer time every SQL backend compares on."""
    return (int(moment.timestamp()) * 1_000_000) + moment.microsecond


def from_us(value: int) -> datetime:
    """The UTC time of a count of microseconds since the epoch (:func:`now_us` inverted)."""
    return datetime.fromtimestamp(value // 1_000_000, UTC).replace(microsecond=value % 1_000_000)


@dataclass(frozen=True)
class Cursor:
    """Where the next page starts: after ``(created_us, seq)`` for a recency listing,
    at ``offset`` for a ranked one."""

    created_us: int | None = None
    seq: int | None = None
    offset: int | None = None

    def encode(self) -> str:
        if self.offset is not None:
            return f"o{self.offset}"
        return f"r{self.created_us}.{self.seq}"

    @classmethod
    def decode(cls, text: str) -> Cursor:
        try:
            if text.startswith("o"):
                offset = int(text[1:])
                if not 0 <= offset <= MAX_CURSOR_VALUE:
                    raise ValueError
                return cls(offset=offset)
            if text.startswith("r"):
                created, _, seq = text[1:].partition(".")
                cursor = cls(created_us=int(created), seq=int(seq))
                if not all(abs(value) <= MAX_CURSOR_VALUE for value in (cursor.created_us or 0, cursor.seq or 0)):
                    raise ValueError
                return cursor
        except ValueError:
            pass
        raise MemoryValidationError(
            "That page cursor is not one this store issued; start from the first page.",
            [{"loc": "cursor", "msg": "malformed cursor"}],
        )


@dataclass(frozen=True)
class SearchPlan:
    """A validated search, ready for a backend."""

    query: MemorySearchQuery
    tokens: tuple[str, ...]
    now: datetime
    limit: int
    include_expired: bool = False
    cursor: Cursor | None = None
    mode: SearchMode = "keyword"
    """How a ranked plan matches (resolved: never ``None``)."""
    vector: Any = None
    """The query's embedding, once a semantic or hybrid search has computed it (moved by
    the model's query map: :mod:`~memory_admin.embed.query_map`), which orders records."""
    own: Any = None
    """The query's embedding as the model made it (``None``: :attr:`vector`), from which
    each candidate's cosine — its ``semantic_score``, what the relevance floor reads — is
    measured: the map reorders, the model's own similarity says what matches."""

    @property
    def by_centre(self) -> bool:
        """Whether the semantic side ranks by the cosine measured from the searched
        records' centre (a fusion: hybrid and quality, unless
        :data:`~memory_admin.tuning.FUSION_CENTRING` is off) rather than the plain cosine
        (a semantic search: the model's own similarity, which holds on data of every
        shape; see docs/search.md)."""
        return self.mode != "semantic" and tuning.FUSION_CENTRING

    @property
    def ranked(self) -> bool:
        return self.query.query is not None

    @property
    def empty(self) -> bool:
        """True when the plan can match nothing: ``limit=0``, a query without tokens (no
        letters or digits, so it shares no token with any record), or an empty list of
        ``kinds`` or ``keys`` (a record must have one of those listed: there is none).
        Such a plan is answered without reaching a backend."""
        query = self.query
        return self.limit == 0 or (self.ranked and not self.tokens) or query.kinds == () or query.keys == ()

    @property
    def offset(self) -> int:
        """Where a ranked page starts."""
        return (self.cursor.offset or 0) if self.cursor is not None else 0

    @property
    def needed(self) -> int:
        """Ranked rows a page reads: up to its last, and one more to tell whether more follow."""
        return self.offset + self.limit + 1


@dataclass(frozen=True, slots=True)
class Candidate:
    """One side's hit before a semantic or hybrid search fuses and pages: the record's id
    and its score on that side (BM25 or cosine), and for a keyword match the query terms
    it holds with their parts of the score. No record is built for it: the page's records
    are read (and checked) once the order is known."""

    id: str
    score: float
    terms: dict[str, float] | None = None
    context: Hashable = None
    """Where the record was stated: its stored scope and the UTC day of its
    ``observed_at`` (:func:`context`); a search by meaning lifts a strong hit's context."""
    cosine: float | None = None
    """A semantic candidate's plain cosine similarity to the query (its ``score`` is the
    one its side ranked by: the cosine measured from the searched records' centre, for a
    fusion; see :attr:`SearchPlan.by_centre`)."""
    length: int | None = None
    """How many characters the record's content holds (what a fusion's
    :func:`~memory_admin.embed.fusion.length_prior` reads); ``None`` when the side did not say."""


def context(scope: Hashable, stated: datetime) -> Hashable:
    """A candidate's :attr:`Candidate.context`: records of one scope stated on one day
    (a conversation, as far as a store can tell) share it."""
    return (scope, stated.astimezone(UTC).toordinal())


def context_day(where: Hashable) -> int | None:
    """The day (proleptic ordinal) a :func:`context` names; ``None`` for no context."""
    return int(where[1]) if isinstance(where, tuple) else None


__all__ = ["MAX_CURSOR_VALUE", "Candidate", "Cursor", "SearchPlan", "context", "context_day", "from_us", "now_us"]
