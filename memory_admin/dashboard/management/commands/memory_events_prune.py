"""Prune the memory event log: events older than an age go, records always stay."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from memory_admin.dashboard.management.sqlite_files import existing_store
from memory_admin.dashboard.management.wording import counted
from memory_admin.errors import MemoryStoreError
from memory_admin.retention import prune_events_older_than


class Command(BaseCommand):
    help = (
        "Delete memory events (write, search, recall) older than an age, e.g. --older-than 30d. "
        "Memory records are never touched."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--older-than", required=True, help="an age: 30d, 12h, 90m, 2w or 45s")
        parser.add_argument("--store", help="store URL (default: MEMORY_STORE_URL)")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            report = prune_events_older_than(existing_store(options["store"]), options["older_than"])
        except MemoryStoreError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(
            self.style.SUCCESS(
                f"Pruned {counted(report.pruned, 'event')} older than {report.cutoff:%Y-%m-%d %H:%M:%S} UTC "
                f"from the {report.backend} store; memory records are untouched."
            )
        )
