"""Read the next transcripts in a second process while this one writes.

An import spends about as long finding the todo calls in a folder of
transcripts (scanning every byte) as writing them into the ledger, and each
half keeps one core busy. A helper process reads files ahead, in order, and
hands their calls over, one file at a time, while this process writes the
files before: the two halves overlap.

What reaches the ledger does not change: the calls of each file arrive
whole and in transcript order, and the files are written in the order they
were found. The helper never touches the ledger. A file it fails on, this
process reads itself; if it cannot start or stops, this process reads every
file from there on, as it would without a helper.
"""

from __future__ import annotations

import os
import queue
from collections.abc import Iterator
from typing import Any

from todoledger.ingest.calls import Skipped, TodoCall
from todoledger.ingest.sources import Source, read_calls

# Below this much to read, a helper's start (a fresh interpreter that imports
# the readers: see bench/bench_ingest.py) costs more than the overlap saves.
MIN_BYTES = 16 << 20
# Files read ahead and not written yet: their calls wait in memory.
DEPTH = 4
# How often the wait for the helper looks whether it is still alive.
POLL_SECONDS = 0.5


def worth_it(sources: list[Source]) -> bool:
    files = [s for s in sources if s.path is not None]
    return len(files) >= 2 and sum(s.size for s in files) >= MIN_BYTES and (os.cpu_count() or 1) >= 2


def _read_all(sources: list[Source], claimed: Any, out: Any) -> None:
    """The helper: claims the next file no one has claimed, reads it, hands
    over its calls and skip counts (None: a file it could not read whole,
    which the writer then reads itself); until none is left."""
    while True:
        with claimed.get_lock():
            index = claimed.value
            if index >= len(sources):
                return
            claimed.value = index + 1
        skipped = Skipped()
        try:
            calls: list[TodoCall] | None = list(read_calls(sources[index], skipped))
        except Exception:
            calls = None
        out.put((index, calls, dict(skipped.counts)))


class ReadAhead:
    """`calls(source, skipped)`: the calls of one of `sources`, taken in order.
    Until the helper is up, and wherever it is behind, this process claims
    the next file and reads it itself; the helper reads those after.
    Use as a context manager: the helper is stopped on exit."""

    def __init__(self, sources: list[Source]) -> None:
        self._files = [s for s in sources if s.path is not None]
        self._slot = {id(s): k for k, s in enumerate(self._files)}
        self._proc: Any = None
        self._queue: Any = None
        self._claimed: Any = None
        self._broken = True
        self.helped = 0  # files whose calls the helper read
        try:
            # Here, not at the top: an import without the helper (one process) does not load it.
            import multiprocessing

            # spawn, not fork: this process may hold threads and database connections.
            ctx = multiprocessing.get_context("spawn")
            self._claimed = ctx.Value("i", 0)
            self._queue = ctx.Queue(maxsize=DEPTH)
            self._proc = ctx.Process(
                target=_read_all, args=(self._files, self._claimed, self._queue), daemon=True
            )
            self._proc.start()
            self._broken = False
        except Exception:  # no helper (no semaphores, no processes left): read here
            self._proc = None

    def __enter__(self) -> ReadAhead:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None:
            if self._proc.is_alive():
                self._proc.terminate()
            self._proc.join(timeout=5)
            self._proc = None
        if self._queue is not None:
            self._queue.close()
            self._queue.cancel_join_thread()

    def calls(self, source: Source, skipped: Skipped) -> Iterator[TodoCall]:
        slot = self._slot.get(id(source))
        got = self._take(slot) if slot is not None else None
        if got is None:
            yield from read_calls(source, skipped)
            return
        calls, counts = got
        self.helped += 1
        skipped.counts.update(counts)
        yield from calls

    def _mine(self, slot: int) -> bool:
        """Claim file `slot` for this process, unless the helper has. A helper
        killed while it held the claim's lock would hold it for good: give up
        on the helper then."""
        lock = self._claimed.get_lock()
        while not lock.acquire(timeout=POLL_SECONDS):
            if self._proc is None or not self._proc.is_alive():
                self._broken = True
                return True
        try:
            if self._claimed.value <= slot:
                self._claimed.value = slot + 1
                return True
            return False
        finally:
            lock.release()

    def _take(self, slot: int) -> tuple[list[TodoCall], dict[str, int]] | None:
        """The helper's reading of file `slot`, or None: read it here."""
        if self._broken or self._mine(slot):
            return None
        while not self._broken:
            try:
                index, calls, counts = self._queue.get(timeout=POLL_SECONDS)
            except queue.Empty:
                if self._proc is None or not self._proc.is_alive():
                    self._broken = True  # it stopped: every file from here is read here
                continue
            except Exception:  # a message that does not arrive whole
                self._broken = True
                continue
            if index != slot:  # the helper's files come in the order it claimed them
                self._broken = True
                continue
            return None if calls is None else (calls, counts)
        return None
