"""The cycle collector paused while a large plan is read and drawn.

A report, or the board's page of a plan, builds hundreds of thousands of
objects with no cycle among them (rows, events, views, spans), and each of
the cycle collector's passes walks every such object still alive: its passes
grew with the plan (bench/bench_report.py, bench/bench_board.py). Reference
counting frees these objects as ever; the collector resumes, and runs as
usual, after.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


@contextmanager
def no_cycle_passes() -> Iterator[None]:
    """The cycle collector paused inside the block; as it was after (a caller
    that paused it already keeps it paused)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def acyclic(fn: F) -> F:
    """`fn` run with the cycle collector paused (`no_cycle_passes`)."""

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        with no_cycle_passes():
            return fn(*args, **kwargs)

    return run  # type: ignore[return-value]
