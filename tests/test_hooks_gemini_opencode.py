"""`todoledger hook gemini` and `todoledger hook opencode` as the agents run
them: subprocesses fed hook JSON, a real ledger file."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from tests.conftest import subprocess_env, todoledger_bin
from todoledger import Ledger

GEMINI = [
    {"description": "Map the callers of parse()", "status": "completed"},
    {"description": "Rename parse() to read()", "status": "in_progress"},
    {"description": "Update the docs", "status": "pending"},
]


def hook(env: dict[str, str], agent: str, event: dict[str, Any] | str) -> subprocess.CompletedProcess[str]:
    data = event if isinstance(event, str) else json.dumps(event)
    return subprocess.run(
        [todoledger_bin(), "hook", agent], input=data, capture_output=True, text=True, env=env, timeout=60
    )


def after_tool(todos: list[dict[str, Any]], session: str = "g1", **extra: Any) -> dict[str, Any]:
    return {
        "session_id": session,
        "transcript_path": "/tmp/gemini.json",
        "cwd": os.getcwd(),
        "hook_event_name": "AfterTool",
        "timestamp": "2026-05-01T10:00:00Z",
        "tool_name": "write_todos",
        "tool_input": {"todos": todos},
        "tool_response": {"llmContent": "ok", "returnDisplay": {"todos": todos}},
        **extra,
    }


def test_gemini_write_todos_is_mirrored_and_session_start_answers_json(ledger_env: Path) -> None:
    env = subprocess_env(ledger_env)
    proc = hook(env, "gemini", after_tool(GEMINI))
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    with Ledger() as lg:
        items = lg.items()
    assert [(i["content"], i["status"]) for i in items] == [(t["description"], t["status"]) for t in GEMINI]
    assert {i["created_by"] for i in items} == {"gemini:g1"}

    start = hook(
        env,
        "gemini",
        {"session_id": "g2", "hook_event_name": "SessionStart", "source": "startup", "cwd": os.getcwd()},
    )
    assert start.returncode == 0 and start.stderr == ""
    answer = json.loads(start.stdout)  # Gemini accepts JSON only
    assert answer["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    context = answer["hookSpecificOutput"]["additionalContext"]
    assert context.startswith("todoledger plan 'main'") and "Rename parse() to read()" in context


def test_gemini_ignores_refused_calls_other_tools_and_garbage(ledger_env: Path) -> None:
    env = subprocess_env(ledger_env)
    hook(env, "gemini", after_tool(GEMINI))
    with Ledger() as lg:
        before = list(lg.export())
    two_running = [
        {"description": "a", "status": "in_progress"},
        {"description": "b", "status": "in_progress"},
    ]
    refused = after_tool(
        two_running, tool_response={"llmContent": "", "error": "only one task can be in_progress"}
    )
    other = after_tool(GEMINI) | {"tool_name": "read_file", "tool_input": {"path": "x"}}
    for event in (refused, other, "not json", {"hook_event_name": "AfterTool", "tool_name": "write_todos"}):
        proc = hook(env, "gemini", event)
        assert (proc.returncode, proc.stdout) == (0, ""), proc
    with Ledger() as lg:
        assert list(lg.export()) == before


def test_gemini_next_list_updates_and_drops(ledger_env: Path) -> None:
    env = subprocess_env(ledger_env)
    hook(env, "gemini", after_tool(GEMINI))
    later = [
        {"description": "Map the callers of parse()", "status": "completed"},
        {"description": "Rename parse() to read()", "status": "completed"},
    ]
    hook(env, "gemini", after_tool(later))
    with Ledger() as lg:
        status = {i["content"]: i["status"] for i in lg.items()}
    assert status == {
        "Map the callers of parse()": "completed",
        "Rename parse() to read()": "completed",
        "Update the docs": "dropped",
    }


def test_opencode_todo_updated_is_mirrored_per_session(ledger_env: Path) -> None:
    env = subprocess_env(ledger_env)
    todos = [
        {"content": "Write the migration", "status": "in_progress", "priority": "high", "id": "t1"},
        {"content": "Backfill old rows", "status": "pending", "priority": "medium", "id": "t2"},
    ]
    # The plugin sends {cwd, ...event.properties}.
    proc = hook(env, "opencode", {"cwd": os.getcwd(), "sessionID": "ses_abc", "todos": todos})
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    todos[0]["status"] = "completed"
    hook(env, "opencode", {"cwd": os.getcwd(), "sessionID": "ses_abc", "todos": todos})
    with Ledger() as lg:
        items = lg.items()
        ops = lg.ops()
    assert [(i["content"], i["status"], i["priority"]) for i in items] == [
        ("Write the migration", "completed", "high"),
        ("Backfill old rows", "pending", "medium"),
    ]
    assert {op["writer"] for op in ops} == {"opencode:ses_abc"}
    assert len(items) == 2  # the second list updated the same items


def test_opencode_bad_events_exit_zero_and_change_nothing(ledger_env: Path) -> None:
    env = subprocess_env(ledger_env)
    for event in ("", "[1, 2]", {"sessionID": "s"}, {"sessionID": "s", "todos": "nope"}):
        proc = hook(env, "opencode", event)
        assert (proc.returncode, proc.stdout) == (0, "")
    if not isinstance(ledger_env, Path) or ledger_env.exists():
        with Ledger(ledger_env) as lg:
            assert lg.items() == []
