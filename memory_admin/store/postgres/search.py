"""PostgreSQL search: listings over the recency indexes and ranked search by BM25 over
``tsvector`` matches (:mod:`.index` says what the index holds).

A user-scoped search is one GIN expression, ``pairs & (t1 | t2 …)``, that never visits
another scope's matches. Ranking is BM25 computed in SQL over the matches, with
collection statistics of the searched scopes (counters kept by triggers) and a token's
presence standing for its frequency.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from memory_admin import tuning
from memory_admin.errors import MemoryValidationError
from memory_admin.records import MemoryHit, MemoryRecord
from memory_admin.scope import AGENT_KEY, TENANT_KEY, scope_json, visible_scopes
from memory_admin.steps import Steps
from memory_admin.store import ranking
from memory_admin.store.plan import Candidate, Cursor, SearchPlan, context
from memory_admin.store.postgres.index import (
    AGENT_LEXEME,
    all_of,
    any_of,
    kind_lexeme,
    lexeme,
    pair_lexeme,
    pair_lexemes,
    quote,
    scope_lexeme,
    scope_text_lexeme,
)
from memory_admin.store.session import Statement
from memory_admin.store.sql.dialect import POSTGRES, record_filters
from memory_admin.store.sql.rows import POSTGRES_NAMES, POSTGRES_SELECT, RECORD_FROM, RecordCache, RecordCodec

Row = dict[str, Any]


def _cursor_time(created_us: int) -> datetime:
    try:
        return datetime.fromtimestamp(created_us // 1_000_000, UTC).replace(microsecond=created_us % 1_000_000)
    except (OverflowError, OSError, ValueError):
        raise MemoryValidationError(
            "That page cursor is not one this store issued; start from the first page.",
            [{"loc": "cursor", "msg": "malformed cursor"}],
        ) from None


def _created_us(moment: datetime) -> int:
    return int(moment.timestamp()) * 1_000_000 + moment.microsecond


# --- search ---------------------------------------------------------------------------


def scope_condition(plan: SearchPlan, alias: str = "sc") -> tuple[str, list[Any]]:
    """Which stored scopes a plan reaches (subset or visible match, agent convention)."""
    query = plan.query
    if query.scope_match == "visible":
        texts = [scope_json(s) for s in visible_scopes(query.scope, query.agent)]
        return f"{alias}.scope = ANY(%s::text[])", [texts]
    where = f"{alias}.lexemes @> %s::text[]"
    params: list[Any] = [pair_lexemes(query.scope)]
    if query.agent is not None:
        where += f" AND (NOT %s = ANY({alias}.lexemes) OR %s = ANY({alias}.lexemes))"
        params += [AGENT_LEXEME, pair_lexeme(AGENT_KEY, query.agent)]
    return where, params


def filter_tsquery(plan: SearchPlan, scope_texts: Sequence[str] | None = None) -> str:
    """What a match needs besides the query's tokens, as a tsquery. Given the reached
    scopes (their canonical JSON, when they are few): the OR of their whole-scope
    lexemes, whose postings hold only those scopes' records — a user's, not every
    tenant's user of that name — and already honour the agent convention (kinds are
    then left to the row filter). Otherwise the scope pairs (or the visible candidates),
    the agent convention and the kinds."""
    query = plan.query
    if scope_texts is not None:
        return any_of(scope_text_lexeme(text) for text in scope_texts)
    if query.scope_match == "visible":
        parts = [any_of(scope_lexeme(s) for s in visible_scopes(query.scope, query.agent))]
    else:
        parts = [all_of(pair_lexemes(query.scope))]
        if query.agent is not None:
            parts.append(f"(!{quote(AGENT_LEXEME)} | {quote(pair_lexeme(AGENT_KEY, query.agent))})")
    if query.kinds is not None:
        parts.append(any_of(kind_lexeme(kind) for kind in query.kinds))
    return " & ".join(parts)


def match_tsquery(plan: SearchPlan) -> str:
    """The whole search as one tsquery: scope lexemes, kinds, the agent convention and
    the query's tokens OR-ed. Every lexeme is quoted, and tokens hold letters and digits
    only, so no user text can become tsquery syntax."""
    return filter_tsquery(plan) + " & " + any_of(lexeme(token) for token in plan.tokens)


def scope_ids(plan: SearchPlan) -> Steps[Statement, list[int] | None]:
    """The ids of the stored scopes a plan reaches, when they are few (else ``None``)."""
    scope_where, scope_params = scope_condition(plan)
    rows = yield Statement(
        f"SELECT sc.scope_id FROM memory_scopes sc WHERE {scope_where} ORDER BY sc.scope_id LIMIT %s",
        [*scope_params, tuning.FEW_SCOPES + 1],
    )
    return [int(row["scope_id"]) for row in rows] if len(rows) <= tuning.FEW_SCOPES else None


class TermFrequencies:
    """How common the commonest lexemes are, from PostgreSQL's own sample of the index
    column (``pg_stats.most_common_elems`` of ``memory_records.tsv``, which ANALYZE and
    autovacuum refresh), cached per store for a few minutes. A large scope's search reads
    it to tell which tokens match so much of the scope that fetching all their matches
    would cost more than ranking their newest ones. Without statistics (a table never
    analyzed) no token counts as common and every search ranks exhaustively."""

    def __init__(self) -> None:
        self._shares: dict[str, float] = {}
        self._at = -math.inf

    def shares(self) -> Steps[Statement, dict[str, float]]:
        if time.monotonic() - self._at < tuning.STATS_TTL_S:
            return self._shares
        rows = yield Statement(
            "SELECT st.most_common_elems::text::text[] AS lexemes, st.most_common_elem_freqs AS shares "
            "FROM pg_stats st JOIN pg_class c ON c.relname = st.tablename "
            "JOIN pg_namespace ns ON ns.oid = c.relnamespace AND ns.nspname = st.schemaname "
            "WHERE c.oid = 'memory_records'::regclass AND st.attname = 'tsv'"
        )
        shares: dict[str, float] = {}
        if rows and rows[0]["lexemes"] is not None:
            # the shares array ends with three summary numbers; zip stops at the last lexeme
            shares = dict(zip(rows[0]["lexemes"], map(float, rows[0]["shares"]), strict=False))
        self._shares, self._at = shares, time.monotonic()
        return shares


class PostgresSearch:
    """The search primitive of a PostgreSQL store, and what it keeps of its reads: the
    records it built (:class:`~memory_admin.store.sql.rows.RecordCache`) and the index's
    common lexemes (:class:`TermFrequencies`)."""

    def __init__(self) -> None:
        self.frequencies = TermFrequencies()
        self.records = RecordCache(RecordCodec(POSTGRES_NAMES, POSTGRES))

    def record(self, row: Mapping[str, Any]) -> MemoryRecord:
        """The record of a row read by column name (a record select's columns among its own)."""
        return self.records.record(self.records.codec.values_of(row))

    def page(self, plan: SearchPlan) -> Steps[Statement, tuple[list[MemoryHit], Cursor | None]]:
        """A page of a listing (newest first) or of a ranked search (most relevant first)."""
        if plan.empty:
            return [], None
        return (yield from self._ranked(plan) if plan.ranked else self._recent(plan))

    def _recent(self, plan: SearchPlan) -> Steps[Statement, tuple[list[MemoryHit], Cursor | None]]:
        filters, params = record_filters(POSTGRES, plan)
        if plan.cursor is not None:
            filters += " AND (r.created_at, r.seq) < (%s, %s)"
            params += [_cursor_time(plan.cursor.created_us or 0), plan.cursor.seq]
        found_ids = yield from scope_ids(plan)
        if found_ids == []:
            return [], None
        if found_ids is not None:
            # a few scopes (a user's, and that user's with each agent): each one's recency
            # index walked newest-first, top rows merged — never the tenant's records
            one = (
                f"({POSTGRES_SELECT}{RECORD_FROM} WHERE r.scope_id = %s AND {filters} "
                "ORDER BY r.created_at DESC, r.seq DESC LIMIT %s)"
            )
            rows = yield Statement(
                "SELECT * FROM (" + " UNION ALL ".join([one] * len(found_ids)) + ") c "
                "ORDER BY c.created_at DESC, c.seq DESC LIMIT %s",
                [*(value for sid in found_ids for value in (sid, *params, plan.limit + 1)), plan.limit + 1],
            )
        else:
            scope_where, scope_params = scope_condition(plan)
            rows = yield Statement(
                POSTGRES_SELECT + RECORD_FROM + " WHERE r.tenant = %s "
                f"AND r.scope_id IN (SELECT sc.scope_id FROM memory_scopes sc WHERE {scope_where}) AND {filters} "
                "ORDER BY r.created_at DESC, r.seq DESC LIMIT %s",
                [plan.query.scope[TENANT_KEY], *scope_params, *params, plan.limit + 1],
            )
        hits = [MemoryHit(record=self.record(row)) for row in rows[: plan.limit]]
        if len(rows) > plan.limit:
            last = rows[plan.limit - 1]
            return hits, Cursor(created_us=_created_us(last["created_at"]), seq=int(last["seq"]))
        return hits, None

    def _ranked(self, plan: SearchPlan) -> Steps[Statement, tuple[list[MemoryHit], Cursor | None]]:
        """A page of a relevance search (:meth:`_rank`), its records read whole."""
        found = yield from self._rank(plan, plan.needed)
        if found is None:
            return [], None
        search, page = found
        shown = yield from _whole(search, page[plan.offset : plan.offset + plan.limit])
        hits = [
            MemoryHit(
                record=self.record(search.records[seq]), score=score, terms=_parts(search.records[seq], plan, search)
            )
            for score, seq in shown
        ]
        return hits, Cursor(offset=plan.offset + plan.limit) if len(page) > plan.offset + plan.limit else None

    def candidates(self, plan: SearchPlan, limit: int) -> Steps[Statement, list[Candidate]]:
        """The ``limit`` best keyword matches as fusion candidates (ids, scores, term parts);
        a large scope scores no more candidates than the plan's own page would."""
        found = yield from self._rank(plan, limit + 1, ranking.fusion_budget(plan))
        if found is None:
            return []
        search, page = found
        shown = yield from _whole(search, page[:limit])
        return [
            Candidate(
                str(row["id"]),
                score,
                _parts(row, plan, search),
                context(row["scope_id"], POSTGRES.from_db_time(row["observed_at"] or row["created_at"])),
                length=len(row["content"]),
            )
            for score, seq in shown
            if (row := search.records[seq]) is not None
        ]

    def _rank(
        self, plan: SearchPlan, needed: int, budget: int | None = None
    ) -> Steps[Statement, tuple[_Ranking, list[ranking.Scored]] | None]:
        """Relevance search: BM25 over the searched scopes, the same rules as SQLite's; the
        ``needed`` best are exact. ``None`` when no stored scope can match.

        The collection is the searched scopes (record and token counters kept by triggers);
        a token's presence stands for its frequency (a record holds one fact, so words rarely
        repeat, and testing presence is a lookup where counting unpacks every ``tsvector``).
        Scopes of up to :data:`~memory_admin.tuning.SMALL_SCOPE` records are ranked exhaustively in one
        statement. In a larger one, tokens are taken rarest first and each only while it
        could still lift a record into the page (MaxScore): tokens PostgreSQL's statistics
        (:class:`TermFrequencies`) do not list as common have all their matches fetched and
        their document frequency counted; a listed token is weighed from those statistics,
        and has all its matches fetched when they are few, else its newest ones, within
        :data:`~memory_admin.tuning.CANDIDATE_BUDGET` candidates. The ranking is exact unless that budget runs
        out; then a query of stopwords ranks recent memories, as on SQLite. Its statements
        run in one snapshot.
        """
        scope_where, scope_params = scope_condition(plan)
        budget = budget or ranking.candidate_budget(needed)
        lexemes = [lexeme(token) for token in plan.tokens]
        found = yield Statement(
            "SELECT count(*) AS scopes, coalesce(sum(sc.n_records), 0) AS n, coalesce(sum(sc.n_tokens), 0) AS t, "
            f"CASE WHEN count(*) <= {tuning.FEW_SCOPES} THEN array_agg(sc.scope_id ORDER BY sc.scope_id) END AS ids, "
            f"CASE WHEN count(*) <= {tuning.FEW_SCOPES} THEN array_agg(sc.scope ORDER BY sc.scope_id) END AS texts "
            f"FROM memory_scopes sc WHERE {scope_where}",
            scope_params,
        )
        if not found[0]["scopes"]:
            return None
        search = _Ranking(plan, lexemes, n=max(int(found[0]["n"]), 1), tokens=int(found[0]["t"]), needed=needed)
        scope_ids: list[int] | None = found[0]["ids"]
        scope_texts: list[str] | None = found[0]["texts"]

        shares: dict[str, float] = {}
        if search.n > max(tuning.SMALL_SCOPE, budget):
            shares = yield from self.frequencies.shares()
        listed = sorted((lex for lex in lexemes if lex in shares), key=lambda lex: shares[lex])
        counted = [lex for lex in lexemes if lex not in shares]
        search.frequency.update({lex: min(search.n, round(shares[lex] * search.n)) for lex in listed})
        search.weigh()
        fetched: list[str] = []  # tokens whose every match is a candidate already
        considered = 0
        if counted:
            # a small scope is read whole; a larger one through the full-text index
            whole = scope_ids if search.n <= tuning.SMALL_SCOPE and not listed else None
            total = search.take((yield search.every_match(filter_tsquery(plan, scope_texts), counted, fetched, whole)))
            considered += total
            fetched += counted
        # A token's m matches cost about m heap rows to fetch, plus the index scan, which
        # visits the scope's postings (n of them, about an eighth of a row's cost each); its
        # newest `budget` matches cost about budget·n/m rows walked. Past the m where the two
        # meet, a token fetches only its newest matches.
        scan = search.n / 8
        cut = (math.sqrt(scan * scan + 4 * budget * search.n) - scan) / 2
        walking = False  # listed tokens come rarest first: once one walks, the rest do
        loop = ranking.MaxScore(
            listed,
            dict(search.weights),
            ranking.PRESENCE_FACTOR,
            search.candidates,
            needed=needed,
            budget=budget,
            considered=considered,
        )
        while (step := loop.next()) is not None:
            lex, room = step
            if search.frequency[lex] < cut:
                loop.fetched(search.take((yield search.every_match(filter_tsquery(plan, scope_texts), [lex], fetched))))
                fetched.append(lex)
            else:
                if not walking:
                    # Walk the recency index, never gather the whole scope into a bitmap and
                    # sort it: the planner would, for any scope its statistics think small.
                    # Until the transaction ends; nothing after this needs a bitmap scan.
                    yield Statement("SET LOCAL enable_bitmapscan = off")
                    walking = True
                held = f" & !{any_of(fetched)}" if fetched else ""
                loop.fetched(search.take((yield search.newest_matches(scope_ids, quote(lex) + held, room))))

        return search, search.ranked()


def _whole(search: _Ranking, shown: Sequence[ranking.Scored]) -> Steps[Statement, list[tuple[float, int]]]:
    """These ranked candidates as (score, seq), every one's row read (most came back whole)."""
    missing = [hit.key for hit in shown if hit.key not in search.records]
    if missing:
        rows = yield Statement(POSTGRES_SELECT + RECORD_FROM + " WHERE r.seq = ANY(%s)", [missing])
        search.records.update((int(row["seq"]), row) for row in rows)
    return [(hit.score, hit.key) for hit in shown]


class _Ranking:
    """One ranked search's statistics, weights and candidates, and the statements that
    fetch candidates with each query token's presence."""

    def __init__(self, plan: SearchPlan, lexemes: list[str], *, n: int, tokens: int, needed: int) -> None:
        self.plan = plan
        self.lexemes = lexemes
        self.n = n
        self.average = max(tokens / n, 1.0)
        self.needed = needed
        self.frequency: dict[str, int] = {}
        self.weights: dict[str, float] = {}
        self.candidates = ranking.Candidates()
        self.records: dict[int, Row] = {}  # candidates that came back whole
        self.filters, self.params = record_filters(POSTGRES, plan)
        self.probes = [quote(lex) for lex in lexemes]
        self.presence = "ARRAY[" + ", ".join("r.tsv @@ %s::tsquery" for _ in lexemes) + "] AS p"

    def weigh(self) -> None:
        """Weights of the tokens whose document frequency is known so far."""
        self.weights = {lex: ranking.idf(self.n, df) for lex, df in self.frequency.items()}

    def every_match(
        self, scope_match: str, tokens: Sequence[str], fetched: Sequence[str], scope_ids: Sequence[int] | None = None
    ) -> Statement:
        """Every match of ``tokens`` not holding an already fetched token, ranked in SQL;
        the best ``needed`` come back as whole records, with the count of all and, per
        query token, how many hold it (the document frequency of a token whose weight is
        not known yet).
        Found through the full-text index, or with ``scope_ids`` by reading those (small)
        scopes whole: cheaper than probing a common token's long posting list for each."""
        match = any_of(tokens) + (f" & !{any_of(fetched)}" if fetched else "")
        where = "r.tsv @@ %s::tsquery"
        params: list[Any] = [f"{scope_match} & {match}"]
        if scope_ids is not None:
            # wrapped, so the planner reads the scopes' rows rather than the full-text index
            where = "r.scope_id = ANY(%s::bigint[]) AND coalesce(r.tsv @@ %s::tsquery, false)"
            params = [list(scope_ids), match]
        indexes = range(1, len(self.lexemes) + 1)
        count = ", ".join(f"count(*) FILTER (WHERE m.p[{i}])" for i in indexes)
        floor = ranking.IDF_FLOOR
        weigh = ", ".join(
            f"coalesce(%s::float8, greatest(ln((%s::float8 - d.df[{i}] + 0.5) / (d.df[{i}] + 0.5)), {floor}))"
            for i in indexes
        )
        relevance = " + ".join(f"CASE WHEN m.p[{i}] THEN w.idf[{i}] ELSE 0 END" for i in indexes)
        # only which rows make the page is decided here (Python scores them again): no
        # rounding, which would cost a numeric conversion per match
        return Statement(
            f"""
            WITH m AS MATERIALIZED (
                SELECT r.seq, r.created_at, r.n_tokens, {self.presence} FROM memory_records r
                WHERE {where} AND {self.filters}
            ),
            d AS (SELECT count(*) AS total, ARRAY[{count}] AS df FROM m),
            w AS MATERIALIZED (SELECT d.total, d.df, ARRAY[{weigh}] AS idf FROM d)
            SELECT w.total, w.df, top.n_tokens, top.p, rec.* FROM w LEFT JOIN LATERAL (
                SELECT m.seq, m.n_tokens, m.p FROM m
                ORDER BY ({relevance}) * {ranking.K1 + 1} / (1 + {ranking.K1}
                         * ({1 - ranking.B} + {ranking.B} * m.n_tokens / %s::float8)) DESC,
                         m.created_at DESC, m.seq DESC
                LIMIT %s
            ) top ON true
            LEFT JOIN LATERAL ({POSTGRES_SELECT}{RECORD_FROM} WHERE r.seq = top.seq) rec ON true
            """,
            [
                *self.probes,
                *params,
                *self.params,
                *(value for lex in self.lexemes for value in (self.weights.get(lex), self.n)),
                self.average,
                self.needed,
            ],
        )

    def newest_matches(self, scope_ids: Sequence[int] | None, match: str, room: int) -> Statement:
        """The newest ``room`` matches of ``match`` in the searched scopes: each scope's
        recency index walked newest-first (a common token's matches turn up every few
        rows), or the tenant's when the search reaches many scopes."""
        columns = f"r.seq, r.created_at, r.n_tokens, {self.presence}"
        # the match is wrapped so the planner cannot use the full-text index: it would
        # gather every match of the common token (most of the scope) before sorting
        if scope_ids is not None:
            one = (
                f"(SELECT {columns} FROM memory_records r WHERE r.scope_id = %s "
                f"AND coalesce(r.tsv @@ %s::tsquery, false) AND {self.filters} "
                "ORDER BY r.created_at DESC, r.seq DESC LIMIT %s)"
            )
            return Statement(
                "SELECT * FROM (" + " UNION ALL ".join([one] * len(scope_ids)) + ") c "
                "ORDER BY c.created_at DESC, c.seq DESC LIMIT %s",
                [*(value for sid in scope_ids for value in (*self.probes, sid, match, *self.params, room)), room],
            )
        scope_where, scope_params = scope_condition(self.plan)
        return Statement(
            f"SELECT {columns} FROM memory_records r WHERE r.tenant = %s "
            f"AND r.scope_id IN (SELECT sc.scope_id FROM memory_scopes sc WHERE {scope_where}) "
            f"AND coalesce(r.tsv @@ %s::tsquery, false) AND {self.filters} "
            "ORDER BY r.created_at DESC, r.seq DESC LIMIT %s",
            [
                *self.probes,
                self.plan.query.scope[TENANT_KEY],
                *scope_params,
                filter_tsquery(self.plan) + " & " + match,
                *self.params,
                room,
            ],
        )

    def take(self, rows: list[Row]) -> int:
        """Score fetched candidates; returns how many matches the statement considered."""
        if rows and "total" in rows[0]:
            for lex, holders in zip(self.lexemes, rows[0]["df"], strict=True):
                self.frequency.setdefault(lex, int(holders))
            self.weigh()
            considered = int(rows[0]["total"])
            rows = [row for row in rows if row["seq"] is not None]
        else:
            considered = sum(1 for row in rows if int(row["seq"]) not in self.candidates)
        for row in rows:
            seq = int(row["seq"])
            if seq not in self.candidates:
                weight = sum(self.weights[lex] for lex, hit in zip(self.lexemes, row["p"], strict=True) if hit)
                score = round(_bm25(weight, int(row["n_tokens"]), self.average), 9)
                self.candidates.add(seq, score, row["created_at"])
            if "id" in row:
                self.records[seq] = row
        return considered

    def ranked(self) -> list[ranking.Scored]:
        return self.candidates.ranked()


def _parts(row: Row, plan: SearchPlan, search: _Ranking) -> dict[str, float] | None:
    """A ranked hit's query terms with their parts of its score (presence-weighted, as
    :func:`_bm25` ranks); ``None`` for a row too corrupt to say (reading it reports that)."""
    try:
        stated = row["observed_at"] if row["observed_at"] is not None else row["created_at"]
        tags = json.loads(row["tags"]) if row["tags"] else ()
        terms = ranking.record_tokens(row["content"], tags, stated)
    except (ValueError, TypeError, KeyError, AttributeError, OverflowError):
        return None
    held = set(terms)
    return {
        token: round(_bm25(search.weights[lex], len(terms), search.average), 9)
        for token, lex in zip(plan.tokens, search.lexemes, strict=True)
        if token in held and lex in search.weights
    }


def _bm25(weight: float, length: int, average: float) -> float:
    """BM25 of a record holding query tokens of this summed weight once each (the SQL
    of :meth:`_Ranking.every_match` computes the same, in the same order)."""
    return weight * (ranking.K1 + 1) / (1 + ranking.K1 * (1 - ranking.B + ranking.B * length / average))


__all__ = ["PostgresSearch", "TermFrequencies", "filter_tsquery", "match_tsquery", "scope_condition", "scope_ids"]
