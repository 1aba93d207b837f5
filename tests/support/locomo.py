"""Small files shaped like LoCoMo, for the benchmarks' tests: the real split is not needed.

Each conversation is one session of observations (a fact and the dialog ids it cites)
and its questions, as :func:`bench.locomo.load_dataset` reads them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SESSION_DATE = "1:56 pm on 8 May, 2023"


def conversation(
    name: str,
    facts: list[tuple[str, str | list[str]]],
    qa: list[dict[str, Any]],
    *,
    date: str | None = SESSION_DATE,
    speaker: str = "Ann",
) -> dict[str, Any]:
    """One sample: ``facts`` observed in a session on ``date`` (``None``: undated), and ``qa``.
    The session's dialog says each fact in a turn of its own, with the fact's first dialog id."""
    turns = [
        {"speaker": speaker, "dia_id": dialog if isinstance(dialog, str) else dialog[0], "text": text}
        for text, dialog in facts
    ]
    return {
        "sample_id": name,
        "conversation": {**({"session_1_date_time": date} if date else {}), "session_1": turns},
        "observation": {"session_1_observation": {speaker: [[text, dialog] for text, dialog in facts]}},
        "qa": qa,
    }


def write_dataset(path: Path, *conversations: dict[str, Any]) -> Path:
    """The conversations as a LoCoMo JSON file at ``path``."""
    path.write_text(json.dumps(list(conversations)), encoding="utf-8")
    return path
