"""The toolbox itself: one conversation's tools, each written once as steps that the
sync and async dispatchers run."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import ValidationError

from memory_admin.errors import (
    MemoryBusyError,
    MemoryConflictError,
    MemoryLimitError,
    MemoryNotFoundError,
    MemoryScopeError,
    MemoryStoreError,
    MemoryValidationError,
)
from memory_admin.promotion import Promotion, TransitionPage
from memory_admin.records import (
    MemoryRecord,
    MemorySearchQuery,
    MemoryWriteInput,
    Provenance,
    utc_now,
    validation_problems,
)
from memory_admin.scope import Scope, ScopeMatch, canonical_scope, read_view, scope_matches, visible_to_agent
from memory_admin.steps import Steps, arun_steps, run_steps
from memory_admin.store.protocol import MemoryStore
from memory_admin.toolbox.results import (
    bounded_results,
    dumps,
    learning_item,
    not_found,
    project,
    tool_error,
)
from memory_admin.toolbox.tools import (
    DENIAL_MESSAGES,
    LEARNING_CHANGES,
    LEARNINGS_DAYS,
    MAX_TOOL_ARGUMENT_CHARS,
    TARGET_SCAN_LIMIT,
    TOOL_NAMES,
    TOOL_SOURCE,
    TOOL_SPECS,
    GetArgs,
    InvalidateArgs,
    LearningsArgs,
    ListArgs,
    MemoryPolicy,
    ReadFilters,
    SaveArgs,
    SearchArgs,
    anthropic_tools,
    memory_manual,
    openai_tools,
)

log = logging.getLogger(__name__)

# --- the toolbox ---------------------------------------------------------------------


@dataclass(frozen=True)
class StoreCall:
    """One store call a tool needs; the sync and async dispatchers run it."""

    method: Literal["get", "search", "write", "invalidate", "promotion", "corroborate", "transitions"]
    args: tuple[Any, ...]
    quiet: bool = False  # a host-side lookup, not an agent search: no search event
    options: Mapping[str, Any] = field(default_factory=dict)


ToolSteps = Steps[StoreCall, dict[str, Any]]
"""A tool written once: the store calls it needs, then its result envelope."""


class MemoryToolbox:
    """The six memory tools for one conversation, bound to one scope.

    ``scope`` is where saves go and what reads see (with visible match, the records
    shared above it too); ``agent`` is the author of saves and applies the agent
    convention to reads; ``conversation_id`` goes into every save's provenance.
    ``policy`` gates the tools. ``clock`` decides what "expired" means for
    ``memory_get`` (defaults to the current time; tests pass the store's clock).
    Nothing touches the store until a tool is called.
    """

    def __init__(
        self,
        store: MemoryStore,
        scope: Mapping[str, str],
        *,
        agent: str | None = None,
        conversation_id: str | None = None,
        policy: MemoryPolicy | None = None,
        scope_match: ScopeMatch = "visible",
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.store = store
        self.scope: Scope = canonical_scope(scope)
        self.agent = agent
        self.conversation_id = conversation_id
        self.policy = policy or MemoryPolicy()
        self.scope_match: ScopeMatch = scope_match
        self.view: Scope = read_view(self.scope, agent, scope_match)
        self.provenance = Provenance(source=TOOL_SOURCE, author=agent, conversation_id=conversation_id)
        self._clock = clock

    # --- what the host hands the model ---------------------------------------------

    def allowed_tools(self) -> list[str]:
        """The tools this policy allows, in a stable order (none when memory is off)."""
        return [name for name in TOOL_NAMES if self.policy.denial(name) is None]

    def openai_tools(self, *, strict: bool = False) -> list[dict[str, Any]]:
        return openai_tools(self.allowed_tools(), strict=strict)

    def anthropic_tools(self) -> list[dict[str, Any]]:
        return anthropic_tools(self.allowed_tools())

    def manual(self) -> str:
        return memory_manual()

    # --- dispatch --------------------------------------------------------------------

    def call(self, name: str, arguments: Mapping[str, Any] | str | None = None) -> dict[str, Any]:
        """Run tool ``name`` with the model's ``arguments`` (a dict, or the JSON string
        some APIs hand over). Always returns a JSON-serialisable dict; never raises."""
        try:
            steps = self._start(name, arguments)
            return steps if isinstance(steps, dict) else run_steps(steps, self._run)
        except Exception as exc:  # nothing escapes into the agent loop
            return self._failure(name, exc)

    async def acall(self, name: str, arguments: Mapping[str, Any] | str | None = None) -> dict[str, Any]:
        """The async twin of :meth:`call`, through the store's async methods."""
        try:
            steps = self._start(name, arguments)
            return steps if isinstance(steps, dict) else await arun_steps(steps, self._arun)
        except Exception as exc:
            return self._failure(name, exc)

    def _start(self, name: str, arguments: Mapping[str, Any] | str | None) -> ToolSteps | dict[str, Any]:
        spec = TOOL_SPECS.get(name) if isinstance(name, str) else None
        if spec is None:
            return tool_error("unknown_tool", f"There is no tool {name!r}.", tools=list(TOOL_NAMES))
        denial = self.policy.denial(name)
        if denial is not None:
            return tool_error("policy_denied", DENIAL_MESSAGES[denial], reason=denial)
        if isinstance(arguments, str):
            if len(arguments) > MAX_TOOL_ARGUMENT_CHARS:
                return tool_error(
                    "too_large",
                    f"The arguments hold {len(arguments)} characters; a memory tool takes at most "
                    f"{MAX_TOOL_ARGUMENT_CHARS}. Save one short fact at a time.",
                )
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except (RecursionError, ValueError) as exc:  # bad JSON, too deep, or a number past int limits
                return tool_error("invalid_arguments", f"Arguments are not valid JSON ({_reason(exc)}).")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, Mapping):
            return tool_error("invalid_arguments", "Arguments must be a JSON object.")
        try:
            args = spec.args.model_validate(dict(arguments))
        except ValidationError as exc:
            problems = validation_problems(exc)
            summary = "; ".join(f"{p['loc']}: {p['msg']}" for p in problems[:5])
            return tool_error("invalid_arguments", f"Invalid arguments for {name}: {summary}", problems=problems)
        handler: Callable[[Any], ToolSteps] = getattr(self, f"_{name}")
        return handler(args)

    def _run(self, call: StoreCall) -> Any:
        if call.method == "search" and call.quiet:
            return self.store.search(*call.args, emit_event=False)
        return getattr(self.store, call.method)(*call.args, **call.options)

    async def _arun(self, call: StoreCall) -> Any:
        if call.method == "search" and call.quiet:
            return await self.store.asearch(*call.args, emit_event=False)
        method: Callable[..., Coroutine[Any, Any, Any]] = getattr(self.store, "a" + call.method)
        return await method(*call.args, **call.options)

    @property
    def _learning(self) -> bool:
        """The store keeps promotion state (:class:`~memory_admin.store.protocol.PromotionMemoryStore`)."""
        return self.store.capabilities().promotion

    def _failure(self, name: str, exc: Exception) -> dict[str, Any]:
        if isinstance(exc, MemoryNotFoundError | MemoryScopeError):
            return not_found()  # never say whether the id exists elsewhere
        if isinstance(exc, MemoryValidationError):
            return tool_error("invalid_arguments", exc.message, problems=exc.problems)
        if isinstance(exc, ValidationError):  # a value the store's own models refuse
            problems = validation_problems(exc)
            summary = "; ".join(f"{p['loc']}: {p['msg']}" for p in problems)
            return tool_error("invalid_arguments", summary, problems=problems)
        if isinstance(exc, MemoryLimitError):
            return tool_error("too_large", exc.message)
        if isinstance(exc, MemoryConflictError):
            return tool_error("conflict", exc.message)
        if isinstance(exc, MemoryBusyError):
            return tool_error("busy", "Memory is busy right now; try again in a moment.", retryable=True)
        if isinstance(exc, MemoryStoreError):
            # corrupt rows, schema trouble: the host must see the details, the model must not
            log.error("memory tool %s failed: %s", name, exc.message, extra={"memory_error": exc.to_dict()})
            return tool_error("storage_error", "Memory could not be read or written; carry on without it.")
        log.exception("memory tool %s failed unexpectedly", name)
        return tool_error("internal_error", "The memory tool failed; carry on without it.")

    # --- reading helpers ---------------------------------------------------------------

    def _visible(self, record: MemoryRecord | None) -> MemoryRecord | None:
        """``record`` if the agent may see it: in its view, its agent's or shared, live."""
        if record is None:
            return None
        if not scope_matches(record.scope, self.view, self.scope_match):
            return None
        if not visible_to_agent(record.scope, self.agent) or not record.is_live(self._clock()):
            return None
        return record

    def _query(self, args: ReadFilters, query: str | None) -> MemorySearchQuery:
        return MemorySearchQuery(
            scope=self.view,
            scope_match=self.scope_match,
            query=query,
            kinds=tuple(args.kinds) if args.kinds is not None else None,
            tags=tuple(args.tags) if args.tags is not None else None,
            keys=tuple(args.keys) if args.keys is not None else None,
            key_match=args.key_match,
            agent=self.agent,
            limit=args.limit,
        )

    def _results(self, hits: list[Any]) -> dict[str, Any]:
        items = [project(hit.record, self.scope) for hit in hits]
        return bounded_results(items, self.policy.max_result_chars)

    # --- the tools -------------------------------------------------------------------

    def _memory_search(self, args: SearchArgs) -> ToolSteps:
        query = args.query.strip() if args.query and args.query.strip() else None
        hits = yield StoreCall("search", (self._query(args, query),))
        return self._results(hits)

    def _memory_list(self, args: ListArgs) -> ToolSteps:
        hits = yield StoreCall("search", (self._query(args, None),))
        return self._results(hits)

    def _memory_get(self, args: GetArgs) -> ToolSteps:
        record = self._visible((yield StoreCall("get", (args.id,))))
        if record is None:
            return not_found()
        item = project(record, self.scope, full=True)
        bounded = bounded_results([item], self.policy.max_result_chars)
        return {"ok": True, "memory": bounded["results"][0], "truncated": bounded["truncated"]}

    def _memory_invalidate(self, args: InvalidateArgs) -> ToolSteps:
        record = self._visible((yield StoreCall("get", (args.id,))))
        if record is None:
            return not_found()
        if record.scope != self.scope:
            return _not_writable()
        if (yield from self._guarded(record)):
            return _needs_review()
        updated: MemoryRecord = yield StoreCall("invalidate", (args.id, args.reason))
        return {"ok": True, "invalidated": updated.id}

    def _guarded(self, record: MemoryRecord) -> Steps[StoreCall, bool]:
        """Whether ``record`` is a guarded-tier learning a person approved: only a person
        takes it back out (the removal bar equals the addition bar)."""
        if record.target is None or not self._learning:
            return False
        found: Promotion | None = yield StoreCall("promotion", (record.id,))
        return found is not None and found.state == "promoted" and found.tier == "guarded"

    def _memory_save(self, args: SaveArgs) -> ToolSteps:
        if args.corroborates is not None:
            return (yield from self._corroborate(args.corroborates))
        if args.supersedes is not None:
            old = self._visible((yield StoreCall("get", (args.supersedes,))))
            if old is None:
                return not_found()
            if old.scope != self.scope:
                return _not_writable()
            if (yield from self._guarded(old)):
                return _needs_review()
        if args.target is not None:
            holder = yield from self._target_holder(args)
            if holder is not None:
                return self._conflict(holder, args)
        write = MemoryWriteInput(
            scope=self.scope,
            kind=args.kind,
            content=args.content,
            provenance=self.provenance,
            key=args.key,
            tags=tuple(args.tags),
            target=args.target,
            payload=args.payload,
            supersedes=args.supersedes,
        )
        [record] = yield StoreCall("write", ([write],))
        return {"ok": True, "saved": project(record, self.scope), "superseded": record.supersedes}

    def _target_holder(self, args: SaveArgs) -> Steps[StoreCall, MemoryRecord | None]:
        limit = min(TARGET_SCAN_LIMIT, self.store.capabilities().max_limit)
        query = MemorySearchQuery(scope=self.scope, limit=limit, targeted=True)
        hits = yield StoreCall("search", (query,), quiet=True)
        for hit in hits:
            record: MemoryRecord = hit.record
            if record.scope == self.scope and record.target == args.target and record.id != args.supersedes:
                return record
        return None

    def _corroborate(self, record_id: str) -> ToolSteps:
        """This conversation confirms a memory: its provenance joins the record's supports
        (recurrence evidence for promotion); nothing new is saved."""
        if not self._learning:
            return tool_error("unsupported", "This memory cannot record confirmations; save a new memory instead.")
        record = self._visible((yield StoreCall("get", (record_id,))))
        if record is None:
            return not_found()
        confirmed: MemoryRecord = yield StoreCall("corroborate", (record_id, self.provenance))
        return {"ok": True, "corroborated": project(confirmed, self.scope), "supports": len(confirmed.supports)}

    def _conflict(self, holder: MemoryRecord, args: SaveArgs) -> dict[str, Any]:
        existing: dict[str, Any] = {"id": holder.id}
        if self.policy.agent_reads:
            existing = project(holder, self.scope)
        resolutions = [
            {
                "action": "supersede",
                "how": f"call memory_save again with the same arguments and supersedes={holder.id!r}",
            },
            {"action": "rekey", "how": "call memory_save again with a different target (or none)"},
        ]
        if self._learning:
            resolutions.insert(
                1,
                {
                    "action": "corroborate",
                    "how": f"if this conversation confirms what it says, call memory_save again with "
                    f"corroborates={holder.id!r} (nothing new is saved)",
                },
            )
        return tool_error(
            "conflict",
            "A memory already holds this target; nothing was saved. Supersede it, confirm it, "
            "or choose another target.",
            existing=existing,
            resolutions=resolutions,
        )

    def _memory_learnings(self, args: LearningsArgs) -> ToolSteps:
        if not self._learning:
            return {"ok": True, "results": [], "count": 0, "truncated": False, "omitted": 0}
        since = args.since or self._clock() - timedelta(days=LEARNINGS_DAYS)
        changes = list(args.changes or LEARNING_CHANGES)
        page: TransitionPage = yield StoreCall(
            "transitions",
            (self.view,),
            options={
                "since": since,
                "states": changes,
                "scope_match": self.scope_match,
                "agent": self.agent,
                "limit": args.limit,
            },
        )
        items = []
        for transition in page.transitions:
            record: MemoryRecord | None = yield StoreCall("get", (transition.record_id,))
            items.append(learning_item(transition, record, self.scope))
        result = bounded_results(items, self.policy.max_result_chars)
        return {**result, "since": since.isoformat(), "more": page.next_cursor is not None}


def _reason(exc: Exception) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return exc.msg
    return "nested too deeply" if isinstance(exc, RecursionError) else "a number is too long"


def _needs_review() -> dict[str, Any]:
    return tool_error(
        "needs_review",
        "A person approved this learning into your configuration; only a person can take it back out. "
        "Tell the user what is wrong with it, and they can review it.",
    )


def _not_writable() -> dict[str, Any]:
    return tool_error(
        "not_writable",
        "That memory is shared beyond this conversation and cannot be changed from here. Save a new memory instead.",
    )


def run_tool(toolbox: MemoryToolbox, name: str, arguments: Mapping[str, Any] | str | None = None) -> str:
    """:meth:`MemoryToolbox.call`, answered as the compact JSON string a tool result carries."""
    return dumps(toolbox.call(name, arguments))


async def arun_tool(toolbox: MemoryToolbox, name: str, arguments: Mapping[str, Any] | str | None = None) -> str:
    return dumps(await toolbox.acall(name, arguments))
