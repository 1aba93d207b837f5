"""Serve the dashboard in production: gunicorn, hashed static files, access logs."""

from __future__ import annotations

import os
from argparse import ArgumentParser
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor
from gunicorn.app.base import BaseApplication  # type: ignore[import-untyped]

from memory_admin.dashboard.settle import settle
from memory_admin.dashboard.stores import reset_stores

MANIFEST_STORAGE = "whitenoise.storage.CompressedManifestStaticFilesStorage"
# the client's address when a reverse proxy forwards it, then the request's own fields
ACCESS_LOG_FORMAT = '%({x-forwarded-for}i)s %(h)s %(u)s %(t)s "%(r)s" %(s)s %(b)s %(M)sms "%(f)s" "%(a)s"'


def default_workers() -> int:
    """Gunicorn's rule of thumb, ``2 × cores + 1``, counting only the cores this process
    may run on (a container's CPU set, ``taskset``), capped so a large host does not fork
    dozens of copies of the app for a dashboard."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return min(2 * cores + 1, 12)


class Command(BaseCommand):
    help = (
        "Run the dashboard on gunicorn with production settings: whitenoise serves the collected, hashed, "
        "compressed static files (collected here at every start), one access-log line per request on standard "
        "output, and SIGTERM stops it gracefully (requests in flight finish first). Run migrate first."
    )

    requires_system_checks = ()  # handle() runs them, deployment checks included

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--bind",
            default=os.environ.get("MEMORY_ADMIN_BIND", "127.0.0.1:8000"),
            help="HOST:PORT or unix:PATH to listen on (default: $MEMORY_ADMIN_BIND, else 127.0.0.1:8000; "
            "put a TLS-terminating reverse proxy in front)",
        )
        parser.add_argument(
            "--workers",
            type=int,
            default=int(os.environ.get("WEB_CONCURRENCY") or default_workers()),
            help=f"worker processes (default: $WEB_CONCURRENCY, else 2 × CPU cores + 1 = {default_workers()} here)",
        )
        parser.add_argument("--threads", type=int, default=4, help="threads per worker (default: 4)")
        parser.add_argument(
            "--timeout", type=int, default=60, help="seconds a request may take before its worker is restarted"
        )
        parser.add_argument(
            "--graceful-timeout",
            type=int,
            default=30,
            help="seconds requests in flight get to finish after SIGTERM (default: 30)",
        )
        parser.add_argument(
            "--forwarded-allow-ips",
            default=os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1,::1"),
            help="proxies trusted to set X-Forwarded-* headers (default: $FORWARDED_ALLOW_IPS, else 127.0.0.1,::1)",
        )
        parser.add_argument("--access-log", default="-", help="where access-log lines go (default: - for stdout)")
        parser.add_argument(
            "--no-collectstatic", action="store_true", help="skip collectstatic (the files were collected already)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["workers"] < 1 or options["threads"] < 1:
            raise CommandError("--workers and --threads must be at least 1.")
        if settings.DEBUG:
            raise CommandError(
                "DEBUG is on: serve runs with production settings (memory_admin.dashboard.settings.prod)."
            )
        self.check(include_deployment_checks=True)
        self._refuse_unapplied_migrations()
        if not options["no_collectstatic"]:
            self._collect_static()
        # the workers are forked from this process: nothing opened here may be shared
        connections.close_all()
        reset_stores()
        GunicornApplication(
            {
                "bind": options["bind"],
                "workers": options["workers"],
                "worker_class": "gthread",  # a long export streams without the worker counting as stuck
                "threads": options["threads"],
                "timeout": options["timeout"],
                "graceful_timeout": options["graceful_timeout"],
                "forwarded_allow_ips": options["forwarded_allow_ips"],
                "accesslog": options["access_log"],
                "access_log_format": ACCESS_LOG_FORMAT,
                "errorlog": "-",
                "proc_name": "memory-admin",
                "control_socket_disable": True,  # gunicorn's default socket path is shared by every instance
                "post_worker_init": _settle_worker,
                "worker_exit": _close_stores,
            }
        ).run()

    def _refuse_unapplied_migrations(self) -> None:
        connection = connections[DEFAULT_DB_ALIAS]
        executor = MigrationExecutor(connection)
        pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
        if pending:
            names = ", ".join(f"{migration.app_label}.{migration.name}" for migration, _ in pending[:5])
            raise CommandError(
                f"The dashboard database has {len(pending)} unapplied migrations ({names}…); "
                "run `memory-admin migrate` first."
            )

    def _collect_static(self) -> None:
        if settings.STORAGES["staticfiles"]["BACKEND"] != MANIFEST_STORAGE or settings.STATIC_ROOT is None:
            raise CommandError(
                "serve needs the production static files setup (hashed, compressed files in STATIC_ROOT); "
                "use memory_admin.dashboard.settings.prod or a settings module built on it."
            )
        call_command("collectstatic", interactive=False, verbosity=0)


def _settle_worker(worker: Any) -> None:
    # the application is loaded: what it loaded stays out of the collector's full walks
    frozen = settle()
    worker.log.info("Worker %s settled: %d start-up objects set aside from the garbage collector", worker.pid, frozen)


def _close_stores(server: object, worker: object) -> None:
    # a clean close checkpoints the SQLite WAL, and flushes buffered events
    reset_stores()


class GunicornApplication(BaseApplication):  # type: ignore[misc]  # gunicorn ships no type hints
    """gunicorn's documented hook for running an application from Python, configured by a dict."""

    def __init__(self, options: dict[str, Any]) -> None:
        self._options = options
        super().__init__(prog="memory-admin serve")

    def load_config(self) -> None:
        for name, value in self._options.items():
            if name in self.cfg.settings:  # a setting an older gunicorn lacks is left out
                self.cfg.set(name, value)

    def load(self) -> Any:
        from memory_admin.dashboard.wsgi import application

        return application
