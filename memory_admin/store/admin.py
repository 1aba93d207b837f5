"""The admin extension (:class:`~memory_admin.store.protocol.AdminMemoryStore`), written
once for every backend: listings, imports, facets, counts, chains, sweeping, the
corruption scan, vectors' backfill, maintenance."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import partial

from memory_admin.errors import (
    CapabilityError,
    MemoryConflictError,
    MemoryLimitError,
    MemoryNotFoundError,
    MemoryStoreError,
    MemoryValidationError,
)
from memory_admin.promotion import Promotion
from memory_admin.records import (
    MemoryRecord,
    parse_model,
)
from memory_admin.scope import TENANT_KEY, Scope, canonical_scope
from memory_admin.steps import Steps
from memory_admin.store.arguments import (
    check_count,
    check_id,
)
from memory_admin.store.batch import BatchReads, check_import_slots, check_limits
from memory_admin.store.core import MAX_CHAIN_LENGTH, StoreCore
from memory_admin.store.event_log import forget_in_log
from memory_admin.store.protocol import (
    ChainLink,
    CorruptionScan,
    EmbeddingStatus,
    RecordListQuery,
    RecordPage,
    ScopeCounts,
    ScopeFacet,
)
from memory_admin.store.session import Session, Statement, Unit, Work


class BaseAdminStore(StoreCore):
    """What the dashboard and the migration tools call beyond the protocol."""

    def list_records(self, query: RecordListQuery) -> RecordPage:
        query = parse_model(RecordListQuery, query, what="listing")
        self._drive(self._adopt_embedder())
        plan = self._plan(query.search, include_expired=query.include_expired, cursor=query.cursor)
        hits, cursor = self._drive(self._page(plan))
        return RecordPage(hits=hits, next_cursor=cursor.encode() if cursor else None)

    def iter_records(self, query: RecordListQuery, *, page_size: int = 500) -> Iterator[MemoryRecord]:
        """Every record of a listing, page by page (bounded memory, for exports)."""
        query = parse_model(RecordListQuery, query, what="listing")  # a mapping too, as list_records takes
        # model_copy does not validate: the page size is checked here, before any read
        search = query.search.model_copy(update={"limit": check_count(page_size, "page_size")})
        cursor = query.cursor
        while True:
            page = self.list_records(query.model_copy(update={"search": search, "cursor": cursor}))
            for hit in page.hits:
                yield hit.record
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def import_records(
        self, records: Sequence[MemoryRecord | Mapping[str, object]], *, skip_existing: bool = False
    ) -> int:
        """Insert records verbatim — ids, timestamps, invalidation chains and tombstoned
        links as they are — in one transaction (moving a store's contents to another
        backend). Within a batch-time tie, records keep the order given (pass them oldest
        first). An id already stored is a conflict unless ``skip_existing`` (resuming a
        copy); so is a live record whose key slot another live record holds. Returns how
        many records went in."""
        caps = self.capabilities()
        if isinstance(records, (str, bytes, Mapping)) or not isinstance(records, Sequence):
            raise MemoryValidationError(
                "import_records() takes a list of records.", [{"loc": "records", "msg": "expected a list"}]
            )
        if len(records) > caps.max_batch:
            raise MemoryLimitError(
                f"A batch holds at most {caps.max_batch} records; split it.", limit=caps.max_batch, size=len(records)
            )
        parsed = [parse_model(MemoryRecord, record, what=f"record {i}") for i, record in enumerate(records)]
        for index, record in enumerate(parsed):
            check_limits(index, record, caps, f"Record {index} ({record.id})")
        repeated = [record_id for record_id, n in Counter(r.id for r in parsed).items() if n > 1]
        if repeated:
            raise MemoryValidationError(
                f"Record id {repeated[0]!r} appears twice in one import.", [{"loc": "records", "msg": "repeated id"}]
            )
        if not parsed:
            return 0
        return self._drive(self._import(parsed, skip_existing))

    def _import(self, parsed: list[MemoryRecord], skip_existing: bool) -> Steps[Work, int]:
        blobs = yield from self._document_vectors(parsed)
        vectors = dict(zip((r.id for r in parsed), blobs, strict=False))

        def steps(s: Session) -> Steps[Statement, int]:
            slots = [(r.scope, r.kind, r.key) for r in parsed if r.key is not None and r.invalid_at is None]
            scopes = [r.scope for r in parsed]
            reads = BatchReads((yield from s.batch_reads([r.id for r in parsed], slots, scopes)), slots)
            existing = reads.get_many(r.id for r in parsed)
            if existing and not skip_existing:
                first = min(existing)
                raise MemoryConflictError(
                    f"{len(existing)} of these records already exist (e.g. {first!r}); pass "
                    "skip_existing=True to resume a copy. Nothing was imported.",
                    record_id=first,
                )
            fresh = [r for r in parsed if r.id not in existing]
            check_import_slots(reads, fresh)
            if fresh:
                yield from s.insert(fresh)
                yield from s.add_candidates(fresh)
                yield from self._store_vectors(s, fresh, [vectors[r.id] for r in fresh] if vectors else [])
            return len(fresh)

        imported: int = yield Unit("write", steps)
        return imported

    # --- vectors ----------------------------------------------------------------------

    def embedding_status(self) -> EmbeddingStatus:
        """Which model made the store's vectors, and how many records have one."""

        def steps(s: Session) -> Steps[Statement, EmbeddingStatus]:
            space = yield from s.vector_space()
            embedded, records = yield from s.vector_counts()
            return EmbeddingStatus(
                model_id=space.model_id if space else None,
                dimensions=space.dimensions if space else None,
                embedded=embedded,
                records=records,
                embedder=self._embedder.model_id if self._embedder is not None else None,
            )

        return self._run_unit(Unit("snapshot", steps))

    def embed_missing(
        self,
        *,
        batch_size: int = 32,
        rebuild: bool = False,
        progress: Callable[[int, int], None] | None = None,
    ) -> int:
        """Give every record without a vector its vector, ``batch_size`` records per
        transaction, and return how many were embedded. Resumable: stopped at any point,
        the next run carries on with the records still missing. ``rebuild`` first forgets
        every vector (a change of model). ``progress(done, total)`` hears each batch."""
        check_count(batch_size, "batch_size")
        if self._embedder is None:
            raise CapabilityError(
                self.capabilities().backend,
                ["search=hybrid"],
                hint="Embedding needs an embedder: open the store with embedder='default' or set MEMORY_EMBEDDER.",
            )
        return self._drive(self._embed_missing(batch_size, rebuild, progress))

    def _embed_missing(
        self, batch_size: int, rebuild: bool, progress: Callable[[int, int], None] | None
    ) -> Steps[Work, int]:
        if rebuild:
            yield Unit("write", lambda s: s.set_vector_space(None))
        else:
            yield Unit("read", lambda s: self._vector_space(s, claim=False))  # another model: refuse at once
        embedded, records = yield Unit("snapshot", lambda s: s.vector_counts())
        total = records - embedded
        done = 0
        previous: list[str] = []
        while True:
            batch: list[MemoryRecord] = yield Unit("read", lambda s: s.unembedded(batch_size))
            ids = [r.id for r in batch]
            if not batch:
                return done
            if ids == previous:
                raise MemoryStoreError(f"the vectors of {ids[0]!r} and its batch were not stored; nothing more done")
            previous = ids
            blobs = yield from self._document_vectors(batch)
            yield Unit("write", partial(self._store_vectors, records=batch, blobs=blobs))
            done += len(batch)
            if progress is not None:
                progress(done, max(total, done))

    def scope_facets(self, scope: Mapping[str, str] | None = None, *, values_per_key: int = 50) -> list[ScopeFacet]:
        canonical = canonical_scope(scope) if scope is not None else None
        per_key = check_count(values_per_key, "values_per_key")  # SQL reads LIMIT -1 as no limit at all
        return self._run_unit(Unit("read", lambda s: s.facets(canonical, per_key)))

    def count_records(self, scope: Mapping[str, str], *, scope_match: str = "subset") -> ScopeCounts:
        plan = self._plan(
            {"scope": scope, "scope_match": scope_match, "include_invalidated": True, "limit": 0},
            include_expired=True,
        )
        return self._run_unit(Unit("snapshot", lambda s: s.count(plan)))

    def sweep_expired(self, scope: Mapping[str, str]) -> int:
        canonical = canonical_scope(scope)
        self.flush_events()  # this process's events are redacted with the rest
        return self._drive(self._sweep_expired(canonical))

    def _sweep_expired(self, canonical: Scope) -> Steps[Work, int]:
        now = self._clock()

        def steps(s: Session) -> Steps[Statement, tuple[int, list[Promotion]]]:
            doomed = yield from s.expired_ids(canonical, now)
            if not doomed:
                return 0, []
            yield from s.begin_forgetting()
            promoted = yield from self._promoted_among(s, doomed)
            for record_id in doomed:
                yield from s.delete(record_id)
            # forgotten as a delete forgets: expired is as gone as deleted
            yield from forget_in_log(s, canonical[TENANT_KEY], doomed, self._clock)
            return len(doomed), promoted

        done: tuple[int, list[Promotion]] = yield Unit("write", steps)
        swept, promoted = done
        self._log_forgotten_demotions(promoted, "expired")
        if swept:
            yield from self._scrub(f"{swept} expired records")
        return swept

    def find_corrupt(
        self, scope: Mapping[str, str] | None = None, *, limit: int = 100, max_rows: int | None = None
    ) -> CorruptionScan:
        limit, max_rows = check_count(limit, "limit"), check_count(max_rows, "max_rows", optional=True)
        canonical = canonical_scope(scope) if scope is not None else None
        return self._run_unit(Unit("read", lambda s: s.find_corrupt(canonical, limit, max_rows)))

    def chain(self, record_id: str) -> list[ChainLink]:
        check_id(record_id)

        def steps(s: Session) -> Steps[Statement, list[ChainLink]]:
            def fetch(link_id: str) -> Steps[Statement, MemoryRecord | None]:
                return (yield from s.get_many([link_id])).get(link_id)

            start = yield from fetch(record_id)
            if start is None:
                raise MemoryNotFoundError(record_id)
            seen = {start.id}
            links: dict[str, list[ChainLink]] = {"supersedes": [], "superseded_by": []}
            for direction, found in links.items():
                cursor: MemoryRecord | None = start
                while cursor is not None and len(seen) < MAX_CHAIN_LENGTH:
                    next_id: str | None = getattr(cursor, direction)
                    if next_id is None or next_id in seen:
                        break
                    seen.add(next_id)
                    cursor = yield from fetch(next_id)
                    found.append(ChainLink(id=next_id, record=cursor))
            return [*reversed(links["supersedes"]), ChainLink(id=start.id, record=start), *links["superseded_by"]]

        return self._run_unit(Unit("snapshot", steps))

    def optimize(self) -> None:
        """Compact the store's indexes after a large import; a no-op where there is
        nothing to compact. Safe to call at any time."""
        self._run_unit(Unit("maintain", lambda s: s.optimize()))
