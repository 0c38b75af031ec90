"""Each real agent, on each route (mcp, cli, both), set up by following only what
`todoledger install --approve` printed, then out again with `uninstall`.

A user who installed todoledger in a venv has no `todoledger` on PATH: the agents
here run without it, so only what install wrote (its absolute path) reaches the
ledger. The agent's own command line carries only what connects it to the fake
model; every todoledger setting comes from install. Per agent and route:

- the route's tools reach the model (the MCP tools; for the CLI, the instructions
  naming the command, and the agent's shell tool);
- a scripted write lands (`todowrite`, or the command in the agent's shell);
- the recovery text (a person's item) is in the first request;
- the native list is mirrored where the agent has one;
- the Stop gate blocks once where the agent can block (install --gate-stop): the
  session completes an item, a person then gives it a gate that fails, and the
  first stop is refused with the gate's reason;
- then every file install touched gets a person's edit, uninstall takes back
  todoledger's entries only, and the agent no longer lists the server.

Each cell is written to tests/e2e/results.json, the source of the compatibility
table in docs/agents.md (tests/e2e/results.py), before its asserts run.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.e2e import results
from tests.e2e.agents import AGENTS, BIN, PLAN, RUN_TIMEOUT, Agent, Run, Scratch, ensure_installed, run
from tests.e2e.fakemodel import FakeModel, Step, count_calls, pick_tool
from tests.e2e.test_agents import BLOCKED, GATED, PROMPT, SEEDED, TODOWRITE
from tests.test_uninstall_edited import edit
from todoledger import agents as registry
from todoledger.install import teach
from todoledger.install.runner import _load

pytestmark = [pytest.mark.agents, pytest.mark.xdist_group("e2e-agents")]

ROUTES = ("mcp", "cli", "both")
GATE = "cmd:false"
GATES = ("claude", "codex", "gemini")  # opencode has no hook that can block a stop
SHELL_ADDED = "Write the parser from the shell"

# Every note install prints after --approve, by its start: what the test does about it.
# A note not listed here is a step this test would not follow: the test fails on it.
NOTES: dict[str, dict[str, str]] = {
    "any": {
        "this todoledger (": "informs: the absolute path install wrote (no step)",
    },
    "claude": {
        "Claude Code: newer models": "followed: CLAUDE_CODE_ENABLE_TODO_TOOLS=1 for the native list",
        "Claude Code: this folder is not trusted yet": "interactive only: `claude -p` skips the dialog",
    },
    "codex": {
        "Codex: 0.171 offers no native plan tool": "informs: no native list to mirror (no step)",
        "Codex: update_goal(complete) cannot be refused": "informs: what the Stop gate holds (no step)",
    },
    "gemini": {
        "Gemini CLI: the first session warns once": "informs: the hooks run after one warning (no step)",
    },
    "opencode": {
        "opencode: the todo.updated event exists only": "informs: native list on 1.x, no Stop gate (no step)",
    },
}
# Why a column is "—" for an agent, and the words of install's output that say so.
NOT_THERE = {
    ("codex", "native"): ("0.171 offers no native plan tool (update_plan is opt-in)", "no native plan tool"),
    ("opencode", "gate"): ("no hook that can block a stop", "no hook that can block a stop"),
}


@dataclass
class GatingModel(FakeModel):
    """The fake model, and a person who gates the agent's completed item just before
    the model's call number `gate_before` (the turn's end)."""

    scratch: Scratch | None = None
    item: str = ""
    gate_before: int = -1
    gated: list[str] = field(default_factory=list)

    def answer(self, api: str, path: str, body: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
        if not self.gated and self.scratch is not None and count_calls(api, body) == self.gate_before:
            added = person(self.scratch, "gate", "add", self.item, GATE)
            assert added.returncode == 0, added.describe()
            self.gated.append(self.item)
        return super().answer(api, path, body)


def person(scratch: Scratch, *args: str) -> Run:
    """A person's todoledger (this venv's, by path), in the project."""
    return run([str(BIN / "todoledger"), *args], scratch)


def shell(agent: Agent, command: str) -> Step:
    tool, arg = agent.shell
    return Step(tool, {arg: command, "description": "todoledger"})


def taught_command(scratch: Scratch, agent: Agent) -> str | None:
    """The todoledger command the instructions block teaches the model (its shell runs it)."""
    spec = registry.find(agent.install_as)
    assert spec is not None
    text = (scratch.project / spec.instructions).read_text(encoding="utf-8")
    span = teach.find(text, spec)
    assert span is not None, text
    return teach.command_of(text[span[0] : span[1]])


def script(agent: Agent, route: str, command: str | None, gated: str) -> list[Step]:
    steps: list[Step] = []
    if route in ("mcp", "both"):
        steps += [*agent.find_mcp, Step(TODOWRITE, {"todos": PLAN})]
    if route in ("cli", "both"):
        assert command is not None
        steps.append(shell(agent, f'{command} add "{SHELL_ADDED}"'))
    steps += agent.native
    if route == "mcp":  # the session completes the person's item through its route
        steps.append(Step(TODOWRITE, {"todos": [*PLAN, {"content": GATED, "status": "completed"}]}))
    else:
        assert command is not None
        steps.append(shell(agent, f'{command} done {gated} --evidence "checked by hand"'))
    return steps


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("name", ["claude", "opencode", "codex", "gemini"])
def test_route_following_install_only(name: str, route: str, tmp_path: Path) -> None:
    agent = AGENTS[name]
    reason = ensure_installed(agent)
    if reason is not None:
        pytest.skip(f"{agent.name} could not be installed ({reason}); run tests/e2e/install_agents.sh")
    assert agent.plain is not None
    scratch = Scratch(tmp_path, tmp_path / "home", tmp_path / "project", venv_on_path=False)
    scratch.extra_path = [str(agent.path.parent)]  # the agent is on PATH, todoledger is not
    for folder in (scratch.home, scratch.project, tmp_path / "tmp"):
        folder.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(scratch.project)], check=True)
    flags = ["--route", route, "--approve", *(["--gate-stop"] if name in GATES else [])]
    installed = person(scratch, "install", agent.install_as, *flags)
    assert installed.returncode == 0, installed.describe()
    printed = installed.stdout.splitlines()
    followed = {**NOTES["any"], **NOTES[name]}
    notes = [line.removeprefix("note: ") for line in printed if line.startswith("note: ")]
    unknown = [n for n in notes if not any(n.startswith(start) for start in followed)]
    assert unknown == [], f"install printed a step this test does not follow: {unknown}"
    if name == "codex":
        # --approve asked `codex app-server` for the hooks' hashes: none of its state is left here.
        assert sorted(p.name for p in (scratch.home / ".codex").iterdir()) == ["config.toml"]
    if name == "opencode":
        agent.approve(scratch)  # not an approval: links the plugin SDK opencode would fetch (10-20 s)

    seeded = person(scratch, "add", SEEDED)
    assert seeded.returncode == 0, seeded.describe()
    gated = json.loads(person(scratch, "add", GATED, "--json").stdout)["id"]
    command = taught_command(scratch, agent) if route != "mcp" else None
    steps = script(agent, route, command, gated)
    fake = GatingModel(steps, scratch=scratch, item=gated, gate_before=len(steps) if name in GATES else -1)
    env = dict(agent.native_env)  # Claude Code: the note's CLAUDE_CODE_ENABLE_TODO_TOOLS=1
    try:
        scratch.url = fake.start()
        argv, extra = agent.plain(scratch, PROMPT)
        session = run(argv, scratch, {**extra, **env}, timeout=RUN_TIMEOUT)
    finally:
        fake.stop()
    (tmp_path / "requests.json").write_text(fake.dump(), encoding="utf-8")
    shown = person(scratch, "show", "--json")
    ledger = json.loads(shown.stdout)["items"] if shown.returncode == 0 else []
    why = f"{agent.name} {agent.version()} {route}\n{session.describe()}\n" + "\n".join(
        f"{r.api} -> {r.answered}: {r.tools()[:40]}" for r in fake.requests
    )

    # Kept without this machine's paths: the file is committed, and reruns change no line.
    output = [line.replace(str(tmp_path), "<scratch>").replace(str(BIN), "<venv>/bin") for line in printed]
    cell = observe(agent, route, fake, ledger, command, gated, output)
    results.record(cell)
    for key, _ in results.COLUMNS:
        if key not in cell:  # the panel column: tests/e2e/test_panel_agents.py observes it
            continue
        assert cell[key]["ok"] is not False, f"{key}: {cell[key]['why']}\n{why}"
    assert session.returncode == 0, why
    assert hook_log(scratch) == "", why

    uninstall_after_edits(agent, route, scratch)


def observe(
    agent: Agent,
    route: str,
    fake: GatingModel,
    ledger: list[dict[str, Any]],
    command: str | None,
    gated: str,
    printed: list[str],
) -> dict[str, Any]:
    """What this run showed, column by column: ok True (✔), False (✘), None (— not there)."""
    asked = fake.agent_requests()
    first = asked[0].text() if asked else ""
    items = {i["content"]: i for i in ledger}
    cell: dict[str, Any] = {
        "agent": agent.install_as,
        "label": registry.find(agent.install_as).label,  # type: ignore[union-attr]
        "version": agent.version().rpartition("@")[2],
        "route": route,
        "install_output": printed,
    }
    # Tools: the MCP tools offered; the CLI taught in the first request, next to the shell tool.
    seen = []
    ok = bool(asked)
    if route in ("mcp", "both"):
        offered = any(pick_tool(TODOWRITE, r.tools()) for r in asked)
        deferred = not pick_tool(TODOWRITE, asked[0].tools()) if asked else False
        seen.append("MCP" + (" (deferred: tool search)" if deferred else ""))
        ok &= offered
    if route in ("cli", "both"):
        taught = command is not None and f"`{command} show --json`" in first.replace("\\n", "\n")
        has_shell = any(agent.shell[0] in r.tools() for r in asked)
        seen.append(f"CLI via `{agent.shell[0]}`")
        ok &= taught and has_shell
    cell["tools"] = {"ok": ok, "how": ", ".join(seen), "why": "not offered to the model"}
    # Plan: the route's write is in the ledger, as the agent's.
    landed = True
    how = []
    if route in ("mcp", "both"):
        landed &= all(
            p["content"] in items and items[p["content"]]["created_by"].startswith("mcp:") for p in PLAN
        )
        how.append("`todowrite`")
    if route in ("cli", "both"):
        row = items.get(SHELL_ADDED)
        landed &= row is not None and row["created_by"].startswith(f"agent-shell:{agent.install_as}")
        how.append("shell `add`")
    done = items.get(GATED, {})
    landed &= done.get("status") == "completed"
    cell["plan"] = {"ok": landed, "how": ", ".join(how), "why": "the write did not land"}
    cell["recovery"] = {
        "ok": SEEDED in first,
        "how": "",
        "why": "the person's item was not in the first request",
    }
    # The native list, where the agent has one.
    if agent.native:
        mirrored = all(
            text in items
            and items[text]["status"] == status
            and not items[text]["created_by"].startswith("mcp:")
            for text, status in agent.native_items.items()
        )
        tool = agent.native[-1].tool
        cell["native"] = {"ok": mirrored, "how": f"`{tool}`", "why": f"{tool} was not mirrored"}
    else:
        why, words = NOT_THERE[(agent.name, "native")]
        cell["native"] = {"ok": None, "how": "", "why": why, "explained_by": words}
    # The Stop gate, where the agent can block.
    if agent.name in GATES:
        turns = [r for r in asked if r.answered == "text"]
        blocked = [r for r in turns if BLOCKED in r.text()]
        once = (
            bool(fake.gated)
            and len(blocked) == 1
            and gated in blocked[0].text()
            and GATE in blocked[0].text()
            and turns.index(blocked[0]) == 1
            and len(turns) == 2
        )
        how = "`todowrite` done" if route == "mcp" else "shell `done`"
        cell["gate"] = {"ok": once, "how": how, "why": "the stop was not blocked exactly once with the gate"}
    else:
        why, words = NOT_THERE[(agent.name, "gate")]
        cell["gate"] = {"ok": None, "how": "", "why": why, "explained_by": words}
    return cell


def hook_log(scratch: Scratch) -> str:
    logs = [
        scratch.project / ".todoledger" / "hook.log",
        scratch.home / ".local" / "state" / "todoledger" / "hook.log",
    ]
    text = "".join(p.read_text(encoding="utf-8") for p in logs if p.exists())
    # The mirror warns of a completion whose gate a person added later: that is no error.
    return "\n".join(line for line in text.splitlines() if "reported completed" not in line)


def uninstall_after_edits(agent: Agent, route: str, scratch: Scratch) -> None:
    """A person edits every file install touched (opencode.json already holds the test's
    provider block); uninstall takes back only todoledger's; the agent lists no server."""
    touched = [Path(p) for p in _load(scratch.home, scratch.project)["agents"][agent.install_as]["files"]]
    for path in touched:
        if path.exists():
            edit(path)
    out = person(scratch, "uninstall", agent.install_as)
    assert out.returncode == 0, out.describe()
    assert "left as it is" not in out.stdout, out.describe()
    for path in touched:
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        assert "todoledger" not in text.replace("mine ✓", ""), (path, text)
    if route == "cli":
        return
    listed = {
        "claude": ["mcp", "list"],
        "codex": ["mcp", "list"],
        "gemini": ["mcp", "list"],
        "opencode": ["mcp", "list"],
    }[agent.name]
    shown = run([str(agent.path), *listed], scratch, timeout=60)
    assert "todoledger" not in shown.stdout + shown.stderr, shown.describe()
