"""An invalidation chain as a timeline a person can read: versions, who wrote them,
why they ended, and a word diff from the version before."""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from memory_admin.records import MemoryRecord
from memory_admin.reports.listing import RecordState, record_state
from memory_admin.store import ChainLink

_WORDS = re.compile(r"\s+|\S+\s*")  # words keep their trailing space, so changes read as phrases


@dataclass(frozen=True)
class DiffPiece:
    op: Literal["same", "add", "remove"]
    text: str


@dataclass(frozen=True)
class FieldChange:
    name: str
    before: str
    after: str


@dataclass(frozen=True)
class Version:
    """One entry of the timeline. ``record`` is ``None`` for a tombstone (a deleted
    record, or one outside the viewer's grants): only its id is shown, never content."""

    id: str
    record: MemoryRecord | None
    current: bool = False
    diff: list[DiffPiece] = field(default_factory=list)
    changes: list[FieldChange] = field(default_factory=list)
    then: RecordState | None = None
    """The version's state at the timeline's as-of moment (``None`` without one, or for
    a tombstone)."""

    @property
    def live_then(self) -> bool:
        return self.then == "live"

    @property
    def tombstone(self) -> bool:
        return self.record is None

    @property
    def ended_at(self) -> datetime | None:
        return self.record.invalid_at if self.record else None


def word_diff(before: str, after: str) -> list[DiffPiece]:
    """``after`` against ``before`` word by word (whitespace kept), as same/add/remove pieces."""
    old, new = _WORDS.findall(before), _WORDS.findall(after)
    pieces: list[DiffPiece] = []
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for op, a1, a2, b1, b2 in matcher.get_opcodes():
        if op == "equal":
            pieces.append(DiffPiece("same", "".join(old[a1:a2])))
            continue
        if op in ("delete", "replace"):
            pieces.append(DiffPiece("remove", "".join(old[a1:a2])))
        if op in ("insert", "replace"):
            pieces.append(DiffPiece("add", "".join(new[b1:b2])))
    return _merge(pieces)


def _merge(pieces: list[DiffPiece]) -> list[DiffPiece]:
    merged: list[DiffPiece] = []
    for piece in pieces:
        if merged and merged[-1].op == piece.op:
            merged[-1] = DiffPiece(piece.op, merged[-1].text + piece.text)
        elif piece.text:
            merged.append(piece)
    return merged


def _show(value: Any) -> str:
    if value is None or value == ():
        return "—"
    if isinstance(value, tuple | list):
        return ", ".join(str(item) for item in value)
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M UTC")
    if isinstance(value, Mapping):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    if hasattr(value, "model_dump"):
        return json.dumps(value.model_dump(mode="json", exclude_none=True), ensure_ascii=False, sort_keys=True)
    return str(value)


_COMPARED: tuple[tuple[str, Callable[[MemoryRecord], Any]], ...] = (
    ("kind", lambda r: r.kind),
    ("key", lambda r: r.key),
    ("tags", lambda r: r.tags),
    ("target", lambda r: r.target),
    ("payload", lambda r: r.payload),
    ("expires", lambda r: r.expires_at),
)


def field_changes(before: MemoryRecord, after: MemoryRecord) -> list[FieldChange]:
    """Fields other than content that differ between two versions."""
    changes = []
    for name, read in _COMPARED:
        old, new = _show(read(before)), _show(read(after))
        if old != new:
            changes.append(FieldChange(name, old, new))
    return changes


def build_timeline(
    links: Sequence[ChainLink],
    current_id: str,
    visible: Callable[[MemoryRecord], bool],
    *,
    at: datetime | None = None,
) -> list[Version]:
    """The chain oldest first; each visible version diffed against the nearest visible
    version before it. Records ``visible`` refuses are shown as tombstones. With ``at``
    each version carries its state at that moment (which one was live then)."""
    versions: list[Version] = []
    previous: MemoryRecord | None = None
    for link in links:
        record = link.record if link.record is not None and visible(link.record) else None
        if record is None:
            versions.append(Version(id=link.id, record=None, current=link.id == current_id))
            continue
        diff = word_diff(previous.content, record.content) if previous else []
        changes = field_changes(previous, record) if previous else []
        then = record_state(record, at) if at is not None else None
        versions.append(Version(link.id, record, link.id == current_id, diff, changes, then))
        previous = record
    return versions
