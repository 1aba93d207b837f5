"""``memory-admin serve`` as a deployment runs it: a subprocess with production settings
from the environment, gunicorn workers, hashed static files, behind a TLS proxy."""

from __future__ import annotations

import http.client
import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memory_admin.dashboard.management.commands.memory_serve import default_workers
from tests.dashboard.server import PASSWORD, ProxiedClient, production_env, run, serving

MEMORY_ADMIN = [sys.executable, "-m", "memory_admin"]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    env = production_env(tmp_path_factory.mktemp("deploy"))
    run([*MEMORY_ADMIN, "migrate", "--verbosity", "0"], env)
    run([*MEMORY_ADMIN, "demo"], env)
    run(
        [*MEMORY_ADMIN, "user", "create", "olga", "--role", "viewer", "--grant", "tenant=acme", "--password", PASSWORD],
        env,
    )
    return env


def test_serve_signs_in_and_serves_pages_behind_a_tls_proxy(deployment: dict[str, str]) -> None:
    with serving(MEMORY_ADMIN, deployment) as server:
        client = ProxiedClient(server.url)
        plain = client.request("/", proxied=False)
        assert plain.status == 301 and plain.headers["Location"].startswith("https://")
        health = client.request("/healthz", proxied=False)  # load balancers probe over plain HTTP
        assert health.status == 200 and json.loads(health.text) == {"status": "ok", "store": "ok"}

        assert client.request("/").status == 302  # sign in first
        refused = client.sign_in("olga", "not the password")
        assert refused.status == 200 and "/accounts/login/" in refused.url
        signed_in = client.sign_in("olga")
        assert signed_in.status == 302 and signed_in.headers["Location"] == "/"
        assert "Secure" in signed_in.headers.get("Set-Cookie", "")

        browse = client.request("/?scope=tenant%3Dacme")
        assert browse.status == 200 and "olga" in browse.text
        record = re.search(r'href="(/records/[^/"]+/)"', browse.text)
        assert record, "the browser links its records"
        page = client.request(record.group(1))
        assert page.status == 200 and "Provenance" in page.text

        style = re.search(r'href="(/static/dashboard/style\.[0-9a-f]{12}\.css)"', browse.text)
        assert style, "pages link hashed static files"
        css = client.request(style.group(1))
        assert css.status == 200 and "immutable" in css.headers["Cache-Control"]
    assert server.returncode == 0, server.stderr  # SIGTERM: a graceful stop
    assert "Handling signal: term" in server.stderr and "Shutting down" in server.stderr
    settled = [int(n) for n in re.findall(r"Worker \d+ settled: (\d+) start-up objects", server.stderr)]
    assert settled and min(settled) > 10_000, server.stderr  # each worker froze what it loaded
    assert re.search(r'"GET /healthz HTTP/1.1" 200 \d+ \d+ms', server.stdout), server.stdout  # the access log
    assert re.search(r'"POST /accounts/login/ HTTP/1.1" 302', server.stdout)


BULK = 25_000  # ~25 MB of JSON Lines: more than the loopback socket buffers hold


def test_sigterm_lets_a_response_in_flight_finish(deployment: dict[str, str], tmp_path: Path) -> None:
    lines = (
        json.dumps(
            {
                "scope": {"tenant": "bulk"},
                "kind": "fact",
                "content": f"bulk record {n} " + "padding " * 60,
                "provenance": {"source": "bulk"},
            }
        )
        for n in range(BULK)
    )
    (tmp_path / "bulk.jsonl").write_text("\n".join(lines))
    run([*MEMORY_ADMIN, "import", str(tmp_path / "bulk.jsonl"), "--batch-size", "2500"], deployment)
    run(
        [*MEMORY_ADMIN, "user", "create", "exa", "--role", "viewer", "--grant", "tenant=bulk", "--password", PASSWORD],
        deployment,
    )

    with serving(MEMORY_ADMIN, deployment) as server:
        client = ProxiedClient(server.url)
        assert client.sign_in("exa").status == 302
        host, port = server.url.removeprefix("http://").split(":")
        connection = http.client.HTTPConnection(host, int(port), timeout=60)
        connection.request("GET", "/export.jsonl?scope=tenant%3Dbulk", headers=client.headers())
        response = connection.getresponse()
        assert response.status == 200
        body = response.read(64 * 1024)  # the export has begun; the server is blocked writing the rest
        server.process.send_signal(signal.SIGTERM)
        time.sleep(1.5)
        assert server.process.poll() is None, "the server waits for the response in flight"
        body += response.read()  # … and sends all of it
        assert len(body) > 12 * 2**20  # more than loopback buffers take: it really was in flight
        connection.close()
        assert server.process.wait(timeout=45) == 0
    records = [json.loads(line) for line in body.decode().splitlines()]
    assert len(records) == BULK and {r["content"].split()[2] for r in records} == {str(n) for n in range(BULK)}
    assert '"GET /export.jsonl?scope=tenant%3Dbulk HTTP/1.1" 200' in server.stdout


def test_serve_refuses_an_unmigrated_dashboard_database(tmp_path: Path) -> None:
    env = production_env(tmp_path)
    done = subprocess.run(
        [*MEMORY_ADMIN, "serve", "--bind", "127.0.0.1:0"], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1
    assert "unapplied migrations" in done.stderr and "memory-admin migrate" in done.stderr


def test_the_default_worker_count_follows_the_cpu_count() -> None:
    assert 3 <= default_workers() <= 12
