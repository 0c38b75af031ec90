"""What each agent needs, per route, for the plan to reach it: one table that
`install` prints its notes from and `doctor` checks, so that they cannot drift.

A `Need` is one setting or step: how to tell from the agent's own files whether
it is there (`check`: True, False, or None when files cannot show it), what is
wrong when it is not, and the one fix. `by` says who provides it: `install`
writes it; `approve` is an approval that `install --approve` writes for the
person who asks; `you` is a step only a person can take (a dialog in the agent).
`blocks`: when it is missing the plan cannot reach the agent (doctor's error,
exit status 1); otherwise a warning.

Checked against the agents' builds that tests/e2e runs (Claude Code 2.1.332,
opencode 1.18.33, Codex 0.171.0, Gemini CLI 0.61.0).
"""

from __future__ import annotations

import json
import shlex
import subprocess
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from todoledger import agents as registry
from todoledger.install import jsonc, teach
from todoledger.install.elements import is_our_command, role
from todoledger.install.exe import runs
from todoledger.install.files import read_text

SERVER = "todoledger"
ALL = ("mcp", "cli", "both")
MCP = ("mcp", "both")
CLI = ("cli", "both")


@dataclass
class Seen:
    """The agent's files as they are (doctor) or are about to be (install's `overlay`)."""

    project: Path
    home: Path
    env: dict[str, str]
    route: str = "mcp"
    gate_stop: bool = False
    overlay: dict[Path, str | None] = field(default_factory=dict)
    # What running processes said (doctor): `codex_hooks` from `codex app-server`.
    probes: dict[str, Any] = field(default_factory=dict)
    _cache: dict[Path, str | None] = field(default_factory=dict)

    def text(self, path: Path) -> str | None:
        if path in self.overlay:
            return self.overlay[path]
        if path not in self._cache:
            try:
                self._cache[path] = read_text(path)
            except Exception:  # unreadable counts as absent here; doctor reports it
                self._cache[path] = None
        return self._cache[path]

    def json(self, path: Path) -> dict[str, Any]:
        text = self.text(path)
        if not text or not text.strip():
            return {}
        try:
            value = jsonc.parse(text).value
        except jsonc.JsoncError:
            return {}
        return value if isinstance(value, dict) else {}

    def toml(self, path: Path) -> dict[str, Any]:
        text = self.text(path)
        try:
            return tomllib.loads((text or "").lstrip("\ufeff"))
        except tomllib.TOMLDecodeError:
            return {}

    @property
    def path(self) -> str | None:
        return self.env.get("PATH")

    @property
    def codex_home(self) -> Path:
        return Path(self.env["CODEX_HOME"]) if self.env.get("CODEX_HOME") else self.home / ".codex"


Text = str | Callable[[Seen], str]


@dataclass(frozen=True)
class Need:
    key: str
    agent: str
    routes: tuple[str, ...]
    check: Callable[[Seen], bool | None]
    what: Text
    fix: Text
    blocks: bool = True
    by: str = "install"  # "install" | "approve" | "you"
    gate: bool = False  # only for an install with --gate-stop
    doc: str = ""  # for docs/agents.md where `what` depends on the files (else `what` itself)

    @property
    def summary(self) -> str:
        return self.doc or (self.what if isinstance(self.what, str) else self.key)

    def say(self, seen: Seen) -> tuple[str, str]:
        what = self.what(seen) if callable(self.what) else self.what
        fix = self.fix(seen) if callable(self.fix) else self.fix
        return what, fix


@dataclass(frozen=True)
class Unmet:
    need: Need
    what: str
    fix: str
    known: bool  # False: the files cannot show it (check said None)

    @property
    def level(self) -> str:
        return "error" if self.need.blocks and self.known else "warning"

    def note(self) -> str:
        return f"{self.what}: {self.fix}"


def unmet(agent: str, seen: Seen) -> list[Unmet]:
    """The needs of `agent` on `seen.route` that are not met, in table order."""
    out = []
    for need in NEEDS:
        if need.agent != agent or seen.route not in need.routes or (need.gate and not seen.gate_stop):
            continue
        state = need.check(seen)
        if state is True:
            continue
        what, fix = need.say(seen)
        out.append(Unmet(need, what, fix, known=state is False))
    return out


# -- reading the agents' files ---------------------------------------------------------


def dig(data: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def our_hooks(settings: dict[str, Any]) -> list[tuple[str, str | None, dict[str, Any]]]:
    """(event, matcher, handler) of every todoledger handler in a settings object."""
    found = []
    hooks = settings.get("hooks")
    for event, groups in hooks.items() if isinstance(hooks, dict) else []:
        for group in groups if isinstance(groups, list) else []:
            handlers = group.get("hooks") if isinstance(group, dict) else None
            for handler in handlers if isinstance(handlers, list) else []:
                if isinstance(handler, dict) and is_our_command(handler.get("command"), SERVER):
                    matcher = group.get("matcher")
                    found.append((str(event), matcher if isinstance(matcher, str) else None, handler))
    return found


def has_hook(files: list[dict[str, Any]], event: str, flag: str = "", matcher_has: str | None = None) -> bool:
    """A todoledger handler for `event` whose command has `flag` (`--screen`), or none
    (the plain mirror), and whose matcher lists `matcher_has` when given."""
    for settings in files:
        for ev, matcher, handler in our_hooks(settings):
            words = role(str(handler.get("command")))
            flags = [w for w in words if w.startswith("--")]
            if ev != event or (flags != [flag] if flag else flags):
                continue
            if matcher_has is None or (matcher is not None and matcher_has in matcher.split("|")):
                return True
    return False


def commands_named(seen: Seen, agent: str) -> list[str]:
    """Every todoledger command the agent's config names: hooks, server, plugin, block."""
    out: list[str] = []
    for settings in hook_files(seen, agent):
        out += [str(h.get("command")) for _, _, h in our_hooks(settings)]
    server = server_entry(seen, agent)
    if server is not None:
        command = server.get("command")
        out.append(command[0] if isinstance(command, list) and command else str(command))
    if agent == "opencode":
        plugin = seen.text(seen.project / ".opencode" / "plugins" / "todoledger.js") or ""
        for line in plugin.splitlines():
            if line.startswith("const COMMAND = "):
                try:
                    out.append(json.loads(line.removeprefix("const COMMAND = ")))
                except ValueError:
                    out.append(line)
    taught = block_command(seen, agent)
    if taught:
        out.append(taught)
    return list(dict.fromkeys(first_word(c) for c in out))


def first_word(command: str) -> str:
    """The executable of a command line (`'/a b/todoledger' hook x` -> `/a b/todoledger`)."""
    import shlex

    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    return words[0] if words else command


def hook_files(seen: Seen, agent: str) -> list[dict[str, Any]]:
    p = seen.project
    if agent == "claude-code":
        return [seen.json(p / ".claude" / "settings.json"), seen.json(p / ".claude" / "settings.local.json")]
    if agent == "codex":
        return [seen.json(p / ".codex" / "hooks.json")]
    if agent == "gemini":
        return [seen.json(p / ".gemini" / "settings.json")]
    return []


def opencode_config(seen: Seen) -> tuple[str, dict[str, Any]] | None:
    for name in ("opencode.json", "opencode.jsonc", ".opencode/opencode.json", ".opencode/opencode.jsonc"):
        data = seen.json(seen.project / name)
        if isinstance(dig(data, "mcp", SERVER), dict):
            return name, data
    return None


def server_entry(seen: Seen, agent: str) -> dict[str, Any] | None:
    p = seen.project
    found: Any = None
    if agent == "claude-code":
        found = dig(seen.json(p / ".mcp.json"), "mcpServers", SERVER)
    elif agent == "opencode":
        config = opencode_config(seen)
        found = dig(config[1], "mcp", SERVER) if config else None
    elif agent == "codex":
        found = dig(seen.toml(p / ".codex" / "config.toml"), "mcp_servers", SERVER)
        if found is None:
            found = dig(seen.toml(seen.codex_home / "config.toml"), "mcp_servers", SERVER)
    elif agent == "gemini":
        found = dig(seen.json(p / ".gemini" / "settings.json"), "mcpServers", SERVER)
        if found is None:
            found = dig(seen.json(seen.home / ".gemini" / "settings.json"), "mcpServers", SERVER)
    return found if isinstance(found, dict) else None


def block_text(seen: Seen, agent: str) -> str | None:
    spec = registry.find(agent)
    assert spec is not None
    text = seen.text(seen.project / spec.instructions) or ""
    span = teach.find(text, spec)
    return text[span[0] : span[1]] if span else None


def block_command(seen: Seen, agent: str) -> str | None:
    found = block_text(seen, agent)
    return teach.command_of(found) if found else None


# -- the checks ---------------------------------------------------------------------------


def _claude_settings(seen: Seen) -> list[dict[str, Any]]:
    p, h = seen.project, seen.home
    return [
        seen.json(p / ".claude" / "settings.json"),
        seen.json(p / ".claude" / "settings.local.json"),
        seen.json(h / ".claude" / "settings.json"),
    ]


def claude_allowed(seen: Seen) -> list[str]:
    return [rule for s in _claude_settings(seen) for rule in strings(dig(s, "permissions", "allow"))]


def _claude_wanted(seen: Seen) -> list[str]:
    """The permission rules the route needs (what install writes to permissions.allow)."""
    command = _taught_or_hook_command(seen, "claude-code")
    return (["mcp__todoledger"] if seen.route in MCP else []) + (
        claude_bash_rules(command) if seen.route in CLI else []
    )


def claude_bash_rules(command: str) -> list[str]:
    return [f"Bash({command} {verb}:*)" for verb in teach.AGENT_VERBS]


def _taught_or_hook_command(seen: Seen, agent: str) -> str:
    """The command this install names (the block's, else the hooks')."""
    taught = block_command(seen, agent)
    if taught:
        return taught
    for settings in hook_files(seen, agent):
        for _, _, handler in our_hooks(settings):
            command = str(handler.get("command"))
            return command[: command.rfind(" hook ")] if " hook " in command else SERVER
    return SERVER


def _claude_bash_missing(seen: Seen) -> list[str]:
    have = set(claude_allowed(seen))
    if "Bash" in have:
        return []
    return [r for r in claude_bash_rules(_taught_or_hook_command(seen, "claude-code")) if r not in have]


def _claude_server_approved(seen: Seen) -> bool:
    enabled = False
    for data in _claude_settings(seen):
        enabled |= data.get("enableAllProjectMcpServers") is True
        enabled |= SERVER in strings(data.get("enabledMcpjsonServers"))
    return enabled


def _claude_rejected(seen: Seen) -> bool:
    return any(SERVER in strings(d.get("disabledMcpjsonServers")) for d in _claude_settings(seen))


def _claude_trusted(seen: Seen) -> bool:
    state = seen.json(seen.home / ".claude.json")
    return bool(dig(state, "projects", str(seen.project), "hasTrustDialogAccepted") is True)


def _codex_trusted(seen: Seen) -> bool:
    user = seen.toml(seen.codex_home / "config.toml")
    return bool(dig(user, "projects", str(seen.project), "trust_level") == "trusted")


def _codex_hooks_approved(seen: Seen) -> bool | None:
    listed = seen.probes.get("codex_hooks")
    if isinstance(listed, list):
        ours = [h for h in listed if is_our_command(h.get("command"), SERVER)]
        if ours:
            return all(h.get("trustStatus") == "trusted" for h in ours)
    hooks_path = str(seen.project / ".codex" / "hooks.json")
    state = dig(seen.toml(seen.codex_home / "config.toml"), "hooks", "state")
    approved = (
        [k for k in state if isinstance(k, str) and k.startswith(hooks_path + ":")]
        if isinstance(state, dict)
        else []
    )
    return None if approved else False


def _codex_untrusted_what(seen: Seen) -> str:
    listed = seen.probes.get("codex_hooks")
    ours = [h for h in listed or [] if is_our_command(h.get("command"), SERVER)]
    untrusted = [h for h in ours if h.get("trustStatus") != "trusted"]
    if untrusted:
        events = ", ".join(str(h.get("eventName")) for h in untrusted)
        return (
            f"Codex will not run {len(untrusted)} of todoledger's {len(ours)} hooks: not approved ({events})"
        )
    if _codex_hooks_approved(seen) is False:
        return (
            "Codex has no approval of todoledger's hooks: it runs new or changed hooks only after a "
            "person approves them (`/hooks`), so until then no plan at session start"
        )
    return (
        "Codex runs new or changed hooks only after a person approves them (`/hooks`); whether the "
        "current ones are approved cannot be read from files (run doctor with `codex` on PATH)"
    )


def gemini_allowed_wanted(seen: Seen) -> list[str]:
    """What `tools.allowed` must list for `gemini -p` to offer the route's tools."""
    wanted = ["write_todos"]  # the native list: mirrored by the AfterTool hook
    if seen.route in MCP:
        wanted.append("mcp_todoledger_*")
    if seen.route in CLI:
        wanted.append(f"run_shell_command({_taught_or_hook_command(seen, 'gemini')})")
    return wanted


def _gemini_allowed_missing(seen: Seen) -> list[str]:
    have = set()
    for path in (seen.project / ".gemini" / "settings.json", seen.home / ".gemini" / "settings.json"):
        have |= set(strings(dig(seen.json(path), "tools", "allowed")))
    return [w for w in gemini_allowed_wanted(seen) if w not in have]


def gemini_trusted(seen: Seen) -> bool:
    user = seen.json(seen.home / ".gemini" / "settings.json")
    if dig(user, "security", "folderTrust", "enabled") is False:
        return True
    if seen.env.get("GEMINI_CLI_TRUST_WORKSPACE") == "true":
        return True
    for folder, level in seen.json(seen.home / ".gemini" / "trustedFolders.json").items():
        p = seen.project
        if level == "TRUST_FOLDER" and Path(folder) == p:
            return True
        if level == "TRUST_PARENT" and (Path(folder) == p.parent or Path(folder) in p.parents):
            return True
    return False


def _commands_run(agent: str) -> Callable[[Seen], bool]:
    return lambda seen: not _not_running(seen, agent)


def _not_running(seen: Seen, agent: str) -> list[str]:
    bad = []
    import shlex

    taught = block_command(seen, agent)
    for exe in commands_named(seen, agent):
        if agent == "codex" and taught is not None and exe == first_word(taught):
            if not _login_shell_runs(exe, seen):
                bad.append(exe)
        elif not runs(shlex.quote(exe), seen.path):
            bad.append(exe)
    return bad


def _login_shell_runs(command: str, seen: Seen) -> bool:
    """Codex runs its shell commands in a login shell: an absolute path, or a name that
    `bash -lc` finds on the PATH the profile files set."""
    import shlex

    if "/" in command:
        return runs(shlex.quote(command), seen.path)
    try:
        done = subprocess.run(
            ["bash", "-lc", f"command -v {shlex.quote(command)}"],
            capture_output=True,
            timeout=10,
            env={**seen.env, "HOME": str(seen.home)},
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def _block(agent: str) -> Callable[[Seen], bool]:
    return lambda seen: block_text(seen, agent) is not None


def _hook(agent: str, event: str, flag: str = "", matcher_has: str | None = None) -> Callable[[Seen], bool]:
    return lambda seen: has_hook(hook_files(seen, agent), event, flag, matcher_has)


def _server(agent: str) -> Callable[[Seen], bool]:
    return lambda seen: server_entry(seen, agent) is not None


def _reinstall(agent: str) -> Callable[[Seen], str]:
    def fix(seen: Seen) -> str:
        route = "" if seen.route == "mcp" else f" --route {seen.route}"
        gate = " --gate-stop" if seen.gate_stop else ""
        return f"todoledger install {agent}{route}{gate}"

    return fix


def _not_running_what(agent: str, label: str) -> Callable[[Seen], str]:
    def what(seen: Seen) -> str:
        bad = _not_running(seen, agent)
        names = ", ".join(repr(c) for c in bad)
        if all("/" in c for c in bad):
            return f"{label}'s config names todoledger as {names}, which is not there (no such executable)"
        where = "the PATH of a login shell (Codex's shell)" if agent == "codex" else "PATH"
        return f"{label}'s config names todoledger as {names}, which is not on {where}"

    return what


def _here_fix(agent: str) -> Callable[[Seen], str]:
    from todoledger.install.exe import running

    def fix(seen: Seen) -> str:
        route = "" if seen.route == "mcp" else f" --route {seen.route}"
        return f"todoledger install {agent}{route} --command {running()}"

    return fix


def _agent_needs(agent: str, label: str, instructions: str) -> list[Need]:
    """What every agent needs alike: its instructions block, and commands that run."""
    return [
        Need(
            f"{agent}.commands-run",
            agent,
            ALL,
            _commands_run(agent),
            _not_running_what(agent, label),
            _here_fix(agent),
            doc=f"{label}'s config names a todoledger that is not there (hooks, server, instructions)",
        ),
        Need(
            f"{agent}.block",
            agent,
            CLI,
            _block(agent),
            f"{label}: {instructions} has no todoledger block, so the agent is not told how to reach the plan",
            _reinstall(agent),
        ),
        Need(
            f"{agent}.block-mcp",
            agent,
            ("mcp",),
            _block(agent),
            f"{label}: {instructions} has no todoledger block (which todo tool to use, how to get the plan back)",
            _reinstall(agent),
            blocks=False,
        ),
    ]


CLAUDE = "Claude Code"
NEEDS: list[Need] = [
    # -- Claude Code ---------------------------------------------------------------------
    Need(
        "claude-code.server",
        "claude-code",
        MCP,
        _server("claude-code"),
        "Claude Code: .mcp.json has no todoledger server",
        _reinstall("claude-code"),
    ),
    Need(
        "claude-code.server-rejected",
        "claude-code",
        MCP,
        lambda seen: not _claude_rejected(seen),
        "Claude Code: the project server `todoledger` was rejected (disabledMcpjsonServers)",
        'remove "todoledger" from disabledMcpjsonServers in .claude/settings.local.json, '
        'then add it to "enabledMcpjsonServers"',
        by="you",
    ),
    Need(
        "claude-code.server-approved",
        "claude-code",
        MCP,
        lambda seen: _claude_rejected(seen) or _claude_server_approved(seen),
        "Claude Code: the project server `todoledger` is not approved (interactive sessions keep it "
        "'pending approval'; `claude -p` starts it anyway)",
        'add "enabledMcpjsonServers": ["todoledger"] to .claude/settings.local.json '
        "(todoledger install claude-code --approve), or approve it under /mcp",
        by="approve",
    ),
    Need(
        "claude-code.mcp-allowed",
        "claude-code",
        MCP,
        lambda seen: any(r in ("mcp__todoledger", "mcp__todoledger__*") for r in claude_allowed(seen)),
        "Claude Code: the todoledger MCP tools are not in permissions.allow, so `claude -p` refuses them "
        "(interactive sessions ask each time)",
        'add "mcp__todoledger" to permissions.allow in .claude/settings.json (todoledger install claude-code)',
    ),
    Need(
        "claude-code.cli-allowed",
        "claude-code",
        CLI,
        lambda seen: not _claude_bash_missing(seen),
        "Claude Code: the todoledger commands are not in permissions.allow, so `claude -p` refuses "
        'them ("This command requires approval"; interactive sessions ask)',
        lambda seen: (
            "add to permissions.allow in .claude/settings.json: "
            + ", ".join(_claude_bash_missing(seen))
            + f" ({_reinstall('claude-code')(seen)})"
        ),
    ),
    Need(
        "claude-code.hook-start",
        "claude-code",
        ALL,
        _hook("claude-code", "SessionStart", matcher_has="startup"),
        "Claude Code: no todoledger SessionStart hook, so the plan does not reach a new session",
        _reinstall("claude-code"),
    ),
    Need(
        "claude-code.hook-compact",
        "claude-code",
        ALL,
        _hook("claude-code", "SessionStart", matcher_has="compact"),
        "Claude Code: the SessionStart hook does not fire after compaction, so the plan is lost there",
        _reinstall("claude-code"),
    ),
    Need(
        "claude-code.hook-mirror",
        "claude-code",
        ALL,
        _hook("claude-code", "PostToolUse"),
        "Claude Code: no PostToolUse hook, so its native task list is not mirrored",
        _reinstall("claude-code"),
        blocks=False,
    ),
    Need(
        "claude-code.hook-screen",
        "claude-code",
        ALL,
        _hook("claude-code", "PreToolUse", "--screen"),
        "Claude Code: no PreToolUse screen, so a person-only todoledger verb is not stopped before it runs",
        _reinstall("claude-code"),
        blocks=False,
    ),
    Need(
        "claude-code.hook-stop",
        "claude-code",
        ALL,
        _hook("claude-code", "Stop", "--gate-stop"),
        "Claude Code: no Stop gate hook (installed with --gate-stop)",
        _reinstall("claude-code"),
        blocks=False,
        gate=True,
    ),
    Need(
        "claude-code.hook-goal-lock",
        "claude-code",
        ALL,
        _hook("claude-code", "TaskCompleted", "--gate-stop"),
        "Claude Code: no TaskCompleted goal-lock hook, so a task whose gates fail can be marked completed "
        "(installed with --gate-stop)",
        _reinstall("claude-code"),
        blocks=False,
        gate=True,
    ),
    Need(
        "claude-code.marker",
        "claude-code",
        ALL,
        lambda seen: isinstance(
            dig(seen.json(seen.project / ".claude" / "settings.json"), "env", "TODOLEDGER_AGENT"), str
        ),
        "Claude Code: no env.TODOLEDGER_AGENT in .claude/settings.json (the mark of its shell's commands)",
        _reinstall("claude-code"),
        blocks=False,
    ),
    Need(
        "claude-code.folder-trusted",
        "claude-code",
        ALL,
        _claude_trusted,
        "Claude Code: this folder is not trusted yet: Claude Code ignores its permissions.allow until it "
        "is (so `claude -p` refuses the todoledger tools) and interactive sessions ask first",
        lambda seen: (
            "start `claude` in this project once and accept the trust dialog, or: todoledger "
            f'install claude-code --approve (sets projects["{seen.project}"].hasTrustDialogAccepted in '
            f"{seen.home / '.claude.json'}); for one `claude -p` run: --allowedTools "
            + shlex.quote(",".join(_claude_wanted(seen)))
        ),
        by="approve",
    ),
    *_agent_needs("claude-code", CLAUDE, "CLAUDE.md"),
    # -- opencode ---------------------------------------------------------------------------
    Need(
        "opencode.server",
        "opencode",
        MCP,
        _server("opencode"),
        "opencode: opencode.json has no todoledger server",
        _reinstall("opencode"),
    ),
    Need(
        "opencode.server-enabled",
        "opencode",
        MCP,
        lambda seen: dig(server_entry(seen, "opencode"), "enabled") is not False,
        lambda seen: (
            f"opencode: the todoledger server is disabled in {(opencode_config(seen) or ('opencode.json',))[0]}"
        ),
        lambda seen: f'set "enabled": true in {(opencode_config(seen) or ("opencode.json",))[0]}',
        by="you",
        doc="opencode: the todoledger server is disabled",
    ),
    Need(
        "opencode.plugin",
        "opencode",
        ALL,
        lambda seen: seen.text(seen.project / ".opencode" / "plugins" / "todoledger.js") is not None,
        "opencode: no .opencode/plugins/todoledger.js, so the plan does not reach a session",
        _reinstall("opencode"),
    ),
    Need(
        "opencode.plugin-current",
        "opencode",
        ALL,
        lambda seen: (
            "experimental.session.compacting"
            in (
                seen.text(seen.project / ".opencode" / "plugins" / "todoledger.js")
                or "experimental.session.compacting"
            )
        ),
        "opencode: the plugin is from an older install (no plan at session start or after compaction)",
        _reinstall("opencode"),
    ),
    *_agent_needs("opencode", "opencode", "AGENTS.md"),
    # -- Codex --------------------------------------------------------------------------------
    Need(
        "codex.server",
        "codex",
        MCP,
        _server("codex"),
        "Codex: .codex/config.toml has no todoledger server",
        _reinstall("codex"),
    ),
    Need(
        "codex.required",
        "codex",
        MCP,
        lambda seen: dig(server_entry(seen, "codex"), "required") is True,
        "Codex: the todoledger server is not `required`, so the first turn starts before it lists its "
        "tools and tool_search finds nothing",
        "set required = true in [mcp_servers.todoledger] (todoledger install codex)",
    ),
    Need(
        "codex.tools-approved",
        "codex",
        MCP,
        lambda seen: dig(server_entry(seen, "codex"), "default_tools_approval_mode") == "approve",
        'Codex: the todoledger tools need approval, which `codex exec` never gives ("MCP tool call '
        'requires approval, but approval policy is never")',
        'set default_tools_approval_mode = "approve" in [mcp_servers.todoledger] (todoledger install codex)',
    ),
    Need(
        "codex.trusted",
        "codex",
        ALL,
        _codex_trusted,
        "Codex ignores this project's .codex/ (server and hooks) until the project is trusted",
        lambda seen: (
            f'add to {seen.codex_home / "config.toml"}: [projects."{seen.project}"] '
            'trust_level = "trusted" (todoledger install codex --approve; `codex exec --trust` for one run)'
        ),
        by="approve",
    ),
    Need(
        "codex.hook-start",
        "codex",
        ALL,
        _hook("codex", "SessionStart", matcher_has="startup"),
        "Codex: no todoledger SessionStart hook, so the plan does not reach a new session",
        _reinstall("codex"),
    ),
    Need(
        "codex.hook-compact",
        "codex",
        ALL,
        _hook("codex", "SessionStart", matcher_has="compact"),
        "Codex: the SessionStart hook does not fire after compaction (where a build sends `compact`)",
        _reinstall("codex"),
        blocks=False,
    ),
    Need(
        "codex.hook-stop",
        "codex",
        ALL,
        lambda seen: (
            has_hook(hook_files(seen, "codex"), "Stop")
            or has_hook(hook_files(seen, "codex"), "Stop", "--gate-stop")
        ),
        "Codex: no todoledger Stop hook, so its goals and plan calls are not read from the rollout",
        _reinstall("codex"),
        blocks=False,
    ),
    Need(
        "codex.hook-gate",
        "codex",
        ALL,
        _hook("codex", "Stop", "--gate-stop"),
        "Codex: the Stop hook does not gate the stop (installed with --gate-stop)",
        _reinstall("codex"),
        blocks=False,
        gate=True,
    ),
    Need(
        "codex.hook-screen",
        "codex",
        ALL,
        _hook("codex", "PreToolUse", "--screen"),
        "Codex: no PreToolUse screen, so a person-only todoledger verb is not stopped before it runs",
        _reinstall("codex"),
        blocks=False,
    ),
    Need(
        "codex.hooks-approved",
        "codex",
        ALL,
        _codex_hooks_approved,
        lambda seen: _codex_untrusted_what(seen),
        "approve the todoledger hooks in Codex's `/hooks` screen, or: todoledger install codex --approve "
        "(writes the hashes Codex computes under [hooks.state])",
        by="approve",
        doc="Codex: todoledger's hooks are not approved (`/hooks`), so they do not run",
    ),
    *_agent_needs("codex", "Codex", "AGENTS.md"),
    # -- Gemini CLI ---------------------------------------------------------------------------
    Need(
        "gemini.server",
        "gemini",
        MCP,
        _server("gemini"),
        "Gemini CLI: .gemini/settings.json has no todoledger server",
        _reinstall("gemini"),
    ),
    Need(
        "gemini.trusted",
        "gemini",
        ALL,
        gemini_trusted,
        "Gemini CLI: this folder is not trusted: .gemini/settings.json (server and hooks) is ignored, "
        "and `gemini -p` exits 55",
        lambda seen: (
            f'add "{seen.project}": "TRUST_FOLDER" to {seen.home / ".gemini" / "trustedFolders.json"} '
            "(todoledger install gemini --approve), or trust the folder when Gemini asks"
        ),
        by="approve",
    ),
    Need(
        "gemini.allowed",
        "gemini",
        ALL,
        lambda seen: not _gemini_allowed_missing(seen),
        lambda seen: (
            "Gemini CLI: tools.allowed lacks "
            + ", ".join(_gemini_allowed_missing(seen))
            + ", so `gemini -p` does not offer "
            + ("them" if len(_gemini_allowed_missing(seen)) > 1 else "it")
        ),
        lambda seen: (
            "add "
            + ", ".join(json.dumps(w) for w in _gemini_allowed_missing(seen))
            + f" to tools.allowed in .gemini/settings.json ({_reinstall('gemini')(seen)}), or pass "
            f"--allowed-tools '{','.join(gemini_allowed_wanted(seen))}' to `gemini -p`"
        ),
        doc="Gemini CLI: tools.allowed lacks write_todos or the route's tools (`mcp_todoledger_*`, "
        "`run_shell_command(<todoledger>)`), so `gemini -p` does not offer them",
    ),
    Need(
        "gemini.hook-start",
        "gemini",
        ALL,
        _hook("gemini", "SessionStart"),
        "Gemini CLI: no todoledger SessionStart hook, so the plan does not reach a new session",
        _reinstall("gemini"),
    ),
    Need(
        "gemini.hook-compress",
        "gemini",
        ALL,
        _hook("gemini", "PreCompress"),
        "Gemini CLI: no PreCompress hook, so the plan is not re-based after compression",
        _reinstall("gemini"),
    ),
    Need(
        "gemini.hook-mirror",
        "gemini",
        ALL,
        _hook("gemini", "AfterTool"),
        "Gemini CLI: no AfterTool hook, so write_todos is not mirrored",
        _reinstall("gemini"),
        blocks=False,
    ),
    Need(
        "gemini.hook-screen",
        "gemini",
        ALL,
        _hook("gemini", "BeforeTool", "--screen"),
        "Gemini CLI: no BeforeTool screen, so a person-only todoledger verb is not stopped before it runs",
        _reinstall("gemini"),
        blocks=False,
    ),
    Need(
        "gemini.hook-gate",
        "gemini",
        ALL,
        _hook("gemini", "AfterAgent", "--gate-stop"),
        "Gemini CLI: no AfterAgent gate hook (installed with --gate-stop)",
        _reinstall("gemini"),
        blocks=False,
        gate=True,
    ),
    *_agent_needs("gemini", "Gemini CLI", "GEMINI.md"),
]
