"""The real Claude Code and Gemini CLI run person-only todoledger verbs through
their own shell tool, against the fake model (issue 17, "Real agents").

The model's shell calls: `todoledger gate remove <check>` and `todoledger
approve <item>` as written (the pre-tool screen that `install` wires denies
them before they run), the same verbs with the command's name hidden from the
screen (`T=todoledger; "$T" ...`: the ledger itself refuses them, because the
process is `agent-shell:<agent>`), and `todoledger show --json`, which
succeeds from the same shell. The model receives each refusal line in its tool
result; the ledger shows nothing removed and nothing approved.

The test's agent config allows the shell tool (`--allowedTools Bash`, Gemini's
`--allowed-tools run_shell_command`) and PATH holds this venv's `todoledger`, so
the harness does not refuse the command before todoledger sees it.

On a ledger signed by a person (issue 29), each of the four agents' shell tool
runs `setsid -f script -qc "todoledger approve ID" /dev/null` (and `setsid -w`):
the model receives todoledger's refusal, and nothing is approved.
"""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import TESTER_TOKEN, register_tester
from tests.e2e.agents import BIN, CLAUDE, CODEX, GEMINI, OPENCODE, Agent, Scratch
from tests.e2e.fakemodel import FakeModel, Step
from tests.e2e.test_agents import start_session, todoledger

pytestmark = [pytest.mark.agents, pytest.mark.xdist_group("e2e-agents")]

SCREENED = "is a person's to run, not an agent's"
SHELL_TOOL = {"claude": "Bash", "gemini": "run_shell_command"}
ALLOW = {
    "claude": ("mcp__todoledger", "mcp__todoledger,Bash"),
    "gemini": (",write_todos", ",write_todos,run_shell_command"),
}
KIND = {"claude": "claude-code", "gemini": "gemini"}


def allowing_the_shell(agent: Agent) -> Agent:
    """The agent's scripted run, with its shell tool allowed in non-interactive mode."""
    old, new = ALLOW[agent.name]

    def command(s: Scratch, prompt: str) -> tuple[list[str], dict[str, str]]:
        argv, env = agent.command(s, prompt)
        return [a.replace(old, new) if old in a else a for a in argv], env

    return dataclasses.replace(agent, command=command)


@pytest.mark.parametrize("agent", [CLAUDE, GEMINI], ids=lambda a: a.name)
def test_agent_shell_cannot_remove_a_gate_or_approve(agent: Agent, tmp_path: Path) -> None:
    seeded: dict[str, str] = {}

    def model(scratch: Scratch, _: list[Step]) -> FakeModel:
        added = todoledger(scratch, "add", "Ship the release", "--needs-approval", "--json")
        assert added.returncode == 0, added.describe()
        seeded["item"] = json.loads(added.stdout)["id"]
        gate = todoledger(scratch, "gate", "add", seeded["item"], "cmd:false", "--json")
        assert gate.returncode == 0, gate.describe()
        seeded["check"] = json.loads(gate.stdout)["id"]
        item, check = seeded["item"], seeded["check"]
        shell = SHELL_TOOL[agent.name]
        commands = [
            f"todoledger gate remove {check}",
            f"todoledger approve {item}",
            f'T=todoledger; "$T" gate remove {check}',
            f'T=todoledger; "$T" approve {item}',
            "todoledger show --json",
        ]
        return FakeModel([Step(shell, {"command": c, "description": "todoledger"}) for c in commands])

    session = start_session(allowing_the_shell(agent), tmp_path, [], model=model)
    assert session.run.returncode == 0, session.why()
    requests = session.fake.agent_requests()
    assert len(requests) >= 6, session.why()  # five shell calls answered, then the final text
    told = requests[-1].text()  # the last request carries every tool result the model received
    kind = KIND[agent.name]
    # The screen denied the plain commands, and said why ...
    assert told.count(SCREENED) >= 2, told[-4000:]
    # ... and the ledger refused the hidden ones: todoledger's own line, naming the agent's shell.
    assert f"gate remove: a person must run it, not agent-shell:{kind}" in told, told[-4000:]
    assert f"approve: a person must run it, not agent-shell:{kind}" in told, told[-4000:]
    # `show` succeeded from the same shell: the item's text came back.
    assert "Ship the release" in told and "waits_on_cancelled" in told, told[-4000:]
    # Nothing removed, nothing approved, nobody recorded as a person.
    checks = todoledger(session.scratch, "gate", "list", "--json")
    assert [c["id"] for c in json.loads(checks.stdout)] == [seeded["check"]]
    history = json.loads(todoledger(session.scratch, "history", "--json").stdout)
    assert not [ev for ev in history if ev["field"] in ("approved", "plan_approved")]
    assert not [ev for ev in history if ev["writer"].startswith("cli:")]


# What `todoledger mcp` sees above itself, recorded by a probe that then becomes the
# server (`os.execv` keeps the process, and so its parent): the harness's own launch.
# Run from the agent's shell tool with --report, the same question from inside it.
PROBE = """
import json, os, sys
from todoledger.identity import shell_above
found = shell_above()
if sys.argv[2] == "--report":
    print("SHELL_ABOVE=" + json.dumps(found))
    sys.exit(0)
with open(sys.argv[1], "w") as fh:
    json.dump(found, fh)
os.execv(sys.argv[2], [sys.argv[2], "mcp"])
"""


def _point_mcp_at(agent: Agent, scratch: Scratch, argv: list[str]) -> None:
    """The agent's installed todoledger server entry, started through `argv` instead."""
    path = scratch.project / (".mcp.json" if agent.name == "claude" else ".gemini/settings.json")
    config = json.loads(path.read_text())
    entry = config["mcpServers"]["todoledger"]
    entry["command"], entry["args"] = argv[0], argv[1:]
    path.write_text(json.dumps(config, indent=2))


@pytest.mark.parametrize("agent", [CLAUDE, GEMINI], ids=lambda a: a.name)
def test_the_harness_launch_is_not_its_shell_and_its_shell_is(agent: Agent, tmp_path: Path) -> None:
    """Design check for the approval prompt over stdio: the real harness starts its
    MCP server with its marker in the server's environment, but no process above the
    server carries one, so the server's prompt is its user's. A process its shell tool
    starts has the agent's shell above it, markers unset or not."""
    import sys

    from tests.e2e.agents import BIN, PLAN
    from tests.e2e.test_agents import TODOWRITE

    seen = tmp_path / "seen.json"
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)

    def model(scratch: Scratch, _: list[Step]) -> FakeModel:
        _point_mcp_at(agent, scratch, [sys.executable, str(probe), str(seen), str(BIN / "todoledger")])
        shell = SHELL_TOOL[agent.name]
        report = f"env -u CLAUDECODE -u GEMINI_CLI {sys.executable} {probe} x --report"
        return FakeModel(
            [
                *agent.find_mcp,
                Step(TODOWRITE, {"todos": PLAN}),
                Step(shell, {"command": report, "description": "probe"}),
            ]
        )

    session = start_session(allowing_the_shell(agent), tmp_path, [], model=model)
    assert session.run.returncode == 0, session.why()
    assert seen.exists(), session.why()
    assert json.loads(seen.read_text()) is None  # the harness's own launch: its user answers
    told = session.fake.agent_requests()[-1].text()
    at = told.find("SHELL_ABOVE=")
    assert at >= 0, told[-3000:]
    assert f"{KIND[agent.name]}" in told[at : at + 80].replace("\\", ""), told[at : at + 200]


# --- A signed ledger (issue 29): a terminal of the agent's own is no person --------
PASSPHRASE = "e2e correct horse battery staple"
# What the model's shell runs (`T=` hides the name from the pre-tool screen, so that
# the ledger itself answers): the issue's `setsid -f` line, whose pseudo-terminal is
# detached from the agent's shell (reparented away from it; `| cat` still brings its
# output back), and `setsid -w`, which stays below the shell. Each types a guess at
# the passphrase prompt (script reads a pipe; /dev/null it would ignore, and the
# prompt would wait for ever). Each call ends with a marker that its command text
# does not hold (`2""9` prints 29), so that the refusal found before it is the tool's
# output, not the model's own command. No `$(...)` and no redirection: Gemini CLI
# asks for confirmation (refused in -p mode) or blocks them. `T` is the venv's
# todoledger by its absolute path, as install writes it: Codex's shell resets PATH.
DETACHED = 'T={todoledger}; echo letmein-guess | setsid -f script -qc "$T approve {item}" /dev/null | cat; echo end-of-detached-2""9'
WAITED = 'T={todoledger}; echo letmein-guess | setsid -w script -qc "$T approve {item}" /dev/null; echo end-of-waited-2""9'
# todoledger's line: no passphrase reached the prompt (the guess was typed before it,
# and the prompt flushes what was typed ahead), or a wrong one did.
REFUSED = r"(?:no passphrase was typed at the terminal|wrong passphrase for ann's key): nothing was done"
REFUSED += r"[\s\S]{0,300}end-of-%s-29"


def sign_the_ledger(scratch: Scratch) -> None:
    """`person init ann` by the person, the passphrase through --passphrase-fd (never the
    environment); the key lands in the scratch HOME's config folder. The ledger is the
    project's own: its `.todoledger/` folder is made first, so that no `.todoledger/`
    in a folder above the scratch one (a shared /tmp) is signed instead."""
    (scratch.project / ".todoledger").mkdir(exist_ok=True)
    # The person's route without a terminal here: their registered token (an agent's shell or a
    # plain script cannot register the first key).
    register_tester(scratch.project / ".todoledger" / "ledger.db")
    typed = scratch.root / "typed"
    typed.write_text(PASSPHRASE + "\n", encoding="utf-8")
    with open(typed, "rb") as handle:
        done = subprocess.run(
            [str(BIN / "todoledger"), "person", "init", "ann", "--passphrase-fd", str(handle.fileno())],
            cwd=scratch.project,
            env={**scratch.env(), "TODOLEDGER_TOKEN": TESTER_TOKEN},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
            pass_fds=(handle.fileno(),),
        )
    assert done.returncode == 0 and "this ledger is signed" in done.stdout, done.stdout + done.stderr


def allowing_any_shell(agent: Agent) -> Agent:
    """Claude Code and Gemini CLI need their shell tool allowed in -p mode; Codex and
    opencode run it as installed."""
    return allowing_the_shell(agent) if agent.name in ALLOW else agent


@pytest.mark.sqlite_only  # the agents' ledger is the project's own file, whatever the backend
@pytest.mark.parametrize("agent", [CLAUDE, CODEX, GEMINI, OPENCODE], ids=lambda a: a.name)
def test_agent_terminal_cannot_approve_on_a_signed_ledger(agent: Agent, tmp_path: Path) -> None:
    """Each agent's shell tool runs `setsid -f script -qc "todoledger approve ID"
    /dev/null` (and the same with `setsid -w` and a guessed passphrase) against a
    ledger signed by ann: the model receives todoledger's refusal, and nothing is
    approved."""
    seeded: dict[str, str] = {}

    def model(scratch: Scratch, _: list[Step]) -> FakeModel:
        sign_the_ledger(scratch)
        added = todoledger(scratch, "add", "Ship the release", "--needs-approval", "--json")
        assert added.returncode == 0, added.describe()
        seeded["item"] = item = json.loads(added.stdout)["id"]
        tool, arg = agent.shell
        path = str(BIN / "todoledger")
        commands = [c.format(todoledger=path, item=item) for c in (DETACHED, WAITED)]
        return FakeModel([Step(tool, {arg: c, "description": "todoledger"}) for c in commands])

    session = start_session(allowing_any_shell(agent), tmp_path, [], model=model)
    assert session.run.returncode == 0, session.why()
    requests = session.fake.agent_requests()
    assert len(requests) >= 3, session.why()  # two shell calls answered, then the final text
    told = requests[-1].text()  # the last request carries every tool result the model received
    # todoledger's own refusal line reached the model, from both terminals.
    for call in ("detached", "waited"):
        assert re.search(REFUSED % call, told), told[-4000:]
    # Nothing approved, nobody recorded as a person.
    history = json.loads(todoledger(session.scratch, "history", "--json").stdout)
    assert not [ev for ev in history if ev["field"] in ("approved", "plan_approved")], history
    assert not [ev for ev in history if ev["writer"].startswith("cli:") and ev["item"] == seeded["item"]]
