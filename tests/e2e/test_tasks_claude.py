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
- A `plan_sweep` of a sweep a person wrote and trusted at a terminal (`todoledger
  sweep add`, `sweep trust`; a setup, ready check and clean check per combination):
  moved to the background, the server killed between two recorded runs, a person's
  Reconnect, the sweep's runs delivered; no run recorded or run twice, no setup left.
- An approval wait: `plan_update status=in_progress` on an item that needs a person's
  approval stays `working` ("waiting for a person: todoledger approve ID") across a
  killed server; a person approves at a terminal; the next `tasks/get` applies the
  start as the agent's writer and the model gets the result.

- `claude -p` declares no extension: the same verify answers inside the call.

Each test records the task states it saw, in order (`seen`), from the ledger's
task row as a person's `todoledger tasks --json` lists it, and the plan's history.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.e2e import interactive
from tests.e2e.agents import BIN, CLAUDE, CLAUDE_MODEL, Scratch, run
from tests.e2e.fakemodel import FakeModel, Step, count_calls
from tests.e2e.terminal import ENTER, Terminal
from tests.e2e.test_agents import installed_project
from tests.test_sweep_lifecycle import CLIENT, SERVER, events, listening
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


@contextmanager
def opened(tmp_path: Path, steps: list[Step], final: str) -> Iterator[Session]:
    """The project as `todoledger install claude-code` left it, a returning user's
    Claude Code settings, and the fake model scripted with `steps`."""
    scratch = installed_project(CLAUDE, tmp_path)  # skips when Claude Code is not installed
    interactive.finish_onboarding(scratch)
    fake = FakeModel(steps=list(steps), final=final)
    scratch.url = fake.start()
    try:
        yield Session(scratch, fake, tmp_path / "release", tmp_path / "claude-debug.log")
    finally:
        fake.stop()
        (tmp_path / "requests.json").write_text(fake.dump(), encoding="utf-8")


@pytest.fixture
def session(tmp_path: Path) -> Any:
    with opened(tmp_path, STEPS, "I will report the verify when it ends.") as found:
        check = f"cmd:while [ ! -e {found.release} ]; do sleep 0.2; done; echo {DONE}"
        added = found.person("add", ITEM, "--done-when", check)
        assert added.returncode == 0, added.describe()
        yield found


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


def restarted(session: Session, term: Terminal, task_id: str) -> None:
    """SIGKILL of the one `todoledger mcp` process while the task works; Claude Code
    waits for it; a person's `/mcp` Reconnect starts a new one."""
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
    assert row is not None and row["status"] == "working", row  # the task outlived its server
    interactive.reconnect(term, "todoledger")
    interactive.close_menu(term)
    new = interactive.wait_until(lambda: [p for p in server_pids(term) if p != servers[0]], "a new server")
    assert len(new) == 1, new


def test_claude_runs_a_long_plan_verify_in_the_background(session: Session) -> None:
    with start(session) as term:
        task_id = backgrounded(session, term)
        delivered(session, term, task_id)
    assert session.seen == ["working", "completed"], session.seen


def test_claude_gets_the_verify_from_a_new_server_after_a_kill(session: Session) -> None:
    with start(session) as term:
        task_id = backgrounded(session, term)
        restarted(session, term, task_id)
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


# A person's sweep with a lifecycle (tests/test_sweep_lifecycle.py's stand-ins): per
# combination a setup (a stand-in server that loads for 0.3 s), a ready check on its
# /health, two runs of a benchmark client, the setup's process group ended, and a
# clean check that its port is closed. The first run goes at once; every later run
# waits for the test's release file, so that the kill falls between recorded runs.
GATE = """import os, time
while os.path.exists({runs!r}) and not os.path.exists({release!r}):
    time.sleep(0.2)
"""
SWEEP = "bench"
SWEEP_STEPS = [
    Step("ToolSearch", {"query": "select:mcp__todoledger__plan_sweep,mcp__todoledger__todoread"}),
    Step(("todoledger", "plan_sweep"), {"name": SWEEP}),
    Step(("todoledger", "todoread"), {}),
]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def in_background(session: Session, term: Terminal, prompt: str, tool: str) -> str:
    """The prompt; the tool's call becomes a task; the model's next turn (todoread)
    runs while it works. The task's id."""
    interactive.send(term, prompt)
    task_id = interactive.wait_until(lambda: session.task_id(tool), f"{tool} answered with a task", 90, term)
    term.wait_for(interactive.TASK_RUNNING, timeout=30)
    interactive.wait_until(session.next_turn, "the model's next turn (after todoread)", 60, term)
    assert interactive.model_saw(session.fake, f"started server-side task {task_id}")
    return str(task_id)


def task_result(session: Session, term: Terminal, task_id: str, tool: str) -> dict[str, Any]:
    """The task's result as the model got it, in Claude Code's task notification."""
    notice = interactive.wait_until(
        lambda: next(
            (n for r in session.fake.agent_requests() for n in notifications(r.body) if task_id in n), None
        ),
        f"the {tool} task's notification to the model",
        120,
        term,
    )
    assert "<status>completed</status>" in notice and task_id in notice, notice
    term.wait_for(f"MCP task {task_id} (todoledger/{tool}) completed", timeout=30)
    told: dict[str, Any] = json.loads(notice.split("<result>", 1)[1].split("</result>", 1)[0])
    return told


def notifications(body: dict[str, Any]) -> list[str]:
    """Every task notification in the model's conversation (its messages, not the system prompt)."""
    found = []
    for message in body["messages"]:
        blocks = message["content"] if isinstance(message["content"], list) else [message]
        for block in blocks:
            text = block.get("text") or block.get("content") or ""
            if isinstance(text, str) and "<task-notification>" in text:
                found.append(text)
    return found


def task_history(session: Session) -> list[tuple[str, str]]:
    """The task's transitions as the plan's history recorded them: (status, message)."""
    with Ledger(str(session.db)) as lg:
        return [
            (e["new"]["status"], e["new"].get("message", ""))
            for e in lg.history("main")
            if e["field"] == "task"
        ]


def test_claude_gets_a_persons_sweep_from_a_new_server_after_a_kill(tmp_path: Path) -> None:
    folder, port = tmp_path / "sweep", free_port()
    folder.mkdir()
    server, client = folder / "server.py", folder / "client.py"
    server.write_text(SERVER, encoding="utf-8")
    with opened(tmp_path, SWEEP_STEPS, "I will report the sweep when it ends.") as session:
        gate = GATE.format(runs=str(folder / "runs.log"), release=str(session.release))
        client.write_text(gate + CLIENT, encoding="utf-8")
        # A person writes the sweep and trusts it, at a terminal (docs/cli.md, `sweep`).
        session.person_at_terminal(
            "sweep", "add", SWEEP, "--template", "Benchmark k={k}", "--param", "k=16,8",
            "--setup", f"python3 {server} {port} {{k}} 0.3",
            "--ready", f"http://127.0.0.1:{port}/health", "--ready-expect", "ok", "--ready-timeout", "60",
            "--clean", f"port:127.0.0.1:{port}",
            "--run", f"python3 {client} {port} 0.3", "--metric", "tok_s=$.tok_s", "--repeat", "2",
        )  # fmt: skip
        trusted = session.person_at_terminal("sweep", "trust", SWEEP)
        assert f"approved sweep {SWEEP} (2 combinations) as cli:" in trusted, trusted
        with Ledger(str(session.db)) as lg:
            definition = lg.sweep_definition(SWEEP)
        with start(session) as term:
            task_id = in_background(
                session, term, "Run the benchmark sweep, and read the plan meanwhile.", "plan_sweep"
            )
            row = session.listed(task_id)
            assert (
                row is not None and row["tool"] == "plan_sweep" and row["principal"] == "agent:claude-code"
            ), row
            # The first run is recorded; the second waits under its combination's setup.
            interactive.wait_until(lambda: len(receipts(session)) == 1, "the sweep's first run", 90, term)
            interactive.wait_until(lambda: processes_with(str(server)), "the setup's process", 30, term)
            mid = session.listed(task_id)
            assert mid is not None and mid["status"] == "working", mid
            messages = [mid["message"]]
            restarted(session, term, task_id)
            assert len(receipts(session)) == 1  # nothing ran while the test held the gate
            session.release.write_text("go\n", encoding="utf-8")
            told = task_result(session, term, task_id, "plan_sweep")
            done = session.listed(task_id)
            assert done is not None and done["status"] == "completed", done
            messages.append(done["message"])
        assert (told["sweep"], told["runs"], told["failed"], told["setups"], told["stopped"]) == (
            SWEEP, 4, 0, 2, None
        ), told  # fmt: skip
        recorded = receipts(session)
        assert len(recorded) == 4 and len(set(recorded)) == 4, recorded  # no run recorded twice
        assert sum(1 for e in events(folder) if e["event"] == "bench") == 4  # no run ran twice
        assert [e["k"] for e in events(folder) if e["event"] == "start"] == [16, 8]  # a setup each
        assert not processes_with(str(server)) and not listening(port)  # no setup left
        assert done["workers"] == 1, done  # the worker outlived the server: no resume needed
        with Ledger(str(session.db)) as lg:
            task = lg.task(task_id, None)
            assert task is not None
            assert {r["by"] for r in lg.receipts()} == {task["writer"]}  # the task's writer ran them
            assert lg.sweep_live_setups(SWEEP) == []
            assert lg.sweep_definition(SWEEP)["runner"] is None  # the runner lease given back
        # A person's sweep, trusted by a person.
        assert definition["created_by"].startswith("cli:") and definition["approved_by"].startswith("cli:")
        history = task_history(session)
        print("seen:", session.seen, "messages:", messages, "history:", history)
        assert history[0][0] == "working" and history[-1][0] == "completed", history
    assert session.seen == ["working", "completed"], session.seen


def receipts(session: Session) -> list[tuple[str, str, str]]:
    """(item, check, at) of every receipt: a run recorded twice would show twice."""
    with Ledger(str(session.db)) as lg:
        return sorted((r["item"], r["check"], r["at"]) for r in lg.receipts())


APPROVAL_ITEM = "Train on 4 GPUs with 37K samples"


def test_claude_waits_for_a_persons_approval_across_a_server_kill(tmp_path: Path) -> None:
    with opened(tmp_path, [], "I will start the training once a person approves it.") as session:
        added = session.person("add", APPROVAL_ITEM, "--needs-approval", "-q")
        assert added.returncode == 0, added.describe()
        item = added.stdout.split()[0]
        session.fake.steps[:] = [
            Step("ToolSearch", {"query": "select:mcp__todoledger__plan_update,mcp__todoledger__todoread"}),
            Step(("todoledger", "plan_update"), {"id": item, "status": "in_progress"}),
            Step(("todoledger", "todoread"), {}),
        ]
        waiting = f"waiting for a person: todoledger approve {item}"
        with start(session) as term:
            task_id = in_background(
                session, term, "Start the training, and read the plan meanwhile.", "plan_update"
            )
            row = session.listed(task_id)
            assert row is not None and row["status"] == "working" and row["message"] == waiting, row
            assert row["tool"] == "plan_update" and row["principal"] == "agent:claude-code", row
            # Its todoread, meanwhile: the item is still pending (the reply is JSON in the tool result).
            assert interactive.model_saw(session.fake, r"\"counts\":{\"pending\":1}")
            restarted(session, term, task_id)
            row = session.listed(task_id)
            assert row is not None and row["status"] == "working" and row["message"] == waiting, row
            with Ledger(str(session.db)) as lg:
                assert lg.get(item, "main")["status"] == "pending"  # nothing started before a person
            # A person approves, at a terminal.
            session.person_at_terminal("approve", item)
            told = task_result(session, term, task_id, "plan_update")
            done = session.listed(task_id)
            assert done is not None and done["status"] == "completed", done
        assert told["item"]["status"] == "in_progress", told
        with Ledger(str(session.db)) as lg:
            task = lg.task(task_id, None)
            assert task is not None
            events_of = [e for e in lg.history("main") if e["item"] == item]
            approvers = [e["writer"] for e in events_of if e["field"] == "approved"]
            starts = [e["writer"] for e in events_of if e["field"] == "status"]
        assert len(approvers) == 1 and approvers[0].startswith("cli:"), approvers  # the person
        assert starts == [task["writer"]] and task["writer"].startswith("mcp:claude-code:"), starts
        assert done["message"] == f"approved by {approvers[0]}; plan_update applied", done
        history = task_history(session)
        print("seen:", session.seen, "history:", history)
        assert history[0] == ("working", waiting) and history[-1][0] == "completed", history
    assert session.seen == ["working", "completed"], session.seen
