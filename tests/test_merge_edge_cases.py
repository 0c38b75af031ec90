"""Edge cases found in review: stale writers after rewording, links across
plans, validation of imports and updates, patches, positions, conflict noise."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import subprocess_env, todoledger_bin
from todoledger import Ledger
from todoledger.core.model import LedgerError
from todoledger.store.sqlite import SQLiteStore


@pytest.fixture
def lg() -> Any:
    with Ledger(store=SQLiteStore(None)) as ledger:
        yield ledger


def oc(*rows: tuple[str, str, str]) -> dict[str, Any]:
    return {"todos": [{"id": i, "content": c, "status": s, "priority": "high"} for i, c, s in rows]}


def contents(lg: Ledger, plan: str = "main") -> list[tuple[str, str]]:
    return [(i["content"], i["status"]) for i in lg.show(plan)["items"]]


@pytest.mark.parametrize("with_ids", [True, False])
def test_stale_writer_after_someone_elses_rewording_changes_the_real_item(lg: Ledger, with_ids: bool) -> None:
    def payload(first_status: str) -> dict[str, Any]:
        rows = [("1", "Fix bug", first_status), ("2", "Write tests", "pending")]
        return oc(*rows) if with_ids else {"todos": [{"content": c, "status": s} for _, c, s in rows]}

    lg.write(payload("pending"), writer="A", dialect="opencode")
    fix = lg.show()["items"][0]["id"]
    lg.update(fix, content="Fix the flaky login bug in the auth module", writer="B")
    lg.write(payload("completed"), writer="A", dialect="opencode")
    assert contents(lg) == [
        ("Fix the flaky login bug in the auth module", "completed"),
        ("Write tests", "pending"),
    ]
    assert lg.check() == []


def test_task_links_never_reach_into_another_plan(lg: Ledger) -> None:
    b1 = lg.add("B first", plan="B")["id"]
    b2 = lg.add("B second", plan="B", depends_on=[b1])["id"]
    before = lg.show("B")
    lg.write(
        {"subject": "A task"}, plan="A", writer="w", dialect="claude-tasks", response={"task": {"id": "1"}}
    )
    lg.write(
        {"taskId": "1", "addBlocks": [b2], "addBlockedBy": [b1]}, plan="A", writer="w", dialect="claude-tasks"
    )
    assert lg.show("B") == before
    assert lg.show("A")["items"][0]["depends_on"] == []
    assert lg.check() == []


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"position": "x"}, "position must be a finite number"),
        ({"position": float("nan")}, "position must be a finite number"),
        ({"notes": {"a": 1}}, "notes must be text"),
        ({"notes": 5}, "notes must be text"),
        ({"active_form": True}, "active_form must be text"),
        ({"depends_on": "abc"}, "depends_on must be a list"),
        ({"depends_on": ["x", "x"]}, "depends_on must be a list of distinct"),
        ({"depends_on": ["nosuch"]}, "refers to nosuch, which is not in the plan"),
        ({"parent": "nosuch"}, "refers to nosuch, which is not in the plan"),
    ],
)
def test_import_validates_every_field_and_changes_nothing(
    lg: Ledger, record: dict[str, Any], message: str
) -> None:
    lg.add("keep me")
    before = list(lg.export())
    line = json.dumps({"id": "aaaaaa", "content": "x", **record}, allow_nan=True)
    with pytest.raises(LedgerError, match=message):
        lg.import_jsonl([line])
    assert list(lg.export()) == before


def test_import_refuses_duplicate_ids_and_parent_cycles(lg: Ledger) -> None:
    one = json.dumps({"id": "aaaaaa", "content": "x"})
    with pytest.raises(LedgerError, match="appears more than once"):
        lg.import_jsonl([one, one])
    cycle = [
        json.dumps({"id": "aaaaaa", "content": "a", "parent": "bbbbbb"}),
        json.dumps({"id": "bbbbbb", "content": "b", "parent": "aaaaaa"}),
    ]
    with pytest.raises(LedgerError, match="parent cycle"):
        lg.import_jsonl(cycle)
    assert lg.show()["items"] == []


def test_update_refuses_raw_dependencies_and_bad_positions(lg: Ledger) -> None:
    a = lg.add("A")["id"]
    with pytest.raises(LedgerError, match="use add_blocker"):
        lg.update(a, depends_on=[a])
    with pytest.raises(LedgerError, match="position must be a finite number"):
        lg.update(a, position="top")
    with pytest.raises(LedgerError, match="notes must be text"):
        lg.add("Z", notes=3)  # type: ignore[arg-type]
    assert lg.check() == []


def test_patch_with_a_dangling_task_id_creates_nothing(lg: Ledger) -> None:
    lg.write({"subject": "Port the parser"}, writer="c", response={"task": {"id": "1"}})
    lg.undo(writer="c")
    with pytest.raises(LedgerError, match="unknown task id '1'"):
        lg.write({"taskId": "1", "status": "in_progress"}, writer="c")
    assert lg.show()["items"] == []


def test_two_tasks_with_the_same_subject_stay_two(lg: Ledger) -> None:
    lg.write({"subject": "Run the tests"}, writer="c", response={"task": {"id": "1"}})
    lg.write({"subject": "Run the tests"}, writer="c", response={"task": {"id": "2"}})
    lg.write({"taskId": "1", "status": "completed"}, writer="c")
    lg.write({"taskId": "2", "status": "in_progress"}, writer="c")
    assert sorted(contents(lg)) == [("Run the tests", "completed"), ("Run the tests", "in_progress")]


def test_clear_then_undo_leaves_the_session_working(lg: Ledger) -> None:
    lg.write({"subject": "Port the parser"}, writer="c", response={"task": {"id": "1"}})
    lg.clear()
    lg.undo()
    lg.write({"taskId": "1", "status": "completed"}, writer="c")
    assert contents(lg) == [("Port the parser", "completed")]


def test_a_rewritten_long_list_keeps_every_item(lg: Ledger) -> None:
    # Its time beside the first write: bench/bench_limits.py.
    lg.write(
        {"todos": [{"content": f"old step {k} alpha", "status": "pending"} for k in range(2000)]}, writer="w"
    )
    lg.write(
        {"todos": [{"content": f"new task {k} beta", "status": "pending"} for k in range(2000)]}, writer="w"
    )
    assert len(lg.show()["items"]) == 4000


def test_order_survives_many_inserts_at_the_same_place(lg: Ledger) -> None:
    steps = ["head", "tail"]
    lg.write({"todos": [{"content": s, "status": "pending"} for s in steps]}, writer="w")
    for k in range(70):
        steps.insert(1, f"step {k}")
        lg.write({"todos": [{"content": s, "status": "pending"} for s in steps]}, writer="w")
    assert [c for c, _ in contents(lg)] == steps
    assert lg.check() == []


def test_conflicts_are_told_once_and_unchanged_lists_cost_no_op(lg: Ledger) -> None:
    lg.write({"todos": [{"content": "Train", "status": "pending", "priority": "low"}]}, writer="a")
    item = lg.show()["items"][0]["id"]
    lg.update(item, status="completed", priority="high", writer="b")
    stale = {"todos": [{"content": "Train", "status": "pending", "priority": "low"}]}
    for _ in range(5):
        lg.write(stale, writer="a")
    conflicts = [e["new"]["field"] for e in lg.history(item=item) if e["field"] == "conflict"]
    assert sorted(conflicts) == ["priority", "status"]
    ops = len(lg.ops())
    revision = lg.show()["revision"]
    for _ in range(20):
        lg.write(stale, writer="a")
    assert len(lg.ops()) == ops and lg.show()["revision"] == revision


def test_id_prefixes_are_literal(lg: Ledger) -> None:
    lg.add("only item")
    with pytest.raises(LedgerError, match="no item '__'"):
        lg.done("__")


def test_hook_with_stdin_closed_exits_zero(ledger_env: Path) -> None:
    proc = subprocess.run(
        [todoledger_bin(), "hook", "claude-code"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=subprocess_env(ledger_env),
        timeout=60,
    )
    closed = subprocess.run(
        f"{todoledger_bin()} hook claude-code <&-",
        shell=True,
        capture_output=True,
        text=True,
        env=subprocess_env(ledger_env),
        timeout=60,
    )
    assert (proc.returncode, proc.stderr, closed.returncode, closed.stderr) == (0, "", 0, "")


def test_a_refused_write_inside_a_longer_transaction_leaves_nothing(lg: Ledger) -> None:
    from todoledger.core.model import CycleError

    lg.write({"subject": "A"}, writer="c", response={"task": {"id": "1"}})
    lg.write({"subject": "B"}, writer="c", response={"task": {"id": "2"}})
    lg.write({"taskId": "2", "addBlockedBy": ["1"]}, writer="c")
    before = lg.show()
    with lg.store.write():  # as an import batches many calls
        with pytest.raises(CycleError):
            lg.write({"taskId": "1", "status": "in_progress", "addBlockedBy": ["2"]}, writer="c")
        lg.write({"subject": "C"}, writer="c", response={"task": {"id": "3"}})
    after = lg.show()
    assert [i["content"] for i in after["items"]] == ["A", "B", "C"]
    assert after["items"][:2] == before["items"]
    assert lg.check() == []


def test_a_writer_relisting_what_it_dropped_brings_it_back(lg: Ledger) -> None:
    lg.write(
        {
            "todos": [
                {"content": "Migrate schema", "status": "pending"},
                {"content": "Ship", "status": "pending"},
            ]
        },
        writer="w",
    )
    lg.write({"todos": [{"content": "Ship", "status": "pending"}]}, writer="w")
    assert contents(lg) == [("Migrate schema", "dropped"), ("Ship", "pending")]
    lg.write(
        {
            "todos": [
                {"content": "Migrate schema", "status": "pending"},
                {"content": "Ship", "status": "pending"},
            ]
        },
        writer="w",
    )
    assert contents(lg) == [("Migrate schema", "pending"), ("Ship", "pending")]
    assert lg.show()["items"][0]["reason"] is None
    # A drop is no decision about the work: another writer (a new session) that lists it revives it too,
    # and is told who dropped it and when.
    lg.write({"todos": [{"content": "Ship", "status": "pending"}]}, writer="w")
    item = lg.show()["items"][0]["id"]
    revived = lg.write({"todos": [{"content": "Migrate schema", "status": "in_progress"}]}, writer="stranger")
    assert contents(lg)[0] == ("Migrate schema", "in_progress")
    assert revived.notices == [
        f"'Migrate schema' ({item}) was dropped by w at revision 4; listed again, it is in_progress"
    ]
    assert lg.show()["items"][0]["reason"] is None


def test_a_reason_belongs_to_its_state_and_leaves_with_it(lg: Ledger) -> None:
    """Issue 18: a completed item carried the reason of an earlier drop. Whatever
    moves the status (a list, an update), the old state's reason stays in the
    history and leaves the item."""
    lg.write(
        {"todos": [{"content": "Deploy", "status": "pending"}, {"content": "Ship", "status": "pending"}]},
        writer="w",
    )
    lg.write({"todos": [{"content": "Ship", "status": "pending"}]}, writer="w")  # Deploy dropped
    deploy = next(i for i in lg.show()["items"] if i["content"] == "Deploy")
    assert deploy["reason"] == "dropped by w at revision 2"
    lg.write(
        {"todos": [{"content": "Deploy", "status": "completed"}, {"content": "Ship", "status": "pending"}]},
        writer="w",
    )
    assert (lg.get(deploy["id"])["status"], lg.get(deploy["id"])["reason"]) == ("completed", None)
    ship = next(i for i in lg.show()["items"] if i["content"] == "Ship")["id"]
    lg.cancel(ship, reason="not this release", writer="w")
    lg.update(ship, status="in_progress", writer="w")
    assert lg.get(ship)["reason"] is None
    reasons = [(e["old"], e["new"]) for e in lg.history(item=ship) if e["field"] == "reason"]
    assert reasons == [(None, "not this release"), ("not this release", None)]  # kept in the history
    assert lg.check() == []
