"""``python -m memory_admin``: the same command as ``memory-admin``."""

from __future__ import annotations

from memory_admin.dashboard.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
