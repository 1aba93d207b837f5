"""Summarise what a memory store holds."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand

from memory_admin.dashboard.management.sqlite_files import existing_store
from memory_admin.dashboard.management.wording import counted


class Command(BaseCommand):
    help = "Print record counts by tenant, scope key and kind."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--store", help="store URL (default: MEMORY_STORE_URL)")

    def handle(self, *args: Any, **options: Any) -> None:
        store = existing_store(options["store"])
        caps = store.capabilities()
        self.stdout.write(f"Store: {caps.backend} (search: {caps.search})")
        if caps.events:
            stats = store.event_log_stats()
            dropped, withheld = stats.dropped, stats.withheld
            note = " (a writer fell behind; records are never dropped)" if dropped else ""
            self.stdout.write(f"Event log: {counted(dropped, 'event')} dropped{note}")
            if withheld:
                many = withheld != 1
                self.stdout.write(
                    f"Event log: {counted(withheld, 'event')} withheld ({'they' if many else 'it'} "
                    f"predated a delete or erasure in {'their' if many else 'its'} tenant)"
                )
        vectors = store.embedding_status()
        if vectors.model_id is None:
            self.stdout.write("Vectors: none (keyword search only; `memory-admin embed` adds them)")
        else:
            todo = f"; {vectors.missing} without one (run `memory-admin embed`)" if vectors.missing else ""
            self.stdout.write(
                f"Vectors: {vectors.embedded:,} of {counted(vectors.records, 'record')}, by {vectors.model_id}{todo}"
            )
            if vectors.mismatch:
                self.stdout.write(
                    f"  This store embeds with {vectors.embedder}: run `memory-admin embed --rebuild` to switch."
                )
        facets = store.scope_facets(values_per_key=20)
        tenants = next((f for f in facets if f.key == "tenant"), None)
        if tenants is None:
            self.stdout.write("The store is empty. Import records with: memory-admin import FILE.jsonl")
            return
        for value in tenants.values:
            counts = store.count_records({"tenant": value.value})
            kinds = ", ".join(f"{kind} {n}" for kind, n in counts.by_kind.items() if n)
            self.stdout.write(
                f"tenant={value.value}: {counted(counts.total, 'record')} ({counts.live} live, "
                f"{counts.invalidated} invalidated, {counts.expired} expired) — {kinds}"
            )
        for facet in facets:
            if facet.key != "tenant":
                shown = len(facet.values)
                values = f"{shown}+ values" if facet.more_values else counted(shown, "value")
                self.stdout.write(f"  {facet.key}: {values}")
