"""Estimates, resources and approvals through the service, the CLI and the MCP
tools, on real SQLite files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.test_cli import run, run_json
from todoledger import Ledger, LedgerError
from todoledger.mcp.tools import PlanTools

PERSON = "cli:ann"
AGENT = "claude-code:s1"


def state(db: Path) -> tuple[list[str], int]:
    """The plan's items and its ops, refusals aside: a refused write is recorded (issue 31), nothing else."""
    with Ledger(db) as lg:
        return list(lg.export("main")), len([o for o in lg.ops("main") if o["kind"] != "refused"])


def test_new_fields_are_state_replayed_exported_and_imported(ledger_env: Path, tmp_path: Path) -> None:
    with Ledger(ledger_env) as lg:
        a = lg.add("Bench", writer=PERSON, estimate="90m", uses=["server", "gpu:2-3", "gpu:0,1"])
        b = lg.add("Train", writer=PERSON, needs_approval=True, depends_on=[a["id"]])
        assert (a["estimate"], a["uses"]) == ("1h30m", ["gpu:0-3", "server"])
        lg.update(b["id"], writer=PERSON, estimate="2h", uses=["gpu"])
        assert lg.check() == []
        lines = list(lg.export("main"))
    records = [json.loads(line) for line in lines]
    assert records[1]["needs_approval"] is True and "needs_approval" not in records[0]
    other = tmp_path / "other.db"
    with Ledger(other) as lg:
        lg.import_jsonl(lines, writer=PERSON)
        assert list(lg.export("main")) == lines
        assert lg.import_jsonl(lines, writer=PERSON)["changed"] == 0
        assert lg.check() == []
    with Ledger(ledger_env) as lg:  # undo takes a field change back, as any other
        lg.undo("main", writer=PERSON)
        assert lg.get(b["id"])["estimate"] is None and lg.get(b["id"])["uses"] == []
        assert lg.check() == []


def test_bad_estimate_or_resource_changes_nothing(ledger_env: Path) -> None:
    with Ledger(ledger_env) as lg:
        item = lg.add("Bench", writer=PERSON)["id"]
    before = state(ledger_env)
    with Ledger(ledger_env) as lg:
        for bad in ({"estimate": "soon"}, {"uses": ["gpu:3-1"]}, {"needs_approval": "yes"}):
            with pytest.raises(LedgerError):
                lg.update(item, writer=PERSON, **bad)
        with pytest.raises(LedgerError, match="not a duration"):
            lg.add("Other", writer=PERSON, estimate="a while")
    assert state(ledger_env) == before
    proc = run(ledger_env, "add", "X", "--uses", "gpu:9-1", check=False)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    # The refused command is recorded as a refusal for the person to see (issue 31), nothing else.
    assert state(ledger_env)[0] == before[0]
    with Ledger(ledger_env) as lg:
        assert [op["kind"] for op in lg.ops("main")[before[1] :]] == ["refused"]


def test_no_agent_starts_claims_or_completes_what_waits_for_a_person(ledger_env: Path) -> None:
    with Ledger(ledger_env) as lg:
        gated = lg.add("Train on 4 GPUs with 37K samples", writer=PERSON, needs_approval=True)["id"]
        # An agent cannot start it, claim it, or mark it in its own list.
        with pytest.raises(LedgerError, match="needs a person's approval"):
            lg.start(gated, writer=AGENT)
        with pytest.raises(LedgerError, match="needs a person's approval"):
            lg.done(gated, writer=AGENT, force=True)
        assert lg.next("main", claim=True, writer=AGENT) == []
        result = lg.write(
            {"todos": [{"content": "Train on 4 GPUs with 37K samples", "status": "in_progress"}]},
            writer=AGENT,
            dialect="claude-code",
        )
        assert [w.code for w in result.warnings] == ["needs-approval"]
        assert lg.get(gated)["status"] == "pending"
        # Nor approve it, nor lift the gate.
        with pytest.raises(LedgerError, match="a person must run it"):
            lg.approve(gated, writer=AGENT)
        with pytest.raises(LedgerError, match="only a person"):
            lg.update(gated, writer=AGENT, needs_approval=False)
        assert lg.approvals("main")["waiting"] == [gated]
        # A person approves: the agent may claim it now.
        lg.approve(gated, writer=PERSON)
        assert lg.approvals("main")["waiting"] == []
        (claimed,) = lg.next("main", claim=True, writer=AGENT)
        assert (claimed["id"], claimed["status"]) == (gated, "in_progress")
        # The approval holds for the item as approved: reworded, it waits again, with the diff.
        lg.update(gated, writer=AGENT, status="pending")
        lg.update(gated, writer=AGENT, content="Train on 1 GPU with 25K samples")
        standing = lg.approvals("main")
        assert standing["waiting"] == [gated]
        assert standing["items"][gated]["diff"] == [
            {
                "field": "content",
                "approved": "Train on 4 GPUs with 37K samples",
                "now": "Train on 1 GPU with 25K samples",
            }
        ]
        with pytest.raises(LedgerError, match="needs a person's approval"):
            lg.start(gated, writer=AGENT)
        lg.start(gated, writer=PERSON, force=True)  # a person may go ahead, past the agent's lease (recorded)
        assert lg.check() == []


def test_plan_approval_is_a_hash_and_changes_are_flagged_with_a_diff(ledger_env: Path) -> None:
    with Ledger(ledger_env) as lg:
        a = lg.add("Collect 25K samples", writer=PERSON)["id"]
        b = lg.add("Train on 1 GPU", writer=PERSON, depends_on=[a])["id"]
        assert lg.approvals("main")["plan"]["by"] is None
        done = lg.approve_plan("main", writer=PERSON)
        assert lg.approvals("main")["plan"] | {"diff": None} == {
            "approved": True,
            "by": PERSON,
            "at": done["at"],
            "hash": done["hash"],
            "approved_hash": done["hash"],
            "diff": None,
        }
        lg.start(a, writer=AGENT)  # progress is not a change of the plan
        assert lg.approvals("main")["plan"]["approved"]
        lg.update(a, writer=AGENT, content="Collect 37K samples")
        c = lg.add("Train on 4 GPUs", writer=AGENT)["id"]
        lg.dep_remove(b, a, writer=AGENT)
        plan = lg.approvals("main")["plan"]
        assert not plan["approved"]
        changes = {(d["change"], d.get("item")) for d in plan["diff"]}
        assert changes == {("changed", a), ("changed", b), ("added", c)}
        lg.approve_plan("main", writer="web:ann")
        assert lg.approvals("main")["plan"]["approved"]
        with pytest.raises(LedgerError, match="a person must run it"):
            lg.approve_plan("main", writer=AGENT)


def test_measured_durations_come_from_the_history(ledger_env: Path) -> None:
    with Ledger(ledger_env) as lg:
        a = lg.add("Quick", writer=PERSON, at="2026-01-01T10:00:00.000Z")["id"]
        b = lg.add("Slow", writer=PERSON, at="2026-01-01T10:00:00.000Z")["id"]
        lg.start(b, writer=PERSON, at="2026-01-01T11:00:00.000Z")
        lg.done(b, writer=PERSON, at="2026-01-01T12:30:00.000Z")
        lg.done(a, writer=PERSON, at="2026-01-01T10:15:00.000Z")
        assert lg.durations("main") == {a: "15m", b: "1h30m"}


def test_cli_path_parallel_and_approve(ledger_env: Path) -> None:
    def add(*args: str) -> str:
        return str(run_json(ledger_env, "add", *args)["id"])

    setup = add("Set up the server", "--estimate", "30m", "--uses", "server")
    bench = [add(f"Benchmark concurrency {n}", "--estimate", "1h", "--uses", "server") for n in (1, 4)]
    train = add("Train", "--estimate", "2h", "--uses", "gpu:0-3", "--depends-on", setup, "--needs-approval")
    report = add("Report", "--estimate", "10m", "--depends-on", train)
    path = run_json(ledger_env, "path")
    assert (path["critical_path"], path["length"]) == ([setup, train, report], "2h40m")
    parallel = run_json(ledger_env, "next", "--parallel")
    assert parallel["parallel"] == [[setup], [bench[0]], [bench[1]]]
    assert parallel["needs_approval"] == [train]
    text = run(ledger_env, "path").stdout
    assert "2h40m" in text and "Train" in text
    listing = run(ledger_env, "approve", person=True).stdout
    assert "never approved" in listing and f"waits for a person: {train}" in listing
    run(ledger_env, "approve", "--plan", person=True)
    run(ledger_env, "set", setup, "--content", "Set up the inference server")
    flagged = run(ledger_env, "approve", person=True).stdout
    assert "changed since" in flagged and "'Set up the server' -> 'Set up the inference server'" in flagged
    run(ledger_env, "approve", train, person=True)
    assert run_json(ledger_env, "approve")["waiting"] == []


def test_mcp_plan_update_and_todoread(ledger_env: Path) -> None:
    tools = PlanTools()
    writer = "mcp:pytest:1"
    try:
        ids = tools.todowrite(
            {
                "todos": [
                    {"content": "Run the sweep", "status": "pending"},
                    {"content": "Report", "status": "pending"},
                ]
            },
            writer,
        )["ids"]
        out: dict[str, Any] = tools.plan_update(
            {"id": ids[0], "estimate": "3h", "uses": ["gpu:0-3"], "needs_approval": True}, writer
        )
        assert out["item"] | {"id": None, "content": None} == {
            "id": None,
            "content": None,
            "status": "pending",
            "priority": "medium",
            "estimate": "3h",
            "uses": ["gpu:0-3"],
            "needs_approval": True,
        }
        read = tools.todoread({}, writer)
        assert read["critical_path"] == {"items": [ids[0]], "length": "3h"}
        # The gated item is not ready (it waits for a person): only the other can start now.
        assert read["parallel"] == [[ids[1]]]
        claim = tools.plan_next({"claim": True}, writer)
        assert claim["claimed"]["id"] == ids[1]  # the gated item is not an agent's to take
        tools.plan_update({"id": ids[1], "status": "completed"}, writer)
        refused = tools.plan_next({"claim": True}, writer)
        assert refused["claimed"] is None and refused["waiting_for_approval"] == [ids[0]]
        with pytest.raises(LedgerError, match="needs a person's approval"):
            tools.plan_update({"id": ids[0], "status": "in_progress"}, writer)
        with pytest.raises(LedgerError, match="uses"):
            tools.plan_update({"id": ids[0], "uses": "gpu"}, writer)
    finally:
        tools.close()


def test_an_agent_claims_past_many_items_that_wait_for_a_person(ledger_env: Path) -> None:
    with Ledger(ledger_env) as lg:
        for n in range(12):
            lg.add(f"Costly step {n}", writer=PERSON, needs_approval=True, priority="high")
        free = lg.add("Cheap step", writer=PERSON, priority="low")["id"]
        (claimed,) = lg.next("main", claim=True, writer=AGENT)
        assert claimed["id"] == free
        assert lg.next("main", claim=True, writer=AGENT) == []
        assert lg.next("main", claim=True, writer=PERSON)[0]["content"] == "Costly step 0"


def test_a_change_landing_while_the_board_reads_rows_is_not_missed(
    ledger_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The board stamps what it sends with the ledger's change number; the live
    script refreshes on an event only when its number is newer. A stamp read
    after a change that landed during the read would swallow that change's event."""
    import anyio
    from starlette.requests import Request

    from todoledger.web.app import Board

    with Ledger(ledger_env) as lg:
        first = lg.add("Step 1", writer=PERSON)["id"]
        lg.add("Step 2", writer=PERSON)
    board = Board()
    real = Board._plan_parts

    def read_then_someone_writes(self: Board, lg: Ledger, plan: str, win: Any) -> Any:
        parts = real(self, lg, plan, win)
        with Ledger(ledger_env) as other:  # another process, between the read and the stamp
            other.cancel(first, writer=PERSON, reason="not needed")
        return parts

    monkeypatch.setattr(Board, "_plan_parts", read_then_someone_writes)
    body = json.dumps({"plan": "main", "known": {}}).encode()

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/api/rows",
        "query_string": b"",
        "headers": [(b"content-type", b"application/json")],
    }
    try:
        answer = json.loads(anyio.run(board.sync_rows, Request(scope, receive)).body)
    finally:
        board.close()
    with Ledger(ledger_env) as lg:
        now = lg.last_change()
        assert lg.get(first)["status"] == "cancelled"
    assert "st-cancelled" not in answer["rows"][first]  # the rows were read before the cancel
    assert answer["change"] < now  # so the cancel's event is newer than the page, and refreshes it
