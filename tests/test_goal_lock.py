"""Goal-lock (hooks/goal_lock.py): a harness's own "done" waits for proof.
Real hook subprocesses on a real ledger, payloads in the agents' own shapes:
Claude Code's TaskCompleted (code.claude.com/docs/en/hooks) and a `/goal`
command in its transcript, Codex's Stop (codex-rs/hooks/schema/generated/
stop.command.input.schema.json) after update_goal in its rollout, and an
ExitPlanMode approval changed afterwards."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import subprocess_env, todoledger_bin
from tests.test_uninstall import dirs, snapshot  # noqa: F401  (the fixture)
from todoledger import Ledger
from todoledger.defaults import default_plan
from todoledger.hooks.goal_lock import MAX_BLOCKS, changed_since_plan_mode
from todoledger.install import doctor, run
from todoledger.install.runner import uninstall


def hook(
    env: dict[str, str], event: dict[str, Any], agent: str = "claude-code", gate: bool = True
) -> tuple[int, str, str]:
    argv = [todoledger_bin(), "hook", agent] + (["--gate-stop"] if gate else [])
    proc = subprocess.run(argv, input=json.dumps(event), capture_output=True, text=True, env=env, timeout=60)
    return proc.returncode, proc.stdout, proc.stderr


def task_create(session: str, task_id: str, subject: str) -> dict[str, Any]:
    """Claude Code's PostToolUse for TaskCreate (tool_response per the Agent SDK's TaskCreate output)."""
    return {
        "session_id": session,
        "transcript_path": f"/tmp/{session}.jsonl",
        "cwd": os.getcwd(),
        "permission_mode": "default",
        "hook_event_name": "PostToolUse",
        "tool_name": "TaskCreate",
        "tool_input": {"subject": subject, "description": f"{subject}, then check it"},
        "tool_response": {"task": {"id": task_id, "subject": subject}},
        "tool_use_id": f"toolu_{task_id}",
    }


def task_completed(session: str, task_id: str, subject: str) -> dict[str, Any]:
    """Claude Code's TaskCompleted input: the common fields and task_id, task_subject, task_description."""
    return {
        "session_id": session,
        "transcript_path": f"/tmp/{session}.jsonl",
        "cwd": os.getcwd(),
        "permission_mode": "default",
        "hook_event_name": "TaskCompleted",
        "task_id": task_id,
        "task_subject": subject,
        "task_description": f"{subject}, then check it",
    }


def gate_on(subject: str, path: Path) -> str:
    with Ledger() as lg:
        item = next(r["id"] for r in lg.show()["items"] if r["content"] == subject)
        lg.add_check(item, f"file:{path}", writer="cli:ann")
        lg.verify([item], writer="cli:ann")
    return str(item)


def test_task_completed_is_refused_while_its_gate_fails_and_never_loops(
    ledger_env: Path, tmp_path: Path
) -> None:
    env = subprocess_env(ledger_env)
    assert hook(env, task_create("s1", "1", "Write the report"))[0] == 0
    report = tmp_path / "report.txt"
    item = gate_on("Write the report", report)
    event = task_completed("s1", "1", "Write the report")
    code, out, err = hook(env, event)
    # Exit 2 with the reason on stderr: Claude Code keeps the task open and tells the model.
    assert (code, out) == (2, "")
    assert f"- {item} Write the report (failed)" in err
    assert f"gate file:{report}: fails" in err
    assert f"to prove it: make its gate pass, then run `todoledger verify {item}`" in err
    # Capped as the Stop gate is: MAX_BLOCKS refusals in a row, then it goes through.
    for _ in range(MAX_BLOCKS - 1):
        assert hook(env, event)[0] == 2
    assert hook(env, event) == (0, "", "")
    # Once the gate holds the completion goes through, and the count starts over.
    report.write_text("done\n")
    with Ledger() as lg:
        lg.verify([item], writer="cli:ann")
    assert hook(env, event) == (0, "", "")
    report.unlink()
    with Ledger() as lg:
        lg.verify([item], writer="cli:ann")
    assert hook(env, event)[0] == 2


def test_task_completed_passes_without_the_opt_in_or_without_gates(ledger_env: Path, tmp_path: Path) -> None:
    env = subprocess_env(ledger_env)
    hook(env, task_create("s1", "1", "Write the report"))
    hook(env, task_create("s1", "2", "Tidy the docs"))
    gate_on("Write the report", tmp_path / "missing.txt")
    assert hook(env, task_completed("s1", "1", "Write the report"), gate=False) == (0, "", "")
    assert hook(env, task_completed("s1", "2", "Tidy the docs")) == (0, "", "")  # no gate: nothing to prove
    assert hook(env, task_completed("s1", "9", "Not in the ledger")) == (0, "", "")


def goal_transcript(path: Path, *args: str) -> None:
    """A Claude Code transcript holding `/goal ARGS` commands as the user's slash commands."""
    lines = [
        json.dumps(
            {
                "type": "user",
                "sessionId": "s1",
                "message": {
                    "role": "user",
                    "content": f"<command-message>goal</command-message>\n<command-name>/goal</command-name>\n"
                    f"<command-args>{a}</command-args>",
                },
            }
        )
        for a in args
    ]
    path.write_text("\n".join(lines) + "\n")


def test_the_stop_gate_holds_an_active_claude_goal_while_a_gated_item_is_unproven(
    ledger_env: Path, tmp_path: Path
) -> None:
    env = subprocess_env(ledger_env)
    hook(env, task_create("s1", "1", "Deploy the service"))
    health = tmp_path / "healthy"
    item = gate_on("Deploy the service", health)
    transcript = tmp_path / "s1.jsonl"
    stop = {
        "session_id": "s1",
        "transcript_path": str(transcript),
        "cwd": os.getcwd(),
        "permission_mode": "default",
        "hook_event_name": "Stop",
        "stop_hook_active": False,
    }
    goal_transcript(transcript)  # no goal: the session completed nothing, nothing to hold
    assert hook(env, stop) == (0, "", "")
    goal_transcript(transcript, "the service is deployed and healthy")
    code, out, _ = hook(env, stop)
    answer = json.loads(out)
    assert code == 0 and answer["decision"] == "block"
    assert answer["reason"].startswith(
        "todoledger: the session's goal is not done while these items are not proven:"
    )
    assert f"- {item} Deploy the service (failed)" in answer["reason"]
    goal_transcript(transcript, "the service is deployed and healthy", "", "clear")  # `/goal clear`
    assert hook(env, stop) == (0, "", "")


def codex_rollout(path: Path, session: str, complete: bool) -> None:
    def line(n: int, name: str, args: dict[str, Any]) -> str:
        call = {"type": "function_call", "name": name, "arguments": json.dumps(args), "call_id": f"call_{n}"}
        done = {"type": "function_call_output", "call_id": f"call_{n}", "output": '{"goal": {}}'}
        return "\n".join(
            json.dumps({"timestamp": f"2026-11-01T10:0{n}:00Z", "type": "response_item", "payload": p})
            for p in (call, done)
        )

    meta = {
        "timestamp": "2026-11-01T10:00:00Z",
        "type": "session_meta",
        "payload": {"id": session, "cwd": "/src"},
    }
    lines = [json.dumps(meta), line(1, "create_goal", {"objective": "Ship the release"})]
    if complete:
        lines.append(line(2, "update_goal", {"status": "complete"}))
    path.write_text("\n".join(lines) + "\n")


def test_a_codex_goal_declared_complete_is_held_while_a_gated_item_is_unproven(
    ledger_env: Path, tmp_path: Path
) -> None:
    env = subprocess_env(ledger_env)
    with Ledger() as lg:
        item = lg.add("Tag the release", plan=default_plan(), writer="codex:0199goal")["id"]
        lg.add_check(item, f"file:{tmp_path / 'tag'}", plan=default_plan(), writer="cli:ann")
    rollout = tmp_path / "rollout.jsonl"
    stop = {
        "cwd": os.getcwd(),
        "hook_event_name": "Stop",
        "last_assistant_message": "Goal complete.",
        "model": "gpt-5",
        "permission_mode": "default",
        "session_id": "0199goal",
        "stop_hook_active": False,
        "transcript_path": str(rollout),
        "turn_id": "t1",
    }
    codex_rollout(rollout, "0199goal", complete=False)
    assert hook(env, stop, agent="codex") == (0, "", "")  # the goal is open: nothing declared done
    codex_rollout(rollout, "0199goal", complete=True)
    code, out, _ = hook(env, stop, agent="codex")
    answer = json.loads(out)
    assert code == 0 and answer["decision"] == "block"
    assert f"- {item} Tag the release (unverified)" in answer["reason"]
    assert f"to prove it: its gate never ran: run `todoledger verify {item}`" in answer["reason"]
    (tmp_path / "tag").write_text("v1\n")
    with Ledger() as lg:
        lg.verify([item], plan=default_plan(), writer="cli:ann")
    assert hook(env, stop, agent="codex") == (0, "", "")


def test_a_plan_mode_item_changed_since_needs_a_person_again(ledger_env: Path) -> None:
    env = subprocess_env(ledger_env)
    plan_text = "# Release\n\n- [ ] Bump the version\n- [ ] Write the changelog\n"
    approved = {
        "session_id": "s1",
        "transcript_path": "/tmp/s1.jsonl",
        "cwd": os.getcwd(),
        "permission_mode": "plan",
        "hook_event_name": "PostToolUse",
        "tool_name": "ExitPlanMode",
        "tool_input": {"plan": plan_text},
        "tool_response": {"plan": plan_text, "isAgent": False},
        "tool_use_id": "toolu_plan",
    }
    assert hook(env, approved, gate=False)[0] == 0
    with Ledger() as lg:
        rows = {r["content"]: r["id"] for r in lg.show()["items"]}
        bump, log, root = rows["Bump the version"], rows["Write the changelog"], rows["Release"]
        assert changed_since_plan_mode(lg.history()) == {}
        lg.update(bump, writer="claude-code:s1", content="Bump the version to 2.0")
        lg.add("Publish to PyPI", writer="claude-code:s1", parent=root)
        lg.add_check(log, "file:CHANGELOG.md", writer="mcp:claude-code:s1")
        assert changed_since_plan_mode(lg.history()) == {
            bump: ["content"],
            root: ["children"],
            log: ["gates"],
        }
        lg.approve(bump, writer="cli:ann")  # a person approves it as it is now
        assert changed_since_plan_mode(lg.history()) == {root: ["children"], log: ["gates"]}
    code, _, err = hook(env, task_completed("s1", "7", "Write the changelog"))
    assert code == 2
    assert f"- {log} Write the changelog (plan-mode approval void)" in err
    assert "approved in plan mode, changed since (gates): a person must approve it again" in err
    with Ledger() as lg:
        lg.approve_plan(writer="cli:ann")
        assert changed_since_plan_mode(lg.history()) == {}


def test_install_wires_task_completed_and_uninstall_takes_back_exactly_it(
    dirs: tuple[Path, Path],  # noqa: F811
) -> None:
    project, home = dirs
    before = snapshot(project, home)
    run("claude-code", project=project, home=home, gate_stop=True)
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    [group] = settings["hooks"]["TaskCompleted"]
    assert "matcher" not in group  # TaskCompleted takes no matcher
    assert group["hooks"][0]["command"] == "todoledger hook claude-code --gate-stop"
    run("codex", project=project, home=home, gate_stop=True)
    for agent in ("claude-code", "codex"):
        assert uninstall(agent, project=project, home=home).changed
    assert snapshot(project, home) == before


def test_doctor_says_which_routes_are_gated(tmp_path: Path) -> None:
    project, home = tmp_path / "p", tmp_path / "h"
    project.mkdir()
    home.mkdir()
    run("claude-code", project=project, home=home)
    run("codex", project=project, home=home, gate_stop=True)
    env = {"PATH": "/nonexistent", "HOME": str(home)}
    report = {a.name: a.goal_lock for a in doctor.run(project, home, env, check_server=False).agents}
    assert report["claude-code"] == [
        "TaskCompleted: not gated (todoledger install claude-code --gate-stop)",
        "/goal: not gated (todoledger install claude-code --gate-stop)",
        "plan mode: a changed item asks a person again (not gated: todoledger install claude-code --gate-stop)",
    ]
    assert report["codex"] == [
        "update_goal complete: not gated (Codex runs no PreToolUse hook for its goal tools)",
        "a completed goal: held by the Stop gate",
    ]
    run("claude-code", project=project, home=home, gate_stop=True)
    report = {a.name: a.goal_lock for a in doctor.run(project, home, env, check_server=False).agents}
    assert report["claude-code"] == [
        "TaskCompleted: gated",
        "/goal: held by the Stop gate",
        "plan mode: a changed item asks a person again",
    ]


@pytest.mark.parametrize("agent", ["gemini", "opencode"])
def test_doctor_says_an_agent_without_such_a_hook_is_not_gated(agent: str, tmp_path: Path) -> None:
    project, home = tmp_path / "p", tmp_path / "h"
    project.mkdir()
    home.mkdir()
    run(agent, project=project, home=home)
    env = {"PATH": "/nonexistent", "HOME": str(home)}
    (found,) = [a for a in doctor.run(project, home, env, check_server=False).agents if a.name == agent]
    assert all("not gated" in line for line in found.goal_lock), found.goal_lock


def test_a_refused_task_update_is_not_mirrored(ledger_env: Path) -> None:
    """The PostToolUse of a TaskUpdate that a TaskCompleted hook refused, as Claude Code
    2.1.332 sends it (seen in tests/e2e): success false, nothing updated."""
    env = subprocess_env(ledger_env)
    hook(env, task_create("s1", "1", "Verify disk"), gate=False)
    refused = {
        **task_create("s1", "1", "Verify disk"),
        "tool_name": "TaskUpdate",
        "tool_input": {"taskId": "1", "status": "completed"},
        "tool_response": {
            "success": False,
            "taskId": "1",
            "updatedFields": [],
            "error": "TaskCompleted hook feedback:\n[todoledger hook claude-code --gate-stop]: ...",
        },
    }
    assert hook(env, refused, gate=False) == (0, "", "")
    with Ledger() as lg:
        assert [i["status"] for i in lg.show()["items"]] == ["pending"]
