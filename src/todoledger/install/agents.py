"""What `todoledger install <agent>` writes for each agent.

Shapes and file locations follow each agent's own documentation of its
settings, hooks and MCP servers.
Project scope everywhere, so a checkout carries its own integration. What an
agent must approve before it uses a project file (Claude Code's project MCP
servers, Gemini's trusted folder, Codex's trusted project and `/hooks`) is
printed as the exact setting; with `--approve` install writes the settings
that live in files (Codex's `/hooks` review stays interactive).

Each builder takes the project, the home folder, the todoledger command, the
route (`mcp`, `cli` or `both`: the MCP server, the CLI taught by the
instructions block, or both) and whether to write the approvals.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

from todoledger import agents as registry
from todoledger.core.model import LedgerError
from todoledger.install import elements, needs, teach
from todoledger.install.elements import is_our_command
from todoledger.install.entries import HookSpec, ensure_entry, ensure_hook, ensure_items
from todoledger.install.files import FileChange, read_text
from todoledger.install.jsonedit import JsonDoc
from todoledger.install.tomledit import ensure_hook_trust, ensure_server, ensure_trust

SERVER = "todoledger"
OPENCODE_SEED = '{\n  "$schema": "https://opencode.ai/config.json"\n}\n'
Edit = Callable[[JsonDoc], tuple[list[str], list[str]]]
Built = tuple[list[FileChange], list[str]]


def hook_command(exe: str, agent: str) -> str:
    return f"{shlex.quote(exe)} hook {agent}"


def screen_command(exe: str, agent: str) -> str:
    """The pre-tool shell screen (`todoledger.screen`): denies a person-only verb."""
    return hook_command(exe, agent) + " --screen"


# What install adds to Claude Code's settings `env` (its Bash tool, hooks and MCP
# servers inherit it): a marker of its own beside Claude Code's CLAUDECODE=1.
AGENT_MARKER = "TODOLEDGER_AGENT"


def claude_code(
    project: Path, home: Path, exe: str, route: str = "mcp", approve: bool = False, gate_stop: bool = False
) -> Built:
    handler = {"type": "command", "command": hook_command(exe, "claude-code"), "timeout": 10}
    hooks = [
        # ExitPlanMode: a plan approved in plan mode becomes a plan revision.
        HookSpec("PostToolUse", "TodoWrite|TaskCreate|TaskUpdate|ExitPlanMode", handler),
        # `compact` brings the plan back after every compaction.
        HookSpec("SessionStart", "startup|resume|clear|compact|fork", handler),
        # Before every Bash command: a person-only todoledger verb is denied, with the reason.
        HookSpec("PreToolUse", "Bash", {**handler, "command": screen_command(exe, "claude-code")}),
    ]
    if gate_stop:  # opt-in: a stop is blocked while this session's completed items fail their gates
        gate = {**handler, "command": hook_command(exe, "claude-code") + " --gate-stop"}
        hooks.append(HookSpec("Stop", None, gate))
        # Goal-lock: a task marked completed whose item's gates do not hold stays open
        # (TaskCompleted takes no matcher; hooks/goal_lock.py).
        hooks.append(HookSpec("TaskCompleted", None, gate))
    hooks_edit = _hooks_edit(hooks, exe)
    # What the route lets the agent run without asking: `claude -p` refuses anything else.
    allow = (["mcp__todoledger"] if route != "cli" else []) + (
        needs.claude_bash_rules(shlex.quote(exe)) if route != "mcp" else []
    )

    def claude_edit(doc: JsonDoc) -> tuple[list[str], list[str]]:
        lines, notes = hooks_edit(doc)
        lines += ensure_items(doc, ["permissions", "allow"], allow)
        return [*lines, _env_marker(doc, "claude-code")], notes

    settings, notes = json_change(project / ".claude" / "settings.json", claude_edit)
    changes = [settings]
    if route != "cli":
        server = {"type": "stdio", "command": exe, "args": ["mcp"], "env": {}}
        # `env` is only a default: variables the user added to our server stay.
        mcp, _ = json_change(
            project / ".mcp.json",
            _entry_edit(["mcpServers", SERVER], server, f"{exe} mcp", frozenset({"env"})),
        )
        changes.append(mcp)
        if approve:
            local, _ = json_change(project / ".claude" / "settings.local.json", _approve_claude)
            local.approval = True
            changes.append(local)
    if approve:
        # Claude Code 2.1.332 ignores a project's permissions.allow (and asks before its server
        # and hooks) until the folder is trusted, `claude -p` too; the trust dialog stores this.
        state, _ = json_change(home / ".claude.json", _trust_claude(str(project)))
        state.approval = True
        changes.append(state)
    changes.append(instructions("claude-code", project, route, exe))
    tools = (
        "the todoledger MCP tools are the list" if route != "cli" else "the todoledger commands are the list"
    )
    notes.append(
        "Claude Code: newer models (Opus 4.8, Sonnet 5 and later) get no TodoWrite/Task tools unless "
        f"CLAUDE_CODE_ENABLE_TODO_TOOLS=1 is exported (then the hooks mirror them); without it {tools}."
    )
    return changes, notes


def opencode(
    project: Path, home: Path, exe: str, route: str = "mcp", approve: bool = False, gate_stop: bool = False
) -> Built:
    changes: list[FileChange] = []
    if route != "cli":
        server = {"type": "local", "command": [exe, "mcp"], "enabled": True}
        config, _ = json_change(
            _opencode_config(project), _entry_edit(["mcp", SERVER], server, f"{exe} mcp"), seed=OPENCODE_SEED
        )
        changes.append(config)
    plugin = project / ".opencode" / "plugins" / "todoledger.js"
    template = resources.files("todoledger.install").joinpath("opencode_plugin.js").read_text("utf-8")
    after = template.replace("__COMMAND__", json.dumps(exe))
    before = read_text(plugin)
    label = ".opencode/plugins/todoledger.js"
    if before is None:
        line = f"+ {label}: todo.updated, session start, compaction -> {hook_command(exe, 'opencode')}"
    elif before != after:
        line = f"~ {label}: rewritten (it is generated; local edits are replaced)"
    else:
        line = f"= {label}: already installed"
    notes = [
        "opencode: the todo.updated event exists only in 1.x builds from before the todo tool was "
        "removed (PR #35989); later builds reach the ledger through the todoledger "
        + ("MCP tools" if route != "cli" else "commands")
        + " only. It has no hook that can block a stop: no Stop gate."
    ]
    if gate_stop:  # the rest installs (issue 31): one line says what opencode cannot do
        notes.append(
            "opencode: --gate-stop not installed: opencode has no hook that can block a stop (the Stop"
            " gate is for claude-code, codex and gemini); everything else above is installed"
        )
    generated = FileChange(plugin, before, after, [line], fmt="file")
    generated.ensured = [(elements.whole_file(after, label), True)]
    changes += [generated, instructions("opencode", project, route, exe)]
    return changes, notes


def codex(
    project: Path, home: Path, exe: str, route: str = "mcp", approve: bool = False, gate_stop: bool = False
) -> Built:
    changes: list[FileChange] = []
    if route != "cli":
        # The project's own config.toml: Codex reads it once the project is trusted.
        # `required`: Codex waits for the server before the first turn (else its first
        # tool_search runs before the tools are listed and finds nothing);
        # `default_tools_approval_mode`: `codex exec` never asks, so a call that needs
        # approval fails.
        config_path = project / ".codex" / "config.toml"
        before = read_text(config_path)
        server = {"command": exe, "args": ["mcp"], "required": True, "default_tools_approval_mode": "approve"}
        after, line = ensure_server(before or "", str(config_path), SERVER, server, f"{exe} mcp")
        change = FileChange(config_path, before, after, [line], fmt="toml")
        change.ensured = [(elements.member(["mcp_servers", SERVER], server), line.startswith("+"))]
        changes.append(change)
    handler = {"type": "command", "command": hook_command(exe, "codex"), "timeout": 30}
    # The Stop hook imports the rollout; with --gate-stop it also blocks a false "done".
    stop = {**handler, "command": hook_command(exe, "codex") + " --gate-stop"} if gate_stop else handler
    hooks = [
        # Codex matches `source` as a regex: `compact` is harmless where a build lacks it.
        HookSpec("SessionStart", "startup|resume|clear|compact", handler),
        HookSpec("Stop", None, stop),
        # Codex names its shell tool `Bash` in hooks (exec_command and shell alike).
        HookSpec("PreToolUse", "Bash", {**handler, "command": screen_command(exe, "codex")}),
    ]
    hooks_file, notes = json_change(project / ".codex" / "hooks.json", _hooks_edit(hooks, exe))
    changes.append(hooks_file)
    if approve:
        user_config = home / ".codex" / "config.toml"
        current = read_text(user_config)
        trusted, trust_line = ensure_trust(current or "", str(user_config), str(project))
        trust = FileChange(user_config, current, trusted, [trust_line], approval=True, fmt="toml")
        trust.ensured = [
            (
                elements.member(["projects", str(project), "trust_level"], "trusted"),
                trust_line.startswith("+"),
            )
        ]
        changes.append(trust)
    notes.append(
        "Codex: 0.171 offers no native plan tool (update_plan is opt-in), so there is no native list "
        "to mirror: the plan lives in todoledger's " + ("tools." if route != "cli" else "commands.")
    )
    if gate_stop:
        notes.append(
            "Codex: update_goal(complete) cannot be refused by a hook (Codex runs no PreToolUse hook "
            "for its goal tools); the Stop gate holds a completed goal while the plan's gated items "
            "are not proven."
        )
    changes.append(instructions("codex", project, route, exe))
    return changes, notes


def codex_hooks_trust(
    project: Path, home: Path
) -> tuple[FileChange | None, str | None, list[dict[str, Any]] | None]:
    """Approve todoledger's project hooks the way `/hooks` does: the hash Codex
    computes for each (asked of `codex app-server`) under `[hooks.state]`. Also
    returns the hooks as Codex listed them, ours marked trusted once written."""
    import os
    import shutil

    from todoledger.install.probe import codex_hooks

    codex = shutil.which("codex")
    manual = "approve the todoledger hooks in Codex's `/hooks` screen"
    if codex is None:
        return (
            None,
            f"Codex: `codex` is not on PATH, so its hooks could not be approved here: {manual}.",
            None,
        )
    # Codex must read the config that is written here: the home's, not $CODEX_HOME's.
    env = {k: v for k, v in os.environ.items() if k != "CODEX_HOME"} | {"HOME": str(home)}
    hooks = codex_hooks(codex, project, env, home / ".codex")
    ours = {
        str(h["key"]): str(h["currentHash"])
        for h in hooks or []
        if is_our_command(h.get("command"), "todoledger") and h.get("key") and h.get("currentHash")
    }
    if not ours:
        return None, f"Codex did not list todoledger's hooks for this project: {manual}.", None
    path = home / ".codex" / "config.toml"
    before = read_text(path)
    after, line = ensure_hook_trust(before or "", str(path), ours)
    change = FileChange(path, before, after, [line], approval=True, fmt="toml")
    had = needs.dig(needs.Seen(project, home, {}).toml(path), "hooks", "state") or {}
    change.ensured = [  # a hash a person approved before (`/hooks`) is theirs, not ours
        (
            elements.member(["hooks", "state", key], {"trusted_hash": value}),
            had.get(key) != {"trusted_hash": value},
        )
        for key, value in ours.items()
    ]
    listed = [{**h, "trustStatus": "trusted"} if str(h.get("key")) in ours else h for h in hooks or []]
    return change, None, listed


def gemini(
    project: Path, home: Path, exe: str, route: str = "mcp", approve: bool = False, gate_stop: bool = False
) -> Built:
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
        # Gemini has no SessionStart after compressing: PreCompress resets the base.
        HookSpec("PreCompress", "*", handler),
        # Before every shell command: a person-only todoledger verb is denied, with the reason.
        HookSpec(
            "BeforeTool",
            "run_shell_command",
            {**handler, "name": "todoledger-screen", "command": screen_command(exe, "gemini")},
        ),
    ]
    if gate_stop:  # AfterAgent's "deny" sends the reason back as a new prompt
        gate = {**handler, "name": "todoledger-gate", "command": hook_command(exe, "gemini") + " --gate-stop"}
        hooks.append(HookSpec("AfterAgent", None, gate))
    server = {"command": exe, "args": ["mcp"]}
    hooks_edit = _hooks_edit(hooks, exe)
    # `gemini -p` offers only tools that need no confirmation: tools.allowed (as --allowed-tools
    # does) lists the route's tools and the native write_todos, which the AfterTool hook mirrors.
    view = needs.Seen(project, home, {}, route)
    allowed = [
        w if not w.startswith("run_shell_command(") else f"run_shell_command({shlex.quote(exe)})"
        for w in needs.gemini_allowed_wanted(view)
    ]

    def edit(doc: JsonDoc) -> tuple[list[str], list[str]]:
        summary = [ensure_entry(doc, ["mcpServers", SERVER], server, f"{exe} mcp")] if route != "cli" else []
        lines, notes = hooks_edit(doc)
        return summary + lines + ensure_items(doc, ["tools", "allowed"], allowed), notes

    settings, notes = json_change(project / ".gemini" / "settings.json", edit)
    changes = [settings]
    if approve:
        trust, _ = json_change(home / ".gemini" / "trustedFolders.json", _trust_gemini(str(project)))
        trust.approval = True
        changes.append(trust)
    if settings.changed:
        # gemini-cli 0.61 (hooks/trustedHooks.ts): new project hooks run; the first session warns
        # once and records them in ~/.gemini/trusted_hooks.json. Nothing to approve.
        notes.append("Gemini CLI: the first session warns once about the new project hooks, then runs them.")
    changes.append(instructions("gemini", project, route, exe))
    return changes, notes


def instructions(agent: str, project: Path, route: str, exe: str = "todoledger") -> FileChange:
    """The marked block in the file the agent reads for project instructions: its
    commands are the ones the hooks run."""
    spec = registry.find(agent)
    assert spec is not None
    path = project / spec.instructions
    before = read_text(path)
    wanted = teach.block(spec, route, shlex.quote(exe))
    after, lead = teach.ensure(before, spec, wanted)
    state = "+" if teach.find(before or "", spec) is None else ("~" if after != before else "=")
    verb = {"+": "added", "~": "updated", "=": "already installed"}[state]
    line = f"{state} {spec.instructions}: todoledger block ({route} route) {verb}"
    span = teach.find(after, spec)
    assert span is not None
    change = FileChange(path, before, after, [line], kind="block", lead=lead, fmt="block")
    change.ensured = [(elements.block(agent, after[span[0] : span[1]]), True)]
    return change


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
    change = FileChange(path, before, doc.text, summary)
    change.ensured = list(doc.ensured)
    if not (before and before.strip()) and seed != "{}\n":
        # The seed's own members (opencode's `$schema`) are ours too.
        seeded = JsonDoc(seed, str(path)).root.value
        change.ensured += [(elements.member([k], v), True) for k, v in seeded.items()]
    return change, notes


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


def _approve_claude(doc: JsonDoc) -> tuple[list[str], list[str]]:
    """`enabledMcpjsonServers` gains `todoledger` (what Claude Code's own approval writes)."""
    return ensure_items(doc, ["enabledMcpjsonServers"], [SERVER]), []


def _trust_claude(project: str) -> Edit:
    def edit(doc: JsonDoc) -> tuple[list[str], list[str]]:
        path = ["projects", project, "hasTrustDialogAccepted"]
        found = doc.find(path)
        label = f"projects[{project}].hasTrustDialogAccepted"
        if found is None:
            doc.require(["projects"], "object")
            doc.set_path(path, True)
            doc.ensured.append((elements.member(path, True, label), True))
            return [f"+ {label}: true"], []
        doc.ensured.append((elements.member(path, found.value, label), False))
        return [f"= {label}: kept as {json.dumps(found.value)}"], []

    return edit


def _trust_gemini(project: str) -> Edit:
    def edit(doc: JsonDoc) -> tuple[list[str], list[str]]:
        found = doc.find([project])
        if found is None:
            doc.set_path([project], "TRUST_FOLDER")
            doc.ensured.append((elements.member([project], "TRUST_FOLDER"), True))
            return [f"+ {project}: TRUST_FOLDER"], []
        doc.ensured.append((elements.member([project], found.value), False))
        return [f"= {project}: kept as {json.dumps(found.value)}"], []

    return edit


def panel(
    project: Path, home: Path, plan: str, env: dict[str, str]
) -> tuple[list[FileChange], list[str], Any]:
    """`--panel` (Claude Code): its task list, per plan and project root, in
    settings.local.json `env` with the Task tools switched on, and the record
    every interface reads to find the list's folder (todoledger.panel)."""
    from todoledger import panel as where

    list_name = where.list_id(plan, project)
    folder = where.tasks_folder(where.config_dir(home, env), list_name)
    found = where.Target(str(project), plan, list_name, str(folder))
    wanted = {where.LIST_VAR: list_name, where.TODO_TOOLS_VAR: "1"}

    def edit(doc: JsonDoc) -> tuple[list[str], list[str]]:
        found_env = doc.require(["env"], "object")
        lines: list[str] = []
        for name, value in wanted.items():
            path = ["env", name]
            have = found_env.value.get(name) if found_env is not None else None
            if (
                isinstance(have, str)
                and have != value
                and name == where.LIST_VAR
                and have.startswith(where.PREFIX)
            ):
                doc.set_path(path, value)  # an earlier --panel's list (another plan): this one's now
                doc.ensured.append((elements.member(path, value), True))
                lines.append(f"~ env.{name}: {value} (was {have})")
                continue
            if have is not None and have != value:
                raise LedgerError(
                    f"{project / '.claude' / 'settings.local.json'}: env.{name} is {json.dumps(have)}; "
                    f"--panel needs {json.dumps(value)}: remove it first (nothing was changed)"
                )
            if have is None:
                doc.set_path(path, value)
            doc.ensured.append((elements.member(path, value), have is None))
            lines.append(f"{'+' if have is None else '='} env.{name}: {value}")
        return lines, []

    local, _ = json_change(project / ".claude" / "settings.local.json", edit)
    record_path = where.record_path(home, project)
    before = read_text(record_path)
    after = where.record_text(found)
    label = "todoledger panel record"
    line = f"{'+' if before is None else ('~' if before != after else '=')} {label}: list {list_name}"
    record = FileChange(record_path, before, after, [line], fmt="file")
    record.ensured = [(elements.whole_file(after, label), True)]
    notes = [
        f"Claude Code panel: the plan {plan!r} is shown in the task list {list_name} ({folder}); "
        "todoledger writes it after every change of the plan, one way.",
        f"What this changes for the model: {where.TODO_TOOLS_VAR}=1 gives newer models (Opus 4.8, "
        "Sonnet 5 and later) their TaskCreate/TaskUpdate/TaskList tools back; the hooks mirror "
        "every call into the ledger, and its TaskList shows the ledger's open items.",
    ]
    return [local, record], notes, found


def _env_marker(doc: JsonDoc, agent: str) -> str:
    """`env.TODOLEDGER_AGENT` in an agent's settings (a value the user set is kept)."""
    found = doc.require(["env"], "object")
    path = ["env", AGENT_MARKER]
    if found is not None and AGENT_MARKER in found.value:
        doc.ensured.append((elements.member(path, found.value[AGENT_MARKER]), False))
        return f"= env.{AGENT_MARKER}: kept as {json.dumps(found.value[AGENT_MARKER])}"
    doc.set_path(path, agent)
    doc.ensured.append((elements.member(path, agent), True))
    return f"+ env.{AGENT_MARKER}: {agent}"
