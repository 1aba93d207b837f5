"""``memory-admin`` (also ``python -m memory_admin``): the installed package's one command.

Each subcommand runs one of the dashboard's Django management commands, so
``memory-admin stats`` and ``manage.py memory_stats`` in a checkout are the same code
with the same options. Settings come from ``$DJANGO_SETTINGS_MODULE``, else the
production settings (``memory_admin.dashboard.settings.prod``, configured from the
environment: docs/deploy.md), so the server and every command an operator runs beside
it agree on the same dashboard database and memory store.

Django is imported only once a subcommand runs: this module is importable (and
``--help`` answers) without settings.
"""

from __future__ import annotations

import os
import secrets
import sys
from collections.abc import Sequence
from dataclasses import dataclass

PROG = "memory-admin"
SETTINGS_ENV = "DJANGO_SETTINGS_MODULE"
PRODUCTION_SETTINGS = "memory_admin.dashboard.settings.prod"
# --help needs no secret key, hosts or database: the help text never depends on them
HELP_SETTINGS = "memory_admin.dashboard.settings.base"
SECRET_KEY_HINT = """Make one with: python -c 'import secrets; print(secrets.token_urlsafe(50))'"""


@dataclass(frozen=True)
class Subcommand:
    command: str  # the management command it runs
    summary: str
    # the dashboard's side (sessions, CSRF tokens, the audit log's keyed hashes) needs the
    # operator's DJANGO_SECRET_KEY; a command that only reads or writes the memory store
    # signs nothing that outlives it, so it runs without one
    signs: bool = False


SUBCOMMANDS: dict[str, Subcommand] = {
    "serve": Subcommand(
        "memory_serve", "run the dashboard on gunicorn (production settings, hashed static files)", signs=True
    ),
    "migrate": Subcommand(
        "migrate", "create or upgrade the dashboard's own tables (run before serve, after upgrades)", signs=True
    ),
    "user": Subcommand("memory_user", "create dashboard users; set their role and scope grants", signs=True),
    "demo": Subcommand("memory_demo", "fill a memory store with the demo corpus (idempotent)"),
    "import": Subcommand("memory_import", "write memory records from a JSON Lines file"),
    "search": Subcommand("memory_search", "search the memories of a scope"),
    "stats": Subcommand("memory_stats", "count records by tenant, kind and state"),
    "backup": Subcommand("memory_backup", "copy the SQLite memory file consistently while agents write to it"),
    "restore": Subcommand("memory_restore", "restore the SQLite memory file from a backup (stop its users first)"),
    "copy": Subcommand("memory_copy", "copy every record and event into another store (SQLite to PostgreSQL)"),
    "prune-events": Subcommand("memory_events_prune", "delete memory events older than an age"),
    "scrub": Subcommand("memory_scrub", "finish a delete or erasure whose scrub is pending"),
    "embed": Subcommand("memory_embed", "give every record its vector for search by meaning (resumable; --rebuild)"),
    "compose": Subcommand(
        "memory_compose", "print an agent's prompt: its composition with the promoted learnings, traced"
    ),
    "promote": Subcommand("memory_promote", "run the promotion gates over a scope's candidates (--dry-run)"),
    "learnings": Subcommand("memory_learnings", "what the agents of a scope learnt since a time"),
    "review": Subcommand(
        "memory_review", "a person's decision: approve, reject, roll back, pick a conflict's survivor"
    ),
    "garden": Subcommand("memory_garden", "propose curation of a scope's learnings; accept or reject proposals"),
    "manage": Subcommand("", "any other Django management command, e.g. `manage changepassword NAME`", signs=True),
}

DESCRIPTION = "Cross-session memory for LLM agents: the dashboard's server and the memory store's tools."
EPILOG = f"""\
Settings come from the environment (docs/deploy.md): DJANGO_SECRET_KEY (serve, migrate,
user and manage; the store's commands need none), DJANGO_ALLOWED_HOSTS, MEMORY_STORE_URL
(the store the agents use), DATABASE_URL (the dashboard's own tables), MEMORY_ADMIN_VAR_DIR;
${SETTINGS_ENV} selects another settings module (default: {PRODUCTION_SETTINGS}).

`{PROG} COMMAND --help` describes one command."""


def usage() -> str:
    width = max(len(name) for name in SUBCOMMANDS)
    lines = [f"usage: {PROG} [--version] COMMAND [OPTIONS]", "", DESCRIPTION, "", "commands:"]
    lines += [f"  {name:<{width}}  {sub.summary}" for name, sub in SUBCOMMANDS.items()]
    return "\n".join([*lines, "", EPILOG, ""])


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        sys.stdout.write(usage())
        return 0
    if args[0] == "--version":
        from memory_admin import __version__

        sys.stdout.write(f"{PROG} {__version__}\n")
        return 0
    if args[0] == "help":  # `memory-admin help backup` reads like `memory-admin backup --help`
        args = [*args[1:2], "--help"] if len(args) > 1 else ["--help"]
        return main(args)
    name, rest = args[0], args[1:]
    sub = SUBCOMMANDS.get(name)
    if sub is None:
        sys.stderr.write(f"{PROG}: unknown command {name!r}; `{PROG} --help` lists the commands.\n")
        return 2
    chosen = _settings_option(rest)
    if chosen:  # Django's --settings, which must be known before Django starts
        os.environ[SETTINGS_ENV] = chosen
    asks_help = any(arg in ("-h", "--help") for arg in rest)
    if not sub.signs and not os.environ.get("DJANGO_SECRET_KEY"):
        # the production settings refuse to start without a key; this command signs
        # nothing, so a key of its own, never stored, stands in
        os.environ["DJANGO_SECRET_KEY"] = secrets.token_urlsafe(50)
    return _run(name, sub, rest, settings_module=HELP_SETTINGS if asks_help else PRODUCTION_SETTINGS)


def _settings_option(args: list[str]) -> str | None:
    for i, arg in enumerate(args):
        if arg.startswith("--settings="):
            return arg.partition("=")[2]
        if arg == "--settings" and i + 1 < len(args):
            return args[i + 1]
    return None


def _run(name: str, sub: Subcommand, rest: list[str], *, settings_module: str) -> int:
    os.environ.setdefault(SETTINGS_ENV, settings_module)
    import django
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import ManagementUtility

    try:
        django.setup()
        _ensure_state_dir()
    except ImproperlyConfigured as exc:
        message = str(exc)
        if "DJANGO_SECRET_KEY" in message:
            message += f" {SECRET_KEY_HINT}"
        sys.stderr.write(f"{PROG} {name}: {message}\n")
        return 2
    if not sub.command:  # manage: Django's own dispatcher, under our name
        ManagementUtility([f"{PROG} manage", *rest]).execute()
        return 0
    command = ManagementUtility([PROG]).fetch_command(sub.command)
    # run_from_argv names the parser "memory-admin NAME", runs the system checks, and
    # turns a CommandError into its message and exit status 1
    command.run_from_argv([PROG, name, *rest])
    return 0


def _ensure_state_dir() -> None:
    """The default state directory (the dashboard's SQLite database, collected static
    files, the default memory file) is created on first use."""
    from django.conf import settings

    var_dir = getattr(settings, "VAR_DIR", None)
    if var_dir is not None:
        os.makedirs(var_dir, mode=0o700, exist_ok=True)


__all__ = ["SUBCOMMANDS", "main", "usage"]
