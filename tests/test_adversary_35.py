"""Adversarial review of an agent's completion forced past a person's gate as an MCP
task that waits for that person (issue 33, commit 974fc33): what lets it through is
the person's consent to that task, never an approval given for something else. Each
test is an attack an agent could make, on real processes and the real ledger."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.test_cli import run, run_json
from tests.test_mcp_approval_prompt import Person, client
from tests.test_mcp_tasks import Stdio, result
from tests.test_signed_ledger import PASSPHRASE, as_person, check, secret_file, sign_ledger, tl
from todoledger import Ledger
from todoledger.core.model import LedgerError

FINISHED = {"completed", "failed", "cancelled"}
AGENT = "mcp:claude-code:adv35"


def persons_gated(db: Path | str, *, needs_approval: bool = False) -> str:
    """An item whose gate a person wrote, failing."""
    run(
        db, "add", "Benchmark 16 draft tokens", *(["--needs-approval"] if needs_approval else []), person=True
    )
    (item,) = [r["id"] for r in run_json(db, "show")["items"]]
    run(db, "gate", "add", item, "cmd:exit 1", person=True)
    return str(item)


def force_call(item: str, reason: str = "the numbers look fine") -> dict[str, Any]:
    return {
        "name": "plan_update",
        "arguments": {"id": item, "status": "completed", "force": True, "reason": reason},
    }


def settled(agent: Stdio, task_id: str, looks: int = 3) -> dict[str, Any]:
    """The task after a few `tasks/get` (each one settles a wait that a person ended)."""
    got: dict[str, Any] = {}
    for _ in range(looks):
        got = result(agent.rpc("tasks/get", {"taskId": task_id}))
        if got["status"] in FINISHED:
            break
    return got


def test_a_yes_to_start_the_item_in_the_clients_prompt_does_not_force_its_completion(
    ledger_env: Path,
) -> None:
    """The agent opens its forced completion's wait, then asks to start the item: the
    client's user is asked "start X? Approve it as it stands?" and says yes. That
    approval was for starting it; it never showed the forced completion past the gate."""
    item = persons_gated(ledger_env, needs_approval=True)
    agent = Stdio(ledger_env)
    try:
        created = result(agent.rpc("tools/call", force_call(item)))
        assert created["resultType"] == "task" and created["status"] == "working", created
        person = Person("accept")

        async def ask_to_start() -> Any:
            async with client(ledger_env, person) as c:
                return await c.call_tool("plan_update", {"id": item, "status": "in_progress"})

        started = anyio.run(ask_to_start)
        assert not started.is_error, started.content
        (asked,) = person.asked
        assert "asks to start" in asked and "gate" not in asked  # what the person was shown
        got = settled(agent, created["taskId"])
    finally:
        agent.close()
    (row,) = run_json(ledger_env, "show")["items"]
    assert row["status"] == "in_progress", row  # started, as the person said; not completed
    assert got["status"] == "working", got
    assert not [e for e in run_json(ledger_env, "history", item) if e["field"] == "forced"]


# -- a signed ledger ------------------------------------------------------------------------------


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The person's own config folder (ann's key lives here), for this test only."""
    folder = tmp_path / "config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(folder))
    return folder


def signed_gate(db: Path | str, tmp_path: Path) -> str:
    """A signed ledger (ann's key) and an item that needs approval, gated by ann's failing check."""
    from todoledger.personkeys import read_key, unlock

    sign_ledger(db, tmp_path)
    data = read_key("ann")
    assert data is not None
    with Ledger() as lg:
        item = str(lg.add("Ship the draft model", needs_approval=True, writer=AGENT)["id"])
        lg.sign_with(unlock(data, PASSPHRASE))
        lg.add_check(item, "cmd:exit 1", writer="cli:ann")
    return item


def crafted_task(item: str, created_at: str) -> str:
    """A waiting forced completion's row written through the Python API, dated as the agent likes."""
    from todoledger.ledger.tasks import new_task_id, tasks_repo

    task_id = new_task_id()
    args = {"id": item, "status": "completed", "force": True, "reason": "fine"}
    row = {
        "id": task_id,
        "tool": "plan_update",
        "arguments": args,
        "principal": "agent:claude-code",
        "writer": AGENT,
        "plan": "main",
        "status": "working",
        "message": f"waiting for a person: todoledger approve {item}",
        "created_at": created_at,
        "updated_at": created_at,
        "ttl_ms": 86_400_000,
        "poll_ms": 1000,
        "cancel": False,
        "cwd": None,
    }
    with Ledger() as lg, lg._unit.transaction("main"):
        tasks_repo(lg._unit).add(row)
    return task_id


def test_an_approval_to_start_it_signed_before_a_task_dated_earlier_forces_nothing(
    ledger_env: Path | str, tmp_path: Path, config: Path
) -> None:
    """Ann signs an approval so that the agent may start the item. The agent then writes a
    waiting task dated before that approval and completes the item past her gate with it."""
    item = signed_gate(ledger_env, tmp_path)
    approved = tl(ledger_env, "approve", item, typed=secret_file(tmp_path, PASSPHRASE))
    assert approved.returncode == 0, approved.stderr
    task_id = crafted_task(item, "2020-01-01T00:00:00.000Z")
    with Ledger() as lg:
        with pytest.raises(LedgerError, match="signature"):
            lg.update(item, status="completed", force=True, force_reason="fine", task=task_id, writer=AGENT)
        assert lg.get(item)["status"] == "pending"


def test_check_reports_an_agents_completion_forced_past_a_persons_gate_without_her_consent(
    ledger_env: Path | str, tmp_path: Path, config: Path
) -> None:
    """A `forced` event past ann's gate, written by the agent around todoledger (a consistent
    chain, a made-up consent): `todoledger check` lists it, as any person-only event unsigned."""
    from todoledger.core.timefmt import now

    item = signed_gate(ledger_env, tmp_path)
    assert check(ledger_env).returncode == 0, check(ledger_env).stdout
    with Ledger() as lg:
        (gate,) = lg.checks([item])
        u = lg._unit
        with u.transaction("main"):
            at = now()
            w = u.op("main", AGENT, at, "done", summary=f"done {item}")
            forced = {
                "past": "gates",
                "reason": "fine",
                "gates": [{"check": gate.id, "spec": "cmd:exit 1", "result": "fail"}],
                "approved_by": "cli:ann",
                "approved_at": at,
                "task": "0" * 32,
            }
            w.annotate(item, "forced", None, forced)
            w.set(item, "status", "pending", "completed")
            w.annotate(item, "forced", None, {"past": "lease", "holder": "cli:ann", "token": 1, "until": at})
    found = check(ledger_env)
    assert found.returncode == 1, found.stdout
    assert f"main/{item}: event" in found.stdout and "(forced, op" in found.stdout, found.stdout
    assert "completes it past a person's gate without a person's signature" in found.stdout
    assert "overrides another's lease without a person's signature" in found.stdout


def test_a_consent_lets_through_the_tasks_own_update_once_and_no_other(ledger_env: Path) -> None:
    """The person let task T through as shown. The agent, through the Python API as itself,
    uses T for another update (a new wording with it), then for a second completion
    after reopening the item: both refused. `approve --task` names only a task waiting on
    that item."""
    item = persons_gated(ledger_env)
    other = str(Ledger(ledger_env).add("Another item", writer=AGENT)["id"])
    args = {"id": item, "status": "completed", "force": True, "reason": "fine"}
    with Ledger(ledger_env) as lg:
        task_id = str(
            lg.create_task(
                "plan_update", args, principal="agent:claude-code", writer=AGENT, plan="main", message="waits"
            )["id"]
        )
    wrong = run(ledger_env, "approve", other, "--task", task_id, person=True, check=False)
    assert wrong.returncode == 1 and "is no task waiting" in wrong.stderr and "Traceback" not in wrong.stderr
    assert not [e for e in run_json(ledger_env, "history", other) if e["field"] == "approved"]
    # A prefix could name a task the agent made later to share it (its own id, through the API).
    short = run(ledger_env, "approve", item, "--task", task_id[:8], person=True, check=False)
    assert short.returncode == 1 and "is not a whole task id" in short.stderr, short.stderr
    assert not [e for e in run_json(ledger_env, "history", item) if e["field"] == "approved"]
    run(ledger_env, "approve", item, "--task", task_id, person=True)
    with Ledger(ledger_env) as lg:
        with pytest.raises(LedgerError, match="with its own arguments"):
            lg.update(
                item,
                status="completed",
                force=True,
                force_reason="fine",
                content="Done",
                task=task_id,
                writer=AGENT,
            )
        with pytest.raises(LedgerError, match="with its own arguments"):
            lg.update(item, status="completed", force=True, force_reason="other", task=task_id, writer=AGENT)
        done = lg.update(
            item, status="completed", force=True, force_reason="fine", task=task_id, writer=AGENT
        )
        assert done["status"] == "completed" and done["content"] == "Benchmark 16 draft tokens"
        lg.update(item, status="pending", writer=AGENT)
        with pytest.raises(LedgerError, match="a person must run it"):
            lg.update(item, status="completed", force=True, force_reason="fine", task=task_id, writer=AGENT)
        assert lg.get(item)["status"] == "pending"
        assert len([e for e in lg.history(item=item) if e["field"] == "forced"]) == 1


def test_ann_signs_the_consent_to_the_task_she_was_shown_and_check_finds_it_sound(
    ledger_env: Path | str, tmp_path: Path, config: Path
) -> None:
    """The way through on a signed ledger: ann's signed approval naming the task. The
    override is the agent's, unsigned, and `check` accepts it for her signed consent."""
    item = signed_gate(ledger_env, tmp_path)
    agent = Stdio(ledger_env)
    try:
        created = result(agent.rpc("tools/call", force_call(item)))
        task_id = created["taskId"]
        assert f"todoledger approve {item} --task {task_id} " in created["statusMessage"], created
        listed = tl(ledger_env, "approve").stdout
        assert "past cli:ann's gate chk-" in listed and f"--task {task_id} lets it through" in listed, listed
        signed = tl(ledger_env, "approve", item, "--task", task_id, typed=secret_file(tmp_path, PASSPHRASE))
        assert signed.returncode == 0 and f"this lets task {task_id[:8]}" in signed.stdout, signed.stderr
        got = settled(agent, task_id)
    finally:
        agent.close()
    assert got["status"] == "completed" and got["result"]["isError"] is False, got
    with Ledger() as lg:
        assert lg.get(item)["status"] == "completed"
        (forced,) = [e["new"] for e in lg.history(item=item) if e["field"] == "forced"]
    assert (forced["approved_by"], forced["task"]) == ("cli:ann", task_id)
    found = check(ledger_env)
    assert found.returncode == 0, found.stdout


def test_a_consent_given_before_the_ledger_was_signed_lets_nothing_through_after(
    ledger_env: Path | str, tmp_path: Path, config: Path
) -> None:
    """On an unsigned ledger a person's route is the proof (an agent's own Python API can
    write one as `cli:you`). Once a key signs the ledger, an unsigned consent from before
    is no person's signature: the forced completion waits for a signed one."""
    item = persons_gated(ledger_env)
    args = {"id": item, "status": "completed", "force": True, "reason": "fine"}
    with Ledger() as lg:
        task_id = str(
            lg.create_task(
                "plan_update", args, principal="agent:claude-code", writer=AGENT, plan="main", message="waits"
            )["id"]
        )
    run(ledger_env, "approve", item, "--task", task_id, person=True)
    # The ledger has agents' history: person init asks for its name.
    typed = secret_file(tmp_path, PASSPHRASE, str(ledger_env))
    assert tl(ledger_env, "person", "init", "ann", typed=typed, **as_person(ledger_env)).returncode == 0
    with Ledger() as lg:
        with pytest.raises(LedgerError, match="signature"):
            lg.update(item, status="completed", force=True, force_reason="fine", task=task_id, writer=AGENT)
        assert lg.get(item)["status"] == "pending"
