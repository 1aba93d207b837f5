"""What the learnings' management commands (``memory_compose``, ``memory_promote``,
``memory_learnings``, ``memory_review``, ``memory_garden``) share: the composition they
work against, times on the command line, and the prompt with its attribution."""

from __future__ import annotations

import getpass
from argparse import ArgumentParser
from datetime import UTC, datetime
from typing import Any

from django.core.management.base import CommandError

from memory_admin.composition import AgentComposition, load_composition
from memory_admin.dashboard.management.sqlite_files import existing_store
from memory_admin.dashboard.management.wording import counted
from memory_admin.errors import MemoryStoreError
from memory_admin.learning import Composed
from memory_admin.records import utc_now
from memory_admin.retention import parse_age
from memory_admin.scope import Scope, parse_scope_text
from memory_admin.store import FullMemoryStore


def add_common(parser: ArgumentParser, *, scope: bool = True, composition: bool = True, required: bool = True) -> None:
    if scope:
        parser.add_argument(
            "--scope", required=required, help="the agent's scope as key=value pairs, e.g. tenant=acme,user=dana"
        )
        parser.add_argument("--agent", help="the agent's name (the agent convention: its own records join the shared)")
    if composition:
        parser.add_argument(
            "--composition",
            help="the agent's composition file (TOML or JSON); default: the one registered for the scope",
        )
    parser.add_argument("--store", help="store URL (default: MEMORY_STORE_URL)")


def store_of(options: dict[str, Any]) -> FullMemoryStore:
    return existing_store(options.get("store"))


def scope_of(options: dict[str, Any]) -> Scope:
    if not options.get("scope"):
        raise CommandError("Name the agent's scope: --scope tenant=acme,user=dana.")
    try:
        return parse_scope_text(options["scope"])
    except MemoryStoreError as exc:
        raise CommandError(exc.message) from None


def composition_of(
    store: FullMemoryStore, options: dict[str, Any], scope: Scope, *, as_of: datetime | None = None
) -> AgentComposition:
    """The composition a command works against: ``--composition FILE``, else the one
    registered for the scope (then)."""
    path = options.get("composition")
    try:
        if path:
            return load_composition(path)
        found = store.registered_composition(scope, as_of=as_of)
    except MemoryStoreError as exc:
        raise CommandError(exc.message) from None
    if found is None:
        raise CommandError(
            "No composition is registered for that scope; pass --composition FILE (the agent's TOML or JSON file)."
        )
    return found


def moment(text: str | None, *, option: str) -> datetime | None:
    """A time on the command line: ISO 8601 (a date is its UTC midnight; a time without an
    offset is UTC), or an age before now (``7d``, ``12h``)."""
    if text is None:
        return None
    if text[:1].isdigit() and text[-1:].lower() in "smhdw" and not any(c in text for c in "-:T"):
        try:
            return utc_now() - parse_age(text)
        except MemoryStoreError as exc:
            raise CommandError(exc.message) from None
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise CommandError(
            f"{option} {text!r} is not a time: write 2026-01-05, 2026-01-05T09:00:00+00:00, or an age such as 7d."
        ) from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def actor_of(options: dict[str, Any]) -> str:
    """Who decides from the command line: ``--actor``, else the operating system's user."""
    return str(options.get("actor") or f"cli:{getpass.getuser()}")


def prompt_lines(composed: Composed, *, attribution: bool = True) -> list[str]:
    """The composed prompt as the agent receives it, then its overlay report; with
    ``attribution``, every learned line followed by the records behind it."""
    lines: list[str] = []
    for line in composed.prompt.lines:
        lines.append(line.text)
        if attribution and line.source == "memory" and line.record_ids:
            lines.append(f"    ↳ memory {', '.join(line.record_ids)}")
    overlay = composed.overlay
    when = f" as of {composed.as_of.isoformat()}" if composed.as_of else ""
    lines += [
        "",
        f"Overlay {overlay.version[:12]} of composition {overlay.composition_version[:12]}{when}: "
        f"{counted(len(overlay.applied_ids), 'learning')} applied, {len(overlay.dropped)} dropped, "
        f"{len(overlay.spilled)} spilled to recall.",
    ]
    lines += [
        f"  {size.primitive:<12} {size.chars:>6} of {size.budget}" for size in overlay.sizes.values() if size.budget
    ]
    lines += [f"  dropped {d.record_id} [{d.reason}]: {d.detail}" for d in overlay.dropped]
    lines += [f"  spilled {s.record_id} [{s.reason}] from {s.section}" for s in overlay.spilled]
    return lines
