"""PostgreSQL search: listings over the recency indexes and ranked search by BM25 over
``tsvector`` matches.

Full-text search matches exactly what SQLite and the in-memory store match: each
record's ``tsvector`` is built from the terms of its
:func:`~memory_admin.store.ranking.record_text` lexeme by lexeme (the server's parser
never re-splits them), and a query is the OR of its tokens. The terms' identity (the
stemmer) is recorded; a database indexed under another is re-indexed when it opens
(:func:`reindex_op`).
Each record also carries hidden lexemes — one per scope pair, one for its whole scope,
its kind, an agent marker — that start with ``:``, which no token can, so user text can
never spell them. A user-scoped search is one GIN expression, ``pairs & (t1 | t2 …)``,
that never visits another scope's matches. Ranking is BM25 computed in SQL over the
matches, with collection statistics of the searched scopes (counters kept by triggers)
and a token's presence standing for its frequency.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from memory_admin.errors import MemoryValidationError
from memory_admin.records import KINDS, MemoryHit
from memory_admin.scope import AGENT_KEY, TENANT_KEY, Scope, scope_json
from memory_admin.store import ranking
from memory_admin.store._sql import (
    AGENT_MARK,
    RECORD_COLUMNS,
    Dialect,
    Op,
    RecordCache,
    Row,
    Statement,
    pair_token,
    record_filters,
    visible_candidates,
)
from memory_admin.store.plan import Candidate, Cursor, SearchPlan, context
from memory_admin.store.protocol import ScopeCounts, ScopeFacet
from memory_admin.tokenize import TERMS_IDENTITY

# PostgreSQL's own limits on a tsvector entry
_MAX_LEXEME_BYTES = 2047
_MAX_POSITION = 16383
_MAX_POSITIONS = 256


def _json_time(value: Any) -> str:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON")


class PostgresDialect(Dialect):
    p = "%s"
    key = "seq"
    true = "TRUE"

    def to_db_time(self, value: datetime) -> datetime:
        return value

    def forgetting_lock(self, forgetting: bool) -> Statement:
        # batches share the lock with each other; a forgetting waits for the batches
        # committing now, and the batches that start later wait for it
        mode = "ROW EXCLUSIVE" if forgetting else "SHARE"
        return Statement(f"LOCK TABLE memory_forgetting IN {mode} MODE")

    def from_db_time(self, value: Any) -> datetime:
        if not isinstance(value, datetime) or value.tzinfo is None:
            raise TypeError(f"timestamp column holds {type(value).__name__}, expected timestamptz")
        return value.astimezone(UTC)

    def one_of(self, column: str, values: Iterable[Any]) -> tuple[str, list[Any]]:
        return f"{column} = ANY(%s)", [list(values)]

    def tags_contain(self, column: str, tags: Sequence[str]) -> tuple[str, list[Any]]:
        return f"{column}::jsonb @> %s::jsonb", [json.dumps(list(tags), ensure_ascii=False)]

    def key_prefix(self, column: str, prefixes: Sequence[str]) -> tuple[str, list[Any]]:
        return (
            f"EXISTS (SELECT 1 FROM unnest(%s::text[]) AS k(prefix) WHERE starts_with({column}, k.prefix))",
            [list(prefixes)],
        )

    def insert_rows(self, table: str, columns: Sequence[tuple[str, str]], rows: Sequence[Sequence[Any]]) -> Statement:
        # one statement over one JSON array of the rows: the server runs one insert, not
        # one per row (a row's own statement costs as much as the row), and the client
        # encodes the batch in one call
        names = [name for name, _ in columns]
        shape = ", ".join(f"{name} {'text' if kind == 'jsonb' else kind}" for name, kind in columns)
        values = ", ".join(f"x.{name}::jsonb" if kind == "jsonb" else f"x.{name}" for name, kind in columns)
        batch = json.dumps([dict(zip(names, row, strict=True)) for row in rows], default=_json_time, ensure_ascii=False)
        return Statement(
            f"INSERT INTO {table} ({', '.join(names)}) SELECT {values} FROM json_to_recordset(%s::json) AS x({shape})",
            [batch],
        )

    def events_under(self, scope: Scope) -> tuple[str, list[Any]]:
        # jsonb containment is exactly subset match: user=u1 never contains user=u10
        return "tenant = %s AND scope @> %s::jsonb", [scope[TENANT_KEY], scope_json(scope)]

    def flag(self, column: str, value: bool) -> str:
        return column if value else f"NOT {column}"

    def json_param(self) -> str:
        return "%s::jsonb"


DIALECT = PostgresDialect()

RECORD_SELECT = "SELECT r.seq AS seq, r.scope_id AS scope_id, s.scope AS scope, " + ", ".join(
    f"r.{c} AS {c}" for c in RECORD_COLUMNS
)
RECORD_FROM = " FROM memory_records r JOIN memory_scopes s ON s.scope_id = r.scope_id"

# --- hidden lexemes and the text of tsvectors and tsqueries ----------------------------
# Every hidden lexeme starts with ':'; tokenize() only yields letters and digits.

AGENT_LEXEME = ":" + AGENT_MARK


def pair_lexeme(key: str, value: str) -> str:
    return ":" + pair_token(key, value)


def scope_lexeme(scope: Mapping[str, str]) -> str:
    return scope_text_lexeme(scope_json(scope))


def scope_text_lexeme(text: str) -> str:
    """The whole-scope lexeme of a scope given as its canonical JSON (as stored)."""
    return ":s" + hashlib.blake2b(text.encode(), digest_size=10).hexdigest()


def kind_lexeme(kind: str) -> str:
    return ":k" + kind


def scope_pair_lexemes(scope: Mapping[str, str]) -> list[str]:
    """The lexemes stored with a scope: its pairs, and the agent marker if it names one."""
    lexemes = [pair_lexeme(key, value) for key, value in sorted(scope.items())]
    if AGENT_KEY in scope:
        lexemes.append(AGENT_LEXEME)
    return lexemes


def lexeme(token: str) -> str:
    """A token as an index lexeme. PostgreSQL refuses lexemes over 2047 bytes; a longer
    token keeps its head and a digest of the whole, so equal tokens stay equal."""
    raw = token.encode()
    if len(raw) <= _MAX_LEXEME_BYTES:
        return token
    head = raw[:2000].decode(errors="ignore")
    return f"{head}#{hashlib.blake2b(raw, digest_size=8).hexdigest()}"


def _quote(text: str) -> str:
    # the tsvector/tsquery quoting rules: a quote is doubled, a backslash escaped
    return "'" + text.replace("\\", "\\\\").replace("'", "''") + "'"


def document(content: str, tags: Iterable[str], stated: datetime, hidden: Iterable[str]) -> tuple[str, int]:
    """A record's tsvector text (its terms with positions, then the hidden lexemes) and
    its length in terms, for BM25."""
    tokens = ranking.record_tokens(content, tags, stated)
    positions: dict[str, list[int]] = {}
    for index, token in enumerate(tokens, start=1):
        kept = positions.setdefault(lexeme(token), [])
        position = min(index, _MAX_POSITION)
        if len(kept) < _MAX_POSITIONS and (not kept or kept[-1] != position):
            kept.append(position)
    parts = [f"{_quote(lex)}:{','.join(map(str, where))}" for lex, where in positions.items()]
    parts += [_quote(lex) for lex in hidden]
    return " ".join(parts), len(tokens)


REINDEX_BATCH = 2000
"""Records re-indexed per round trip when the terms' identity changed."""


def _stored_tags(text: str | None) -> list[str]:
    try:
        loaded = json.loads(text) if text else []
    except ValueError:
        return [str(text)]  # a corrupt row stays indexable (its read reports it)
    return [str(tag) for tag in loaded] if isinstance(loaded, list) else [str(text)]


def terms_current_op() -> Op[bool]:
    """Whether every record's tsvector holds this code's terms (:data:`TERMS_IDENTITY`)."""
    present = yield Statement("SELECT to_regclass('memory_terms_state') IS NOT NULL AS present")
    if not present[0]["present"]:
        return True  # a ladder without the table has nothing to compare
    rows = yield Statement("SELECT identity FROM memory_terms_state")
    return bool(rows) and rows[0]["identity"] == TERMS_IDENTITY


def reindex_op() -> Op[int]:
    """Recompute every record's terms and length (and the scopes' term counts) when they
    were built under another identity; how many records it re-indexed. Batched by
    :data:`REINDEX_BATCH`, in the caller's transaction; each record keeps its hidden
    lexemes as stored."""
    if (yield from terms_current_op()):
        return 0
    last, done = 0, 0
    while True:
        rows = yield Statement(
            "SELECT seq, content, tags, coalesce(observed_at, created_at) AS stated, "
            "ARRAY(SELECT u.lexeme FROM unnest(tsv) AS u WHERE starts_with(u.lexeme, ':')) AS hidden "
            "FROM memory_records WHERE seq > %s ORDER BY seq LIMIT %s",
            [last, REINDEX_BATCH],
        )
        if not rows:
            break
        documents = [document(row["content"], _stored_tags(row["tags"]), row["stated"], row["hidden"]) for row in rows]
        yield Statement(
            "UPDATE memory_records r SET tsv = v.tsv::tsvector, n_tokens = v.n "
            "FROM unnest(%s::bigint[], %s::text[], %s::integer[]) AS v(seq, tsv, n) WHERE r.seq = v.seq",
            [[row["seq"] for row in rows], [tsv for tsv, _ in documents], [n for _, n in documents]],
        )
        last, done = int(rows[-1]["seq"]), done + len(rows)
    yield Statement(
        "UPDATE memory_scopes s SET n_tokens = coalesce((SELECT sum(r.n_tokens) FROM memory_records r "
        "WHERE r.scope_id = s.scope_id), 0)"
    )
    yield Statement("DELETE FROM memory_terms_state")
    yield Statement("INSERT INTO memory_terms_state (identity) VALUES (%s)", [TERMS_IDENTITY])
    return done


def _all_of(lexemes: Iterable[str]) -> str:
    return "(" + " & ".join(_quote(lex) for lex in lexemes) + ")"


def _any_of(lexemes: Iterable[str]) -> str:
    return "(" + " | ".join(_quote(lex) for lex in lexemes) + ")"


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
        texts = [scope_json(s) for s in visible_candidates(query.scope, query.agent)]
        return f"{alias}.scope = ANY(%s::text[])", [texts]
    where = f"{alias}.lexemes @> %s::text[]"
    params: list[Any] = [[pair_lexeme(key, value) for key, value in query.scope.items()]]
    if query.agent is not None:
        where += f" AND (NOT %s = ANY({alias}.lexemes) OR %s = ANY({alias}.lexemes))"
        params += [AGENT_LEXEME, pair_lexeme(AGENT_KEY, query.agent)]
    return where, params


def _filter_tsquery(plan: SearchPlan, scope_texts: Sequence[str] | None = None) -> str:
    """What a match needs besides the query's tokens, as a tsquery. Given the reached
    scopes (their canonical JSON, when they are few): the OR of their whole-scope
    lexemes, whose postings hold only those scopes' records — a user's, not every
    tenant's user of that name — and already honour the agent convention (kinds are
    then left to the row filter). Otherwise the scope pairs (or the visible candidates),
    the agent convention and the kinds."""
    query = plan.query
    if scope_texts is not None:
        return _any_of(scope_text_lexeme(text) for text in scope_texts)
    if query.scope_match == "visible":
        parts = [_any_of(scope_lexeme(s) for s in visible_candidates(query.scope, query.agent))]
    else:
        parts = [_all_of(pair_lexeme(key, value) for key, value in query.scope.items())]
        if query.agent is not None:
            parts.append(f"(!{_quote(AGENT_LEXEME)} | {_quote(pair_lexeme(AGENT_KEY, query.agent))})")
    if query.kinds is not None:
        parts.append(_any_of(kind_lexeme(kind) for kind in query.kinds))
    return " & ".join(parts)


def match_tsquery(plan: SearchPlan) -> str:
    """The whole search as one tsquery: scope lexemes, kinds, the agent convention and
    the query's tokens OR-ed. Every lexeme is quoted, and tokens hold letters and digits
    only, so no user text can become tsquery syntax."""
    return _filter_tsquery(plan) + " & " + _any_of(lexeme(token) for token in plan.tokens)


def scope_ids_op(plan: SearchPlan) -> Op[list[int] | None]:
    """The ids of the stored scopes a plan reaches, when they are few (else ``None``)."""
    scope_where, scope_params = scope_condition(plan)
    rows = yield Statement(
        f"SELECT sc.scope_id FROM memory_scopes sc WHERE {scope_where} ORDER BY sc.scope_id LIMIT %s",
        [*scope_params, ranking.FEW_SCOPES + 1],
    )
    return [int(row["scope_id"]) for row in rows] if len(rows) <= ranking.FEW_SCOPES else None


def recent_op(plan: SearchPlan, records: RecordCache) -> Op[tuple[list[MemoryHit], Cursor | None]]:
    filters, params = record_filters(DIALECT, plan)
    if plan.cursor is not None:
        filters += " AND (r.created_at, r.seq) < (%s, %s)"
        params += [_cursor_time(plan.cursor.created_us or 0), plan.cursor.seq]
    scope_ids = yield from scope_ids_op(plan)
    if scope_ids == []:
        return [], None
    if scope_ids is not None:
        # a few scopes (a user's, and that user's with each agent): each one's recency
        # index walked newest-first, top rows merged — never the tenant's records
        one = (
            f"({RECORD_SELECT}{RECORD_FROM} WHERE r.scope_id = %s AND {filters} "
            "ORDER BY r.created_at DESC, r.seq DESC LIMIT %s)"
        )
        rows = yield Statement(
            "SELECT * FROM (" + " UNION ALL ".join([one] * len(scope_ids)) + ") c "
            "ORDER BY c.created_at DESC, c.seq DESC LIMIT %s",
            [*(value for sid in scope_ids for value in (sid, *params, plan.limit + 1)), plan.limit + 1],
        )
    else:
        scope_where, scope_params = scope_condition(plan)
        rows = yield Statement(
            RECORD_SELECT + RECORD_FROM + " WHERE r.tenant = %s "
            f"AND r.scope_id IN (SELECT sc.scope_id FROM memory_scopes sc WHERE {scope_where}) AND {filters} "
            "ORDER BY r.created_at DESC, r.seq DESC LIMIT %s",
            [plan.query.scope[TENANT_KEY], *scope_params, *params, plan.limit + 1],
        )
    hits = [MemoryHit(record=records(row)) for row in rows[: plan.limit]]
    if len(rows) > plan.limit:
        last = rows[plan.limit - 1]
        return hits, Cursor(created_us=_created_us(last["created_at"]), seq=int(last["seq"]))
    return hits, None


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

    def op(self) -> Op[dict[str, float]]:
        if time.monotonic() - self._at < ranking.STATS_TTL_S:
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


def ranked_op(
    plan: SearchPlan, frequencies: TermFrequencies, records: RecordCache
) -> Op[tuple[list[MemoryHit], Cursor | None]]:
    """A page of a relevance search (:func:`rank_op`), its records read whole."""
    found = yield from rank_op(plan, frequencies, plan.needed)
    if found is None:
        return [], None
    search, page = found
    shown = yield from _whole(search, page[plan.offset : plan.offset + plan.limit])
    hits = [
        MemoryHit(record=records(search.records[seq]), score=score, terms=_parts(search.records[seq], plan, search))
        for score, seq in shown
    ]
    return hits, Cursor(offset=plan.offset + plan.limit) if len(page) > plan.offset + plan.limit else None


def candidates_op(plan: SearchPlan, frequencies: TermFrequencies, limit: int) -> Op[list[Candidate]]:
    """The ``limit`` best keyword matches as fusion candidates (ids, scores, term parts);
    a large scope scores no more candidates than the plan's own page would."""
    found = yield from rank_op(plan, frequencies, limit + 1, ranking.fusion_budget(plan))
    if found is None:
        return []
    search, page = found
    shown = yield from _whole(search, page[:limit])
    return [
        Candidate(
            str(row["id"]),
            score,
            _parts(row, plan, search),
            context(row["scope_id"], DIALECT.from_db_time(row["observed_at"] or row["created_at"])),
        )
        for score, seq in shown
        if (row := search.records[seq]) is not None
    ]


def _whole(search: _Ranking, shown: Sequence[tuple[float, Any, int]]) -> Op[list[tuple[float, int]]]:
    """These ranked candidates as (score, seq), every one's row read (most came back whole)."""
    missing = [seq for _, _, seq in shown if seq not in search.records]
    if missing:
        rows = yield Statement(RECORD_SELECT + RECORD_FROM + " WHERE r.seq = ANY(%s)", [missing])
        search.records.update((int(row["seq"]), row) for row in rows)
    return [(score, seq) for score, _, seq in shown]


def rank_op(
    plan: SearchPlan, frequencies: TermFrequencies, needed: int, budget: int | None = None
) -> Op[tuple[_Ranking, list[tuple[float, Any, int]]] | None]:
    """Relevance search: BM25 over the searched scopes, the same rules as SQLite's; the
    ``needed`` best are exact. ``None`` when no stored scope can match.

    The collection is the searched scopes (record and token counters kept by triggers);
    a token's presence stands for its frequency (a record holds one fact, so words rarely
    repeat, and testing presence is a lookup where counting unpacks every ``tsvector``).
    Scopes of up to :data:`ranking.SMALL_SCOPE` records are ranked exhaustively in one
    statement. In a larger one, tokens are taken rarest first and each only while it
    could still lift a record into the page (MaxScore): tokens PostgreSQL's statistics
    (:class:`TermFrequencies`) do not list as common have all their matches fetched and
    their document frequency counted; a listed token is weighed from those statistics,
    and has all its matches fetched when they are few, else its newest ones, within
    :data:`~memory_admin.store.ranking.CANDIDATE_BUDGET` candidates. The ranking is exact unless that budget runs
    out; then a query of stopwords ranks recent memories, as on SQLite. Its statements
    run in one snapshot.
    """
    scope_where, scope_params = scope_condition(plan)
    budget = budget or ranking.candidate_budget(needed)
    lexemes = [lexeme(token) for token in plan.tokens]
    found = yield Statement(
        "SELECT count(*) AS scopes, coalesce(sum(sc.n_records), 0) AS n, coalesce(sum(sc.n_tokens), 0) AS t, "
        f"CASE WHEN count(*) <= {ranking.FEW_SCOPES} THEN array_agg(sc.scope_id ORDER BY sc.scope_id) END AS ids, "
        f"CASE WHEN count(*) <= {ranking.FEW_SCOPES} THEN array_agg(sc.scope ORDER BY sc.scope_id) END AS texts "
        f"FROM memory_scopes sc WHERE {scope_where}",
        scope_params,
    )
    if not found[0]["scopes"]:
        return None
    search = _Ranking(plan, lexemes, n=max(int(found[0]["n"]), 1), tokens=int(found[0]["t"]), needed=needed)
    scope_ids: list[int] | None = found[0]["ids"]
    scope_texts: list[str] | None = found[0]["texts"]

    shares: dict[str, float] = {}
    if search.n > max(ranking.SMALL_SCOPE, budget):
        shares = yield from frequencies.op()
    listed = sorted((lex for lex in lexemes if lex in shares), key=lambda lex: shares[lex])
    counted = [lex for lex in lexemes if lex not in shares]
    search.frequency.update({lex: min(search.n, round(shares[lex] * search.n)) for lex in listed})
    search.weigh()
    fetched: list[str] = []  # tokens whose every match is a candidate already
    considered = 0
    if counted:
        # a small scope is read whole; a larger one through the full-text index
        whole = scope_ids if search.n <= ranking.SMALL_SCOPE and not listed else None
        total = search.take((yield search.every_match(_filter_tsquery(plan, scope_texts), counted, fetched, whole)))
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
            loop.fetched(search.take((yield search.every_match(_filter_tsquery(plan, scope_texts), [lex], fetched))))
            fetched.append(lex)
        else:
            if not walking:
                # Walk the recency index, never gather the whole scope into a bitmap and
                # sort it: the planner would, for any scope its statistics think small.
                # Until the transaction ends; nothing after this needs a bitmap scan.
                yield Statement("SET LOCAL enable_bitmapscan = off")
                walking = True
            held = f" & !{_any_of(fetched)}" if fetched else ""
            loop.fetched(search.take((yield search.newest_matches(scope_ids, _quote(lex) + held, room))))

    return search, search.ranked()


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
        self.filters, self.params = record_filters(DIALECT, plan)
        self.probes = [_quote(lex) for lex in lexemes]
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
        match = _any_of(tokens) + (f" & !{_any_of(fetched)}" if fetched else "")
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
            LEFT JOIN LATERAL ({RECORD_SELECT}{RECORD_FROM} WHERE r.seq = top.seq) rec ON true
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
                _filter_tsquery(self.plan) + " & " + match,
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

    def ranked(self) -> list[tuple[float, Any, int]]:
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


def list_op(
    plan: SearchPlan, frequencies: TermFrequencies, records: RecordCache
) -> Op[tuple[list[MemoryHit], Cursor | None]]:
    if plan.empty:
        return [], None
    return (yield from ranked_op(plan, frequencies, records) if plan.ranked else recent_op(plan, records))


def count_op(plan: SearchPlan) -> Op[ScopeCounts]:
    scope_where, scope_params = scope_condition(plan)
    rows = yield Statement(
        "SELECT r.kind, count(*) AS total, count(*) FILTER (WHERE r.invalid_at IS NOT NULL) AS invalidated, "
        "count(*) FILTER (WHERE r.expires_at <= %s) AS expired, "
        "count(*) FILTER (WHERE r.invalid_at IS NULL AND (r.expires_at IS NULL OR r.expires_at > %s)) AS live "
        "FROM memory_records r WHERE r.tenant = %s "
        f"AND r.scope_id IN (SELECT sc.scope_id FROM memory_scopes sc WHERE {scope_where}) GROUP BY r.kind",
        [plan.now, plan.now, plan.query.scope[TENANT_KEY], *scope_params],
    )
    by_kind = dict.fromkeys(KINDS, 0)
    for row in rows:
        by_kind[row["kind"]] = int(row["total"])
    return ScopeCounts(
        total=sum(int(row["total"]) for row in rows),
        live=sum(int(row["live"]) for row in rows),
        invalidated=sum(int(row["invalidated"]) for row in rows),
        expired=sum(int(row["expired"]) for row in rows),
        by_kind=by_kind,
    )


def facets_op(scope: Scope | None, values_per_key: int) -> Op[list[ScopeFacet]]:
    sql = "SELECT scope, n_records FROM memory_scopes WHERE n_records > 0"
    params: list[Any] = []
    if scope is not None:
        sql += " AND lexemes @> %s::text[]"
        params.append([pair_lexeme(key, value) for key, value in scope.items()])
    rows = yield Statement(sql, params)
    counts: Counter[str] = Counter({row["scope"]: int(row["n_records"]) for row in rows})
    return ranking.build_facets(counts, {row["scope"]: json.loads(row["scope"]) for row in rows}, values_per_key)
