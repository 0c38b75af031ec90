"""`todoledger doctor`: real processes on a machine with and without each
agent. The agents here are small scripts that print a version, as the real
CLIs do for `--version` (the real CLIs run in tests/e2e); the MCP server is
the real `todoledger mcp`, started as the agent would start it."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import todoledger_bin
from todoledger.install import AGENTS, run

VERSIONS = {
    "claude": "2.1.240 (Claude Code)",
    "opencode": "1.18.33",
    "codex": "codex-cli 0.171.0",
    "gemini": "0.61.0",
}


@pytest.fixture
def machine(tmp_path: Path) -> dict[str, Path]:
    dirs = {name: tmp_path / name for name in ("project", "home", "bin")}
    for d in dirs.values():
        d.mkdir()
    return dirs


def fake_agents(bin_dir: Path, versions: dict[str, str] = VERSIONS) -> None:
    for name, text in versions.items():
        script = bin_dir / name
        script.write_text(f"#!/bin/sh\necho '{text}'\n")
        script.chmod(0o755)


def doctor(m: dict[str, Path], **env: str) -> tuple[int, dict[str, Any]]:
    path = os.pathsep.join([str(m["bin"]), str(Path(todoledger_bin()).parent), "/usr/bin", "/bin"])
    full = {
        k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE_CODE_", "TODOLEDGER_", "CODEX_"))
    }
    full.update({"PATH": path, "HOME": str(m["home"]), **env})
    done = subprocess.run(
        [todoledger_bin(), "doctor", "--json", "--project", str(m["project"]), "--home", str(m["home"])],
        capture_output=True,
        text=True,
        env=full,
        timeout=120,
    )
    assert done.stderr == "", done.stderr
    return done.returncode, json.loads(done.stdout)


def agent(report: dict[str, Any], name: str) -> dict[str, Any]:
    (found,) = [a for a in report["agents"] if a["name"] == name]
    return found


def problems(report: dict[str, Any], level: str) -> list[str]:
    every = [*report["problems"], *(p for a in report["agents"] for p in a["problems"])]
    return [p["what"] for p in every if p["level"] == level]


def test_a_machine_without_agents(machine: dict[str, Path]) -> None:
    code, report = doctor(machine)
    assert code == 0 and report["ok"]
    assert report["agents"] == [] and report["servers"] == []
    assert report["ledger"]["exists"] is False
    assert report["ledger"]["health"] == "not created yet (the first write creates it)"


def test_agents_on_path_but_not_installed(machine: dict[str, Path]) -> None:
    fake_agents(machine["bin"])
    code, report = doctor(machine)
    assert code == 0  # nothing is broken: todoledger is simply not set up for them
    assert [a["name"] for a in report["agents"]] == list(AGENTS)
    assert {a["name"]: a["version"] for a in report["agents"]} == {
        "claude-code": "2.1.240",
        "opencode": "1.18.33",
        "codex": "0.171.0",
        "gemini": "0.61.0",
    }
    assert {a["name"]: a["native_todo"] for a in report["agents"]} == {
        "claude-code": "off",
        "opencode": "on",
        "codex": "off",
        "gemini": "on",
    }
    assert len(problems(report, "warning")) == 4
    assert all(p["fix"].startswith("todoledger install ") for a in report["agents"] for p in a["problems"])


def npm_package(root: Path, name: str, version: str, command: str, file: str, said: str) -> Path:
    """An npm install as npm lays it out: the package's folder with its manifest,
    the command's file (a script that leaves a mark when it runs and prints
    `said`), and the link in node_modules/.bin. Returns the link."""
    folder = root / "node_modules" / name
    (folder / file).parent.mkdir(parents=True, exist_ok=True)
    (folder / "package.json").write_text(
        json.dumps({"name": name, "version": version, "bin": {command: file}})
    )
    script = folder / file
    script.write_text(f"#!/bin/sh\ntouch '{root / 'ran'}'\necho '{said}'\n")
    script.chmod(0o755)
    link = root / "node_modules" / ".bin" / command
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(Path("..") / name / file)
    return link


def test_a_version_comes_from_the_manifest_that_declares_the_binary(machine: dict[str, Path]) -> None:
    """An npm install's version is read from the manifest npm wrote with the very
    file on PATH: no agent process runs (a node CLI takes seconds to say it)."""
    root = machine["home"] / "npm"
    link = npm_package(root, "@google/gemini-cli", "0.61.0", "gemini", "bundle/gemini.js", "0.61.0")
    (machine["bin"] / "gemini").symlink_to(link)
    _, report = doctor(machine)
    gemini = agent(report, "gemini")
    assert gemini["version"] == "0.61.0"
    assert gemini["version_from"] == str(root / "node_modules" / "@google" / "gemini-cli" / "package.json")
    assert not (root / "ran").exists()


@pytest.mark.parametrize("case", ["another package", "not its command", "a nearer manifest", "a copy"])
def test_a_manifest_that_may_not_be_the_binarys_is_not_believed(case: str, machine: dict[str, Path]) -> None:
    """Whenever the manifest is not certainly the binary's, the binary itself is
    asked, and what it says is what doctor reports."""
    root = machine["home"] / "npm"
    name = "@google/gemini-cli" if case != "another package" else "gemini-wrapper"
    link = npm_package(root, name, "0.55.0", "gemini", "bundle/gemini.js", "0.61.0")
    folder = root / "node_modules" / name
    if case == "not its command":
        data = json.loads((folder / "package.json").read_text())
        data["bin"] = {"gemini": "bundle/other.js"}
        (folder / "package.json").write_text(json.dumps(data))
    elif case == "a nearer manifest":
        (folder / "bundle" / "package.json").write_text('{"type": "module"}')
    if case == "a copy":
        shutil.copy2(folder / "bundle" / "gemini.js", machine["bin"] / "gemini")
    else:
        (machine["bin"] / "gemini").symlink_to(link)
    _, report = doctor(machine)
    gemini = agent(report, "gemini")
    assert (gemini["version"], gemini["version_from"]) == ("0.61.0", "--version")
    assert (root / "ran").exists()


def test_native_todo_tools_follow_version_and_environment(machine: dict[str, Path]) -> None:
    fake_agents(machine["bin"], {"claude": "2.1.197 (Claude Code)", "opencode": "2.0.1"})
    _, report = doctor(machine)
    assert agent(report, "claude-code")["native_todo"] == "on"
    assert agent(report, "claude-code")["native_why"] == "TaskCreate/TaskUpdate (by version)"
    assert agent(report, "opencode")["native_todo"] == "off"
    fake_agents(machine["bin"], {"claude": "2.1.240 (Claude Code)"})
    _, report = doctor(machine, CLAUDE_CODE_ENABLE_TODO_TOOLS="1", CLAUDE_CODE_ENABLE_TASKS="0")
    assert agent(report, "claude-code")["native_todo"] == "on"
    assert agent(report, "claude-code")["native_why"] == "TodoWrite (CLAUDE_CODE_ENABLE_TODO_TOOLS=1)"


def test_installed_but_not_approved_is_broken_with_the_exact_fix(machine: dict[str, Path]) -> None:
    fake_agents(machine["bin"])
    for name in AGENTS:
        run(name, project=machine["project"], home=machine["home"])
    code, report = doctor(machine)
    assert code == 1 and not report["ok"]
    errors = problems(report, "error")
    assert errors == [
        "Claude Code: the project server `todoledger` is not approved (interactive sessions keep it "
        "'pending approval'; `claude -p` starts it anyway)",
        # Claude Code 2.1.332 ignores a project's permissions.allow in an untrusted folder, `-p` too.
        "Claude Code: this folder is not trusted yet: Claude Code ignores its permissions.allow until it "
        "is (so `claude -p` refuses the todoledger tools) and interactive sessions ask first",
        "Codex ignores this project's .codex/ (server and hooks) until the project is trusted",
        "Codex has no approval of todoledger's hooks: it runs new or changed hooks only after a person "
        "approves them (`/hooks`), so until then no plan at session start",
        # gemini-cli 0.61 has folder trust on unless settings turn it off
        "Gemini CLI: this folder is not trusted: .gemini/settings.json (server and hooks) is ignored, "
        "and `gemini -p` exits 55",
    ]
    claude = agent(report, "claude-code")
    assert claude["problems"][0]["fix"].startswith('add "enabledMcpjsonServers": ["todoledger"]')
    codex = agent(report, "codex")
    assert f'[projects."{machine["project"]}"] trust_level = "trusted"' in codex["problems"][0]["fix"]
    assert codex["hooks_approved"] == "unknown"
    # The server starts and lists its tools (one check: every agent uses the same command).
    (server,) = report["servers"]
    assert server["ok"] and server["command"] == ["todoledger", "mcp"]
    assert server["tools"] == [
        "todowrite",
        "todoread",
        "plan_next",
        "plan_update",
        "plan_verify",
        "plan_sweep",
    ]
    assert {a["name"]: a["hooks"] for a in report["agents"]} == {
        "claude-code": ["PostToolUse", "SessionStart", "PreToolUse"],
        "opencode": ["todo.updated", "session start", "compaction", "shell screen"],
        "codex": ["SessionStart", "Stop", "PreToolUse"],
        "gemini": ["AfterTool", "SessionStart", "PreCompress", "BeforeTool"],
    }


def test_approved_installs_leave_only_what_files_cannot_show(machine: dict[str, Path]) -> None:
    fake_agents(machine["bin"])
    project, home = machine["project"], machine["home"]
    settings = machine["home"] / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"security": {"folderTrust": {"enabled": true}}}')
    for name in AGENTS:
        run(name, project=machine["project"], home=machine["home"], approve=name != "gemini")
    # The fake codex cannot hash the hooks: a person approves them in `/hooks`, which stores this.
    with (home / ".codex" / "config.toml").open("a") as config:
        key = f"{project}/.codex/hooks.json:session_start:0:0"
        config.write(f'\n[hooks.state."{key}"]\ntrusted_hash = "sha256:0"\n')
    code, report = doctor(machine)
    assert problems(report, "error") == [
        "Gemini CLI: this folder is not trusted: .gemini/settings.json (server and hooks) is ignored, "
        "and `gemini -p` exits 55"
    ]
    run("gemini", project=machine["project"], home=machine["home"], approve=True)
    code, report = doctor(machine)
    assert code == 0 and report["ok"]
    assert {a["name"]: a["approved"] for a in report["agents"]} == dict.fromkeys(AGENTS, "yes")
    assert problems(report, "warning") == [
        # The fake codex cannot list its hooks: only the real one says whether it trusts them.
        "Codex runs new or changed hooks only after a person approves them (`/hooks`); whether the "
        "current ones are approved cannot be read from files (run doctor with `codex` on PATH)",
    ]
    settings.write_text('{"security": {"folderTrust": {"enabled": false}}}')
    (home / ".gemini" / "trustedFolders.json").unlink()
    _, report = doctor(machine)
    assert len(problems(report, "warning")) == 1 and agent(report, "gemini")["approved"] == "yes"
    assert agent(report, "gemini")["hooks_approved"] == "yes (warns once)"


def test_a_server_that_does_not_start_is_broken(machine: dict[str, Path]) -> None:
    run("gemini", project=machine["project"], home=machine["home"], command="/nowhere/todoledger")
    code, report = doctor(machine)
    assert code == 1
    gemini = agent(report, "gemini")
    assert gemini["path"] is None  # configured here, not installed on this machine
    whats = [p["what"] for p in gemini["problems"]]
    missing = "Gemini CLI's config names todoledger as '/nowhere/todoledger', which is not there"
    assert [w for w in whats if w.startswith(missing)] == [missing + " (no such executable)"]
    assert report["servers"][0]["ok"] is False
    # One line for it, with one fix: not a second one for the server that cannot start.
    assert not any("the todoledger MCP server does not start" in w for w in whats)


def test_a_damaged_ledger_is_broken(machine: dict[str, Path]) -> None:
    folder = machine["project"] / ".todoledger"
    folder.mkdir()
    (folder / "ledger.db").write_bytes(b"SQLite format 3\x00" + b"\x00" * 200)
    code, report = doctor(machine)
    assert code == 1
    db = folder / "ledger.db"
    assert report["ledger"] == {
        "location": str(db),
        "exists": True,
        "health": f"{db}: not a usable ledger (file is not a database)",
    }
    (problem,) = report["problems"]
    assert (
        problem["fix"] == f"move {db} aside and restore it from a backup (or `todoledger import` an export)"
    )


def test_a_broken_config_is_reported_not_raised(machine: dict[str, Path]) -> None:
    fake_agents(machine["bin"], {"gemini": "0.61.0"})
    (machine["project"] / ".gemini").mkdir()
    (machine["project"] / ".gemini" / "settings.json").write_text("{oops")
    code, report = doctor(machine)
    assert code == 1
    assert any("cannot parse line 1, column 2" in w for w in problems(report, "error"))


def test_human_output(machine: dict[str, Path]) -> None:
    fake_agents(machine["bin"], {"claude": "2.1.240 (Claude Code)"})
    run("claude-code", project=machine["project"], home=machine["home"])
    path = os.pathsep.join([str(machine["bin"]), str(Path(todoledger_bin()).parent), "/usr/bin", "/bin"])
    done = subprocess.run(
        [todoledger_bin(), "doctor", "--project", str(machine["project"]), "--home", str(machine["home"])],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": path},
        timeout=120,
    )
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert "Claude Code: 2.1.240 (" + str(machine["bin"] / "claude") + ")" in lines
    assert (
        "  fix: " + 'add "enabledMcpjsonServers": ["todoledger"] to .claude/settings.local.json '
        in done.stdout
    )
    assert lines[-1] == "broken: see the errors above"


CACHE = Path(os.environ.get("TODOLEDGER_E2E_CACHE") or Path.home() / ".cache" / "todoledger-e2e")
REAL = {
    name: CACHE / folder / "node_modules" / ".bin" / name
    for name, folder in (
        ("claude", "claude"),
        ("opencode", "opencode"),
        ("codex", "codex"),
        ("gemini", "gemini"),
    )
}


@pytest.mark.skipif(
    not all(p.exists() for p in REAL.values()),
    reason=f"the real agent CLIs are not installed in {CACHE} (tests/e2e/install_agents.sh)",
)
def test_real_agents(machine: dict[str, Path]) -> None:
    """The four real CLIs (npm builds the e2e suite installs): their versions, and
    Codex's own word on whether it trusts todoledger's hooks."""
    for name, path in REAL.items():
        (machine["bin"] / name).symlink_to(path)
    project, home = machine["project"], machine["home"]
    for name in AGENTS:
        run(name, project=project, home=home)
    code, report = doctor(machine)
    assert code == 1
    versions = {a["name"]: a["version"] for a in report["agents"]}
    assert all(versions.values()), versions
    # The truth about each binary: what it says itself, wherever doctor read it from.
    for name, path in REAL.items():
        said = subprocess.run([str(path), "--version"], capture_output=True, text=True, timeout=120)
        found = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", said.stdout)
        assert found is not None, said
        assert versions[{"claude": "claude-code"}.get(name, name)] == found.group(0)
    assert "Codex ignores this project's .codex/ (server and hooks) until the project is trusted" in problems(
        report, "error"
    )
    env = {**os.environ, "PATH": os.pathsep.join([str(machine["bin"]), os.environ["PATH"]])}
    saved = os.environ.copy()
    os.environ.update(env)
    try:
        run("codex", project=project, home=home, approve=True)  # asks the real codex for its hashes
    finally:
        os.environ.clear()
        os.environ.update(saved)
    _, report = doctor(machine)
    assert agent(report, "codex")["hooks_approved"] == "yes"
    assert agent(report, "codex")["approved"] == "yes"
    # Changed hooks are untrusted again until approved: Codex says so, and doctor with it.
    run("codex", project=project, home=home, command=str(Path(todoledger_bin())))
    code, report = doctor(machine)
    assert agent(report, "codex")["hooks_approved"] == "no"
    assert any(
        w.startswith("Codex will not run 3 of todoledger's 3 hooks") for w in problems(report, "error")
    )


def test_the_panel_route_is_checked(machine: dict[str, Path]) -> None:
    """`install claude-code --panel`: the list's folder, the variables, the task list not
    switched off, a file written and read back there; and what cannot be seen from files."""
    fake_agents(machine["bin"])
    run(
        "claude-code", project=machine["project"], home=machine["home"], approve=True, panel=True, plan="main"
    )
    _, report = doctor(machine)
    claude = agent(report, "claude-code")
    assert not [p for p in problems(report, "error") if "panel" in p or "CLAUDE_CODE" in p]
    assert any("round trip: a file written and read back" in line for line in claude["panel"]), claude[
        "panel"
    ]
    assert any("does not read files" in line for line in claude["panel"])
    folder = Path(claude["panel"][0].split(", folder ")[1])
    assert [p.name for p in folder.iterdir()] == []  # the probe is gone
    _, report = doctor(machine, CLAUDE_CODE_ENABLE_TASKS="false")
    assert any("CLAUDE_CODE_ENABLE_TASKS=false in the environment" in p for p in problems(report, "error"))
    local = machine["project"] / ".claude" / "settings.local.json"
    data = json.loads(local.read_text())
    del data["env"]["CLAUDE_CODE_ENABLE_TODO_TOOLS"]
    local.write_text(json.dumps(data))
    folder.rmdir()
    code, report = doctor(machine)
    errors = problems(report, "error")
    assert code == 1
    assert any("does not exist: Claude Code shows no external row" in p for p in errors), errors
    assert any("CLAUDE_CODE_ENABLE_TODO_TOOLS=null" in p for p in errors), errors
