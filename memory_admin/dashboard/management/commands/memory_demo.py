"""Fill a memory store with the demo corpus (idempotent)."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from memory_admin.dashboard.demo import DemoClock, demo_start, load_demo
from memory_admin.dashboard.management.wording import counted
from memory_admin.errors import MemoryStoreError
from memory_admin.store import open_store


class Command(BaseCommand):
    help = (
        "Write the demo corpus (three tenants, supersede chains, invalidations, expiries, "
        "targeted candidates, recall events) into the store. Running it again changes nothing."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--store", help="store URL (default: MEMORY_STORE_URL)")

    def handle(self, *args: Any, **options: Any) -> None:
        url = options["store"] or settings.MEMORY_STORE_URL
        if url.startswith("memory:"):
            raise CommandError("memory:// lives only inside one process; point --store at a SQLite file or PostgreSQL.")
        clock = DemoClock(demo_start())
        # a store of our own on the same database, reading the demo clock, so history
        # gets realistic dates (and short-lived records have expired by now)
        try:
            with open_store(url, clock=clock) as store:
                report = load_demo(store, clock)
        except MemoryStoreError as exc:
            raise CommandError(exc.message) from None
        if report is None:
            self.stdout.write("The demo corpus is already in the store; nothing written.")
            return
        self.stdout.write(
            self.style.SUCCESS(
                f"Wrote {report.records} demo records in {counted(len(report.scopes), 'scope')} "
                f"({report.deleted} deleted for a tombstone, {report.recalls} recall events)."
            )
        )
