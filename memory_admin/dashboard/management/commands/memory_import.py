"""Import memory records from a JSON Lines file (one write input per line)."""

from __future__ import annotations

import json
import sys
from argparse import ArgumentParser
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from django.core.management.base import BaseCommand, CommandError

from memory_admin.dashboard.management.options import count
from memory_admin.dashboard.management.wording import counted
from memory_admin.dashboard.stores import get_store
from memory_admin.errors import MemoryStoreError, MemoryValidationError
from memory_admin.records import MemoryWriteInput, parse_model
from memory_admin.store import MemoryStore
from memory_admin.store.transfer import store_location

MAX_LINE_CHARS = 1_000_000
"""A line of the file: one write input at every bound, escaped, fits many times over."""


class Command(BaseCommand):
    help = "Write memory records from a JSON Lines file into the store, in batches (all-or-nothing per batch)."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("path", help="a .jsonl file of write inputs, or - for standard input")
        parser.add_argument("--store", help="store URL (default: MEMORY_STORE_URL)")
        parser.add_argument("--batch-size", type=count, default=500, help="records per transaction (default 500)")
        parser.add_argument(
            "--observed-at",
            metavar="ISO-TIME",
            help="when the imported facts were stated (e.g. 2023-05-08T13:56:00+00:00), for lines "
            "that do not say; default: the import time",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        store = get_store(options["store"])
        most = store.capabilities().max_batch
        if options["batch_size"] > most:
            raise CommandError(f"--batch-size {options['batch_size']} is more than the store takes at once ({most}).")
        if options["path"] == "-":
            written = self._import(store, sys.stdin, options["batch_size"], options["observed_at"])
        else:
            try:
                with Path(options["path"]).open(encoding="utf-8") as source:
                    written = self._import(store, source, options["batch_size"], options["observed_at"])
            except OSError as exc:
                raise CommandError(f"cannot read {options['path']}: {exc.strerror}") from None
        if written:
            store.optimize()  # a large import leaves the full-text index in many segments
        target = store_location(options["store"]) if options["store"] else "the default store"
        self.stdout.write(self.style.SUCCESS(f"Imported {counted(written, 'record')} into {target}."))

    def _import(self, store: MemoryStore, source: TextIO, batch_size: int, observed_at: str | None) -> int:
        batch = _Batch()
        for number, line in _lines(source):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except json.JSONDecodeError as exc:
                raise CommandError(f"line {number}: not JSON ({exc.msg}); {batch.unwritten(number)}") from None
            if observed_at is not None and isinstance(item, dict):
                item.setdefault("observed_at", observed_at)
            try:  # checked as it is read, so a bad line is named by its number
                batch.add(number, parse_model(MemoryWriteInput, item, what=f"line {number}"))
            except MemoryValidationError as exc:
                raise CommandError(f"{exc.message}; {batch.unwritten(number)}") from None
            if len(batch.inputs) >= batch_size:
                batch.flush(store)
        batch.flush(store)
        return batch.written


class _Batch:
    """The inputs read since the last write, their lines, and how many records went before."""

    def __init__(self) -> None:
        self.inputs: list[MemoryWriteInput] = []
        self.lines: tuple[int, int] = (0, 0)
        self.written = 0

    def add(self, number: int, item: MemoryWriteInput) -> None:
        self.lines = (self.lines[0] if self.inputs else number, number)
        self.inputs.append(item)

    def flush(self, store: MemoryStore) -> None:
        if not self.inputs:
            return
        try:
            self.written += len(store.write(self.inputs))
        except MemoryStoreError as exc:
            raise CommandError(f"{exc.message}; {self.unwritten()}") from None
        self.inputs.clear()

    def unwritten(self, failed: int | None = None) -> str:
        """What a failure at line ``failed`` (else in the write) leaves: this batch
        unwritten (all or nothing), the batches before it written."""
        first = self.lines[0] if self.inputs else failed
        last = failed or self.lines[1]
        span = f"line {first}" if first == last else f"lines {first}–{last}"
        if not self.written:
            return f"nothing was written ({span}: one batch, all or nothing)"
        verb = "was" if first == last else "were"
        return (
            f"{span} {verb} not written (one batch, all or nothing); the {counted(self.written, 'record')} "
            f"before line {first} {'was' if self.written == 1 else 'were'}: import the rest from line {first} on"
        )


def _lines(source: TextIO) -> Iterator[tuple[int, str]]:
    """The file's lines, numbered from 1, each read only as far as :data:`MAX_LINE_CHARS`:
    a file that is not JSON Lines (a binary file, a device) is refused, never read whole."""
    number = 0
    while True:
        number += 1
        try:
            line = source.readline(MAX_LINE_CHARS + 1)
        except UnicodeDecodeError:
            raise CommandError(
                f"line {number}: not UTF-8 text. Import takes JSON Lines, one write input per line "
                "(a backup of a memory file is restored with memory-admin restore); this batch was not written."
            ) from None
        if not line:
            return
        if len(line.rstrip("\r\n")) > MAX_LINE_CHARS:
            raise CommandError(
                f"line {number} holds more than {MAX_LINE_CHARS:,} characters, far more than one write input; "
                "is this a JSON Lines file? This batch was not written."
            )
        yield number, line
