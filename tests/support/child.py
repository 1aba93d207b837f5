"""A script run in a fresh interpreter, and the report it prints on its last line.

The tests that must see a module load as a new process would (what it imports, what a
setting reads from the environment) run a short script this way; the script prints its
findings as one JSON line, last, and a failed run shows the tail of its output.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
TAIL = 3000
"""How much of a failed child's stdout and stderr (each) an assertion shows."""


def run_python(
    code: str, *args: str, env: dict[str, str] | None = None, cwd: Path = ROOT, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """``python -c code args…`` with this run's interpreter, its output captured."""
    command = [sys.executable, "-c", code, *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout, check=False)


def tail(done: subprocess.CompletedProcess[str]) -> str:
    """The end of a child's output, for an assertion's message."""
    return f"exit status {done.returncode}\n--- stdout\n{done.stdout[-TAIL:]}\n--- stderr\n{done.stderr[-TAIL:]}"


def report(done: subprocess.CompletedProcess[str]) -> Any:
    """The JSON a child printed last, once it exited 0."""
    assert done.returncode == 0, tail(done)
    return json.loads(done.stdout.strip().splitlines()[-1])
