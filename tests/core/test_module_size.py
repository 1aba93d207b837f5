"""A module of the package over ~600 lines says at its top why it is one module: a
newcomer should find each rule in a file short enough to read, or be told why not."""

from __future__ import annotations

import ast
from pathlib import Path

import memory_admin

PACKAGE = Path(memory_admin.__file__).parent
LONG = 600
REASON = "Why one module:"


def test_every_long_module_says_why_it_is_one() -> None:
    unexplained = []
    for path in sorted(PACKAGE.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        if source.count("\n") <= LONG:
            continue
        docstring = ast.get_docstring(ast.parse(source)) or ""
        if REASON not in docstring:
            unexplained.append(f"{path.relative_to(PACKAGE.parent)} ({source.count(chr(10))} lines)")
    assert not unexplained, f"over {LONG} lines without {REASON!r} in the module docstring: {unexplained}"
