"""The store benchmark's workload, shared by its two targets: SQLite (:mod:`bench.store`)
and PostgreSQL (:mod:`bench.store_postgres`).

The searches a size is measured with, the store's operations timed with the event log on
and off (interleaved), and the same operations done by hand against the same schema: a
backend's :class:`RawBaseline`. Both targets import it; neither imports the other.
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, Protocol

from bench.corpus import Corpus, batched
from bench.measure import progress, timed, timed_pair
from memory_admin.recall import assemble_recall
from memory_admin.store.base import BaseMemoryStore

BATCH = 1000
"""Records per write while ingesting."""
SEED = 11
"""The searches' seed: every size, backend and run asks the same questions."""
EVENT_LOG_OPERATIONS = ("user_search", "tenant_search", "listing", "recall")

Cases = Sequence[tuple[dict[str, str], str]]
"""(scope, query) of each measured search."""


def search_cases(corpus: Corpus, queries: int) -> tuple[Cases, Cases]:
    """``queries`` user-scoped searches (an active user's scope) and as many tenant-wide ones."""
    rng = random.Random(SEED)
    user_cases = [(corpus.active_user_scope(rng), corpus.query(rng)) for _ in range(queries)]
    tenant_cases = [({"tenant": corpus.tenant(rng)}, corpus.query(rng)) for _ in range(queries)]
    return user_cases, tenant_cases


def ingest_pair(
    write: Callable[[list[dict[str, Any]]], object],
    quiet_write: Callable[[list[dict[str, Any]]], object],
    corpus: Corpus,
    size: int,
) -> tuple[float, float]:
    """Records per second for two stores taking the same batches, alternately (which goes
    first alternates too): the event log on, and off."""
    spent = [0.0, 0.0]
    started = time.perf_counter()
    done = 0
    for index, batch in enumerate(batched(corpus.inputs(size), BATCH)):
        for which in (0, 1) if index % 2 == 0 else (1, 0):
            began = time.perf_counter()
            (write, quiet_write)[which](batch)
            spent[which] += time.perf_counter() - began
        done += len(batch)
        progress("store ingest", done, size, started)
    return size / spent[0], size / spent[1]


def event_log_calls(
    store: BaseMemoryStore, user_cases: Cases, tenant_cases: Cases
) -> dict[str, list[Callable[[], object]]]:
    """The operations that log an event, through ``store``: what users run, for the
    events-on / events-off comparison. Recall is assembled at its default budget."""

    def search(scope: dict[str, str], text: str) -> Callable[[], object]:
        return lambda: store.search({"scope": scope, "query": text, "limit": 10})

    return {
        "user_search": [search(s, q) for s, q in user_cases],
        "tenant_search": [search(s, q) for s, q in tenant_cases],
        "listing": [partial(store.search, {"scope": s, "limit": 10}) for s, _ in user_cases],
        "recall": [partial(assemble_recall, store, s, q) for s, q in user_cases],
    }


def measure_event_log(
    result: dict[str, Any], store: BaseMemoryStore, quiet: BaseMemoryStore, user_cases: Cases, tenant_cases: Cases
) -> None:
    """Every event-logging operation through ``store`` (event log on) and ``quiet``
    (off), interleaved: ``result[name]`` and ``result["off_" + name]``."""
    on, off = event_log_calls(store, user_cases, tenant_cases), event_log_calls(quiet, user_cases, tenant_cases)
    for name in EVENT_LOG_OPERATIONS:
        sys.stderr.write(f"  measuring {name}, event log on and off ({len(on[name])} calls each)\n")
        result[name], result[f"off_{name}"] = timed_pair(on[name], off[name])
    store.flush_events()
    result["events_dropped"] = store.event_log_stats().dropped


class RawBaseline(Protocol):
    """The hand-written operations a backend's baseline answers."""

    def search(self, scope: dict[str, str], query: str, limit: int = 10) -> object: ...
    def listing(self, scope: dict[str, str], limit: int = 10) -> object: ...
    def get(self, key: Any) -> object: ...


def measure_against_raw(
    result: dict[str, Any],
    stores: tuple[BaseMemoryStore, BaseMemoryStore],
    raw: RawBaseline,
    cases: tuple[Cases, Cases],
    gets: tuple[Sequence[str], Sequence[Any]],
) -> None:
    """The store's operations (event log on and off, interleaved) and the same done by
    hand: ``cases`` are the user- and tenant-scoped searches, ``gets`` the record ids and
    the baseline's keys for them."""
    store, quiet = stores
    user_cases, tenant_cases = cases
    ids, keys = gets
    measure_event_log(result, store, quiet, user_cases, tenant_cases)
    by_hand: dict[str, list[Callable[[], object]]] = {
        "user_search": [partial(raw.search, s, q) for s, q in user_cases],
        "tenant_search": [partial(raw.search, s, q) for s, q in tenant_cases],
        "listing": [partial(raw.listing, s) for s, _ in user_cases],
        "get": [partial(raw.get, k) for k in keys],
    }
    sys.stderr.write(f"  measuring get ({len(ids)} calls)\n")
    result["get"] = timed([partial(store.get, i) for i in ids])
    for name, calls in by_hand.items():
        sys.stderr.write(f"  measuring raw {name} ({len(calls)} calls)\n")
        result[f"raw_{name}"] = timed(calls)
