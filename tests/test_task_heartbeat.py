"""A task's worker whose ledger stops answering stops itself (issue 33, found by the
adversary's reading): its heartbeat thread used to end at the first failed beat and
leave the worker running, so that past the lapse a server on another host resumed the
task and two workers ran its commands side by side. Now a beat the ledger cannot take
is tried again, and after half the lapse without one the worker is stopped (SIGTERM)."""

from __future__ import annotations

import socket
import subprocess
import threading

import pytest

from todoledger.mcp.taskworker import heartbeat

pytestmark = pytest.mark.sqlite_only  # a ledger that cannot be reached: one run


def _refused_url() -> str:
    with socket.socket() as s:  # a port nothing listens on: every connection is refused
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"postgresql://postgres@127.0.0.1:{port}/postgres"


def test_a_worker_that_cannot_beat_stops_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TODOLEDGER_DB", _refused_url())
    worker = subprocess.Popen(["sleep", "60"])  # stands for the worker process the thread signals
    told: list[str] = []
    stop = threading.Event()
    try:
        beat = threading.Thread(
            target=heartbeat, args=("t1", "main", socket.gethostname(), worker.pid, stop, told, 1.0)
        )
        beat.start()
        beat.join(timeout=60)
        assert not beat.is_alive()
        assert worker.wait(timeout=10) == -15  # SIGTERM: it stopped itself
        assert told == ["lost"]
    finally:
        stop.set()
        worker.kill()
        worker.wait()
