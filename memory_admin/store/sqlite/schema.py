"""The SQLite memory file's schema: an ordered migration ladder (``PRAGMA user_version``)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

# --- schema ----------------------------------------------------------------------------

MIGRATIONS: list[str] = [
    # 1: records, normalised scopes, the FTS5 index and the triggers that keep it in sync
    """
    CREATE TABLE memory_scopes (
        scope_id   INTEGER PRIMARY KEY,
        scope      TEXT NOT NULL UNIQUE,
        tenant     TEXT NOT NULL,
        n_pairs    INTEGER NOT NULL,
        fts_tokens TEXT NOT NULL DEFAULT '',
        n_records  INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE memory_scope_pairs (
        scope_id INTEGER NOT NULL,
        key      TEXT NOT NULL,
        value    TEXT NOT NULL,
        PRIMARY KEY (scope_id, key)
    ) WITHOUT ROWID;
    CREATE INDEX memory_scope_pairs_kv ON memory_scope_pairs (key, value);
    CREATE INDEX memory_scopes_tenant ON memory_scopes (tenant);
    CREATE TABLE memory_records (
        rid            INTEGER PRIMARY KEY,
        id             BLOB NOT NULL UNIQUE,  -- 16 bytes for a canonical id, else its text
        scope_id       INTEGER NOT NULL,
        kind           TEXT NOT NULL,
        key            TEXT,
        content        TEXT NOT NULL,
        tags           TEXT,
        source          TEXT,
        author          TEXT,
        conversation_id TEXT,
        run_id          TEXT,
        created_at     INTEGER NOT NULL,
        updated_at     INTEGER,
        invalid_at     INTEGER,
        invalid_reason TEXT,
        superseded_by  TEXT,
        supersedes     TEXT,
        expires_at     INTEGER,
        target         TEXT,
        payload        TEXT,
        supports       TEXT
    );
    CREATE INDEX memory_records_scope_recent ON memory_records (scope_id, created_at);
    CREATE INDEX memory_records_recent ON memory_records (created_at, scope_id);
    CREATE INDEX memory_records_key ON memory_records (scope_id, kind, key) WHERE key IS NOT NULL;
    CREATE VIEW memory_fts_source AS
        SELECT r.rid AS rid, r.content AS content, coalesce(r.tags, '') AS tags,
               s.fts_tokens || ' k' || r.kind AS meta
        FROM memory_records r JOIN memory_scopes s ON s.scope_id = r.scope_id;
    CREATE VIRTUAL TABLE memory_fts USING fts5(
        content, tags, meta,
        content='memory_fts_source', content_rowid='rid',
        tokenize='unicode61 remove_diacritics 2',
        -- the index only finds candidates (ranking is BM25 in Python): no positions,
        -- no per-row sizes, a third smaller
        detail=column, columnsize=0
    );
    -- Inserts are indexed in bulk by the store (one INSERT … SELECT per batch is three
    -- times faster than a per-row trigger); deletes and content edits by triggers, so
    -- the index cannot drift from the rows it describes.
    CREATE TRIGGER memory_records_ad AFTER DELETE ON memory_records BEGIN
        INSERT INTO memory_fts (memory_fts, rowid, content, tags, meta)
            SELECT 'delete', old.rid, old.content, coalesce(old.tags, ''), s.fts_tokens || ' k' || old.kind
            FROM memory_scopes s WHERE s.scope_id = old.scope_id;
        UPDATE memory_scopes SET n_records = n_records - 1 WHERE scope_id = old.scope_id;
    END;
    CREATE TRIGGER memory_records_au AFTER UPDATE OF content, tags, kind, scope_id ON memory_records BEGIN
        INSERT INTO memory_fts (memory_fts, rowid, content, tags, meta)
            SELECT 'delete', old.rid, old.content, coalesce(old.tags, ''), s.fts_tokens || ' k' || old.kind
            FROM memory_scopes s WHERE s.scope_id = old.scope_id;
        INSERT INTO memory_fts (rowid, content, tags, meta)
            SELECT new.rid, new.content, coalesce(new.tags, ''), s.fts_tokens || ' k' || new.kind
            FROM memory_scopes s WHERE s.scope_id = new.scope_id;
        UPDATE memory_scopes SET n_records = n_records - 1 WHERE scope_id = old.scope_id;
        UPDATE memory_scopes SET n_records = n_records + 1 WHERE scope_id = new.scope_id;
    END;
    """,
]

MIGRATIONS.append(
    # 2: the event log, beside the records and erased with them (in a file of its own since 10)
    """
    CREATE TABLE memory_events (
        eid     INTEGER PRIMARY KEY,
        type    TEXT NOT NULL,
        at      INTEGER NOT NULL,
        tenant  TEXT NOT NULL,
        scope   TEXT NOT NULL,
        agent   TEXT,
        preview INTEGER NOT NULL DEFAULT 0,
        body    TEXT NOT NULL
    );
    CREATE INDEX memory_events_type_at ON memory_events (type, at);
    CREATE INDEX memory_events_tenant_at ON memory_events (tenant, at);
    """
)

MIGRATIONS.append(
    # 3: counts per scope and kind, and partial indexes over the rare states, so a
    # tenant's summary adds a few thousand counters instead of scanning its records
    """
    CREATE TABLE memory_scope_kinds (
        scope_id INTEGER NOT NULL,
        kind     TEXT NOT NULL,
        n        INTEGER NOT NULL,
        PRIMARY KEY (scope_id, kind)
    ) WITHOUT ROWID;
    INSERT INTO memory_scope_kinds (scope_id, kind, n)
        SELECT scope_id, kind, count(*) FROM memory_records GROUP BY scope_id, kind;
    CREATE INDEX memory_records_invalid ON memory_records (scope_id) WHERE invalid_at IS NOT NULL;
    CREATE INDEX memory_records_expiring ON memory_records (scope_id, expires_at) WHERE expires_at IS NOT NULL;
    DROP TRIGGER memory_records_ad;
    CREATE TRIGGER memory_records_ad AFTER DELETE ON memory_records BEGIN
        INSERT INTO memory_fts (memory_fts, rowid, content, tags, meta)
            SELECT 'delete', old.rid, old.content, coalesce(old.tags, ''), s.fts_tokens || ' k' || old.kind
            FROM memory_scopes s WHERE s.scope_id = old.scope_id;
        UPDATE memory_scopes SET n_records = n_records - 1 WHERE scope_id = old.scope_id;
        UPDATE memory_scope_kinds SET n = n - 1 WHERE scope_id = old.scope_id AND kind = old.kind;
    END;
    DROP TRIGGER memory_records_au;
    CREATE TRIGGER memory_records_au AFTER UPDATE OF content, tags, kind, scope_id ON memory_records BEGIN
        INSERT INTO memory_fts (memory_fts, rowid, content, tags, meta)
            SELECT 'delete', old.rid, old.content, coalesce(old.tags, ''), s.fts_tokens || ' k' || old.kind
            FROM memory_scopes s WHERE s.scope_id = old.scope_id;
        INSERT INTO memory_fts (rowid, content, tags, meta)
            SELECT new.rid, new.content, coalesce(new.tags, ''), s.fts_tokens || ' k' || new.kind
            FROM memory_scopes s WHERE s.scope_id = new.scope_id;
        UPDATE memory_scopes SET n_records = n_records - 1 WHERE scope_id = old.scope_id;
        UPDATE memory_scopes SET n_records = n_records + 1 WHERE scope_id = new.scope_id;
        UPDATE memory_scope_kinds SET n = n - 1 WHERE scope_id = old.scope_id AND kind = old.kind;
        INSERT INTO memory_scope_kinds (scope_id, kind, n) VALUES (new.scope_id, new.kind, 1)
            ON CONFLICT (scope_id, kind) DO UPDATE SET n = n + 1;
    END;
    """
)

MIGRATIONS.append(
    # 4: when a fact was stated, for memories imported from past conversations (NULL: at
    # creation, so a record written now costs nothing)
    """
    ALTER TABLE memory_records ADD COLUMN observed_at INTEGER;
    """
)

MIGRATIONS.append(
    # 5: named counters beside the event log (how many events it is missing)
    """
    CREATE TABLE memory_counters (
        name TEXT PRIMARY KEY,
        n    INTEGER NOT NULL
    ) WITHOUT ROWID;
    """
)

MIGRATIONS.append(
    # 6: the index holds Python's match terms (stems, and the day a record was stated):
    # ``memory_terms`` is registered on every connection (.terms); the hidden meta
    # column holds the same tokens as before; the terms' identity is recorded so a
    # stemmer change rebuilds
    """
    DROP TRIGGER memory_records_ad;
    DROP TRIGGER memory_records_au;
    DROP TABLE memory_fts;
    DROP VIEW memory_fts_source;
    CREATE VIEW memory_fts_source AS
        SELECT r.rid AS rid, memory_terms(r.content, r.tags, coalesce(r.observed_at, r.created_at)) AS terms,
               s.fts_tokens || ' k' || r.kind AS meta
        FROM memory_records r JOIN memory_scopes s ON s.scope_id = r.scope_id;
    CREATE VIRTUAL TABLE memory_fts USING fts5(
        terms, meta,
        content='memory_fts_source', content_rowid='rid',
        -- terms are already folded and hold only letters and digits: 'ascii' splits them
        -- exactly at the spaces (every non-ASCII character is a token character), where
        -- unicode61 would fold a few again (µ to μ) by its own Unicode tables
        tokenize='ascii',
        detail=column, columnsize=0
    );
    INSERT INTO memory_fts (memory_fts) VALUES ('rebuild');
    CREATE TABLE memory_fts_terms (identity TEXT NOT NULL);
    INSERT INTO memory_fts_terms (identity) VALUES (memory_terms_identity());
    CREATE TRIGGER memory_records_ad AFTER DELETE ON memory_records BEGIN
        INSERT INTO memory_fts (memory_fts, rowid, terms, meta)
            SELECT 'delete', old.rid, memory_terms(old.content, old.tags, coalesce(old.observed_at, old.created_at)),
                   s.fts_tokens || ' k' || old.kind
            FROM memory_scopes s WHERE s.scope_id = old.scope_id;
        UPDATE memory_scopes SET n_records = n_records - 1 WHERE scope_id = old.scope_id;
        UPDATE memory_scope_kinds SET n = n - 1 WHERE scope_id = old.scope_id AND kind = old.kind;
    END;
    CREATE TRIGGER memory_records_au
    AFTER UPDATE OF content, tags, kind, scope_id, observed_at, created_at ON memory_records BEGIN
        INSERT INTO memory_fts (memory_fts, rowid, terms, meta)
            SELECT 'delete', old.rid, memory_terms(old.content, old.tags, coalesce(old.observed_at, old.created_at)),
                   s.fts_tokens || ' k' || old.kind
            FROM memory_scopes s WHERE s.scope_id = old.scope_id;
        INSERT INTO memory_fts (rowid, terms, meta)
            SELECT new.rid, memory_terms(new.content, new.tags, coalesce(new.observed_at, new.created_at)),
                   s.fts_tokens || ' k' || new.kind
            FROM memory_scopes s WHERE s.scope_id = new.scope_id;
        UPDATE memory_scopes SET n_records = n_records - 1 WHERE scope_id = old.scope_id;
        UPDATE memory_scopes SET n_records = n_records + 1 WHERE scope_id = new.scope_id;
        UPDATE memory_scope_kinds SET n = n - 1 WHERE scope_id = old.scope_id AND kind = old.kind;
        INSERT INTO memory_scope_kinds (scope_id, kind, n) VALUES (new.scope_id, new.kind, 1)
            ON CONFLICT (scope_id, kind) DO UPDATE SET n = n + 1;
    END;
    """
)

MIGRATIONS.append(
    # 7: vectors beside their records (one int8 blob each, gone with the record) and the
    # store's settings (which model made the vectors)
    """
    -- keyed like the records (appends fill whole pages); the scope id is kept for the
    -- stamp below, a scope's vectors are read through the records' scope index
    CREATE TABLE memory_vectors (
        rid      INTEGER PRIMARY KEY,
        scope_id INTEGER NOT NULL,
        vec      BLOB NOT NULL
    );
    CREATE TABLE memory_settings (
        name  TEXT PRIMARY KEY,
        value TEXT NOT NULL
    ) WITHOUT ROWID;
    CREATE TRIGGER memory_records_vectors_ad AFTER DELETE ON memory_records BEGIN
        DELETE FROM memory_vectors WHERE rid = old.rid;
    END;
    CREATE TRIGGER memory_records_vectors_au AFTER UPDATE OF scope_id ON memory_records BEGIN
        UPDATE memory_vectors SET scope_id = new.scope_id WHERE rid = old.rid;
    END;
    -- every change to a scope's vectors stamps the scope with a store-wide, never
    -- repeating number, so a process's copy of those vectors knows when it is stale
    ALTER TABLE memory_scopes ADD COLUMN vec_version INTEGER NOT NULL DEFAULT 0;
    INSERT INTO memory_counters (name, n) VALUES ('vector_changes', 0) ON CONFLICT (name) DO NOTHING;
    CREATE TRIGGER memory_vectors_ai AFTER INSERT ON memory_vectors BEGIN
        UPDATE memory_counters SET n = n + 1 WHERE name = 'vector_changes';
        UPDATE memory_scopes SET vec_version = (SELECT n FROM memory_counters WHERE name = 'vector_changes')
            WHERE scope_id = new.scope_id;
    END;
    CREATE TRIGGER memory_vectors_au AFTER UPDATE ON memory_vectors BEGIN
        UPDATE memory_counters SET n = n + 1 WHERE name = 'vector_changes';
        UPDATE memory_scopes SET vec_version = (SELECT n FROM memory_counters WHERE name = 'vector_changes')
            WHERE scope_id IN (old.scope_id, new.scope_id);
    END;
    CREATE TRIGGER memory_vectors_ad AFTER DELETE ON memory_vectors BEGIN
        UPDATE memory_counters SET n = n + 1 WHERE name = 'vector_changes';
        UPDATE memory_scopes SET vec_version = (SELECT n FROM memory_counters WHERE name = 'vector_changes')
            WHERE scope_id = old.scope_id;
    END;
    """
)

MIGRATIONS.append(
    # 8: a scope's profile records newest first, walked by recall's profile tier on every
    # turn 1 (a tenth of the records: the scope index would visit ten rows for each)
    """
    CREATE INDEX memory_records_profile_recent ON memory_records (scope_id, created_at) WHERE kind = 'profile';
    """
)

MIGRATIONS.append(
    # 9: when each tenant last forgot something (a delete, an erasure): an event batch
    # committed later withholds the tenant's events from before it, which may have read
    # what was forgotten (store/event_log.py)
    """
    CREATE TABLE memory_forgetting (
        tenant TEXT PRIMARY KEY,
        at     INTEGER NOT NULL
    ) WITHOUT ROWID;
    """
)

MIGRATIONS.append(
    # 10: the event log moves to a file of its own beside the memory file (EVENT_FILE_SCHEMA;
    # the store moves the rows when it opens the file): a batch of events no longer commits
    # to the memory file, so its readers keep their page caches. A forgetting commits to
    # both files, and SQLite commits attached WAL files one after the other: what a
    # forgetting owes the log is noted here, in the same unit, and cleared once both have
    # committed; a store that opens the file settles what a crash left owed
    """
    CREATE TABLE memory_events_owed (
        id         INTEGER PRIMARY KEY,
        tenant     TEXT NOT NULL,
        record_ids TEXT NOT NULL,
        scope      TEXT
    );
    """
)

MIGRATIONS.append(
    # 11: learnings. Each targeted record's promotion state and every transition it made
    # (keyed by the record's rid, so they go with the record: a trigger, and secure_delete
    # zeroes their pages); the compositions hosts registered and which scope ran which
    # version since when; the gardening pass's proposals. Targeted records written before
    # this step become candidates
    """
    CREATE TABLE memory_promotions (
        rid       INTEGER PRIMARY KEY,
        scope_id  INTEGER NOT NULL,
        state     TEXT NOT NULL,
        tier      TEXT,
        primitive TEXT NOT NULL,
        revision  INTEGER NOT NULL,
        at        INTEGER NOT NULL
    );
    CREATE INDEX memory_promotions_scope_state ON memory_promotions (scope_id, state, at);
    CREATE INDEX memory_promotions_promoted ON memory_promotions (scope_id) WHERE state = 'promoted';
    CREATE TABLE memory_promotion_history (
        rid      INTEGER NOT NULL,
        revision INTEGER NOT NULL,
        scope_id INTEGER NOT NULL,
        at       INTEGER NOT NULL,
        state    TEXT NOT NULL,
        body     TEXT NOT NULL,
        PRIMARY KEY (rid, revision)
    ) WITHOUT ROWID;
    CREATE INDEX memory_promotion_history_scope_at ON memory_promotion_history (scope_id, at);
    CREATE TABLE memory_proposals (
        pid       INTEGER PRIMARY KEY,
        rid       INTEGER NOT NULL,
        other_rid INTEGER,
        scope_id  INTEGER NOT NULL,
        kind      TEXT NOT NULL,
        status    TEXT NOT NULL,
        at        INTEGER NOT NULL,
        body      TEXT NOT NULL,
        UNIQUE (rid, kind)
    );
    CREATE INDEX memory_proposals_scope ON memory_proposals (scope_id, status, at);
    CREATE INDEX memory_proposals_other ON memory_proposals (other_rid) WHERE other_rid IS NOT NULL;
    CREATE TRIGGER memory_records_learnings_ad AFTER DELETE ON memory_records BEGIN
        DELETE FROM memory_promotions WHERE rid = old.rid;
        DELETE FROM memory_promotion_history WHERE rid = old.rid;
        DELETE FROM memory_proposals WHERE rid = old.rid OR other_rid = old.rid;
    END;
    CREATE TABLE memory_compositions (
        version TEXT PRIMARY KEY,
        name    TEXT NOT NULL,
        body    TEXT NOT NULL,
        at      INTEGER NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE memory_composition_uses (
        id      INTEGER PRIMARY KEY,
        tenant  TEXT NOT NULL,
        scope   TEXT NOT NULL,
        version TEXT NOT NULL,
        at      INTEGER NOT NULL
    );
    CREATE INDEX memory_composition_uses_scope ON memory_composition_uses (scope, at);
    CREATE INDEX memory_composition_uses_tenant ON memory_composition_uses (tenant);
    INSERT INTO memory_promotions (rid, scope_id, state, tier, primitive, revision, at)
        SELECT rid, scope_id, 'candidate', NULL, json_extract(target, '$.primitive'), 0, created_at
        FROM memory_records WHERE target IS NOT NULL AND json_valid(target);
    INSERT INTO memory_promotion_history (rid, revision, scope_id, at, state, body)
        SELECT rid, 0, scope_id, at, 'candidate', '{"by":"system","actor":"store"}' FROM memory_promotions;
    """
)

MIGRATIONS.append(
    # 12: a long record's vector may carry its windows' after it (memory_admin.embed.quantize.to_blobs):
    # a blob of 388 bytes times one plus its windows. A version that reads every vector as
    # exactly one refuses the store at its schema version rather than failing each search.
    """
    INSERT INTO memory_settings (name, value) VALUES ('vector_layout', 'windows') ON CONFLICT (name) DO NOTHING;
    """
)

SCHEMA_VERSION = len(MIGRATIONS)

EVENT_TABLE = """
    CREATE TABLE IF NOT EXISTS {schema}memory_events (
        eid     INTEGER PRIMARY KEY,
        type    TEXT NOT NULL,
        at      INTEGER NOT NULL,
        tenant  TEXT NOT NULL,
        scope   TEXT NOT NULL,
        agent   TEXT,
        preview INTEGER NOT NULL DEFAULT 0,
        body    TEXT NOT NULL
    );
    CREATE INDEX IF NOT EXISTS {schema}memory_events_type_at ON memory_events (type, at);
    CREATE INDEX IF NOT EXISTS {schema}memory_events_tenant_at ON memory_events (tenant, at);
"""
"""The event log's table (as migration 2 made it), for a schema prefix: ``events.`` in the
event file, empty in a backup, which keeps the log inside its one file. Written out
again on purpose: a migration is history and never changes, this is the table today (a
change to it needs the event file's own step, and the move of older logs to match)."""

EVENT_FILE_SCHEMA = EVENT_TABLE.format(schema="events.")


def statements(script: str) -> Iterator[str]:
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            if buffer.strip():
                yield buffer.strip()
            buffer = ""
    if buffer.strip():
        yield buffer.strip()


__all__ = ["EVENT_FILE_SCHEMA", "EVENT_TABLE", "MIGRATIONS", "SCHEMA_VERSION", "statements"]
