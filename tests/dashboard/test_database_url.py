"""``DATABASE_URL``: the dashboard's own tables (users, sessions, grants, audit) in any
database, here PostgreSQL beside a PostgreSQL memory store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.dashboard.server import PASSWORD, ProxiedClient, production_env, run, serving
from tests.dashboard.test_settings import settings_of

MEMORY_ADMIN = [sys.executable, "-m", "memory_admin"]
READ_DB = "import json; from django.conf import settings; print(json.dumps(settings.DATABASES['default']))"


def database_of(**env: str) -> dict[str, object]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_URL"))}
    environment.update(DJANGO_SETTINGS_MODULE="memory_admin.dashboard.settings.dev", **env)
    done = subprocess.run([sys.executable, "-c", READ_DB], env=environment, capture_output=True, text=True, check=True)
    found: dict[str, object] = json.loads(done.stdout)
    return found


def test_database_url_names_the_dashboard_database() -> None:
    found = database_of(DATABASE_URL="postgresql://dash:s3cret@db.internal:5433/dashboard")
    assert found["ENGINE"] == "django.db.backends.postgresql"
    assert (found["HOST"], found["PORT"], found["NAME"], found["USER"]) == ("db.internal", 5433, "dashboard", "dash")
    assert found["CONN_HEALTH_CHECKS"] is True


def test_without_database_url_the_dashboard_keeps_its_own_sqlite_file(tmp_path: Path) -> None:
    found = database_of(MEMORY_ADMIN_VAR_DIR=str(tmp_path))
    assert found == {"ENGINE": "django.db.backends.sqlite3", "NAME": str(tmp_path / "dashboard.sqlite3")}
    assert settings_of("memory_admin.dashboard.settings.dev")["store"] != found["NAME"]


@pytest.mark.postgres
@pytest.mark.slow
def test_the_dashboard_runs_on_postgresql_beside_a_postgresql_store(
    fresh_postgres_database: str, tmp_path: Path
) -> None:
    import psycopg

    # one database holds both: the store's memory_* tables and the dashboard's own
    env = production_env(tmp_path, DATABASE_URL=fresh_postgres_database, MEMORY_STORE_URL=fresh_postgres_database)
    run([*MEMORY_ADMIN, "migrate", "--verbosity", "0"], env)
    run([*MEMORY_ADMIN, "demo"], env)
    run(
        [*MEMORY_ADMIN, "user", "create", "paz", "--role", "viewer", "--grant", "tenant=acme", "--password", PASSWORD],
        env,
    )
    assert not (tmp_path / "dashboard.sqlite3").exists()

    with serving(MEMORY_ADMIN, env) as server:
        client = ProxiedClient(server.url)
        assert client.sign_in("paz").status == 302
        page = client.request("/?scope=tenant%3Dacme")
        assert page.status == 200 and "/records/" in page.text
    assert server.returncode == 0, server.stderr

    with psycopg.connect(fresh_postgres_database) as conn:

        def count(sql: str) -> int:
            row = conn.execute(sql.encode()).fetchone()
            return int(row[0]) if row else 0

        assert count("SELECT count(*) FROM auth_user WHERE username = 'paz'") == 1
        assert count("SELECT count(*) FROM dashboard_scopegrant") == 1
        assert count("SELECT count(*) FROM django_session") >= 1  # the sign-in's session
        assert count("SELECT count(*) FROM memory_records") > 0
