"""Every write carries an idempotency key (issue 30), made by its route before
the first attempt and kept with the op it records (ops.call_key, unique). A
call whose key the ledger holds applies nothing, ever: that is what makes a
retry after a lost connection safe (tests/test_pg_restart_retry.py cuts a real
connection after its commit). On both backends."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import subprocess_env, todoledger_bin
from tests.mcp_wire import stdio_wire
from todoledger import Ledger
from todoledger.core.model import AppliedBefore

TRAIN = {"todos": [{"content": "Train", "status": "pending"}]}
TRAIN_EVAL = {"todos": [{"content": "Train", "status": "pending"}, {"content": "Eval", "status": "pending"}]}


def call_keys(db: Path | str) -> list[str | None]:
    with Ledger(db) as lg:
        return [r[0] for r in lg.repo.db.query("SELECT call_key FROM ops ORDER BY op")]


def test_a_call_whose_key_the_ledger_holds_applies_nothing(ledger_env: Path | str) -> None:
    with Ledger(ledger_env) as lg:
        with lg.keyed("call-1"):
            first = lg.write(TRAIN, writer="agent:a")
        with lg.keyed("call-1"):  # the same call again (its first reply lost): skipped
            again = lg.write(TRAIN_EVAL, writer="agent:a")
        assert (first.skipped, again.skipped) == (False, True)
        with lg.keyed("call-2"):
            lg.add("Ship", writer="agent:a")
        with lg.keyed("call-2"), pytest.raises(AppliedBefore, match="nothing was applied again"):
            lg.add("Ship", writer="agent:a")
        with lg.keyed("call-3"):  # one call, two writes: each op its own key
            deploy = lg.add("Deploy", writer="agent:a")
            lg.update(deploy["id"], status="in_progress", writer="agent:a")
        assert sorted(i["content"] for i in lg.items()) == ["Deploy", "Ship", "Train"]
    assert call_keys(ledger_env) == ["call-1", "call-2", "call-3", "call-3#2"]


def test_an_unchanged_list_records_no_op_for_its_key(ledger_env: Path | str) -> None:
    """A key is kept only with an op: an agent's unchanged list stays free (no row), and
    repeating it applies nothing anyway."""
    with Ledger(ledger_env) as lg:
        with lg.keyed("k1"):
            lg.write(TRAIN, writer="agent:a")
        with lg.keyed("k2"):
            assert lg.write(TRAIN, writer="agent:a").changes == []
    assert call_keys(ledger_env) == ["k1"]


def test_a_spooled_event_whose_first_attempt_landed_is_not_applied_again(ledger_env: Path | str) -> None:
    """A hook's first attempt committed but its connection was lost before the reply:
    the hook spooled the event with the same key; the replay (its source key) finds it."""
    with Ledger(ledger_env) as lg:
        with lg.keyed("hook:abc"):
            lg.write(TRAIN, writer="claude-code:s1")
        replayed = lg.write(TRAIN_EVAL, writer="claude-code:s1", source_key="hook:abc")
        assert replayed.skipped
        assert [i["content"] for i in lg.items()] == ["Train"]


def test_every_route_keys_its_writes(ledger_env: Path | str, tmp_path: Path) -> None:
    """The command line (lean and click verbs), the hooks, MCP (stdio) and the board's
    HTTP actions each record their key, named by the route."""
    from starlette.testclient import TestClient

    from todoledger.mcp.http import create_app
    from todoledger.web.app import Board

    env = subprocess_env(ledger_env, TODOLEDGER_WRITER="agent:routes")
    added = subprocess.run(
        [todoledger_bin(), "add", "-q", "via the lean verb"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert added.returncode == 0, added.stderr
    cancelled = subprocess.run(  # a click verb
        [todoledger_bin(), "cancel", added.stdout.strip(), "--reason", "via a click verb"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert cancelled.returncode == 0, cancelled.stderr
    event = {
        "hook_event_name": "PostToolUse",
        "session_id": "s1",
        "cwd": str(tmp_path),
        "tool_name": "TodoWrite",
        "tool_input": {"todos": [{"content": "via a hook", "status": "pending", "activeForm": "x"}]},
    }
    done = subprocess.run(
        [todoledger_bin(), "hook", "claude-code"],
        input=json.dumps(event),
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 0
    with stdio_wire(ledger_env) as wire:
        wire.call("todowrite", {"todos": [{"content": "via MCP", "status": "pending"}]})
    board = Board(name="tester")
    app, tools = create_app(routes=board.routes(), shared=board.shared)
    try:
        with TestClient(app, base_url="http://127.0.0.1:8765") as client:
            headers = {"x-csrf-token": board.csrf, "Origin": "http://127.0.0.1:8765"}
            answer = client.post(
                "/api/action", json={"action": "add", "content": "via the board"}, headers=headers
            )
            assert answer.status_code == 200, answer.text
    finally:
        tools.close()
        board.close()
    routes = [(k or "").split(":")[0] for k in call_keys(ledger_env)]
    assert routes == ["cli", "cli", "hook", "mcp", "web"], call_keys(ledger_env)
