"""A person's decision on a learning."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from memory_admin.dashboard.learning_commands import actor_of, composition_of, store_of
from memory_admin.errors import MemoryStoreError
from memory_admin.learning import review


class Command(BaseCommand):
    help = (
        "Decide on a learning as a person: approve (the only way a guarded learning enters its agent), reject, "
        "roll back a promoted one, or pick the survivor of a conflict, e.g. "
        "memory_review approve mem_01… --reason 'matches the refund policy'. "
        "The decision is recorded with your name (--actor, default your login) and the reason."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("decision", choices=["approve", "reject", "rollback", "pick"])
        parser.add_argument("record_id", help="the learning (for pick: the survivor)")
        parser.add_argument("--over", help="pick: the learning that loses the conflict")
        parser.add_argument("--reason", help="why (required to reject, roll back or pick)")
        parser.add_argument("--actor", help="who decides (default: cli:<your login>)")
        parser.add_argument("--revision", type=int, help="refuse unless the learning is still at this revision")
        parser.add_argument(
            "--composition",
            help="the agent's composition file (approve and pick; default: the one registered for the record's scope)",
        )
        parser.add_argument("--store", help="store URL (default: MEMORY_STORE_URL)")

    def handle(self, *args: Any, **options: Any) -> None:
        store = store_of(options)
        record_id, decision, reason = options["record_id"], options["decision"], options["reason"]
        actor = actor_of(options)
        pin = {"revision": options["revision"]} if options["revision"] is not None else None
        if decision != "approve" and not (reason and reason.strip()):
            raise CommandError(f"Say why: {decision} needs --reason.")
        try:
            record = store.get(record_id)
            if record is None:
                raise CommandError(f"No memory record {record_id!r}.")
            if decision == "approve":
                composition = composition_of(store, options, record.scope)
                done = review.approve(store, record_id, composition, actor=actor, reason=reason, pin=pin)
            elif decision == "reject":
                done = review.reject(store, record_id, actor=actor, reason=reason, pin=pin)
            elif decision == "rollback":
                done = review.rollback(store, record_id, actor=actor, reason=reason, pin=pin)
            else:
                if not options["over"]:
                    raise CommandError("pick needs --over ID: the learning that loses the conflict.")
                composition = composition_of(store, options, record.scope)
                done, loser = review.pick_survivor(
                    store, record_id, options["over"], composition, actor=actor, reason=reason
                )
                self.stdout.write(f"{loser.record_id} is {loser.state} now.")
        except MemoryStoreError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(
            self.style.SUCCESS(f"{done.record_id} is {done.state} now (revision {done.revision}, by {actor}).")
        )
