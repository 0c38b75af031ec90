"""Adversarial review of what landed for issues 30 and 33: MCP Tasks (the worker,
`todoledger tasks`), retries with idempotency keys. Each test is an attack on the
real thing (real processes, the real ledger, both backends where the route has
both); one still open is marked xfail(strict=True) with the hole in its reason."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import TESTER, subprocess_env, todoledger_bin
from tests.test_mcp_tasks import Stdio, gated_item, processes_with, result, wait_until
from todoledger import Ledger

# -- a retry after a lost connection (issue 30) ----------------------------------------------

KILL_BACKENDS = (
    "import psycopg, sys; c = psycopg.connect(sys.argv[1], autocommit=True);"
    " c.execute('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s',"
    " (sys.argv[2],))"
)


def test_done_whose_connection_is_lost_after_its_metrics_is_not_reported_done(
    ledger_env: Path | str, ledger_backend: str
) -> None:
    """A lost write reported as saved (found by the adversary, fixed): the person's gate
    (a command that passes) runs between the metrics' commit and the completion's; the
    server closes the command's connection meanwhile (as a restart does). The retry met
    the metrics' key and `done` said done, the item still pending; now the retry goes on
    past the part that landed (ledger/retry.py)."""
    if ledger_backend != "postgres":
        pytest.skip("a SQLite file loses no connection")
    app = f"adv34-{os.getpid()}"
    check = f"cmd:{shlex.quote(sys.executable)} -c {shlex.quote(KILL_BACKENDS)} {shlex.quote(str(ledger_env))} {app}"
    with Ledger(ledger_env) as lg:
        item = lg.add("Train the draft model", writer=TESTER)["id"]
        lg.add_check(item, check, writer=TESTER)  # a person's check: it runs
    done = subprocess.run(
        [todoledger_bin(), "done", item, "--metric", "loss=0.25"],
        env=subprocess_env(ledger_env, TODOLEDGER_WRITER="agent:trainer", PGAPPNAME=app),
        capture_output=True,
        text=True,
        timeout=120,
    )
    with Ledger(ledger_env) as lg:
        status = lg.get(item)["status"]
        loss = [m for m in lg.metrics(item) if m["name"] == "loss"]
    assert len(loss) == 1  # the metrics were recorded once (no double application)
    # Either the command says it failed, or the item is completed: never a success for a pending item.
    assert done.returncode != 0 or status == "completed", (done.returncode, done.stdout, done.stderr, status)


# -- MCP Tasks (issue 33) ---------------------------------------------------------------------


def _task_with_a_running_check(db: Path | str, marker: str, plan: str = "main") -> tuple[str, int]:
    """A task-augmented plan_verify whose person's check (`marker`) is running in its worker:
    (the task's id, the worker's pid); the server that created it has exited."""
    gated_item(db, f"cmd:{marker}", plan=plan)
    server = Stdio(db)
    try:
        created = result(server.rpc("tools/call", {"name": "plan_verify", "arguments": {"plan": plan}}))
    finally:
        server.close()
    assert created["resultType"] == "task", created
    wait_until(lambda: processes_with(marker), "the worker's check never started")
    with Ledger(db) as lg:
        row = lg.task(created["taskId"], None)
    assert row is not None and row["pid"] is not None
    return created["taskId"], int(row["pid"])


def test_tasks_does_not_show_a_task_whose_worker_died_as_running(ledger_env: Path | str) -> None:
    """The plan lied: a person's `todoledger tasks` said the verify was running (`working`,
    "verifying: 1 check (cmd:) running", its pid) after its worker was killed and its
    client gone, and said so for ever: only an agent's `tasks/get` looks at the worker."""
    marker = f"sleep 8{os.getpid() % 1000}.25"
    task_id, pid = _task_with_a_running_check(ledger_env, marker)
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not processes_with(f"taskworker {task_id}"), "the killed worker lingers")
    wait_until(lambda: not processes_with(marker), "the killed worker's check lingers")
    env = subprocess_env(ledger_env)
    shown = subprocess.run([todoledger_bin(), "tasks"], env=env, capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    assert task_id in shown.stdout
    assert f"its worker (pid {pid}) is gone" in shown.stdout, shown.stdout
    assert f"(pid {pid} on" not in shown.stdout  # never shown as a live worker
    as_json = subprocess.run(
        [todoledger_bin(), "tasks", "--json"], env=env, capture_output=True, text=True, timeout=60
    )
    rows = json.loads(as_json.stdout)
    assert [r["stopped"] for r in rows if r["id"] == task_id] == [f"its worker (pid {pid}) is gone"]
    # Reading changes nothing: the task is still the agent's to resume (its tasks/get).
    with Ledger(ledger_env) as lg:
        row = lg.task(task_id, None)
    assert row is not None and row["status"] == "working" and row["workers"] == 1


def test_the_resume_command_a_failed_task_names_runs_only_todoledger(
    ledger_env: Path | str, tmp_path: Path
) -> None:
    """A person is told to run a command that an agent wrote: the plan's name went
    unquoted into "resume it with `todoledger verify --plan ...`" (a task's status
    message, its JSON-RPC error, `todoledger tasks`), so an agent's plan named
    `x; touch PWNED` made that line run the agent's command when pasted."""
    plan = f"adv; touch {tmp_path / 'PWNED'}"
    marker = f"sleep 9{os.getpid() % 1000}.75"
    task_id, pid = _task_with_a_running_check(ledger_env, marker, plan=plan)
    os.kill(pid, signal.SIGTERM)  # stopped, not cancelled: the worker fails it with the resume line
    server = Stdio(ledger_env)
    try:
        wait_until(
            lambda: result(server.rpc("tasks/get", {"taskId": task_id}))["status"] == "failed",
            "the stopped task never failed",
        )
        got = result(server.rpc("tasks/get", {"taskId": task_id}))
    finally:
        server.close()
    resume = got["error"]["data"]["resume"]
    assert shlex.split(resume) == ["todoledger", "verify", "--plan", plan], resume
    assert f"`{resume}`" in got["error"]["message"]


def test_a_task_cancelled_before_its_worker_started_runs_no_command(
    ledger_env: Path | str, tmp_path: Path
) -> None:
    """tasks/cancel right after the task was created (its worker still starting): the
    worker took the lease and ran the check all the same, until its first heartbeat
    (2 s) saw the flag. A cancelled call runs nothing."""
    ran = tmp_path / "RAN"
    gated_item(ledger_env, f"cmd:touch {shlex.quote(str(ran))}; sleep 6{os.getpid() % 1000}.5")
    server = Stdio(ledger_env)
    try:
        created = result(server.rpc("tools/call", {"name": "plan_verify", "arguments": {}}))
        with Ledger(ledger_env) as lg:
            row = lg.task(created["taskId"], None)
        assert row is not None and row["pid"] is None  # its worker has not taken the lease yet
        assert result(server.rpc("tasks/cancel", {"taskId": created["taskId"]}))["resultType"] == "complete"
        wait_until(
            lambda: result(server.rpc("tasks/get", {"taskId": created["taskId"]}))["status"] != "working",
            "the cancelled task never ended",
        )
        got = result(server.rpc("tasks/get", {"taskId": created["taskId"]}))
    finally:
        server.close()
    assert got["status"] == "cancelled", got
    wait_until(lambda: not processes_with(f"taskworker {created['taskId']}"), "the worker lingers")
    assert not ran.exists()  # the person's command never ran for a cancelled call
