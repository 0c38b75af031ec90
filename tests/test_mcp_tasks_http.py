"""MCP Tasks over HTTP (issue 33): `plan_sweep` and a wait for a person's approval as
tasks of a token's identity, on real `todoledger serve --tokens` processes (two of
them, on one ledger), spoken to in raw JSON-RPC (sessionless 2026-07-28 requests);
the sweep's stand-in servers and benchmark clients are tests/test_sweep_lifecycle.py's.
Both backends.

Every test records the task states it saw (`seen`), in order, as its client polled
them. The sweeps are a person's (`cli:tester` wrote them); the approvals a person's
at the CLI. The agent is the token `agent:ci`; `agent:other` is another principal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.mcp_task_kit import (
    CLIENT_YES,
    FINISHED,
    approvals,
    assert_two_combinations_done,
    needing_approval,
    poll_progress,
    served_sweep,
)
from tests.mcp_task_kit import port_fixture as port_fixture  # the fixture `port`
from tests.mcp_task_kit import scripts_fixture as scripts_fixture  # the fixture `scripts`
from tests.mcp_task_kit import start as start_item
from tests.test_cli import run, run_json
from tests.test_mcp_tasks import BOT, OTHER, Http, poll, processes_with, result, wait_until
from tests.test_mcp_tasks import tokens as tokens  # the fixture two_servers needs
from tests.test_mcp_tasks import two_servers as two_servers  # a fixture: two `serve` processes
from tests.test_sweep_lifecycle import alive, events, listening
from todoledger import Ledger


def refused_everywhere(urls: tuple[str, str], task_id: str) -> None:
    """Another token's principal is told the task does not exist, on either server, whatever it asks."""
    for url in urls:
        intruder = Http(url, OTHER)
        for method, params in (
            ("tasks/get", {"taskId": task_id}),
            ("tasks/cancel", {"taskId": task_id}),
            ("tasks/update", {"taskId": task_id, "inputResponses": CLIENT_YES}),
        ):
            refused = intruder.rpc(method, params)
            assert refused["error"]["code"] == -32602, (method, refused)
            assert "task not found" in refused["error"]["message"], (method, refused)


def test_over_http_a_sweep_task_is_read_on_another_server_and_a_cancel_there_ends_its_setup(
    ledger_env: Path, two_servers: tuple[str, str], scripts: Path, port: int
) -> None:
    one, other = two_servers
    served_sweep(ledger_env, port)
    created = result(Http(one, BOT).rpc("tools/call", {"name": "plan_sweep", "arguments": {"name": "s"}}))
    assert created["resultType"] == "task" and created["status"] == "working", created
    assert created["statusMessage"] == "sweep s: 2 combinations, 4 runs to go (a setup per combination)"
    seen, messages = [created["status"]], [created["statusMessage"]]
    refused_everywhere(two_servers, created["taskId"])  # its cancel among them: the sweep runs on
    done = poll_progress(Http(other, BOT), created["taskId"], seen, messages)
    assert_two_combinations_done(done, seen, messages)  # its progress, run by run, and its result
    refused_everywhere(two_servers, created["taskId"])  # finished, it is still only agent:ci's
    with Ledger(ledger_env) as lg:
        row = lg.task(created["taskId"], None)
        assert row is not None and row["principal"] == "agent:ci" and row["writer"].startswith("agent:ci@")
        assert row["cancel"] is False  # the other principal's cancel touched nothing
        # The worker wrote only as the task's recorded writer (the token's identity), not as the
        # server's process (started with a person's token in its environment).
        assert {r["by"] for r in lg.receipts()} == {row["writer"]}
        assert lg.sweep_definition("s")["runner"] is None
    assert not listening(port)
    first_setups = {e["pid"] for e in events(scripts) if e["event"] == "start"}
    assert len(first_setups) == 2

    # A sweep whose setup takes a minute to get ready, created on the other server and
    # cancelled from the first while it loads: its own teardown ends it, nothing is left.
    served_sweep(
        ledger_env, port, name="slow", template="Load k={k}", setup=f"python3 server.py {port} {{k}} 60"
    )
    created = result(
        Http(other, BOT).rpc("tools/call", {"name": "plan_sweep", "arguments": {"name": "slow"}})
    )
    assert created["resultType"] == "task", created
    task_id, seen, messages = created["taskId"], [created["status"]], [created["statusMessage"]]

    def loading() -> list[int]:
        return [e["pid"] for e in events(scripts) if e["event"] == "start" and e["pid"] not in first_setups]

    wait_until(loading, "the setup never started")
    (setup_pid,) = loading()

    def said_so() -> bool:
        got = result(Http(one, BOT).rpc("tasks/get", {"taskId": task_id}))
        messages.append(got.get("statusMessage", ""))
        return got["status"] == "working" and messages[-1].startswith("k=16: setup started (pid ")

    wait_until(said_so, f"the setup's start was never the status message: {messages}")
    assert alive(setup_pid)
    assert result(Http(one, BOT).rpc("tasks/cancel", {"taskId": task_id}))["resultType"] == "complete"
    done = poll_progress(Http(other, BOT), task_id, seen, messages)
    assert done["status"] == "cancelled", done
    assert seen == ["working", "cancelled"], seen
    # The setup got the sweep's teardown (its SIGTERM handler logged it), and nothing is left.
    assert [e["event"] for e in events(scripts) if e["pid"] == setup_pid] == ["start", "sigterm"]
    wait_until(lambda: not alive(setup_pid), "the setup is still running")
    wait_until(lambda: not processes_with(f"server.py {port}"), "a setup process is left")
    wait_until(lambda: not processes_with(f"taskworker {task_id}"), "the worker is still running")
    assert not listening(port)
    with Ledger(ledger_env) as lg:
        assert lg.sweep_live_setups("slow") == []
        assert [s["outcome"] for s in lg.sweep_results("slow")["setups"]] == ["interrupted (SIGTERM)"]
        assert lg.sweep_definition("slow")["runner"] is None
        row = lg.task(task_id, None)
        assert row is not None and row["cancel"] is True and row["principal"] == "agent:ci"


def test_over_http_an_approval_wait_is_the_tokens_task_and_a_persons_cli_approval_completes_it(
    ledger_env: Path, two_servers: tuple[str, str]
) -> None:
    one, other = two_servers
    item = needing_approval(ledger_env)
    # Without the extension: today's refusal, in one line, nothing changed.
    plain = start_item(Http(one, BOT), item, tasks=False)
    assert plain.get("resultType") != "task" and plain["isError"] is True, plain
    created = start_item(Http(one, BOT), item)
    assert created["resultType"] == "task" and created["status"] == "working", created
    waiting = f"waiting for a person: todoledger approve {item}"
    assert created["statusMessage"] == waiting
    assert created["ttlMs"] is None  # a wait may last days: unlimited while open
    task_id, seen = created["taskId"], [created["status"]]
    refused_everywhere(two_servers, task_id)
    # The agent's own client answers "yes", on the other server: acknowledged, approves nothing.
    answered = Http(other, BOT).rpc("tasks/update", {"taskId": task_id, "inputResponses": CLIENT_YES})
    assert result(answered)["resultType"] == "complete"
    got = result(Http(other, BOT).rpc("tasks/get", {"taskId": task_id}))
    assert (got["status"], got["statusMessage"]) == ("working", waiting)
    assert approvals(ledger_env, item) == []
    assert run_json(ledger_env, "show")["items"][0]["status"] == "pending"
    run(ledger_env, "approve", item, person=True)  # a person, on the CLI
    done = poll(Http(other, BOT), task_id, FINISHED, seen)
    assert seen == ["working", "completed"], seen
    assert done["status"] == "completed" and done["result"]["isError"] is False, done
    assert done["statusMessage"] == "approved by cli:tester; plan_update applied"
    assert done["result"]["structuredContent"]["item"]["status"] == "in_progress"
    refused_everywhere(two_servers, task_id)
    # The approval is the person's; the start is the task's writer's: the token's identity.
    assert approvals(ledger_env, item) == ["cli:tester"]
    with Ledger(ledger_env) as lg:
        row = lg.task(task_id, None)
        assert row is not None and row["principal"] == "agent:ci" and row["writer"].startswith("agent:ci@")
        view = {i["id"]: i for i in lg.show()["items"]}
        starts: list[dict[str, Any]] = [
            e for e in lg.history("main") if e["item"] == item and e["field"] == "status"
        ]
    assert view[item]["status"] == "in_progress"
    assert [e["writer"] for e in starts] == [row["writer"]]
