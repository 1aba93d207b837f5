"""Option types the commands share: a bad value is refused by the parser, with the
command's usage, before anything is opened or written."""

from __future__ import annotations

from argparse import ArgumentTypeError


def count(text: str) -> int:
    """A whole number, 1 or more (a batch size, a limit)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise ArgumentTypeError(f"{text!r} is not a count: give a whole number, 1 or more")
    return value


__all__ = ["count"]
