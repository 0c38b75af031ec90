"""Doctor's fix lines keep the install as it was (issue 31, part 7): each fix line, run
as printed, makes its problem go away and changes nothing else: the recorded route,
--gate-stop and the command stay; the PATH fix converges (.mcp.json names the command
that runs). Real subprocesses, a project and a HOME of their own."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.sqlite_only

BIN = Path(sys.executable).parent
HERE = str(BIN / "todoledger")


def env_for(tmp_path: Path) -> dict[str, str]:
    out = {
        k: v for k, v in os.environ.items() if not k.startswith(("TODOLEDGER_", "CLAUDE", "CODEX", "GEMINI"))
    }
    out.update(
        HOME=str(tmp_path / "home"),
        PATH=f"{BIN}:/usr/bin:/bin",
        TODOLEDGER_DB=str(tmp_path / "project" / ".todoledger" / "ledger.db"),
    )
    return out


def sh(tmp_path: Path, line: str) -> str:
    proc = subprocess.run(
        ["bash", "-c", line],
        cwd=tmp_path / "project",
        env=env_for(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, f"{line}: {proc.stdout}{proc.stderr}"
    return proc.stdout


def problems(tmp_path: Path) -> dict[str, str]:
    report = json.loads(sh(tmp_path, "todoledger doctor --json || true"))
    agent = next(a for a in report["agents"] if a["name"] == "claude-code")
    return {p["what"]: p["fix"] for p in agent.get("problems", [])}


def recorded(tmp_path: Path) -> dict[str, Any]:
    from todoledger.install.runner import installed

    return dict(installed(tmp_path / "home", tmp_path / "project")["claude-code"])


def hooks(tmp_path: Path) -> set[str]:
    settings = json.loads((tmp_path / "project" / ".claude" / "settings.json").read_text())
    return set(settings.get("hooks", {}))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "home").mkdir()
    (tmp_path / "project").mkdir()
    subprocess.run(["git", "init", "-q"], cwd=tmp_path / "project", check=True)
    return tmp_path


def install_part(fix: str) -> str | None:
    found = re.search(r"todoledger install [^();]+", fix)
    return found.group(0).strip() if found else None


def test_each_fix_line_run_as_printed_removes_its_problem_and_keeps_the_install(project: Path) -> None:
    sh(project, "todoledger install claude-code --route both --gate-stop")
    before_record, before_hooks = recorded(project), hooks(project)
    assert before_record == {"route": "both", "gate_stop": True} | {
        k: v for k, v in before_record.items() if k not in ("route", "gate_stop")
    }
    found = {what: line for what, fix in problems(project).items() if (line := install_part(fix))}
    assert len(found) >= 2, problems(project)  # the server's approval and the folder's trust
    for what, line in found.items():
        assert "--route both" in line and "--gate-stop" in line, line
        sh(project, line)
        assert what not in problems(project), (what, line)
        after = recorded(project)
        assert (after["route"], after["gate_stop"]) == ("both", True), line  # the install as it was
        assert hooks(project) >= before_hooks, line  # the Stop gate and every hook stay


def test_the_path_fix_converges_on_the_command_that_runs(project: Path) -> None:
    sh(project, "todoledger install claude-code --route both --gate-stop --command /nowhere/bin/todoledger")
    missing = {w: f for w, f in problems(project).items() if "/nowhere/bin/todoledger" in w}
    (_what, fix), *_ = missing.items()
    line = install_part(fix)
    assert line is not None and f"--command {HERE}" in line and "--gate-stop" in line, fix
    sh(project, line)
    assert not [w for w in problems(project) if "/nowhere/bin/todoledger" in w]
    server = json.loads((project / "project" / ".mcp.json").read_text())["mcpServers"]["todoledger"]
    assert server["command"] == HERE  # the config names the command that runs: it converged
    assert (recorded(project)["route"], recorded(project)["gate_stop"]) == ("both", True)


def test_install_opencode_gate_stop_installs_what_it_can_and_says_what_opencode_lacks(project: Path) -> None:
    out = sh(project, "todoledger install opencode --gate-stop")
    assert "--gate-stop not installed: opencode has no hook that can block a stop" in out
    assert (project / "project" / ".opencode" / "plugins" / "todoledger.js").is_file()
    from todoledger.install.runner import installed

    assert installed(project / "home", project / "project")["opencode"]["gate_stop"] is False  # as it is
