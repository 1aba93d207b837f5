"""The gardening pass: proposals for a person, and the composition's health."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from memory_admin.dashboard.learning_commands import actor_of, add_common, composition_of, scope_of, store_of
from memory_admin.errors import MemoryStoreError
from memory_admin.learning import garden
from memory_admin.learning.garden import accept, reject
from memory_admin.retention import parse_age


class Command(BaseCommand):
    help = (
        "Look over a scope's learnings and propose curation for a person — near-duplicates to merge, stale "
        "current-state facts to retire — then print the proposals and the composition's health report, e.g. "
        "memory_garden --scope tenant=acme,user=dana. Nothing is changed until a person accepts a proposal: "
        "--accept ID or --reject ID --reason …"
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        add_common(parser, required=False)
        parser.add_argument("--stale-after", default="30d", help="current-state facts older than this (default 30d)")
        parser.add_argument("--accept", type=int, metavar="ID", help="accept proposal ID and carry it out")
        parser.add_argument("--reject", type=int, metavar="ID", help="reject proposal ID (needs --reason)")
        parser.add_argument("--reason", help="why (required with --reject)")
        parser.add_argument("--actor", help="who decides (default: cli:<your login>)")

    def handle(self, *args: Any, **options: Any) -> None:
        store = store_of(options)
        try:
            if options["accept"] is not None:
                done = accept(store, options["accept"], actor=actor_of(options), reason=options["reason"])
                self.stdout.write(self.style.SUCCESS(f"Proposal #{done.id} accepted: {done.kind} {done.record_id}."))
                return
            if options["reject"] is not None:
                if not options["reason"]:
                    raise CommandError("Say why: --reject needs --reason.")
                done = reject(store, options["reject"], actor=actor_of(options), reason=options["reason"])
                self.stdout.write(self.style.SUCCESS(f"Proposal #{done.id} rejected; it will not be made again."))
                return
            scope = scope_of(options)
            composition = composition_of(store, options, scope)
            report = garden(
                store, scope, composition, agent=options["agent"], stale_after=parse_age(options["stale_after"])
            )
        except MemoryStoreError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(report.text())
