"""Restore the SQLite memory file from a backup."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from memory_admin.backup import check_sqlite, restore_sqlite
from memory_admin.dashboard.management.progress import ProgressBar
from memory_admin.dashboard.management.sqlite_files import memory_file, size_text
from memory_admin.dashboard.management.wording import counted
from memory_admin.errors import MemoryStoreError


class Command(BaseCommand):
    help = (
        "Write a backup (made by the backup command) into the SQLite memory file. The backup is checked first "
        "(integrity, full-text index, schema version: a backup from a newer memory_admin is refused). "
        "Stop the agents and the dashboard first: a memory file that any process has open is never replaced. "
        "Records erased since the backup was taken come back with it: erase them again (docs/operations.md)."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("backup", help="the backup file")
        parser.add_argument("--store", help="the memory store URL to restore into (default: MEMORY_STORE_URL)")
        parser.add_argument(
            "--replace", action="store_true", help="overwrite a memory file that holds records (refused otherwise)"
        )
        parser.add_argument("--check", action="store_true", help="only check the backup; change nothing")
        parser.add_argument("--no-progress", action="store_true", help="no progress bar")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            if options["check"]:
                check = check_sqlite(options["backup"])
                self.stdout.write(
                    self.style.SUCCESS(
                        f"{check.path}: {counted(check.records, 'record')}, {counted(check.events, 'event')}, "
                        f"{counted(check.counts['scopes'], 'scope')}, schema version {check.schema_version}, "
                        f"{size_text(check.size_bytes)}; integrity check ok."
                    )
                )
                return
            target = memory_file(options["store"] or settings.MEMORY_STORE_URL, "restore")
            bar = ProgressBar(self.stderr, "restoring", enabled=False if options["no_progress"] else None)
            try:
                report = restore_sqlite(options["backup"], target, replace=options["replace"], progress=bar)
            finally:
                bar.finish()
        except MemoryStoreError as exc:
            raise CommandError(exc.message) from None
        check = report.check
        self.stdout.write(
            self.style.SUCCESS(
                f"Restored {counted(check.records, 'record')} and {counted(check.events, 'event')} "
                f"from {report.backup} into {report.target}; integrity check ok."
            )
        )
        if report.migrates_from is not None:
            self.stdout.write(
                f"The backup has schema version {report.migrates_from}, older than this memory_admin's: "
                "the store migrates it in place when it is next opened."
            )
