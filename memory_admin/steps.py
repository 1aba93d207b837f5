"""Steps and their drivers: logic written once, run sync or async.

A piece of logic that needs I/O is written as a generator that *yields* a request (a
SQL statement, a store search, a store call) and receives its answer, then *returns*
its result. It never does the I/O itself, so one generator serves every caller:
:func:`run_steps` answers its requests with a plain function, :func:`arun_steps` with
an awaitable one. The store's operations, SQL backends' statements, recall's searches
and the toolbox's store calls are all written this way and share these two drivers.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from typing import Any, TypeVar

Request = TypeVar("Request")
Result = TypeVar("Result")

Steps = Generator[Request, Any, Result]
"""Steps that yield requests, receive each one's answer and return a ``Result``:
``Steps[Statement, int]`` (a SQL backend's primitive), ``Steps[Unit | Compute, list[MemoryHit]]``
(a store operation), ``Steps[MemorySearchQuery, …]`` (recall's searches),
``Steps[StoreCall, …]`` (a tool's store calls). The one word for the one idea."""


def run_steps(steps: Steps[Request, Result], answer: Callable[[Request], Any]) -> Result:
    """Run ``steps`` to completion, answering each request with ``answer(request)``.

    An exception from ``answer`` is thrown into the generator at its ``yield``, so a
    step can handle (or clean up after) a failed request as ordinary code would.
    """
    try:
        request = next(steps)
        while True:
            try:
                reply = answer(request)
            except BaseException as exc:
                request = steps.throw(exc)
            else:
                request = steps.send(reply)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


async def arun_steps(steps: Steps[Request, Result], answer: Callable[[Request], Awaitable[Any]]) -> Result:
    """The async twin of :func:`run_steps`: each request is answered by awaiting ``answer``."""
    try:
        request = next(steps)
        while True:
            try:
                reply = await answer(request)
            except BaseException as exc:
                request = steps.throw(exc)
            else:
                request = steps.send(reply)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


__all__ = ["Steps", "arun_steps", "run_steps"]
