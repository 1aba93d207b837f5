"""Write batches: validating a batch, planning it against the store (supersedes, key
upserts, the batch tie) and the events a committed batch reports. Pure functions over
what the batch's unit read; :mod:`memory_admin.store.base` runs them inside the unit."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime

from memory_admin.errors import (
    MemoryConflictError,
    MemoryLimitError,
    MemoryNotFoundError,
    MemoryScopeError,
    MemoryValidationError,
)
from memory_admin.events import MemoryWriteEvent, agent_of
from memory_admin.records import (
    MAX_ID_CHARS,
    MAX_REASON_CHARS,
    MAX_SUPPORTS,
    MemoryRecord,
    MemoryWriteInput,
    parse_model,
    payload_chars,
    trusted_record,
)
from memory_admin.scope import Scope, scope_json
from memory_admin.store.ids import IdFactory
from memory_admin.store.protocol import MemoryStoreCapabilities, WriteInputLike
from memory_admin.store.session import Invalidation, PlannedBatch, Slot

Clock = Callable[[], datetime]


def check_limits(index: int, item: MemoryWriteInput | MemoryRecord, caps: MemoryStoreCapabilities, what: str) -> None:
    """``item`` — ``what`` names it in the error: ``Input 3`` — within every bound a
    record is held to beyond its model's own: the backend's content and payload limits
    (:class:`MemoryLimitError`) and, for a record imported as it is, its
    lifecycle fields (:class:`MemoryValidationError`)."""
    if len(item.content) > caps.max_content_chars:
        raise MemoryLimitError(
            f"{what}: content has {len(item.content)} characters; {caps.backend} holds at most "
            f"{caps.max_content_chars}. Store one fact per record.",
            index=index,
            limit=caps.max_content_chars,
            size=len(item.content),
        )
    if item.payload is not None and (size := payload_chars(item.payload)) > caps.max_payload_chars:
        raise MemoryLimitError(
            f"{what}: the payload has {size} characters of JSON; {caps.backend} holds at most "
            f"{caps.max_payload_chars}. Keep the structured form short: the content carries the fact.",
            index=index,
            limit=caps.max_payload_chars,
            size=size,
        )
    if isinstance(item, MemoryRecord):
        ids = f"at most {MAX_ID_CHARS} characters"
        problems = [
            {"loc": f"{index}.{name}", "msg": msg}
            for name, over, msg in (
                (
                    "invalid_reason",
                    len(item.invalid_reason or "") > MAX_REASON_CHARS,
                    f"at most {MAX_REASON_CHARS} characters",
                ),
                ("supersedes", len(item.supersedes or "") > MAX_ID_CHARS, ids),
                ("superseded_by", len(item.superseded_by or "") > MAX_ID_CHARS, ids),
                ("supports", len(item.supports) > MAX_SUPPORTS, f"at most {MAX_SUPPORTS} provenances"),
            )
            if over
        ]
        if problems:
            summary = "; ".join(f"{p['loc'].partition('.')[2]}: {p['msg']}" for p in problems)
            raise MemoryValidationError(f"{what}: {summary}.", problems)


def validate_batch(inputs: Sequence[WriteInputLike], caps: MemoryStoreCapabilities) -> list[MemoryWriteInput]:
    """Parse a batch's inputs, all or none, within the backend's limits."""
    if isinstance(inputs, (str, bytes, Mapping)) or not isinstance(inputs, Sequence):
        raise MemoryValidationError(
            "write() takes a list of inputs, even for a single record.",
            [{"loc": "inputs", "msg": "expected a list"}],
        )
    if len(inputs) > caps.max_batch:
        raise MemoryLimitError(
            f"A batch holds at most {caps.max_batch} inputs; split it.",
            limit=caps.max_batch,
            size=len(inputs),
        )
    items = [parse_model(MemoryWriteInput, item, what=f"input {i}") for i, item in enumerate(inputs)]
    for index, item in enumerate(items):
        check_limits(index, item, caps, f"Input {index}")
    return items


class BatchReads:
    """The records a batch names and the live holders of its key slots, read (and, on
    a server database, locked) before planning starts."""

    def __init__(self, records: Iterable[MemoryRecord], slots: Iterable[Slot]) -> None:
        self._by_id = {record.id: record for record in records}
        wanted = {(scope_json(scope), kind, key) for scope, kind, key in slots}
        self._holders: dict[tuple[str, str, str], MemoryRecord] = {
            (scope_json(r.scope), r.kind, r.key): r
            for r in self._by_id.values()
            if r.key is not None and r.invalid_at is None and (scope_json(r.scope), r.kind, r.key) in wanted
        }

    def get_many(self, ids: Iterable[str]) -> dict[str, MemoryRecord]:
        return {i: self._by_id[i] for i in ids if i in self._by_id}

    def find_valid_keyed(self, scope: Scope, kind: str, key: str) -> MemoryRecord | None:
        return self._holders.get((scope_json(scope), kind, key))


def plan_batch(tx: BatchReads, items: list[MemoryWriteInput], *, clock: Clock, id_factory: IdFactory) -> PlannedBatch:
    """Resolve every input's predecessor, then stamp the batch with one ``now``.

    A predecessor is the record an input supersedes: named explicitly, or the valid
    holder of its ``(scope, kind, key)`` slot, or an earlier input of this batch.
    """
    explicit = tx.get_many({item.supersedes for item in items if item.supersedes})
    stored: list[MemoryRecord | None] = []  # predecessor already in the store
    in_batch: list[int | None] = []  # or: index of an earlier input
    retired: set[str] = set()
    slots: dict[tuple[str, str, str], int] = {}
    for index, item in enumerate(items):
        predecessor = explicit_predecessor(index, item, explicit)
        earlier: int | None = None
        if item.key is not None:
            slot = (scope_json(item.scope), item.kind, item.key)
            earlier = slots.get(slot)
            holder = None if earlier is not None else tx.find_valid_keyed(item.scope, item.kind, item.key)
            if holder is not None and holder.id in retired:
                holder = None  # an earlier input of this batch already superseded it
            if predecessor is not None and (earlier is not None or (holder and holder.id != predecessor.id)):
                held_by = holder.id if holder else f"input {earlier} of this batch"
                raise MemoryConflictError(
                    f"Input {index} supersedes {predecessor.id!r}, but the key {item.key!r} is held "
                    f"by {held_by}. Supersede that record or choose another key. Nothing was written.",
                    index=index,
                    record_id=predecessor.id,
                    key_holder=held_by,
                )
            predecessor = predecessor or holder
            slots[slot] = index
        if predecessor is not None:
            if predecessor.id in retired:
                raise MemoryConflictError(
                    f"Input {index} supersedes {predecessor.id!r}, which an earlier input of this "
                    "batch already supersedes; a record has one successor. Nothing was written.",
                    index=index,
                    record_id=predecessor.id,
                )
            retired.add(predecessor.id)
        stored.append(predecessor)
        in_batch.append(earlier)

    # one now for the batch, never earlier than a version it supersedes (clock skew)
    now = max([clock(), *(p.updated_at for p in stored if p is not None)])
    for index, item in enumerate(items):
        if item.expires_at is not None and item.expires_at <= now:
            raise MemoryValidationError(
                f"Input {index}: expires_at must be in the future.",
                [{"loc": f"{index}.expires_at", "msg": "must be in the future"}],
            )
        if item.observed_at is not None and item.observed_at > now:
            raise MemoryValidationError(
                f"Input {index}: observed_at (when the fact was stated) cannot be in the future.",
                [{"loc": f"{index}.observed_at", "msg": "must not be in the future"}],
            )
    ids = id_factory.batch(now, len(items))
    successor: dict[int, str] = {}
    batch = PlannedBatch()
    for index, (predecessor, earlier) in enumerate(zip(stored, in_batch, strict=True)):
        if predecessor is not None:
            batch.invalidations.append(Invalidation(predecessor.id, now, "superseded", superseded_by=ids[index]))
        if earlier is not None:
            successor[earlier] = ids[index]
    for index, item in enumerate(items):
        before, earlier = stored[index], in_batch[index]
        predecessor_id = ids[earlier] if earlier is not None else (before.id if before else None)
        retired_now = index in successor
        batch.records.append(
            # every field was validated as a MemoryWriteInput; skip validating it twice
            trusted_record(
                id=ids[index],
                scope=item.scope,
                kind=item.kind,
                content=item.content,
                key=item.key,
                tags=item.tags,
                provenance=item.provenance,
                created_at=now,
                updated_at=now,
                supersedes=predecessor_id,
                expires_at=item.expires_at,
                target=item.target,
                payload=item.payload,
                invalid_at=now if retired_now else None,
                invalid_reason="superseded" if retired_now else None,
                superseded_by=successor.get(index),
                supports=(),
                observed_at=item.observed_at or now,
            )
        )
    return batch


def explicit_predecessor(index: int, item: MemoryWriteInput, explicit: dict[str, MemoryRecord]) -> MemoryRecord | None:
    if item.supersedes is None:
        return None
    predecessor = explicit.get(item.supersedes)
    if predecessor is None:
        raise MemoryNotFoundError(
            item.supersedes,
            f"Input {index} supersedes {item.supersedes!r}, which does not exist. Nothing was written.",
        )
    if predecessor.scope != item.scope:
        raise MemoryScopeError(
            f"Input {index} supersedes {item.supersedes!r}, which lives in another scope; a "
            "correction is written in the scope of the record it corrects. Nothing was written.",
            index=index,
            record_id=item.supersedes,
        )
    if predecessor.invalid_at is not None:
        raise MemoryConflictError(
            f"Input {index} supersedes {item.supersedes!r}, which is already invalid"
            + (f" (superseded by {predecessor.superseded_by})" if predecessor.superseded_by else "")
            + ". Supersede the current version instead. Nothing was written.",
            index=index,
            record_id=item.supersedes,
            superseded_by=predecessor.superseded_by,
        )
    return predecessor


def write_events(batch: PlannedBatch) -> list[MemoryWriteEvent]:
    """One write event per distinct scope of a committed batch."""
    now = batch.records[0].created_at
    by_scope: dict[str, list[MemoryRecord]] = {}
    for record in batch.records:
        by_scope.setdefault(scope_json(record.scope), []).append(record)
    return [
        MemoryWriteEvent(
            at=now,
            scope=records[0].scope,
            agent=agent_of(records[0].scope),
            count=len(records),
            record_ids=[r.id for r in records],
            kinds=dict(Counter(r.kind for r in records)),
            superseded_ids=[r.supersedes for r in records if r.supersedes],
        )
        for records in by_scope.values()
    ]


def check_import_slots(tx: BatchReads, records: Sequence[MemoryRecord]) -> None:
    """A key slot has one live holder, whichever way records arrive."""
    holders: dict[tuple[str, str, str], str] = {}
    for record in records:
        if record.key is None or record.invalid_at is not None:
            continue
        slot = (scope_json(record.scope), record.kind, record.key)
        stored = tx.find_valid_keyed(record.scope, record.kind, record.key)
        holder = holders.get(slot) or (stored.id if stored is not None else None)
        if holder is not None and holder != record.id:
            raise MemoryConflictError(
                f"Record {record.id!r} is live on key {record.key!r}, which {holder!r} already holds; "
                "a key slot has one live record. Nothing was imported.",
                record_id=record.id,
                key_holder=holder,
            )
        holders[slot] = record.id


__all__ = ["BatchReads", "check_import_slots", "explicit_predecessor", "plan_batch", "validate_batch", "write_events"]
