"""Was a scope erased (or deleted from, or exported), when, and by whom — answered from
the audit log's keyed hashes by someone who knows the scope's values."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from memory_admin.dashboard.management.wording import counted
from memory_admin.dashboard.redaction import erasures_of
from memory_admin.errors import MemoryValidationError
from memory_admin.scope import parse_scope_text


class Command(BaseCommand):
    help = (
        "List the audit entries about a scope, e.g. --scope tenant=acme,user=mei: every action on it "
        "or inside it, also after it was erased (the log keeps only keyed hashes of erased values)."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--scope", required=True, help="the scope, as the dashboard writes it: tenant=…,user=…")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            scope = parse_scope_text(options["scope"])
            entries = erasures_of(scope)
        except MemoryValidationError as exc:
            raise CommandError(exc.message) from None
        if not entries:
            self.stdout.write("No audit entry is about that scope.")
            return
        for entry in entries:
            records = entry.counts.get("records")
            how_many = f", {counted(records, 'record')}" if isinstance(records, int) else ""
            self.stdout.write(
                f"#{entry.pk} {entry.at:%Y-%m-%d %H:%M:%S} UTC {entry.action} by {entry.actor}"
                f" ({entry.role or 'no role'}): {entry.outcome}{how_many}"
            )
