"""The composition's health report (seed 001, "Reading lintComposition output"), in four
sections:

- **size per primitive** against its budget — approaching it means curating before
  promotion stalls; the **ceiling** is a hard failure when it binds (the authored
  composition alone passes it, or a learning was spilled for it);
- **conflicts** — authored collisions (the agent keeps re-learning what is already
  written), learned-vs-learned conflicts, and promoted records the composition cannot take;
- **never recalled** — records the caller's counts (from the event log) say never came
  up: candidates for invalidation;
- **staleness** — learned ``current_state`` facts stated long ago, records expiring soon
  or already expired.

It only reports; gardening proposes, and a person decides.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Literal

from pydantic import BaseModel, ConfigDict

from memory_admin.composition.model import AgentComposition, Primitive
from memory_admin.composition.overlay import DropReason, Overlay, section_of
from memory_admin.errors import CompositionError
from memory_admin.records import BackgroundTarget, UtcDatetime, utc_now

NEAR_SHARE = 0.8
"""A primitive at this share of its budget or more is ``near`` it."""
STALE_AFTER = timedelta(days=30)
"""A learned ``current_state`` fact stated longer ago than this is a staleness candidate."""
EXPIRING_WITHIN = timedelta(days=7)
"""A record expiring within this is a staleness candidate."""

SizeStatus = Literal["ok", "near", "over"]
StaleReason = Literal["old_current_state", "expiring", "expired"]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SizeFinding(_Model):
    primitive: Primitive
    chars: int
    """Characters in the composed prompt (authored and learned)."""
    budget: int | None
    """``None`` for the identity, which counts toward the ceiling only."""
    spilled: int
    """Characters of learnings left to recall for this primitive's budget or the ceiling."""
    status: SizeStatus
    """``over``: the authored entries pass the budget or a learning was spilled;
    ``near``: at 80% of the budget or more."""


class CeilingFinding(_Model):
    chars: int
    """Characters of the whole composed prompt (headings and line breaks not counted)."""
    ceiling: int
    spilled: int
    """Characters of learnings spilled because the ceiling was reached."""
    failed: bool
    """The ceiling binds: the authored composition passes it, or a learning was spilled for it."""


class ConflictFinding(_Model):
    kind: DropReason
    record_id: str
    section: str | None
    detail: str
    text: str | None = None
    winner_id: str | None = None
    winner_text: str | None = None


class NeverRecalled(_Model):
    record_id: str
    section: str | None
    """Where the record aims, when it is one of the overlay's promoted records."""


class StaleFinding(_Model):
    record_id: str
    section: str | None
    reason: StaleReason
    since: UtcDatetime
    """When the fact was stated (old ``current_state``) or when it expires (expiring, expired)."""
    detail: str


class LintReport(_Model):
    composition_version: str
    overlay_version: str
    at: UtcDatetime
    sizes: tuple[SizeFinding, ...]
    ceiling: CeilingFinding
    conflicts: tuple[ConflictFinding, ...]
    never_recalled: tuple[NeverRecalled, ...] | None
    """``None`` when no recall counts were given (not measured)."""
    stale: tuple[StaleFinding, ...]

    @property
    def failed(self) -> bool:
        """The hard failure: the ceiling binds."""
        return self.ceiling.failed

    @property
    def clean(self) -> bool:
        """Nothing to report at all."""
        return (
            not self.failed
            and all(size.status == "ok" for size in self.sizes)
            and not self.conflicts
            and not self.never_recalled
            and not self.stale
        )

    def text(self) -> str:
        """The report for a terminal, its four sections in order."""
        lines = [
            f"Size per primitive (composition {self.composition_version[:12]}, overlay {self.overlay_version[:12]}):"
        ]
        for size in self.sizes:
            budget = "no budget" if size.budget is None else f"of {size.budget}"
            spilled = f", {size.spilled} spilled to recall" if size.spilled else ""
            lines.append(f"  {size.primitive:<12} {size.chars:>6} {budget}{spilled}  {size.status}")
        verdict = "FAILED" if self.ceiling.failed else "ok"
        lines.append(f"  {'ceiling':<12} {self.ceiling.chars:>6} of {self.ceiling.ceiling}  {verdict}")
        lines.append(f"Conflicts ({len(self.conflicts)}):")
        lines += [f"  {c.record_id} [{c.kind}] {c.detail}" for c in self.conflicts] or ["  none"]
        if self.never_recalled is None:
            lines.append("Never recalled: not measured (no recall counts given)")
        else:
            lines.append(f"Never recalled ({len(self.never_recalled)}):")
            lines += [f"  {n.record_id} {n.section or ''}".rstrip() for n in self.never_recalled] or ["  none"]
        lines.append(f"Staleness candidates ({len(self.stale)}):")
        lines += [f"  {s.record_id} [{s.reason}] {s.detail}" for s in self.stale] or ["  none"]
        return "\n".join(lines)


def lint_composition(
    composition: AgentComposition,
    overlay: Overlay,
    *,
    recall_counts: Mapping[str, int] | None = None,
    now: datetime | None = None,
    stale_after: timedelta = STALE_AFTER,
    expiring_within: timedelta = EXPIRING_WITHIN,
) -> LintReport:
    """The health report of ``overlay``, composed from ``composition``.

    ``recall_counts`` maps record ids to how often each came up in recall (the store side
    counts them from the event log); those counted zero are reported as never recalled.
    ``now`` is the moment staleness is judged at (default: the current time).

    Raises :class:`~memory_admin.errors.CompositionError` when ``overlay`` was not composed
    from ``composition``."""
    if overlay.composition_version != composition.version:
        raise CompositionError(
            f"The overlay was composed from composition version {overlay.composition_version[:12]}, not "
            f"{composition.version[:12]} ({composition.name!r}); compose it again from this composition to lint it."
        )
    at = now or utc_now()
    return LintReport(
        composition_version=composition.version,
        overlay_version=overlay.version,
        at=at,
        sizes=_sizes(overlay),
        ceiling=_ceiling(overlay),
        conflicts=tuple(
            ConflictFinding(
                kind=d.reason,
                record_id=d.record_id,
                section=d.section,
                detail=d.detail,
                text=d.text,
                winner_id=d.winner_id,
                winner_text=d.winner_text,
            )
            for d in overlay.dropped
        ),
        never_recalled=None if recall_counts is None else _never_recalled(overlay, recall_counts),
        stale=_stale(overlay, at, stale_after, expiring_within),
    )


def _sizes(overlay: Overlay) -> tuple[SizeFinding, ...]:
    over_budget = {s.primitive for s in overlay.spilled if s.reason == "budget"}
    findings = []
    for size in overlay.sizes.values():
        status: SizeStatus = "ok"
        if size.budget is not None:
            if size.chars > size.budget or size.primitive in over_budget:
                status = "over"
            elif size.chars >= NEAR_SHARE * size.budget:
                status = "near"
        findings.append(
            SizeFinding(
                primitive=size.primitive, chars=size.chars, budget=size.budget, spilled=size.spilled, status=status
            )
        )
    return tuple(findings)


def _ceiling(overlay: Overlay) -> CeilingFinding:
    spilled = sum(s.chars for s in overlay.spilled if s.reason == "ceiling")
    return CeilingFinding(
        chars=overlay.chars,
        ceiling=overlay.ceiling,
        spilled=spilled,
        failed=overlay.chars > overlay.ceiling or spilled > 0,
    )


def _never_recalled(overlay: Overlay, counts: Mapping[str, int]) -> tuple[NeverRecalled, ...]:
    known = {record.id: record for record in overlay.records}
    silent = {record_id for record_id, count in counts.items() if count <= 0}
    ordered = [r.id for r in overlay.records if r.id in silent] + sorted(silent - set(known))
    return tuple(
        NeverRecalled(record_id=record_id, section=section_of(known[record_id]) if record_id in known else None)
        for record_id in ordered
    )


def _stale(
    overlay: Overlay, now: datetime, stale_after: timedelta, expiring_within: timedelta
) -> tuple[StaleFinding, ...]:
    findings = []
    for record in overlay.records:
        target = record.target
        section = section_of(record)
        if isinstance(target, BackgroundTarget) and target.section == "current_state":
            age = now - record.observed_at
            if age > stale_after:
                findings.append(
                    StaleFinding(
                        record_id=record.id,
                        section=section,
                        reason="old_current_state",
                        since=record.observed_at,
                        detail=(
                            f"current state {target.key!r} was stated {age.days} days ago; refresh it with a "
                            "superseding write, or invalidate it"
                        ),
                    )
                )
        if record.expires_at is not None and record.expires_at <= now + expiring_within:
            when = f"{record.expires_at:%Y-%m-%d %H:%M} UTC"
            expired = record.expires_at <= now
            findings.append(
                StaleFinding(
                    record_id=record.id,
                    section=section,
                    reason="expired" if expired else "expiring",
                    since=record.expires_at,
                    detail=(
                        f"expired at {when} and leaves the composition; write it again if it still holds"
                        if expired
                        else f"expires at {when}; extend it with a superseding write, or let it go"
                    ),
                )
            )
    return tuple(findings)
