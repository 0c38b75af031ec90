"""What the real Claude Code does with an MCP Task (SEP-2663), against a small test
server (tests/e2e/tasks_probe_server.py), before todoledger's own: the facts
tests/e2e/TASKS.md records.

Interactive `claude` under a pty (tests/e2e/interactive.py):
- it declares `io.modelcontextprotocol/tasks` on the call, gets a task, moves the
  call to the background, and the model's next turn runs while the task works;
- it polls `tasks/get` with the task's id at the server's `pollIntervalMs`, and the
  result reaches the model in a later request, as a task notification;
- when the stdio server is killed mid-task, it fails five polls, then waits for the
  server to come back; it does not start one by itself. A person's `/mcp`
  Reconnect starts a new server process, and Claude Code polls the same task id
  there: the result is delivered, and the call is not made again.

A person who stops the task (↓, Enter, `x`) makes Claude Code send `tasks/cancel`
and stop polling; the model is not told. `claude -p` declares no extension and
gets the synchronous answer.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from typing import Any

import pytest

from tests.e2e import interactive
from tests.e2e.agents import CLAUDE, CLAUDE_MODEL, Scratch, ensure_installed, run
from tests.e2e.fakemodel import FakeModel, Step
from tests.e2e.terminal import Terminal

pytestmark = [pytest.mark.agents, pytest.mark.slow, pytest.mark.xdist_group("e2e-agents")]

SERVER = Path(__file__).with_name("tasks_probe_server.py")
TASKS = "io.modelcontextprotocol/tasks"
STEPS = [
    Step("ToolSearch", {"query": "select:mcp__probe__slow_job,mcp__probe__note"}),
    Step(("probe", "slow_job"), {"label": "alpha"}),
    Step(("probe", "note"), {"text": "meanwhile"}),
]
RESULT = "PROBE-RESULT-alpha"


@dataclass
class Probe:
    scratch: Scratch
    fake: FakeModel
    folder: Path  # the server's files: trace.jsonl, task-*.json, release-*
    debug_log: Path

    def trace(self) -> list[dict[str, Any]]:
        path = self.folder / "trace.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]

    def pids(self) -> list[int]:
        return [e["pid"] for e in self.trace() if e["dir"] == "start"]

    def requests(self, method: str, pid: int | None = None) -> list[dict[str, Any]]:
        return [
            e
            for e in self.trace()
            if e["dir"] == "in" and e["msg"].get("method") == method and pid in (None, e["pid"])
        ]

    def answers(self) -> dict[Any, dict[str, Any]]:
        """(pid, request id) -> the answer line."""
        return {(e["pid"], e["msg"]["id"]): e for e in self.trace() if e["dir"] == "out"}

    def statuses(self, pid: int | None = None) -> list[str]:
        """The status of each `tasks/get` answer, in order."""
        answers = self.answers()
        return [
            answers[(e["pid"], e["msg"]["id"])]["msg"]["result"]["status"]
            for e in self.requests("tasks/get", pid)
            if (e["pid"], e["msg"]["id"]) in answers
        ]

    def model_requests(self) -> list[Any]:
        return [r for r in self.fake.requests if r.api == "anthropic"]

    def release(self, label: str = "alpha") -> None:
        (self.folder / f"release-{label}").write_text("done\n", encoding="utf-8")


@pytest.fixture
def probe(tmp_path: Path) -> Any:
    if (reason := ensure_installed(CLAUDE)) is not None:
        pytest.skip(f"claude: {reason}")
    scratch = Scratch(tmp_path, tmp_path / "home", tmp_path / "project")
    for folder in (scratch.home, scratch.project, tmp_path / "tmp"):
        folder.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(scratch.project)], check=True)
    folder = tmp_path / "probe"
    folder.mkdir()
    server = {
        "type": "stdio",
        "command": sys.executable,
        "args": [str(SERVER)],
        "env": {"TASKS_PROBE_DIR": str(folder)},
    }
    interactive.finish_onboarding(scratch, mcpServers={"probe": server})
    # A person's "Yes, and don't ask again" for the server's tools.
    scratch.write_json(".claude/settings.local.json", {"permissions": {"allow": ["mcp__probe"]}})
    fake = FakeModel(steps=list(STEPS), final="Waiting for the job.")
    scratch.url = fake.start()
    yield Probe(scratch, fake, folder, tmp_path / "claude-debug.log")
    fake.stop()
    (tmp_path / "requests.json").write_text(fake.dump(), encoding="utf-8")


def backgrounded(probe: Probe, term: Terminal) -> None:
    """The prompt, then: the call became a task, the model's next turn ran (the note)
    and the turn ended, while the job still works (it is released only later)."""
    interactive.send(term, "Run the slow job alpha, then note meanwhile.")
    term.wait_for(interactive.TASK_RUNNING, timeout=90)
    interactive.wait_until(
        lambda: interactive.model_saw(probe.fake, "noted: meanwhile"), "the next turn", 30, term
    )
    assert not (probe.folder / "release-alpha").exists()
    call = probe.requests("tools/call")
    assert [c["msg"]["params"]["name"] for c in call] == ["slow_job", "note"], call
    caps = call[0]["msg"]["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]
    assert TASKS in caps.get("extensions", {}), caps  # the call declared the extension
    answer = probe.answers()[(call[0]["pid"], call[0]["msg"]["id"])]["msg"]["result"]
    assert answer["resultType"] == "task" and answer["status"] == "working"
    # The model got the placeholder, not the result, and called `note` meanwhile.
    placeholder = interactive.model_saw(probe.fake, f"started server-side task {answer['taskId']}")
    assert placeholder and not interactive.model_saw(probe.fake, RESULT)
    assert call[1]["t"] > call[0]["t"]


def task_id(probe: Probe) -> str:
    call = probe.requests("tools/call")[0]
    answer = probe.answers()[(call["pid"], call["msg"]["id"])]["msg"]["result"]
    return str(answer["taskId"])


def delivered(probe: Probe, term: Terminal) -> None:
    """The result reaches the model as a task notification, in a later request."""
    interactive.wait_until(lambda: interactive.model_saw(probe.fake, RESULT), "the task's result", 60, term)
    seen = interactive.model_saw(probe.fake, RESULT)[0]
    body = probe.fake.requests[seen].text()
    assert "<task-notification>" in body and "<status>completed</status>" in body
    assert seen > interactive.model_saw(probe.fake, "noted: meanwhile")[0]
    term.wait_for(f"MCP task {task_id(probe)} (probe/slow_job) completed", timeout=30)


def test_claude_backgrounds_a_task_polls_it_and_delivers_its_result(probe: Probe) -> None:
    with interactive.start(probe.scratch, probe.debug_log) as term:
        backgrounded(probe, term)
        ident = task_id(probe)
        interactive.wait_until(lambda: len(probe.statuses()) >= 4, "four polls", 30, term)
        polls = probe.requests("tasks/get")
        assert {p["msg"]["params"]["taskId"] for p in polls} == {ident}
        gaps = [b["t"] - a["t"] for a, b in itertools.pairwise(polls)]
        assert median(gaps) >= 0.4, gaps  # the server's pollIntervalMs (500): no faster
        assert set(probe.statuses()) == {"working"}
        probe.release()
        delivered(probe, term)
        assert probe.statuses()[-1] == "completed"
        assert len(probe.pids()) == 1


def test_claude_waits_for_a_killed_server_and_polls_the_task_on_the_new_one(probe: Probe) -> None:
    with interactive.start(probe.scratch, probe.debug_log) as term:
        backgrounded(probe, term)
        ident = task_id(probe)
        interactive.wait_until(lambda: probe.statuses(), "a first poll", 30, term)
        first = probe.pids()[0]
        os.kill(first, signal.SIGKILL)
        # Five failed polls ("Not connected"), then it waits for the server to come back.
        interactive.wait_until(
            lambda: interactive.debug_lines(probe.debug_log, f"task {ident} lost its connection"),
            "the lost connection in Claude Code's debug log",
            30,
            term,
        )
        assert len(interactive.debug_lines(probe.debug_log, f"task {ident}: poll failure")) == 5
        assert probe.pids() == [first]  # it starts no server by itself
        term.wait_for(interactive.TASK_RUNNING)  # the task is still listed as running
        interactive.reconnect(term, "probe")
        second = interactive.wait_until(lambda: probe.pids()[1:], "a new server process", 30, term)[0]
        interactive.wait_until(lambda: probe.statuses(second), "a poll on the new process", 30, term)
        new = probe.trace()
        assert [e["msg"].get("method") for e in new if e["pid"] == second and e["dir"] == "in"][:2] == [
            "server/discover",
            "tools/list",
        ]
        assert {p["msg"]["params"]["taskId"] for p in probe.requests("tasks/get", second)} == {ident}
        probe.release()
        delivered(probe, term)
        assert probe.statuses(second)[-1] == "completed"
        assert [c["msg"]["params"]["name"] for c in probe.requests("tools/call")] == ["slow_job", "note"]


def test_a_person_stopping_the_task_sends_tasks_cancel(probe: Probe) -> None:
    with interactive.start(probe.scratch, probe.debug_log) as term:
        backgrounded(probe, term)
        ident = task_id(probe)
        interactive.wait_until(lambda: probe.statuses(), "a first poll", 30, term)
        panel = interactive.stop_task(term)
        # The task's panel shows the server's status message and its poll interval.
        assert "slow_job alpha: working" in panel and "checks every 500ms" in panel, panel
        assert ident in panel
        cancels = interactive.wait_until(lambda: probe.requests("tasks/cancel"), "tasks/cancel", 30, term)
        assert {c["msg"]["params"]["taskId"] for c in cancels} == {ident}
        asked = len(probe.model_requests())
        interactive.wait_until(
            lambda: interactive.debug_lines(probe.debug_log, f"task {ident}: cancel sent"), "the cancel", 30
        )
        polls = probe.requests("tasks/get")
        assert all(p["t"] < cancels[0]["t"] for p in polls), "polled after the cancel"
        assert len(probe.model_requests()) == asked  # the model is not told of the stop
        assert not interactive.model_saw(probe.fake, RESULT)


def test_claude_print_mode_declares_no_extension_and_waits(probe: Probe) -> None:
    probe.release()  # the job is done at once: -p waits for it inside the call
    argv = [
        str(CLAUDE.path),
        "-p",
        "Run the slow job alpha, then note meanwhile.",
        "--model",
        CLAUDE_MODEL,
        "--allowedTools",
        "mcp__probe",
    ]
    env = interactive.terminal_env(probe.scratch) | {"TASKS_PROBE_DIR": str(probe.folder)}
    done = run(argv, probe.scratch, extra=env, timeout=120)
    assert done.returncode == 0, done.describe()
    call = probe.requests("tools/call")[0]
    caps = call["msg"]["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]
    assert TASKS not in caps.get("extensions", {}), caps
    assert probe.requests("tasks/get") == []
    answer = probe.answers()[(call["pid"], call["msg"]["id"])]["msg"]["result"]
    assert answer["resultType"] == "complete"
    assert interactive.model_saw(probe.fake, RESULT)
