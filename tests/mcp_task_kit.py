"""Helpers the MCP task tests share (tests/test_mcp_task_sweeps.py, test_mcp_task_waits.py,
test_mcp_tasks_http.py): the stand-in sweep (tests/test_sweep_lifecycle.py's servers and
benchmark clients, in the test's folder) and the item that waits for a person's approval.
A client is a `Stdio` or an `Http` of tests/test_mcp_tasks.py: anything with `rpc`."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import TESTER
from tests.test_cli import run, run_json
from tests.test_mcp_tasks import POLL_LIMIT, result
from tests.test_sweep_lifecycle import CLIENT, SERVER, events
from todoledger import Ledger

FINISHED = {"completed", "failed", "cancelled"}
# What an agent's client would send to approve (the elicitation answer's shape): never a person's.
CLIENT_YES = {"todoledger_approval": {"action": "accept", "content": {"approve": True}}}


# sweeps ---------------------------------------------------------------------------------------


# A test module takes these fixtures by importing each as itself (`import port_fixture as
# port_fixture`: a re-export, not an unused name); its tests ask for
# `scripts` and `port` by name.
@pytest.fixture(name="scripts")
def scripts_fixture(tmp_path: Path) -> Path:
    """The stand-in server and benchmark client, in the folder the sweeps are added in (the test's cwd)."""
    (tmp_path / "server.py").write_text(SERVER)
    (tmp_path / "client.py").write_text(CLIENT)
    (tmp_path / "echo.py").write_text("import sys\nprint('{\"v\": %s}' % sys.argv[1])\n")
    return tmp_path


@pytest.fixture(name="port")
def port_fixture() -> int:
    from tests.test_mcp import free_port

    return int(free_port())


def served_sweep(
    db: Path | str, port: int, *, name: str = "s", writer: str = TESTER, **kw: Any
) -> dict[str, Any]:
    """A sweep with a lifecycle: a stand-in server per combination, a ready check, a clean check."""
    args: dict[str, Any] = {
        "template": "Benchmark k={k}",
        "params": ["k=16,8"],
        "setup": f"python3 server.py {port} {{k}} 0.3",
        "ready": f"http://127.0.0.1:{port}/health",
        "ready_options": {"expect": "ok"},
        "ready_timeout": 60,
        "clean": f"port:127.0.0.1:{port}",
        "run": f"python3 client.py {port} 0.3",
        "metrics": ["tok_s=$.tok_s"],
        "repeat": 2,
    } | kw
    with Ledger(db) as lg:
        return lg.add_sweep(name, writer=writer, **args)


def poll_progress(client: Any, task_id: str, seen: list[str], messages: list[str]) -> dict[str, Any]:
    """tasks/get until the task ends; each status and status message seen is appended."""
    deadline = time.monotonic() + POLL_LIMIT
    while True:
        got = result(client.rpc("tasks/get", {"taskId": task_id}))
        if not seen or seen[-1] != got["status"]:
            seen.append(got["status"])
        message = got.get("statusMessage", "")
        if not messages or messages[-1] != message:
            messages.append(message)
        if got["status"] in FINISHED:
            return got
        assert time.monotonic() < deadline, f"task still {got['status']}: {message}"
        time.sleep(0.1)


def assert_two_combinations_done(done: dict[str, Any], seen: list[str], messages: list[str]) -> None:
    """The stand-in sweep of `served_sweep` (k=16 and k=8, 2 repeats each) completed as a
    task: its states, its progress as the status message run by run, its result."""
    assert done["status"] == "completed", done
    assert seen == ["working", "completed"], seen
    assert any(
        re.fullmatch(r"k=(16|8): repeat [12]/2 holds \(combination [12] of 2\)", m) for m in messages
    ), messages
    data = done["result"]["structuredContent"]
    assert (data["sweep"], data["runs"], data["failed"], data["setups"], data["stopped"]) == (
        "s",
        4,
        0,
        2,
        None,
    )


def receipts(db: Path | str) -> list[tuple[str, str, str]]:
    """(item, check, at) of every receipt recorded: a run recorded twice would show twice."""
    with Ledger(db) as lg:
        return sorted((r["item"], r["check"], r["at"]) for r in lg.receipts())


def bench_requests(folder: Path) -> int:
    """The benchmark requests the stand-in servers answered."""
    return sum(1 for e in events(folder) if e["event"] == "bench")


# waiting for a person -------------------------------------------------------------------------


def needing_approval(db: Path, content: str = "Train on 4 GPUs with 37K samples") -> str:
    """An item a person added that needs a person's approval to start."""
    run(db, "add", content, "--needs-approval", person=True)
    (item,) = [r["id"] for r in run_json(db, "show")["items"] if r["content"] == content]
    return str(item)


def approvals(db: Path, item: str) -> list[str]:
    """The writers of the item's approvals, in order."""
    return [e["writer"] for e in run_json(db, "history", item) if e["field"] == "approved"]


def start(client: Any, item: str, *, tasks: bool = True) -> dict[str, Any]:
    """The agent's `plan_update status=in_progress` on `item`, declaring the tasks extension or not."""
    call = {"name": "plan_update", "arguments": {"id": item, "status": "in_progress"}}
    return result(client.rpc("tools/call", call, tasks=tasks))
