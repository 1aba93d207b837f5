"""The dashboard as a person runs it, each a process of its own over the demo corpus in a
SQLite memory file: ``make run``'s development settings (``settings.dev``: DEBUG on,
``manage.py runserver``, the local embedder, as scripts/run-demo.sh starts it) and the
production settings (``settings.prod``: ``memory-admin serve``, keyword search, as
docs/deploy.md sets it up). Browser tests that hold under both hold for what people see;
the test settings alone prove nothing about either."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.dashboard.conftest import PASSWORD, deployment_env
from tests.dashboard.server import free_port, production_env, run, serving

ROOT = Path(__file__).resolve().parents[2]
MEMORY_ADMIN = [sys.executable, "-m", "memory_admin"]
SETTINGS = ("dev", "prod")

USERS = {
    "ada": ("admin", None),
    "vera": ("viewer", "tenant=acme"),
    "cora": ("curator", "tenant=acme"),
    "pat": ("privacy-officer", "tenant=acme"),
}
"""Who signs in (with conftest's ``PASSWORD``): a role each, three confined to tenant acme."""


@dataclass(frozen=True)
class Deployed:
    url: str
    settings: str  # "dev" or "prod"
    folder: Path
    env: Mapping[str, str]

    @property
    def embeds(self) -> bool:
        """Whether the store searches by meaning (make run's does; deploy.md's is keyword-only)."""
        return self.settings == "dev"


@contextlib.contextmanager
def runserver(env: Mapping[str, str], log: Path) -> Iterator[str]:
    """``manage.py runserver`` as ``make run`` starts it (scripts/run-demo.sh)."""
    port = free_port()
    command = [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"]
    with answering(command, "runserver", cwd=ROOT, env=env, log=log, port=port):
        yield f"http://127.0.0.1:{port}"


@contextlib.contextmanager
def answering(
    command: Sequence[str], name: str, *, cwd: Path, env: Mapping[str, str], log: Path, port: int, timeout: float = 60
) -> Iterator[None]:
    """``command`` in a process group of its own, its output in ``log``, once it answers
    ``/healthz`` on ``port``; the whole group is stopped when the block ends."""
    output = log.open("w")
    process = subprocess.Popen(
        list(command), cwd=cwd, env=dict(env), stdout=output, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        deadline = time.monotonic() + timeout
        while True:
            if process.poll() is not None:
                raise AssertionError(f"{name} exited {process.returncode}: {log.read_text()}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2):
                    break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                if time.monotonic() > deadline:
                    raise AssertionError(f"{name} did not answer") from None
                time.sleep(0.2)
        yield
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)
        output.close()


def _users(command: list[str], env: Mapping[str, str]) -> None:
    """``command`` is the user command (``manage.py memory_user`` or ``memory-admin user``)."""
    for name, (role, grant) in USERS.items():
        grants = ["--grant", grant] if grant else []
        run([*command, "create", name, "--role", role, *grants, "--password", PASSWORD], env, cwd=ROOT)


@contextlib.contextmanager
def deployed(settings: str, folder: Path, **extra: str) -> Iterator[Deployed]:
    """The dashboard under ``settings`` ("dev" or "prod") over a fresh demo corpus in
    ``folder``, with :data:`USERS`, until the block ends."""
    if settings == "dev":
        env = {**deployment_env(folder), "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost", "MEMORY_EMBEDDER": "default"}
        env.update(extra)
        manage = [sys.executable, "manage.py"]
        run([*manage, "migrate", "--verbosity", "0"], env, cwd=ROOT)
        run([*manage, "memory_demo"], env, cwd=ROOT)
        run([*manage, "memory_embed"], env, cwd=ROOT)
        _users([*manage, "memory_user"], env)
        with runserver(env, folder / "runserver.log") as url:
            yield Deployed(url, settings, folder, env)
    else:
        # Chromium talks plain HTTP to 127.0.0.1 here (the cookies stay Secure)
        env = production_env(folder, DJANGO_SECURE_SSL_REDIRECT="0", **extra)
        run([*MEMORY_ADMIN, "migrate", "--verbosity", "0"], env)
        run([*MEMORY_ADMIN, "demo"], env)
        _users([*MEMORY_ADMIN, "user"], env)
        with serving(MEMORY_ADMIN, env) as server:
            yield Deployed(server.url, settings, folder, env)
