"""``python -m tests.support.postgres``: a throwaway PostgreSQL cluster from a shell."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.support.optional import needs_extra

pytest.importorskip("psycopg", reason=needs_extra("postgres"))

import psycopg

from memory_admin.conformance.base import U1, rec
from memory_admin.store import open_store

pytestmark = pytest.mark.postgres


@pytest.mark.usefixtures("postgres_binaries")
def test_the_command_prints_a_durable_clusters_url_and_deletes_the_cluster_when_stopped() -> None:
    command = subprocess.Popen(
        [sys.executable, "-m", "tests.support.postgres"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert command.stdout is not None
        url = command.stdout.readline().strip()
        assert url.startswith("postgresql://postgres@/memory?"), command.stderr.read() if command.stderr else url
        with psycopg.connect(url) as conn:
            settings = {name: conn.execute(f"SHOW {name}").fetchone() for name in ("fsync", "synchronous_commit")}
        assert settings == {"fsync": ("on",), "synchronous_commit": ("on",)}, "PostgreSQL's durable defaults"
        with open_store(url) as store:
            written = store.write([rec("tried on a throwaway cluster")])[0]
            assert [hit.record.id for hit in store.search({"scope": U1, "query": "throwaway"})] == [written.id]
    finally:
        command.send_signal(signal.SIGTERM)
        _, errors = command.communicate(timeout=120)
    assert command.returncode == 0, errors
    socket_dir = Path(parse_qs(urlsplit(url).query)["host"][0])
    assert not socket_dir.parent.exists(), "the cluster's directory is deleted"
