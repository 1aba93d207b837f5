"""Throwaway PostgreSQL clusters, started from the server binaries already on the machine.

    .venv/bin/python -m tests.support.postgres          # prints a URL; Ctrl-C stops and deletes it
    .venv/bin/python -m tests.support.postgres --fast   # the tests' settings: no flushes to disk

``initdb`` into a temporary directory and ``pg_ctl start`` on a private unix-socket
directory with TCP switched off, so nothing outside this machine (and no other cluster)
can reach it. initdb refuses to run as root, so under root the cluster runs as the
``postgres`` OS user (``runuser``) in a directory that user owns. The tests' fixtures
(``tests/postgres_cluster.py``), the benchmarks' ``--postgres-throwaway`` and the
command above all start their clusters here.

This is test support code, not part of the installed package: the benchmarks import it
too, which is fine because they (like the tests) run from a checkout, from the
project's root directory.

A durable cluster (the default) runs with PostgreSQL's own settings — ``fsync``,
``synchronous_commit`` and ``full_page_writes`` on — so what is measured on it is what a
real server does; the tests ask for a fast one that skips every flush to disk.

Set ``MEMORY_ADMIN_PG_BIN`` to use binaries from another directory."""

from __future__ import annotations

import argparse
import contextlib
import glob
import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from urllib.parse import quote

BIN_ENV = "MEMORY_ADMIN_PG_BIN"
OS_USER = "postgres"
# + the owner's pid: a later start stops and deletes the cluster once that process is gone
OWNED_PREFIX = "memory-admin-pg-owned-"
# nothing a crash could lose matters in a cluster that is deleted afterwards
FAST_SETTINGS: Mapping[str, str] = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}
_SETTING = re.compile(r"[A-Za-z0-9_.]+")


class ClusterUnavailable(RuntimeError):
    """This machine cannot start a cluster; ``reason`` says what is missing."""

    def __init__(self, reason: str) -> None:
        super().__init__(
            f"Cannot start a throwaway PostgreSQL cluster: {reason}. Install the server with "
            f"scripts/ensure-system-deps.sh (Debian: apt-get install postgresql) or point {BIN_ENV} "
            "at a directory holding initdb and pg_ctl."
        )
        self.reason = reason


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
    """A running throwaway cluster reachable only through its private socket directory.

    ``settings`` are the ``-c`` options it was started with beyond PostgreSQL's defaults."""

    bin_dir: Path
    root: Path
    socket_dir: Path
    port: int
    as_user: str | None
    settings: dict[str, str] = field(default_factory=dict)

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

    def start(self, *, sync_initdb: bool = True) -> None:
        initdb = ["initdb", "-D", str(self.data_dir), "-U", OS_USER, "-A", "trust", "-E", "UTF8", "--locale=C"]
        self._run(*initdb, *([] if sync_initdb else ["--no-sync"]))
        options = f"-k {self.socket_dir} -p {self.port} -c listen_addresses=''"
        for name, value in self.settings.items():
            if not (_SETTING.fullmatch(name) and _SETTING.fullmatch(value)):
                raise ValueError(f"unsupported server setting {name}={value!r}")  # pg_ctl hands -o to a shell
            options += f" -c {name}={value}"
        self._run("pg_ctl", "-D", str(self.data_dir), "-l", str(self.root / "server.log"), "-o", options, "-w", "start")

    def stop(self) -> None:
        """Stop the server (immediately: nothing in it is kept) and delete its directory."""
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


def server_user() -> str | None:
    """Who runs the server: the ``postgres`` OS user under root (initdb refuses root)."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(OS_USER)
    except KeyError:
        raise ClusterUnavailable(f"running as root, and there is no {OS_USER!r} OS user to run the server as") from None
    if shutil.which("runuser") is None:
        raise ClusterUnavailable("running as root, and runuser is missing")
    return OS_USER


def reap_orphans(bin_dir: Path, as_user: str | None) -> None:
    """Stop clusters whose owner died without stopping them (a killed pytest never runs
    its teardown, a killed benchmark never reaches its ``finally``; the server outlives
    both)."""
    for root in Path(tempfile.gettempdir()).glob(f"{OWNED_PREFIX}*-*"):
        owner = root.name[len(OWNED_PREFIX) :].split("-")[0]
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


def start_cluster(
    *, owner_pid: int | None = None, durable: bool = True, settings: Mapping[str, str] | None = None
) -> PostgresCluster:
    """Start a cluster and return it running; the caller stops it.

    ``durable=False`` skips every flush to disk (:data:`FAST_SETTINGS`, ``initdb
    --no-sync``): for tests, never for measurements. ``settings`` add ``-c`` options.
    With ``owner_pid``, a later start stops and deletes this cluster once that process
    is gone. Raises :class:`ClusterUnavailable` when the machine cannot run one."""
    bin_dir = find_bin_dir()
    if bin_dir is None:
        raise ClusterUnavailable("initdb and pg_ctl were not found")
    as_user = server_user()
    if owner_pid is not None:
        reap_orphans(bin_dir, as_user)
    prefix = f"{OWNED_PREFIX}{owner_pid}-" if owner_pid is not None else "memory-admin-pg-"
    root = Path(tempfile.mkdtemp(prefix=prefix))
    socket_dir = root / "sock"
    socket_dir.mkdir()
    if as_user is not None:
        owner = pwd.getpwnam(as_user)
        for path in (root, socket_dir):
            os.chown(path, owner.pw_uid, owner.pw_gid)
    chosen = {**({} if durable else FAST_SETTINGS), **(settings or {})}
    # no TCP listener: the port only names the socket file, so any number is free
    cluster = PostgresCluster(bin_dir, root, socket_dir, 54000 + os.getpid() % 1000, as_user, chosen)
    try:
        cluster.start(sync_initdb=durable)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Start a throwaway PostgreSQL cluster with an empty database, print its URL, "
        "and stop and delete it on Ctrl-C (or SIGTERM).",
    )
    parser.add_argument("--database", default="memory", help="the database to create (default: memory)")
    parser.add_argument("--fast", action="store_true", help="fsync and synchronous_commit off (tests' settings)")
    args = parser.parse_args(argv)
    try:
        cluster = start_cluster(owner_pid=os.getpid(), durable=not args.fast)
    except ClusterUnavailable as exc:
        print(exc, file=sys.stderr)
        return 2
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        url = cluster.create_database(args.database)
        print(url, flush=True)
        print(f"# export MEMORY_STORE_URL='{url}'", file=sys.stderr)
        print(f"# data in {cluster.root}; Ctrl-C stops the server and deletes it", file=sys.stderr, flush=True)
        while not stop.wait(0.5):
            pass
    finally:
        cluster.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
