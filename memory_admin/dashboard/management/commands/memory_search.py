"""Search the memory store from the command line."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from memory_admin.dashboard.management.options import count
from memory_admin.dashboard.management.sqlite_files import existing_store
from memory_admin.errors import MemoryStoreError
from memory_admin.records import SEARCH_MODES
from memory_admin.scope import parse_scope_text


class Command(BaseCommand):
    help = "Search memories in a scope, e.g. memory_search 'tenant=acme,user=dana' 'window seat'."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("scope", help="scope filter as key=value pairs, e.g. tenant=acme,user=dana")
        parser.add_argument("query", nargs="?", help="text to search for (omit for the newest records)")
        parser.add_argument("--store", help="store URL (default: MEMORY_STORE_URL)")
        parser.add_argument("--visible", action="store_true", help="visible match: shared records and this scope's own")
        parser.add_argument("--agent", help="apply the agent convention for this agent")
        parser.add_argument("--limit", type=count, default=10)
        parser.add_argument("--all", action="store_true", help="include invalidated records")
        parser.add_argument(
            "--mode",
            choices=SEARCH_MODES,
            help="how the query matches and ranks (default: hybrid when the store embeds, else keyword; "
            "quality: the learned ranker)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            hits = existing_store(options["store"]).search(
                {
                    "scope": parse_scope_text(options["scope"]),
                    "scope_match": "visible" if options["visible"] else "subset",
                    "query": options["query"],
                    "agent": options["agent"],
                    "limit": options["limit"],
                    "include_invalidated": options["all"],
                    "mode": options["mode"],
                }
            )
        except MemoryStoreError as exc:
            raise CommandError(exc.message) from None
        if not hits:
            self.stdout.write("No memories match.")
            return
        for hit in hits:
            record = hit.record
            state = "" if record.invalid_at is None else f"  [invalid: {record.invalid_reason or 'no reason'}]"
            score = f" score={hit.score:.3f}" if hit.score is not None else ""
            if hit.semantic_score is not None or hit.keyword_score is not None:
                parts = [f"keyword={hit.keyword_score:.3f}" if hit.keyword_score is not None else "keyword=-"]
                parts.append(f"semantic={hit.semantic_score:.3f}" if hit.semantic_score is not None else "semantic=-")
                if hit.context_score:
                    parts.append(f"context=+{hit.context_score:.3f}")
                if hit.length_score:
                    parts.append(f"length={hit.length_score:+.3f}")
                score += f" ({' '.join(parts)})"
            scope = ",".join(f"{k}={v}" for k, v in record.scope.items())
            self.stdout.write(f"{record.id}  {record.created_at:%Y-%m-%d}  {record.kind:<10} {scope}{score}{state}")
            self.stdout.write(f"    {record.content}")
