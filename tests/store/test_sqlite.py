"""The SQLite backend: the whole conformance kit, plus what only a file can get wrong."""

from __future__ import annotations

import json
import re
import sqlite3
import time
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_admin.conformance import FakeClock, MemoryStoreConformance
from memory_admin.conformance.base import contents
from memory_admin.embed import Embedder
from memory_admin.errors import MemoryStoreError, SchemaVersionError
from memory_admin.records import MemoryRecord
from memory_admin.store import FullMemoryStore, InMemoryMemoryStore, SqliteMemoryStore, open_store, store_file
from memory_admin.store.ranking import record_text
from memory_admin.store.sql.dialect import id_key
from memory_admin.store.sqlite import MIGRATIONS, SCHEMA_VERSION, terms
from memory_admin.tokenize import TERMS_IDENTITY, tokenize, words

U1 = {"tenant": "acme", "user": "u1"}
PROV = {"source": "test"}


class TestSqliteStore(MemoryStoreConformance):
    CORRUPTIONS = (
        *MemoryStoreConformance.CORRUPTIONS,
        ("content", "gardens \x00 row"),
        ("created_at", "yesterday"),
    )

    def make_store(self, clock: FakeClock, *, embedder: Embedder | None = None) -> SqliteMemoryStore:
        return SqliteMemoryStore(self.tmp_path / "memory.sqlite3", clock=clock, embedder=embedder)

    def open_again(self, store: FullMemoryStore, *, embedder: Embedder | None = None) -> FullMemoryStore:
        assert isinstance(store, SqliteMemoryStore)
        return SqliteMemoryStore(store.path, embedder=embedder)

    def corrupt_row(self, store: FullMemoryStore, record_id: str, column: str, value: str) -> bool:
        assert isinstance(store, SqliteMemoryStore)
        # the FTS index follows content edits (a trigger), so the row still matches its words
        with closing(raw(store.path)) as conn:
            conn.execute(f"UPDATE memory_records SET {column} = ? WHERE id = ?", (value, id_key(record_id)))
        return True


def write_one(store: SqliteMemoryStore, content: str, **extra: Any) -> str:
    return store.write([{"scope": U1, "kind": "fact", "content": content, "provenance": PROV, **extra}])[0].id


def raw(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    terms.register(conn)  # the index's triggers compute its terms in Python
    return conn


# --- file, journal and schema --------------------------------------------------------


def test_file_uses_wal_and_the_current_schema(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    SqliteMemoryStore(path).close()
    conn = raw(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == len(MIGRATIONS)


def test_an_older_file_migrates_in_place(tmp_path: Path) -> None:
    """A file written by the first release (schema 1, rows as that release wrote them)
    opens in the current one, which migrates it in place and finds everything."""
    from memory_admin.store.sql.rows import scope_tokens
    from memory_admin.store.sqlite.schema import statements as _statements

    path = tmp_path / "memory.sqlite3"
    conn = raw(path)
    conn.execute("PRAGMA journal_mode = WAL")
    for statement in _statements(MIGRATIONS[0]):
        conn.execute(statement)
    conn.execute("PRAGMA user_version = 1")
    conn.execute(
        "INSERT INTO memory_scopes (scope_id, scope, tenant, n_pairs, fts_tokens, n_records) VALUES (1, ?, ?, 2, ?, 1)",
        ('{"tenant":"acme","user":"u1"}', "acme", scope_tokens(U1, 1)),
    )
    conn.executemany("INSERT INTO memory_scope_pairs VALUES (1, ?, ?)", [("tenant", "acme"), ("user", "u1")])
    conn.execute(
        "INSERT INTO memory_records (rid, id, scope_id, kind, content, source, created_at) "
        "VALUES (1, 'mem_legacy', 1, 'preference', 'written by the first release', 'v1', 1767225600000000)"
    )
    conn.execute(
        "INSERT INTO memory_fts (rowid, content, tags, meta) SELECT rid, content, tags, meta FROM memory_fts_source"
    )
    conn.close()

    current = SqliteMemoryStore(path)
    assert current.schema_version() == SCHEMA_VERSION
    record = current.get("mem_legacy")
    assert record is not None and record.provenance.source == "v1"
    assert [h.record.id for h in current.search({"scope": U1, "query": "release"})] == ["mem_legacy"]
    assert [h.record.id for h in current.search({"scope": U1, "query": "released"})] == ["mem_legacy"], "stemmed"
    assert [h.record.id for h in current.search({"scope": U1, "query": "January 2026"})] == ["mem_legacy"], "dated"
    assert current.count_records(U1).by_kind["preference"] == 1, "counters were backfilled"
    assert current.query_events({"types": ["agent.memory.search"]}), "the event table works"
    current.close()


def test_a_newer_file_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    SqliteMemoryStore(path).close()
    raw(path).execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    before = path.read_bytes()
    with pytest.raises(SchemaVersionError) as info:
        SqliteMemoryStore(path)
    assert info.value.found == SCHEMA_VERSION + 1
    assert "Upgrade memory_admin" in info.value.message
    assert path.read_bytes() == before


def test_not_a_database_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("these are not the records you are looking for\n" * 200)
    with pytest.raises(MemoryStoreError, match="not a SQLite memory file"):
        SqliteMemoryStore(path)


def test_open_store_urls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    absolute = tmp_path / "a.sqlite3"
    store = open_store(f"sqlite:///{absolute}")
    assert isinstance(store, SqliteMemoryStore) and store.path == absolute
    store.close()
    monkeypatch.setenv("MEMORY_STORE_URL", f"sqlite:///{tmp_path / 'env.sqlite3'}")
    from_env = open_store()
    assert isinstance(from_env, SqliteMemoryStore) and from_env.path == tmp_path / "env.sqlite3"
    from_env.close()
    monkeypatch.delenv("MEMORY_STORE_URL")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    default = open_store()
    assert isinstance(default, SqliteMemoryStore)
    assert default.path == tmp_path / "state" / "memory_admin" / "memory.sqlite3"
    default.close()
    with pytest.raises(MemoryStoreError, match="Unknown store URL scheme"):
        open_store("redis://localhost")
    with pytest.raises(MemoryStoreError, match="memory://"):
        SqliteMemoryStore(":memory:")


def test_store_file_is_the_file_open_store_would_open(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    absolute = tmp_path / "a b.sqlite3"
    assert store_file(f"sqlite:///{tmp_path}/a%20b.sqlite3?embedder=none") == absolute
    assert store_file(str(absolute)) == absolute
    assert store_file("sqlite:///relative/m.sqlite3") == Path("relative/m.sqlite3")
    assert store_file("memory://") is None
    assert store_file("postgresql://memory@db/memory") is None
    monkeypatch.setenv("MEMORY_STORE_URL", f"sqlite:///{tmp_path / 'env.sqlite3'}")
    assert store_file() == tmp_path / "env.sqlite3"
    assert not (tmp_path / "env.sqlite3").exists()  # naming a file opens nothing
    with pytest.raises(MemoryStoreError, match="not a SQLite URL"):
        store_file("sqlite://m.sqlite3")


# --- deleted and erased content leaves no bytes behind ------------------------------------


def file_bytes(path: Path) -> bytes:
    """The memory file and every file SQLite keeps beside it: its WAL, the event file and its WAL."""
    return b"".join(p.read_bytes() for p in (path, *path.parent.glob(f"{path.name}-*")) if p.exists())


@pytest.mark.parametrize("how", ["delete", "erase"])
def test_forgotten_content_is_gone_from_the_file_and_wal(tmp_path: Path, how: str) -> None:
    path = tmp_path / "memory.sqlite3"
    store = SqliteMemoryStore(path)
    canary = "Zyxwvcanary7731 lives at 42 Quenneville Lane"
    victim_scope = {"tenant": "acme", "user": "canaryuser5521"}
    for i in range(300):  # enough rows that the index has several segments
        write_one(store, f"ordinary memory number {i} about the weather")
    victim = store.write([{"scope": victim_scope, "kind": "fact", "content": canary, "provenance": PROV}])[0]
    assert store.search({"scope": victim_scope, "query": "lives lane"})  # leaves a search event
    for i in range(300):
        write_one(store, f"later memory number {i} about the harbour")
    markers = [b"Zyxwvcanary7731", b"zyxwvcanary7731", b"Quenneville", b"quenneville"]
    assert any(marker in file_bytes(path) for marker in markers), "the canary was written"

    if how == "delete":
        assert store.delete(victim.id)
    else:
        report = store.erase(victim_scope)
        assert report.records == 1 and report.events >= 1
        markers.append(b"canaryuser5521")

    found = [marker for marker in markers if marker in file_bytes(path)]
    assert found == []
    assert store.search({"scope": {"tenant": "acme"}, "query": "Zyxwvcanary7731"}) == []
    assert len(store.search({"scope": U1, "query": "harbour", "limit": 1000})) == 300
    assert raw(path).execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    raw(path).execute("INSERT INTO memory_fts (memory_fts) VALUES ('integrity-check')")
    store.close()


@pytest.mark.parametrize("how", ["delete", "erase"])
def test_forgotten_content_is_gone_from_the_events_that_quoted_it(tmp_path: Path, how: str) -> None:
    """A canary searched for (in its scope and tenant-wide) and recalled leaves its words
    in those events' query previews; forgetting it leaves none, in the file or the WAL."""
    from memory_admin.recall import assemble_recall

    path = tmp_path / "memory.sqlite3"
    store = SqliteMemoryStore(path)
    victim_scope = {"tenant": "acme", "user": "canaryuser5521"}
    for i in range(200):
        write_one(store, f"ordinary memory number {i} about the weather")
    victim = store.write(
        [
            {
                "scope": victim_scope,
                "kind": "fact",
                "content": "Qwertcanary9182 eats at Brasserie Vlondel",
                "provenance": PROV,
            }
        ]
    )[0]
    assert store.search({"scope": victim_scope, "query": "where does Qwertcanary9182 eat? Vlondel?"})
    assert store.search({"scope": {"tenant": "acme"}, "query": "Qwertcanary9182 Vlondel"})
    assert assemble_recall(store, victim_scope, "Book Qwertcanary9182 a table at Vlondel").report.count == 1
    store.search({"scope": U1, "query": "the weather today"})  # an event that never found the victim
    markers = [b"Qwertcanary9182", b"qwertcanary9182", b"Vlondel", b"vlondel"]
    store.flush_events()
    assert any(marker in file_bytes(path) for marker in markers), "the canary was written"

    if how == "delete":
        assert store.delete(victim.id)
    else:
        assert store.erase(victim_scope).records == 1

    assert [marker for marker in markers if marker in file_bytes(path)] == []
    events = store.query_events({"include_previews": True})
    redacted = [e.event for e in events if getattr(e.event, "redacted", False)]
    assert len(redacted) == (3 if how == "delete" else 1), "only the tenant-wide search outlives an erasure"
    assert all(victim.id in e.event.model_dump_json() for e in events if getattr(e.event, "redacted", False))
    kept = [e.event for e in events if getattr(e.event, "query_preview", None) == "the weather today"]
    assert len(kept) == 1, "events that never found the forgotten record keep their text"
    store.close()


@pytest.mark.parametrize("how", ["delete", "erase"])
def test_forgotten_learnings_leave_no_bytes_of_their_state_or_events(tmp_path: Path, how: str) -> None:
    """A promoted, corroborated, rolled-back learning: its content, the provenance of its
    corroboration and the reasons of its transitions sit in the promotion tables and in
    the promote and demote events; forgetting the record leaves none of it, anywhere."""
    path = tmp_path / "memory.sqlite3"
    store = SqliteMemoryStore(path)
    victim_scope = {"tenant": "acme", "user": "canaryuser5521"}
    for i in range(200):
        write_one(store, f"ordinary memory number {i} about the weather")
    target = {"primitive": "judgment", "domain": "triage", "slot": "heuristics"}
    victim = store.write(
        [
            {
                "scope": victim_scope,
                "kind": "episode",
                "content": "Mnbvcanary3307 wants calls",
                "provenance": PROV,
                "target": target,
            }
        ]
    )[0]
    store.corroborate(victim.id, {"conversation_id": "conv-Lkjhcanary5150"})
    store.promote(victim.id, actor="gate", by="gate", tier="earned", reason="seen by Poiucanary6262")
    store.demote(victim.id, actor="lena", reason="Asdfcanary8484 complained")
    store.flush_events()
    markers = [b"Mnbvcanary3307", b"Lkjhcanary5150", b"Poiucanary6262", b"Asdfcanary8484"]
    assert all(marker in file_bytes(path) for marker in markers), "every canary was written"

    if how == "delete":
        assert store.delete(victim.id)
    else:
        assert store.erase(victim_scope).records == 1

    assert [marker for marker in markers if marker in file_bytes(path)] == []
    assert store.promotion_history(victim.id) == []
    store.close()


@pytest.mark.parametrize("how", ["delete", "erase"])
def test_a_reader_holding_a_snapshot_makes_the_scrub_pending_not_silent(tmp_path: Path, how: str) -> None:
    """Forgetting while another connection holds an old snapshot: the records are gone at
    once, the call says within a bounded time that bytes remain (never a silent success,
    never the whole busy timeout), and scrub() finishes the job once the reader lets go."""
    from memory_admin.errors import MemoryScrubPendingError
    from memory_admin.tuning import SCRUB_WAIT_S

    path = tmp_path / "memory.sqlite3"
    store = SqliteMemoryStore(path, busy_timeout=30.0)
    victim_scope = {"tenant": "acme", "user": "canaryuser5521"}
    for i in range(50):
        write_one(store, f"ordinary memory number {i}")
    victim = store.write(
        [{"scope": victim_scope, "kind": "fact", "content": "Plokcanary4410 sails", "provenance": PROV}]
    )[0]
    store.scrub()  # the canary now lives in the main file, as after any checkpoint
    reader = sqlite3.connect(path)
    reader.execute("BEGIN")
    assert reader.execute("SELECT count(*) FROM memory_records").fetchone()[0] == 51  # holds this snapshot

    started = time.monotonic()
    forget = (lambda: store.delete(victim.id)) if how == "delete" else (lambda: store.erase(victim_scope))
    with pytest.raises(MemoryScrubPendingError) as pending:
        forget()
    assert time.monotonic() - started < SCRUB_WAIT_S + 5, "bounded, not the 30 s busy timeout"
    assert pending.value.command in pending.value.message
    if how == "erase":
        assert pending.value.report is not None and pending.value.report.records == 1
    assert store.get(victim.id) is None, "the forgetting itself committed"
    assert b"Plokcanary4410" in file_bytes(path), "the bytes the snapshot needs are still on disk"
    assert store.scrub(wait=0.2) is False

    reader.rollback()
    reader.close()
    assert store.scrub(wait=5.0) is True
    assert b"Plokcanary4410" not in file_bytes(path) and b"plokcanary4410" not in file_bytes(path)
    store.close()


# --- ranking in large scopes ---------------------------------------------------------------


def _stopword_stores(
    tmp_path: Path, *, seed: int, records: int, rare: int, common_words: tuple[int, int], rare_words: tuple[int, int]
) -> tuple[SqliteMemoryStore, InMemoryMemoryStore]:
    """The same records in a SQLite store and the in-memory reference, all in one scope:
    each a few stopwords and up to a few of ``rare`` rare words, then its own number."""
    import random

    rng = random.Random(seed)
    common = ["the", "and", "of", "memory"]
    rarities = [f"rare{i}" for i in range(rare)]
    items = []
    for n in range(records):
        words = [rng.choice(common) for _ in range(rng.randint(*common_words))]
        words += [rng.choice(rarities) for _ in range(rng.randint(*rare_words))]
        items.append({"scope": U1, "kind": "fact", "content": " ".join(words) + f" n{n}", "provenance": PROV})
    sqlite = SqliteMemoryStore(tmp_path / "m.sqlite3", persist_events=False)
    memory = InMemoryMemoryStore(persist_events=False)
    for start in range(0, len(items), 100):
        sqlite.write(items[start : start + 100])
        memory.write(items[start : start + 100])
    return sqlite, memory


def test_large_scopes_rank_exactly_while_the_budget_holds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the candidate budget, candidates are gathered rarest token first with MaxScore
    pruning; while no token exhausts the budget the page equals the exhaustive ranking."""
    from memory_admin import tuning

    monkeypatch.setattr(tuning, "CANDIDATE_BUDGET", 60)
    monkeypatch.setattr(tuning, "SMALL_SCOPE", 100)
    sqlite, memory = _stopword_stores(tmp_path, seed=3, records=400, rare=40, common_words=(3, 8), rare_words=(0, 2))
    checked = 0
    for query in ["rare3 the", "rare7 rare8 memory", "rare1", "rare12 and of", "rare30 rare31 rare32 the"]:
        expected = [h.record.content for h in memory.search({"scope": U1, "query": query, "limit": 5})]
        found = [h.record.content for h in sqlite.search({"scope": U1, "query": query, "limit": 5})]
        assert found == expected, query
        checked += 1
    stopwords_only = sqlite.search({"scope": U1, "query": "the and", "limit": 5})
    assert len(stopwords_only) == 5, "past the budget, common tokens still find records"
    assert checked == 5
    sqlite.close()


@pytest.mark.parametrize("reading", ["never", "always", "after the first token", "by cost"])
def test_small_scopes_rank_exactly_however_their_rows_are_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reading: str
) -> None:
    """A small scope's search probes the index token by token, rarest first, and reads the
    scope's remaining rows once that is cheaper: every page, score and term part equals
    the exhaustive ranking whichever way (and whenever) it switches."""
    from memory_admin.store import RecordListQuery
    from memory_admin.store.sqlite import search

    calls = []

    def decide(frequency: int, docs: int, scope_size: int, unseen: int) -> bool:
        calls.append(unseen)
        if reading == "by cost":
            return cost(frequency, docs, scope_size, unseen)
        return reading == "always" or (reading == "after the first token" and len(calls) > 1)

    cost = search.reading_is_cheaper
    monkeypatch.setattr(search, "reading_is_cheaper", decide)
    sqlite, memory = _stopword_stores(tmp_path, seed=5, records=300, rare=30, common_words=(2, 9), rare_words=(0, 3))

    def pages(store: Any, query: str) -> list[list[tuple[str, float, dict[str, float] | None]]]:
        found, cursor = [], None
        for _ in range(3):
            page = store.list_records(RecordListQuery(search={"scope": U1, "query": query, "limit": 4}, cursor=cursor))
            found.append([(h.record.content, round(h.score or 0, 9), h.terms) for h in page.hits])
            if (cursor := page.next_cursor) is None:
                break
        return found

    for query in ["rare3 the", "rare7 rare8 memory", "rare1", "the and of", "rare12 rare13 rare14 and", "nothing"]:
        assert pages(sqlite, query) == pages(memory, query), query
    assert calls, "the small-scope loop decided how to find rows"
    sqlite.close()


def test_listings_across_many_scopes_match_the_reference(tmp_path: Path) -> None:
    """A tenant listing spans many scopes: pages come newest first, ties in batch order,
    the same as the in-memory reference, whichever index the listing walks."""
    from memory_admin.store import InMemoryMemoryStore, RecordListQuery

    sqlite = SqliteMemoryStore(tmp_path / "m.sqlite3", persist_events=False)
    memory = InMemoryMemoryStore(persist_events=False)
    for batch in range(6):
        items = [
            {
                "scope": {"tenant": "acme", "user": f"u{n}"},
                "kind": "fact",
                "content": f"b{batch} u{n}",
                "provenance": PROV,
            }
            for n in range(25)
        ]
        sqlite.write(items)
        memory.write(items)
    for store in (sqlite, memory):
        assert len(store.scope_facets({"tenant": "acme"})[1].values) == 25
    pages = []
    for store in (sqlite, memory):
        seen, cursor = [], None
        while True:
            page = store.list_records(RecordListQuery(search={"scope": {"tenant": "acme"}, "limit": 7}, cursor=cursor))
            seen += [hit.record.content for hit in page.hits]
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        pages.append(seen)
    assert pages[0] == pages[1]
    assert len(pages[0]) == 150 and pages[0][0] == "b5 u24"
    sqlite.close()


# --- the index's terms are Python's ----------------------------------------------------

LOCOMO_DEV = Path(__file__).resolve().parents[2] / ".." / "shared" / "datasets" / "locomo" / "locomo-dev.json"
SUFFIXES = ("", "s", "es", "ies", "ed", "ing", "ly", "ness", "ation", "ational", "ement", "ful", "ize", "izing", "'s")
STEMS = ("prefer", "happy", "run", "agree", "relate", "connect", "generous", "travel", "seat", "city", "probe")
FOREIGN = "Zoë Ångström naïve façade Straße İstanbul Ærø пример примеры δοκιμή 東京 ソフト שלום مرحبا ๑๒๓ 🙂x"


def _index_tokenizer() -> str:
    """The tokenizer the index is declared with, in the latest migration that creates it."""
    declared = r"CREATE VIRTUAL TABLE memory_fts USING fts5\(.*?tokenize=('[^']*')"
    found = [match.group(1) for script in MIGRATIONS if (match := re.search(declared, script, re.S))]
    return found[-1]


INDEX_TOKENIZER = _index_tokenizer()


def _generated_texts() -> list[str]:
    words = [stem + suffix for stem in STEMS for suffix in SUFFIXES]
    texts = [" ".join(words[n : n + 7]) for n in range(0, len(words), 7)]
    return [*texts, FOREIGN, "Flight LH-400 at 07:45, gate B12; 3.14 × 10^6 and v2.0.1-rc"]


def _locomo_texts() -> list[str]:
    if not LOCOMO_DEV.is_file():
        pytest.skip("the LoCoMo dev split is not beside the project (../shared/datasets/locomo)")
    found: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str) and value.strip():
            found.append(value[:4000])
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(json.loads(LOCOMO_DEV.read_text(encoding="utf-8")))
    return found


@pytest.mark.parametrize("source", ["generated", "locomo-dev"])
def test_the_index_holds_exactly_python_s_terms_for_every_record(tmp_path: Path, source: str) -> None:
    texts = _generated_texts() if source == "generated" else _locomo_texts()
    start = datetime(2019, 1, 1, tzinfo=UTC)
    store = SqliteMemoryStore(tmp_path / "memory.sqlite3", persist_events=False)
    written: list[MemoryRecord] = []
    for first in range(0, len(texts), 1000):
        items = [
            {
                "scope": U1,
                "kind": "fact",
                "content": text,
                "provenance": PROV,
                "tags": [f"Tag-{n % 7}", "séance"] if n % 3 == 0 else [],
                "observed_at": (start + timedelta(hours=37 * n % 50_000)).isoformat(),
            }
            for n, text in enumerate(texts[first : first + 1000], start=first)
        ]
        written += store.write(items)
    store.close()
    expected = {id_key(r.id): set(tokenize(record_text(r.content, r.tags, r.observed_at))) for r in written}
    with closing(raw(tmp_path / "memory.sqlite3")) as conn:
        conn.execute("CREATE VIRTUAL TABLE temp.terms USING fts5vocab(main, memory_fts, instance)")
        rid_of = dict(conn.execute("SELECT id, rid FROM memory_records"))
        indexed: dict[int, set[str]] = {}
        for doc, term in conn.execute("SELECT doc, term FROM temp.terms WHERE col = 'terms'"):
            indexed.setdefault(doc, set()).add(term)
    vocabulary = set().union(*expected.values())
    assert len(vocabulary) > (100 if source == "generated" else 3000), "a large vocabulary"
    mismatched = [key for key, terms in expected.items() if indexed.get(rid_of[key], set()) != terms]
    assert mismatched == [], f"{len(mismatched)} records are indexed under other terms than Python's"


def test_a_file_indexed_under_another_stemmer_is_rebuilt_when_opened(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    store = SqliteMemoryStore(path)
    write_one(store, "Dana prefers aisle seats")
    store.close()
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        # an older release's terms: unstemmed words, and no date
        conn.create_function("memory_terms", 3, lambda content, tags, stated: " ".join(words(f"{content} {tags}")))
        conn.execute("INSERT INTO memory_fts (memory_fts) VALUES ('rebuild')")
        conn.execute("UPDATE memory_fts_terms SET identity = 'an older stemmer'")
        assert conn.execute("SELECT count(*) FROM memory_fts WHERE memory_fts MATCH 'terms : prefer'").fetchone() == (
            0,
        )
    reopened = SqliteMemoryStore(path)
    assert contents(reopened.search({"scope": U1, "query": "prefer"})) == ["Dana prefers aisle seats"]
    record = reopened.search({"scope": U1, "query": "seat"})[0].record
    assert reopened.delete(record.id), "the delete trigger removes exactly the terms the rebuild indexed"
    reopened.close()
    with closing(raw(path)) as conn:
        assert conn.execute("SELECT identity FROM memory_fts_terms").fetchone() == (TERMS_IDENTITY,)
        conn.execute("INSERT INTO memory_fts (memory_fts, rank) VALUES ('integrity-check', 1)")


@settings(max_examples=400, deadline=None)
@given(text=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=30))
def test_the_index_tokenizer_splits_python_s_terms_only_at_the_spaces(text: str) -> None:
    """Any script, any character: the index takes Python's terms exactly as they are."""
    terms = tokenize(text)
    with closing(sqlite3.connect(":memory:")) as conn:
        conn.execute(f"CREATE VIRTUAL TABLE probe USING fts5(terms, tokenize={INDEX_TOKENIZER}, detail=column)")
        conn.execute("CREATE VIRTUAL TABLE probe_terms USING fts5vocab(probe, row)")
        conn.execute("INSERT INTO probe (terms) VALUES (?)", [" ".join(terms)])
        assert sorted(term for (term,) in conn.execute("SELECT term FROM probe_terms")) == sorted(set(terms))


def test_targeted_records_written_before_learnings_become_candidates(tmp_path: Path) -> None:
    """A file from before promotion state (schema 10) migrates: its targeted records are
    candidates, born when they were written; its other records are none."""
    path = tmp_path / "memory.sqlite3"
    target = {"primitive": "background", "section": "conventions", "key": "deploys"}
    with SqliteMemoryStore(path) as store:
        plain = write_one(store, "a plain fact")
        targeted = write_one(store, "Deploys freeze on Fridays.", target=target)
    with closing(raw(path)) as conn:
        for table in ("memory_promotions", "memory_promotion_history", "memory_proposals"):
            conn.execute(f"DROP TABLE {table}")
        conn.execute("DROP TABLE memory_composition_uses")
        conn.execute("DROP TABLE memory_compositions")
        conn.execute("DROP TRIGGER memory_records_learnings_ad")
        conn.execute("PRAGMA user_version = 10")
    with SqliteMemoryStore(path) as store:
        assert store.schema_version() == SCHEMA_VERSION
        assert store.promotion(plain) is None
        found = store.promotion(targeted)
        assert found is not None and (found.state, found.primitive, found.revision) == ("candidate", "background", 0)
        assert found.at == store.get(targeted).created_at  # type: ignore[union-attr]
        assert [t.state for t in store.promotion_history(targeted)] == ["candidate"]
        store.promote(targeted, actor="lena", tier="auto")
        assert [r.id for r in store.promoted_records(U1)] == [targeted]
