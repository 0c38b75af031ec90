"""The real agent CLIs, end to end, against a scripted fake model on loopback.

Per agent: `todoledger install <agent>` in a scratch project with HOME in a
scratch folder, the approvals a user gives (tests/e2e/agents.py), then one
non-interactive run whose model is the fake. The fake calls todoledger's
`todowrite` (after the tool search the agent needs for a deferred MCP tool)
and logs every request, so the tests see what the agent really sent.

Skip them with `-m "not agents"`. They skip by themselves only when an agent
cannot be installed from npm (tests/e2e/install_agents.sh; .ci/run installs them).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.agents import (
    AGENTS,
    BIN,
    CLAUDE,
    CODEX,
    GEMINI,
    PLAN,
    RUN_TIMEOUT,
    Agent,
    Run,
    Scratch,
    ensure_installed,
    run,
)
from tests.e2e.fakemodel import FakeModel, Step, count_calls, pick_tool
from todoledger.mcp.tools import TOOLS

# One worker runs them all: the agent runs that several tests share (_SESSIONS) happen once.
pytestmark = [pytest.mark.agents, pytest.mark.xdist_group("e2e-agents")]

SEEDED = "Recover the seeded migration plan"
PROMPT = "Plan the parser work with the todo tool."
TODOWRITE = ("todoledger", "todowrite")


@dataclass
class Session:
    agent: Agent
    scratch: Scratch
    fake: FakeModel
    run: Run
    ledger: dict[str, Any]

    def why(self) -> str:
        """What a failing assert shows: the agent's output and what the model was asked."""
        asked = [f"{r.api} {r.path} -> {r.answered}: tools {r.tools()}" for r in self.fake.requests]
        return f"{self.agent.name} {self.agent.version()}\n{self.run.describe()}\nrequests:\n" + "\n".join(
            asked
        )


def todoledger(scratch: Scratch, *args: str) -> Run:
    return run([str(BIN / "todoledger"), *args], scratch)


def installed_project(agent: Agent, root: Path, *flags: str) -> Scratch:
    """A scratch git project and HOME with `todoledger install <agent> [flags]` done."""
    reason = ensure_installed(agent)
    if reason is not None:
        pytest.skip(f"{agent.name} could not be installed ({reason}); run tests/e2e/install_agents.sh")
    scratch = Scratch(root, root / "home", root / "project")
    for folder in (scratch.home, scratch.project, root / "tmp"):
        folder.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(scratch.project)], check=True)
    installed = todoledger(scratch, "install", agent.install_as, *flags)
    assert installed.returncode == 0, installed.describe()
    return scratch


def start_session(
    agent: Agent,
    root: Path,
    steps: list[Step],
    *,
    seed: str | None = None,
    env: dict[str, str] | None = None,
    flags: tuple[str, ...] = (),
    model: Callable[[Scratch, list[Step]], FakeModel] = lambda _, steps: FakeModel(steps),
) -> Session:
    scratch = installed_project(agent, root, *flags)
    agent.approve(scratch)
    if seed is not None:
        added = todoledger(scratch, "add", seed)
        assert added.returncode == 0, added.describe()
    fake = model(scratch, steps)
    try:
        scratch.url = fake.start()
        argv, extra = agent.command(scratch, PROMPT)
        result = run(argv, scratch, {**extra, **(env or {})}, timeout=RUN_TIMEOUT)
    finally:
        fake.stop()
    (root / "requests.json").write_text(fake.dump(), encoding="utf-8")  # for a person debugging
    print(
        f"{agent.name} {agent.version()}: run took {result.seconds:.1f}s, {len(fake.requests)} model requests"
    )
    shown = todoledger(scratch, "show", "--json")
    ledger = json.loads(shown.stdout) if shown.returncode == 0 else {"items": [], "error": shown.describe()}
    return Session(agent, scratch, fake, result, ledger)


_SESSIONS: dict[str, Session] = {}


def mcp_run(name: str, factory: pytest.TempPathFactory) -> Session:
    """One run per agent, shared by the tests below: a seeded ledger, then the
    model writes PLAN through todoledger's todowrite."""
    if name not in _SESSIONS:
        agent = AGENTS[name]
        steps = [*agent.find_mcp, Step(TODOWRITE, {"todos": PLAN})]
        _SESSIONS[name] = start_session(agent, factory.mktemp(f"mcp-{name}"), steps, seed=SEEDED)
    return _SESSIONS[name]


@pytest.fixture(params=sorted(AGENTS))
def mcp_session(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Session:
    return mcp_run(request.param, tmp_path_factory)


def hook_errors(session: Session) -> str:
    """Hooks never fail the agent; they log instead. Any line logged is a failure here."""
    logs = [
        session.scratch.project / ".todoledger" / "hook.log",
        session.scratch.home / ".local" / "state" / "todoledger" / "hook.log",
    ]
    return "".join(p.read_text(encoding="utf-8") for p in logs if p.exists())


def test_run_succeeds(mcp_session: Session) -> None:
    assert mcp_session.run.returncode == 0, mcp_session.why()
    assert mcp_session.fake.agent_requests(), mcp_session.why()
    assert hook_errors(mcp_session) == "", mcp_session.why()


def test_model_is_offered_todoledger_tools(mcp_session: Session) -> None:
    offered = [r for r in mcp_session.fake.agent_requests() if pick_tool(TODOWRITE, r.tools())]
    assert offered, mcp_session.why()
    # Every tool is named to the model: offered, or (Claude Code) listed as deferred by name.
    names = [n for r in offered for n in r.tools()]
    text = " ".join(r.text() for r in offered)
    for tool in TOOLS:
        named = pick_tool(("todoledger", tool), names) or f"mcp__todoledger__{tool}" in text
        assert named, f"{tool} not named to the model\n{mcp_session.why()}"
    # The server's instructions travel with the tools (as text or a namespace description).
    assert "todoledger keeps your todo list durable" in offered[0].text(), mcp_session.why()


def test_todowrite_lands_in_the_ledger(mcp_session: Session) -> None:
    called = [r for r in mcp_session.fake.requests if pick_tool(TODOWRITE, [r.answered])]
    assert called, mcp_session.why()
    items = {i["content"]: i for i in mcp_session.ledger["items"]}
    for want in PLAN:
        assert want["content"] in items, f"{want['content']!r} not in the ledger\n{mcp_session.why()}"
        got = items[want["content"]]
        assert got["status"] == want["status"]
        assert got["created_by"].startswith("mcp:"), got
    # The seeded item is someone else's: the agent's list leaves it alone.
    assert items[SEEDED]["status"] == "pending"
    # The tool's reply (the ledger ids) went back to the model.
    replies = [r.text() for r in mcp_session.fake.requests[mcp_session.fake.requests.index(called[0]) + 1 :]]
    assert any(items["Write the parser"]["id"] in text for text in replies), mcp_session.why()


PRIME_AT_START = {
    "claude": "SessionStart hook (.claude/settings.json)",
    "codex": "SessionStart hook (.codex/hooks.json), once its hooks are trusted (hooks.state)",
    "gemini": "SessionStart hook (.gemini/settings.json)",
}


@pytest.mark.parametrize(
    "name",
    [
        *sorted(PRIME_AT_START),
        "opencode",
    ],
)
def test_recovery_text_reaches_the_first_request(name: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    session = mcp_run(name, tmp_path_factory)
    first = session.fake.agent_requests()
    assert first, session.why()
    assert SEEDED in first[0].text(), f"recovery text missing from the first request\n{session.why()}"


@pytest.mark.parametrize("name", sorted(n for n, a in AGENTS.items() if a.native))
def test_native_todo_call_is_mirrored(name: str, tmp_path: Path) -> None:
    agent = AGENTS[name]
    session = start_session(agent, tmp_path, list(agent.native), env=agent.native_env)
    assert session.run.returncode == 0, session.why()
    native = agent.native[-1].tool
    assert any(r.answered == native for r in session.fake.requests), (
        f"{native} was not offered\n{session.why()}"
    )
    items = {i["content"]: i for i in session.ledger["items"]}
    for text, status in agent.native_items.items():
        assert text in items, f"{text!r} not mirrored\n{session.why()}"
        assert items[text]["status"] == status, items[text]
        assert not items[text]["created_by"].startswith("mcp:"), items[text]
    assert hook_errors(session) == "", session.why()


def test_codex_has_no_native_plan_tool(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Codex made update_plan opt-in: a default `codex exec` offers no native list to mirror.
    When this fails, Codex offers it again: add a native step for Codex."""
    session = mcp_run("codex", tmp_path_factory)
    offered = {name for r in session.fake.agent_requests() for name in r.tools()}
    assert offered, session.why()
    assert "update_plan" not in offered, session.why()


def test_claude_current_models_have_no_native_list(tmp_path: Path) -> None:
    """Claude Code gives current models no TodoWrite/Task tools unless
    CLAUDE_CODE_ENABLE_TODO_TOOLS=1: the MCP tools are the list. When this fails,
    the default changed back: the hooks' mirror is then the route again."""
    session = start_session(CLAUDE, tmp_path, list(CLAUDE.native))
    assert session.run.returncode == 0, session.why()
    assert not any(r.answered == "TaskCreate" for r in session.fake.requests), session.why()
    assert not any("Native task" in i["content"] for i in session.ledger["items"]), session.why()


def test_claude_project_server_needs_trust_and_approval(tmp_path: Path) -> None:
    """Interactive Claude Code starts the .mcp.json server only in a trusted folder
    (the first-run dialog, kept in ~/.claude.json) and once the server is approved;
    `enabledMcpjsonServers` does the latter, and counts only in a trusted folder."""
    scratch = installed_project(CLAUDE, tmp_path)

    def status() -> str:
        listed = run([str(CLAUDE.path), "mcp", "list"], scratch)
        return listed.stdout + listed.stderr

    CLAUDE.approve(scratch)  # enabledMcpjsonServers in .claude/settings.local.json
    assert "Pending approval" in status()  # not trusted yet: the local settings do not count
    state_path = scratch.home / ".claude.json"
    state = json.loads(state_path.read_text(encoding="utf-8")) if state_path.exists() else {}
    state["projects"] = {str(scratch.project): {"hasTrustDialogAccepted": True}}
    state_path.write_text(json.dumps(state), encoding="utf-8")
    assert "Connected" in status()
    (scratch.project / ".claude" / "settings.local.json").unlink()
    assert "Pending approval" in status()


# --- the Stop gate (install --gate-stop) -----------------------------------------
GATED = "Verify disk"
GATE = "cmd:false"
BLOCKED = "their completion gates do not hold"  # the first line of the hook's reason


@dataclass
class GatingModel(FakeModel):
    """The fake model, plus a person who gives the agent's item a gate while the
    agent works: just before the model's call number `gate_before` (its TaskUpdate)."""

    scratch: Scratch | None = None
    gate_before: int = 0
    gated: list[str] = field(default_factory=list)  # the item that got the gate

    def answer(self, api: str, path: str, body: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
        if not self.gated and self.scratch is not None and count_calls(api, body) == self.gate_before:
            shown = json.loads(todoledger(self.scratch, "show", "--json").stdout)
            item = next(i["id"] for i in shown["items"] if i["content"] == GATED)
            added = todoledger(self.scratch, "gate", "add", item, GATE)
            assert added.returncode == 0, added.describe()
            self.gated.append(item)
        return super().answer(api, path, body)


def blocked_once(session: Session, writer: str, warned: bool = True) -> None:
    """The session completed the gated item; its first stop was blocked with the
    gate's reason sent back to the model; the retry was let through and the run ended."""
    assert session.run.returncode == 0, session.why()
    fake = session.fake
    assert isinstance(fake, GatingModel) and fake.gated, session.why()
    item = fake.gated[0]
    got = {i["id"]: i for i in session.ledger["items"]}[item]
    assert got["status"] == "completed" and got["created_by"].startswith(writer), got
    turns = [r for r in fake.agent_requests() if r.answered == "text"]  # each ends a turn
    blocked = [r for r in turns if BLOCKED in r.text()]
    assert len(blocked) == 1, session.why()
    assert item in blocked[0].text() and GATED in blocked[0].text() and GATE in blocked[0].text()
    # The first stop was blocked, the second (stop_hook_active) ended the run: no loop.
    assert turns.index(blocked[0]) == 1 and len(turns) == 2, session.why()
    # The mirror's one log line is its warning about that completion, not an error.
    logged = hook_errors(session).splitlines()
    if not warned:  # gated after the completion: the mirror had nothing to warn about
        assert logged == [], logged
        return
    assert len(logged) == 1 and f"warning: {item}: reported completed" in logged[0], logged


def test_claude_stop_gate_blocks_a_done_whose_gate_fails(tmp_path: Path) -> None:
    """`install claude-code --gate-stop`: the session completes its item (the native
    task list, mirrored by the hook as the session's writer); a person gates it right
    after, and the gate never ran; the Stop hook blocks, Claude Code sends the reason
    to the model as "Stop hook feedback", and the retry (stop_hook_active) is let
    through. (A gate already there when the task is completed is the goal-lock's:
    TaskCompleted refuses the completion itself, the test below.)"""
    steps = [
        Step("ToolSearch", {"query": "select:TaskCreate,TaskUpdate"}),
        Step("TaskCreate", {"subject": GATED, "description": "the disk check"}),
        Step("TaskUpdate", {"taskId": "1", "status": "completed"}),
    ]

    def model(scratch: Scratch, steps: list[Step]) -> GatingModel:
        return GatingModel(steps, scratch=scratch, gate_before=3)

    session = start_session(
        CLAUDE, tmp_path, steps, env=CLAUDE.native_env, flags=("--gate-stop",), model=model
    )
    blocked_once(session, "claude-code:", warned=False)


def test_gemini_after_agent_gate_blocks_a_done_whose_gate_fails(tmp_path: Path) -> None:
    """`install gemini --gate-stop`: AfterAgent's "deny" sends the reason back as a new prompt."""
    todo = {"description": GATED, "status": "in_progress"}
    steps = [
        Step("write_todos", {"todos": [todo]}),
        Step("write_todos", {"todos": [{**todo, "status": "completed"}]}),
    ]

    def model(scratch: Scratch, steps: list[Step]) -> GatingModel:
        return GatingModel(steps, scratch=scratch, gate_before=1)

    session = start_session(GEMINI, tmp_path, steps, flags=("--gate-stop",), model=model)
    blocked_once(session, "gemini:")


def test_claude_stop_gate_blocks_a_done_made_through_mcp(tmp_path: Path) -> None:
    """Current Claude models have no native list: the MCP tools are the list. A
    completion through todoledger's todowrite of a gated item should block the stop too."""
    steps = [*CLAUDE.find_mcp, Step(TODOWRITE, {"todos": [{"content": GATED, "status": "completed"}]})]

    def model(scratch: Scratch, steps: list[Step]) -> FakeModel:
        added = todoledger(scratch, "add", GATED, "--done-when", GATE)
        assert added.returncode == 0, added.describe()
        return FakeModel(steps)

    session = start_session(CLAUDE, tmp_path, steps, flags=("--gate-stop",), model=model)
    assert session.run.returncode == 0, session.why()
    assert [i["status"] for i in session.ledger["items"] if i["content"] == GATED] == ["completed"]
    assert any(BLOCKED in r.text() for r in session.fake.agent_requests()), session.why()


def gated_item(scratch: Scratch) -> str:
    """The item a person added with its gate before the session: the agent completes it."""
    added = todoledger(scratch, "add", GATED, "--done-when", GATE, "--json")
    assert added.returncode == 0, added.describe()
    item: str = json.loads(added.stdout)["id"]
    return item


def told_once(session: Session, item: str) -> str:
    """The stop was blocked once: the next request to the model carries the gate's
    reason (naming the item, its text, the gate and its output), and the retry ended
    the run. Returns that request's text."""
    assert session.run.returncode == 0, session.why()
    turns = [r for r in session.fake.agent_requests() if r.answered == "text"]  # each ends a turn
    blocked = [r for r in turns if BLOCKED in r.text()]
    assert len(blocked) == 1, session.why()
    told = blocked[0].text()
    assert item in told and GATED in told and GATE in told and "(failed)" in told, told[-3000:]
    assert turns.index(blocked[0]) == 1 and len(turns) == 2, session.why()
    return told


def test_codex_stop_gate_blocks_a_done_made_through_mcp(tmp_path: Path) -> None:
    """`install codex --gate-stop`: Codex offers no native list, so the agent works
    through todoledger's MCP tools. plan_update's completion is refused by the gate
    (an error reply in the rollout); todowrite then reports the item completed. The
    Stop hook reads the rollout (`transcript_path`) for those replies, and its
    "block" sends the gate's output back to the model; the retry ends the run."""
    gated: list[str] = []

    def model(scratch: Scratch, _: list[Step]) -> FakeModel:
        gated.append(gated_item(scratch))
        return FakeModel(
            [
                *CODEX.find_mcp,
                Step(("todoledger", "plan_update"), {"id": gated[0], "status": "completed"}),
                Step(TODOWRITE, {"todos": [{"content": GATED, "status": "completed"}]}),
            ]
        )

    session = start_session(CODEX, tmp_path, [], flags=("--gate-stop",), model=model)
    item = gated[0]
    told_once(session, item)
    # The refusal went back to the model as the tool's output, then the report landed.
    refused = f"{item} not completed: gate {GATE} fails"
    assert any(refused in r.text() for r in session.fake.agent_requests()), session.why()
    [row] = [i for i in session.ledger["items"] if i["content"] == GATED]
    assert (row["id"], row["status"], row["verification"]) == (item, "completed", "failed"), row
    assert row["updated_by"].startswith("mcp:"), row  # the MCP server's writer: no session in it
    logged = hook_errors(session).splitlines()
    assert logged == [], logged


def test_gemini_after_agent_gate_blocks_a_done_forced_through_mcp(tmp_path: Path) -> None:
    """`install gemini --gate-stop`: the agent forces its item past the failing gate
    over MCP (plan_update force=true with reason: refused without the reason, then
    recorded with it). AfterAgent reads the chat file (`transcript_path`) for the
    reply and denies: the gate's output comes back as a new prompt."""
    gated: list[str] = []
    why = "the disk was checked by hand"

    def model(scratch: Scratch, _: list[Step]) -> FakeModel:
        gated.append(gated_item(scratch))
        update = {"id": gated[0], "status": "completed", "force": True}
        return FakeModel(
            [
                Step(("todoledger", "plan_update"), update),
                Step(("todoledger", "plan_update"), {**update, "reason": why}),
            ]
        )

    session = start_session(GEMINI, tmp_path, [], flags=("--gate-stop",), model=model)
    item = gated[0]
    told_once(session, item)
    needs = "overriding a failing gate needs force true with a reason"
    assert any(needs in r.text() for r in session.fake.agent_requests()), session.why()
    [row] = [i for i in session.ledger["items"] if i["content"] == GATED]
    assert (row["id"], row["status"], row["verification"]) == (item, "completed", "failed"), row
    shown = todoledger(session.scratch, "history", item, "--json")
    forced = [e for e in json.loads(shown.stdout) if e["field"] == "forced"]
    assert [(e["new"]["past"], e["new"]["reason"]) for e in forced] == [("gates", why)], shown.describe()
    assert forced[0]["writer"].startswith("mcp:gemini"), forced
    logged = hook_errors(session).splitlines()
    assert logged == [], logged


def test_claude_task_completed_is_refused_by_the_goal_lock(tmp_path: Path) -> None:
    """`install claude-code --gate-stop` wires TaskCompleted (hooks/goal_lock.py): the
    TaskUpdate that completes a task whose item's gate does not hold is refused
    (exit 2), and the refusal, naming the item and what would prove it, reaches
    the model as the tool's result."""
    steps = [
        Step("ToolSearch", {"query": "select:TaskCreate,TaskUpdate"}),
        Step("TaskCreate", {"subject": GATED, "description": "the disk check"}),
        Step("TaskUpdate", {"taskId": "1", "status": "completed"}),
    ]

    def model(scratch: Scratch, steps: list[Step]) -> GatingModel:
        return GatingModel(steps, scratch=scratch, gate_before=2)

    session = start_session(
        CLAUDE, tmp_path, steps, env=CLAUDE.native_env, flags=("--gate-stop",), model=model
    )
    assert session.run.returncode == 0, session.why()
    fake = session.fake
    assert isinstance(fake, GatingModel) and fake.gated, session.why()
    item = fake.gated[0]
    refused = f"todoledger: task {GATED!r} may not be marked completed: its gates do not hold."
    told = [r for r in fake.agent_requests() if refused in r.text()]
    assert told, session.why()
    text = told[0].text()
    assert f"{item} {GATED} (unverified)" in text and f"run `todoledger verify {item}`" in text, text[-2000:]
    # Claude Code changed nothing (TaskUpdate's response says success: false): the mirror neither.
    got = {i["id"]: i for i in session.ledger["items"]}[item]
    assert got["status"] != "completed", got


def test_codex_goal_complete_is_held_by_the_stop_gate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Codex cannot be denied update_goal itself: it runs no PreToolUse hook for its
    goal tools (codex-rs/core/src/tools/registry.rs, handlers/goal.rs); `doctor` says so.
    What todoledger can do: the Stop hook reads the completed goal from the rollout,
    and while a gated item of the plan is unproven it blocks, naming the item and
    what would prove it (hooks/goal_lock.py); the retry ends the run."""
    from tests.e2e import agents as e2e_agents

    monkeypatch.setattr(e2e_agents, "CODEX_EXTRA", ["-c", "features.goals=true"])
    gated: list[str] = []

    def model(scratch: Scratch, _: list[Step]) -> FakeModel:
        gated.append(gated_item(scratch))
        return FakeModel(
            [
                Step("create_goal", {"objective": "The disk is verified"}),
                Step("update_goal", {"status": "complete"}),
            ]
        )

    session = start_session(CODEX, tmp_path, [], flags=("--gate-stop",), model=model)
    assert session.run.returncode == 0, session.why()
    item = gated[0]
    held = "todoledger: the session's goal is not done while these items are not proven:"
    told = [r for r in session.fake.agent_requests() if held in r.text()]
    assert len(told) == 1, session.why()
    assert f"{item} {GATED} (unverified)" in told[0].text(), told[0].text()[-2000:]
    goals = [i for i in session.ledger["items"] if i["content"] == "The disk is verified"]
    assert [g["status"] for g in goals] == ["completed"], session.ledger


# A dropped item is never lost from what the next session is handed ----------------------------

DROPPED_ITEM = "Benchmark the parser against the baseline"


def run_agent(agent: Agent, scratch: Scratch, steps: list[Step], root: Path, name: str) -> Session:
    """One more run of the agent in an installed project (a new session), its model scripted."""
    fake = FakeModel(steps)
    try:
        scratch.url = fake.start()
        argv, extra = agent.command(scratch, PROMPT)
        result = run(argv, scratch, extra, timeout=RUN_TIMEOUT)
    finally:
        fake.stop()
    (root / f"requests-{name}.json").write_text(fake.dump(), encoding="utf-8")
    shown = todoledger(scratch, "show", "--json")
    ledger = json.loads(shown.stdout) if shown.returncode == 0 else {"items": [], "error": shown.describe()}
    return Session(agent, scratch, fake, result, ledger)


def test_claude_next_session_is_handed_the_item_its_last_list_dropped(tmp_path: Path) -> None:
    """Claude Code writes its list through todoledger's MCP todowrite, then a
    shorter one that leaves an item out (as after a compaction); the next
    session's SessionStart hook hands back the recovery text, whose dropped
    item the model sees, by name, in its very first request."""
    agent = CLAUDE
    scratch = installed_project(agent, tmp_path)
    agent.approve(scratch)
    full = [*PLAN, {"content": DROPPED_ITEM, "status": "pending"}]
    shorter = [{**PLAN[0], "status": "completed"}, {**PLAN[1], "status": "in_progress"}, PLAN[2]]
    steps = [*agent.find_mcp, Step(TODOWRITE, {"todos": full}), Step(TODOWRITE, {"todos": shorter})]
    first = run_agent(agent, scratch, steps, tmp_path, "first")
    assert first.run.returncode == 0, first.why()
    second = run_agent(agent, scratch, [], tmp_path, "second")
    assert second.run.returncode == 0, second.why()
    items = {i["content"]: i for i in first.ledger["items"]}
    opening = second.fake.agent_requests()
    assert opening, second.why()
    text = opening[0].text()
    # What the issue asks: the next session's first model request names the dropped item (and its id).
    assert DROPPED_ITEM in text and items[DROPPED_ITEM]["id"] in text, second.why()
    assert "listed again to revive" in text, second.why()
    assert items[DROPPED_ITEM]["status"] == "dropped", first.why()
    # The drop's reply (JSON inside the request's JSON) named it to the model already.
    last = first.fake.requests[-1].text()
    assert '\\"dropped\\":[{\\"id\\":\\"' + items[DROPPED_ITEM]["id"] in last, first.why()
    assert hook_errors(second) == "", second.why()
