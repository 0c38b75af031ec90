"""The real Claude Code and Codex get todoledger's tools in the model's first turn
while the machine is loaded on purpose (issue 30).

The test starts 2 x nproc busy processes (at the agents' own priority), then runs
each agent 5 times, each in a fresh scratch project and HOME set up only by what
`todoledger install <agent> --route mcp --approve` wrote; the fake model's first
answer is the agent's own tool search for the four hot tools. All 5 runs of each
agent must get all four tools back from that search. Codex (`required = true`, as
install writes it) waits for the server, so its first request must also name the
`mcp__todoledger` namespace. Claude Code 2.1.332 does not wait in `-p` mode: its
first request lists a server's tools only once the server has answered, else names
it as still connecting, and its ToolSearch then waits about 5 s for it. A server
that has not answered by then leaves the model without its tools: "No matching
deferred tools found. Some MCP servers are still connecting: todoledger".

The load, measured on this project's 2-core machine (tests/e2e/loaded_machine.json;
load average: the 1-minute figure during the runs, other sessions' work included):

- The code before the lean start (49d970f~1: the SDK imported before any answer):
  with 4 burners (2 x nproc; load average 8.7-13.2) Claude Code missed the tools in
  8 of 15 runs (this test, as it stands, failed there: 3 of 5); with 8 burners (load
  10.2-10.9) in 1 of 5; with 0 or 2 burners in none of 10. Codex got them in all 15
  runs at 4, 8 and 16 burners (load up to 21.7): it waits for a required server.
- The first lean start (49d970f) still handed Claude Code's second message,
  `subscriptions/listen`, to the SDK path: 1 of 10 runs missed at 4 burners, 3 of 5
  at 8. Since the lean path acknowledges the listen itself (be33ede): 10 of 10 at 4
  burners (load 6.8-10.4, all 10 with the tools in the first request) and 5 of 5 at
  8 (load 11-15.8); Codex 10 of 10 and 5 of 5.

So the test runs at 2 x nproc, where the old code failed most often. On 2 cores it
takes 2.2-2.6 minutes, about 1.6 of them Codex's runs with their installs. The
variables TODOLEDGER_E2E_BURNERS, TODOLEDGER_E2E_LOADED_RUNS and
TODOLEDGER_E2E_LOADED_LOG (one JSON line per run) are for measuring, as above; CI
uses the defaults.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.agents import AGENTS, BIN, RUN_TIMEOUT, Agent, Scratch, ensure_installed, run
from tests.e2e.fakemodel import FakeModel, Logged, Step, pick_tool

# Its own group: one worker runs these runs one after another, never beside each other.
pytestmark = [pytest.mark.slow, pytest.mark.agents, pytest.mark.xdist_group("e2e-loaded")]

CORES = os.cpu_count() or 1
BURNERS = int(os.environ.get("TODOLEDGER_E2E_BURNERS") or 2 * CORES)
RUNS = int(os.environ.get("TODOLEDGER_E2E_LOADED_RUNS") or 5)
LOG = os.environ.get("TODOLEDGER_E2E_LOADED_LOG")
BURN_AT_MOST = 900  # seconds: a burner ends by itself even if this process is killed
HOT = ("todowrite", "todoread", "plan_next", "plan_update")
PROMPT = "Plan the parser work with the todo tool."
# The model's first answer: the agent's tool search for the four hot tools.
SEARCH = {
    "claude": Step("ToolSearch", {"query": "select:" + ",".join(f"mcp__todoledger__{t}" for t in HOT)}),
    "codex": Step("tool_search", {"query": "todoledger " + " ".join(HOT), "limit": 8}),
}


@contextmanager
def burners(count: int) -> Iterator[None]:
    """`count` busy processes at the agents' own priority, each spinning on a core."""
    spin = f"import time\nend = time.monotonic() + {BURN_AT_MOST}\nwhile time.monotonic() < end: pass"
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for _ in range(count):
            procs.append(subprocess.Popen([sys.executable, "-c", spin], stdin=subprocess.DEVNULL))
        yield
    finally:
        for proc in procs:
            proc.kill()
        for proc in procs:
            proc.wait()


def installed(agent: Agent, root: Path) -> Scratch:
    """A scratch project and HOME set up only by what `todoledger install --approve` wrote;
    this venv's `todoledger` is not on the agent's PATH."""
    scratch = Scratch(root, root / "home", root / "project", venv_on_path=False)
    scratch.extra_path = [str(agent.path.parent)]
    for folder in (scratch.home, scratch.project, root / "tmp"):
        folder.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(scratch.project)], check=True)
    done = run([str(BIN / "todoledger"), "install", agent.install_as, "--route", "mcp", "--approve"], scratch)
    assert done.returncode == 0, done.describe()
    return scratch


def listed_first(name: str, first: Logged) -> str:
    """How the first request offers todoledger: "tools" (its tools, callable or
    deferred by name; for Codex, its deferred namespace), "connecting" (Claude Code
    names the server as still connecting), or "" (not at all). The instructions
    install wrote name the tools too: they are not read here."""
    if any(pick_tool(("todoledger", t), first.tools()) for t in HOT):
        return "tools"
    text = "\n".join(_texts(first.body))
    if name == "claude":
        deferred = re.search(r"deferred tools are now available via ToolSearch.*?:\n(.*?)\n\n", text, re.S)
        if deferred and all(f"mcp__todoledger__{t}" in deferred.group(1).split() for t in HOT):
            return "tools"
        connecting = re.search(r"MCP servers are still connecting.*?:\n(.*?)\n\n", text, re.S)
        return "connecting" if connecting and "todoledger" in connecting.group(1).split() else ""
    namespaces = re.search(r"Deferred tool namespaces:\n(.*?)</tools>", text, re.S)
    return "tools" if namespaces and "- mcp__todoledger:" in namespaces.group(1) else ""


def _texts(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _texts(v)
    elif isinstance(value, list):
        for v in value:
            yield from _texts(v)


def found_by_search(asked: list[Logged]) -> list[str]:
    """The hot tools the agent offers once its tool search ran (the model's second call)."""
    after = asked[1].tools() if len(asked) > 1 else []
    return [t for t in HOT if pick_tool(("todoledger", t), after)]


def one_run(name: str, agent: Agent, root: Path) -> dict[str, Any]:
    assert agent.plain is not None
    scratch = installed(agent, root)
    fake = FakeModel([SEARCH[name]])
    load_before, started = os.getloadavg()[0], time.monotonic()
    try:
        scratch.url = fake.start()
        argv, extra = agent.plain(scratch, PROMPT)
        try:
            session = run(argv, scratch, extra, timeout=RUN_TIMEOUT)
            ended, tail = str(session.returncode), session.stderr[-300:]
        except subprocess.TimeoutExpired:  # a run that never asked twice: it did not get the tools
            ended, tail = f"killed after {RUN_TIMEOUT} s", ""
    finally:
        fake.stop()
    (root / "requests.json").write_text(fake.dump(), encoding="utf-8")
    asked = fake.agent_requests()
    return {
        "agent": agent.install_as,
        "version": agent.version().rpartition("@")[2],
        "burners": BURNERS,
        "cores": CORES,
        "load1_before": round(load_before, 2),
        "load1_after": round(os.getloadavg()[0], 2),
        "seconds": round(time.monotonic() - started, 1),
        "exit": ended,
        "first_request": listed_first(name, asked[0]) if asked else "no request",
        "after_search": found_by_search(asked),
        "requests": [f"{r.api}->{r.answered}" for r in fake.requests],
        "stderr_tail": tail,
    }


@pytest.mark.parametrize("name", ["claude", "codex"])
def test_agent_gets_the_tools_on_a_loaded_machine(name: str, tmp_path: Path) -> None:
    agent = AGENTS[name]
    reason = ensure_installed(agent)
    if reason is not None:
        pytest.skip(f"{agent.name} could not be installed ({reason}); run tests/e2e/install_agents.sh")
    seen: list[dict[str, Any]] = []
    with burners(BURNERS):
        for i in range(RUNS):
            entry = {"run": i + 1, **one_run(name, agent, tmp_path / f"run{i + 1}")}
            seen.append(entry)
            if LOG:
                with open(LOG, "a", encoding="utf-8") as f:
                    f.write(json.dumps(entry) + "\n")
    first_turn = ("tools",) if name == "codex" else ("tools", "connecting")
    missed = [e for e in seen if e["after_search"] != list(HOT) or e["first_request"] not in first_turn]
    assert missed == [], f"{len(missed)} of {RUNS} runs without the tools:\n" + json.dumps(seen, indent=1)
