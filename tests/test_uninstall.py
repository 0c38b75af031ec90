"""`todoledger uninstall` takes back exactly what `install` added; the
instructions block and the routes; approvals written only on request."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from todoledger import agents
from todoledger.cli.cmd_install import install as install_cmd
from todoledger.cli.cmd_install import uninstall as uninstall_cmd
from todoledger.install import AGENTS, run
from todoledger.install.runner import uninstall


def snapshot(*roots: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for root in roots for p in sorted(root.rglob("*")) if p.is_file()} | {
        str(p): b"<dir>" for root in roots for p in sorted(root.rglob("*")) if p.is_dir()
    }


FOREIGN: dict[str, str] = {
    ".claude/settings.json": '{\n  "permissions": {"allow": ["Bash(ls)"]},\n  "hooks": {}\n}\n',
    ".claude/settings.local.json": '{"enabledMcpjsonServers": ["other"]}',
    ".mcp.json": '{\r\n  "mcpServers": {\r\n    "other": {"command": "x"}\r\n  }\r\n}\r\n',
    "CLAUDE.md": "# Project\n\nRun `make test`.",  # no final newline
    "AGENTS.md": "# Agents\n\nBe brief.\n",
    "GEMINI.md": "",
    "opencode.jsonc": '// mine\n{\n  "theme": "x", // trailing\n}\n',
    ".codex/config.toml": 'model = "o3"  # keep\n',
    ".gemini/settings.json": '{"ui": {"title": "ünï"}}',
}
HOME_FOREIGN = {
    ".codex/config.toml": '[projects."/elsewhere"]\ntrust_level = "trusted"\n',
    ".gemini/trustedFolders.json": '{\n  "/elsewhere": "TRUST_PARENT"\n}\n',
}


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    project, home = tmp_path / "project", tmp_path / "home"
    for root, files in ((project, FOREIGN), (home, HOME_FOREIGN)):
        root.mkdir()
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_bytes(text.encode())
    return project, home


@pytest.mark.parametrize("agent", AGENTS)
@pytest.mark.parametrize("route", ["mcp", "cli", "both"])
@pytest.mark.parametrize("approve", [False, True])
def test_uninstall_restores_every_byte(
    agent: str, route: str, approve: bool, dirs: tuple[Path, Path]
) -> None:
    project, home = dirs
    before = snapshot(project, home)
    result = run(agent, project=project, home=home, route=route, approve=approve)
    assert result.changed
    run(agent, project=project, home=home, route=route, approve=approve)  # twice: still one record
    undone = uninstall(agent, project=project, home=home)
    assert undone.changed and not undone.notes
    assert snapshot(project, home) == before
    assert not uninstall(agent, project=project, home=home).changed  # nothing left to take back


@pytest.mark.parametrize("agent", AGENTS)
def test_uninstall_in_an_empty_project_leaves_nothing(agent: str, tmp_path: Path) -> None:
    project, home = tmp_path / "p", tmp_path / "h"
    project.mkdir()
    home.mkdir()
    run(agent, project=project, home=home, approve=True)
    assert any(project.iterdir())
    uninstall(agent, project=project, home=home)
    assert list(project.iterdir()) == [] and list(home.rglob("*")) == []


def test_uninstall_keeps_what_the_user_added_since(dirs: tuple[Path, Path]) -> None:
    project, home = dirs
    run("claude-code", project=project, home=home)
    settings = project / ".claude" / "settings.json"
    data = settings.read_text()
    # The user adds a key at the top and a line to CLAUDE.md after our block.
    settings.write_text(data.replace("{\n", '{\n  "model": "opus",\n', 1))
    (project / "CLAUDE.md").write_text((project / "CLAUDE.md").read_text() + "\nMore notes.\n")
    uninstall("claude-code", project=project, home=home)
    assert settings.read_text() == FOREIGN[".claude/settings.json"].replace(
        "{\n", '{\n  "model": "opus",\n', 1
    )
    assert (project / "CLAUDE.md").read_text() == FOREIGN["CLAUDE.md"] + "\nMore notes.\n"


# An entry of ours that someone changed: tests/test_uninstall_edited.py.


def test_the_block_teaches_the_right_tool_names_per_route(dirs: tuple[Path, Path]) -> None:
    project, home = dirs
    run("opencode", project=project, home=home, route="both")
    run("codex", project=project, home=home, route="cli")
    text = (project / "AGENTS.md").read_text()
    assert text.startswith(FOREIGN["AGENTS.md"] + "\n<!-- todoledger:begin opencode")
    assert "`todoledger_todowrite`" in text and "not the built-in `todowrite`" in text
    assert "todoledger next --claim --json" in text
    codex_block = text[text.index("todoledger:begin codex") :]
    assert "mcp__todoledger__" not in codex_block  # the cli route names no MCP tool
    assert not (project / ".codex" / "config.toml").read_text().count("todoledger")  # and adds no server
    uninstall("opencode", project=project, home=home)
    assert "todoledger:begin opencode" not in (project / "AGENTS.md").read_text()
    assert "todoledger:begin codex" in (project / "AGENTS.md").read_text()


def test_a_route_change_takes_back_the_server(dirs: tuple[Path, Path]) -> None:
    project, home = dirs
    run("claude-code", project=project, home=home, route="mcp")
    assert "todoledger" in (project / ".mcp.json").read_text()
    run("claude-code", project=project, home=home, route="cli")
    assert (project / ".mcp.json").read_bytes() == FOREIGN[".mcp.json"].encode()
    assert "todoledger hook claude-code" in (project / ".claude" / "settings.json").read_text()


def test_approve_writes_each_agents_own_approval(dirs: tuple[Path, Path]) -> None:
    project, home = dirs
    run("claude-code", project=project, home=home, approve=True)
    local = json.loads((project / ".claude" / "settings.local.json").read_text())
    assert local["enabledMcpjsonServers"] == ["other", "todoledger"]
    run("codex", project=project, home=home, approve=True)
    trust = tomllib.loads((home / ".codex" / "config.toml").read_text())["projects"]
    assert trust[str(project)] == {"trust_level": "trusted"}
    run("gemini", project=project, home=home, approve=True)
    folders = json.loads((home / ".gemini" / "trustedFolders.json").read_text())
    assert folders[str(project)] == "TRUST_FOLDER"
    # A later install without --approve keeps the approvals.
    run("codex", project=project, home=home)
    assert str(project) in (home / ".codex" / "config.toml").read_text()


def test_without_approve_the_exact_settings_are_printed(dirs: tuple[Path, Path]) -> None:
    project, home = dirs
    notes = {a: run(a, project=project, home=home).notes for a in AGENTS}
    assert any('"enabledMcpjsonServers": ["todoledger"]' in n for n in notes["claude-code"])
    assert any(f'[projects."{project}"] trust_level = "trusted"' in n for n in notes["codex"])
    assert any("/hooks" in n for n in notes["codex"])
    assert any(f'"{project}": "TRUST_FOLDER"' in n for n in notes["gemini"])
    assert (home / ".codex" / "config.toml").read_text() == HOME_FOREIGN[".codex/config.toml"]


def test_cli_install_route_and_uninstall(dirs: tuple[Path, Path]) -> None:
    project, home = dirs
    before = snapshot(project, home)
    where = ["--project", str(project), "--home", str(home)]
    out = CliRunner().invoke(install_cmd, ["gemini", "--route", "both", *where])
    assert out.exit_code == 0, out.output
    assert "GEMINI.md (updated)" in out.output and "todoledger block (both route) added" in out.output
    out = CliRunner().invoke(uninstall_cmd, ["gemini", "--dry-run", *where])
    assert out.exit_code == 0 and "dry run: nothing was written" in out.output
    out = CliRunner().invoke(uninstall_cmd, ["gemini", *where])
    assert out.exit_code == 0, out.output
    assert snapshot(project, home) == before
    out = CliRunner().invoke(uninstall_cmd, ["gemini", *where])
    assert "left no record" in out.output


def test_every_agent_names_its_instructions_file() -> None:
    files = {a.name: a.instructions for a in agents.AGENTS}
    assert files == {
        "claude-code": "CLAUDE.md",
        "opencode": "AGENTS.md",
        "codex": "AGENTS.md",
        "gemini": "GEMINI.md",
    }
