"""Compose an agent: its composition with the promoted learnings, every line traced."""

from __future__ import annotations

import json
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from memory_admin.dashboard.learning_commands import (
    add_common,
    composition_of,
    moment,
    prompt_lines,
    scope_of,
    store_of,
)
from memory_admin.errors import MemoryStoreError
from memory_admin.learning import compose


class Command(BaseCommand):
    help = (
        "Print the prompt an agent receives: its composition with the learnings promoted for its scope, "
        "each learned line followed by the records behind it, e.g. "
        "memory_compose --composition agent.toml --scope tenant=acme,user=dana. "
        "--as-of replays a past moment (the composition registered then, the learnings promoted then)."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        add_common(parser)
        parser.add_argument("--as-of", help="replay a moment: 2026-01-05, 2026-01-05T09:00:00+00:00, or an age (7d)")
        parser.add_argument("--json", action="store_true", help="the overlay and the prompt's lines as JSON")
        parser.add_argument("--no-attribution", action="store_true", help="the prompt alone, as the agent reads it")

    def handle(self, *args: Any, **options: Any) -> None:
        store = store_of(options)
        scope = scope_of(options)
        as_of = moment(options["as_of"], option="--as-of")
        composition = composition_of(store, options, scope, as_of=as_of)
        try:
            composed = compose(store, scope, composition, agent=options["agent"], as_of=as_of)
        except MemoryStoreError as exc:
            raise CommandError(exc.message) from None
        if options["json"]:
            body = {
                "scope": composed.scope,
                "agent": composed.agent,
                "as_of": composed.as_of.isoformat() if composed.as_of else None,
                "version": composed.version,
                "composition_version": composed.overlay.composition_version,
                "lines": [line.model_dump(mode="json") for line in composed.prompt.lines],
                "text": composed.prompt.text,
                "applied": composed.overlay.applied,
                "dropped": [d.model_dump(mode="json") for d in composed.overlay.dropped],
                "spilled": [s.model_dump(mode="json") for s in composed.overlay.spilled],
            }
            self.stdout.write(json.dumps(body, ensure_ascii=False, indent=2))
            return
        for line in prompt_lines(composed, attribution=not options["no_attribution"]):
            self.stdout.write(line)
