"""A one-line progress bar for the commands that copy files (backup, restore)."""

from __future__ import annotations

from django.core.management.base import OutputWrapper

WIDTH = 30


class ProgressBar:
    """``bar(done, total)`` redraws ``label [#####·····]  50%`` in place on a terminal.

    Elsewhere (a log file, cron mail, a pipe) it stays silent: carriage returns make a
    mess of logs, and the command's closing line says what was done."""

    def __init__(self, stream: OutputWrapper, label: str, *, enabled: bool | None = None) -> None:
        self._stream = stream
        self._label = label
        self._enabled = stream.isatty() if enabled is None else enabled
        self._shown = -1

    def __call__(self, done: int, total: int) -> None:
        if not self._enabled or total <= 0:
            return
        percent = min(100, done * 100 // total)
        if percent == self._shown:
            return
        self._shown = percent
        filled = WIDTH * percent // 100
        self._stream.write(f"\r{self._label} [{'#' * filled}{'·' * (WIDTH - filled)}] {percent:3d}%", ending="")
        self._stream.flush()

    def finish(self) -> None:
        if self._enabled and self._shown >= 0:
            self._stream.write("")  # end the bar's line
