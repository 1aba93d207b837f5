"""Ranking, shared by every backend: BM25, the MaxScore candidate loop, and facets from
counts (the numbers the loop was tuned with are in :mod:`memory_admin.tuning`).

The formula is Okapi BM25 as SQLite FTS5 computes it (k1 = 1.2, b = 0.75, an idf
floor of 1e-6 for tokens in more than half the records), over a record's terms
(:func:`record_text`: the :func:`~memory_admin.tokenize.tokenize` terms of its content,
its tags and the date it was stated). Rare tokens weigh more than common ones: a record
matching the name a question is about outranks one matching three of its stopwords.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any, NamedTuple

from memory_admin import tuning
from memory_admin.scope import TENANT_KEY, Scope
from memory_admin.store.named_time import MONTHS
from memory_admin.store.protocol import ScopeFacet, ScopeValueCount
from memory_admin.tokenize import tokenize

if TYPE_CHECKING:
    from memory_admin.store.plan import SearchPlan

K1 = 1.2
B = 0.75
IDF_FLOOR = 1e-6

TF_FACTOR = K1 + 1
"""The most one occurrence-weighted token adds per unit of weight (term frequency → ∞)."""
PRESENCE_FACTOR = (K1 + 1) / (1 + K1 * (1 - B))
"""The most one token adds per unit of weight when presence stands for frequency (the
length factor is largest for the shortest record)."""


def idf(documents: int, document_frequency: int) -> float:
    value = math.log((documents - document_frequency + 0.5) / (document_frequency + 0.5))
    return value if value > 0 else IDF_FLOOR


@lru_cache(maxsize=4096)
def _day_words(year: int, month: int, day: int) -> str:
    return f"{day} {MONTHS[month - 1]} {year}"


def date_words(stated: datetime) -> str:
    """The words of the (UTC) day a record was stated, ``8 may 2023``: a question about
    "May 2023" or "the 8th" finds what was said then."""
    day = stated.astimezone(UTC)
    return _day_words(day.year, day.month, day.day)


def record_text(content: str, tags: Iterable[str], stated: datetime) -> str:
    """The text a record is matched and ranked on, in every backend: its content, its
    tags and :func:`date_words` of its ``observed_at``. Its terms are this text's
    :func:`~memory_admin.tokenize.tokenize`."""
    return f"{content} {' '.join(tags)} {date_words(stated)}"


@lru_cache(maxsize=4096)
def _date_tokens(words: str) -> tuple[str, ...]:
    return tuple(tokenize(words))


def record_tokens(content: str, tags: Iterable[str], stated: datetime) -> list[str]:
    """The terms of :func:`record_text`, in order — ``tokenize(record_text(…))`` — built
    part by part, so that a day's terms are tokenized once rather than once a record."""
    tokens = tokenize(content)
    listed = " ".join(tags)
    if listed:
        tokens += tokenize(listed)
    tokens += _date_tokens(date_words(stated))
    return tokens


def record_terms(content: str, tags: Iterable[str], stated: datetime) -> Counter[str]:
    """The bag of terms a record is matched and ranked on (of :func:`record_text`)."""
    return Counter(record_tokens(content, tags, stated))


def score(terms: Mapping[str, int], length: int, average_length: float, weights: Mapping[str, float]) -> float:
    """BM25 of one record (its token counts and length) for query tokens weighted by idf."""
    norm = K1 * (1 - B + B * length / (average_length or 1.0))
    total = 0.0
    for token, weight in weights.items():
        freq = terms.get(token, 0)
        if freq:
            total += weight * (freq * (K1 + 1)) / (freq + norm)
    return total


def contributions(
    terms: Mapping[str, int], length: int, average_length: float, weights: Mapping[str, float]
) -> dict[str, float]:
    """Each query token's part of :func:`score` for this record (the parts add up to it):
    why a hit ranked where it did."""
    norm = K1 * (1 - B + B * length / (average_length or 1.0))
    return {
        token: weight * (freq * (K1 + 1)) / (freq + norm)
        for token, weight in weights.items()
        if (freq := terms.get(token, 0))
    }


def token_contributions(tokens: Sequence[str], average_length: float, weights: Mapping[str, float]) -> dict[str, float]:
    """:func:`contributions` of a record's terms (:func:`record_tokens`): each query token
    it holds with its part of the record's BM25 (the parts add up to its score). Every
    candidate of a search is scored through this, so it counts the few query tokens in
    the record's terms rather than counting every term."""
    norm = K1 * (1 - B + B * len(tokens) / (average_length or 1.0))
    parts: dict[str, float] = {}
    for token, weight in weights.items():
        freq = tokens.count(token)
        if freq:
            parts[token] = weight * (freq * (K1 + 1)) / (freq + norm)
    return parts


def candidate_budget(needed: int) -> int:
    """Candidates a large scope's search may score when a page needs ``needed`` rows."""
    return max(tuning.CANDIDATE_BUDGET, needed * 4)


def fusion_budget(plan: SearchPlan) -> int:
    """Candidates the keyword side of a hybrid search may score in a large scope: what
    the plan's page costs in keyword mode, though the fusion takes more of them (every
    match of a scope ranked exhaustively, the best of those scored in a larger one).
    The semantic side brings the rest of the pool."""
    return candidate_budget(plan.needed)


class Scored(NamedTuple):
    """One ranked candidate: its score, when it was created and the backend's row key —
    in the order a ranking sorts them (relevance, then the newer record, then the later
    one in its batch)."""

    score: float
    created: Any
    key: int


class Candidates:
    """Scored candidates of one ranked search, keyed by the backend's row key."""

    def __init__(self) -> None:
        self.scored: dict[int, Scored] = {}

    def add(self, key: int, score: float, created: Any) -> None:
        self.scored[key] = Scored(score, created, key)

    def __contains__(self, key: object) -> bool:
        return key in self.scored

    def __len__(self) -> int:
        return len(self.scored)

    def ranked(self) -> list[Scored]:
        """Relevance, then the newer record, then the later one in its batch."""
        return sorted(self.scored.values(), reverse=True)


class MaxScore:
    """The candidate loop of a ranked search (SQLite runs it in every scope, without a
    budget in a small one; PostgreSQL in a large scope).

    Tokens come rarest first; each is fetched only while it can still lift a record into
    the first ``needed`` places — a record holding only the tokens not yet fetched
    scores at most ``factor`` times their summed weight, so once the page's last place
    beats that, no unseen record can reach it — and while the candidate budget has room.
    """

    def __init__(
        self,
        tokens: Sequence[str],
        weights: Mapping[str, float],
        factor: float,
        candidates: Candidates,
        *,
        needed: int,
        budget: int,
        considered: int = 0,
    ) -> None:
        self._tokens = list(tokens)
        self._weights = weights
        self._factor = factor
        self._candidates = candidates
        self._needed = needed
        self._budget = budget
        self.considered = considered
        self._index = 0

    def next(self) -> tuple[str, int] | None:
        """The next token to fetch and how many of its matches may be considered, or
        ``None`` when the ranking is settled."""
        if self._index >= len(self._tokens):
            return None
        page = self._candidates.ranked()
        remaining = self._tokens[self._index :]
        if len(page) >= self._needed and page[self._needed - 1][0] > self._factor * sum(
            self._weights[t] for t in remaining
        ):
            return None
        room = self._budget - self.considered
        if room <= 0:
            return None
        self._index += 1
        return remaining[0], room

    def fetched(self, considered: int) -> None:
        """Report how many candidates fetching the last token considered."""
        self.considered += considered


def build_facets(
    counts_by_scope: Mapping[str, int], scopes: Mapping[str, Scope], values_per_key: int
) -> list[ScopeFacet]:
    """Facets from record counts per distinct scope (keyed by canonical JSON)."""
    by_key: dict[str, Counter[str]] = {}
    for text, count in counts_by_scope.items():
        for key, value in scopes[text].items():
            by_key.setdefault(key, Counter())[value] += count
    return facets_from_counts(by_key, values_per_key)


def facets_from_counts(by_key: Mapping[str, Counter[str]], values_per_key: int) -> list[ScopeFacet]:
    """Facets from record counts per scope key and value: the tenant first, then keys
    alphabetically; values by count, then name."""
    facets = []
    for key in sorted(by_key, key=lambda k: (k != TENANT_KEY, k)):
        values = by_key[key]
        ordered = sorted(values.items(), key=lambda item: (-item[1], item[0]))
        facets.append(
            ScopeFacet(
                key=key,
                records=sum(values.values()),
                values=[ScopeValueCount(value=v, records=n) for v, n in ordered[:values_per_key]],
                more_values=len(ordered) > values_per_key,
            )
        )
    return facets
