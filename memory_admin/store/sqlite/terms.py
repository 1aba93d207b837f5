"""The match terms of the SQLite full-text index, computed by Python.

FTS5's own tokenizers cannot stem the way :func:`~memory_admin.tokenize.tokenize` does,
and the index must hold exactly the terms the other backends match on. So every
connection that reads the index's content or changes the records registers
``memory_terms(content, tags, stated_us)``: a record's
:func:`~memory_admin.store.ranking.record_text` terms, space-joined, which the index's
``ascii`` tokenizer then splits exactly at the spaces. The view the external-content
index reads and the triggers that delete from it call it, so an insert, a delete and a
rebuild all see the same terms.

The terms depend on the stemmer, so the file records
:data:`~memory_admin.tokenize.TERMS_IDENTITY`; a store opening a file indexed under
another identity rebuilds the index before anything else touches it (an external-content
index deleted with other terms than it was built with would silently keep stale ones).
"""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime

from memory_admin.store.ranking import record_tokens
from memory_admin.tokenize import TERMS_IDENTITY, tokenize

TERMS_TABLE = "memory_fts_terms"
"""One row: the identity of the terms the index holds."""


def _stated(value: object) -> datetime:
    if not isinstance(value, int):
        raise TypeError(f"timestamp column holds {type(value).__name__}, expected integer microseconds")
    return datetime.fromtimestamp(value // 1_000_000, UTC)


def memory_terms(content: object, tags: object, stated_us: object) -> str:
    """A record's terms as the index takes them, from its stored columns."""
    listed: list[str]
    try:
        loaded = json.loads(tags) if isinstance(tags, str) else []
        listed = [str(tag) for tag in loaded] if isinstance(loaded, list) else [str(tags)]
    except ValueError:
        # a corrupt row stays indexable (its read reports it); its raw text is its tags
        listed = [str(tags)]
    try:
        stated = _stated(stated_us)
    except (TypeError, ValueError, OverflowError, OSError):
        # a corrupt time: the row is indexed without its date (and reported when read)
        return " ".join(tokenize(f"{content} {' '.join(listed)}"))
    return " ".join(record_tokens(str(content or ""), listed, stated))


def register(conn: sqlite3.Connection) -> None:
    """Make the index's functions available on ``conn`` (every connection that writes
    records, or checks or rebuilds the index, needs them)."""
    conn.create_function("memory_terms", 3, memory_terms, deterministic=True)
    conn.create_function("memory_terms_identity", 0, lambda: TERMS_IDENTITY, deterministic=True)


def indexed_identity(conn: sqlite3.Connection) -> str | None:
    """The identity of the terms the file's index holds (``None`` before it recorded one)."""
    present = conn.execute("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?", [TERMS_TABLE]).fetchone()
    if present is None:
        return None
    row = conn.execute(f"SELECT identity FROM {TERMS_TABLE}").fetchone()
    return None if row is None else str(row[0])


def rebuild_if_stale(conn: sqlite3.Connection) -> bool:
    """Rebuild the index when it holds another stemmer's terms; ``True`` if it did.
    Runs in its own write transaction."""
    if indexed_identity(conn) in (None, TERMS_IDENTITY):
        return False
    conn.execute("BEGIN IMMEDIATE")
    try:
        if indexed_identity(conn) == TERMS_IDENTITY:  # another process rebuilt it first
            conn.execute("ROLLBACK")
            return False
        conn.execute("INSERT INTO memory_fts (memory_fts) VALUES ('rebuild')")
        conn.execute(f"UPDATE {TERMS_TABLE} SET identity = ?", [TERMS_IDENTITY])
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.rollback()
        raise
    return True


__all__ = ["TERMS_TABLE", "indexed_identity", "memory_terms", "rebuild_if_stale", "register"]
