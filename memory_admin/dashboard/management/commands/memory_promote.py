"""Run the gate chain over a scope's candidates."""

from __future__ import annotations

import json
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from memory_admin.dashboard.learning_commands import add_common, composition_of, scope_of, store_of
from memory_admin.errors import MemoryStoreError
from memory_admin.learning import DEFAULT_RECURRENCE, PromotionPolicy, promote_candidates


class Command(BaseCommand):
    help = (
        "Run the promotion gates over a scope's candidates against the agent's composition and print, for every "
        "candidate, its tier, each gate's result and the outcome, e.g. "
        "memory_promote --composition agent.toml --scope tenant=acme,user=dana --dry-run. Guarded learnings go "
        "to review: approve them with memory_review."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        add_common(parser)
        parser.add_argument(
            "--recurrence",
            type=int,
            default=DEFAULT_RECURRENCE,
            help=f"distinct conversations an earned learning needs (default {DEFAULT_RECURRENCE})",
        )
        parser.add_argument(
            "--subset", action="store_true", help="every candidate under the scope, not only the ones it sees"
        )
        parser.add_argument("--dry-run", action="store_true", help="decide and report; apply nothing")
        parser.add_argument("--json", action="store_true", help="the report as JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        store = store_of(options)
        scope = scope_of(options)
        composition = composition_of(store, options, scope)
        try:
            policy = PromotionPolicy(
                recurrence=options["recurrence"],
                agent=options["agent"],
                scope_match="subset" if options["subset"] else "visible",
            )
            report = promote_candidates(store, scope, composition, policy, dry_run=options["dry_run"])
        except MemoryStoreError as exc:
            raise CommandError(exc.message) from None
        if options["json"]:
            self.stdout.write(json.dumps(report.model_dump(mode="json"), ensure_ascii=False, indent=2))
            return
        if not report.candidates:
            self.stdout.write("No candidates to run: nothing targeted waits under that scope.")
            return
        self.stdout.write(report.text())
