"""The package as a user gets it: build the wheel, install it into a fresh virtualenv
outside the repository, and drive the installed dashboard through the documented
commands (docs/deploy.md) and a real Chromium: migrate → create a user → serve → sign in
→ browse → a record page.

Needs the package registry for the build backend and the dependencies, nothing else.
"""

from __future__ import annotations

import os
import re
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.dashboard.conftest import expect, opened_page
from tests.dashboard.server import PASSWORD, production_env, run, serving

if TYPE_CHECKING:
    from playwright.sync_api import Browser

REPO = Path(__file__).resolve().parents[2]
# pip's own configuration (the registry) stays; the dashboard's settings do not leak in
PIP_ENV = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "MEMORY_", "DATABASE_URL", "PYTHON"))}

pytestmark = [pytest.mark.slow, pytest.mark.browser]


@dataclass
class Installed:
    wheel: Path
    venv: Path
    env: dict[str, str]
    home: Path

    @property
    def memory_admin(self) -> list[str]:
        return [str(self.venv / "bin" / "memory-admin")]

    def run(self, *args: str) -> str:
        # from a directory outside the repository, so nothing can be imported from the checkout
        return run(args, self.env, cwd=self.home)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    home = tmp_path_factory.mktemp("installed")
    assert REPO not in home.parents
    dist, venv = home / "dist", home / "venv"
    pip = [sys.executable, "-m", "pip"]
    run([*pip, "wheel", "--no-deps", "--quiet", "--wheel-dir", str(dist), str(REPO)], PIP_ENV, cwd=home)
    (wheel,) = dist.glob("memory_admin-*.whl")
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)], PIP_ENV, cwd=home)
    # the test run's own pip installs into the new environment (no bootstrap of its own)
    run([*pip, "--python", str(venv / "bin" / "python"), "install", "--quiet", str(wheel)], PIP_ENV, cwd=home)
    env = production_env(home / "state", DJANGO_SECURE_SSL_REDIRECT="0")  # Chromium talks plain HTTP here
    return Installed(wheel, venv, env, home)


def test_the_wheel_carries_templates_static_files_migrations_and_licences(installed: Installed) -> None:
    names = set(zipfile.ZipFile(installed.wheel).namelist())
    app = "memory_admin/dashboard"
    for name in (
        f"{app}/templates/dashboard/browse.html",
        f"{app}/templates/registration/login.html",
        f"{app}/templates/404.html",
        f"{app}/static/dashboard/style.css",
        f"{app}/static/dashboard/vendor/chartjs/chart.umd.min.js",
        f"{app}/static/dashboard/vendor/chartjs/LICENSE.md",
        f"{app}/migrations/0001_initial.py",
        "memory_admin/py.typed",
    ):
        assert name in names, name
    meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
    metadata = zipfile.ZipFile(installed.wheel).read(meta).decode()
    assert "License-Expression: Apache-2.0" in metadata
    assert any(n.endswith("licenses/LICENSE") for n in names)
    assert any(n.endswith("licenses/static/dashboard/vendor/chartjs/LICENSE.md") for n in names)
    entry_points = zipfile.ZipFile(installed.wheel).read(meta.replace("METADATA", "entry_points.txt")).decode()
    assert "memory-admin = memory_admin.dashboard.cli:main" in entry_points


def test_the_wheel_carries_no_benchmark_and_no_test_code(installed: Installed) -> None:
    """The benchmarks (``bench/``) and the test support code run from a checkout only."""
    names = zipfile.ZipFile(installed.wheel).namelist()
    assert [n for n in names if re.search(r"(^|/)(bench|tests)(/|\.py$)", n)] == []
    assert {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")} == {"memory_admin"}


def test_the_installed_package_runs_from_the_virtualenv(installed: Installed) -> None:
    python = str(installed.venv / "bin" / "python")
    where = installed.run(python, "-c", "import memory_admin; print(memory_admin.__file__)")
    assert Path(where.strip()).is_relative_to(installed.venv)
    assert installed.run(*installed.memory_admin, "--version").startswith("memory-admin ")
    assert "backup" in installed.run(python, "-m", "memory_admin", "--help")


def test_the_documented_commands_bring_up_a_dashboard_a_browser_signs_in_to(
    installed: Installed, browser: Browser
) -> None:
    memory_admin = installed.memory_admin
    installed.run(*memory_admin, "migrate", "--verbosity", "0")
    installed.run(*memory_admin, "demo")
    installed.run(
        *memory_admin, "user", "create", "ines", "--role", "viewer", "--grant", "tenant=acme", "--password", PASSWORD
    )
    assert "tenant=acme" in installed.run(*memory_admin, "stats")

    with serving(memory_admin, installed.env, cwd=installed.home) as server:
        failed: list[str] = []
        with opened_page(browser, server.url, timeout_ms=15_000, viewport={"width": 1280, "height": 900}) as page:
            page.context.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
            page.goto("/")
            assert "/accounts/login/" in page.url
            page.get_by_label("Username").fill("ines")
            page.get_by_label("Password").fill(PASSWORD)
            page.get_by_role("button", name="Sign in").click()
            page.wait_for_url(re.compile(r"/(\?.*)?$"))
            expect(page.get_by_role("heading", name="Memory", exact=True)).to_be_visible()
            assert "ines" in page.locator(".who").inner_text()
            stylesheet = page.locator("link[rel=stylesheet]").first.get_attribute("href") or ""
            assert re.fullmatch(r"/static/dashboard/style\.[0-9a-f]{12}\.css", stylesheet), stylesheet

            page.locator("section.results a[href^='/records/']").first.click()
            page.wait_for_url(re.compile(r"/records/[^/]+/$"))
            expect(page.get_by_text("Provenance", exact=True)).to_be_visible()
            assert failed == []
    assert server.returncode == 0, server.stderr

    backup = installed.home / "backup.sqlite3"
    assert "integrity check ok" in installed.run(*memory_admin, "backup", str(backup))
    assert "integrity check ok" in installed.run(*memory_admin, "restore", "--check", str(backup))
