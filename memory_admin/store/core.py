"""The engine under every store's public API: the clock, the ids, the event buffer, how
a unit of work runs (a backend's :meth:`~StoreCore._open`, the sync and async drivers)
and the plans every read shares. :class:`~memory_admin.store.base.BaseMemoryStore`
builds the public methods on it."""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Self, TypeVar

from memory_admin import tuning
from memory_admin.embed import embedder_for
from memory_admin.embed.quantize import to_blobs
from memory_admin.embed.query_map import map_query
from memory_admin.errors import (
    CapabilityError,
    MemoryEmbedderMismatchError,
    MemoryScrubPendingError,
    MemoryValidationError,
)
from memory_admin.events import (
    AnyEvent,
    EventSink,
)
from memory_admin.promotion import DemotionCause, Promotion
from memory_admin.records import (
    MEANING_MODES,
    SEARCH_MODES,
    MemoryHit,
    MemoryRecord,
    MemorySearchQuery,
    MemoryWriteInput,
    SearchMode,
    parse_model,
    utc_now,
)
from memory_admin.steps import Steps, arun_steps, run_steps
from memory_admin.store import quality
from memory_admin.store.caches import LruCache
from memory_admin.store.event_buffer import DEFAULT_CAPACITY, DEFAULT_INTERVAL, EventBuffer
from memory_admin.store.ids import IdFactory
from memory_admin.store.named_time import named_time
from memory_admin.store.plan import Candidate, Cursor, SearchPlan
from memory_admin.store.protocol import (
    ErasureReport,
    MemoryStoreCapabilities,
    SearchQueryLike,
)
from memory_admin.store.session import (
    Compute,
    Mode,
    Session,
    Statement,
    Unit,
    Work,
)
from memory_admin.store.vectors import (
    Ranked,
    VectorCache,
    VectorSpace,
    by_meaning,
    document_text,
    fuse,
    relevant,
)
from memory_admin.tokenize import unique_tokens

if TYPE_CHECKING:
    from memory_admin.embed.protocol import Embedder

Clock = Callable[[], datetime]
T = TypeVar("T")

MAX_QUERY_TOKENS = 64
"""Distinct query tokens a search matches on; later ones are ignored (documented)."""

MAX_CHAIN_LENGTH = 1000
DEFAULT_MAX_CONTENT_CHARS = 10_000
DEFAULT_MAX_PAYLOAD_CHARS = 20_000
DEFAULT_MAX_LIMIT = 1000
DEFAULT_MAX_BATCH = 10_000
MAX_PROMOTED = 2000
"""Promoted records a composition reads at most for one scope (its budgets hold far fewer)."""
MAX_MENTIONS = 25
"""Records an erasure's dry run lists as naming the scope elsewhere in the tenant."""
AUTO_EMBEDDER = "auto"


def full_capabilities(backend: str) -> MemoryStoreCapabilities:
    """The capabilities of a backend with every extension and the default limits (every
    bundled backend; a store with an embedder reports its search kind on top)."""
    return MemoryStoreCapabilities(
        backend=backend,
        search="keyword",
        erasure=True,
        admin=True,
        events=True,
        promotion=True,
        max_content_chars=DEFAULT_MAX_CONTENT_CHARS,
        max_payload_chars=DEFAULT_MAX_PAYLOAD_CHARS,
        max_limit=DEFAULT_MAX_LIMIT,
        max_batch=DEFAULT_MAX_BATCH,
    )


def _commit_events(store: StoreCore, events: Sequence[AnyEvent], lost: int) -> int:
    # looked up on each commit (not bound once), like every other unit the store runs
    return store._commit_events(events, lost)


class StoreCore(ABC):
    """What every public method of a store runs on. A backend declares its
    :attr:`capabilities_data` and implements :meth:`_open` (a session and a statement
    runner for a unit's mode); a backend with native async connections also implements
    :meth:`_aopen` (and runs its units there).

    ``persist_events`` turns the event log off (sinks still hear every event);
    ``event_flush_interval`` is how long an event may wait for its batch (what a crash
    can lose) and ``event_buffer_size`` how many events wait at most before the oldest
    are dropped (see :mod:`memory_admin.store.event_buffer`).

    ``embedder`` (an :class:`~memory_admin.embed.Embedder`) gives the store recall by
    meaning: every record written gets a vector in the same transaction, searches are
    hybrid by default, and :meth:`capabilities` says ``search="hybrid"``. Without one
    the store is keyword-only. ``search_mode`` is the mode of a query that names none
    (``quality`` for the learned ranker; a mode by meaning needs an embedder)."""

    backend_name: ClassVar[str] = "memory_store"

    capabilities_data: ClassVar[MemoryStoreCapabilities]
    _vector_cache: VectorCache | None = None
    """A SQL backend's copy of the vectors it searched (:class:`~memory_admin.store.vectors.VectorCache`)."""

    def __init__(
        self,
        *,
        clock: Clock = utc_now,
        sinks: Iterable[EventSink] = (),
        persist_events: bool = True,
        event_flush_interval: float = DEFAULT_INTERVAL,
        event_buffer_size: int = DEFAULT_CAPACITY,
        embedder: Embedder | Literal["auto"] | None = None,
        search_mode: SearchMode | None = None,
    ) -> None:
        if search_mode is not None and search_mode not in SEARCH_MODES:
            raise MemoryValidationError(
                f"search_mode is {search_mode!r}; use one of {', '.join(SEARCH_MODES)} (or leave it out).",
                [{"loc": "search_mode", "msg": f"one of {', '.join(SEARCH_MODES)}"}],
            )
        self._search_mode = search_mode
        if search_mode in MEANING_MODES and embedder is None:
            raise CapabilityError(
                self.capabilities_data.backend,
                [f"search={search_mode}"],
                hint="Open the store with an embedder (open_store(url, embedder='default') or MEMORY_EMBEDDER=default) "
                "to search by meaning.",
            )
        self._clock = clock
        # "auto": the model the store's vectors come from, looked up now and then (a
        # keyword-only file that someone embeds is searched by meaning from then on)
        self._auto_embedder = embedder == AUTO_EMBEDDER
        self._embedder = None if isinstance(embedder, str) else embedder
        self._adopt_checked = -tuning.ADOPT_INTERVAL_S
        # pages and counts of one search embed its query once
        self._query_vectors: LruCache[tuple[str, bool], Any] = LruCache(tuning.QUERY_VECTOR_CACHE)
        self._sinks: list[EventSink] = list(sinks)
        self._persist_events = persist_events
        self._ids = IdFactory()
        self._events = EventBuffer(self, _commit_events, interval=event_flush_interval, capacity=event_buffer_size)

    @abstractmethod
    def _open(self, mode: Mode) -> AbstractContextManager[tuple[Session, Callable[[Statement], list[Any]]]]:
        """A session for one unit of ``mode`` and the function that runs its statements.
        Leaving the context commits (or, if the block raised, rolls back)."""

    def _run_unit(self, unit: Unit[T]) -> T:
        with self._open(unit.mode) as (session, execute):
            return run_steps(unit.steps(session), execute)

    async def _arun_unit(self, unit: Unit[T]) -> T:
        """Run a unit from async code. The default runs the sync driver on a worker
        thread; a backend with native async connections runs the same steps on one."""
        return await asyncio.to_thread(self._run_unit, unit)

    def _answer(self, request: Unit[T] | Compute[T]) -> T:
        if isinstance(request, Compute):
            return request.run()
        return self._run_unit(request)

    async def _aanswer(self, request: Unit[T] | Compute[T]) -> T:
        if isinstance(request, Compute):
            return await request.arun()
        return await self._arun_unit(request)

    @property
    def embedder(self) -> Embedder | None:
        """The store's embedder (``None``: keyword-only)."""
        return self._embedder

    def _adopt_embedder(self, *, now: bool = False) -> Steps[Work, None]:
        """For an ``auto`` store still without an embedder: adopt the model its vectors
        come from, if this machine can run it (checked every :data:`ADOPT_INTERVAL_S`)."""
        if not self._auto_embedder or self._embedder is not None:
            return
        moment = time.monotonic()
        if not now and moment - self._adopt_checked < tuning.ADOPT_INTERVAL_S:
            return
        self._adopt_checked = moment
        space: VectorSpace | None = yield Unit("read", lambda s: s.vector_space())
        if space is not None:
            self._embedder = embedder_for(space.model_id)

    def capabilities(self) -> MemoryStoreCapabilities:
        if self._embedder is None:
            return self.capabilities_data
        return self.capabilities_data.model_copy(update={"search": "hybrid", "modes": SEARCH_MODES})

    def close(self) -> None:
        """Commit the events still buffered, stop their writer, then release the store's
        connections; the store cannot be used afterwards. Safe to call twice."""
        self._events.close()  # while the connections are still open
        self._release()

    async def aclose(self) -> None:
        """Release connections, async ones on the running loop included (see :meth:`close`)."""
        await asyncio.to_thread(self._events.close)
        await self._arelease()

    def _release(self) -> None:
        """The backend's part of :meth:`close`. The default store holds nothing."""

    async def _arelease(self) -> None:
        """The backend's part of :meth:`aclose`: by default, :meth:`_release`."""
        self._release()

    def _drive(self, flow: Steps[Work, T]) -> T:
        return run_steps(flow, self._answer)

    async def _adrive(self, flow: Steps[Work, T]) -> T:
        return await arun_steps(flow, self._aanswer)

    def _plan(
        self,
        query: SearchQueryLike,
        *,
        include_expired: bool = False,
        cursor: str | None = None,
    ) -> SearchPlan:
        parsed = parse_model(MemorySearchQuery, query, what="search query")
        caps = self.capabilities()
        if parsed.limit > caps.max_limit:
            raise MemoryValidationError(
                f"limit is {parsed.limit}; {caps.backend} returns at most {caps.max_limit} per call.",
                [{"loc": "limit", "msg": f"at most {caps.max_limit}"}],
            )
        tokens = tuple(unique_tokens(parsed.query)[:MAX_QUERY_TOKENS]) if parsed.query is not None else ()
        mode = parsed.mode or self._search_mode or ("hybrid" if self._embedder is not None else "keyword")
        if mode != "keyword" and self._embedder is None:
            raise CapabilityError(
                caps.backend,
                [f"search={mode}"],
                hint="Open the store with an embedder (open_store(url, embedder='default') or MEMORY_EMBEDDER=default) "
                "to search by meaning.",
            )
        decoded = Cursor.decode(cursor) if cursor else None
        if decoded is not None and (decoded.offset is not None) != (parsed.query is not None):
            raise MemoryValidationError(
                "That page cursor belongs to a different listing; start from the first page.",
                [{"loc": "cursor", "msg": "cursor does not match the query"}],
            )
        return SearchPlan(
            query=parsed,
            tokens=tokens,
            now=self._clock(),
            limit=parsed.limit,
            include_expired=include_expired,
            cursor=decoded,
            mode=mode,
        )

    def _page(self, plan: SearchPlan) -> Steps[Work, tuple[list[MemoryHit], Cursor | None]]:
        if plan.empty:
            return [], None
        if plan.ranked and plan.mode != "keyword":
            return (yield from self._page_by_meaning(plan))
        # a ranked search reads several statements that must agree; a listing reads one
        page: tuple[list[MemoryHit], Cursor | None] = yield Unit(
            "snapshot" if plan.ranked else "read", lambda s: s.search(plan)
        )
        return page

    def _page_by_meaning(self, plan: SearchPlan) -> Steps[Work, tuple[list[MemoryHit], Cursor | None]]:
        """A semantic or hybrid page: the query embedded outside any transaction, then
        the closest records (and for hybrid the keyword hits, fused) read in one snapshot."""
        embedder = self._embedder
        assert embedder is not None and plan.query.query is not None  # _plan saw to both
        text = plan.query.query
        key = (text, tuning.QUERY_MAP)
        vectors = self._query_vectors.get(key)
        if vectors is None:
            own = yield Compute(lambda: embedder.embed_query(text), lambda: embedder.aembed_query(text))
            # a question moved towards what answers it orders; its own vector says what matches
            vectors = (map_query(embedder.model_id, own), own)
            self._query_vectors.put(key, vectors)
        plan = replace(plan, vector=vectors[0], own=vectors[1])
        named = named_time(text)

        def steps(s: Session) -> Steps[Statement, tuple[list[MemoryHit], Cursor | None]]:
            space = yield from self._vector_space(s, claim=False)

            def similar(limit: int) -> Steps[Statement, list[Candidate]]:
                # no vector space yet: nothing is embedded, nothing is close
                return (yield from s.similar(plan, limit, space)) if space is not None else []

            ranked: list[Ranked]
            if plan.mode == "semantic":
                depth = max(plan.needed, tuning.SEMANTIC_CANDIDATES)
                ranked = by_meaning((yield from similar(depth)), named)
            else:
                depth = max(plan.needed, tuning.FUSION_CANDIDATES)
                semantic = yield from similar(depth)
                keyword = yield from s.keyword_candidates(plan, depth)
                if plan.mode == "quality":
                    ranked = quality.rank(keyword, semantic, len(plan.tokens), named=named)
                else:
                    ranked = fuse(keyword, semantic, named)
            ranked = relevant(ranked, plan.query.relevance)
            page = ranked[plan.offset : plan.offset + plan.limit]
            # the page's records, read and checked (a corrupt row is reported, never shown)
            records = yield from s.get_many([hit.id for hit in page])
            hits = [hit.hit(records[hit.id]) for hit in page if hit.id in records]
            more = len(ranked) > plan.offset + plan.limit
            return hits, Cursor(offset=plan.offset + plan.limit) if more else None

        page: tuple[list[MemoryHit], Cursor | None] = yield Unit("snapshot", steps)
        return page

    def _document_vectors(self, items: Sequence[MemoryRecord | MemoryWriteInput]) -> Steps[Work, list[bytes]]:
        """The storage blobs of these records' vectors, embedded outside any transaction
        (a model never holds the write lock); none without an embedder."""
        embedder = self._embedder
        if embedder is None or not items:
            return []
        texts = [document_text(item) for item in items]
        windowed = getattr(embedder, "embed_document_windows", None)
        if windowed is None:  # an embedder that reads a text in one run
            matrix = yield Compute(lambda: embedder.embed_documents(texts), lambda: embedder.aembed_documents(texts))
            return to_blobs(matrix)
        # a long record keeps its windows' vectors after its own (docs/search.md, "Long records")
        matrix, windows = yield Compute(lambda: windowed(texts), lambda: asyncio.to_thread(windowed, texts))
        return to_blobs(matrix, windows)

    def _store_vectors(
        self, s: Session, records: Sequence[MemoryRecord], blobs: Sequence[bytes]
    ) -> Steps[Statement, None]:
        """In the records' own unit: their vectors, after checking (or claiming) the space."""
        if blobs:
            yield from self._vector_space(s, claim=True)
            yield from s.insert_vectors([(r.id, blob) for r, blob in zip(records, blobs, strict=True)])

    def _vector_space(self, s: Session, *, claim: bool) -> Steps[Statement, VectorSpace | None]:
        """The store's vector space, checked against the embedder's (a mismatch raises
        :class:`~memory_admin.errors.MemoryEmbedderMismatchError`); ``claim`` records
        the embedder's when the store has none yet (its first vectors are being written)."""
        assert self._embedder is not None
        mine = VectorSpace.of(self._embedder)
        stored = yield from s.vector_space()
        if stored is None:
            if claim:
                yield from s.set_vector_space(mine)
                return mine
            return None
        if stored != mine:
            raise MemoryEmbedderMismatchError(stored.model_id, mine.model_id)
        return stored

    def _forget_reads(self) -> None:
        """Drop what this store object keeps of what it read — vectors and query
        embeddings here, a backend's records and terms in its override — so no copy of
        forgotten data outlives a forgetting in this process's memory."""
        self._query_vectors.clear()
        if self._vector_cache is not None:
            self._vector_cache.clear()

    def _scrub(self, what: str, report: ErasureReport | None = None) -> Steps[Work, None]:
        """After forgetting: nothing forgotten left in what this store keeps in memory
        (:meth:`_forget_reads`), and no forgotten byte in the store's files within
        :data:`SCRUB_WAIT_S`, else :class:`MemoryScrubPendingError` (the forgetting stands)."""
        self._forget_reads()
        done: bool = yield Unit("maintain", lambda s: s.scrub(tuning.SCRUB_WAIT_S))
        if not done:
            raise MemoryScrubPendingError(what, report=report)

    def scrub(self, wait: float = 30.0) -> bool:
        """Finish what a forgetting left pending: checkpoint the store's files so no
        forgotten byte remains, trying for up to ``wait`` seconds while other connections
        hold older snapshots. ``True`` once nothing remains."""
        done: bool = self._run_unit(Unit("maintain", lambda s: s.scrub(wait)))
        return done

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @abstractmethod
    def flush_events(self) -> None:
        """Commit every event this process has emitted to this store's log (written once,
        in :mod:`.event_log`): a forgetting calls it first, so it reaches them too."""

    @abstractmethod
    def _promoted_among(self, s: Session, ids: Sequence[str]) -> Steps[Statement, list[Promotion]]:
        """In a unit about to forget ``ids``: the promoted ones (written once, in
        :mod:`.learnings`)."""

    @abstractmethod
    def _log_forgotten_demotions(self, promoted: Sequence[Promotion], cause: DemotionCause) -> None:
        """After such a unit commits: their demote events (written once, in :mod:`.learnings`)."""

    @abstractmethod
    def _commit_events(self, events: Sequence[AnyEvent], lost: int) -> int:
        """The event buffer's batch writer (written once, in :mod:`.event_log`): returns how
        many events it withheld."""
