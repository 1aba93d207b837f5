"""Back up the SQLite memory file while agents keep writing to it."""

from __future__ import annotations

import os
from argparse import ArgumentParser
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from memory_admin.backup import BackupReport, backup_sqlite
from memory_admin.dashboard.management.progress import ProgressBar
from memory_admin.dashboard.management.sqlite_files import memory_file, size_text
from memory_admin.dashboard.management.wording import counted
from memory_admin.errors import MemoryStoreError


class Command(BaseCommand):
    help = (
        "Take a consistent copy of the SQLite memory file while agents and the dashboard keep using it "
        "(SQLite's online backup API: the copy is the file as it stood when the backup began), check it "
        "(integrity check, full-text index, counts) and save it readable by its owner only. "
        "PostgreSQL stores are backed up with pg_dump (docs/operations.md)."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "destination",
            nargs="?",
            default=".",
            help="the backup file to create, or a directory to create memory-<UTC time>.sqlite3 in "
            "(an existing one, or a path ending in /; default: the current directory); an existing file is "
            "never overwritten",
        )
        parser.add_argument("--store", help="the memory store URL (default: MEMORY_STORE_URL)")
        parser.add_argument(
            "--no-progress", action="store_true", help="no progress bar (it is only drawn on a terminal anyway)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        source = memory_file(options["store"] or settings.MEMORY_STORE_URL, "backup")
        destination = Path(options["destination"])
        # "backups/" names a directory, made when it is not there yet (as the file's parents are)
        if destination.is_dir() or options["destination"].endswith(("/", os.sep)):
            destination = destination / f"memory-{datetime.now(UTC):%Y%m%dT%H%M%SZ}.sqlite3"
        bar = ProgressBar(self.stderr, "backing up", enabled=False if options["no_progress"] else None)
        try:
            report = backup_sqlite(source, destination, progress=bar)
        except MemoryStoreError as exc:
            raise CommandError(exc.message) from None
        finally:
            bar.finish()
        self.stdout.write(self.style.SUCCESS(summary(report)))


def summary(report: BackupReport) -> str:
    check = report.check
    return (
        f"Backed up {counted(check.records, 'record')} and {counted(check.events, 'event')} "
        f"({counted(check.counts['scopes'], 'scope')}, "
        f"schema version {check.schema_version}, {size_text(check.size_bytes)}) from {report.source} "
        f"to {report.target} in {report.seconds:.1f}s; integrity check ok."
    )
