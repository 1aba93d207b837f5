"""memory_embed (``memory-admin embed``): a keyword-only file turned hybrid, resumably;
--rebuild for a new model; what memory_stats and memory_search then say."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest

from tests.support.optional import needs_extra

# the store embeds with the hashing embedder, which computes with numpy
pytest.importorskip("numpy", reason=needs_extra("semantic"))

from django.core.management import CommandError, call_command

from memory_admin.conformance.base import U1, rec
from memory_admin.dashboard.stores import reset_stores
from memory_admin.embed import HashingEmbedder
from memory_admin.store import open_store


def run(*args: str) -> str:
    """One command, as its own process runs it (no store cached from the previous one)."""
    reset_stores()
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


@pytest.fixture
def url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'memory.sqlite3'}"
    with open_store(url) as store:
        store.write([rec(f"garden note {i}") for i in range(5)] + [rec("gardening every weekend")])
    return url


def test_embed_gives_every_record_a_vector_and_resumes(url: str) -> None:
    assert "Vectors: none" in run("memory_stats", "--store", url)
    out = run("memory_embed", "--store", url, "--embedder", "hashing", "--batch-size", "4", "--no-progress")
    assert "Embedded 6 records" in out and "6 of 6 records have a vector" in out
    assert "Embedded 0 records" in run("memory_embed", "--store", url, "--no-progress"), "the file's model, resumed"
    assert "Vectors: 6 of 6 records, by hashing-v1:256" in run("memory_stats", "--store", url)
    found = run("memory_search", U1_TEXT, "weekends", "--store", url, "--mode", "semantic", "--limit", "1")
    assert "gardening every weekend" in found and "semantic=" in found and "keyword=-" in found
    lines = run("memory_search", U1_TEXT, "garden", "--store", url, "--mode", "hybrid", "--limit", "6").splitlines()
    said = {content.strip(): header for header, content in zip(lines[::2], lines[1::2], strict=True)}
    assert "length=+" in said["gardening every weekend"], "the longest record gains"
    assert "length=-" in said["garden note 0"], "the shorter ones lose"


U1_TEXT = ",".join(f"{k}={v}" for k, v in U1.items())


def test_a_new_model_is_refused_until_rebuild(url: str) -> None:
    run("memory_embed", "--store", url, "--embedder", "hashing", "--no-progress")
    with pytest.raises(CommandError, match="embed --rebuild"):
        run("memory_embed", "--store", url, "--embedder", "hashing:64", "--no-progress")
    out = run("memory_embed", "--store", url, "--embedder", "hashing:64", "--rebuild", "--no-progress")
    assert "Embedded 6 records" in out and "hashing-v1:64" in out
    with open_store(url) as store:
        assert store.embedding_status().model_id == HashingEmbedder(64).model_id


def test_stats_name_records_left_without_a_vector(url: str) -> None:
    run("memory_embed", "--store", url, "--embedder", "hashing", "--no-progress")
    with open_store(url, embedder="none") as keyword_only:
        keyword_only.write([rec("written by a keyword-only process")])
    assert "6 of 7 records" in run("memory_stats", "--store", url)
    assert "1 without one (run `memory-admin embed`)" in run("memory_stats", "--store", url)
