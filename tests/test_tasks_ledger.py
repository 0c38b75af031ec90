"""MCP tasks as rows of the ledger (ledger/tasks.py), on both backends: bound to
their principal, each transition an event of the plan, a finished task never
moves again, and one kept past its time is removed by the next task call while
its events stay."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import with_test_clock
from todoledger import Ledger
from todoledger.checks import lifecycle
from todoledger.ledger.tasks import lapsed, wire_ttl

WRITER = "mcp:claude-code:s1"


def new_task(lg: Ledger) -> dict[str, object]:
    lg.add("Benchmark", writer="cli:tester")
    return lg.create_task(
        "plan_verify", {}, principal="agent:claude-code", writer=WRITER, plan="main", message="verifying"
    )


def test_a_task_is_its_principals_only_and_each_transition_is_an_event(ledger_env: Path) -> None:
    with Ledger() as lg:
        task = new_task(lg)
        task_id = str(task["id"])
        assert len(task_id) == 32 and task["status"] == "working"
        assert lg.task(task_id, "agent:codex") is None  # another principal: not found
        assert lg.task(task_id, "agent:claude-code") is not None
        with pytest.raises(Exception, match="task not found"):
            lg.cancel_task(task_id, "agent:codex", "mcp:codex:s2")
        me = (lifecycle.host(), os.getpid())
        assert lg.take_task_lease(task_id, (None, None), *me, lifecycle.start_ticks(os.getpid()))
        assert lapsed(lg.task(task_id, None) or {}) is None  # this process: alive
        assert (
            lg.task_transition(task_id, "completed", result={"isError": False}, worker=("elsewhere", 1))
            is None
        )
        done = lg.task_transition(task_id, "completed", result={"isError": False}, worker=me)
        assert done is not None and done["status"] == "completed" and done["expires_at"] is not None
        assert lg.task_transition(task_id, "failed") is None  # finished: it never moves again
        assert wire_ttl(done) is not None and wire_ttl(done) >= 24 * 3600 * 1000  # type: ignore[operator]
        told = [(e["writer"], e["new"]["status"]) for e in lg.history("main") if e["field"] == "task"]
    assert told == [(WRITER, "working"), (WRITER, "completed")]


def test_a_dead_worker_is_seen_and_a_cancel_without_one_ends_the_task(ledger_env: Path) -> None:
    import subprocess

    gone = subprocess.Popen(["true"])
    gone.wait()
    with Ledger() as lg:
        task_id = str(new_task(lg)["id"])
        assert lapsed(lg.task(task_id, None) or {}) is None  # new: its first worker is starting
        assert lg.take_task_lease(task_id, (None, None), lifecycle.host(), gone.pid, "1")
        assert "is gone" in str(lapsed(lg.task(task_id, None) or {}))
        row = lg.cancel_task(task_id, "agent:claude-code", "mcp:claude-code:s2")
    assert row["status"] == "cancelled" and row["cancel"] is True


def test_a_finished_task_is_removed_after_its_time_by_the_next_task_call(
    ledger_env: Path | str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with_test_clock(ledger_env)
    monkeypatch.setenv("TODOLEDGER_NOW", "2026-03-01T10:00:00Z")
    with Ledger() as lg:
        task_id = str(new_task(lg)["id"])
        lg.task_transition(task_id, "completed", result={"isError": False})
        monkeypatch.setenv("TODOLEDGER_NOW", "2026-03-02T09:59:00Z")  # 23:59 after it ended: kept
        assert lg.task(task_id, "agent:claude-code") is not None
        late = str(new_task(lg)["id"])  # no worker ever takes this one
        assert lapsed(lg.task(late, None) or {}) is None
        monkeypatch.setenv("TODOLEDGER_NOW", "2026-03-02T10:00:00Z")
        assert lapsed(lg.task(late, None) or {}) == "no worker took it within 30 s"
        monkeypatch.setenv("TODOLEDGER_NOW", "2026-03-02T10:01:00Z")  # past 24 h: the next call removes it
        assert [t["id"] for t in lg.tasks(finished=True)] == [late]  # the open one stays
        assert lg.task(task_id, None) is None
        told = [
            e["new"]["status"]
            for e in lg.history("main")
            if e["field"] == "task" and e["new"]["task"] == task_id
        ]
    assert told == ["working", "completed"]  # its events stay


def test_a_verify_whose_checks_last_took_over_2_s_opens_a_task(ledger_env: Path, tmp_path: Path) -> None:
    """No cmd: or http: check, but the last receipt was slow: a task (PlanTools.open_task)."""
    import contextlib
    import socket

    from todoledger.mcp.tools import PlanTools

    # A listener whose accept queue is full: a new connection waits out the check's timeout.
    full = socket.socket()
    full.bind(("127.0.0.1", 0))
    full.listen(0)
    port = full.getsockname()[1]
    queued = []
    for _ in range(3):
        c = socket.socket()
        c.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            c.connect(("127.0.0.1", port))
        queued.append(c)
    with Ledger() as lg:
        item = lg.add("Reach the model server", writer="cli:tester")["id"]
        lg.add_check(item, f"port:127.0.0.1:{port}", {"timeout": 2.5}, writer="cli:tester")
    tools = PlanTools(cwd=tmp_path)
    started: list[dict[str, object]] = []
    try:
        assert tools.open_task("plan_verify", {}, WRITER, started.append) is None  # never ran: not known slow
        ran = tools.plan_verify({}, WRITER)
        assert [r["result"] for r in ran["receipts"]] in (["fails"], ["error"])
        with Ledger() as lg:
            assert lg.receipts(item)[-1]["duration_ms"] > 2000
        row = tools.open_task("plan_verify", {}, WRITER, started.append)
    finally:
        tools.close()
        for c in [*queued, full]:
            c.close()
    assert row is not None and started == [row]
    assert row["status"] == "working" and row["message"] == "verifying: 1 check (slow) running"
    assert row["principal"] == "agent:claude-code" and row["writer"] == WRITER
