"""Every number the store's search, ranking and caches were tuned with, in one place.

Each was chosen by measurement (docs/benchmarks/ names the runs); none is part of the
contract, so a change here changes speed or ranking quality, never what a search may
return. The contract's own limits — content size, page size, batch size — are the
store's capabilities (:mod:`memory_admin.store.core`); recall's defaults are its public
arguments (:mod:`memory_admin.recall`).
"""

from __future__ import annotations

# --- keyword search: the candidate loop (memory_admin.store.ranking) ----------------------

SMALL_SCOPE = 500
"""Scopes of up to this many records are ranked exhaustively, from one index query."""
CANDIDATE_BUDGET = 120
"""In larger scopes, at most this many candidates are scored per search (more when a
page needs more): past it, the commonest query tokens contribute only their newest
matches, so a query of stopwords ranks recent memories rather than the whole tenant."""
FEW_SCOPES = 16
"""A search or listing reaching at most this many stored scopes walks each one's own
index and merges; past it, one index over the tenant."""
STATS_TTL_S = 300.0
"""Seconds a process trusts its cached corpus statistics."""

# --- keyword search on SQLite (memory_admin.store.sqlite.search) --------------------------

DF_SAMPLE = 2000
"""Document frequencies above this are estimated from how far back the newest matches reach."""
# What a small scope's search costs either way, in µs, measured on a 1M-record file: an
# index probe walks the token's whole posting list (FTS5 seeks through it: ~20 µs plus
# ~3.5 µs a thousand postings), and every record scored — read and tokenized — costs ~7 µs.
PROBE_US = 20.0
POSTING_US = 0.0035
SCORED_ROW_US = 7.0

# --- search by meaning (memory_admin.store.vectors, memory_admin.store.sql.session) -------

SHORTLIST = 400
"""Vectors a semantic search scores exactly: all of a scope that holds at most this many,
else the ones whose signs agree most with the query's."""
PREFILTER_FACTOR = 4
PREFILTER_MIN = 200
"""A semantic search filters the ``max(limit × PREFILTER_FACTOR, PREFILTER_MIN)`` closest
vectors of its scopes; fewer than ``limit`` passing means one full filtered scan."""
SCAN_CHUNK = 8192
"""Stored vectors scored at a time: a tenant-wide scan never holds all of them as floats."""
CENTRE_PRIOR = 20
"""How many records' worth of the origin a searched collection's mean is shrunk towards
(:func:`~memory_admin.store.vectors.centre`): the mean of three records is mostly those records."""
CENTRE_SAMPLE = 512
"""Vectors a collection's mean is measured on: all of a smaller one, else this many
spread over it (the mean of 512 unit vectors is within about 0.04 of the whole's)."""

WINDOW_WEIGHT = 0.5
"""How much a long record's best window counts in its similarity to a query, against its
whole vector's (:func:`~memory_admin.store.vectors.with_windows`): a record the model
reads in several windows stores a vector per window beside its own. 0 ranks by the whole
vector alone. Picked out of fold on whole sessions as records (docs/search.md, "Long records")."""

# --- search by meaning: fusion and the context lift (memory_admin.store.vectors) ----------
# Each choice was made out of fold on LoCoMo's development split, with its observations and
# with its dialog turns as records (`python -m bench.locomo … --folds`): picked on four
# conversations, measured on the fifth, kept only when it beat its untuned baseline on both
# kinds of record (docs/benchmarks/locomo-folds.md).

KEYWORD_WEIGHT = 0.5
"""BM25's share of the fused score: the untuned equal share (0.6 won on dialog turns and
lost on observations, so it went)."""
FUSION_CENTRING = True
"""Whether a fusion's semantic side (hybrid and quality search) ranks by the cosine
measured from the searched records' centre rather than the model's plain cosine (a
semantic search always ranks by the plain cosine). Kept against the rule above: out of
fold it gains statements (LoCoMo's observations) and costs a transcript's dialog turns
(docs/search.md, "Every choice, out of fold"), so a store whose records are turns as
they were said would set it to False."""
CONTEXT_WEIGHT = 0.4
"""How much of the best fused score among the candidates stated in its context (the same
scope, the same day) a candidate gains: what was said together is recalled together."""
FUSION_CANDIDATES = 100
"""How many hits each side contributes before fusion (and a semantic search lifts by
context): the untuned depth (30 won on dialog turns and lost on observations)."""
SEMANTIC_CANDIDATES = 200
"""How many of the closest records a semantic search lifts by context and by the time its
query names before ordering them (the untuned depth, 100, lost out of fold once the
named time was in: a record stated on the named day can sit further down)."""
SEMANTIC_CONTEXT_WEIGHT = 0.4
"""How much of the best cosine among the candidates stated in its context a semantic
search's candidate gains (the rule of :data:`CONTEXT_WEIGHT`, over plain cosines)."""

NAMED_TIME_WEIGHT = 2.0
"""How much a hybrid search's candidate gains when it was stated on the day its query
names, or in the month it names (:mod:`~memory_admin.store.named_time`): about two
standard deviations of the fused score, so what was said then comes first unless another
record matches far better."""
SEMANTIC_NAMED_TIME_WEIGHT = 0.4
"""The same over a semantic search's cosines."""
LENGTH_WEIGHT = 0.3
"""How much a hybrid search's candidate gains per standard deviation of the log of its
length among the candidates (:func:`~memory_admin.embed.fusion.length_prior`): records
that say more answer more questions, and a few words' embedding sits close to anything.
Picked out of fold (0.3 on four of the five folds, 0.5 on the fifth); 0 turns it off."""
SEMANTIC_LENGTH_WEIGHT = 0.03
"""The same over a semantic search's cosines (a cosine's spread among its candidates is
about a tenth of a z-score's, hence the smaller weight). Picked out of fold (0.03 on
every fold of 0, 0.02, 0.03 and 0.05); 0 turns it off."""

# --- the query map (memory_admin.embed.query_map) -------------------------------------------

QUERY_MAP = True
"""Move the default model's query vectors by the packaged map before scoring by meaning
(a question towards the statements that answer it). Kept out of fold on both kinds of
record for semantic and hybrid search (docs/search.md, "The query map"); stored vectors
are the model's own either way."""
QUERY_MAP_PENALTY = 0.1
"""The map's ridge penalty (towards no move at all), picked out of fold; what
``--train-query-map`` fits the shipped map with."""

# --- the quality mode's ranker (memory_admin.store.quality) -------------------------------
# fitted by `python -m bench.locomo … --folds --train-quality` on LoCoMo's development split
# only (both kinds of record), one question at a time (the softmax of its candidates'
# scores towards its evidence), and shipped as these numbers

QUALITY_WEIGHTS: dict[str, float] = {
    "keyword_z": 0.0072,
    "centred_z": 0.6248,
    "cosine_z": 0.463,
    "keyword_share": 0.9538,
    "matched": -0.4388,
    "coverage": 0.3741,
    "keyword_rank": 0.8092,
    "semantic_rank": 0.072,
    "context": 0.314,
    "context_share": -6.8566,
    "age": 0.557,
    "long_query_keyword": 0.2646,
    "long_query_semantic": -0.1554,
    "named_time": 3.8595,
    "agreement": -0.0897,
    "context_keyword": 0.4897,
    "context_semantic": 0.2038,
    "length": 0.5776,
}
"""Each :data:`~memory_admin.store.quality.FEATURES` name's weight in the ranker's sum."""

# --- what counts as a match by meaning (memory_admin.store.vectors.relevant) ---------------

RELEVANCE_FLOOR: float | None = 0.2
"""A search by meaning returns a record only when its cosine similarity to the query (the
``semantic_score`` a hit carries) reaches this; a hybrid or quality search also keeps a
record that shares a word with the query. ``None`` returns every record, closest first.
Picked out of fold by its rule (docs/search.md, "Relevance floor")."""

# --- what a store object keeps of its reads ------------------------------------------------

RECORD_CACHE_SIZE = 4096
"""Records a SQL store keeps built (a few megabytes)."""
TOKEN_CACHE_SIZE = 8192
"""Scored rows whose terms a SQLite store keeps (about a megabyte)."""
VECTOR_CACHE_BYTES = 96 * 2**20
"""What a store keeps of the vectors it searched: 56 bytes a record (its key and the
signs of its vector), about 1.7 million records."""
CENTRES_KEPT = 256
"""Centres of large collections a process keeps (1.5 KB each)."""
QUERY_VECTOR_CACHE = 256
"""Query embeddings a store keeps (the next page, the count walk, a repeated question)."""

# --- housekeeping --------------------------------------------------------------------------

ADOPT_INTERVAL_S = 30.0
"""How often a store without an embedder checks whether its vectors' model has appeared."""
SCRUB_WAIT_S = 2.0
"""How long delete, erase and sweep wait for readers' old snapshots before they report
the scrub pending (instead of holding the caller for the whole busy timeout)."""
FORGET_SCAN_CHUNK = 1000
"""Events a forgetting reads at a time while it removes the previews that name what it forgot."""

OVERLAY_CACHE = 64
"""Overlays a store object keeps (one per composition and set of promoted records): an
agent composed at every instantiate from unchanged learnings is folded once."""

PROMOTED_READS = 256
"""Scopes whose promoted records a store object keeps between compositions, each checked
against a summary of the store's promotions (one aggregate query) before it is reused."""
