"""memory_backup and memory_restore (``memory-admin backup`` / ``restore``)."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.core.management.base import OutputWrapper

from memory_admin.dashboard.management.progress import ProgressBar
from tests.test_backup import write_records


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    write_records(tmp_path / "memory.sqlite3", 12)
    return f"sqlite:///{tmp_path / 'memory.sqlite3'}"


def test_backup_into_a_directory_then_check_and_restore(store_url: str, tmp_path: Path) -> None:
    (tmp_path / "backups").mkdir()
    out = run("memory_backup", str(tmp_path / "backups"), "--store", store_url)
    assert "Backed up 12 records" in out and "integrity check ok" in out
    (backup,) = (tmp_path / "backups").glob("memory-*Z.sqlite3")

    assert "12 records" in run("memory_restore", str(backup), "--check")
    with pytest.raises(CommandError, match="already holds memory records"):
        run("memory_restore", str(backup), "--store", store_url)
    out = run("memory_restore", str(backup), "--store", store_url, "--replace")
    assert "Restored 12 records" in out
    assert "Restored 12 records" in run("memory_restore", str(backup), "--store", str(tmp_path / "elsewhere.sqlite3"))


def test_a_store_url_with_its_embedder_names_the_same_file(store_url: str, tmp_path: Path) -> None:
    (tmp_path / "backups").mkdir()
    out = run("memory_backup", str(tmp_path / "backups"), "--store", f"{store_url}?embedder=none")
    assert "Backed up 12 records" in out
    assert not list(tmp_path.glob("*embedder*"))


def test_a_destination_ending_in_a_slash_is_a_directory(store_url: str, tmp_path: Path) -> None:
    out = run("memory_backup", f"{tmp_path / 'new' / 'backups'}/", "--store", store_url)
    assert "Backed up 12 records" in out
    (backup,) = (tmp_path / "new" / "backups").glob("memory-*Z.sqlite3")  # not a file called "backups"
    assert "12 records" in run("memory_restore", str(backup), "--check")


def test_the_progress_bar_draws_on_a_terminal_only() -> None:
    class Terminal(StringIO):
        def isatty(self) -> bool:
            return True

    drawn, logged = Terminal(), StringIO()
    for stream in (drawn, logged):
        bar = ProgressBar(OutputWrapper(stream), "backing up")
        for done in range(0, 101, 10):
            bar(done, 100)
        bar.finish()
    assert "\rbacking up [###############···············]  50%" in drawn.getvalue()
    assert drawn.getvalue().endswith("100%\n") and logged.getvalue() == ""


@pytest.mark.parametrize(
    ("command", "store", "message"),
    [
        ("memory_backup", "postgresql://memory@db/memory", "pg_dump"),
        ("memory_restore", "postgresql://memory@db/memory", "pg_restore"),
        ("memory_backup", "memory://", "no file"),
    ],
)
def test_only_sqlite_files_are_backed_up_here(command: str, store: str, message: str, tmp_path: Path) -> None:
    args = [str(tmp_path / "b.sqlite3")] if command == "memory_restore" else []
    with pytest.raises(CommandError, match=message):
        run(command, *args, "--store", store)


def test_backup_names_a_missing_memory_file(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="does not exist"):
        run("memory_backup", str(tmp_path / "b.sqlite3"), "--store", f"sqlite:///{tmp_path / 'none.sqlite3'}")
