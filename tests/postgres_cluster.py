"""A throwaway PostgreSQL cluster for the tests, started from the binaries on the machine.

``initdb`` into a temporary directory, ``pg_ctl start`` on a private unix-socket
directory with TCP switched off, one fresh database per test session, and a cheap
``TRUNCATE`` between tests. initdb refuses to run as root, so under root the cluster
runs as the ``postgres`` OS user (``runuser``) in a directory that user owns.

Without the binaries these tests skip with a message saying what to install; with
``MEMORY_ADMIN_REQUIRE_ALL=1`` (CI) a missing binary is a failure, never a skip.
Set ``MEMORY_ADMIN_PG_BIN`` to use binaries from another directory.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn
from urllib.parse import quote

import pytest

REQUIRE_ALL_ENV = "MEMORY_ADMIN_REQUIRE_ALL"
BIN_ENV = "MEMORY_ADMIN_PG_BIN"
OS_USER = "postgres"
STORE_TABLES = ("memory_records", "memory_scopes", "memory_events")
FIXTURE_PREFIX = "memory-admin-pg-test-"  # + the pytest pid: its cluster is reaped once that process is gone


def _unavailable(reason: str) -> NoReturn:
    message = (
        f"PostgreSQL tests need a local server build: {reason}. "
        "Install it with scripts/ensure-system-deps.sh (Debian: apt-get install postgresql) "
        f"or point {BIN_ENV} at a directory holding initdb and pg_ctl."
    )
    if os.environ.get(REQUIRE_ALL_ENV) == "1":
        pytest.fail(f"{message} ({REQUIRE_ALL_ENV}=1: a skip here is a failure)", pytrace=False)
    pytest.skip(message)


def find_bin_dir() -> Path | None:
    """The directory holding ``initdb`` and ``pg_ctl``: ``$MEMORY_ADMIN_PG_BIN``, else
    the newest ``/usr/lib/postgresql/*/bin``, else the ``PATH``."""
    candidates: list[Path] = []
    if os.environ.get(BIN_ENV):
        candidates.append(Path(os.environ[BIN_ENV]))
    versions = glob.glob("/usr/lib/postgresql/*/bin")
    candidates += sorted((Path(p) for p in versions), key=lambda p: _version_key(p.parent.name), reverse=True)
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(Path(on_path).parent)
    for candidate in candidates:
        if (candidate / "initdb").is_file() and (candidate / "pg_ctl").is_file():
            return candidate
    return None


def _version_key(name: str) -> tuple[int, ...]:
    return tuple(int(part) for part in name.split(".") if part.isdigit())


@dataclass
class PostgresCluster:
    """A running throwaway cluster reachable only through its private socket directory."""

    bin_dir: Path
    root: Path
    socket_dir: Path
    port: int
    as_user: str | None

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{OS_USER}@/{database}?host={quote(str(self.socket_dir), safe='')}&port={self.port}"

    def _run(self, *args: str) -> None:
        command = [str(self.bin_dir / args[0]), *args[1:]]
        if self.as_user is not None:
            command = ["runuser", "-u", self.as_user, "--", *command]
        result = subprocess.run(command, capture_output=True, text=True, check=False, timeout=120)
        if result.returncode != 0:
            log = self.root / "server.log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise RuntimeError(f"{' '.join(args)} failed ({result.returncode}): {result.stderr.strip()}\n{tail}")

    def start(self) -> None:
        self._run(
            "initdb",
            "-D",
            str(self.data_dir),
            "-U",
            OS_USER,
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
        )
        options = (
            f"-k {self.socket_dir} -p {self.port} -c listen_addresses='' "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
        )
        self._run("pg_ctl", "-D", str(self.data_dir), "-l", str(self.root / "server.log"), "-o", options, "-w", "start")

    def stop(self) -> None:
        with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
            self._run("pg_ctl", "-D", str(self.data_dir), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.root, ignore_errors=True)

    def execute(self, sql: str, database: str = "postgres") -> None:
        """Run one statement outside a transaction (CREATE / DROP DATABASE)."""
        import psycopg

        with psycopg.connect(self.url(database), autocommit=True) as conn:
            conn.execute(sql.encode())

    def create_database(self, name: str) -> str:
        self.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def drop_database(self, name: str) -> None:
        self.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _server_user() -> str | None:
    """Who runs the server: the ``postgres`` OS user under root (initdb refuses root)."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(OS_USER)
    except KeyError:
        _unavailable(f"running as root, and there is no {OS_USER!r} OS user to run the server as")
    if shutil.which("runuser") is None:
        _unavailable("running as root, and runuser is missing")
    return OS_USER


def _reap_orphans(bin_dir: Path, as_user: str | None) -> None:
    """Stop clusters left behind by test sessions that died without stopping them (a
    killed pytest never runs its teardown; pg_ctl's server outlives it)."""
    for root in Path(tempfile.gettempdir()).glob(f"{FIXTURE_PREFIX}*-*"):
        owner = root.name[len(FIXTURE_PREFIX) :].split("-")[0]
        if not owner.isdigit() or _alive(int(owner)):
            continue
        PostgresCluster(bin_dir, root, root / "sock", 0, as_user).stop()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def start_cluster(*, owner_pid: int | None = None) -> PostgresCluster:
    """Start a cluster (the fixtures' engine; also handy from a shell for measurements).
    With ``owner_pid``, a later test session stops it once that process is gone."""
    bin_dir = find_bin_dir()
    if bin_dir is None:
        _unavailable("initdb and pg_ctl were not found")
    as_user = _server_user()
    if owner_pid is not None:
        _reap_orphans(bin_dir, as_user)
    prefix = f"{FIXTURE_PREFIX}{owner_pid}-" if owner_pid is not None else "memory-admin-pg-"
    root = Path(tempfile.mkdtemp(prefix=prefix))
    socket_dir = root / "sock"
    socket_dir.mkdir()
    if as_user is not None:
        owner = pwd.getpwnam(as_user)
        for path in (root, socket_dir):
            os.chown(path, owner.pw_uid, owner.pw_gid)
    # no TCP listener: the port only names the socket file, so any number is free
    cluster = PostgresCluster(bin_dir, root, socket_dir, 54000 + os.getpid() % 1000, as_user)
    try:
        cluster.start()
    except BaseException:
        cluster.stop()
        raise
    return cluster


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[PostgresCluster]:
    """The session's cluster, stopped and deleted at the end."""
    cluster = start_cluster(owner_pid=os.getpid())
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def postgres_session_url(postgres_cluster: PostgresCluster) -> str:
    """A fresh database for this test session."""
    return postgres_cluster.create_database(f"memory_admin_test_{os.getpid()}")


@pytest.fixture
def postgres_url(postgres_session_url: str) -> str:
    """The session database, emptied: every store table truncated, identities restarted."""
    import psycopg

    with psycopg.connect(postgres_session_url, autocommit=True) as conn:
        present = [
            table
            for table in STORE_TABLES
            if conn.execute("SELECT to_regclass(%s)", [table]).fetchone() not in (None, (None,))
        ]
        if present:
            conn.execute(f"TRUNCATE {', '.join(present)} RESTART IDENTITY".encode())
    return postgres_session_url


@pytest.fixture
def fresh_postgres_database(postgres_cluster: PostgresCluster) -> Iterator[str]:
    """A new, empty database for one test (schema and migration tests), dropped afterwards."""
    name = f"memory_admin_fresh_{os.getpid()}_{next(_fresh_counter)}"
    url = postgres_cluster.create_database(name)
    try:
        yield url
    finally:
        postgres_cluster.drop_database(name)


def _counter() -> Iterator[int]:
    n = 0
    while True:
        n += 1
        yield n


_fresh_counter = _counter()
