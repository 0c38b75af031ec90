"""`todoledger hook claude-code` as Claude Code runs it: a subprocess fed hook JSON."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from tests.conftest import beside, hold_write_lock, spool_of, subprocess_env, todoledger_bin
from todoledger import Ledger
from todoledger.hooks import HOOK_BUSY_MS

TODOS = [
    {"content": "Train EAGLE-3 (4 GPUs, 5 epochs)", "status": "completed", "activeForm": "Training EAGLE-3"},
    {
        "content": "Fix weight keys (layers.0 -> midlayer) for SGLang",
        "status": "in_progress",
        "activeForm": "Fixing weight keys",
    },
    {
        "content": "Deploy SGLang with EAGLE3 drafter (16 spec tokens)",
        "status": "pending",
        "activeForm": "Deploying SGLang",
    },
]


def hook(
    env: dict[str, str], event: dict[str, Any] | str, agent: str = "claude-code"
) -> subprocess.CompletedProcess[str]:
    data = event if isinstance(event, str) else json.dumps(event)
    return subprocess.run(
        [todoledger_bin(), "hook", agent], input=data, capture_output=True, text=True, env=env, timeout=60
    )


def post_tool(tool: str, tool_input: dict[str, Any], session: str = "s1", **extra: Any) -> dict[str, Any]:
    return {
        "session_id": session,
        "transcript_path": "/tmp/t.jsonl",
        "cwd": os.getcwd(),
        "hook_event_name": "PostToolUse",
        "tool_name": tool,
        "tool_input": tool_input,
        **extra,
    }


def test_todowrite_is_mirrored_and_session_start_primes(ledger_env: Path) -> None:
    env = subprocess_env(ledger_env)
    proc = hook(
        env, post_tool("TodoWrite", {"todos": TODOS}, tool_response={"oldTodos": [], "newTodos": TODOS})
    )
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    with Ledger() as lg:
        items = lg.show()["items"]
    assert [(i["content"], i["status"], i["active_form"]) for i in items] == [
        (t["content"], t["status"], t["activeForm"]) for t in TODOS
    ]
    assert {i["created_by"] for i in items} == {"claude-code:s1"}
    start = hook(
        env, {"session_id": "s2", "hook_event_name": "SessionStart", "source": "compact", "cwd": os.getcwd()}
    )
    assert start.returncode == 0
    assert start.stdout.startswith(
        "todoledger plan 'main' (revision 1): 1 pending, 1 in_progress, 1 completed."
    )
    assert "Fix weight keys" in start.stdout.split("In progress:")[1]


def test_new_session_continues_the_plan_without_dropping(ledger_env: Path) -> None:
    env = subprocess_env(ledger_env)
    hook(env, post_tool("TodoWrite", {"todos": TODOS}, session="old"))
    newer = [{"content": TODOS[2]["content"], "status": "in_progress", "activeForm": "Deploying"}]
    hook(env, post_tool("TodoWrite", {"todos": newer}, session="new"))
    with Ledger() as lg:
        items = {i["content"]: i for i in lg.show()["items"]}
    assert len(items) == 3
    assert items[TODOS[2]["content"]]["status"] == "in_progress"
    assert items[TODOS[1]["content"]]["status"] == "in_progress"


def test_tasks_tools_with_every_id_spelling(ledger_env: Path) -> None:
    env = subprocess_env(ledger_env)
    hook(
        env,
        post_tool(
            "TaskCreate",
            {"subject": "Extract hidden states", "description": "on /data"},
            tool_response={"task": {"id": "1", "subject": "Extract hidden states"}},
        ),
    )
    hook(
        env,
        post_tool(
            "TaskCreate",
            {"subject": "Train drafter"},
            tool_response={"task": {"id": "2", "subject": "Train drafter"}},
        ),
    )
    hook(env, post_tool("TaskUpdate", {"taskId": "2", "addBlockedBy": ["1"]}))
    hook(env, post_tool("TaskUpdate", {"id": "1", "status": "in_progress"}))
    hook(env, post_tool("TaskUpdate", {"task_id": "1", "status": "completed"}))
    with Ledger() as lg:
        items = {i["content"]: i for i in lg.show()["items"]}
    assert items["Extract hidden states"]["status"] == "completed"
    assert items["Extract hidden states"]["notes"] == "on /data"
    assert items["Train drafter"]["depends_on"] == [items["Extract hidden states"]["id"]]
    assert items["Train drafter"]["ready"] is True


def test_subagent_is_its_own_writer(ledger_env: Path) -> None:
    env = subprocess_env(ledger_env)
    hook(env, post_tool("TodoWrite", {"todos": TODOS[:1]}, agent_id="a7", agent_type="Explore"))
    with Ledger() as lg:
        assert lg.show()["items"][0]["created_by"] == "claude-code:s1:a7"


def test_bad_input_never_breaks_the_agent_and_is_logged(ledger_env: Path, tmp_path: Path) -> None:
    env = subprocess_env(ledger_env)
    hook(env, post_tool("TodoWrite", {"todos": TODOS}))
    with Ledger() as lg:
        before = lg.show()
    cases: list[Any] = [
        "{not json",
        "[1, 2]",
        json.dumps(post_tool("TodoWrite", {"todos": [{"content": "x", "status": "pending"}]})).replace(
            '"status": "pending"', '"status": "pending", "status": "done"'
        ),
        post_tool("TodoWrite", {"todos": "nope"}),
        post_tool("TaskUpdate", {"taskId": "404", "status": "completed"}),
        "x" * (3 * 1024 * 1024),
    ]
    for case in cases:
        proc = hook(env, case)
        assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    with Ledger() as lg:
        assert lg.show() == before
    log = (beside(ledger_env) / "hook.log").read_text()
    assert "JSONDecodeError" in log and "unknown task id '404'" in log and "payload over" in log
    unknown = hook(env, {}, agent="nosuchagent")
    assert unknown.returncode == 0


def test_ledger_found_from_the_event_cwd(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / ".git" / "HEAD").write_text("ref: refs/heads/main\n")  # a repository, not an empty folder
    (project / "src").mkdir()
    env = {k: v for k, v in os.environ.items() if k != "TODOLEDGER_DB"}
    event = post_tool("TodoWrite", {"todos": TODOS})
    event["cwd"] = str(project / "src")
    proc = subprocess.run(
        [todoledger_bin(), "hook", "claude-code"],
        input=json.dumps(event),
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    assert proc.returncode == 0
    with Ledger(project / ".todoledger" / "ledger.db") as lg:
        assert len(lg.show()["items"]) == 3


def test_hook_path_imports_no_cli_web_or_mcp_stack(ledger_env: Path | str) -> None:
    import sys

    # psycopg itself needs dataclasses and typing: on PostgreSQL the hook's own code still adds none.
    lean = "'dataclasses', 'typing'" if isinstance(ledger_env, Path) else ""

    code = (
        "import sys, json\n"
        "from todoledger.cli.entry import main\n"
        "try:\n    main(['hook', 'claude-code'])\nexcept SystemExit:\n    pass\n"
        f"heavy = ('click', 'rich', 'mcp', 'starlette', 'uvicorn', 'pydantic', {lean})\n"
        "print(json.dumps([m for m in heavy if m in sys.modules]))\n"
    )
    event = json.dumps(post_tool("TodoWrite", {"todos": TODOS}))
    proc = subprocess.run(
        [sys.executable, "-c", code],
        input=event,
        capture_output=True,
        text=True,
        env=subprocess_env(ledger_env),
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []
    with Ledger() as lg:
        assert len(lg.show()["items"]) == 3


def test_busy_ledger_does_not_stall_the_agent_and_loses_nothing(ledger_env: Path | str) -> None:
    env = subprocess_env(ledger_env)
    hook(env, post_tool("TodoWrite", {"todos": TODOS[:1]}))
    blocker = hold_write_lock(ledger_env)  # another process holds the write lock
    busy = hook(env, post_tool("TodoWrite", {"todos": TODOS}))
    assert (busy.returncode, busy.stdout, busy.stderr) == (0, "", "")
    # Gemini kills hooks after 5 s: the hook waits for the lock at most HOOK_BUSY_MS
    # (its time under load is measured in bench/bench_limits.py).
    assert HOOK_BUSY_MS <= 2_000
    assert len(list(spool_of(ledger_env).iterdir())) == 1
    assert [p.name for p in Path.cwd().iterdir() if "postgres" in p.name] == []  # no folder named after a URL
    blocker.close()
    # The next hook call replays the kept event first, then its own.
    start_event = {
        "session_id": "s1",
        "hook_event_name": "SessionStart",
        "source": "resume",
        "cwd": os.getcwd(),
    }
    primed = hook(env, start_event)
    assert "Deploy SGLang with EAGLE3 drafter" in primed.stdout
    assert list(spool_of(ledger_env).iterdir()) == []
    with Ledger() as lg:
        assert [i["content"] for i in lg.show()["items"]] == [t["content"] for t in TODOS]


def test_prime_reaches_the_agent_on_any_console_encoding(ledger_env: Path) -> None:
    todos = [{"content": "Vérifier le débit 日本語", "status": "in_progress", "activeForm": "Vérifiant"}]
    env = subprocess_env(ledger_env, PYTHONIOENCODING="ascii")
    hook(env, post_tool("TodoWrite", {"todos": todos}))
    start = {"session_id": "s1", "hook_event_name": "SessionStart", "source": "startup", "cwd": os.getcwd()}
    claude = subprocess.run(
        [todoledger_bin(), "hook", "claude-code"],
        input=json.dumps(start).encode(),
        capture_output=True,
        env=env,
        timeout=60,
    )
    assert "Vérifier le débit 日本語" in claude.stdout.decode("utf-8")
    gemini = subprocess.run(
        [todoledger_bin(), "hook", "gemini"],
        input=json.dumps(start).encode(),
        capture_output=True,
        env=env,
        timeout=60,
    )
    context = json.loads(gemini.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "Vérifier le débit 日本語" in context
