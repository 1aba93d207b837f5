"""Finish a forgetting that reported its scrub pending: checkpoint the memory file so no
deleted or erased byte remains in it or its write-ahead log."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from memory_admin.dashboard.management.sqlite_files import existing_store
from memory_admin.store.transfer import store_location


class Command(BaseCommand):
    help = (
        "Leave no forgotten byte in the memory store's files. Deleting or erasing reports "
        "'scrub pending' when another connection held an older snapshot; run this when readers are idle."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--store", help="store URL (default: MEMORY_STORE_URL)")
        parser.add_argument(
            "--wait", type=float, default=30.0, help="seconds to wait for readers to let go (default 30)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        store = existing_store(options["store"])
        target = store_location(options["store"]) if options["store"] else "the default store"
        if not store.scrub(wait=max(0.0, options["wait"])):
            raise CommandError(
                f"Another connection still holds an older snapshot of {target}; its forgotten bytes "
                "remain. Close long-running readers (or wait for them) and run this again."
            )
        self.stdout.write(self.style.SUCCESS(f"Scrubbed {target}: no forgotten byte remains in its files."))
