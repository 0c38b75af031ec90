"""todoledger's long work as MCP Tasks in the real, interactive Claude Code (issue 33).

The project is set up only by what `todoledger install claude-code` printed (its
notes for an interactive session: accept the trust dialog, approve the project
server when Claude Code asks); a person adds the long check with the CLI. Claude
Code runs under a pty with the fake model (tests/e2e/interactive.py; what Claude
Code does with a task is in tests/e2e/TASKS.md).

- A long `plan_verify` (a person's `cmd:` check that runs until the test lets it
  end) becomes a task: the call is moved to the background, the model's next turn
  (`todoread`) runs while the task is `working`, and the verify's receipts reach
  the model in a later request.
- A person who stops the task in Claude Code (↓, Enter, `x`) cancels it: its check's
  process ends, the task is `cancelled`, no receipt says it holds.
- The same with the `todoledger mcp` process killed while the task works: Claude
  Code waits, a person's `/mcp` Reconnect starts a new server process, which
  answers `tasks/get` for the task from its ledger row, and the result is delivered.

- `claude -p` declares no extension: the same verify answers inside the call.

Each test records the task states it saw, in order (`seen`), from the ledger's
task row as a person's `todoledger tasks --json` lists it, and the plan's history.
"""

from __future__ import annotations

import json
import os
import re
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.e2e import interactive
from tests.e2e.agents import BIN, CLAUDE, CLAUDE_MODEL, Scratch, run
from tests.e2e.fakemodel import FakeModel, Step, count_calls
from tests.e2e.terminal import ENTER, Terminal
from tests.e2e.test_agents import installed_project
from todoledger import Ledger

pytestmark = [pytest.mark.agents, pytest.mark.slow, pytest.mark.xdist_group("e2e-agents")]

ITEM = "Benchmark the draft model"
DONE = "benchmark-finished"  # what the check prints once released
STEPS = [
    Step("ToolSearch", {"query": "select:mcp__todoledger__plan_verify,mcp__todoledger__todoread"}),
    Step(("todoledger", "plan_verify"), {}),
    Step(("todoledger", "todoread"), {}),
]
PROMPT = "Verify the plan, and read it meanwhile."
RETURNED = re.compile(r"Tool '(\w+)' returned task ([0-9a-f]{32}) \(working\)")


@dataclass
class Session:
    scratch: Scratch
    fake: FakeModel
    release: Path  # the check ends once this file exists
    debug_log: Path
    seen: list[str] = field(default_factory=list)  # the task's states, in order

    @property
    def db(self) -> Path:
        return self.scratch.project / ".todoledger" / "ledger.db"

    def person(self, *args: str) -> Any:
        """A person's todoledger command in the project (this venv's, by path)."""
        return run([str(BIN / "todoledger"), *args], self.scratch, timeout=60)

    def task_id(self, tool: str = "plan_verify") -> str | None:
        """The task id Claude Code's debug log says the tool's call returned."""
        for line in interactive.debug_lines(self.debug_log, f"Tool '{tool}' returned task"):
            match = RETURNED.search(line)
            if match:
                return match.group(2)
        return None

    def person_at_terminal(self, *args: str, answer: str = "y") -> str:
        """A person's todoledger command at a terminal (a pty: so todoledger knows a
        person runs it), answering its [y/N] question; the screen it left."""
        argv = [str(BIN / "todoledger"), *args]
        with Terminal(argv, cwd=self.scratch.project, env=interactive.terminal_env(self.scratch)) as term:
            end = time.monotonic() + 60
            while term.alive() and time.monotonic() < end:
                if "[y/N]" in term.text() and answer:
                    term.type(answer + ENTER)
                    answer = ""
                time.sleep(0.1)
            assert term.proc.wait(timeout=5) == 0, term.text()
            return term.text()

    def listed(self, task_id: str) -> dict[str, Any] | None:
        """The task as a person's `todoledger tasks --all --json` lists it; its state is
        appended to `seen` when it changed."""
        shown = self.person("tasks", "--all", "--json")
        assert shown.returncode == 0, shown.describe()
        row = next((r for r in json.loads(shown.stdout) if r["id"] == task_id), None)
        if row is not None and (not self.seen or self.seen[-1] != row["status"]):
            self.seen.append(row["status"])
        return row

    def next_turn(self) -> list[int]:
        """The model's requests after its `todoread` call (three calls in the conversation)."""
        return [
            i
            for i, r in enumerate(self.fake.requests)
            if r.api == "anthropic" and r.tools() and count_calls("anthropic", r.body) >= 3
        ]


@pytest.fixture
def session(tmp_path: Path) -> Any:
    scratch = installed_project(CLAUDE, tmp_path)  # skips when Claude Code is not installed
    interactive.finish_onboarding(scratch)
    release = tmp_path / "release"
    check = f"cmd:while [ ! -e {release} ]; do sleep 0.2; done; echo {DONE}"
    fake = FakeModel(steps=list(STEPS), final="I will report the verify when it ends.")
    scratch.url = fake.start()
    found = Session(scratch, fake, release, tmp_path / "claude-debug.log")
    added = found.person("add", ITEM, "--done-when", check)
    assert added.returncode == 0, added.describe()
    yield found
    fake.stop()
    (tmp_path / "requests.json").write_text(fake.dump(), encoding="utf-8")


def start(session: Session) -> Terminal:
    """Claude Code in the project, past the dialogs install's notes name: the trust
    dialog, the project server's approval ("New MCP server found in this project:
    todoledger", as install's note says), and the API key from the environment."""
    term = Terminal(
        [str(CLAUDE.path), "--model", CLAUDE_MODEL, "--debug-file", str(session.debug_log)],
        cwd=session.scratch.project,
        env=interactive.terminal_env(session.scratch),
    )
    try:
        interactive.trust(term)
        interactive.answer_dialogs(
            term,
            {"use this API key": "Yes", "New MCP server found in this project": "Use this MCP server"},
        )
    except BaseException:
        term.close()
        raise
    return term


def backgrounded(session: Session, term: Terminal) -> str:
    """The prompt; the verify becomes a task; the model's next turn runs while it works."""
    interactive.send(term, PROMPT)
    task_id = interactive.wait_until(session.task_id, "plan_verify answered with a task", 90, term)
    term.wait_for(interactive.TASK_RUNNING, timeout=30)
    interactive.wait_until(session.next_turn, "the model's next turn (after todoread)", 60, term)
    assert not session.release.exists()
    row = session.listed(task_id)
    assert row is not None and row["status"] == "working", row
    assert row["message"] == "verifying: 1 check (cmd:) running", row  # as a person sees it
    assert row["tool"] == "plan_verify" and row["principal"] == "agent:claude-code", row
    # The model got the placeholder, and the plan from todoread, not the verify's result.
    assert interactive.model_saw(session.fake, f"started server-side task {task_id}")
    assert interactive.model_saw(session.fake, ITEM)
    assert not interactive.model_saw(session.fake, DONE)
    return str(task_id)


def delivered(session: Session, term: Terminal, task_id: str) -> None:
    session.release.write_text("go\n", encoding="utf-8")
    interactive.wait_until(lambda: interactive.model_saw(session.fake, DONE), "the verify's result", 90, term)
    notice = notification(session.fake.requests[interactive.model_saw(session.fake, DONE)[0]].body)
    assert "<status>completed</status>" in notice, notice
    told = json.loads(notice.split("<result>", 1)[1].split("</result>", 1)[0])
    assert [(r["result"], r["output"]) for r in told["receipts"]] == [("holds", f"{DONE}\n")], told
    term.wait_for(f"MCP task {task_id} (todoledger/plan_verify) completed", timeout=30)
    row = session.listed(task_id)
    assert row is not None and row["status"] == "completed", row
    with Ledger(str(session.db)) as lg:
        receipts = lg.receipts()
        told = [e["new"]["status"] for e in lg.history("main") if e["field"] == "task"]
    assert [r["result"] for r in receipts] == ["holds"], receipts
    assert DONE in receipts[0]["output"]
    assert told[0] == "working" and told[-1] == "completed", told


def notification(body: dict[str, Any]) -> str:
    """The task notification Claude Code put in the model's conversation."""
    for message in body["messages"]:
        blocks = message["content"] if isinstance(message["content"], list) else [message]
        for block in blocks:
            text = block.get("text") or block.get("content") or ""
            if isinstance(text, str) and "<task-notification>" in text:
                return text
    raise AssertionError("no task notification in the request")


def server_pids(term: Terminal) -> list[int]:
    """The `todoledger mcp` processes Claude Code started (in its session; the task's
    worker is a detached process of its own session, so it is never among them)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{name}/cmdline").read_bytes().split(b"\0")
            stat = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        session, live = int(stat[3]), stat[0] not in ("Z", "X")
        ours = b"mcp" in cmd[-2:] and any(part.endswith(b"todoledger") for part in cmd)
        if live and session == term.proc.pid and ours:
            found.append(int(name))
    return found


def processes_with(marker: str) -> list[int]:
    """Live processes whose command line holds `marker` (the check's own text)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            cmd = Path(f"/proc/{name}/cmdline").read_bytes()
            state = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmd and state not in ("Z", "X"):
            found.append(int(name))
    return found


def test_claude_runs_a_long_plan_verify_in_the_background(session: Session) -> None:
    with start(session) as term:
        task_id = backgrounded(session, term)
        delivered(session, term, task_id)
    assert session.seen == ["working", "completed"], session.seen


def test_claude_gets_the_verify_from_a_new_server_after_a_kill(session: Session) -> None:
    with start(session) as term:
        task_id = backgrounded(session, term)
        servers = server_pids(term)
        assert len(servers) == 1, servers
        os.kill(servers[0], signal.SIGKILL)
        interactive.wait_until(
            lambda: interactive.debug_lines(session.debug_log, f"task {task_id} lost its connection"),
            "Claude Code's lost connection",
            60,
            term,
        )
        row = session.listed(task_id)
        assert row is not None and row["status"] == "working", row  # the worker goes on
        interactive.reconnect(term, "todoledger")
        interactive.close_menu(term)
        new = interactive.wait_until(
            lambda: [p for p in server_pids(term) if p != servers[0]], "a new server"
        )
        assert len(new) == 1, new
        before = len(interactive.debug_lines(session.debug_log, "poll failure"))
        delivered(session, term, task_id)
        failures = interactive.debug_lines(session.debug_log, "poll failure")
        assert len(failures) == before  # the new server answered every poll
        row = session.listed(task_id)
        assert row is not None and row["workers"] == 1, row  # the worker outlived the server: no resume
    assert session.seen == ["working", "completed"], session.seen


def test_a_person_stopping_the_verify_in_claude_ends_its_check(session: Session) -> None:
    with start(session) as term:
        task_id = backgrounded(session, term)
        marker = str(session.release)
        interactive.wait_until(lambda: processes_with(marker), "the check's process", 30, term)
        panel = interactive.stop_task(term)
        assert "verifying: 1 check (cmd:) running" in panel and task_id in panel, panel
        interactive.wait_until(
            lambda: (session.listed(task_id) or {}).get("status") == "cancelled",
            "the task cancelled",
            60,
            term,
        )
        interactive.wait_until(lambda: not processes_with(marker), "the check's process ended", 30, term)
        assert not interactive.model_saw(session.fake, DONE)
        with Ledger(str(session.db)) as lg:
            told = [e["new"]["status"] for e in lg.history("main") if e["field"] == "task"]
            receipts = lg.receipts()
        assert told == ["working", "cancelled"], told
        assert [r["result"] for r in receipts if r["result"] == "holds"] == [], receipts
    assert session.seen == ["working", "cancelled"], session.seen


def test_claude_print_mode_gets_the_synchronous_verify(session: Session) -> None:
    """`claude -p` declares no Tasks extension: the verify answers in the call, no task."""
    session.release.write_text("go\n", encoding="utf-8")  # the check ends at once
    argv, env = CLAUDE.command(session.scratch, PROMPT)  # with install's note: --allowedTools
    done = run(argv, session.scratch, extra=env, timeout=120)
    assert done.returncode == 0, done.describe()
    seen = interactive.model_saw(session.fake, DONE)
    assert seen, done.describe()
    body = session.fake.requests[seen[0]].body
    results = [
        json.dumps(block)
        for message in body["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]
    assert any(DONE in r and '\\"result\\":\\"holds\\"' in r for r in results), (
        results
    )  # the call's own reply
    with pytest.raises(AssertionError):
        notification(body)  # and no task notification
    shown = session.person("tasks", "--all", "--json")
    assert json.loads(shown.stdout) == [], shown.stdout
