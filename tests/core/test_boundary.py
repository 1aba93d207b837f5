"""The store library never imports Django (nor the single sign-on client and its JWT
library): only memory_admin.dashboard may.

One fresh interpreter imports every core module in turn and, after each, looks whether
Django (or a Django app) has entered ``sys.modules``: the module that pulled it in is
named, Django is forgotten again, and the next one is checked the same way. The agent
surfaces (recall, the toolbox, retention, the MCP server) are core modules; the
benchmarks of the store library (all of ``bench/`` but the dashboard's) are checked too.
"""

from __future__ import annotations

import os
import pkgutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import bench
import memory_admin
from tests.support.child import ROOT, report, run_python
from tests.support.optional import EXTRAS, needs_extra, unavailable

FRAMEWORK = ("django", "django_htmx", "whitenoise", "mozilla_django_oidc", "jwt")

CORE_MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(memory_admin.__path__, prefix="memory_admin.")
    if not info.name.startswith("memory_admin.dashboard")
)
BENCH_MODULES = sorted(
    info.name for info in pkgutil.walk_packages(bench.__path__, prefix="bench.") if info.name != "bench.dashboard"
)

CHECKER = """
import importlib, json, sys
FRAMEWORK = tuple(sys.argv[1].split(","))
found = {}
for name in sys.argv[2:]:
    try:
        importlib.import_module(name)
    except ModuleNotFoundError as exc:
        found[name] = {"missing": exc.name}
        continue
    pulled = sorted(m for m in sys.modules if m.split(".")[0] in FRAMEWORK)
    if pulled:
        found[name] = {"pulled": pulled}
        for module in pulled:  # forgotten, so that the next module importing it is named too
            del sys.modules[module]
print(json.dumps(found))
"""


def check_imports(modules: Sequence[str], *, path: Path = ROOT) -> dict[str, dict[str, Any]]:
    """Import ``modules`` one by one in one fresh interpreter (``path`` first on its
    import path): each that pulled in a framework module (``pulled``), or could not be
    imported for a missing module (``missing``). Modules that import cleanly are absent."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(path), os.environ.get("PYTHONPATH"))))}
    found: dict[str, dict[str, Any]] = report(run_python(CHECKER, ",".join(FRAMEWORK), *modules, env=env, cwd=path))
    return found


@pytest.fixture(scope="module")
def imported() -> dict[str, dict[str, Any]]:
    return check_imports([*CORE_MODULES, *BENCH_MODULES])


def test_the_core_modules_are_found() -> None:
    assert {
        "memory_admin.records",
        "memory_admin.store.sqlite",
        "memory_admin.conformance.kit",
        "memory_admin.reports.health",
        "memory_admin.reports.recall_stats",
        "memory_admin.recall",
        "memory_admin.toolbox",
        "memory_admin.retention",
        "memory_admin.mcp_server",
    } <= set(CORE_MODULES)
    assert {"bench.store", "bench.locomo", "bench.measure"} <= set(BENCH_MODULES)


def test_importing_a_core_module_never_imports_django(imported: dict[str, dict[str, Any]]) -> None:
    pulled = {module: found["pulled"] for module, found in imported.items() if "pulled" in found}
    assert pulled == {}, "these modules import Django (or a Django app)"


def test_every_core_module_was_imported(imported: dict[str, dict[str, Any]]) -> None:
    """A module that could not be imported was not checked: only a missing optional extra
    excuses it (a skip, a failure in CI)."""
    missing = {module: found["missing"] for module, found in imported.items() if "missing" in found}
    extra_of = {name: extra for extra, names in EXTRAS.items() for name in names}
    unexplained = {module: name for module, name in missing.items() if name.split(".")[0] not in extra_of}
    assert unexplained == {}, "these modules import something no extra installs"
    if missing:
        extras = sorted({extra_of[name.split(".")[0]] for name in missing.values()})
        reasons = "; ".join(needs_extra(extra) for extra in extras)
        unavailable(f"not checked: {', '.join(sorted(missing))} ({reasons})")


def test_the_check_names_each_module_that_imports_django(tmp_path: Path) -> None:
    package = tmp_path / "boundary_probe"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "clean.py").write_text("import json\n")
    (package / "direct.py").write_text("import django.conf\n")
    (package / "indirect.py").write_text("from boundary_probe import direct\n")
    (package / "later.py").write_text("import django_htmx\n")
    (package / "broken.py").write_text("import boundary_probe_no_such_module\n")
    modules = [f"boundary_probe.{name}" for name in ("clean", "direct", "indirect", "later", "broken")]
    found = check_imports(modules, path=tmp_path)
    # indirect pulls Django in through direct, which is named already
    assert set(found) == {"boundary_probe.direct", "boundary_probe.later", "boundary_probe.broken"}
    assert {"django", "django.conf"} <= set(found["boundary_probe.direct"]["pulled"])
    assert "django_htmx" in found["boundary_probe.later"]["pulled"], "named though Django was already seen"
    assert found["boundary_probe.broken"] == {"missing": "boundary_probe_no_such_module"}


RUN_WITHOUT_DJANGO = """
import json, sys, pytest
code = pytest.main(["-q", "-p", "no:django", "-p", "no:cacheprovider", sys.argv[1]])
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in sys.argv[2].split(","))))
sys.exit(int(code))
"""


def test_the_reports_are_tested_without_django() -> None:
    """The reports' tests pass with pytest-django switched off, and nothing imports Django."""
    assert report(run_python(RUN_WITHOUT_DJANGO, str(ROOT / "tests" / "reports"), ",".join(FRAMEWORK))) == []
