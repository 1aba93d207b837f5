"""What every benchmark measures with, defined once so two reports' figures mean the same.

Percentiles and timed calls, the machine's load while a run lasts, memory (peak and
current RSS), progress on stderr, a corpus written in batches at a measured rate,
scratch directories, a throwaway PostgreSQL database, child processes that report one
JSON line, and the command line and report file a run leaves behind.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.corpus import batched

ROOT = Path(__file__).resolve().parents[1]
"""The checkout the benchmarks run from: a child process imports ``bench`` from here."""
MS = 1000.0
"""Seconds to milliseconds: samples are timed in seconds, reports speak milliseconds."""
WARMUP = 100
"""Calls :func:`timed` runs untimed first unless told otherwise (page and statement caches)."""

# --- percentiles and timings --------------------------------------------------------------


def _at(ordered: Sequence[float], q: float, nearest: bool) -> float:
    if nearest:
        return ordered[round(q * (len(ordered) - 1))]
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def percentile(samples: Sequence[float], q: float, *, scale: float = 1.0, nearest: bool = False) -> float:
    """The sample at ``q`` (0 to 1) of ``samples`` in order, times ``scale``; NaN without samples.

    The rank is ``int(q × n)`` (capped at the slowest). ``nearest`` takes rank
    ``round(q × (n − 1))`` instead: the dashboard benchmark's rule since its first report,
    kept so its figures compare with the committed ones."""
    if not samples:
        return float("nan")
    return _at(sorted(samples), q, nearest) * scale


def summary(samples: Sequence[float], *, scale: float = 1.0, nearest: bool = False) -> dict[str, float]:
    """p50, p95, p99, mean and max of ``samples``, times ``scale`` (NaN without samples)."""
    if not samples:
        return dict.fromkeys(("p50", "p95", "p99", "mean", "max"), float("nan"))
    ordered = sorted(samples)
    figures = {f"p{round(q * 100)}": _at(ordered, q, nearest) * scale for q in (0.50, 0.95, 0.99)}
    return {**figures, "mean": statistics.fmean(ordered) * scale, "max": ordered[-1] * scale}


def seconds_each(calls: Iterable[Callable[[], object]]) -> list[float]:
    """How long each call took, in seconds."""
    samples = []
    for call in calls:
        started = time.perf_counter()
        call()
        samples.append(time.perf_counter() - started)
    return samples


def timed(
    calls: Sequence[Callable[[], object]],
    *,
    warmup: Sequence[Callable[[], object]] | None = None,
    nearest: bool = False,
) -> dict[str, float]:
    """:func:`summary` of the calls in milliseconds, after running ``warmup`` untimed
    (by default the first :data:`WARMUP` of ``calls``, which are then timed too)."""
    for call in calls[:WARMUP] if warmup is None else warmup:
        call()
    return summary(seconds_each(calls), scale=MS, nearest=nearest)


def timed_pair(
    first: Sequence[Callable[[], object]], second: Sequence[Callable[[], object]], *, chunk: int = 50
) -> tuple[dict[str, float], dict[str, float]]:
    """Two variants of one workload, timed in alternating chunks (which goes first
    alternates too), so a burst of load from elsewhere on the machine hits both alike."""
    for call in [*first[:WARMUP], *second[:WARMUP]]:
        call()
    samples: tuple[list[float], list[float]] = ([], [])
    for turn, start in enumerate(range(0, min(len(first), len(second)), chunk)):
        for which in (0, 1) if turn % 2 == 0 else (1, 0):
            samples[which].extend(seconds_each((first, second)[which][start : start + chunk]))
    return summary(samples[0], scale=MS), summary(samples[1], scale=MS)


# --- the machine ------------------------------------------------------------------------


class LoadSampler:
    """Samples the machine's 1-minute load average every few seconds while a run lasts:
    other work on the machine shows in the figures, so the report says how much there was."""

    def __init__(self, every_s: float = 5.0) -> None:
        self.samples = [os.getloadavg()[0]]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(every_s,), daemon=True)
        self._thread.start()

    def _run(self, every_s: float) -> None:
        while not self._stop.wait(every_s):
            self.samples.append(os.getloadavg()[0])

    def stop(self) -> list[float]:
        self._stop.set()
        self._thread.join()
        self.samples.append(os.getloadavg()[0])
        return self.samples


def load_line(samples: Sequence[float]) -> str:
    """What a report says of the load :class:`LoadSampler` saw."""
    if not samples:
        return "load average not sampled"
    return f"1-minute load average during the run: mean {statistics.fmean(samples):.2f}, peak {max(samples):.2f}"


def measured_on() -> str:
    """When and on how many cores, for a report's first line."""
    return f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {os.cpu_count()} cores"


def peak_rss_mb() -> float:
    """This process's peak resident memory so far, in MB (Linux counts ``ru_maxrss`` in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def rss_mb() -> float:
    """This process's resident memory now, in MB (0 where ``/proc`` does not say)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


# --- writing a corpus -------------------------------------------------------------------


def progress(label: str, done: int, total: int, started: float) -> None:
    """A progress bar on stderr (on a terminal; elsewhere a line at every tenth)."""
    if not sys.stderr.isatty() and done not in (total,) and done % (total // 10 or 1):
        return
    rate = done / max(time.perf_counter() - started, 1e-9)
    width = 30
    filled = int(width * done / total)
    sys.stderr.write(f"\r  {label:<14} [{'#' * filled}{'.' * (width - filled)}] {done:>9,}/{total:,}  {rate:,.0f}/s")
    if done == total:
        sys.stderr.write("\n")
    sys.stderr.flush()


def ingest(
    label: str,
    write: Callable[[list[dict[str, Any]]], object],
    inputs: Iterable[dict[str, Any]],
    total: int,
    *,
    batch: int = 1000,
) -> float:
    """Records per second writing ``total`` ``inputs`` through ``write`` in batches, with progress."""
    started = time.perf_counter()
    done = 0
    for records in batched(iter(inputs), batch):
        write(records)
        done += len(records)
        progress(label, done, total, started)
    return total / (time.perf_counter() - started)


@contextmanager
def tuned(**settings: Any) -> Iterator[None]:
    """:mod:`memory_admin.tuning`'s named settings at these values for the block (a choice
    switched or tried), restored after; a name the module lacks raises ``AttributeError``."""
    from memory_admin import tuning

    kept = {name: getattr(tuning, name) for name in settings}
    for name, value in settings.items():
        setattr(tuning, name, value)
    try:
        yield
    finally:
        for name, value in kept.items():
            setattr(tuning, name, value)


# --- where a run keeps its data ---------------------------------------------------------


@contextmanager
def scratch(prefix: str, *, keep: Path | None = None, parent: Path | None = None) -> Iterator[Path]:
    """A directory for a run's files: ``keep`` itself (made if missing, left afterwards),
    else a fresh one (under ``parent`` if given) deleted afterwards."""
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        yield keep
        return
    with tempfile.TemporaryDirectory(prefix=prefix, dir=parent) as folder:
        yield Path(folder)


def sqlite_url(folder: Path) -> str:
    """A store URL for a fresh SQLite memory file in ``folder``."""
    return f"sqlite:///{folder / 'memory.sqlite3'}"


@contextmanager
def throwaway_postgres(
    parser: argparse.ArgumentParser, database: str, settings: dict[str, str] | None = None
) -> Iterator[str]:
    """The URL of ``database`` on a private cluster started for the run (PostgreSQL's durable
    defaults, plus ``settings``) and deleted afterwards. A machine that cannot start one ends
    the command with the reason. The cluster code is the tests' support code: benchmarks
    run from a checkout."""
    from tests.support.postgres import ClusterUnavailable, start_cluster

    try:
        cluster = start_cluster(owner_pid=os.getpid(), settings=settings)
    except (ClusterUnavailable, ValueError) as exc:
        parser.error(str(exc))
    try:
        yield cluster.create_database(database)
    finally:
        cluster.stop()


# --- child processes and what a run leaves behind ---------------------------------------


def run_child(module: str, *args: str) -> dict[str, Any]:
    """``python -m module args…`` in a fresh interpreter (its memory and load time its own),
    and the JSON object it printed last."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))}
    child = subprocess.run(
        [sys.executable, "-m", module, *args], check=True, stdout=subprocess.PIPE, text=True, env=env
    )
    figures: dict[str, Any] = json.loads(child.stdout.strip().splitlines()[-1])
    return figures


def answer_parent(figures: dict[str, Any]) -> int:
    """What a child of :func:`run_child` ends with: its figures as one JSON line (exit status 0)."""
    print(json.dumps(figures))
    return 0


def command(module: str, argv: Sequence[str] | None) -> str:
    """The command line a report cites: ``python -m module`` and the arguments (the process's
    own when ``argv`` is None), quoted as a shell would need them."""
    return shlex.join(["python", "-m", module, *(sys.argv[1:] if argv is None else argv)])


def fenced(title: str, command_line: str, text: str) -> str:
    """A report file: its title, the command in a code block, then the report."""
    return f"# {title}\n\n```\n{command_line}\n```\n\n{text}\n"


def write_report(path: Path | None, text: str) -> None:
    """Also write the report to ``path`` (``--out``), when given."""
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
