"""SQLite search: scoped listings over the recency indexes, and ranked search with FTS5
finding candidates and BM25 (in Python) ranking them.

Each record's scope pairs are in the full-text index as hidden tokens, so a
user-scoped query is one FTS5 expression, ``pair-tokens AND (q1 OR q2 …)``. User text
is only ever matched as quoted tokens of :func:`~memory_admin.tokenize.tokenize`; it can
never be FTS syntax. The index holds Python's own terms of each record (:mod:`.terms`).
"""

from __future__ import annotations

import functools
import json
import threading
import time
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, NamedTuple, NoReturn

from memory_admin import tuning
from memory_admin.errors import MemoryStoreError
from memory_admin.records import MemoryHit, MemoryRecord
from memory_admin.scope import AGENT_KEY, TENANT_KEY, Scope, scope_json, visible_scopes
from memory_admin.steps import Steps
from memory_admin.store import ranking
from memory_admin.store.caches import ReadAgainCache
from memory_admin.store.plan import Candidate, Cursor, SearchPlan, context
from memory_admin.store.session import Statement
from memory_admin.store.sql.dialect import SQLITE, json_list, record_filters
from memory_admin.store.sql.rows import (
    AGENT_MARK,
    RECORD_FROM,
    SQLITE_NAMES,
    SQLITE_SELECT,
    RecordCache,
    RecordCodec,
    filter_tokens,
    tenant_pair_token,
)
from memory_admin.store.sqlite.terms import memory_terms

_RID, _CREATED = SQLITE_NAMES.index("rid"), SQLITE_NAMES.index("created_at")
_SCORED_COLUMNS = (
    "SELECT r.rid, r.id, r.scope_id, r.content, r.tags, r.created_at, coalesce(r.observed_at, r.created_at)"
)


def reading_is_cheaper(frequency: int, docs: int, scope_size: int, unseen: int) -> bool:
    """Whether a small scope's search should read and score the ``unseen`` records of the
    scope rather than probe the index for a token matching ``frequency`` records of
    ``docs``: the probe walks the token's posting list and scores what it finds (about
    the scope's share of the token's matches), the read scores every unseen record."""
    found = min(unseen, scope_size * frequency / max(docs, 1))
    return (
        tuning.SCORED_ROW_US * unseen < tuning.PROBE_US + tuning.POSTING_US * frequency + tuning.SCORED_ROW_US * found
    )


DAY_US = 86_400_000_000


@functools.lru_cache(maxsize=4096)
def _day(index: int) -> datetime:
    """The UTC midnight of a day (microseconds // :data:`DAY_US`): a record's date words
    need only its day, and scoring a candidate should not build a datetime each time."""
    return datetime.fromtimestamp(index * 86_400, UTC)


def quote(token: str) -> str:
    # tokens hold letters and digits only, so quoting cannot be escaped out of
    return '"' + token.replace('"', '""') + '"'


# --- which stored scopes a search reaches: (scope_id, n_records) pairs ------------------


def stored_subset(scope: Scope, agent: str | None) -> Steps[Statement, list[tuple[int, int]]]:
    """Every stored scope containing ``scope``'s pairs (the agent convention applied)."""
    # the tenant column narrows; the other pairs' (small) scope lists are intersected
    pairs = [(key, value) for key, value in scope.items() if key != TENANT_KEY]
    sql = "SELECT s.scope_id, s.n_records FROM memory_scopes s WHERE s.tenant = ?"
    params: list[Any] = [scope[TENANT_KEY]]
    if pairs:
        sql += (
            " AND s.scope_id IN ("
            + " INTERSECT ".join("SELECT scope_id FROM memory_scope_pairs WHERE key = ? AND value = ?" for _ in pairs)
            + ")"
        )
        params += [item for pair in pairs for item in pair]
    if agent is not None:
        sql += (
            " AND NOT EXISTS (SELECT 1 FROM memory_scope_pairs a WHERE a.scope_id = s.scope_id "
            "AND a.key = ? AND a.value <> ?)"
        )
        params += [AGENT_KEY, agent]
    rows = yield Statement(sql, params, raw=True)
    return [(int(r[0]), int(r[1])) for r in rows]


def stored_visible(viewer: Scope, agent: str | None) -> Steps[Statement, list[tuple[int, int]]]:
    """Every stored scope whose pairs all lie in ``viewer`` (:func:`~memory_admin.scope.visible_scopes`)."""
    candidates = [scope_json(s) for s in visible_scopes(viewer, agent)]
    rows = yield Statement(
        "SELECT scope_id, n_records FROM memory_scopes WHERE scope IN (SELECT value FROM json_each(?))",
        [json_list(candidates)],
        raw=True,
    )
    return [(int(r[0]), int(r[1])) for r in rows]


def stored_reached(plan: SearchPlan) -> Steps[Statement, list[tuple[int, int]]]:
    """The stored scopes a plan reaches, by its scope match."""
    query = plan.query
    if query.scope_match == "visible":
        return (yield from stored_visible(query.scope, query.agent))
    return (yield from stored_subset(query.scope, query.agent))


class TermStatistics:
    """Corpus statistics for BM25, cached in the process and refreshed as the corpus
    changes: record count, average record length, and per-token document frequency.

    Frequencies are exact up to :data:`DF_SAMPLE`; beyond it they are estimated from
    how much of the id space the newest matches span, which is plenty for a weight that
    is nearly zero anyway.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._docs = 0
        self._average = 1.0
        self._df: dict[str, int] = {}
        self._mark = -1
        self._at = 0.0

    def reset(self) -> None:
        """Forget the statistics (the frequencies name the words searched for)."""
        with self._lock:
            self._mark = -1
            self._df.clear()

    def statistics(self, tokens: Sequence[str]) -> Steps[Statement, tuple[int, float, dict[str, int]]]:
        top = int((yield Statement("SELECT coalesce(max(rid), 0) FROM memory_records", raw=True))[0][0])
        with self._lock:
            # small stores refresh on any change (it is cheap); large ones when they grew 5%
            changed = top != self._mark and (top < 10_000 or abs(top - self._mark) > self._mark // 20)
            if changed or time.monotonic() - self._at > tuning.STATS_TTL_S:
                yield from self._refresh(top)
            known = {t: self._df[t] for t in tokens if t in self._df}
            docs, average = self._docs, self._average
        for token in tokens:
            if token not in known:
                known[token] = yield from self._frequency(token, top, docs)
        with self._lock:
            if len(self._df) > 200_000:
                self._df.clear()
            self._df.update(known)
        return docs, average, known

    def _refresh(self, top: int) -> Steps[Statement, None]:
        rows = yield Statement("SELECT coalesce(sum(n_records), 0) FROM memory_scopes", raw=True)
        self._docs = int(rows[0][0])
        # a sample for the average length, in the index's own terms, which a corrupt row
        # cannot break (the row itself is reported when a query reaches it)
        sample = yield Statement(
            "SELECT content, tags, coalesce(observed_at, created_at) FROM memory_records ORDER BY rid DESC LIMIT 1000",
            raw=True,
        )
        lengths = [len(memory_terms(*row).split()) for row in sample if isinstance(row[2], int)]
        self._average = (sum(lengths) / len(lengths)) if lengths else 1.0
        self._df.clear()
        self._mark = top
        self._at = time.monotonic()

    @staticmethod
    def _frequency(token: str, top: int, docs: int) -> Steps[Statement, int]:
        rows = yield Statement(
            "SELECT min(rid), count(*) FROM (SELECT rowid AS rid FROM memory_fts WHERE memory_fts MATCH ? "
            "ORDER BY rowid DESC LIMIT ?)",
            [f"terms : {quote(token)}", tuning.DF_SAMPLE],
            raw=True,
        )
        oldest, count = rows[0]
        matched = int(count)
        if matched < tuning.DF_SAMPLE:
            return matched
        return min(docs, round(matched * top / max(top - int(oldest) + 1, 1)))


class _Held(NamedTuple):
    """What ranking learnt of a candidate, for its hit or its fusion candidate."""

    stored_id: Any
    parts: dict[str, float]
    scope_id: int
    stated: int
    length: int


class Search:
    """The search primitive of a SQLite store, and what it keeps of its reads."""

    def __init__(self) -> None:
        self.d = SQLITE
        self.terms = TermStatistics()
        self.records = RecordCache(RecordCodec(SQLITE_NAMES, SQLITE))
        """The records this store built last (:class:`~memory_admin.store.sql.rows.RecordCache`)."""
        self.tokens: ReadAgainCache[tuple[str, str | None, int], tuple[str, ...]] = ReadAgainCache(
            tuning.TOKEN_CACHE_SIZE
        )
        """The terms of the candidates this store scored last, by (content, tags, day):
        a tenant's shared records are scored in most of its users' searches."""

    def forget(self) -> None:
        """Drop every record, term and statistic kept from earlier reads (after a forgetting)."""
        self.records.clear()
        self.tokens.clear()
        self.terms.reset()

    def record_tokens(self, content: str, tags: str | None, stated: int) -> tuple[str, ...]:
        """A scored row's terms (:func:`~memory_admin.store.ranking.record_tokens`) from its
        stored columns: ``tags`` as JSON, ``stated`` in microseconds."""
        day = stated // DAY_US
        return self.tokens.get(
            (content, tags, day),
            lambda: tuple(ranking.record_tokens(content, json.loads(tags) if tags else (), _day(day))),
        )

    def page(self, plan: SearchPlan) -> Steps[Statement, tuple[list[MemoryHit], Cursor | None]]:
        """A page of a listing (newest first) or of a ranked search (most relevant first)."""
        if plan.ranked:
            return (yield from self._ranked(plan))
        return (yield from self._recent(plan))

    def read_records(self, rows: Iterable[tuple[Any, ...]]) -> list[MemoryRecord]:
        """The records of raw :data:`~memory_admin.store.sql.rows.SQLITE_SELECT` rows,
        however they were read (a row read again is looked up as it came, not built: a
        recall reads a user's profile records each time)."""
        return [self.records.record(row) for row in rows]

    def _recent(self, plan: SearchPlan) -> Steps[Statement, tuple[list[MemoryHit], Cursor | None]]:
        scopes = yield from stored_reached(plan)
        matching = sum(n for _, n in scopes)
        if matching <= 0:
            return [], None
        filters, params = record_filters(self.d, plan)
        if plan.cursor is not None:
            filters += " AND (r.created_at, r.rid) < (?, ?)"
            params += [plan.cursor.created_us, plan.cursor.seq]
        order = "ORDER BY r.created_at DESC, r.rid DESC LIMIT ?"
        select = SQLITE_SELECT + " FROM memory_records r {index} JOIN memory_scopes s ON s.scope_id = r.scope_id"
        args: list[Any]
        if len(scopes) <= tuning.FEW_SCOPES:
            # a few scopes: walk each one's index newest-first, stop at the limit, merge;
            # the scopes' text is joined to the page only (joined inside, the planner
            # sorts each scope's every row instead of walking its index)
            profiles = plan.query.kinds == ("profile",)
            index = "memory_records_profile_recent" if profiles else "memory_records_scope_recent"
            part = (
                f"SELECT * FROM (SELECT r.* FROM memory_records r INDEXED BY {index} "
                f"WHERE r.scope_id = ? AND {filters} {order})"
            )
            sql = (
                SQLITE_SELECT
                + " FROM ("
                + " UNION ALL ".join([part] * len(scopes))
                + ") r JOIN memory_scopes s ON s.scope_id = r.scope_id "
                + order
            )
            args = [value for sid, _ in scopes for value in (sid, *params, plan.limit + 1)]
        else:
            top = yield Statement("SELECT coalesce(max(rid), 0) FROM memory_records", raw=True)
            store_size = int(top[0][0])
            # walking the global recency index costs about limit / (share of matching rows)
            # entries; gathering and sorting the scopes' rows costs about `matching`
            walk_cost = (plan.limit + 1) * max(store_size, 1) / matching / 8
            index = "memory_records_recent" if walk_cost < matching else "memory_records_scope_recent"
            sql = (
                select.format(index=f"INDEXED BY {index}")
                + f" WHERE r.scope_id IN (SELECT value FROM json_each(?)) AND {filters} {order}"
            )
            args = [json_list(sid for sid, _ in scopes), *params]
        rows = yield Statement(sql, [*args, plan.limit + 1], raw=True)
        hits = [MemoryHit(record=record) for record in self.read_records(rows[: plan.limit])]
        if len(rows) > plan.limit:
            last = rows[plan.limit - 1]
            return hits, Cursor(created_us=int(last[_CREATED]), seq=int(last[_RID]))
        return hits, None

    @staticmethod
    def _filter_expression(plan: SearchPlan) -> Steps[Statement, tuple[str, int] | None]:
        """The hidden-token part of a MATCH (scope, kinds, the agent convention) and how
        many records the scope holds. ``None`` when no stored scope can match."""
        query = plan.query
        parts: list[str] = []
        if query.scope_match == "visible":
            scopes = yield from stored_visible(query.scope, None)
            parts.append("meta : (" + " OR ".join(f"s{sid}" for sid, _ in scopes) + ")")
        else:
            scopes = yield from stored_subset(query.scope, None)
            parts.append("meta : (" + " AND ".join(filter_tokens(query.scope)) + ")")
        if not scopes:
            return None
        if query.kinds is not None:
            parts.append("meta : (" + " OR ".join(f"k{kind}" for kind in query.kinds) + ")")
        expression = " AND ".join(f"({part})" for part in parts)
        if query.agent is not None:
            mine = tenant_pair_token(query.scope[TENANT_KEY], AGENT_KEY, query.agent)
            expression = f"({expression}) NOT (meta : ({AGENT_MARK} NOT {mine}))"
        return expression, sum(n for _, n in scopes)

    def _raise_corrupt(self, rid: int) -> Steps[Statement, NoReturn]:
        rows = yield Statement(SQLITE_SELECT + RECORD_FROM + " WHERE r.rid = ?", [rid], raw=True)
        self.read_records(rows)  # raises MemoryCorruptionError with the raw row
        raise MemoryStoreError(f"row {rid} failed to index but validates; run PRAGMA integrity_check")

    def _ranked(self, plan: SearchPlan) -> Steps[Statement, tuple[list[MemoryHit], Cursor | None]]:
        found = yield from self._rank(plan, plan.needed)
        if found is None:
            return [], None
        ranked, held = found
        page = ranked[plan.offset : plan.offset + plan.limit]
        rows = yield Statement(
            SQLITE_SELECT + RECORD_FROM + " WHERE r.rid IN (SELECT value FROM json_each(?))",
            [json_list(hit.key for hit in page)],
            raw=True,
        )
        by_rid = {row[_RID]: record for row, record in zip(rows, self.read_records(rows), strict=True)}
        hits = [MemoryHit(record=by_rid[hit.key], score=hit.score, terms=held[hit.key].parts) for hit in page]
        more = len(ranked) > plan.offset + plan.limit
        return hits, Cursor(offset=plan.offset + plan.limit) if more else None

    def candidates(self, plan: SearchPlan, limit: int) -> Steps[Statement, list[Candidate]]:
        """The ``limit`` best keyword matches as fusion candidates: ids, scores and term
        parts, all known from ranking (no record is read for them). In a large scope it
        scores no more candidates than the plan's own page would
        (:func:`~memory_admin.store.ranking.fusion_budget`)."""
        found = yield from self._rank(plan, limit + 1, ranking.fusion_budget(plan))
        if found is None:
            return []
        ranked, held = found
        candidates = []
        for hit in ranked[:limit]:
            found_out = held[hit.key]
            where = context(found_out.scope_id, self.d.from_db_time(found_out.stated))
            candidates.append(
                Candidate(
                    self.d.id_text(found_out.stored_id), hit.score, found_out.parts, where, length=found_out.length
                )
            )
        return candidates

    def _rank(
        self, plan: SearchPlan, needed: int, budget: int | None = None
    ) -> Steps[Statement, tuple[list[ranking.Scored], dict[int, _Held]] | None]:
        """Relevance search: FTS5 finds candidates, BM25 ranks them in Python. Returns
        the ranking and what it learnt of each candidate (:class:`_Held`);
        ``None`` when no stored scope can match. ``budget`` caps the candidates a large
        scope scores (by default :func:`~memory_admin.store.ranking.candidate_budget`).

        FTS5's own bm25() scans every query token's whole posting list to weigh it, so
        a common word (or a tenant's scope token) costs O(records containing it) per
        query. Instead, weights come from cached document frequencies and candidates are
        gathered token by token, rarest first (:class:`~memory_admin.store.ranking.MaxScore`).
        The ranking is exact in scopes of up to
        :data:`~memory_admin.tuning.SMALL_SCOPE` records (no candidate budget; once
        probing a token would cost more than reading the scope's unseen rows,
        :func:`reading_is_cheaper`, they are read and scored instead), and in larger ones
        unless a token's matches exhaust the candidate budget; then the most common
        tokens contribute only their newest matches. The ``needed`` best are exact.
        """
        found = yield from self._filter_expression(plan)
        if found is None:
            return None
        scope_filter, scope_size = found
        docs, average, frequencies = yield from self.terms.statistics(plan.tokens)
        weights = {token: ranking.idf(docs, frequencies[token]) for token in plan.tokens}
        budget = budget or ranking.candidate_budget(needed)
        filters, params = record_filters(self.d, plan)
        candidates = ranking.Candidates()
        held: dict[int, _Held] = {}

        def matches(token: str, limit: int) -> Steps[Statement, list[int]]:
            rows = yield Statement(
                "SELECT rowid FROM memory_fts WHERE memory_fts MATCH ? ORDER BY rowid DESC LIMIT ?",
                [f"({scope_filter}) AND (terms : {quote(token)})", limit],
                raw=True,
            )
            return [int(row[0]) for row in rows]

        def score_rows(rows: Iterable[tuple[Any, ...]], *, matched: bool) -> Steps[Statement, int]:
            added = 0
            for rid, stored_id, scope_id, content, tags, created, stated in rows:
                try:
                    if not isinstance(created, int):
                        raise TypeError(created)
                    tokens = self.record_tokens(content, tags, stated)
                except (ValueError, TypeError, AttributeError, OverflowError, OSError):
                    yield from self._raise_corrupt(rid)
                parts = ranking.token_contributions(tokens, average, weights)
                if matched or parts:  # every weight is positive: no part means no query word
                    candidates.add(rid, sum(parts.values()), created)
                    held[rid] = _Held(stored_id, parts, scope_id, stated, len(content))
                    added += 1
            return added

        def score(rids: Sequence[int]) -> Steps[Statement, int]:
            added = 0
            for start in range(0, len(rids), 500):
                rows = yield Statement(
                    _SCORED_COLUMNS + " FROM memory_records r "
                    f"WHERE r.rid IN (SELECT value FROM json_each(?)) AND {filters}",
                    [json_list(rids[start : start + 500]), *params],
                    raw=True,
                )
                added += yield from score_rows(rows, matched=True)
            return added

        small = scope_size <= max(tuning.SMALL_SCOPE, budget)
        by_rarity = sorted(plan.tokens, key=lambda t: frequencies[t])
        if small:
            # ranked exactly: a budget no token can exhaust (every fetch may take all of the
            # scope's matches), and a token that costs more to probe than the rest of the
            # scope costs to read ends the probing — the scope's unseen rows are read and
            # scored instead (a common word in a user's scope)
            budget = scope_size * (len(by_rarity) + 1)
        loop = ranking.MaxScore(by_rarity, weights, ranking.TF_FACTOR, candidates, needed=needed, budget=budget)
        while (step := loop.next()) is not None:
            token, room = step
            if small:
                unseen = scope_size - len(candidates)
                if reading_is_cheaper(frequencies[token], docs, scope_size, unseen):
                    scope_ids = json_list(sid for sid, _ in (yield from stored_reached(plan)))
                    rows = yield Statement(
                        _SCORED_COLUMNS + " FROM memory_records r "
                        f"WHERE r.scope_id IN (SELECT value FROM json_each(?)) AND {filters}",
                        [scope_ids, *params],
                        raw=True,
                    )
                    yield from score_rows((row for row in rows if row[0] not in candidates), matched=False)
                    break
            fresh = [rid for rid in (yield from matches(token, room)) if rid not in candidates]
            loop.fetched((yield from score(fresh)))
        return candidates.ranked(), held


__all__ = ["Search", "TermStatistics", "quote", "stored_reached", "stored_subset", "stored_visible"]
