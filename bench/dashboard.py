"""Dashboard benchmark: server time of the pages people use, on a big memory file.

    python -m bench.dashboard --records 1000000 [--out docs/benchmarks/dashboard.md]

Builds (or reuses) a SQLite memory file of ``--records`` synthetic records
(:mod:`bench.corpus`) plus 10-deep supersede chains and an agent's learnings (10,000
candidates in every state of the review and 1,000 promoted records under one registered
composition), then requests each page through Django's test client — the whole server
path: middleware, session and grant lookup, form parsing, store calls, template
rendering — and reports percentiles against the targets of the dashboard issue and of
the review pages. The file is kept for the next run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import sqlite3
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from bench.corpus import Corpus
from bench.measure import command, ingest, timed, write_report
from memory_admin.composition import AgentComposition
from memory_admin.promotion import Decision, PromotionState, TierName
from memory_admin.store import MemoryStore, SqliteMemoryStore
from memory_admin.store import sqlite as sqlite_store

TARGETS_MS: dict[str, tuple[str, float | None]] = {
    "browse_user_scope": ("p95", 100.0),
    "browse_tenant_scope": ("p95", 100.0),
    "browse_next_page": ("p95", 100.0),
    "search_user_scope": ("p95", 100.0),
    "search_tenant_scope": ("p95", 100.0),
    "facets_tenant": ("p95", 300.0),
    "facets_all_tenants": ("p95", 300.0),
    "scope_summary": ("p95", None),  # no target in the issue: reported, not judged
    "record_10_deep_chain": ("p95", 50.0),
    "learnings_inbox": ("p95", 100.0),
    "learnings_waiting": ("p95", 100.0),
    "learnings_next_page": ("p95", 100.0),
    "learning_detail": ("p95", 100.0),
    "compositions": ("p95", 100.0),
    "composition": ("p95", 100.0),
    "composition_as_of": ("p95", 100.0),
    "composition_diff": ("p95", 100.0),
    "learned": ("p95", 100.0),
}
CHAINS = 50
CHAIN_DEPTH = 10


# --- the corpus -------------------------------------------------------------------------


def build_corpus(store: MemoryStore, records: int, *, seed: int = 7) -> None:
    """The one place the synthetic corpus is written (switch generators here)."""
    ingest("corpus", store.write, Corpus().inputs(records, seed=seed), records)


def build_chains(store: MemoryStore, *, count: int = CHAINS, depth: int = CHAIN_DEPTH) -> list[str]:
    """``count`` keyed preferences, each rewritten ``depth`` times; returns every version's id."""
    rng = random.Random(3)
    corpus = Corpus()
    ids: list[str] = []
    for number in range(count):
        scope = corpus.active_user_scope(rng)
        for version in range(depth):
            [record] = store.write(
                [
                    {
                        "scope": scope,
                        "kind": "preference",
                        "key": f"bench.chain.{number}",
                        "content": f"Version {version}: {corpus.sentence(rng)}",
                        "provenance": {"source": "bench", "run_id": f"chain-{number}"},
                    }
                ]
            )
            ids.append(record.id)
    return ids


# --- an agent's learnings ------------------------------------------------------------------

LEARNING_CANDIDATES = 10_000
LEARNING_PROMOTED = 1_000
DOMAINS = ("triage", "billing", "refunds", "deploys", "access")
LEARNING_COMPOSITION = AgentComposition.model_validate(
    {
        "name": "bench-support",
        "persona": "You are the benchmark tenant's support agent.",
        "mission": "Answer from what you know; say what you do not.",
        "background": {"conventions": {"tone": "Short answers first, details after."}},
        "judgments": [
            {"domain": domain, "heuristics": [f"Read the whole {domain} thread first."]} for domain in DOMAINS
        ],
        "recovery": ["When a tool fails twice, hand over to a person."],
    }
)
CANDIDATE_STATES: tuple[tuple[PromotionState, TierName, str], ...] = (
    ("held", "earned", "heuristics"),
    ("held", "earned", "heuristics"),
    ("held", "earned", "heuristics"),
    ("pending_review", "guarded", "constraints"),
    ("pending_review", "guarded", "escalation_triggers"),
    ("conflict", "guarded", "constraints"),
    ("candidate", "earned", "heuristics"),
    ("held", "earned", "heuristics"),
    ("candidate", "guarded", "constraints"),
    ("held", "earned", "heuristics"),
)
"""The states the candidates are left in, round robin: most held for recurrence, a fifth
waiting for a person, some in conflict, some the gate chain has not seen yet."""


def learning_scope(corpus: Corpus) -> dict[str, str]:
    """The agent whose learnings the review pages show: the support agent of the first
    tenant (a tenant of about 100,000 records)."""
    return {"tenant": corpus.tenant(random.Random(11)), "agent": "support"}


def build_learnings(store: SqliteMemoryStore, scope: dict[str, str]) -> dict[str, Any]:
    """:data:`LEARNING_PROMOTED` promoted learnings (background keys, heuristics, recovery
    steps) and :data:`LEARNING_CANDIDATES` candidates in the states of
    :data:`CANDIDATE_STATES`, decided as the gate chain would, hours apart; the
    composition registered for ``scope``."""
    rng = random.Random(5)
    corpus = Corpus()
    store.register_composition(LEARNING_COMPOSITION, scope)

    def learning(n: int, target: dict[str, str]) -> dict[str, Any]:
        return {
            "scope": scope,
            "kind": "episode",
            "content": corpus.sentence(rng),
            "provenance": {"source": "bench-agent", "conversation_id": f"c-{n}"},
            "target": target,
        }

    sections = ("team_context", "project_context", "conventions", "current_state")
    promoted_inputs = [
        learning(n, {"primitive": "background", "section": sections[n % 4], "key": f"fact_{n}"})
        if n % 3 == 0
        else learning(n, {"primitive": "judgment", "domain": DOMAINS[n % 5], "slot": "heuristics"})
        if n % 3 == 1
        else learning(n, {"primitive": "recovery"})
        for n in range(LEARNING_PROMOTED)
    ]
    candidate_inputs = [
        learning(
            LEARNING_PROMOTED + n,
            {"primitive": "judgment", "domain": DOMAINS[n % 5], "slot": CANDIDATE_STATES[n % 10][2]},
        )
        for n in range(LEARNING_CANDIDATES)
    ]
    written: list[str] = []
    ingest(
        "learnings",
        lambda batch: written.extend(r.id for r in store.write(batch)),
        promoted_inputs + candidate_inputs,
        LEARNING_PROMOTED + LEARNING_CANDIDATES,
    )
    promoted, candidates = written[:LEARNING_PROMOTED], written[LEARNING_PROMOTED:]

    def decide(decisions: list[Decision]) -> None:
        for start in range(0, len(decisions), 1000):
            outcomes = store.decide(decisions[start : start + 1000])
            refused = [o.message for o in outcomes if not o.applied]
            if refused:
                raise SystemExit(f"a benchmark decision was refused: {refused[0]}")

    tiers: dict[int, TierName] = {0: "auto", 1: "earned", 2: "guarded"}
    decide(
        [
            Decision(
                record_id=record_id,
                state="promoted",
                by="gate" if n % 3 != 2 else "person",
                actor="gate" if n % 3 != 2 else "lena",
                tier=tiers[n % 3],
                reason="bench",
                composition_version=LEARNING_COMPOSITION.version,
            )
            for n, record_id in enumerate(promoted)
        ]
    )
    decide(
        [
            Decision(
                record_id=record_id,
                state=CANDIDATE_STATES[n % 10][0],
                by="gate",
                actor="gate",
                tier=CANDIDATE_STATES[n % 10][1],
                reason="bench",
                evidence={"tier": {"passed": True, "detail": "bench"}},
                composition_version=LEARNING_COMPOSITION.version,
            )
            for n, record_id in enumerate(candidates)
            if CANDIDATE_STATES[n % 10][0] != "candidate"
        ]
    )
    waiting = [rid for n, rid in enumerate(candidates) if CANDIDATE_STATES[n % 10][0] == "pending_review"]
    decided = max(t.at for t in store.promotion_history(candidates[-1]) + store.promotion_history(promoted[-1]))
    return {"scope": scope, "waiting": waiting[:200], "decided_at": decided.isoformat()}


def schema_fingerprint() -> str:
    """Changes whenever the SQLite schema does, so a file built by older code is rebuilt."""
    return hashlib.sha256("\n".join(sqlite_store.MIGRATIONS).encode()).hexdigest()[:16]


def open_or_build(path: Path, records: int) -> tuple[dict[str, Any], float | None]:
    """The memory file's manifest (built now if missing, of another size or schema) and the build time."""
    manifest_path = Path(f"{path}.json")
    if manifest_path.exists() and path.exists():
        manifest: dict[str, Any] = json.loads(manifest_path.read_text())
        if manifest.get("records") == records and manifest.get("schema") == schema_fingerprint():
            sys.stderr.write(f"Reusing {path} ({records:,} records).\n")
            if "learnings" not in manifest:  # a file built before the review pages: add them
                with SqliteMemoryStore(path, persist_events=False, synchronous="NORMAL") as store:
                    manifest["learnings"] = build_learnings(store, learning_scope(Corpus()))
                    store.optimize()
                manifest_path.write_text(json.dumps(manifest))
            return manifest, None
    for file in (*sqlite_store.store_files(path), Path(f"{path}.json")):
        file.unlink(missing_ok=True)
    sys.stderr.write(f"Building {path} with {records:,} records (kept for the next run)…\n")
    started = time.perf_counter()
    with SqliteMemoryStore(path, persist_events=False, synchronous="NORMAL") as store:
        build_corpus(store, records)
        chain_ids = build_chains(store)
        learnings = build_learnings(store, learning_scope(Corpus()))
        store.optimize()  # merge the index, checkpoint and truncate the WAL: the file holds everything
    seconds = time.perf_counter() - started
    manifest = {
        "records": records,
        "schema": schema_fingerprint(),
        "chain_ids": chain_ids,
        "learnings": learnings,
        "build_seconds": round(seconds, 1),
    }
    manifest_path.write_text(json.dumps(manifest))
    return manifest, seconds


# --- measuring ----------------------------------------------------------------------------


@dataclass
class Scenario:
    """One row: ``calls`` each make one request (or one library call); a failed one ends the run."""

    name: str
    what: str
    calls: list[Callable[[], None]]


def scenarios(
    manifest: dict[str, Any], samples: int, get: Callable[[str], Any], store: SqliteMemoryStore
) -> list[Scenario]:
    corpus = Corpus()
    rng = random.Random(11)

    def browse(**params: str) -> str:
        return "/?" + urlencode(params)

    users = [corpus.active_user_scope(rng) for _ in range(samples)]
    tenants = [corpus.tenant(rng) for _ in range(samples)]
    user_text = [",".join(f"{k}={v}" for k, v in sorted(s.items())) for s in users]
    next_pages = []
    for tenant in tenants[: max(10, samples // 4)]:
        first = get(browse(scope=f"tenant={tenant}", invalidated="1")).content.decode()
        cursor = first.split("after=", 1)[1].split('"', 1)[0].split("&", 1)[0] if "after=" in first else ""
        next_pages.append(browse(scope=f"tenant={tenant}", invalidated="1", after=cursor))
    chain_ids: list[str] = manifest["chain_ids"]
    heads = [chain_ids[i] for i in range(CHAIN_DEPTH - 1, len(chain_ids), CHAIN_DEPTH)]
    middles = [chain_ids[i] for i in range(CHAIN_DEPTH // 2, len(chain_ids), CHAIN_DEPTH)]
    record_ids = [*heads, *middles]

    def page(url: str) -> Callable[[], None]:
        def call() -> None:
            if (status := get(url).status_code) != 200:
                raise SystemExit(f"{url}: a request answered {status}")

        return call

    def pages(urls: list[str]) -> list[Callable[[], None]]:
        return [page(url) for url in urls]

    def facets(tenant: str) -> Callable[[], None]:
        def call() -> None:
            if not store.scope_facets({"tenant": tenant}, values_per_key=20):
                raise SystemExit(f"scope_facets(tenant={tenant}) found no facets")

        return call

    learnings = manifest["learnings"]
    agent_text = ",".join(f"{k}={v}" for k, v in sorted(learnings["scope"].items()))
    tenant_text = f"tenant={learnings['scope']['tenant']}"
    inbox = "/learnings/?" + urlencode({"scope": tenant_text})
    first_inbox = get(inbox).content.decode()
    inbox_cursor = first_inbox.split("after=", 1)[1].split('"', 1)[0].split("&", 1)[0]
    # a minute after the newest promotion: a replay of the whole promotion history
    as_of = (datetime.fromisoformat(learnings["decided_at"]) + timedelta(minutes=1)).strftime("%Y-%m-%d %H:%M")
    waiting: list[str] = learnings["waiting"]

    return [
        Scenario(
            "browse_user_scope",
            "`/?scope=tenant=…,user=…`: newest first, with the scope's facets",
            pages([browse(scope=s) for s in user_text]),
        ),
        Scenario(
            "browse_tenant_scope",
            "`/?scope=tenant=…`: newest first, with the tenant's facets",
            pages([browse(scope=f"tenant={t}") for t in tenants]),
        ),
        Scenario(
            "browse_next_page",
            "`/?scope=tenant=…&invalidated=1&after=<cursor>`: keyset page 2",
            pages(next_pages),
        ),
        Scenario(
            "search_user_scope",
            "`/?scope=tenant=…,user=…&q=<2–4 words>`",
            pages([browse(scope=s, q=corpus.query(rng)) for s in user_text]),
        ),
        Scenario(
            "search_tenant_scope",
            "`/?scope=tenant=…&q=<2–4 words>`",
            pages([browse(scope=f"tenant={t}", q=corpus.query(rng)) for t in tenants]),
        ),
        Scenario(
            "facets_tenant",
            "`scope_facets(tenant=…)`: the facet panel's store call alone",
            [facets(t) for t in tenants],
        ),
        Scenario(
            "facets_all_tenants",
            "`/` without a scope: the admin's tenant picker (facets of every stored scope)",
            pages(["/"] * max(10, samples // 4)),
        ),
        Scenario(
            "scope_summary",
            "`/scopes/?scope=tenant=…`: counts by kind and state, profile tier, recent writes",
            pages([f"/scopes/?scope=tenant={t}" for t in tenants]),
        ),
        Scenario(
            "record_10_deep_chain",
            "`/records/<id>/` of a version in a 10-deep chain",
            pages([f"/records/{i}/" for i in (record_ids * samples)[:samples]]),
        ),
        Scenario(
            "learnings_inbox",
            "`/learnings/?scope=tenant=…`: counts per state, a page of 25 with evidence, gates, fit and pins",
            pages([inbox] * samples),
        ),
        Scenario(
            "learnings_waiting",
            "`/learnings/?scope=tenant=…&state=pending_review`: the learnings waiting for a person",
            pages(["/learnings/?" + urlencode({"scope": tenant_text, "state": "pending_review"})] * samples),
        ),
        Scenario(
            "learnings_next_page",
            "`/learnings/?scope=tenant=…&after=<cursor>`: keyset page 2",
            pages([inbox + "&" + urlencode({"after": inbox_cursor})] * samples),
        ),
        Scenario(
            "learning_detail",
            "`/learnings/<id>/` of a guarded candidate: evidence, gates, its effect on the prompt (two overlays "
            "of 1,000 promoted, compared)",
            pages([f"/learnings/{i}/" for i in (waiting * samples)[:samples]]),
        ),
        Scenario(
            "compositions",
            "`/compositions/?scope=tenant=…`: the registered compositions",
            pages(["/compositions/?" + urlencode({"scope": tenant_text})] * samples),
        ),
        Scenario(
            "composition",
            "`/compositions/prompt/?scope=…`: the composed prompt with 1,000 promoted, overlay and lint reports",
            pages(["/compositions/prompt/?" + urlencode({"scope": agent_text})] * samples),
        ),
        Scenario(
            "composition_as_of",
            "`/compositions/prompt/?scope=…&as_of=…`: a replay from the promotion history",
            pages(["/compositions/prompt/?" + urlencode({"scope": agent_text, "as_of": as_of})] * samples),
        ),
        Scenario(
            "composition_diff",
            "`/compositions/diff/?scope=…&from_time=…`: the prompt then against now",
            pages(["/compositions/diff/?" + urlencode({"scope": agent_text, "from_time": as_of})] * samples),
        ),
        Scenario(
            "learned",
            "`/learned/?scope=tenant=…`: promotions and demotions over time, chart and a page of the table",
            pages(["/learned/?" + urlencode({"scope": tenant_text})] * samples),
        ),
    ]


WARMUP = 5
"""Requests of each row run untimed first; they are timed again with the rest."""


def run(path: Path, records: int, samples: int) -> dict[str, Any]:
    manifest, built = open_or_build(path, records)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_admin.dashboard.settings.test")
    import django

    django.setup()
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.test import Client
    from django.test.utils import override_settings

    from memory_admin.dashboard.settle import settle
    from memory_admin.dashboard.stores import get_store, reset_stores

    # no setup_test_environment(): its template instrumentation is not server time
    call_command("migrate", verbosity=0, interactive=False)
    client = Client()
    client.force_login(User.objects.create_superuser("bench", password="bench-only"))
    settle()  # as `memory-admin serve` settles each worker once its application is loaded
    results: dict[str, Any] = {
        "records": records,
        "samples": samples,
        "build_seconds": built,
        "load_before": os.getloadavg()[0],
        "scenarios": {},
    }
    with override_settings(MEMORY_STORE_URL=f"sqlite:///{path.resolve()}"):
        reset_stores()
        store = get_store()
        assert isinstance(store, SqliteMemoryStore)
        for scenario in scenarios(manifest, samples, client.get, store):
            sys.stderr.write(f"  {scenario.name}: {len(scenario.calls)} requests\n")
            results["scenarios"][scenario.name] = {
                "what": scenario.what,
                "n": len(scenario.calls),
                **timed(scenario.calls, warmup=scenario.calls[:WARMUP], nearest=True),
            }
        reset_stores()
    results["load_after"] = os.getloadavg()[0]
    return results


def report(results: dict[str, Any], command_line: str) -> str:
    lines = [
        "# Dashboard benchmark",
        "",
        f"Command: `{command_line}`",
        "",
        f"Machine: {os.cpu_count()} cores, Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}, "
        f"{platform.system()} {platform.machine()}.",
        f"Memory file: {results['records']:,} synthetic records (`bench.corpus`: 10 tenants × 1,000 "
        f"users, skewed activity) plus {CHAINS} supersede chains {CHAIN_DEPTH} versions deep and an agent's "
        f"{LEARNING_CANDIDATES:,} candidates and {LEARNING_PROMOTED:,} promoted learnings under one composition"
        + (
            f"; built in {results['build_seconds']:.0f} s."
            if results["build_seconds"]
            else "; reused from an earlier run."
        ),
        "",
        "Server time per request through Django's test client (middleware, session, grants, form, store, "
        f"template), signed in as an admin; {results['samples']} requests per row after {WARMUP} warm-up requests, "
        "each with a different scope or query. Load average (1 min) "
        f"{results['load_before']:.2f} before the measurements and {results['load_after']:.2f} after: on a shared "
        "2-core machine other processes' CPU shows up in the tail percentiles.",
        "",
        "| page | what | n | p50 ms | p95 ms | p99 ms | max ms | target | |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- | --- |",
    ]
    for name, row in results["scenarios"].items():
        stat, limit = TARGETS_MS[name]
        target = "—" if limit is None else f"{stat} ≤ {limit:.0f}"
        ok = "" if limit is None else ("✅" if row[stat] <= limit else "❌")
        lines.append(
            f"| {name} | {row['what']} | {row['n']} | {row['p50']:.1f} | {row['p95']:.1f} | {row['p99']:.1f} | "
            f"{row['max']:.1f} | {target} | {ok} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--path", type=Path, help="memory file (default: var/bench/dashboard-<records>.sqlite3)")
    parser.add_argument("--samples", type=int, default=200, help="requests per page")
    parser.add_argument("--out", type=Path, help="also write the markdown report here")
    args = parser.parse_args(argv)
    path = args.path or Path("var/bench") / f"dashboard-{args.records}.sqlite3"
    path.parent.mkdir(parents=True, exist_ok=True)
    results = run(path, args.records, args.samples)
    text = report(results, command("bench.dashboard", argv))
    sys.stdout.write(text)
    write_report(args.out, text)
    failed = [
        name
        for name, row in results["scenarios"].items()
        if (limit := TARGETS_MS[name][1]) is not None and row[TARGETS_MS[name][0]] > limit
    ]
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
