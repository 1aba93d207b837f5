"""Records as JSON Lines or CSV, one chunk at a time (no Django here).

Both take any iterable of records — the store's paged :meth:`iter_records` — and yield
text as they go, so an export of a million records never holds more than a chunk.
CSV cells that a spreadsheet would run as a formula (starting with ``=``, ``+``,
``-``, ``@``, a tab or a carriage return, or a fullwidth or small form of one) are
prefixed with an apostrophe.
"""

from __future__ import annotations

import csv
import io
import json
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from memory_admin.records import MemoryRecord, Provenance
from memory_admin.reports.learnings import Learned
from memory_admin.scope import format_scope

CHUNK_RECORDS = 200
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")

CSV_COLUMNS: tuple[tuple[str, Callable[[MemoryRecord], Any]], ...] = (
    ("id", lambda r: r.id),
    ("scope", lambda r: format_scope(r.scope)),
    ("kind", lambda r: r.kind),
    ("key", lambda r: r.key),
    ("content", lambda r: r.content),
    ("tags", lambda r: ",".join(r.tags)),
    ("source", lambda r: r.provenance.source),
    ("author", lambda r: r.provenance.author),
    ("conversation_id", lambda r: r.provenance.conversation_id),
    ("run_id", lambda r: r.provenance.run_id),
    ("created_at", lambda r: r.created_at.isoformat()),
    ("updated_at", lambda r: r.updated_at.isoformat()),
    ("invalid_at", lambda r: r.invalid_at.isoformat() if r.invalid_at else None),
    ("invalid_reason", lambda r: r.invalid_reason),
    ("supersedes", lambda r: r.supersedes),
    ("superseded_by", lambda r: r.superseded_by),
    ("expires_at", lambda r: r.expires_at.isoformat() if r.expires_at else None),
    ("target", lambda r: json.dumps(r.target.model_dump(mode="json"), sort_keys=True) if r.target else None),
    ("payload", lambda r: json.dumps(r.payload, ensure_ascii=False, sort_keys=True) if r.payload is not None else None),
    ("observed_at", lambda r: r.observed_at.isoformat()),
    (
        "supports",
        lambda r: (
            json.dumps([p.model_dump(mode="json", exclude_none=True) for p in r.supports], ensure_ascii=False)
            if r.supports
            else None
        ),
    ),
)


def neutralise(cell: str) -> str:
    """``cell`` made inert for spreadsheets: a leading formula character gets an
    apostrophe — in any of its compatibility forms too (fullwidth ``＝``, small ``﹢``),
    which spreadsheets read as the character they stand for."""
    return "'" + cell if unicodedata.normalize("NFKC", cell[:1]).startswith(FORMULA_STARTS) else cell


def csv_cells(values: Iterable[object]) -> list[str]:
    """A CSV row's cells: ``None`` empty, every cell neutralised."""
    return [neutralise("" if value is None else str(value)) for value in values]


def csv_row(record: MemoryRecord) -> list[str]:
    return csv_cells(read(record) for _, read in CSV_COLUMNS)


def csv_chunks(records: Iterable[MemoryRecord]) -> Iterator[str]:
    """A header line, then the records as CSV rows, about :data:`CHUNK_RECORDS` per chunk."""
    return csv_table([name for name, _ in CSV_COLUMNS], (csv_row(record) for record in records))


def csv_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> Iterator[str]:
    """``header``, then ``rows`` (made with :func:`csv_cells`), as CSV text, about
    :data:`CHUNK_RECORDS` rows per chunk."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(header)
    pending = 0
    for row in rows:
        writer.writerow(row)
        pending += 1
        if pending == CHUNK_RECORDS:
            yield _drain(buffer)
            pending = 0
    yield _drain(buffer)


def jsonl_chunks(records: Iterable[MemoryRecord]) -> Iterator[str]:
    """One JSON object per record and line (every field, as the store returns it)."""
    return json_lines(record.model_dump_json() for record in records)


def json_lines(lines: Iterable[str]) -> Iterator[str]:
    """Each of ``lines`` (one JSON text each) on a line of its own, in chunks."""
    chunk: list[str] = []
    for line in lines:
        chunk.append(line + "\n")
        if len(chunk) == CHUNK_RECORDS:
            yield "".join(chunk)
            chunk = []
    if chunk:
        yield "".join(chunk)


# --- what agents learned: promotions and demotions -------------------------------------------


def _provenance(value: Provenance) -> str:
    parts = [("source", value.source), ("author", value.author), ("conversation", value.conversation_id)]
    parts.append(("run", value.run_id))
    return ", ".join(f"{name} {text}" for name, text in parts if text)


LEARNED_COLUMNS: tuple[tuple[str, Callable[[Learned], Any]], ...] = (
    ("at", lambda row: row.transition.at.isoformat()),
    ("change", lambda row: row.transition.state),
    ("cause", lambda row: row.transition.cause),
    ("record_id", lambda row: row.transition.record_id),
    ("scope", lambda row: format_scope(row.record.scope) if row.record else None),
    ("section", lambda row: row.section),
    ("content", lambda row: row.record.content if row.record else None),
    ("tier", lambda row: row.transition.tier),
    ("by", lambda row: row.transition.by),
    ("actor", lambda row: row.transition.actor),
    ("reason", lambda row: row.transition.reason),
    ("proposed_by", lambda row: _provenance(row.record.provenance) if row.record else None),
    ("supports", lambda row: len(row.record.supports) if row.record else None),
)
"""One row per promotion or demotion; a record outside the reader's grants (or gone)
leaves its content, scope and provenance empty."""


def learned_csv(rows: Iterable[Learned]) -> Iterator[str]:
    return csv_table(
        [name for name, _ in LEARNED_COLUMNS], (csv_cells(read(r) for _, read in LEARNED_COLUMNS) for r in rows)
    )


def learned_object(row: Learned) -> dict[str, Any]:
    """One promotion or demotion as a JSON object: the transition, and the record when shown."""
    return {
        "transition": row.transition.model_dump(mode="json"),
        "section": row.section,
        "record": row.record.model_dump(mode="json") if row.record else None,
    }


def learned_jsonl(rows: Iterable[Learned]) -> Iterator[str]:
    return json_lines(json.dumps(learned_object(row), ensure_ascii=False) for row in rows)


LEARNED_FORMATS: dict[str, tuple[str, Callable[[Iterable[Learned]], Iterator[str]]]] = {
    "jsonl": ("application/x-ndjson; charset=utf-8", learned_jsonl),
    "csv": ("text/csv; charset=utf-8", learned_csv),
}


def _drain(buffer: io.StringIO) -> str:
    text = buffer.getvalue()
    buffer.seek(0)
    buffer.truncate()
    return text
