"""The SQLite event log's own file: batches of events leave the memory file untouched,
an older file's log moves out when a store opens it, and a forgetting that a crash cut
between the two files' commits is finished by the next store to open them."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest

from memory_admin.store import SqliteMemoryStore
from memory_admin.store.sqlite import SCHEMA_VERSION, events_path, terms
from memory_admin.store.sqlite.schema import EVENT_TABLE, MIGRATIONS, statements

ACME = {"tenant": "acme", "user": "dana"}
PROV = {"source": "test"}


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "memory.sqlite3"


@pytest.fixture
def store(path: Path) -> Iterator[SqliteMemoryStore]:
    opened = SqliteMemoryStore(path)
    yield opened
    opened.close()


def write(store: SqliteMemoryStore, content: str, scope: dict[str, str] = ACME) -> str:
    return store.write([{"scope": scope, "kind": "fact", "content": content, "provenance": PROV}])[0].id


def tables(path: Path) -> set[str]:
    with closing(sqlite3.connect(path)) as conn:
        return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def logged(path: Path) -> list[tuple[int, str]]:
    """The event file's rows: id and body."""
    with closing(sqlite3.connect(events_path(path))) as conn:
        return [(int(eid), body) for eid, body in conn.execute("SELECT eid, body FROM memory_events ORDER BY eid")]


def test_a_batch_of_events_commits_to_the_event_file_and_never_to_the_memory_file(
    path: Path, store: SqliteMemoryStore
) -> None:
    """A reader of the memory file keeps its page cache across the log's commits: SQLite
    drops a connection's cache when ``data_version`` moves, as any commit to the file
    moves it — a memory write does, a batch of search events must not."""
    write(store, "Dana takes her coffee black")
    reader = sqlite3.connect(path)
    before = reader.execute("PRAGMA main.data_version").fetchone()[0]
    for _ in range(20):
        assert store.search({"scope": ACME, "query": "coffee"})
    store.flush_events()
    assert reader.execute("PRAGMA main.data_version").fetchone()[0] == before
    assert len(logged(path)) == 21  # the write's event and twenty searches'
    assert "memory_events" not in tables(path)

    write(store, "Dana cycles to work")  # the test can fail: a commit to the memory file moves it
    assert reader.execute("PRAGMA main.data_version").fetchone()[0] != before
    reader.close()


def _file_at_version_9(path: Path) -> None:
    """A memory file as the release before the event file made it: the log inside it."""
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        terms.register(conn)
        for version, script in enumerate(MIGRATIONS[:9], start=1):
            for statement in statements(script):
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {version}")


def test_an_older_file_keeps_its_log_which_moves_to_the_event_file_on_open(path: Path, tmp_path: Path) -> None:
    # a log written by today's store, put back inside a version-9 file with the same ids
    source = tmp_path / "source.sqlite3"
    with SqliteMemoryStore(source) as first:
        write(first, "Dana takes her coffee black")
        first.search({"scope": ACME, "query": "coffee"})
        first.flush_events()
        expected = [(e.id, e.event) for e in first.query_events({"include_previews": True})]
    rows = logged(source)
    _file_at_version_9(path)
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute(f"ATTACH DATABASE '{events_path(source)}' AS old")
        conn.execute("INSERT INTO main.memory_events SELECT * FROM old.memory_events")
    assert len(rows) == 2 and not events_path(path).exists()

    with SqliteMemoryStore(path) as store:
        assert store.schema_version() == SCHEMA_VERSION
        assert [(e.id, e.event) for e in store.query_events({"include_previews": True})] == expected
        assert logged(path) == rows, "every event moved, with its id"
        assert "memory_events" not in tables(path)
        write(store, "Dana cycles to work")  # and the log goes on after them
        store.flush_events()
        assert len(logged(path)) == 3 and logged(path)[-1][0] > rows[-1][0]


def test_a_move_cut_short_is_finished_without_doubling_an_event(path: Path) -> None:
    """A crash after the rows were copied to the event file and before the memory file
    dropped its table: the next open drops it, and each event stays once."""
    with SqliteMemoryStore(path) as store:
        write(store, "Dana takes her coffee black")
        store.flush_events()
    rows = logged(path)
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        for statement in statements(EVENT_TABLE.format(schema="main.")):
            conn.execute(statement)
        conn.execute(f"ATTACH DATABASE '{events_path(path)}' AS events")
        conn.execute("INSERT INTO main.memory_events SELECT * FROM events.memory_events")
    with SqliteMemoryStore(path) as store:
        assert len(store.query_events({})) == 1
    assert logged(path) == rows and "memory_events" not in tables(path)


def test_a_forgetting_leaves_nothing_owed_once_both_files_commit(path: Path, store: SqliteMemoryStore) -> None:
    victim = write(store, "Dana's locker code is 4471")
    store.search({"scope": ACME, "query": "locker code"})
    assert store.delete(victim)
    assert store.erase({"tenant": "acme", "user": "dana"}).records == 0
    with closing(sqlite3.connect(path)) as conn:
        assert conn.execute("SELECT count(*) FROM memory_events_owed").fetchone()[0] == 0


@pytest.mark.parametrize("how", ["delete", "erase"])
def test_a_forgetting_a_crash_cut_between_the_files_is_finished_on_open(path: Path, how: str) -> None:
    """The memory file commits first: a crash before the event file commits leaves the
    records forgotten, the events as they were, and the note of what the log is owed.
    That is the state built here; the next store to open the file finishes the job."""
    with SqliteMemoryStore(path) as store:
        victim = write(store, "Dana's locker code is 4471")
        write(store, "Dana takes her coffee black")
        other = {"tenant": "acme", "user": "eli"}
        write(store, "Eli's locker is by the door", scope=other)
        store.search({"scope": {"tenant": "acme"}, "query": "locker code 4471"})  # finds the victim, tenant-wide
        store.search({"scope": other, "query": "locker door"})
        store.flush_events()
        before = store.query_events({"include_previews": True})
    assert any("4471" in body for _, body in logged(path))
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute(
            "INSERT INTO memory_events_owed (tenant, record_ids, scope) VALUES (?, ?, ?)",
            ["acme", json.dumps([victim]), json.dumps(ACME) if how == "erase" else None],
        )

    with SqliteMemoryStore(path) as store:
        after = store.query_events({"include_previews": True})
    assert not any("4471" in body for _, body in logged(path)), "the search that found it lost its text"
    redacted = [e for e in after if getattr(e.event, "redacted", False)]
    found_it = [e.id for e in before if e.event.type != "agent.memory.write" and victim in e.event.record_ids]
    assert found_it and [e.id for e in redacted] == found_it
    bystanders = [e for e in before if e.event.scope == other and victim not in getattr(e.event, "record_ids", [])]
    assert bystanders and all(e in after for e in bystanders), "events that never found it are left as they were"
    erased_scope = [e for e in after if e.event.scope == ACME]
    assert (erased_scope == []) == (how == "erase"), "an erasure's events under its scope go too"
    with closing(sqlite3.connect(path)) as conn:
        assert conn.execute("SELECT count(*) FROM memory_events_owed").fetchone()[0] == 0
