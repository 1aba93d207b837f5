"""How the commands say a number of things: "1 record", "2 records"."""

from __future__ import annotations


def counted(number: int, noun: str) -> str:
    """``number`` and ``noun``, the noun plural (an ``s`` added) unless there is one."""
    return f"{number:,} {noun}" if number == 1 else f"{number:,} {noun}s"


__all__ = ["counted"]
