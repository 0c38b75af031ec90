"""The Stop gate (`todoledger hook AGENT --gate-stop`): an agent cannot end its
turn on a "done" whose gate fails or never ran. Real hook subprocesses, a real
ledger file, real `file:` gates."""

from __future__ import annotations

import json
import os
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import subprocess_env, todoledger_bin
from todoledger import Ledger
from todoledger.hooks.stop_gate import MAX_BLOCKS
from todoledger.install import run


def hook(env: dict[str, str], event: dict[str, Any], agent: str = "claude-code", gate: bool = True) -> str:
    argv = [todoledger_bin(), "hook", agent] + (["--gate-stop"] if gate else [])
    proc = subprocess.run(argv, input=json.dumps(event), capture_output=True, text=True, env=env, timeout=60)
    assert (proc.returncode, proc.stderr) == (0, "")
    return proc.stdout


def todowrite(session: str, todos: list[dict[str, str]], agent_id: str | None = None) -> dict[str, Any]:
    event = {
        "session_id": session,
        "cwd": os.getcwd(),
        "hook_event_name": "PostToolUse",
        "tool_name": "TodoWrite",
        "tool_input": {"todos": todos},
    }
    return {**event, "agent_id": agent_id} if agent_id else event


def stop(session: str, active: bool = False, name: str = "Stop") -> dict[str, Any]:
    return {"session_id": session, "cwd": os.getcwd(), "hook_event_name": name, "stop_hook_active": active}


def todo(content: str, status: str) -> dict[str, str]:
    return {"content": content, "status": status, "activeForm": content}


@pytest.fixture
def gated(ledger_env: Path, tmp_path: Path) -> tuple[dict[str, str], str, Path]:
    """Session s1 lists a report gated on its file; the gate has failed once."""
    env = subprocess_env(ledger_env)
    assert hook(env, todowrite("s1", [todo("Write the report", "in_progress")])) == ""
    report = tmp_path / "report.txt"
    with Ledger() as lg:
        item = lg.show()["items"][0]["id"]
        lg.add_check(item, f"file:{report}")
        assert lg.verify([item])["receipts"][0]["result"] == "fails"
    return env, item, report


def test_blocks_once_with_the_items_and_their_failed_output(gated: tuple[dict[str, str], str, Path]) -> None:
    env, item, report = gated
    # A subagent of the session marks it completed: its writer is claude-code:s1:<agent>.
    assert hook(env, todowrite("s1", [todo("Write the report", "completed")], agent_id="a7")) == ""
    answer = json.loads(hook(env, stop("s1")))
    assert answer["decision"] == "block"
    assert item in answer["reason"] and "Write the report" in answer["reason"]
    assert f"{report}: no such file" in answer["reason"]
    assert "(failed)" in answer["reason"]
    # Claude Code retries with stop_hook_active: it may stop now, so it never loops.
    assert hook(env, stop("s1", active=True)) == ""


def test_a_gate_that_never_ran_blocks_and_a_passing_one_lets_it_stop(
    ledger_env: Path, tmp_path: Path
) -> None:
    env = subprocess_env(ledger_env)
    hook(env, todowrite("s2", [todo("Build the wheel", "pending")]))
    wheel = tmp_path / "dist.whl"
    with Ledger() as lg:
        item = lg.show()["items"][0]["id"]
        lg.add_check(item, f"file:{wheel}")
    hook(env, todowrite("s2", [todo("Build the wheel", "completed")]))
    answer = json.loads(hook(env, stop("s2")))
    assert "never run" in answer["reason"] and "(unverified)" in answer["reason"]
    wheel.write_text("wheel")
    with Ledger() as lg:
        assert lg.verify([item])["receipts"][0]["result"] == "holds"
    assert hook(env, stop("s2")) == ""


def test_never_blocks_a_session_that_completed_nothing_gated(gated: tuple[dict[str, str], str, Path]) -> None:
    env, _, _ = gated
    # Another session completes an ungated item: nothing to hold it back.
    hook(env, todowrite("s9", [todo("Read the logs", "completed")]))
    assert hook(env, stop("s9")) == ""
    # The gated item is not completed yet: s1 may stop too.
    assert hook(env, stop("s1")) == ""


def test_without_the_opt_in_flag_the_stop_is_never_blocked(gated: tuple[dict[str, str], str, Path]) -> None:
    env, _, _ = gated
    hook(env, todowrite("s1", [todo("Write the report", "completed")]))
    assert hook(env, stop("s1"), gate=False) == ""
    assert json.loads(hook(env, stop("s1")))["decision"] == "block"


def test_stops_blocking_after_three_in_a_row_and_counts_again_once_clean(
    gated: tuple[dict[str, str], str, Path],
) -> None:
    env, item, report = gated
    hook(env, todowrite("s1", [todo("Write the report", "completed")]))
    answers = [hook(env, stop("s1")) for _ in range(MAX_BLOCKS + 2)]
    assert [bool(a) for a in answers] == [True] * MAX_BLOCKS + [False, False]
    # The count is kept in the ledger, per session (no file beside it).
    with Ledger() as lg:
        assert lg.cursors(["stop-gate:claude-code:s1"])["stop-gate:claude-code:s1"][0] == MAX_BLOCKS
    report.write_text("done")
    with Ledger() as lg:
        lg.verify([item])
    assert hook(env, stop("s1")) == ""  # clean: the count starts over
    report.unlink()
    with Ledger() as lg:
        lg.verify([item])
    assert json.loads(hook(env, stop("s1")))["decision"] == "block"


def test_gemini_after_agent_denies_and_codex_stop_blocks(ledger_env: Path, tmp_path: Path) -> None:
    env = subprocess_env(ledger_env)
    missing = tmp_path / "nothing-here"
    with Ledger() as lg:
        gem_todos = [{"description": "Gemini's task", "status": "pending"}]
        lg.write({"todos": gem_todos}, writer="gemini:g1", dialect="gemini")
        lg.write(
            {"plan": [{"step": "Codex's task", "status": "pending"}]}, writer="codex:c1", dialect="codex"
        )
        for entry in lg.show()["items"]:
            lg.add_check(entry["id"], f"file:{missing}")
    gem_event = {
        "session_id": "g1",
        "cwd": os.getcwd(),
        "hook_event_name": "AfterTool",
        "tool_name": "write_todos",
        "tool_input": {"todos": [{"description": "Gemini's task", "status": "completed"}]},
    }
    assert hook(env, gem_event, agent="gemini") == ""
    gem = json.loads(hook(env, stop("g1", name="AfterAgent"), agent="gemini"))
    assert gem["decision"] == "deny" and "Gemini's task" in gem["reason"]
    assert "Codex's task" not in gem["reason"]
    assert hook(env, stop("g1", active=True, name="AfterAgent"), agent="gemini") == ""
    with Ledger() as lg:
        lg.write(
            {"plan": [{"step": "Codex's task", "status": "completed"}]}, writer="codex:c1", dialect="codex"
        )
    codex_stop = {**stop("c1"), "transcript_path": None, "turn_id": "t1"}
    answer = json.loads(hook(env, codex_stop, agent="codex"))
    assert answer["decision"] == "block" and "Codex's task" in answer["reason"]


@pytest.mark.sqlite_only
def test_a_broken_ledger_never_breaks_the_agent(ledger_env: Path) -> None:
    env = subprocess_env(ledger_env)
    ledger_env.parent.mkdir(parents=True, exist_ok=True)
    ledger_env.write_bytes(b"this is not a database")
    assert hook(env, stop("s1")) == ""


def test_install_gate_stop_adds_the_stop_hooks(tmp_path: Path) -> None:
    project, home = tmp_path / "p", tmp_path / "h"
    project.mkdir()
    home.mkdir()
    run("claude-code", project=project, home=home, gate_stop=True)
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    [group] = settings["hooks"]["Stop"]
    assert group["hooks"][0]["command"] == "todoledger hook claude-code --gate-stop"
    run("codex", project=project, home=home, gate_stop=True)
    codex_hooks = json.loads((project / ".codex" / "hooks.json").read_text())
    assert codex_hooks["hooks"]["Stop"][0]["hooks"][0]["command"] == "todoledger hook codex --gate-stop"
    assert "todoledger" in tomllib.loads((project / ".codex" / "config.toml").read_text())["mcp_servers"]
    run("gemini", project=project, home=home, gate_stop=True)
    gemini = json.loads((project / ".gemini" / "settings.json").read_text())
    assert gemini["hooks"]["AfterAgent"][0]["hooks"][0]["command"] == "todoledger hook gemini --gate-stop"
    # opencode has no hook that can block a stop: the rest installs, and a note says so (issue 31).
    done = run("opencode", project=project, home=home, gate_stop=True)
    assert any("--gate-stop not installed: opencode has no hook" in n for n in done.notes)
    # Without the flag, Claude Code gets no Stop hook at all.
    plain = tmp_path / "plain"
    plain.mkdir()
    run("claude-code", project=plain, home=home)
    assert "Stop" not in json.loads((plain / ".claude" / "settings.json").read_text())["hooks"]


def test_a_completion_through_mcp_plan_update_in_the_transcript_blocks(
    ledger_env: Path, tmp_path: Path
) -> None:
    """With no native list the agent completes items through todoledger's MCP tools:
    their writer is the MCP server's, so the session's transcript says what it completed."""
    env = subprocess_env(ledger_env)
    with Ledger() as lg:
        item = lg.add("Verify /data has space for 25K samples", writer="mcp:claude-code:ab12cd34")["id"]
        lg.add_check(item, "cmd:false")
        lg.update(
            item, status="completed", writer="mcp:claude-code:ab12cd34", force=True, force_reason="seed"
        )
    call = {
        "type": "tool_use",
        "id": "toolu_9",
        "name": "mcp__todoledger__plan_update",
        "input": {"id": item, "status": "completed"},
    }
    reply = {"plan": "main", "item": {"id": item, "content": "Verify /data", "status": "completed"}}
    result = {
        "type": "tool_result",
        "tool_use_id": "toolu_9",
        "content": [{"type": "text", "text": json.dumps(reply)}],
    }
    transcript = tmp_path / "s9.jsonl"
    transcript.write_text(
        json.dumps({"type": "assistant", "message": {"content": [call]}})
        + "\n"
        + json.dumps({"type": "user", "message": {"content": [result]}})
        + "\n"
    )
    event = {**stop("s9"), "transcript_path": str(transcript)}
    answer = json.loads(hook(env, event))
    assert answer["decision"] == "block" and item in answer["reason"] and "cmd:false" in answer["reason"]
    # Another session, whose transcript completed nothing, is let stop.
    other = tmp_path / "s10.jsonl"
    other.write_text(json.dumps({"type": "assistant", "message": {"content": [call]}}) + "\n")
    assert hook(env, {**stop("s10"), "transcript_path": str(other)}) == ""


def test_a_completion_from_the_sessions_own_shell_blocks(ledger_env: Path, tmp_path: Path) -> None:
    """The CLI route: `todoledger done` in the agent's shell is written as
    `agent-shell:<agent>:<session>` (Claude Code and Codex name the session there);
    a person then gates the item, and the session's stop is blocked. Another
    session's shell completion is not this session's."""
    env = subprocess_env(ledger_env)
    missing = tmp_path / "nothing-here"
    with Ledger() as lg:
        mine = lg.add("Done in my shell")["id"]
        theirs = lg.add("Done in another session's shell")["id"]
    for item, session in ((mine, "s1"), (theirs, "s2")):
        shell = {**env, "CLAUDECODE": "1", "CLAUDE_CODE_SESSION_ID": session}
        done = subprocess.run(
            [todoledger_bin(), "done", item, "--evidence", "ran it"],
            capture_output=True,
            text=True,
            env=shell,
        )
        assert done.returncode == 0, done.stderr
    with Ledger() as lg:
        assert lg.show()["items"][0]["updated_by"] == "agent-shell:claude-code:s1"
        for item in (mine, theirs):
            lg.add_check(item, f"file:{missing}")
    answer = json.loads(hook(env, stop("s1")))
    assert answer["decision"] == "block" and "Done in my shell" in answer["reason"]
    assert "another session" not in answer["reason"]


def test_gemini_shell_done_is_read_from_the_sessions_chat_file(ledger_env: Path, tmp_path: Path) -> None:
    """Gemini's shell names no session (GEMINI_CLI=1 only): the session's own chat
    file says which `todoledger done ID` it ran."""
    env = subprocess_env(ledger_env)
    with Ledger() as lg:
        item = lg.add("Verify disk")["id"]
        other = lg.add("Someone else's")["id"]
    for done in (item, other):
        proc = subprocess.run(
            [todoledger_bin(), "done", done, "--evidence", "x"], capture_output=True, text=True, env=env
        )
        assert proc.returncode == 0, proc.stderr
    with Ledger() as lg:
        for done in (item, other):
            lg.add_check(done, f"file:{tmp_path / 'missing'}")
    call = {
        "id": "run_shell_command_1",
        "name": "run_shell_command",
        "status": "success",
        "args": {"command": f'/venv/bin/todoledger done {item} --evidence "checked by hand"'},
    }
    chat = tmp_path / "chat.jsonl"
    chat.write_text(json.dumps({"id": "m1", "type": "gemini", "content": "", "toolCalls": [call]}) + "\n")
    event = {**stop("g1", name="AfterAgent"), "transcript_path": str(chat)}
    answer = json.loads(hook(env, event, agent="gemini"))
    assert answer["decision"] == "deny" and "Verify disk" in answer["reason"]
    assert "Someone else's" not in answer["reason"]
