"""Write transcripts' todo calls into the ledger, one plan per session.

Each call goes through `Ledger.write` with the transcript's own timestamp
and a source key made of format, session and call id, so importing the same
files again (or a copy where the calls sit on other lines) writes nothing;
the place in the transcript goes along as `source_at` for reports. Calls
are written in batches inside one transaction (a refused call writes
nothing, so it costs only itself): a transaction per call would spend the
time on fsyncs, not on reading.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import IO, Any

from todoledger.core.model import LedgerError
from todoledger.ingest import bridges
from todoledger.ingest.calls import Skipped, TodoCall
from todoledger.ingest.plans import PlanNames
from todoledger.ingest.readahead import ReadAhead, worth_it
from todoledger.ingest.sources import Source, discover, open_stdin, read_calls
from todoledger.ledger import Ledger

BATCH_CALLS = 256  # calls per transaction: short enough for other writers to get in
MAX_HELD = 256  # timeless calls waiting for their session's first known time


@dataclass
class SessionImport:
    plan: str
    source: str
    format: str
    calls: int = 0  # todo tool calls found
    written: int = 0  # new writes (0 when the session was imported before)
    refused: int = 0  # calls the ledger refused (invalid lists)
    failed: int = 0  # calls the agent's own tool reported as failed; not written
    items: int = 0
    final: dict[str, int] = field(default_factory=dict)
    # Calls dated later than the import (a transcript is a file its agent can write):
    # imported as dated in the session's own plan, and said (`future_warning`).
    future: int = 0
    latest_future: str = ""

    def future_warning(self) -> str | None:
        if not self.future:
            return None
        return (
            f"warning: {self.source}: {self.future} call(s) dated in the future (latest {self.latest_future}):"
            f" imported into {self.plan} as the transcript dates them; its times are not to be trusted"
        )

    def as_dict(self) -> dict[str, Any]:
        extra = {"future_dated": self.future} if self.future else {}
        return extra | {
            "plan": self.plan,
            "source": self.source,
            "format": self.format,
            "calls": self.calls,
            "items": self.items,
            "final": self.final,
            "written": self.written,
            "refused": self.refused,
            "failed": self.failed,
        }


@dataclass
class IngestResult:
    sessions: list[SessionImport] = field(default_factory=list)
    skipped: Skipped = field(default_factory=Skipped)
    files: int = 0


Progress = Callable[[Source, int], None]


def not_later_than_now(at: str) -> str:
    """A transcript's time, or now where it says a time to come: a transcript is
    a file its agent can write, and a write into a live plan dated later than
    now would find every other writer's lease lapsed (the fence compares the
    write's time) and put a false time in the plan's history."""
    from todoledger.core.timefmt import now

    return min(at, now())


class _Batch:
    """One write transaction over many calls; a refused call writes nothing."""

    def __init__(self, ledger: Ledger, source_prefix: str = "", *, live: bool = False) -> None:
        self.ledger = ledger
        # A live hook writes the project's plan, where other writers hold leases: its
        # times are never later than now. A forensic import writes each session's own
        # plan and keeps the transcript's times, which are what its report tells.
        self.live = live
        self.size = 0
        self._tx: Any = None
        # Live imports into the project's plan keep their own keys, so that a
        # later `ingest` of the same transcript still builds the session's plan.
        self.source_prefix = source_prefix

    def write(self, call: TodoCall, plan: str, at: str) -> bool | None:
        """True if written, False if imported before, None if refused."""
        at = not_later_than_now(at) if self.live else at
        if call.dialect in bridges.DIALECTS:
            # Several writes in one transaction of their own, so a refusal takes back all of them.
            self.commit()
            try:
                return bridges.apply_call(self.ledger, call, plan, at)
            except LedgerError as exc:
                self.begin()
                self.refuse(call, plan, at, f"refused: {exc}")
                return None
        self.begin()
        try:
            result = self.ledger.write(
                call.payload,
                plan=plan,
                writer=call.writer,
                dialect=call.dialect,
                response=call.response,
                at=at,
                source_key=self.source_prefix + call.source_key,
                source_at=call.where or None,
            )
        except LedgerError as exc:
            # A refused write leaves nothing behind (Ledger.apply's guarantee); the
            # story still tells that the call was made and why it was refused.
            self.refuse(call, plan, at, f"refused: {exc}")
            return None
        self.size += 1
        if self.size >= BATCH_CALLS:
            self.commit()
        return not result.skipped

    def begin(self) -> None:
        if self._tx is None:
            self._tx = self.ledger.batch()
            self._tx.__enter__()

    def refuse(self, call: TodoCall, plan: str, at: str, reason: str) -> None:
        at = not_later_than_now(at) if self.live else at
        self.ledger.record_refused(
            reason,
            plan=plan,
            writer=call.writer,
            dialect=call.dialect,
            at=at,
            source_key=self.source_prefix + call.source_key,
            source_at=call.where or None,
        )

    def commit(self) -> None:
        if self._tx is not None:
            tx, self._tx, self.size = self._tx, None, 0
            tx.__exit__(None, None, None)

    def abort(self, exc: BaseException) -> None:
        if self._tx is not None:
            tx, self._tx = self._tx, None
            tx.__exit__(type(exc), exc, exc.__traceback__)


def _file_time(source: Source) -> str:
    try:
        stamp = os.stat(source.path).st_mtime if source.path else datetime.now(UTC).timestamp()
    except OSError:
        stamp = datetime.now(UTC).timestamp()
    return datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class _Session:
    """One session's calls as they are written: its plan and its clock."""

    def __init__(self, entry: SessionImport) -> None:
        self.entry = entry
        self.last_at: str | None = None
        # Calls without a time before any call with one: they wait for the
        # session's next known time, which is closer than the file's.
        self.held: list[TodoCall] = []


def write_calls(
    ledger: Ledger,
    calls: Iterable[TodoCall],
    source: str,
    fmt: str,
    fallback_at: Callable[[], str],
    names: PlanNames | None = None,
    *,
    into: str | None = None,
) -> list[SessionImport]:
    """Write calls in batches; one SessionImport per plan met, in order of appearance.
    `into` names one plan for every session (a live hook writes the project's plan)."""
    names = names or PlanNames(ledger)
    entries: dict[str, SessionImport] = {}
    sessions: dict[tuple[str, str], _Session] = {}
    batch = _Batch(ledger, source_prefix="live:" if into else "", live=into is not None)

    import time

    # The real clock, never TODOLEDGER_NOW: "in the future" is the machine's future.
    stamp = time.time()
    started = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(stamp)) + f".{int(stamp * 1000) % 1000:03d}Z"

    def put(state: _Session, call: TodoCall, at: str) -> None:
        state.last_at = at
        if at > started:
            state.entry.future += 1
            state.entry.latest_future = max(state.entry.latest_future, at)
        outcome = batch.write(call, state.entry.plan, at)
        if outcome is None:
            state.entry.refused += 1
        else:
            state.entry.written += outcome

    def release(state: _Session, at: str) -> None:
        held, state.held = state.held, []
        for call in held:
            put(state, call, at)

    try:
        for call in calls:
            state = sessions.get((call.fmt, call.session))
            if state is None:
                plan = into or names.name(call.fmt, call.session, call.project)
                entry = entries.get(plan)
                if entry is None:
                    entry = entries[plan] = SessionImport(plan, source, fmt)
                state = sessions[(call.fmt, call.session)] = _Session(entry)
            state.entry.calls += call.counted
            if call.failed:
                # The agent's harness refused the call: its list did not change.
                state.entry.failed += 1
                batch.begin()
                batch.refuse(call, state.entry.plan, call.at or state.last_at or fallback_at(), call.refusal)
                continue
            if call.at is None and state.last_at is None:
                state.held.append(call)
                if len(state.held) > MAX_HELD:
                    release(state, fallback_at())
                continue
            if state.held:
                assert call.at is not None
                release(state, call.at)
            # A call without its own time sits right after the session's call before it.
            put(state, call, call.at or state.last_at or fallback_at())
        for state in sessions.values():
            if state.held:
                release(state, fallback_at())
        batch.commit()
    except BaseException as exc:
        batch.abort(exc)
        raise
    return list(entries.values())


def import_source(
    ledger: Ledger,
    source: Source,
    result: IngestResult,
    stdin: IO[bytes] | None = None,
    names: PlanNames | None = None,
    ahead: ReadAhead | None = None,
) -> None:
    if source.path is None:
        # The format is read off the stream's head once; the stream goes on from there.
        fmt, stdin = open_stdin(stdin or sys.stdin.buffer)
        source = Source(source.name, fmt or "unknown", None, 0)
    if ahead is not None and source.path is not None:
        calls = ahead.calls(source, result.skipped)
    else:
        calls = read_calls(source, result.skipped, stdin)
    sessions = write_calls(ledger, calls, source.name, source.fmt, lambda: _file_time(source), names)
    result.sessions.extend(sessions)
    if not sessions:
        result.skipped.add("transcripts without todo calls")


def finish(ledger: Ledger, result: IngestResult) -> None:
    """Fill in each session's items and final status counts from the ledger."""
    views: dict[str, list[dict[str, Any]]] = {}
    for s in result.sessions:
        if s.plan not in views:
            views[s.plan] = ledger.show(s.plan)["items"]
        items = views[s.plan]
        s.items = len(items)
        counts: dict[str, int] = {}
        for it in items:
            counts[it["status"]] = counts.get(it["status"], 0) + 1
        s.final = dict(sorted(counts.items()))


def ingest(
    ledger: Ledger,
    paths: Iterable[str],
    *,
    progress: Progress | None = None,
    stdin: IO[bytes] | None = None,
    sources: list[Source] | None = None,
    skipped: Skipped | None = None,
    read_ahead: bool | None = False,
) -> IngestResult:
    """Import every transcript under `paths` (or the `sources` already found).
    `read_ahead`: read the next files in a second process while writing
    (readahead.py); None: where there is enough to read and a second core, as
    the `ingest` command does. Off by default here: the helper is started the
    way `multiprocessing` spawns, which runs the calling program's main module
    again unless its work sits under `if __name__ == "__main__":`."""
    result = IngestResult(skipped=skipped or Skipped())
    found = sources if sources is not None else list(discover(list(paths), result.skipped))
    names = PlanNames(ledger)
    ahead = ReadAhead(found) if (worth_it(found) if read_ahead is None else read_ahead) else None
    with ledger.bulk(), ahead if ahead is not None else nullcontext():
        for source in found:
            result.files += 1
            import_source(ledger, source, result, stdin, names, ahead)
            if progress is not None:
                progress(source, source.size)
    finish(ledger, result)
    return result
