"""The agents' own files as install is about to leave them or doctor finds them:
their hooks, servers, instructions blocks, allow lists and approvals, and the
checks of install/needs.py over them. Reads only; a file that does not parse
counts as absent here (doctor reports the parse error itself)."""

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


def claude_settings(seen: Seen) -> list[dict[str, Any]]:
    p, h = seen.project, seen.home
    return [
        seen.json(p / ".claude" / "settings.json"),
        seen.json(p / ".claude" / "settings.local.json"),
        seen.json(h / ".claude" / "settings.json"),
    ]


def claude_allowed(seen: Seen) -> list[str]:
    return [rule for s in claude_settings(seen) for rule in strings(dig(s, "permissions", "allow"))]


def claude_wanted(seen: Seen) -> list[str]:
    """The permission rules the route needs (what install writes to permissions.allow)."""
    command = taught_or_hook_command(seen, "claude-code")
    return (["mcp__todoledger"] if seen.route in MCP else []) + (
        claude_bash_rules(command) if seen.route in CLI else []
    )


def claude_bash_rules(command: str) -> list[str]:
    return [f"Bash({command} {verb}:*)" for verb in teach.AGENT_VERBS]


def taught_or_hook_command(seen: Seen, agent: str) -> str:
    """The command this install names (the block's, else the hooks')."""
    taught = block_command(seen, agent)
    if taught:
        return taught
    for settings in hook_files(seen, agent):
        for _, _, handler in our_hooks(settings):
            command = str(handler.get("command"))
            return command[: command.rfind(" hook ")] if " hook " in command else SERVER
    return SERVER


def claude_bash_missing(seen: Seen) -> list[str]:
    have = set(claude_allowed(seen))
    if "Bash" in have:
        return []
    return [r for r in claude_bash_rules(taught_or_hook_command(seen, "claude-code")) if r not in have]


def claude_server_approved(seen: Seen) -> bool:
    enabled = False
    for data in claude_settings(seen):
        enabled |= data.get("enableAllProjectMcpServers") is True
        enabled |= SERVER in strings(data.get("enabledMcpjsonServers"))
    return enabled


def claude_rejected(seen: Seen) -> bool:
    return any(SERVER in strings(d.get("disabledMcpjsonServers")) for d in claude_settings(seen))


def claude_trusted(seen: Seen) -> bool:
    state = seen.json(seen.home / ".claude.json")
    return bool(dig(state, "projects", str(seen.project), "hasTrustDialogAccepted") is True)


def codex_trusted(seen: Seen) -> bool:
    user = seen.toml(seen.codex_home / "config.toml")
    return bool(dig(user, "projects", str(seen.project), "trust_level") == "trusted")


def codex_hooks_approved(seen: Seen) -> bool | None:
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


def codex_untrusted_what(seen: Seen) -> str:
    listed = seen.probes.get("codex_hooks")
    ours = [h for h in listed or [] if is_our_command(h.get("command"), SERVER)]
    untrusted = [h for h in ours if h.get("trustStatus") != "trusted"]
    if untrusted:
        events = ", ".join(str(h.get("eventName")) for h in untrusted)
        return (
            f"Codex will not run {len(untrusted)} of todoledger's {len(ours)} hooks: not approved ({events})"
        )
    if codex_hooks_approved(seen) is False:
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
        wanted.append(f"run_shell_command({taught_or_hook_command(seen, 'gemini')})")
    return wanted


def gemini_allowed_missing(seen: Seen) -> list[str]:
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


def commands_run(agent: str) -> Callable[[Seen], bool]:
    return lambda seen: not not_running(seen, agent)


def not_running(seen: Seen, agent: str) -> list[str]:
    bad = []

    taught = block_command(seen, agent)
    for exe in commands_named(seen, agent):
        if agent == "codex" and taught is not None and exe == first_word(taught):
            if not login_shell_runs(exe, seen):
                bad.append(exe)
        elif not runs(shlex.quote(exe), seen.path):
            bad.append(exe)
    return bad


def login_shell_runs(command: str, seen: Seen) -> bool:
    """Codex runs its shell commands in a login shell: an absolute path, or a name that
    `bash -lc` finds on the PATH the profile files set."""

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


def block(agent: str) -> Callable[[Seen], bool]:
    return lambda seen: block_text(seen, agent) is not None


def hook(agent: str, event: str, flag: str = "", matcher_has: str | None = None) -> Callable[[Seen], bool]:
    return lambda seen: has_hook(hook_files(seen, agent), event, flag, matcher_has)


def server(agent: str) -> Callable[[Seen], bool]:
    return lambda seen: server_entry(seen, agent) is not None
