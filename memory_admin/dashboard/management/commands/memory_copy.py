"""Copy one memory store into another — e.g. the SQLite file into PostgreSQL."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from memory_admin.dashboard.management.options import count
from memory_admin.dashboard.management.sqlite_files import require_existing
from memory_admin.dashboard.management.wording import counted
from memory_admin.errors import MemoryStoreError
from memory_admin.store import open_store
from memory_admin.store.transfer import CopyReport, copy_store, store_location


class Command(BaseCommand):
    help = (
        "Copy every record (ids, timestamps, invalidation chains) and every event from one store "
        "into an empty one, streaming in batches. Stop the writers first."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--from", dest="source", required=True, help="source store URL (sqlite:///…)")
        parser.add_argument("--to", dest="target", required=True, help="target store URL (postgresql://…)")
        parser.add_argument("--batch-size", type=count, default=500, help="records per target transaction")
        parser.add_argument("--resume", action="store_true", help="continue an interrupted copy into that target")

    def handle(self, *args: Any, **options: Any) -> None:
        source_url, target_url = options["source"], options["target"]
        require_existing(source_url)
        try:
            with open_store(source_url) as source, open_store(target_url) as target:
                report = copy_store(
                    source,
                    target,
                    batch_size=options["batch_size"],
                    resume=options["resume"],
                    progress=self._progress if options["verbosity"] > 1 else None,
                )
        except MemoryStoreError as exc:
            raise CommandError(exc.message) from None
        skipped = f" ({report.skipped} were already there)" if report.skipped else ""
        self.stdout.write(
            self.style.SUCCESS(
                f"Copied {counted(report.records, 'record')}{skipped} of {counted(report.tenants, 'tenant')} "
                f"and {counted(report.events, 'event')} "
                f"from {store_location(source_url)} to {store_location(target_url)}."
            )
        )

    def _progress(self, report: CopyReport) -> None:
        self.stdout.write(f"  {counted(report.records, 'record')}, {counted(report.events, 'event')} so far")
