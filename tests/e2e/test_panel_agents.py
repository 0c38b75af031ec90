"""Claude Code's task panel written one way from the plan (`install claude-code --panel`),
with the real Claude Code and the fake model on loopback: what the model's own Task
tools see of the ledger's rows, and what becomes of its calls.

Nothing but `install --panel` switches the Task tools on and names the list: the
runs pass no CLAUDE_CODE_* variable of their own.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e import results
from tests.e2e.agents import CLAUDE, RUN_TIMEOUT, Scratch, run
from tests.e2e.fakemodel import FakeModel, Step
from tests.e2e.test_agents import installed_project, todoledger
from todoledger import Ledger
from todoledger.panel import Target, target
from todoledger.panel.sync import sync

pytestmark = [pytest.mark.agents, pytest.mark.xdist_group("e2e-agents")]

FIND = Step("ToolSearch", {"query": "select:TaskList,TaskCreate,TaskUpdate,TaskGet"})
FIRST, SECOND = "Write the parser", "Test the parser"


def panel_project(root: Path, route: str = "mcp") -> tuple[Scratch, Target]:
    scratch = installed_project(CLAUDE, root, "--panel", "--approve", "--route", route)
    for text in (FIRST, SECOND):
        added = todoledger(scratch, "add", text)
        assert added.returncode == 0, added.describe()
    found = target(str(scratch.project), scratch.home)
    assert found is not None
    return scratch, found


def claude(scratch: Scratch, steps: list[Step]) -> tuple[FakeModel, Any]:
    fake = FakeModel(steps)
    try:
        scratch.url = fake.start()
        assert CLAUDE.plain is not None
        argv, extra = CLAUDE.plain(scratch, "Work through the plan with your task tools.")
        result = run(argv, scratch, extra, timeout=RUN_TIMEOUT)
    finally:
        fake.stop()
    (scratch.root / "requests.json").write_text(fake.dump(), encoding="utf-8")
    return fake, result


def rows(where: Target) -> dict[str, dict[str, Any]]:
    folder = Path(where.folder)
    return {p.stem: json.loads(p.read_text()) for p in folder.glob("*.json") if not p.name.startswith(".")}


def items(scratch: Scratch) -> dict[str, dict[str, Any]]:
    shown = todoledger(scratch, "show", "--json")
    assert shown.returncode == 0, shown.describe()
    return {it["content"]: it for it in json.loads(shown.stdout)["items"]}


def tool_results(fake: FakeModel) -> list[str]:
    """Every tool result the agent sent back to the model, as text."""
    out: list[str] = []
    for request in fake.requests:
        for message in request.body.get("messages", []):
            content = message.get("content")
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    out.append(json.dumps(block.get("content"), ensure_ascii=False))
    return out


@pytest.mark.parametrize("route", results.ROUTE_ORDER)
def test_the_models_task_tools_see_and_keep_the_ledgers_rows(route: str, tmp_path: Path) -> None:
    """The compatibility table's panel column (docs/agents.md), one route each."""
    outcome = {"ok": False, "how": "", "why": "the test did not finish"}
    try:
        _see_and_keep(route, tmp_path, outcome)
        outcome = {
            "ok": True,
            "how": "`TaskList` sees it; `TaskCreate` adopted; `TaskUpdate` kept",
            "why": "",
        }
    finally:
        results.record_panel(route, outcome)


def _see_and_keep(route: str, tmp_path: Path, outcome: dict[str, Any]) -> None:
    scratch, where = panel_project(tmp_path, route)
    assert sorted(r["subject"] for r in rows(where).values()) == sorted([FIRST, SECOND])  # the CLI's writes
    steps = [
        FIND,
        Step("TaskList", {}),
        Step("TaskCreate", {"subject": "Model's own task", "description": "found while parsing"}),
        Step("TaskUpdate", {"taskId": "1", "status": "in_progress"}),
    ]
    fake, result = claude(scratch, steps)
    why = f"{result.describe()}\nresults: {tool_results(fake)}"
    assert result.returncode == 0, why
    outcome["why"] = "TaskList did not return the ledger's rows"
    listed = [r for r in tool_results(fake) if FIRST in r]
    assert listed and SECOND in listed[0], why  # TaskList returned the ledger's rows
    outcome["why"] = "the model's TaskCreate/TaskUpdate did not reach the ledger"
    shown = items(scratch)
    assert shown["Model's own task"]["status"] == "pending", why  # the model's TaskCreate, mirrored
    assert shown[FIRST]["status"] == "in_progress", why  # its TaskUpdate of the ledger's row 1
    outcome["why"] = "the model's row was doubled or not adopted"
    now = rows(where)
    assert sorted(r["subject"] for r in now.values()) == sorted([FIRST, SECOND, "Model's own task"]), now
    adopted = next(r for r in now.values() if r["subject"] == "Model's own task")
    assert adopted["metadata"]["todoledger"]["item"] == shown["Model's own task"]["id"]
    outcome["why"] = "the next sync overwrote the model's update"
    # The next sync (a person's CLI write) keeps the model's update of row 1.
    todoledger(scratch, "add", "Ship the parser")
    assert rows(where)["1"]["status"] == "in_progress"
    assert len(rows(where)) == 4


def test_the_models_creates_never_fail_on_our_lock(tmp_path: Path) -> None:
    """Syncs, each taking the list's lock, run back to back while the model creates
    20 tasks: at least 100 of them between its first create and its last."""
    scratch, where = panel_project(tmp_path)
    creates = [Step("TaskCreate", {"subject": f"Model task {n}", "description": ""}) for n in range(20)]
    stop = threading.Event()
    synced: list[float] = []  # when each sync that took the lock ended
    busy: list[float] = []

    def syncs() -> None:
        with Ledger(str(scratch.project / ".todoledger" / "ledger.db")) as lg:
            item = lg.add("Churned by the syncs", writer="cli:tester")
            while not stop.is_set():
                lg.update(item["id"], notes=f"sync {len(synced)}", writer="cli:tester")
                report = sync(lg, where)
                (busy if report.skipped == "busy" else synced).append(time.time())

    worker = threading.Thread(target=syncs)
    worker.start()
    try:
        fake, result = claude(scratch, [FIND, *creates])
    finally:
        stop.set()
        worker.join(60)
    results = tool_results(fake)
    why = f"{result.describe()}\nresults: {results}"
    assert result.returncode == 0, why
    assert not [r for r in results if "lock" in r.lower()], why
    folder = Path(where.folder)
    made = [
        p for p in folder.glob("*.json") if json.loads(p.read_text())["subject"].startswith("Model task ")
    ]
    assert len(made) == 20, why  # every create succeeded, none lost to an id clash
    first, last = min(p.stat().st_ctime for p in made), max(p.stat().st_ctime for p in made)
    during = [t for t in synced if first <= t <= last]
    assert len(during) >= 100, (len(during), len(synced), len(busy), last - first)
    assert len({r["id"] for r in rows(where).values()}) == len(rows(where))
    assert {it for it in items(scratch) if it.startswith("Model task ")} == {
        f"Model task {n}" for n in range(20)
    }
