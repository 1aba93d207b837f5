"""Reading a composition from a file (TOML or JSON) or from data, with typed errors."""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Mapping
from os import PathLike
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from memory_admin.composition.model import AgentComposition
from memory_admin.errors import CompositionError
from memory_admin.records import validation_problems

FORMATS = {".toml": "TOML", ".json": "JSON"}
MAX_FILE_BYTES = 4 * 1024 * 1024

# Python 3.11's TOMLDecodeError says where only in its message: "… (at line 3, column 8)"
_TOML_PLACE = re.compile(r"\s*\(at line (\d+), column (\d+)\)$")


def parse_composition(data: AgentComposition | Mapping[str, Any], *, path: str | None = None) -> AgentComposition:
    """``data`` (a composition's JSON-shaped mapping) as an :class:`AgentComposition`.

    Raises :class:`~memory_admin.errors.CompositionError` listing every broken field by its
    path (``judgments.0.domain``), naming ``path`` when the data came from a file."""
    if isinstance(data, AgentComposition):
        return data
    if not isinstance(data, Mapping):
        raise CompositionError(
            _where(path) + "a composition is a table of fields (name, persona, judgments, …)", path=path
        )
    try:
        return AgentComposition.model_validate(data)
    except ValidationError as exc:
        problems = validation_problems(exc)
        listed = "; ".join(f"{p['loc']}: {p['msg']}" for p in problems[:5])
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        raise CompositionError(
            f"{_where(path)}invalid composition: {listed}{more}. Fix the fields named and load it again.",
            problems,
            path=path,
        ) from None


def load_composition(path: str | PathLike[str]) -> AgentComposition:
    """The composition in the file at ``path``: TOML (``.toml``, read with ``tomllib``) or
    JSON (``.json``).

    Every failure is a :class:`~memory_admin.errors.CompositionError` naming the file: one
    that cannot be read, is not UTF-8, is larger than 4 MiB, does not parse (with the
    line and column the parser gives), or whose content breaks a rule (each field's
    path)."""
    file = Path(path)
    shown = str(file)
    kind = FORMATS.get(file.suffix.lower())
    if kind is None:
        raise CompositionError(
            f"{shown}: a composition file ends in .toml or .json (this one ends in {file.suffix or 'nothing'!r}).",
            path=shown,
        )
    try:
        size = file.stat().st_size
        if size > MAX_FILE_BYTES:
            raise CompositionError(
                f"{shown}: the file holds {size} bytes; a composition holds at most {MAX_FILE_BYTES}.", path=shown
            )
        raw = file.read_bytes()
    except OSError as exc:
        raise CompositionError(
            f"{shown}: cannot read the composition file ({exc.strerror or exc}).", path=shown
        ) from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise CompositionError(f"{shown}: line {line} is not UTF-8 text.", path=shown, line=line) from None
    data = _parse_toml(text, shown) if kind == "TOML" else _parse_json(text, shown)
    return parse_composition(data, path=shown)


def _parse_toml(text: str, shown: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        place = _TOML_PLACE.search(message)
        line, column = (int(place[1]), int(place[2])) if place else (None, None)
        detail = _TOML_PLACE.sub("", message)
        at = f"line {line}, column {column}: " if place else ""
        raise CompositionError(
            f"{shown}: {at}not valid TOML ({detail}).", path=shown, line=line, column=column
        ) from None


def _parse_json(text: str, shown: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CompositionError(
            f"{shown}: line {exc.lineno}, column {exc.colno}: not valid JSON ({exc.msg}).",
            path=shown,
            line=exc.lineno,
            column=exc.colno,
        ) from None


def _where(path: str | None) -> str:
    return f"{path}: " if path else ""
