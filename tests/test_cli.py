"""``memory-admin``: one entry point over the management commands, with help that needs
no configuration and errors that say what to set."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from memory_admin.dashboard.cli import SUBCOMMANDS, main, usage

MEMORY_ADMIN = [sys.executable, "-m", "memory_admin"]


def bare_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "MEMORY_", "DATABASE_URL"))}
    env.update(extra)
    return env


def memory_admin(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MEMORY_ADMIN, *args], env=bare_env(**env), capture_output=True, text=True, timeout=60, check=False
    )


def test_the_issue_s_commands_are_all_there() -> None:
    expected = {"serve", "demo", "user", "import", "search", "stats", "backup", "restore", "migrate"}
    assert expected <= set(SUBCOMMANDS)
    assert all(name in usage() for name in SUBCOMMANDS)


def test_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: memory-admin")
    assert "backup " in out and "DJANGO_SECRET_KEY" in out


def test_an_unknown_command_says_where_the_list_is(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["frobnicate"]) == 2
    assert "memory-admin --help" in capsys.readouterr().err


@pytest.mark.parametrize("args", [("backup", "--help"), ("help", "backup")])
def test_a_command_s_help_needs_no_configuration(args: tuple[str, ...]) -> None:
    done = memory_admin(*args)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: memory-admin backup")
    assert "online backup API" in done.stdout


@pytest.mark.parametrize("name", [name for name, sub in SUBCOMMANDS.items() if sub.signs])
def test_a_missing_secret_key_is_named_with_a_way_to_make_one(name: str, tmp_path: Path) -> None:
    done = memory_admin(name, MEMORY_ADMIN_VAR_DIR=str(tmp_path))
    assert done.returncode == 2
    assert "DJANGO_SECRET_KEY" in done.stderr and "secrets.token_urlsafe" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_dashboard_s_side_is_what_needs_the_secret_key() -> None:
    assert {name for name, sub in SUBCOMMANDS.items() if sub.signs} == {"serve", "migrate", "user", "manage"}


def test_the_store_s_commands_need_no_secret_key(tmp_path: Path) -> None:
    """An agent developer looks into a memory file with nothing but its URL."""
    store = f"sqlite:///{tmp_path / 'memory.sqlite'}"
    env = {"MEMORY_ADMIN_VAR_DIR": str(tmp_path), "MEMORY_STORE_URL": store}
    demo = memory_admin("demo", **env)
    assert demo.returncode == 0, demo.stderr
    stats = memory_admin("stats", **env)
    assert stats.returncode == 0, stats.stderr
    assert "acme" in stats.stdout
    found = memory_admin("search", "tenant=acme,user=dana", "tea", "--mode", "keyword", **env)
    assert found.returncode == 0, found.stderr
    assert "green tea" in found.stdout
    assert "DJANGO_SECRET_KEY" not in found.stderr + stats.stderr + demo.stderr


def test_a_command_error_exits_1_with_its_message(tmp_path: Path) -> None:
    done = memory_admin(
        "backup",
        "--store",
        "postgresql://memory@db/memory",
        DJANGO_SECRET_KEY="k" * 60,
        MEMORY_ADMIN_VAR_DIR=str(tmp_path),
    )
    assert done.returncode == 1
    assert "pg_dump" in done.stderr and "Traceback" not in done.stderr


def test_version() -> None:
    done = memory_admin("--version")
    assert done.returncode == 0 and done.stdout.startswith("memory-admin 0.")
