"""Backing up a SQLite memory file under live writers, checking a copy, restoring it."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_admin.backup import BackupError, FileInUseError, backup_sqlite, check_sqlite, restore_sqlite
from memory_admin.errors import SchemaVersionError
from memory_admin.store import SqliteMemoryStore
from memory_admin.store.sqlite import events_path, terms
from memory_admin.store.sqlite.schema import MIGRATIONS, SCHEMA_VERSION, statements
from tests.support.child import run_python, tail


def write_records(path: Path, count: int, user: str = "dana") -> None:
    store = SqliteMemoryStore(path)
    try:
        store.write(
            [
                {
                    "scope": {"tenant": "acme", "user": user},
                    "kind": "fact",
                    "content": f"{user} fact {n}: prefers window seats on flight {n}",
                    "provenance": {"source": "test"},
                }
                for n in range(count)
            ]
        )
    finally:
        store.close()


@pytest.fixture
def memory_file(tmp_path: Path) -> Path:
    path = tmp_path / "memory.sqlite3"
    write_records(path, 200)
    return path


def contents(path: Path) -> set[str]:
    with contextlib.closing(sqlite3.connect(path)) as conn:  # closed: an open file is never restored over
        return {row[0] for row in conn.execute("SELECT content FROM memory_records")}


def test_a_backup_is_a_checked_private_self_contained_copy(memory_file: Path, tmp_path: Path) -> None:
    seen: list[tuple[int, int]] = []
    report = backup_sqlite(
        memory_file, tmp_path / "backup.sqlite3", progress=lambda *p: seen.append(p), pages_per_step=4
    )
    assert report.check.records == 200 and report.check.schema_version == SCHEMA_VERSION
    assert contents(report.target) == contents(memory_file)
    assert stat.S_IMODE(report.target.stat().st_mode) == 0o600  # memory content is personal data
    assert not Path(f"{report.target}-wal").exists()
    assert [name for name in os.listdir(tmp_path) if "partial" in name] == []
    assert len(seen) > 1 and seen[-1][0] == seen[-1][1] == report.pages  # the bar moves, and ends full
    assert check_sqlite(report.target).counts == report.check.counts


def test_a_backup_never_overwrites_a_file(memory_file: Path, tmp_path: Path) -> None:
    (tmp_path / "taken.sqlite3").write_text("keep me")
    with pytest.raises(BackupError, match="already exists"):
        backup_sqlite(memory_file, tmp_path / "taken.sqlite3")
    assert (tmp_path / "taken.sqlite3").read_text() == "keep me"


def test_only_memory_files_are_backed_up(tmp_path: Path) -> None:
    other = tmp_path / "other.sqlite3"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE t (x)")
    with pytest.raises(BackupError, match="not a memory_admin SQLite memory file"):
        backup_sqlite(other, tmp_path / "copy.sqlite3")
    assert not (tmp_path / "copy.sqlite3").exists()


def test_the_check_finds_an_index_that_lost_rows(memory_file: Path, tmp_path: Path) -> None:
    copy = backup_sqlite(memory_file, tmp_path / "backup.sqlite3").target
    with sqlite3.connect(copy) as conn:
        conn.execute("DELETE FROM memory_fts_data WHERE id > 10")
    with pytest.raises(BackupError, match="full-text index"):
        check_sqlite(copy)


def test_the_check_finds_damaged_pages(memory_file: Path, tmp_path: Path) -> None:
    copy = backup_sqlite(memory_file, tmp_path / "backup.sqlite3").target
    data = bytearray(copy.read_bytes())
    data[4096 * 2 : 4096 * 6] = b"\xff" * (4096 * 4)
    copy.write_bytes(bytes(data))
    with pytest.raises(BackupError):
        check_sqlite(copy)
    with pytest.raises(BackupError):
        restore_sqlite(copy, tmp_path / "restored.sqlite3")


def test_restore_writes_the_backup_into_a_new_file(memory_file: Path, tmp_path: Path) -> None:
    copy = backup_sqlite(memory_file, tmp_path / "backup.sqlite3").target
    report = restore_sqlite(copy, tmp_path / "restored.sqlite3")
    assert report.check.records == 200 and not report.replaced and report.migrates_from is None
    store = SqliteMemoryStore(report.target)
    try:
        hits = store.search({"scope": {"tenant": "acme"}, "query": "flight 17"})
        assert any(hit.record.content.endswith("flight 17") for hit in hits)
    finally:
        store.close()


def test_restore_replaces_records_only_when_asked(memory_file: Path, tmp_path: Path) -> None:
    copy = backup_sqlite(memory_file, tmp_path / "backup.sqlite3").target
    write_records(memory_file, 5, user="late")
    with pytest.raises(BackupError, match="replace"):
        restore_sqlite(copy, memory_file)
    assert len(contents(memory_file)) == 205
    report = restore_sqlite(copy, memory_file, replace=True)
    assert report.replaced and contents(memory_file) == contents(copy)


def test_the_event_log_travels_inside_the_backup_and_replaces_the_restored_stores(
    memory_file: Path, tmp_path: Path
) -> None:
    with SqliteMemoryStore(memory_file) as store:
        store.search({"scope": {"tenant": "acme"}, "query": "window seats"})
        store.flush_events()
        logged = [(e.id, e.event) for e in store.query_events({})]
    copy = backup_sqlite(memory_file, tmp_path / "backup.sqlite3").target
    assert check_sqlite(copy).events == len(logged) == 2  # the write's event and the search's
    assert not events_path(copy).exists(), "one self-contained file"
    with SqliteMemoryStore(memory_file) as store:  # the log goes on after the backup
        store.search({"scope": {"tenant": "acme"}, "query": "flight"})
        store.flush_events()
        assert len(store.query_events({})) == 3

    report = restore_sqlite(copy, memory_file, replace=True)
    assert report.check.events == 2
    with SqliteMemoryStore(memory_file) as store:
        assert [(e.id, e.event) for e in store.query_events({})] == logged, "the backup's log, not the old one"


@pytest.fixture
def held_open(memory_file: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process with the memory file open and idle, as an agent between turns."""
    script = (
        "import sys, time; from memory_admin.store import SqliteMemoryStore; "
        "s = SqliteMemoryStore(sys.argv[1]); s.get('any'); print('open', flush=True); time.sleep(120)"
    )
    process = subprocess.Popen([sys.executable, "-c", script, str(memory_file)], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdout.readline().strip() == "open"
    yield process
    process.kill()
    process.wait()


def test_restore_refuses_a_file_another_process_has_open(
    memory_file: Path, tmp_path: Path, held_open: subprocess.Popen[str]
) -> None:
    copy = backup_sqlite(memory_file, tmp_path / "backup.sqlite3").target
    write_records(tmp_path / "unrelated.sqlite3", 1)  # this process's own files are not in the way
    with pytest.raises(FileInUseError, match="open in another process"):
        restore_sqlite(copy, memory_file, replace=True)
    held_open.kill()
    held_open.wait()
    assert restore_sqlite(copy, memory_file, replace=True).check.records == 200


RESTORE_ONTO = """
import sys
from memory_admin.backup import BackupError, restore_sqlite
try:
    restore_sqlite(sys.argv[1], sys.argv[2], replace=True)
except BackupError as exc:
    print(exc.message)
"""


@pytest.mark.parametrize("how", ["itself", "symlink", "hard-link", "event-file"])  # the last: one of its own files
def test_restore_refuses_the_memory_file_itself_at_once(memory_file: Path, tmp_path: Path, how: str) -> None:
    backup = {
        "itself": memory_file,
        "symlink": tmp_path / "link.sqlite3",
        "hard-link": tmp_path / "hard.sqlite3",
        "event-file": events_path(memory_file),
    }[how]
    if how == "symlink":
        backup.symlink_to(memory_file)
    elif how == "hard-link":
        backup.hardlink_to(memory_file)
    before = contents(memory_file)
    # in a process of its own: a restore that waits on its own lock must not hang the suite
    done = run_python(RESTORE_ONTO, str(backup), str(memory_file), timeout=60)
    assert done.returncode == 0, tail(done)
    assert "is the memory file itself, or one of its own files" in done.stdout, tail(done)
    assert sorted(p.name for p in tmp_path.glob("memory.sqlite3*")) == ["memory.sqlite3", "memory.sqlite3-events"]
    assert contents(memory_file) == before


def test_restore_refuses_a_backup_from_a_newer_version(memory_file: Path, tmp_path: Path) -> None:
    copy = backup_sqlite(memory_file, tmp_path / "backup.sqlite3").target
    with sqlite3.connect(copy) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(SchemaVersionError, match="Upgrade memory_admin"):
        restore_sqlite(copy, tmp_path / "restored.sqlite3")
    assert not (tmp_path / "restored.sqlite3").exists()


def test_a_backup_from_an_older_version_is_restored_and_migrates_on_open(tmp_path: Path) -> None:
    old = tmp_path / "old.sqlite3"
    with sqlite3.connect(old, isolation_level=None) as conn:
        terms.register(conn)  # the index's terms function, as every connection of the store has
        for version, script in enumerate(MIGRATIONS[:-1], start=1):
            for statement in statements(script):
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {version}")
    report = restore_sqlite(old, tmp_path / "restored.sqlite3")
    assert report.migrates_from == SCHEMA_VERSION - 1
    store = SqliteMemoryStore(report.target)
    try:
        assert store.schema_version() == SCHEMA_VERSION
    finally:
        store.close()


# --- under load -----------------------------------------------------------------------

WRITER = """
import sys
from pathlib import Path
from memory_admin.store import SqliteMemoryStore

path, name, acks, stop = sys.argv[1], sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4])
store = SqliteMemoryStore(path)
n = 0
with acks.open("a") as log:
    while not stop.exists():
        store.write([{"scope": {"tenant": "acme", "user": name}, "kind": "episode",
                      "content": f"{name} wrote {n}", "provenance": {"source": "writer"}}])
        log.write(f"{name} wrote {n}\\n")  # acknowledged: write() returned
        log.flush()
        n += 1
store.close()
"""


def acknowledged(acks: list[Path]) -> set[str]:
    return {line for path in acks for line in path.read_text().split("\n")[:-1]}  # complete lines only


@pytest.mark.slow
def test_a_backup_under_four_writers_holds_every_acknowledged_write_and_restores(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    write_records(path, 1500)  # enough pages for the copy to take many steps while writers commit
    stop = tmp_path / "stop"
    acks = [tmp_path / f"acks-{i}.txt" for i in range(4)]
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(path), f"w{i}", str(ack), str(stop)])
        for i, ack in enumerate(acks)
    ]
    try:
        deadline = time.monotonic() + 60
        while not all(ack.exists() and ack.read_text().count("\n") >= 10 for ack in acks):
            assert time.monotonic() < deadline, "the writers did not get going"
            assert all(w.poll() is None for w in writers), "a writer died"
            time.sleep(0.05)
        before = acknowledged(acks)

        def slow_progress(done: int, total: int) -> None:
            time.sleep(0.005)  # give the writers time to commit between the copy's steps

        report = backup_sqlite(path, tmp_path / "backup.sqlite3", progress=slow_progress, pages_per_step=8)
        during = acknowledged(acks)
        with pytest.raises(FileInUseError):  # the writers still have the file open
            restore_sqlite(report.target, path, replace=True)
    finally:
        stop.touch()
        for writer in writers:
            assert writer.wait(timeout=60) == 0
    everything = acknowledged(acks)

    assert len(during) > len(before), "writers committed while the backup ran"
    copied = {text for text in contents(report.target) if " wrote " in text}
    assert before <= copied, "every write acknowledged before the backup began is in it"
    assert copied <= everything, "nothing in the copy was never acknowledged"
    for i in range(4):  # one consistent moment: each writer's writes up to some point, none after
        numbers = sorted(int(text.rsplit(" ", 1)[1]) for text in copied if text.startswith(f"w{i} "))
        assert numbers == list(range(len(numbers)))
    assert report.check.records == 1500 + len(copied)

    restored = restore_sqlite(report.target, tmp_path / "restored.sqlite3")
    assert restored.check.counts == report.check.counts
    store = SqliteMemoryStore(restored.target)
    try:
        hits = store.search({"scope": {"tenant": "acme", "user": "w0"}, "query": "w0 wrote 0"})
        assert "w0 wrote 0" in {hit.record.content for hit in hits}
    finally:
        store.close()
