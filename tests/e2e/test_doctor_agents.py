"""`todoledger doctor` on broken installs, with the real agent CLIs on PATH: one
case per way the plan stops reaching the agent (issue 19, Why point 5), each
with its fix line and the exit status."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest

from tests.e2e.agents import AGENTS, BIN, Run, Scratch, ensure_installed, run

pytestmark = [pytest.mark.agents, pytest.mark.xdist_group("e2e-agents")]


def scratch_with(names: list[str], root: Path) -> Scratch:
    for name in names:
        reason = ensure_installed(AGENTS[name])
        if reason is not None:
            pytest.skip(f"{name} could not be installed ({reason})")
    scratch = Scratch(root, root / "home", root / "project")
    scratch.extra_path = [str(AGENTS[n].path.parent) for n in names]
    for folder in (scratch.home, scratch.project, root / "tmp"):
        folder.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(scratch.project)], check=True)
    return scratch


def todoledger(scratch: Scratch, *args: str) -> Run:
    return run([str(BIN / "todoledger"), *args], scratch, timeout=120)


def fixes(out: str) -> dict[str, str]:
    """Doctor's problems: each line `error: ...`/`warning: ...` with the fix line under it."""
    lines = out.splitlines()
    found = {}
    for n, line in enumerate(lines):
        if line.startswith(("error: ", "warning: ")):
            fix = lines[n + 1].strip() if n + 1 < len(lines) else ""
            found[line] = fix.removeprefix("fix: ") if fix.startswith("fix: ") else ""
    return found


@pytest.mark.parametrize(
    ("name", "settings"), [("claude", ".claude/settings.json"), ("gemini", ".gemini/settings.json")]
)
def test_a_removed_session_start_hook_is_an_error_with_its_fix(
    name: str, settings: str, tmp_path: Path
) -> None:
    scratch = scratch_with([name], tmp_path)
    agent = AGENTS[name].install_as
    assert todoledger(scratch, "install", agent, "--approve").returncode == 0
    healthy = todoledger(scratch, "doctor")
    assert healthy.returncode == 0, healthy.describe()
    path = scratch.project / settings
    data = json.loads(path.read_text())
    del data["hooks"]["SessionStart"]
    path.write_text(json.dumps(data, indent=2))
    broken = todoledger(scratch, "doctor")
    assert broken.returncode == 1, broken.describe()
    label = {"claude": "Claude Code", "gemini": "Gemini CLI"}[name]
    want = f"error: {label}: no todoledger SessionStart hook, so the plan does not reach a new session"
    assert fixes(broken.stdout).get(want) == f"todoledger install {agent}", broken.describe()
    assert broken.stdout.splitlines()[-1] == "broken: see the errors above"


def test_an_agent_configured_here_but_missing_from_path_gets_its_fix(tmp_path: Path) -> None:
    scratch = scratch_with(["claude"], tmp_path)
    assert todoledger(scratch, "install", "claude-code", "--approve").returncode == 0
    scratch.extra_path = []  # Claude Code is gone from this machine; its config is still here
    out = todoledger(scratch, "doctor")
    found = fixes(out.stdout)
    line = "warning: Claude Code is configured here but `claude` is not on PATH"
    assert found[line] == (
        "install Claude Code (npm install -g @anthropic-ai/claude-code), or take todoledger out of "
        "this project's config: todoledger uninstall claude-code"
    ), out.describe()
    assert "Claude Code: not on PATH" not in out.stdout


def test_a_damaged_ledger_is_said_once_and_the_server_line_does_not_vouch_for_it(tmp_path: Path) -> None:
    scratch = scratch_with(["claude"], tmp_path)
    assert todoledger(scratch, "install", "claude-code", "--approve").returncode == 0
    for n in range(60):
        assert todoledger(scratch, "add", f"item {n} " + "x" * 300).returncode == 0
    db = scratch.project / ".todoledger" / "ledger.db"
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    with db.open("r+b") as fh:  # a torn page in the middle of the file
        fh.seek(4096 * 20 + 100)
        fh.write(b"\xff" * 3000)
    out = todoledger(scratch, "doctor")
    assert out.returncode == 1, out.describe()
    damaged = [line for line in out.stdout.splitlines() if "damaged" in line and line.startswith("error")]
    assert len(damaged) == 1 and damaged[0].count("damaged") == 1, out.stdout
    server = next(line for line in out.stdout.splitlines() if line.startswith("server `"))
    assert "reads the ledger" not in server and "not sound" in server, server
    assert fixes(out.stdout)[damaged[0]].startswith(f"move {db} aside and restore it from a backup")
