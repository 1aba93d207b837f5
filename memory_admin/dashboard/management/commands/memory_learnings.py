"""What an agent learnt since a time."""

from __future__ import annotations

from argparse import ArgumentParser
from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from memory_admin.dashboard.learning_commands import add_common, moment, scope_of, store_of
from memory_admin.dashboard.management.options import count
from memory_admin.errors import MemoryStoreError
from memory_admin.promotion import PROMOTION_STATES
from memory_admin.records import utc_now


class Command(BaseCommand):
    help = (
        "List what the agents of a scope learnt since a time: promotions, demotions, learnings sent for review "
        "and rejections, newest first, with content and provenance, e.g. "
        "memory_learnings --scope tenant=acme --since 7d."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        add_common(parser, composition=False)
        parser.add_argument("--since", default="7d", help="a time or an age (default: 7d)")
        parser.add_argument(
            "--states",
            default="promoted,demoted,pending_review,rejected",
            help=f"which moves, comma-separated, of: {', '.join(PROMOTION_STATES)}",
        )
        parser.add_argument("--limit", type=count, default=50)
        parser.add_argument("--visible", action="store_true", help="visible match: shared records and this scope's own")

    def handle(self, *args: Any, **options: Any) -> None:
        store = store_of(options)
        scope = scope_of(options)
        since = moment(options["since"], option="--since") or utc_now() - timedelta(days=7)
        states = [state.strip() for state in options["states"].split(",") if state.strip()]
        try:
            page = store.transitions(
                scope,
                since=since,
                states=states,
                scope_match="visible" if options["visible"] else "subset",
                agent=options["agent"],
                limit=options["limit"],
            )
            records = {t.record_id: store.get(t.record_id) for t in page.transitions}
        except MemoryStoreError as exc:
            raise CommandError(exc.message) from None
        if not page.transitions:
            self.stdout.write(f"Nothing learnt since {since:%Y-%m-%d %H:%M} UTC.")
            return
        for t in page.transitions:
            record = records[t.record_id]
            why = f" ({t.cause})" if t.cause else ""
            self.stdout.write(f"{t.at:%Y-%m-%d %H:%M}  {t.state}{why}  {t.record_id}  by {t.by} {t.actor}")
            if t.reason:
                self.stdout.write(f"    why: {t.reason}")
            if record is not None:
                source = record.provenance.conversation_id or record.provenance.source or record.provenance.author
                self.stdout.write(f"    {record.content}")
                self.stdout.write(f"    from: {source}; seen in {1 + len(record.supports)} sightings")
        if page.next_cursor:
            self.stdout.write(f"… more: raise --limit (shown {len(page.transitions)}).")
