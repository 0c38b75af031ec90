"""What `todoledger install <agent>` writes for each agent.

Shapes and file locations follow each agent's own documentation of its
settings, hooks and MCP servers.
Project scope wherever the agent reads project files, so a checkout carries
its own integration; Codex MCP servers are user scope because Codex reads a
project `config.toml` only for explicitly trusted projects.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

from todoledger.core.model import LedgerError
from todoledger.install import jsonc
from todoledger.install.entries import HookSpec, ensure_entry, ensure_hook
from todoledger.install.files import FileChange, read_text
from todoledger.install.jsonedit import JsonDoc
from todoledger.install.tomledit import ensure_server

SERVER = "todoledger"
Edit = Callable[[JsonDoc], tuple[list[str], list[str]]]
Built = tuple[list[FileChange], list[str]]


def hook_command(exe: str, agent: str) -> str:
    return f"{shlex.quote(exe)} hook {agent}"


def claude_code(project: Path, home: Path, exe: str, gate_stop: bool = False) -> Built:
    handler = {"type": "command", "command": hook_command(exe, "claude-code"), "timeout": 10}
    hooks = [
        HookSpec("PostToolUse", "TodoWrite|TaskCreate|TaskUpdate", handler),
        HookSpec("SessionStart", "startup|resume|clear|compact|fork", handler),
    ]
    if gate_stop:  # opt-in: a stop is blocked while this session's completed items fail their gates
        gate = {**handler, "command": hook_command(exe, "claude-code") + " --gate-stop"}
        hooks.append(HookSpec("Stop", None, gate))
    server = {"type": "stdio", "command": exe, "args": ["mcp"], "env": {}}
    settings, notes = json_change(project / ".claude" / "settings.json", _hooks_edit(hooks, exe))
    # `env` is only a default: variables the user added to our server stay.
    mcp, _ = json_change(
        project / ".mcp.json",
        _entry_edit(["mcpServers", SERVER], server, f"{exe} mcp", frozenset({"env"})),
    )
    notes += _claude_approval(project, home, settings.after)
    notes.append(
        "Claude Code: newer models (Opus 4.8, Sonnet 5 and later) get no TodoWrite/Task tools unless "
        "CLAUDE_CODE_ENABLE_TODO_TOOLS=1 is exported; the todoledger MCP tools work either way."
    )
    return [settings, mcp], notes


def opencode(project: Path, home: Path, exe: str, gate_stop: bool = False) -> Built:
    if gate_stop:
        raise LedgerError(
            "opencode has no hook that can block a stop: --gate-stop is for claude-code, codex, gemini"
        )
    server = {"type": "local", "command": [exe, "mcp"], "enabled": True}
    seed = '{\n  "$schema": "https://opencode.ai/config.json"\n}\n'
    config, _ = json_change(
        _opencode_config(project), _entry_edit(["mcp", SERVER], server, f"{exe} mcp"), seed=seed
    )
    plugin = project / ".opencode" / "plugins" / "todoledger.js"
    template = resources.files("todoledger.install").joinpath("opencode_plugin.js").read_text("utf-8")
    after = template.replace("__COMMAND__", json.dumps(exe))
    before = read_text(plugin)
    label = ".opencode/plugins/todoledger.js"
    if before is None:
        line = f"+ {label}: todo.updated -> {hook_command(exe, 'opencode')}"
    elif before != after:
        line = f"~ {label}: rewritten (it is generated; local edits are replaced)"
    else:
        line = f"= {label}: already installed"
    notes = [
        "opencode: the todo.updated event exists only in 1.x builds from before the todo tool was "
        "removed (PR #35989); later builds reach the ledger through the todoledger MCP tools only."
    ]
    return [config, FileChange(plugin, before, after, [line])], notes


def codex(project: Path, home: Path, exe: str, gate_stop: bool = False) -> Built:
    config_path = home / ".codex" / "config.toml"
    before = read_text(config_path)
    server = {"command": exe, "args": ["mcp"]}
    after, line = ensure_server(before or "", str(config_path), SERVER, server, f"{exe} mcp")
    config = FileChange(config_path, before, after, [line])
    handler = {"type": "command", "command": hook_command(exe, "codex"), "timeout": 30}
    # The Stop hook imports the rollout; with --gate-stop it also blocks a false "done".
    stop = {**handler, "command": hook_command(exe, "codex") + " --gate-stop"} if gate_stop else handler
    hooks = [HookSpec("SessionStart", "startup|resume|clear", handler), HookSpec("Stop", None, stop)]
    hooks_file, notes = json_change(project / ".codex" / "hooks.json", _hooks_edit(hooks, exe))
    if hooks_file.changed:
        notes.append("Codex: new or changed hooks run only after you approve them: open `/hooks` in Codex.")
    return [config, hooks_file], notes


def gemini(project: Path, home: Path, exe: str, gate_stop: bool = False) -> Built:
    handler = {
        "name": "todoledger",
        "type": "command",
        "command": hook_command(exe, "gemini"),
        "timeout": 5000,
    }
    hooks = [
        HookSpec("AfterTool", "write_todos", handler),
        # Gemini compares lifecycle matchers as exact strings (hookPlanner.matchesTrigger), so
        # "startup|resume|clear" would never fire; "*" covers exactly those three sources.
        HookSpec("SessionStart", "*", handler),
    ]
    if gate_stop:  # AfterAgent's "deny" sends the reason back as a new prompt
        gate = {**handler, "name": "todoledger-gate", "command": hook_command(exe, "gemini") + " --gate-stop"}
        hooks.append(HookSpec("AfterAgent", None, gate))
    server = {"command": exe, "args": ["mcp"]}
    hooks_edit = _hooks_edit(hooks, exe)

    def edit(doc: JsonDoc) -> tuple[list[str], list[str]]:
        summary = [ensure_entry(doc, ["mcpServers", SERVER], server, f"{exe} mcp")]
        lines, notes = hooks_edit(doc)
        return summary + lines, notes

    settings, notes = json_change(project / ".gemini" / "settings.json", edit)
    if settings.changed:
        notes.append(
            "Gemini CLI: changed project hooks are flagged untrusted until you accept them; with "
            "folder trust on, an untrusted folder ignores .gemini/settings.json."
        )
    return [settings], notes


def json_change(path: Path, edit: Edit, seed: str = "{}\n") -> tuple[FileChange, list[str]]:
    """Apply `edit` to the file's text (or `seed` if missing/empty)."""
    before = read_text(path)
    doc = JsonDoc(before if before and before.strip() else seed, str(path))
    summary, notes = edit(doc)
    # A second pass over our own output must find nothing to do; otherwise a
    # re-install would rewrite the file every time.
    check = JsonDoc(doc.text, str(path))
    edit(check)
    if check.text != doc.text:
        raise LedgerError(f"{path}: could not merge our entries safely; nothing was changed")
    return FileChange(path, before, doc.text, summary), notes


def _hooks_edit(specs: list[HookSpec], exe: str) -> Edit:
    def edit(doc: JsonDoc) -> tuple[list[str], list[str]]:
        lines: list[str] = []
        notes: list[str] = []
        for spec in specs:
            line, more = ensure_hook(doc, spec, exe)
            lines.append(line)
            notes += more
        return lines, notes

    return edit


def _entry_edit(
    path: list[str], entry: dict[str, Any], describe: str, keep: frozenset[str] = frozenset()
) -> Edit:
    return lambda doc: ([ensure_entry(doc, path, entry, describe, keep)], [])


def _opencode_config(project: Path) -> Path:
    """`opencode.json`, or an existing `opencode.jsonc` (which opencode reads alike)."""
    plain, commented = project / "opencode.json", project / "opencode.jsonc"
    if commented.exists() and not plain.exists():
        return commented
    if commented.exists() and f'"{SERVER}"' in (read_text(commented) or ""):
        return commented  # our entry lives there already: update it in place
    return plain


def _claude_approval(project: Path, home: Path, project_settings: str) -> list[str]:
    """Claude Code asks before starting a `.mcp.json` server unless settings pre-approve it."""
    texts = [
        project_settings,
        read_text(project / ".claude" / "settings.local.json"),
        read_text(home / ".claude" / "settings.json"),
    ]
    enabled = disabled = False
    for text in texts:
        settings = _loose_object(text)
        enabled |= settings.get("enableAllProjectMcpServers") is True
        enabled |= SERVER in _str_list(settings.get("enabledMcpjsonServers"))
        disabled |= SERVER in _str_list(settings.get("disabledMcpjsonServers"))
    if disabled:
        return [
            "Claude Code: `todoledger` is listed in disabledMcpjsonServers (rejected earlier); "
            "remove it there, or enable it under /mcp."
        ]
    if enabled:
        return []
    return [
        "Claude Code asks once to approve the project MCP server `todoledger`; to pre-approve, add "
        '"enabledMcpjsonServers": ["todoledger"] to .claude/settings.local.json.'
    ]


def _loose_object(text: str | None) -> dict[str, Any]:
    """Best effort: a settings file we only read for a hint may be broken."""
    if not text or not text.strip():
        return {}
    try:
        value = jsonc.parse(text).value
    except jsonc.JsoncError:
        return {}
    return value if isinstance(value, dict) else {}


def _str_list(value: object) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []
