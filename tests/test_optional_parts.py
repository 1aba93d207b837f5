"""A missing extra or binary skips locally and fails where the run must test everything (CI)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from tests.support import optional
from tests.support.optional import REQUIRE_ALL_ENV, needs_extra, unavailable


def test_a_missing_piece_skips_locally_and_fails_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(REQUIRE_ALL_ENV, raising=False)
    with pytest.raises(pytest.skip.Exception, match="initdb"):
        unavailable("initdb was not found")
    monkeypatch.setenv(REQUIRE_ALL_ENV, "1")
    with pytest.raises(pytest.fail.Exception, match="a skip here is a failure"):
        unavailable("initdb was not found")


def test_a_missing_extra_is_named_with_its_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(optional.EXTRAS, "imaginary", ("pytest", "memory_admin_no_such_module"))
    monkeypatch.delenv(REQUIRE_ALL_ENV, raising=False)
    reason = needs_extra("imaginary")
    assert reason == "needs the imaginary extra (pip install -e '.[imaginary]')"
    with pytest.raises(pytest.skip.Exception, match=r"needs the imaginary extra"):
        pytest.importorskip("memory_admin_no_such_module", reason=reason)
    monkeypatch.setenv(REQUIRE_ALL_ENV, "1")
    with pytest.raises(pytest.fail.Exception, match="No module named 'memory_admin_no_such_module'"):
        needs_extra("imaginary")


def test_every_extra_of_the_project_is_known() -> None:
    project = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text(encoding="utf-8"))
    extras = set(project["project"]["optional-dependencies"]) - {"dev"}
    assert set(optional.EXTRAS) == extras
