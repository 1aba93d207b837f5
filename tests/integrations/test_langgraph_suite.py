"""LangGraph's own store tests, run against MemoryAdminStore on SQLite and PostgreSQL.

The tests are not copied into this repository: the source distributions of the pinned
releases are fetched from the package index with pip at test time (cached under the
pytest cache), their ``tests/`` directories extracted, and each suite run in a child
pytest whose plugin (langgraph_suite/memory_admin_langgraph_shim.py) makes their stores
ours. The tests that do not pass are the table in docs/integrations.md, with why: they
are expected to fail (strictly: one that starts passing fails this test too, so the
table stays true); any other failure fails this test.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ET
from importlib import metadata
from pathlib import Path

import pytest

pytest.importorskip("langgraph.store.sqlite", reason="needs the langgraph extra and langgraph-checkpoint-sqlite (dev)")

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "integrations.md"
SHIM_DIR = Path(__file__).resolve().parent / "langgraph_suite"

SUITES: dict[str, tuple[str, tuple[str, ...]]] = {
    # package: (pinned release, its store test modules)
    "langgraph-checkpoint-sqlite": ("3.1.2", ("test_store.py", "test_async_store.py", "test_ttl.py")),
    "langgraph-checkpoint": ("4.3.2", ("test_store.py",)),
}
SUITE_INI = """[pytest]
asyncio_mode = auto
asyncio_default_fixture_loop_scope = function
"""
_ROW = re.compile(
    r"^\|\s*`(?P<suite>[a-z-]+)`\s*\|\s*`(?P<test>[^`]+)`\s*\|\s*(?P<on>[a-z, ]+?)\s*\|\s*(?P<why>.+?)\s*\|$"
)


def known_failures(suite: str, backend: str) -> dict[str, str]:
    """The doc's table of LangGraph tests that do not pass: test → why, for this backend."""
    known: dict[str, str] = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        row = _ROW.match(line.strip())
        if row is None or row["suite"] != suite:
            continue
        backends = {part.strip() for part in row["on"].split(",")}
        if "both" in backends or backend in backends:
            known[row["test"]] = row["why"]
    return known


def _cache_dir(config: pytest.Config) -> Path:
    cache = getattr(config, "cache", None)
    if cache is not None:
        return Path(cache.mkdir("langgraph-suites"))
    return ROOT / "var" / "langgraph-suites"  # -p no:cacheprovider


def suite_tests(config: pytest.Config, package: str) -> Path:
    """The pinned release's tests/ directory, fetched once with pip and kept in the cache."""
    version, _ = SUITES[package]
    target = _cache_dir(config) / f"{package}-{version}"
    if (target / "tests" / "__init__.py").exists():
        return target
    with tempfile.TemporaryDirectory() as download:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--quiet",
                "--no-deps",
                "--no-binary",
                ":all:",
                f"{package}=={version}",
                "-d",
                download,
            ],
            check=True,
            capture_output=True,
            timeout=600,
        )
        [archive] = Path(download).glob("*.tar.gz")
        staging = Path(tempfile.mkdtemp(dir=target.parent if target.parent.exists() else None))
        with tarfile.open(archive) as tar:
            members = [m for m in tar.getmembers() if m.name.split("/")[1:2] == ["tests"]]
            tar.extractall(staging, members=members, filter="data")
        [top] = staging.iterdir()
        target.parent.mkdir(parents=True, exist_ok=True)
        (top / "pytest.ini").write_text(SUITE_INI, encoding="utf-8")
        top.rename(target)
        staging.rmdir()
    return target


def test_the_pins_are_the_installed_releases() -> None:
    # their tests import the installed package's helpers: the two must be one release
    for package, (version, _) in SUITES.items():
        assert metadata.version(package) == version, f"pyproject pins {package}=={version}"


def test_the_table_names_tests_that_exist(request: pytest.FixtureRequest) -> None:
    for package, (_, modules) in SUITES.items():
        root = suite_tests(request.config, package)
        for test in known_failures(package, "sqlite") | known_failures(package, "postgres"):
            module, _, name = test.partition("::")
            assert module in modules, f"{package}: {test} is not in a store test module"
            if name == "*":
                continue
            source = (root / "tests" / module).read_text(encoding="utf-8")
            assert re.search(rf"def {re.escape(name.split('::')[-1].split('[')[0])}\(", source), f"{package}: {test}"


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
@pytest.mark.parametrize("package", list(SUITES))
def test_langgraph_store_suite(package: str, backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    root = suite_tests(request.config, package)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "DJANGO_"))}
    env.update(
        PYTEST_DISABLE_PLUGIN_AUTOLOAD="1",
        PYTHONPATH=str(SHIM_DIR),
        MEMORY_ADMIN_LG_BACKEND=backend,
        MEMORY_ADMIN_LG_KNOWN=str(tmp_path / "known.json"),
    )
    (tmp_path / "known.json").write_text(json.dumps(known_failures(package, backend)), encoding="utf-8")
    if backend == "postgres":
        from tests.postgres_cluster import STORE_TABLES

        env.update(MEMORY_ADMIN_LG_POSTGRES_URL=request.getfixturevalue("postgres_url"))
        env.update(MEMORY_ADMIN_LG_TABLES=", ".join(STORE_TABLES))
    report = tmp_path / "report.xml"
    _, modules = SUITES[package]
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "memory_admin_langgraph_shim",
            "-p",
            "pytest_asyncio.plugin",
            "-p",
            "pytest_mock.plugin",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(root),
            "-c",
            str(root / "pytest.ini"),
            f"--junitxml={report}",
            "-rfE",
            *(f"tests/{m}" for m in modules),
        ],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    unexpected = _failures(report)
    assert run.returncode == 0 and not unexpected, (
        f"LangGraph's {package} store tests on {backend}: failures beyond docs/integrations.md's table "
        f"(or listed ones that now pass): {unexpected}\n" + run.stdout[-6000:] + run.stderr[-3000:]
    )


def _failures(report: Path) -> list[str]:
    if not report.exists():
        return ["(no report: the child pytest did not run)"]
    failed = []
    for case in ET.parse(report).getroot().iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed.append(f"{case.get('classname')}::{case.get('name')}")
    return failed
