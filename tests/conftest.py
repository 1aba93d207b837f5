from __future__ import annotations

import pytest

# the throwaway PostgreSQL cluster's fixtures (postgres_url, fresh_postgres_database, …)
pytest_plugins = ["tests.postgres_cluster"]

# the kit lives in the package; show its assertion values like any test's
pytest.register_assert_rewrite("memory_admin.conformance")
