"""Waiting for a person as an MCP task (issue 33): a `plan_update` that starts an
item needing a person's approval, made by a client that declared the tasks
extension, stays `working` ("waiting for a person: todoledger approve ID") and
completes when a person approves, on the CLI or on the board in real Chromium,
while a raw client polls `tasks/get`; the agent's own client answering never
approves. Real processes, both backends.

Every test records the task states it saw (`seen`), in order."""

from __future__ import annotations

import concurrent.futures
from pathlib import Path

from tests.mcp_task_kit import CLIENT_YES, FINISHED, approvals, needing_approval, start
from tests.test_board_browser import ARGS, CHROMIUM, WAIT_MS, Served, live, playwright_sync, shot
from tests.test_cli import run, run_json
from tests.test_mcp_tasks import Stdio, poll, result
from todoledger import Ledger


def test_a_start_waiting_for_approval_is_a_task_a_persons_cli_approval_completes(ledger_env: Path) -> None:
    item = needing_approval(ledger_env)
    first = Stdio(ledger_env)
    try:
        # Without the extension: today's refusal, in one line, nothing changed.
        plain = start(first, item, tasks=False)
        assert plain.get("resultType") != "task" and plain["isError"] is True, plain
        assert "approv" in plain["content"][0]["text"]
        created = start(first, item)
        assert created["resultType"] == "task" and created["status"] == "working", created
        assert created["statusMessage"] == f"waiting for a person: todoledger approve {item}"
        assert created["ttlMs"] is None  # a wait may last days: unlimited while open
        seen = [created["status"]]
        task_id = created["taskId"]
        # The agent's own client answers "yes": recorded nowhere as a person's, the task waits on.
        assert result(first.rpc("tasks/update", {"taskId": task_id, "inputResponses": CLIENT_YES}))
        got = result(first.rpc("tasks/get", {"taskId": task_id}))
        assert (got["status"], got["statusMessage"]) == ("working", created["statusMessage"])
        # A retried call carrying the same answer opens another wait; it approves nothing either.
        retried = result(
            first.rpc(
                "tools/call",
                {
                    "name": "plan_update",
                    "arguments": {"id": item, "status": "in_progress"},
                    "inputResponses": CLIENT_YES,
                },
            )
        )
        assert retried["resultType"] == "task" and retried["status"] == "working"
    finally:
        first.close()  # the server dies with its client: the wait is a row, not a process
    assert approvals(ledger_env, item) == []
    assert run_json(ledger_env, "show")["items"][0]["status"] == "pending"
    listed = run(ledger_env, "tasks").stdout
    assert f"{task_id}  working" in listed and f"waiting for a person: todoledger approve {item}" in listed
    run(ledger_env, "approve", item, person=True)  # a person, on the CLI
    second = Stdio(ledger_env)  # a new server process: its get applies the update
    try:
        done = poll(second, task_id, FINISHED, seen)
        other = poll(second, retried["taskId"], FINISHED, [])
    finally:
        second.close()
    assert seen == ["working", "completed"], seen
    assert done["status"] == "completed" and done["result"]["isError"] is False, done
    assert done["statusMessage"] == "approved by cli:tester; plan_update applied"
    assert done["result"]["structuredContent"]["item"]["status"] == "in_progress"
    # The retried wait completes too; the item is started once, by the agent, after the person.
    assert other["status"] == "completed"
    assert approvals(ledger_env, item) == ["cli:tester"]
    with Ledger(ledger_env) as lg:
        row = lg.task(task_id, None)
        assert row is not None
        view = {i["id"]: i for i in lg.show()["items"]}
        starts = [e for e in lg.history("main") if e["item"] == item and e["field"] == "status"]
    assert view[item]["status"] == "in_progress"
    assert starts[-1]["writer"] == row["writer"] and row["writer"].startswith("mcp:claude-code:")


def test_a_cancelled_wait_approves_nothing(ledger_env: Path) -> None:
    item = needing_approval(ledger_env)
    client = Stdio(ledger_env)
    try:
        created = start(client, item)
        seen = [created["status"]]
        assert result(client.rpc("tasks/cancel", {"taskId": created["taskId"]}))["resultType"] == "complete"
        with Ledger(ledger_env) as lg:  # at once: a wait has no work to stop
            row = lg.task(created["taskId"], None)
        assert row is not None and (row["status"], row["message"]) == (
            "cancelled",
            "cancelled while waiting for a person",
        )
        done = poll(client, created["taskId"], FINISHED, seen)
    finally:
        client.close()
    assert seen == ["working", "cancelled"], seen
    assert done["status"] == "cancelled"
    run(ledger_env, "approve", item, person=True)
    assert run_json(ledger_env, "show")["items"][0]["status"] == "pending"


def test_an_approval_on_the_board_in_chromium_completes_the_wait_while_the_client_polls(
    ledger_env: Path,
) -> None:
    item = needing_approval(ledger_env, "Deploy the <b>draft</b> model")
    served = Served(ledger_env)  # `todoledger serve --name tester`, as the person
    client = Stdio(ledger_env)
    try:
        pw = playwright_sync.sync_playwright().start()
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        page = chromium.new_context(viewport={"width": 1500, "height": 1000}).new_page()
        page.set_default_timeout(WAIT_MS)
        created = start(client, item)
        seen = [created["status"]]
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            polling = pool.submit(poll, client, created["taskId"], FINISHED, seen)
            page.goto(f"{served.base}/approvals?plan=main")
            live(page)
            # The board's panel lists the waiting task with its status message.
            task = page.locator(f'ul.tasks li[data-task="{created["taskId"]}"]')
            assert (
                task.locator(".task-message").inner_text()
                == f"waiting for a person: todoledger approve {item}"
            )
            assert "working" in task.inner_text() and "plan_update" in task.inner_text()
            shot(page, "task-wait-waiting")
            page.click(f'button[data-act=approve][data-id="{item}"]')
            page.wait_for_selector("text=No item waits for a person.")
            shot(page, "task-wait-approved")
            done = polling.result(timeout=120)
            page.reload()
            live(page)
            page.wait_for_selector("text=No agent's task runs or waits.")
        chromium.close()
        pw.stop()
    finally:
        client.close()
        served.stop()
    assert seen == ["working", "completed"], seen
    assert done["statusMessage"] == "approved by web:tester; plan_update applied"
    assert approvals(ledger_env, item) == ["web:tester"]
    assert run_json(ledger_env, "show")["items"][0]["status"] == "in_progress"


def test_a_completion_waiting_for_approval_completes_once_a_person_approves(ledger_env: Path) -> None:
    item = needing_approval(ledger_env, "Ship the release")
    run(ledger_env, "start", item, person=True)  # a person started it; completing it still needs approval
    client = Stdio(ledger_env)
    try:
        call = {"name": "plan_update", "arguments": {"id": item, "status": "completed", "evidence": "tag v1"}}
        plain = result(client.rpc("tools/call", call, tasks=False))
        assert plain["isError"] is True and f"cannot complete {item}" in plain["content"][0]["text"]
        created = result(client.rpc("tools/call", call))
        assert created["resultType"] == "task"
        assert created["statusMessage"] == f"waiting for a person: todoledger approve {item}"
        seen = [created["status"]]
        run(ledger_env, "approve", item, person=True)
        done = poll(client, created["taskId"], FINISHED, seen)
    finally:
        client.close()
    assert seen == ["working", "completed"], seen
    assert done["result"]["isError"] is False, done
    (row,) = run_json(ledger_env, "show")["items"]
    assert (row["status"], row["evidence"]) == ("completed", "tag v1")


def test_a_completion_forced_past_a_persons_gate_waits_for_their_approval_given_after_it(
    ledger_env: Path,
) -> None:
    """An agent's forced completion past a person's gate: refused without the extension;
    with it, a task that waits for that person. Neither an approval given before the task,
    nor one of the whole plan, nor the client's answer, nor an approval of the item that
    does not name the task lets it through; the person's approval of the item naming the
    task they were shown (`approve ID --task TASK`) does, and the override records whose."""
    run(ledger_env, "add", "Benchmark 16 draft tokens", person=True)
    (item,) = [r["id"] for r in run_json(ledger_env, "show")["items"]]
    run(ledger_env, "gate", "add", item, "cmd:exit 1", person=True)  # the person's gate, failing
    run(ledger_env, "approve", item, person=True)  # before the task: not a consent to it
    call = {
        "name": "plan_update",
        "arguments": {"id": item, "status": "completed", "force": True, "reason": "the numbers look fine"},
    }
    client = Stdio(ledger_env)
    try:
        plain = result(client.rpc("tools/call", call, tasks=False))
        assert plain["isError"] is True and "a person must run it" in plain["content"][0]["text"], plain
        created = result(client.rpc("tools/call", call))
        assert created["resultType"] == "task" and created["status"] == "working", created
        task_id = created["taskId"]
        assert created["statusMessage"].startswith(
            f"waiting for a person: todoledger approve {item} --task {task_id} (lets it"
        )
        seen = [created["status"]]
        assert result(client.rpc("tasks/update", {"taskId": task_id, "inputResponses": CLIENT_YES}))
        run(ledger_env, "approve", "--plan", "main", person=True)  # the whole plan: not this completion
        got = result(client.rpc("tasks/get", {"taskId": task_id}))
        seen.append(got["status"])
        assert got["status"] == "working", got
        assert run_json(ledger_env, "show")["items"][0]["status"] == "pending"
        listed = run(ledger_env, "approve", person=True).stdout  # what the person reads first
        assert f"task {task_id[:8]} of mcp:claude-code:" in listed and "'the numbers look fine'" in listed
        assert f"todoledger approve {item} --task {task_id} lets it through" in listed, listed
        said = run(ledger_env, "approve", item, person=True).stdout  # an approval naming no task
        assert f"task {task_id[:8]} of mcp:claude-code:" in said and "still waits" in said, said
        got = result(client.rpc("tasks/get", {"taskId": task_id}))
        assert got["status"] == "working" and run_json(ledger_env, "show")["items"][0]["status"] == "pending"
        said = run(ledger_env, "approve", item, "--task", task_id, person=True).stdout  # as shown
        assert f"this lets task {task_id[:8]} of mcp:claude-code:" in said, said
        done = poll(client, task_id, FINISHED, seen)
    finally:
        client.close()
    assert seen[0] == "working" and seen[-1] == "completed" and set(seen) == {"working", "completed"}, seen
    assert done["result"]["isError"] is False, done
    (row,) = run_json(ledger_env, "show")["items"]
    assert row["status"] == "completed" and row["verification"] != "verified", row
    (forced,) = [e["new"] for e in run_json(ledger_env, "history", item) if e["field"] == "forced"]
    assert forced["approved_by"] == "cli:tester" and forced["task"] == task_id
    assert forced["reason"] == "the numbers look fine"
