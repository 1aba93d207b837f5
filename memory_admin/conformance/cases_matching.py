"""Tier 2 match sets for keyword backends, and corrupt rows reported by every read."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from memory_admin.conformance.base import (
    U1,
    U2,
    ConformanceBase,
    rec,
)
from memory_admin.conformance.corpus import CORPUS, DATED, MATCH_CASES, STATED, MatchCase
from memory_admin.errors import (
    MemoryCorruptionError,
)
from memory_admin.store.protocol import FullMemoryStore
from memory_admin.store.ranking import record_text
from memory_admin.tokenize import tokenize


class MatchingCases(ConformanceBase):
    # === Tier 2: match sets for keyword backends ====================================

    @pytest.fixture
    def corpus(self, raw_store: FullMemoryStore) -> dict[str, str]:
        self._needs(raw_store, search="keyword")
        records = raw_store.write(
            [
                rec(content, tags=list(tags), observed_at=DATED.get(label, STATED))
                for label, (content, tags) in CORPUS.items()
            ]
        )
        return {record.id: label for label, record in zip(CORPUS, records, strict=True)}

    @pytest.mark.parametrize("case", MATCH_CASES, ids=[case.id for case in MATCH_CASES])
    def test_tier2_match_set(self, store: FullMemoryStore, corpus: dict[str, str], case: MatchCase) -> None:
        hits = store.search({"scope": U1, "query": case.query, "limit": 100})
        assert {corpus[hit.record.id] for hit in hits} == case.expected
        reference = {
            label
            for label, (content, tags) in CORPUS.items()
            if set(tokenize(case.query))
            & set(tokenize(record_text(content, tags, datetime.fromisoformat(DATED.get(label, STATED)))))
        }
        assert reference == case.expected, "the case table agrees with tokenize() and record_text()"

    def test_a_record_found_by_its_date_ranks_by_it(self, store: FullMemoryStore) -> None:
        store.write([rec("Dana moved to Lisbon", observed_at="2023-05-08T13:56:00+00:00"), rec("Lisbon has trams")])
        store.write([rec(f"filler note {n}") for n in range(8)])
        hits = store.search({"scope": U1, "query": "what happened on 8 May 2023", "limit": 5})
        assert [h.record.content for h in hits] == ["Dana moved to Lisbon"]
        assert hits[0].score is not None and hits[0].score > 0, "the date words count in BM25, not only in matching"
        both = store.search({"scope": U1, "query": "Lisbon in May", "limit": 5})
        assert [h.record.content for h in both] == ["Dana moved to Lisbon", "Lisbon has trams"]
        assert both[0].score is not None and both[1].score is not None and both[0].score > both[1].score

    # === corruption: reported, never skipped ========================================

    def test_a_corrupt_row_is_reported_by_every_read(self, store: FullMemoryStore, raw_store: FullMemoryStore) -> None:
        store.write([rec("a healthy neighbour about gardens")])
        for column, value in self.CORRUPTIONS:
            victim = store.write([rec(f"the victim row about gardens ({column})")])[0]
            if not self.corrupt_row(raw_store, victim.id, column, value):
                pytest.skip("this backend cannot hold a corrupt row")
            with pytest.raises(MemoryCorruptionError) as info:
                store.get(victim.id)
            assert info.value.record_id == victim.id, column
            assert info.value.raw[column] == value, column
            assert info.value.scope == U1, "the scope still parses, so a curator can find the row"
            queries: list[dict[str, Any]] = [{"scope": U1}]
            if column != "content":  # a blank content no longer matches the query's words
                queries.append({"scope": U1, "query": "gardens"})
            for query in queries:
                with pytest.raises(MemoryCorruptionError) as found:
                    store.search(query)
                assert found.value.record_id == victim.id, (column, query)
            scan = store.find_corrupt()
            assert [c.id for c in scan.corrupt] == [victim.id] and scan.complete, column
            assert scan.corrupt[0].raw[column] == value
            assert store.delete(victim.id), "deleting is the repair a corrupt row can always take"
            assert store.find_corrupt().corrupt == []

    def test_find_corrupt_is_bounded_and_scoped(self, store: FullMemoryStore, raw_store: FullMemoryStore) -> None:
        store.write([rec(f"fine {n}") for n in range(5)])
        store.write([rec("elsewhere", U2)])
        bad = store.write([rec("will break", U2)])[0]
        if not self.corrupt_row(raw_store, bad.id, "kind", "belief"):
            pytest.skip("this backend cannot hold a corrupt row")
        scan = store.find_corrupt()
        assert (scan.checked, scan.complete, [c.id for c in scan.corrupt]) == (7, True, [bad.id])
        assert store.find_corrupt(U1).corrupt == [] and store.find_corrupt(U1).checked == 5
        assert [c.id for c in store.find_corrupt(U2).corrupt] == [bad.id]
        assert store.find_corrupt(max_rows=3).complete is False
        assert len(store.find_corrupt(limit=1).corrupt) == 1
