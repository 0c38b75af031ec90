"""The board's consent to an agent's completion forced past a person's gate (issue 33):
the Approvals page shows each MCP task that waits for it with what it would do (the
item, whose gate, its check, the agent's reason, what else it changes) and a button
that gives the person's consent to that task, through the same `Ledger.approve(...,
tasks=[TASK])` as `todoledger approve ID --task TASK`. A person's session only, never
an agent's token; on a signed ledger, with the passphrase typed in the page. The
plain approve button consents to no task. Real processes: `todoledger serve`, a raw
stdio MCP client polling `tasks/get`, Debian's Chromium."""

from __future__ import annotations

import concurrent.futures
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.conftest import hashed_tokens, person_env
from tests.test_board_browser import ARGS, CHROMIUM, WAIT_MS, Served, live, playwright_sync, shot
from tests.test_cli import run, run_json
from tests.test_mcp_tasks import Stdio, poll, result
from tests.test_serve_tokens import ANN, BOT, _act, _base
from tests.test_serve_tokens import team_server as team_server
from todoledger import Ledger

FINISHED = {"completed", "failed", "cancelled"}
REASON = "the numbers look fine <img src=x onerror=alert(1)>"
EVIDENCE = "tag <b>v1</b>"
AGENT = "mcp:claude-code:board35"
AGENT_PREFIX = "mcp:claude-code:"  # a stdio client's writer: its kind and session


def forced(item: str) -> dict[str, Any]:
    """The agent's `plan_update`: complete `item` past the gate, with its reason and evidence."""
    args = {"id": item, "status": "completed", "force": True, "reason": REASON, "evidence": EVIDENCE}
    return {"name": "plan_update", "arguments": args}


def looks(client: Stdio, task_id: str, n: int = 3) -> dict[str, Any]:
    """The task after `n` looks (each `tasks/get` settles a wait a person ended)."""
    got: dict[str, Any] = {}
    for _ in range(n):
        got = result(client.rpc("tasks/get", {"taskId": task_id}))
        if got["status"] in FINISHED:
            break
    return got


def forced_events(db: Path | str, item: str) -> list[dict[str, Any]]:
    return [e["new"] for e in run_json(db, "history", item) if e["field"] == "forced"]


@contextmanager
def tab() -> Iterator[Any]:
    """A fresh Chromium tab; every JavaScript dialog it raises (an alert an agent's text
    might inject) is recorded in `tab.dialogs` and dismissed."""
    with playwright_sync.sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            page = chromium.new_context(viewport={"width": 1500, "height": 1000}).new_page()
            page.set_default_timeout(WAIT_MS)
            page.dialogs = []
            page.on("dialog", lambda d: (page.dialogs.append(d.message), d.dismiss()))
            yield page
        finally:
            chromium.close()


def test_the_person_consents_on_the_board_and_the_agents_client_completes_the_task(
    ledger_env: Path,
) -> None:
    """An agent's client opens a forced completion past the person's failing gate (raw
    stdio JSON-RPC). The Approvals page shows what it would do, the agent's words as
    text. The plain approve button approves the item and lets no task through; the
    consent button does, and the client's `tasks/get` completes it with the override
    recording the person's consent to that task."""
    run(ledger_env, "add", "Ship the <i>draft</i> model", "--needs-approval", person=True)
    (item,) = [r["id"] for r in run_json(ledger_env, "show")["items"]]
    run(ledger_env, "gate", "add", item, "cmd:exit 1", person=True)  # the person's gate, failing
    with Ledger(ledger_env) as lg:
        (gate,) = [c.id for c in lg.checks([item])]
    served = Served(ledger_env)  # `todoledger serve --name tester`: the person who started it
    client = Stdio(ledger_env)
    try:
        created = result(client.rpc("tools/call", forced(item)))
        assert created["resultType"] == "task" and created["status"] == "working", created
        task_id = created["taskId"]
        seen = [created["status"]]
        with tab() as page:
            page.goto(f"{served.base}/approvals?plan=main")
            live(page)
            shown = page.locator(f'ul.tasks li[data-task="{task_id}"] .forcing')
            text = shown.locator("p").first.inner_text()  # what it would do, in one sentence
            what = (
                f"Ship the <i>draft</i> model {item} past cli:tester's gate {gate} cmd:exit 1 (last result:"
            )
            assert text.startswith(f"It would complete {what}"), text
            assert f", as {AGENT_PREFIX}" in text and text.endswith(f"on its reason: {REASON}"), text
            assert shown.locator("ul.also").inner_text() == f"evidence = {EVIDENCE}"
            assert shown.locator("q.reason").inner_text() == REASON
            # The agents' words are text, never markup: no image, no italics or bold of theirs.
            assert page.locator("main img, main .forcing i, main .forcing b, main ul.waiting i").count() == 0
            consent = shown.locator(f'button[data-act=approve_task][data-task="{task_id}"]')
            assert consent.get_attribute("data-id") == item
            shot(page, "task-consent-waiting")
            # The plain approve button: the item is approved, the forced completion still waits.
            page.click(f'button[data-act=approve][data-id="{item}"]')
            page.wait_for_selector("text=No item waits for a person.")
            got = looks(client, task_id)
            assert got["status"] == seen[-1] == "working", got
            assert run_json(ledger_env, "show")["items"][0]["status"] == "pending"
            assert page.locator(f'button[data-act=approve_task][data-task="{task_id}"]').count() == 1
            with concurrent.futures.ThreadPoolExecutor(1) as pool:
                polling = pool.submit(poll, client, task_id, FINISHED, seen)
                page.click(f'button[data-act=approve_task][data-task="{task_id}"]')
                done = polling.result(timeout=120)
            page.reload()
            live(page)
            page.wait_for_selector("text=No agent's task runs or waits.")
            shot(page, "task-consent-done")
            assert page.dialogs == [], page.dialogs
    finally:
        client.close()
        served.stop()
    assert seen == ["working", "completed"], seen
    assert done["result"]["isError"] is False, done
    (row,) = run_json(ledger_env, "show")["items"]
    assert (row["status"], row["evidence"]) == ("completed", EVIDENCE) and row["verification"] != "verified"
    (override,) = forced_events(ledger_env, item)
    assert (override["approved_by"], override["task"], override["reason"]) == ("web:tester", task_id, REASON)
    approvals = [e for e in run_json(ledger_env, "history", item) if e["field"] == "approved"]
    assert [e["writer"] for e in approvals] == ["web:tester", "web:tester"]
    assert not approvals[0]["new"].get("lets_through"), approvals[0]  # the plain approve named none
    assert [e["task"] for e in approvals[1]["new"]["lets_through"]] == [task_id]


def waiting_task(db: Path | str) -> tuple[str, str]:
    """An item gated by a person's failing check, and an agent's task that waits to force
    its completion past it (written through the Python API, as the MCP server does)."""
    with Ledger(str(db)) as lg:
        item = str(lg.add("Deploy to production", writer="cli:owner")["id"])
        lg.add_check(item, "cmd:exit 1", writer="cli:owner")
        args = {"id": item, "status": "completed", "force": True, "reason": "fine"}
        task = lg.create_task(
            "plan_update", args, principal="agent:claude-code", writer=AGENT, plan="main", message="waits"
        )
    return item, str(task["id"])


def shown_digest(base: str, token: str, task: str) -> str:
    """What the Approvals page's consent button for `task` sends back (`data-shown`)."""
    page = httpx2.get(f"{base}/approvals?plan=main", headers={"Authorization": f"Bearer {token}"})
    found = re.search(rf'data-task="{task}" data-shown="([0-9a-f]+)"', page.text)
    assert found is not None, page.text
    return found.group(1)


def consent_of(db: Path | str, item: str, task: str) -> Any:
    with Ledger(str(db)) as lg:
        return lg.gate_consent(task, item, plan="main", writer=AGENT)


def test_an_agent_tokens_consent_is_refused_and_a_plain_approve_consents_to_nothing(
    team_server: str, ledger_env: Path | str
) -> None:
    """agent:ci's token posts the consent with the page's CSRF token and the digest the
    page shows: refused in one line, recorded as its refusal, nothing else changed. Ann's
    (a person's token): without CSRF, refused; a plain approve consents to no task; a
    consent to what the page no longer shows is refused; the consent as shown is hers."""
    base = _base(team_server)
    item, task = waiting_task(ledger_env)
    shown = shown_digest(base, ANN, task)
    body = {"action": "approve_task", "id": item, "task": task, "shown": shown, "who": "ann"}
    said = _act(base, BOT, body)
    assert said.status_code == 403, said.text
    assert said.json()["error"] == (
        "agent:ci@web holds an agent's token: only a person can let an agent's task complete an item"
        " past a person's gate; a person must do it, under a person's token (log in at /login) or from"
        " a terminal"
    )
    with Ledger(str(ledger_env)) as lg:
        assert not [e for e in lg.history(item=item) if e["field"] == "approved"]
        refused = [(o["writer"], o["summary"]) for o in lg.ops("main") if o["kind"] == "refused"]
        assert lg.task(task, None)["status"] == "working"  # type: ignore[index]
    assert refused == [("agent:ci@web", f"board approve_task: {said.json()['error']}")]
    assert consent_of(ledger_env, item, task) is None
    # A person's token, but no CSRF token: refused before anything is read.
    bare = httpx2.post(f"{base}/api/action", json=body, headers={"Authorization": f"Bearer {ANN}"})
    assert bare.status_code == 403 and "CSRF" in bare.json()["error"]
    # The plain approve: the item's approval, no consent to the task.
    assert _act(base, ANN, {"action": "approve", "id": item}).status_code == 200
    assert consent_of(ledger_env, item, task) is None
    # A consent to something other than what the page showed: one line, nothing done.
    for wrong in ("0" * 32, "é", 7):
        stale = _act(base, ANN, body | {"shown": wrong})
        assert stale.status_code == 400 and "is not as the page showed it" in stale.json()["error"], (
            stale.text
        )
    assert consent_of(ledger_env, item, task) is None
    given = _act(base, ANN, body)
    assert given.status_code == 200, given.text
    assert (given.json()["writer"], given.json()["lets_through"]) == ("web:ann", [task])
    consent = consent_of(ledger_env, item, task)
    assert consent is not None and (consent["approved_by"], consent["task"]) == ("web:ann", task)
    page = httpx2.get(f"{base}/approvals?plan=main", headers={"Authorization": f"Bearer {ANN}"})
    assert "Consent given by <span class=writer>web:ann</span>" in page.text
    assert "data-act=approve_task" not in page.text


# -- a signed ledger ------------------------------------------------------------------------------

PERSON_TOKEN = "ann-person-token-0123456789"


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The person's own config folder (ann's key lives here), for this test only."""
    folder = tmp_path / "config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(folder))
    return folder


def test_on_a_signed_ledger_the_passphrase_typed_in_the_page_signs_the_consent(
    ledger_env: Path, tmp_path: Path, config: Path
) -> None:
    """Ann logs in with her token and clicks the consent button: the page asks her
    passphrase (a token is no signature), the board signs her approval naming the
    task with her key, the client's `tasks/get` completes the task, and `todoledger
    check` finds every person-only event signed."""
    from tests.test_adversary_35 import signed_gate
    from tests.test_signed_ledger import PASSPHRASE, check

    person_env(ledger_env)  # `serve`'s person registers their token before the ledger is signed
    item = signed_gate(ledger_env, tmp_path)  # ann's key signs the ledger and her failing gate
    tokens = hashed_tokens(tmp_path / "tokens", f"{PERSON_TOKEN} ann person\n")
    served = Served(ledger_env, "--tokens", str(tokens))
    client = Stdio(ledger_env)
    try:
        created = result(client.rpc("tools/call", forced(item)))
        task_id = created["taskId"]
        seen = [created["status"]]
        with tab() as page:
            page.goto(f"{served.base}/login")
            page.fill("input[name=token]", PERSON_TOKEN)
            page.click("button")
            live(page)
            page.goto(f"{served.base}/approvals?plan=main")
            live(page)
            assert "past cli:ann's gate" in page.inner_text(f'li[data-task="{task_id}"] .forcing')
            page.click(f'button[data-act=approve_task][data-task="{task_id}"]')
            page.wait_for_selector("dialog.sign input[type=password]")
            asked = page.inner_text("dialog.sign")
            assert "this ledger is signed" in asked and f"--task {task_id}" in asked, asked
            page.fill("dialog.sign input[type=password]", PASSPHRASE)
            page.click("dialog.sign button[value=sign]")
            page.wait_for_selector(f'li[data-task="{task_id}"] .consented')
            assert "Consent given by web:ann" in page.inner_text(f'li[data-task="{task_id}"] .consented')
            shot(page, "task-consent-signed")
        done = poll(client, task_id, FINISHED, seen)
    finally:
        client.close()
        served.stop()
    assert seen == ["working", "completed"] and done["result"]["isError"] is False, done
    (override,) = forced_events(ledger_env, item)
    assert (override["approved_by"], override["task"]) == ("web:ann", task_id)
    found = check(ledger_env)
    assert found.returncode == 0, found.stdout
