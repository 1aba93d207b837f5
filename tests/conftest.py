from __future__ import annotations

import pytest

# the kit lives in the package; show its assertion values like any test's
pytest.register_assert_rewrite("memory_admin.conformance")
