"""`todoledger install`: merges that keep every foreign byte, idempotence, CLI."""

from __future__ import annotations

import difflib
import json
import shutil
import stat
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from todoledger.cli.cmd_install import install
from todoledger.core.model import LedgerError
from todoledger.install import AGENTS, run
from todoledger.install.jsonc import parse as parse_jsonc


def only_insertions(before: str, after: str) -> None:
    """Every character of `before` is still there, in order: we only added text."""
    ops = difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes()
    bad = [
        (tag, before[i1:i2], after[j1:j2]) for tag, i1, i2, j1, j2 in ops if tag not in ("equal", "insert")
    ]
    assert not bad, bad


def jsonc(path: Path) -> Any:
    return parse_jsonc(path.read_text("utf-8")).value


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    return project, home


def install_twice(agent: str, project: Path, home: Path) -> None:
    """Install, then check a second run is byte-identical and says so."""
    run(agent, project=project, home=home)
    first = snapshot(project.parent)
    again = run(agent, project=project, home=home)
    assert snapshot(project.parent) == first
    assert not again.changed
    assert all(line.startswith("= ") for c in again.changes for line in c.summary)


# -- claude-code -------------------------------------------------------------

CLAUDE_SETTINGS = """{
   "permissions": {"allow": ["Bash(ls)"], "deny": []},
   "hooks": {
      "PostToolUse": [
         {"matcher": "Bash", "hooks": [{"type": "command", "command": "echo ✓ done"}]}
      ]
   },
   "statusLine": {"type": "command", "command": "ünïcødé —"}
}
"""

OUR_CLAUDE = {"type": "command", "command": "todoledger hook claude-code", "timeout": 10}


def test_claude_code_keeps_foreign_settings(dirs: tuple[Path, Path]) -> None:
    project, home = dirs
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(CLAUDE_SETTINGS, "utf-8")
    result = run("claude-code", project=project, home=home)

    after = settings.read_text("utf-8")
    only_insertions(CLAUDE_SETTINGS, after)
    expected = json.loads(CLAUDE_SETTINGS)
    expected["hooks"]["PostToolUse"].append(
        {"matcher": "TodoWrite|TaskCreate|TaskUpdate|ExitPlanMode", "hooks": [OUR_CLAUDE]}
    )
    expected["hooks"]["SessionStart"] = [
        {"matcher": "startup|resume|clear|compact|fork", "hooks": [OUR_CLAUDE]}
    ]
    # The pre-tool screen before every Bash command, and the marker of Claude Code's shell.
    screen = {**OUR_CLAUDE, "command": "todoledger hook claude-code --screen"}
    expected["hooks"]["PreToolUse"] = [{"matcher": "Bash", "hooks": [screen]}]
    expected["env"] = {"TODOLEDGER_AGENT": "claude-code"}
    # `claude -p` refuses an MCP tool that is not allowed: the user's list gains our server's rule.
    expected["permissions"]["allow"].append("mcp__todoledger")
    assert json.loads(after) == expected
    assert '\n         {\n            "matcher": "TodoWrite' in after  # the file's 3-space indent

    mcp = json.loads((project / ".mcp.json").read_text("utf-8"))
    assert mcp == {
        "mcpServers": {"todoledger": {"type": "stdio", "command": "todoledger", "args": ["mcp"], "env": {}}}
    }
    summary = [line for c in result.changes for line in c.summary]
    assert (
        "+ hooks.PostToolUse[TodoWrite|TaskCreate|TaskUpdate|ExitPlanMode]: todoledger hook claude-code"
        in summary
    )
    assert "+ mcpServers.todoledger: todoledger mcp" in summary
    assert any("enabledMcpjsonServers" in n for n in result.notes)
    install_twice("claude-code", project, home)


def test_claude_code_updates_an_older_hook_in_place(dirs: tuple[Path, Path]) -> None:
    project, home = dirs
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir()
    old = {
        "hooks": {
            "PostToolUse": [
                {
                    "matcher": "TodoWrite",
                    "hooks": [
                        {"type": "command", "command": "/opt/bin/todoledger hook claude", "timeout": 60}
                    ],
                }
            ]
        },
        "enabledMcpjsonServers": ["todoledger"],
    }
    settings.write_text(json.dumps(old, indent=2) + "\n", "utf-8")
    (project / ".mcp.json").write_text(
        '{"mcpServers": {"todoledger": {"command": "old-ledger", "args": ["mcp"], "env": {"K": "v"}}}}'
    )
    result = run("claude-code", project=project, home=home)

    groups = json.loads(settings.read_text("utf-8"))["hooks"]["PostToolUse"]
    assert groups == [
        {
            "matcher": "TodoWrite|TaskCreate|TaskUpdate|ExitPlanMode",
            # The user's timeout wins; the command is brought up to date.
            "hooks": [{"type": "command", "command": "todoledger hook claude-code", "timeout": 60}],
        }
    ]
    server = json.loads((project / ".mcp.json").read_text())["mcpServers"]["todoledger"]
    # The MCP entry is the user's choice (here another command): kept as it is, and said so.
    assert server == {"command": "old-ledger", "args": ["mcp"], "env": {"K": "v"}}
    assert result.changes[1].summary == [
        "= mcpServers.todoledger: kept as configured (differs from the default in type, command)"
    ]
    lines = result.changes[0].summary
    assert lines[0].startswith(
        "~ hooks.PostToolUse[TodoWrite|TaskCreate|TaskUpdate|ExitPlanMode]: updated matcher, command"
    )
    assert not any("enabledMcpjsonServers" in n for n in result.notes)  # already pre-approved
    install_twice("claude-code", project, home)


def test_shared_group_keeps_its_matcher(dirs: tuple[Path, Path]) -> None:
    project, home = dirs
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir()
    group = {"matcher": "*", "hooks": [{"type": "command", "command": "log"}, OUR_CLAUDE]}
    settings.write_text(json.dumps({"hooks": {"PostToolUse": [group]}}))
    result = run("claude-code", project=project, home=home)
    assert json.loads(settings.read_text())["hooks"]["PostToolUse"] == [group]
    assert any("shares a group" in n for n in result.notes)


# -- opencode ----------------------------------------------------------------

OPENCODE_JSONC = """// project config — ünïcode
{
\t"$schema": "https://opencode.ai/config.json",
\t/* block
\t   comment */
\t"theme": "tokyonight", // trailing comment
\t"mcp": {
\t\t"other": {"type": "remote", "url": "https://example.com/mcp"},
\t},
}
"""


def test_opencode_jsonc_keeps_comments(dirs: tuple[Path, Path]) -> None:
    project, home = dirs
    config = project / "opencode.jsonc"
    config.write_text(OPENCODE_JSONC, "utf-8")
    result = run("opencode", project=project, home=home)

    assert not (project / "opencode.json").exists()
    after = config.read_text("utf-8")
    only_insertions(OPENCODE_JSONC, after)
    assert '\t\t"todoledger": {\n\t\t\t"type": "local",' in after  # tabs, like the file
    value = jsonc(config)
    assert value["mcp"]["todoledger"] == {"type": "local", "command": ["todoledger", "mcp"], "enabled": True}
    assert value["mcp"]["other"] == {"type": "remote", "url": "https://example.com/mcp"}
    assert result.changes[1].summary[0].startswith("+ .opencode/plugins/todoledger.js")
    install_twice("opencode", project, home)


def test_opencode_creates_config_and_plugin(dirs: tuple[Path, Path]) -> None:
    project, home = dirs
    run("opencode", project=project, home=home, command="/opt/my tools/todoledger")
    value = json.loads((project / "opencode.json").read_text())
    assert value == {
        "$schema": "https://opencode.ai/config.json",
        "mcp": {
            "todoledger": {"type": "local", "command": ["/opt/my tools/todoledger", "mcp"], "enabled": True}
        },
    }
    plugin = (project / ".opencode" / "plugins" / "todoledger.js").read_text()
    assert 'const COMMAND = "/opt/my tools/todoledger"' in plugin
    assert '"todo.updated"' in plugin and "hook opencode" in plugin
    assert "cwd: directory, ...event.properties" in plugin
    assert ".nothrow()" in plugin and "catch" in plugin


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_opencode_plugin_is_valid_javascript(dirs: tuple[Path, Path], tmp_path: Path) -> None:
    project, home = dirs
    run("opencode", project=project, home=home)
    copy = tmp_path / "plugin.mjs"  # ESM: node checks .mjs as a module
    copy.write_bytes((project / ".opencode" / "plugins" / "todoledger.js").read_bytes())
    proc = subprocess.run(["node", "--check", str(copy)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


# -- codex -------------------------------------------------------------------

CODEX_TOML = """# Codex config — ünïcode
model = "o3"   # keep this comment

[mcp_servers.other]
command = "npx"
args = ["-y", "other-mcp"]   # inline

[profiles.fast]
model = "gpt-5-mini"
"""


# `required`: Codex waits for the server before the first turn; `default_tools_approval_mode`:
# `codex exec` never asks, so a call that needs approval would fail.
CODEX_SERVER = {
    "command": "todoledger",
    "args": ["mcp"],
    "required": True,
    "default_tools_approval_mode": "approve",
}


def test_codex_keeps_toml_and_adds_hooks(dirs: tuple[Path, Path]) -> None:
    project, home = dirs
    config = project / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text(CODEX_TOML, "utf-8")
    result = run("codex", project=project, home=home)

    after = config.read_text("utf-8")
    assert after.startswith(CODEX_TOML)  # appended as its own table: the rest is untouched
    assert after[len(CODEX_TOML) :] == (
        '\n[mcp_servers.todoledger]\ncommand = "todoledger"\nargs = ["mcp"]\nrequired = true\n'
        'default_tools_approval_mode = "approve"\n'
    )
    expected = tomllib.loads(CODEX_TOML)
    expected["mcp_servers"]["todoledger"] = CODEX_SERVER
    assert tomllib.loads(after) == expected

    handler = {"type": "command", "command": "todoledger hook codex", "timeout": 30}
    assert json.loads((project / ".codex" / "hooks.json").read_text()) == {
        "hooks": {
            "SessionStart": [{"matcher": "startup|resume|clear|compact", "hooks": [handler]}],
            "Stop": [{"hooks": [handler]}],
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [{**handler, "command": "todoledger hook codex --screen"}]}
            ],
        }
    }
    assert any("/hooks" in n for n in result.notes)
    assert any('trust_level = "trusted"' in n for n in result.notes)
    assert not (home / ".codex").exists()  # the user-wide config is left alone without --approve
    install_twice("codex", project, home)


def test_codex_keeps_the_users_own_server_entry(dirs: tuple[Path, Path]) -> None:
    project, home = dirs
    config = project / ".codex" / "config.toml"
    config.parent.mkdir()
    before = (
        '[mcp_servers.todoledger]  # ours\ncommand = "/old/todoledger"  # path\n'
        'args = ["mcp"]\nenv = { TODOLEDGER_HOME = "/x" }\n\n[other]\nk = 1\n'
    )
    config.write_text(before)
    result = run("codex", project=project, home=home)
    assert config.read_text() == before  # the user's own entry (another path) is kept
    assert result.changes[0].summary == [
        "= mcp_servers.todoledger: kept as configured "
        "(differs from the default in command, required, default_tools_approval_mode)"
    ]
    # What the user's entry lacks for the plan to reach Codex is said, with its fix.
    assert any(n.startswith("Codex: the todoledger server is not `required`") for n in result.notes)


def test_codex_invalid_toml_is_refused(dirs: tuple[Path, Path]) -> None:
    project, home = dirs
    config = project / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text('model = "o3"\n[mcp_servers\ncommand = 1\n')
    with pytest.raises(LedgerError, match=r"config\.toml: cannot parse line 2"):
        run("codex", project=project, home=home)
    assert config.read_text() == 'model = "o3"\n[mcp_servers\ncommand = 1\n'
    assert sorted(p.name for p in (project / ".codex").iterdir()) == ["config.toml"]  # nothing half-done


@pytest.mark.parametrize(
    "before",
    [
        'mcp_servers = { other = { command = "x" } }\n',  # inline: cannot be extended by a header
        'mcp_servers.other.command = "x"\n',  # dotted keys
        '[mcp_servers]\nother = { command = "x" }\n[x]\ny = 1',  # no final newline
        "a = 1\r\nb = 2\r\n",  # CRLF
        "",
    ],
)
def test_codex_toml_shapes(before: str, dirs: tuple[Path, Path]) -> None:
    project, home = dirs
    config = project / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_bytes(before.encode())
    run("codex", project=project, home=home)
    after = config.read_bytes().decode()
    expected = tomllib.loads(before)
    expected.setdefault("mcp_servers", {})["todoledger"] = CODEX_SERVER
    assert tomllib.loads(after) == expected
    if "\r\n" in before:
        assert after.startswith(before) and "\n" not in after.replace("\r\n", "")
    install_twice("codex", project, home)


# -- gemini ------------------------------------------------------------------

GEMINI_COMPACT = '{"theme":"Dracula","hooks":{},"ui":{"title":"ünï"}}'


def test_gemini_single_line_file_stays_single_line(dirs: tuple[Path, Path]) -> None:
    project, home = dirs
    settings = project / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(GEMINI_COMPACT, "utf-8")
    run("gemini", project=project, home=home)

    after = settings.read_text("utf-8")
    only_insertions(GEMINI_COMPACT, after)
    assert "\n" not in after
    handler = {"name": "todoledger", "type": "command", "command": "todoledger hook gemini", "timeout": 5000}
    assert json.loads(after) == {
        "theme": "Dracula",
        "hooks": {
            "AfterTool": [{"matcher": "write_todos", "hooks": [handler]}],
            "SessionStart": [{"matcher": "*", "hooks": [handler]}],
            "PreCompress": [{"matcher": "*", "hooks": [handler]}],
            "BeforeTool": [
                {
                    "matcher": "run_shell_command",
                    "hooks": [
                        {**handler, "name": "todoledger-screen", "command": "todoledger hook gemini --screen"}
                    ],
                }
            ],
        },
        "ui": {"title": "ünï"},
        "mcpServers": {"todoledger": {"command": "todoledger", "args": ["mcp"]}},
        # `gemini -p` offers only allowed tools: the server's and the native list it mirrors.
        "tools": {"allowed": ["write_todos", "mcp_todoledger_*"]},
    }
    install_twice("gemini", project, home)


def test_gemini_crlf_and_comments(dirs: tuple[Path, Path]) -> None:
    project, home = dirs
    settings = project / ".gemini" / "settings.json"
    settings.parent.mkdir()
    before = (
        '{\r\n    // my servers\r\n    "mcpServers": {\r\n'
        '        "x": {"command": "x"} // x\r\n    }\r\n}\r\n'
    )
    settings.write_bytes(before.encode())
    run("gemini", project=project, home=home)
    after = settings.read_bytes().decode()
    only_insertions(before, after)
    assert "\n" not in after.replace("\r\n", "")  # no bare LF introduced
    assert '"x": {"command": "x"}, // x\r\n        "todoledger": {' in after
    install_twice("gemini", project, home)


# -- shared rules --------------------------------------------------------------


@pytest.mark.parametrize("agent", AGENTS)
def test_dry_run_writes_nothing(agent: str, dirs: tuple[Path, Path]) -> None:
    project, home = dirs
    result = run(agent, project=project, home=home, dry_run=True)
    assert snapshot(project.parent) == {}
    assert not any(project.iterdir()) and not any(home.iterdir())
    assert result.changed and all(c.created for c in result.changes)
    # The same changes a real run makes.
    real = run(agent, project=project, home=home)
    assert [(c.path, c.after) for c in real.changes] == [(c.path, c.after) for c in result.changes]


@pytest.mark.parametrize(
    ("agent", "rel"),
    [
        ("claude-code", ".claude/settings.json"),
        ("gemini", ".gemini/settings.json"),
        ("codex", ".codex/hooks.json"),
        ("opencode", "opencode.json"),
    ],
)
def test_invalid_json_is_refused_and_untouched(agent: str, rel: str, dirs: tuple[Path, Path]) -> None:
    project, home = dirs
    path = project / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    broken = '{\n  "a": 1,\n  "b": [1 2]\n}\n'
    path.write_text(broken)
    with pytest.raises(LedgerError) as err:
        run(agent, project=project, home=home)
    assert str(path) in str(err.value) and "line 3" in str(err.value)
    assert path.read_text() == broken
    assert snapshot(project.parent) == {str(path.relative_to(project.parent)): broken.encode()}


def test_wrong_types_are_refused(dirs: tuple[Path, Path]) -> None:
    project, home = dirs
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"hooks": []}')
    with pytest.raises(LedgerError, match="`hooks` is not an object"):
        run("claude-code", project=project, home=home)
    settings.write_text("[1]")
    with pytest.raises(LedgerError, match="expected a JSON object"):
        run("claude-code", project=project, home=home)


def test_unknown_agent_lists_the_valid_ones(dirs: tuple[Path, Path]) -> None:
    project, home = dirs
    with pytest.raises(LedgerError, match="claude-code, opencode, codex, gemini"):
        run("cursor", project=project, home=home)


def test_empty_file_mode_and_symlink(dirs: tuple[Path, Path], tmp_path: Path) -> None:
    project, home = dirs
    real = tmp_path / "dotfiles" / "settings.json"
    real.parent.mkdir()
    real.write_text("")
    real.chmod(0o600)
    link = project / ".gemini" / "settings.json"
    link.parent.mkdir()
    link.symlink_to(real)
    run("gemini", project=project, home=home)
    assert link.is_symlink()  # written through the link, not over it
    assert stat.S_IMODE(real.stat().st_mode) == 0o600
    assert json.loads(real.read_text())["mcpServers"]["todoledger"]["command"] == "todoledger"
    assert not [p for p in real.parent.iterdir() if p.name != "settings.json"]  # no temp files left


# -- CLI -------------------------------------------------------------------------


def test_cli_json(dirs: tuple[Path, Path]) -> None:
    from todoledger.install.exe import running

    project, home = dirs
    exe = str(running())  # Codex's shell is a login shell: it gets the absolute path
    args = ["codex", "--project", str(project), "--home", str(home), "--json"]
    out = CliRunner().invoke(install, args)
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["agent"] == "codex"
    assert [c["path"] for c in data["changes"]] == [
        str(project.resolve() / ".codex" / "config.toml"),
        str(project.resolve() / ".codex" / "hooks.json"),
        str(project.resolve() / "AGENTS.md"),
    ]
    assert data["changes"][0] == {
        "path": str(project.resolve() / ".codex" / "config.toml"),
        "summary": [f"+ mcp_servers.todoledger: {exe} mcp"],
        "created": True,
        "changed": True,
    }
    assert any("/hooks" in n for n in data["notes"])
    again = json.loads(CliRunner().invoke(install, args).output)
    assert [c["changed"] for c in again["changes"]] == [False, False, False]


def test_cli_dry_run_shows_a_diff(dirs: tuple[Path, Path]) -> None:
    project, home = dirs
    out = CliRunner().invoke(
        install,
        [
            "claude-code",
            "--dry-run",
            "--project",
            str(project),
            "--home",
            str(home),
            "--command",
            "todoledger",
        ],
    )
    assert out.exit_code == 0, out.output
    assert ".claude/settings.json (would be created)" in out.output
    assert (
        "  + hooks.PostToolUse[TodoWrite|TaskCreate|TaskUpdate|ExitPlanMode]: todoledger hook claude-code"
        in out.output
    )
    assert '+      "command": "todoledger",' in out.output  # the .mcp.json diff
    assert "dry run: nothing was written" in out.output
    assert not any(project.iterdir())


def test_cli_human_output_and_errors(dirs: tuple[Path, Path]) -> None:
    project, home = dirs
    args = ["gemini", "--project", str(project), "--home", str(home)]
    assert CliRunner().invoke(install, args).exit_code == 0
    out = CliRunner().invoke(install, args)
    assert "todoledger is already installed for gemini" in out.output
    assert "= mcpServers.todoledger: already installed" in out.output

    (project / ".gemini" / "settings.json").write_text("{oops")
    out = CliRunner().invoke(install, args)
    assert out.exit_code == 1
    assert "Error:" in out.output and "line 1, column 2" in out.output
    assert "Traceback" not in out.output
    assert CliRunner().invoke(install, ["cursor"]).exit_code == 2  # click's choice error


def test_cli_defaults_to_git_root(dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    project, home = dirs
    (project / ".git").mkdir()
    (project / ".git" / "HEAD").write_text("ref: refs/heads/main\n")  # a repository, not an empty folder
    sub = project / "src" / "pkg"
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)
    out = CliRunner().invoke(install, ["gemini", "--home", str(home)])
    assert out.exit_code == 0, out.output
    assert (project / ".gemini" / "settings.json").exists()
    assert not (sub / ".gemini").exists()
    # gemini is project-scoped: home holds only the record of what install added
    assert [str(p.relative_to(home)) for p in home.rglob("*") if p.is_file()] == [
        str(next((home / ".local/state/todoledger/installs").iterdir()).relative_to(home))
    ]


def test_jsonc_parser() -> None:
    node = parse_jsonc('// c\n{"a": [1, 2,], /* x */ "a": {"b": "\\u00fc"},}')
    assert node.value == {"a": {"b": "ü"}}  # trailing commas, comments, last duplicate wins
    for bad, where in [("{", "line 1, column 2"), ('{"a": 1}\n}', "line 2, column 1"), ("/* x", "line 1")]:
        with pytest.raises(ValueError, match=where):
            parse_jsonc(bad)


def test_a_remote_or_disabled_entry_of_the_user_is_never_rewritten(dirs: tuple[Path, Path]) -> None:
    project, home = dirs
    config = project / "opencode.json"
    before = (
        '{\n  "mcp": {\n    "todoledger": {"type": "remote", "url": "https://build-box:8765/mcp",'
        ' "headers": {"Authorization": "Bearer x"}, "enabled": false}\n  }\n}\n'
    )
    config.write_text(before)
    result = run("opencode", project=project, home=home)
    assert config.read_text() == before
    assert (
        result.changes[0]
        .summary[0]
        .startswith("= mcp.todoledger: kept as configured (differs from the default in")
    )


def test_codex_config_with_a_byte_order_mark(dirs: tuple[Path, Path]) -> None:
    project, home = dirs
    config = project / ".codex" / "config.toml"
    config.parent.mkdir()
    before = '\ufeffmodel = "o3"\n'
    config.write_text(before, encoding="utf-8")
    run("codex", project=project, home=home)
    after = config.read_text(encoding="utf-8")
    assert after.startswith(before) and "[mcp_servers.todoledger]" in after


def test_install_says_when_todoledger_is_not_on_path(
    dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    from click.testing import CliRunner

    from todoledger.cli.cmd_install import install

    project, home = dirs
    monkeypatch.setenv("PATH", "/nonexistent")
    out = CliRunner().invoke(
        install, ["claude-code", "--project", str(project), "--home", str(home), "--json"]
    )
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    here = Path(sys.executable).parent / "todoledger"
    # Not on PATH: every command install writes is this one's absolute path, and it says so.
    assert data["notes"][0].startswith(f"this todoledger ({here}) is not on PATH (none is on PATH)")
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    assert {h["command"].split()[0] for g in settings["hooks"].values() for x in g for h in x["hooks"]} == {
        str(here)
    }
    assert json.loads((project / ".mcp.json").read_text())["mcpServers"]["todoledger"]["command"] == str(here)
    assert f"Bash({here} show:*)" not in settings["permissions"]["allow"]  # the mcp route runs no shell
    out = CliRunner().invoke(
        install,
        ["claude-code", "--route", "both", "--project", str(project), "--home", str(home)],
    )
    assert f"`{here} show --json`" in (project / "CLAUDE.md").read_text()  # the instructions' command too
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    assert f"Bash({here} show:*)" in settings["permissions"]["allow"]
    # --command overrides, everywhere at once; the Bash rules of the old command go.
    CliRunner().invoke(
        install,
        [
            "claude-code",
            "--route",
            "both",
            "--command",
            "/opt/tl",
            "--project",
            str(project),
            "--home",
            str(home),
        ],
    )
    assert "`/opt/tl show --json`" in (project / "CLAUDE.md").read_text()
    allow = json.loads((project / ".claude" / "settings.json").read_text())["permissions"]["allow"]
    assert "Bash(/opt/tl show:*)" in allow and f"Bash({here} show:*)" not in allow


def test_a_todoledger_on_path_only_through_an_active_venv_is_written_by_its_absolute_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`source .venv/bin/activate` puts it on this shell's PATH, never on the agent's hooks'
    (issue 31): the README's venv connects an agent without pipx."""
    from todoledger.install.exe import resolve, running

    here = running()
    monkeypatch.setenv("PATH", str(here.parent))
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    assert resolve(None, "claude-code") == ("todoledger", [])  # on PATH for good: the bare name
    monkeypatch.setenv("VIRTUAL_ENV", str(here.parent.parent))
    command, notes = resolve(None, "claude-code")
    assert command == str(here) and "virtual environment is active" in notes[0]
