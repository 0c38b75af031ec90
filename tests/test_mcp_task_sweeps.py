"""`plan_sweep` as an MCP task (issue 33), over the raw protocol on real processes:
`todoledger mcp` on pipes, the detached worker, the sweep's stand-in servers and
benchmark clients (tests/test_sweep_lifecycle.py's), on both backends.

Every test records the task states it saw (`seen`), in order, as its client polled
them. The sweeps are a person's (`cli:tester` wrote them); an agent's is refused."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

from tests.conftest import TESTER, subprocess_env, todoledger_bin
from tests.mcp_task_kit import assert_two_combinations_done, bench_requests, receipts, served_sweep
from tests.mcp_task_kit import poll_progress as poll
from tests.mcp_task_kit import port_fixture as port_fixture  # the fixture `port`
from tests.mcp_task_kit import scripts_fixture as scripts_fixture  # the fixture `scripts`
from tests.test_mcp_tasks import Stdio, processes_with, result, wait_until
from tests.test_sweep_lifecycle import alive, events, listening
from todoledger import Ledger


def test_plan_sweep_is_a_task_whose_progress_and_result_a_new_server_reads(
    ledger_env: Path, scripts: Path, port: int
) -> None:
    made = served_sweep(ledger_env, port)
    first = Stdio(ledger_env)
    created = result(first.rpc("tools/call", {"name": "plan_sweep", "arguments": {"name": "s"}}))
    first.close()  # the stdio server dies with its client; the worker runs the sweep on
    assert created["resultType"] == "task" and created["status"] == "working", created
    assert created["statusMessage"] == "sweep s: 2 combinations, 4 runs to go (a setup per combination)"
    seen, messages = [created["status"]], [created["statusMessage"]]
    second = Stdio(ledger_env)  # a new server process answers from the row
    try:
        done = poll(second, created["taskId"], seen, messages)
    finally:
        second.close()
    assert_two_combinations_done(done, seen, messages)  # its progress, run by run, and its result
    assert done["result"]["isError"] is False
    assert not listening(port) and bench_requests(scripts) == 4
    with Ledger(ledger_env) as lg:
        row = lg.task(created["taskId"], None)
        assert row is not None and row["writer"].startswith("mcp:claude-code:")
        # The worker wrote only as the task's recorded writer: every run's receipt names it.
        assert {r["by"] for r in lg.receipts()} == {row["writer"]}
        assert lg.sweep_live_setups("s") == []
        assert all(i["status"] == "completed" for i in lg.show()["items"])
        assert lg.sweep_definition("s")["runner"] is None  # the runner lease was given back
        told = [e["new"]["status"] for e in lg.history("main") if e["field"] == "task"]
    assert told == ["working", "completed"]
    assert len(made["items"]) == 2


def test_without_the_extension_a_short_sweep_runs_in_the_call_and_a_long_one_is_refused(
    ledger_env: Path, scripts: Path, port: int
) -> None:
    with Ledger(ledger_env) as lg:
        lg.add_sweep(
            "short",
            template="Echo n={n}",
            params=["n=1,2"],
            run="python3 echo.py {n}",
            metrics=["v=$.v"],
            repeat=2,
            writer=TESTER,
        )
    served_sweep(ledger_env, port)
    server = Stdio(ledger_env)
    try:
        short = result(
            server.rpc("tools/call", {"name": "plan_sweep", "arguments": {"name": "short"}}, tasks=False)
        )
        assert short.get("resultType", "complete") == "complete" and short["isError"] is False, short
        assert short["structuredContent"]["runs"] == 4
        long = result(
            server.rpc("tools/call", {"name": "plan_sweep", "arguments": {"name": "s"}}, tasks=False)
        )
        assert long["isError"] is True
        (line,) = [c["text"] for c in long["content"]]
        assert line == (
            "sweep s has 4 runs to go (a setup per combination): too long for one call (at most 10 runs,"
            " no setup); call plan_sweep from a client that declares the io.modelcontextprotocol/tasks"
            " extension, or ask a person to run `todoledger sweep run s`; nothing was run"
        )
        missing = result(server.rpc("tools/call", {"name": "plan_sweep", "arguments": {"name": "nope"}}))
        assert missing["isError"] is True and missing.get("resultType") != "task"
        assert missing["content"][0]["text"] == "no sweep 'nope' in plan 'main' (todoledger sweep add)"
    finally:
        server.close()
    assert events(scripts) == []  # no setup ever started
    with Ledger(ledger_env) as lg:
        assert lg.tasks(finished=True) == []


def test_an_agents_sweep_is_refused_until_a_person_approves_it_task_or_not(
    ledger_env: Path, scripts: Path, port: int
) -> None:
    served_sweep(ledger_env, port, writer="mcp:claude-code:abc")
    server = Stdio(ledger_env)
    try:
        for declared in (True, False):
            got = result(
                server.rpc("tools/call", {"name": "plan_sweep", "arguments": {"name": "s"}}, tasks=declared)
            )
            assert got.get("resultType") != "task" and got["isError"] is True
            assert "not a person" in got["content"][0]["text"]
            assert "todoledger sweep trust s" in got["content"][0]["text"]
    finally:
        server.close()
    assert events(scripts) == []
    with Ledger(ledger_env) as lg:
        assert lg.tasks(finished=True) == []


def test_a_sweep_another_runner_holds_is_refused_with_the_runners_line(
    ledger_env: Path, scripts: Path, port: int
) -> None:
    served_sweep(ledger_env, port, run=f"python3 client.py {port} 2")
    person = subprocess.Popen(
        [todoledger_bin(), "sweep", "run", "s"],
        env=subprocess_env(ledger_env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until(lambda: bench_requests(scripts) >= 1, "the person's sweep run never ran")
        server = Stdio(ledger_env)
        try:
            got = result(server.rpc("tools/call", {"name": "plan_sweep", "arguments": {"name": "s"}}))
        finally:
            server.close()
        assert got.get("resultType") != "task" and got["isError"] is True
        line = got["content"][0]["text"]
        assert line.startswith(f"sweep s is already being run by pid {person.pid} on "), line
        assert line.endswith("nothing was run and nothing of that run was touched")
    finally:
        person.send_signal(signal.SIGINT)
        person.wait(60)
    assert not listening(port)


def test_cancel_ends_the_sweeps_setup_through_its_teardown_and_leaves_no_process(
    ledger_env: Path, scripts: Path, port: int
) -> None:
    # A setup that takes 60 s to get ready: the cancel comes while it loads.
    served_sweep(ledger_env, port, setup=f"python3 server.py {port} {{k}} 60")
    server = Stdio(ledger_env)
    try:
        created = result(server.rpc("tools/call", {"name": "plan_sweep", "arguments": {"name": "s"}}))
        seen, messages = [created["status"]], [created["statusMessage"]]
        wait_until(lambda: [e for e in events(scripts) if e["event"] == "start"], "the setup never started")
        (setup_pid,) = {e["pid"] for e in events(scripts) if e["event"] == "start"}
        assert alive(setup_pid)
        got = result(server.rpc("tasks/get", {"taskId": created["taskId"]}))
        assert got["status"] == "working"
        messages.append(got.get("statusMessage", ""))
        assert result(server.rpc("tasks/cancel", {"taskId": created["taskId"]}))["resultType"] == "complete"
        done = poll(server, created["taskId"], seen, messages)
    finally:
        server.close()
    assert done["status"] == "cancelled", json.dumps([done, messages])
    assert seen == ["working", "cancelled"], seen
    assert any(m.startswith("k=16: setup started (pid ") for m in messages), messages
    # The setup got the sweep's teardown (its SIGTERM handler logged it), and nothing is left.
    assert [e["event"] for e in events(scripts) if e["pid"] == setup_pid] == ["start", "sigterm"]
    wait_until(lambda: not alive(setup_pid), "the setup is still running")
    wait_until(lambda: not processes_with(f"server.py {port}"), "a setup process is left")
    wait_until(lambda: not processes_with(f"taskworker {created['taskId']}"), "the worker is still running")
    assert not listening(port)
    with Ledger(ledger_env) as lg:
        assert lg.sweep_live_setups("s") == []
        assert [s["outcome"] for s in lg.sweep_results("s")["setups"]] == ["interrupted (SIGTERM)"]
        assert lg.sweep_definition("s")["runner"] is None
        # No run was counted: the interrupted combination's one receipt is an error with the setup's output.
        ((result_, output),) = [(r["result"], r["output"]) for r in lg.receipts()]
        assert result_ == "error" and "loading weights for k=16" in output
        assert not [m for it in lg.show()["items"] for m in lg.metrics(it["id"])]


def test_sigkill_of_the_worker_mid_sweep_then_get_resumes_without_rerunning_recorded_runs(
    ledger_env: Path, scripts: Path, port: int
) -> None:
    served_sweep(ledger_env, port, params=["k=16,8,4"])
    server = Stdio(ledger_env)
    seen: list[str] = []
    messages: list[str] = []
    try:
        created = result(server.rpc("tools/call", {"name": "plan_sweep", "arguments": {"name": "s"}}))
        task_id = created["taskId"]
        seen.append(created["status"])
        # Kill it once runs are recorded, in the middle of the sweep.
        wait_until(lambda: len(receipts(ledger_env)) >= 3, "the worker recorded no runs")
        with Ledger(ledger_env) as lg:
            row = lg.task(task_id, None)
        assert row is not None and row["workers"] == 1
        os.kill(int(row["pid"]), signal.SIGKILL)
        wait_until(lambda: not processes_with(f"taskworker {task_id}"), "the killed worker lingers")
        before = receipts(ledger_env)
        with Ledger(ledger_env) as lg:
            left = lg.sweep_live_setups("s")
        assert len(before) < 6 and len(left) == 1  # its setup outlives it, as a real server would
        got = result(server.rpc("tasks/get", {"taskId": task_id}))  # no daemon: this get resumes it
        seen.append(got["status"])
        messages.append(got["statusMessage"])
        assert got["statusMessage"].startswith("resumed: worker 2 started ("), got
        done = poll(server, task_id, seen, messages)
    finally:
        server.close()
    assert done["status"] == "completed", done
    # created, the get after the kill (a new worker), the end
    assert seen == ["working", "working", "completed"], seen
    after = receipts(ledger_env)
    # Every run recorded before the kill is kept, none recorded twice: 3 combinations x 2 repeats.
    assert set(before) <= set(after) and len(after) == 6
    # The only benchmark request beyond the 6 recorded is the one the kill interrupted, if any.
    assert 6 <= bench_requests(scripts) <= 7
    data = done["result"]["structuredContent"]
    assert data["runs"] == 6 - len(before), data  # the new worker ran only what was left
    with Ledger(ledger_env) as lg:
        assert lg.sweep_live_setups("s") == []
        outcomes = [s["outcome"] for s in lg.sweep_results("s")["setups"]]
        assert "torn down on resume after a kill" in outcomes
        assert all(i["status"] == "completed" for i in lg.show()["items"])
        row = lg.task(task_id, None)
        assert row is not None and row["workers"] == 2
    assert not listening(port)
    assert not processes_with(f"server.py {port}")
