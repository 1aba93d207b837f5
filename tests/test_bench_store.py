"""The store benchmark command, run at a tiny size: it prints its report, never asserts timings."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from bench.corpus import Corpus
from bench.store import _redacted, event_log_bytes, main, record_bytes
from memory_admin.store.sqlite import SqliteMemoryStore, sqlite_file_stats
from tests.support.optional import needs_extra


def test_sqlite_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "store.md"
    assert main(["--sizes", "1500", "--queries", "20", "--dir", str(tmp_path), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "cores (1-minute load average during the run: mean " in printed and ", SQLite 3." in printed
    for operation in ("user search", "tenant search", "listing", "get"):
        assert f"| {operation} | 1,500 |" in printed
    assert "index merge (s)" in printed and "Targets at 1,500 records:" in printed
    assert out.read_text().startswith(
        f"# Store benchmark\n\n```\npython -m bench.store --sizes 1500 --queries 20 --dir {tmp_path}"
    )


def test_a_run_without_dir_leaves_no_files_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert main(["--sizes", "1200", "--queries", "10"]) == 0
    assert "| user search | 1,200 |" in capsys.readouterr().out
    assert list(tmp_path.iterdir()) == []


@pytest.mark.postgres
@pytest.mark.usefixtures("postgres_binaries")
def test_postgres_report_on_a_throwaway_cluster(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "store-postgres.md"
    assert main(["--postgres-throwaway", "--sizes", "1500", "--queries", "20", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "(fsync=on, synchronous_commit=on, full_page_writes=on," in printed, "PostgreSQL's durable defaults"
    assert "a throwaway cluster on this machine" in printed
    for operation in ("user search", "tenant search", "listing", "get"):
        assert f"| {operation} | 1,500 |" in printed
    assert "VACUUM ANALYZE (s)" in printed and "user-scoped search p99 ≤ 10 ms" in printed
    assert "Of 20 user-scoped searches, the raw statement returned the store's ten records for " in printed
    assert "python -m bench.store --postgres-throwaway --sizes 1500" in out.read_text()


def test_the_printed_command_never_shows_a_password() -> None:
    pytest.importorskip("psycopg", reason=needs_extra("postgres"))  # psycopg reads the connection strings
    shown = _redacted(["--url", "postgresql://memory:s3cret@db/memory", "--sizes", "10"])
    assert "s3cret" not in " ".join(shown) and "db" in shown[1]
    assert "s3cret" not in _redacted(["--url=host=db password=s3cret dbname=memory"])[0]
    assert _redacted(["--url", "postgresql://db/memory"]) == ["--url", "postgresql://db/memory"]


@pytest.mark.parametrize(
    "args",
    [
        ["--backend", "postgres"],
        ["--postgres-throwaway", "--url", "postgresql://db/x"],
        ["--url", "postgresql://db/x"],
        ["--backend", "postgres", "--url", "postgresql://db/x", "--postgres-setting", "shared_buffers=1GB"],
    ],
    ids=["postgres-without-a-server", "both-servers", "url-for-sqlite", "setting-for-a-server-not-ours"],
)
def test_a_postgres_run_needs_exactly_one_server_and_sets_only_its_own(args: list[str]) -> None:
    with pytest.raises(SystemExit):
        main(args)


def test_bytes_per_record_leave_the_event_log_out_wherever_it_lives(tmp_path: Path) -> None:
    # the same records with the log on and off: the records' bytes agree, and the log's
    # bytes are the event file's (the old figure subtracted them from the memory file)
    records = list(Corpus().inputs(300))
    sizes = {}
    for persist in (True, False):
        path = tmp_path / f"{persist}.sqlite3"
        with SqliteMemoryStore(path, persist_events=persist) as store:
            for i in range(0, len(records), 10):
                store.write(records[i : i + 10])
                store.search({"scope": records[i]["scope"], "query": records[i]["content"]})
            store.optimize()
            store.flush_events()
        sizes[persist] = (record_bytes(path), event_log_bytes(path), sqlite_file_stats(path)["events_bytes"])
    (on_records, on_log, on_file), (off_records, _, _) = sizes[True], sizes[False]
    assert on_file > 0 and on_log >= on_file
    assert abs(on_records - off_records) <= 8 * 4096
    assert on_records > on_file  # what the old subtraction would have shrunk below zero
