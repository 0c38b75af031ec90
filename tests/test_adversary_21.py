"""Issue 21 attacked: leases, the spool, the libpq binding, bounded inputs.
Each test failed on the code before its fix (or is marked xfail strict where
the fix is not small). Runs on SQLite and on the real PostgreSQL."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from todoledger import Ledger

from .conftest import subprocess_env, todoledger_bin
from .test_leases import cli, held, lg, statuses, t  # noqa: F401  (held, lg: fixtures)


def _spool_file(head: dict[str, Any], event: dict[str, Any]) -> None:
    """An event in the spool as an agent can write it there itself: the folder is its to write."""
    from todoledger.store.locate import spool_dir

    folder = Path(spool_dir(str(Path.cwd())))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "00000000000000000001-1.json").write_bytes(
        json.dumps(head).encode() + b"\n" + json.dumps(event).encode()
    )


def test_a_spooled_event_dated_in_the_future_does_not_pass_a_live_lease(
    ledger_env: Path | str,
    lg: Ledger,  # noqa: F811
    held: dict[str, Any],  # noqa: F811
) -> None:
    """Before: the replay used the spool's own `at` as the write's time and the
    fence compared the lease's expiry with it, so a spool file dated 2999 completed
    alice's leased item (history: `2999-01-01 ... in_progress -> completed`)."""
    event = {
        "session_id": "forger",
        "cwd": str(Path.cwd()),
        "hook_event_name": "PostToolUse",
        "tool_name": "TodoWrite",
        "tool_input": {"todos": [{"content": "Task 1", "status": "completed", "activeForm": "x"}]},
    }
    _spool_file({"agent": "claude-code", "key": "spool:forged", "at": "2999-01-01T00:00:00.000Z"}, event)
    proc = cli(ledger_env, "flush")
    assert proc.returncode == 0, proc.stderr
    assert statuses(lg)["Task 1"] == "in_progress"
    assert [x["holder"] for x in lg.leases()] == ["alice"]
    assert not [e for e in lg.history() if e["at"].startswith("2999")]  # no time to come in the history
    assert lg.check() == []


def test_a_spooled_event_is_replayed_into_the_plan_its_hook_wrote(ledger_env: Path | str) -> None:
    """Before: the spool kept no plan, so the replay wrote into the replaying
    process's TODOLEDGER_PLAN (or `main`): a hook of plan `feature` that met a
    busy ledger had its list land in another plan after `todoledger flush`."""
    from .conftest import hold_write_lock

    with Ledger() as ledger:
        ledger.add("seed", plan="seed", writer="lead")
    event = {
        "session_id": "s1",
        "cwd": str(Path.cwd()),
        "hook_event_name": "PostToolUse",
        "tool_name": "TodoWrite",
        "tool_input": {"todos": [{"content": "feature work", "status": "in_progress", "activeForm": "x"}]},
    }
    lock = hold_write_lock(ledger_env)
    try:
        hook = subprocess.run(
            [todoledger_bin(), "hook", "claude-code"],
            input=json.dumps(event),
            capture_output=True,
            text=True,
            env=subprocess_env(ledger_env, TODOLEDGER_PLAN="feature"),
        )
    finally:
        lock.close()
    assert hook.returncode == 0, hook.stderr
    flush = subprocess.run(
        [todoledger_bin(), "flush"],
        capture_output=True,
        text=True,
        env=subprocess_env(ledger_env, TODOLEDGER_PLAN="other"),
    )
    assert flush.returncode == 0 and flush.stdout.startswith("1 replayed"), (flush.stdout, flush.stderr)
    with Ledger() as ledger:
        assert {p["plan"] for p in ledger.plans()} == {"seed", "feature"}
        assert [i["content"] for i in ledger.items("feature")] == ["feature work"]


def test_a_codex_rollout_dated_in_the_future_does_not_pass_a_live_lease(
    ledger_env: Path | str,
    lg: Ledger,  # noqa: F811
    held: dict[str, Any],  # noqa: F811
    tmp_path: Path,
) -> None:
    """Before: the Codex hook imported the rollout's own times, so a rollout
    the agent wrote with `"timestamp": "2999-..."` completed alice's leased item."""
    args = json.dumps({"plan": [{"step": "Task 1", "status": "completed"}]})
    lines = [
        {
            "timestamp": "2999-01-01T10:00:00Z",
            "type": "session_meta",
            "payload": {"id": "0199cccc", "cwd": "."},
        },
        {
            "timestamp": "2999-01-01T10:01:00Z",
            "type": "response_item",
            "payload": {"type": "function_call", "name": "update_plan", "arguments": args, "call_id": "c1"},
        },
    ]
    rollout = tmp_path / "rollout.jsonl"
    rollout.write_text("".join(json.dumps(x) + "\n" for x in lines))
    event = {"hook_event_name": "Stop", "transcript_path": str(rollout), "cwd": str(Path.cwd())}
    proc = cli(ledger_env, "hook", "codex", stdin=json.dumps(event))
    assert proc.returncode == 0, proc.stderr
    assert statuses(lg)["Task 1"] == "in_progress"
    assert [x["holder"] for x in lg.leases()] == ["alice"]
    assert not [e for e in lg.history() if e["at"].startswith("2999")]


def test_an_agents_shell_cannot_set_the_clock_past_a_live_lease(ledger_env: Path | str) -> None:
    """Before: `TODOLEDGER_NOW=2999-... todoledger done ID` from an agent's shell
    completed the item another agent held (the lease looked lapsed at that time),
    and the history said it happened in 2999."""
    with Ledger() as ledger:
        ledger.add("Build", writer="lead")
        item = ledger.next(claim=True, writer="agent-b")[0]["id"]
    shell = {"CLAUDECODE": "1", "CLAUDE_CODE_SESSION_ID": "a"}
    proc = subprocess.run(
        [todoledger_bin(), "done", item, "--evidence", "x"],
        capture_output=True,
        text=True,
        env=subprocess_env(ledger_env, TODOLEDGER_NOW="2999-01-01T00:00:00Z", **shell),
    )
    assert proc.returncode == 1 and f"{item} is leased to agent-b until" in proc.stderr, proc.stderr
    with Ledger() as ledger:
        assert [i["status"] for i in ledger.items()] == ["in_progress"]
        assert not [e for e in ledger.history() if e["at"].startswith("2999")]


def test_a_text_with_a_nul_is_stored_whole_or_refused_on_the_agents_path(ledger_env: Path | str) -> None:
    """Before, on PostgreSQL: the libpq binding handed libpq a C string, so
    `activeForm: "doing\\u0000 hidden"` was stored as "doing" and the write
    answered as usual (psycopg refuses it; SQLite keeps it whole)."""
    payload = {
        "todos": [{"content": "nul test", "status": "in_progress", "activeForm": "doing\u0000 hidden"}]
    }
    proc = subprocess.run(
        [todoledger_bin(), "write", "--dialect", "claude-code", "-"],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=subprocess_env(ledger_env, TODOLEDGER_WRITER="w"),
    )
    with Ledger() as ledger:
        stored = [i["active_form"] for i in ledger.items()] if ledger.exists else []
    if proc.returncode == 0:
        assert stored == ["doing\u0000 hidden"]
    else:
        assert stored == [] and proc.stderr.count("\n") == 1, proc.stderr
        assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr


def test_a_plan_name_of_bytes_that_are_not_utf8_is_one_line_on_every_backend(ledger_env: Path | str) -> None:
    """Before, on PostgreSQL: `internal error: UnicodeEncodeError` from every verb
    (lean and click) when TODOLEDGER_PLAN held bytes that are not UTF-8."""
    with Ledger() as ledger:
        ledger.add("one", writer="w")
    for verb in (["show", "--json"], ["next", "--json"], ["add", "x"], ["history"]):
        env = subprocess_env(ledger_env, TODOLEDGER_PLAN="pl\udcff")
        proc = subprocess.run([todoledger_bin(), *verb], capture_output=True, text=True, env=env)
        assert proc.returncode != 0, verb
        assert "internal error" not in proc.stderr and proc.stderr.count("\n") == 1, (verb, proc.stderr)
        assert "not valid Unicode" in proc.stderr, (verb, proc.stderr)


@pytest.mark.sqlite_only  # the wire, not the ledger
@pytest.mark.parametrize(
    ("bad", "ident"),
    [
        ([{"jsonrpc": "2.0", "id": 5, "method": "tools/list"}], None),  # a batch
        ({"id": 6, "method": "tools/list"}, 6),  # no "jsonrpc"
        ({"jsonrpc": "2.0", "id": {"a": 1}, "method": "tools/list"}, None),  # an id of no kind
        ({"jsonrpc": "2.0", "id": 1.5, "method": "tools/list"}, None),
        ({"jsonrpc": "2.0", "id": 8}, 8),  # neither a request nor an answer
    ],
)
def test_json_that_is_no_jsonrpc_message_gets_an_error_reply_over_stdio(
    ledger_env: Path | str, bad: Any, ident: int | None
) -> None:
    """Before: the SDK dropped these lines without a word and the client waited for ever
    (the same hang as the lone surrogate of issue 21, through other shapes)."""
    from .test_mcp_stdio import HANDSHAKE, PING, line, mcp_process

    proc = mcp_process(ledger_env)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b"".join(line(m) for m in HANDSHAKE))
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline())["id"] == 1
    proc.stdin.write(json.dumps(bad).encode() + b"\n" + line(PING))
    proc.stdin.flush()
    refused = json.loads(
        proc.stdout.readline()
    )  # before: this read waited for ever (the ping's answer came first)
    assert refused["id"] == ident and refused["error"]["code"] == -32600, refused
    assert json.loads(proc.stdout.readline()) == {"jsonrpc": "2.0", "id": 4, "result": {}}
    proc.stdin.close()
    assert proc.wait(timeout=30) == 0


def test_another_agent_cannot_add_a_check_to_a_leased_item(
    lg: Ledger,  # noqa: F811
    held: dict[str, Any],  # noqa: F811
) -> None:
    """Before: adding a gate was not counted as a change, so bob put a check of his
    own on the item alice holds and changed what her completion must pass. A
    person may still ask for more proof; the holder may add its own."""
    from todoledger import LedgerError

    item = held["id"]
    with pytest.raises(LedgerError, match=f"{item} is leased to alice until"):
        lg.add_check(item, "file:/nonexistent", writer="bob")
    assert lg.checks() == []
    lg.add_check(item, "file:/tmp", writer="alice")
    lg.add_check(item, "file:/", writer="cli:ann")
    assert sorted(c.created_by for c in lg.checks()) == ["alice", "cli:ann"]
